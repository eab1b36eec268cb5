//! Whether this process is an MPI rank, and the mpirun command that makes it one.
//!
//! `commperf bench --transport mpi` typed at a shell (no mpirun) starts
//! `mpirun -np 2 commperf bench --transport mpi` itself: a local MPI run then needs no more
//! knowledge than a local shm run. On a cluster the user's own mpirun or srun starts the ranks,
//! and this module only recognizes that it did.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Variables the launchers of Open MPI, MPICH (Hydra), PMIx and PMI-2 (srun) give every rank.
const RANK_VARIABLES: &[&str] = &["OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMI_SIZE", "PMIX_RANK"];

/// Whether an MPI launcher started this process.
pub fn launched_by_mpi() -> bool {
    RANK_VARIABLES.iter().any(|v| std::env::var_os(v).is_some())
}

/// The MPI implementation a library version string names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    OpenMpi,
    Mpich,
    Other,
}

impl Flavor {
    pub fn of(library: &str) -> Flavor {
        if library.contains("Open MPI") {
            Flavor::OpenMpi
        } else if library.contains("MPICH") {
            Flavor::Mpich
        } else {
            Flavor::Other
        }
    }

    /// Launcher names to try, most specific first: Debian installs both libraries' launchers
    /// side by side under these names, and plain `mpirun` may belong to the other library.
    fn programs(self) -> &'static [&'static str] {
        match self {
            Flavor::OpenMpi => &["mpirun.openmpi", "mpirun"],
            Flavor::Mpich => &["mpiexec.mpich", "mpirun.mpich", "mpiexec"],
            Flavor::Other => &["mpiexec", "mpirun"],
        }
    }
}

/// A command line to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    pub program: PathBuf,
    pub args: Vec<OsString>,
}

impl Command {
    /// The command as a user would type it (for the message saying what was started).
    pub fn display(&self) -> String {
        std::iter::once(self.program.as_os_str())
            .chain(self.args.iter().map(|a| a.as_os_str()))
            .map(|a| {
                let s = a.to_string_lossy();
                if s.contains(' ') {
                    format!("'{s}'")
                } else {
                    s.into_owned()
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    }
}

fn find_in_path(name: &str, path: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
    std::env::split_paths(path?)
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Where this environment should start ranks from.
#[derive(Debug, Clone, Copy)]
pub struct Host {
    /// CPUs this process may run on.
    pub cpus: usize,
    /// Running as root (Open MPI refuses unless told otherwise).
    pub root: bool,
}

/// `mpirun -np N … EXE ARGS` for `flavor`'s launcher, found in `path` (the PATH variable).
pub fn mpirun(
    flavor: Flavor,
    np: u32,
    exe: &Path,
    args: &[OsString],
    host: Host,
    path: Option<&std::ffi::OsStr>,
) -> Result<Command, String> {
    let program = flavor
        .programs()
        .iter()
        .find_map(|p| find_in_path(p, path))
        .ok_or_else(|| {
            format!(
                "no MPI launcher found ({} not in PATH): install the launcher of the MPI this \
                 commperf was built with (openmpi-bin or mpich), or start commperf under your \
                 own mpirun or srun",
                flavor.programs().join(", ")
            )
        })?;
    let mut a: Vec<OsString> = Vec::new();
    match flavor {
        Flavor::OpenMpi => {
            a.extend(["-np".into(), np.to_string().into()]);
            if (host.cpus as u32) < np {
                // Open MPI refuses to start more ranks than it counts slots.
                a.push("--oversubscribe".into());
            }
            if host.root {
                a.push("--allow-run-as-root".into());
            }
        }
        Flavor::Mpich | Flavor::Other => a.extend(["-n".into(), np.to_string().into()]),
    }
    a.push(exe.as_os_str().to_owned());
    a.extend(args.iter().cloned());
    Ok(Command { program, args: a })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bin_dir(names: &[&str]) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let d = std::env::temp_dir().join(format!(
            "commperf-spawn-{}-{}",
            std::process::id(),
            names.join("-")
        ));
        std::fs::create_dir_all(&d).unwrap();
        for n in names {
            let p = d.join(n);
            std::fs::write(&p, "#!/bin/sh\n").unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        d
    }

    #[test]
    fn the_library_names_its_flavor() {
        assert_eq!(
            Flavor::of("Open MPI v4.1.4, package: Debian OpenMPI"),
            Flavor::OpenMpi
        );
        assert_eq!(Flavor::of("MPICH Version:      4.0.2"), Flavor::Mpich);
        assert_eq!(Flavor::of("Intel(R) MPI Library 2021"), Flavor::Other);
    }

    #[test]
    fn open_mpi_gets_its_own_launcher_and_flags() {
        let d = bin_dir(&["mpirun", "mpirun.openmpi", "mpiexec.mpich"]);
        let args = vec![
            OsString::from("bench"),
            OsString::from("--transport"),
            "mpi".into(),
        ];
        let host = Host {
            cpus: 1,
            root: true,
        };
        let c = mpirun(
            Flavor::OpenMpi,
            2,
            Path::new("/x/commperf"),
            &args,
            host,
            Some(d.as_os_str()),
        )
        .unwrap();
        assert_eq!(c.program, d.join("mpirun.openmpi"));
        assert_eq!(
            c.display(),
            format!(
                "{} -np 2 --oversubscribe --allow-run-as-root /x/commperf bench --transport mpi",
                d.join("mpirun.openmpi").display()
            )
        );
        let host = Host {
            cpus: 4,
            root: false,
        };
        let c = mpirun(
            Flavor::OpenMpi,
            2,
            Path::new("/x/commperf"),
            &[],
            host,
            Some(d.as_os_str()),
        )
        .unwrap();
        assert_eq!(c.args, ["-np", "2", "/x/commperf"].map(OsString::from));
        let c = mpirun(
            Flavor::Mpich,
            2,
            Path::new("/x/commperf"),
            &[],
            host,
            Some(d.as_os_str()),
        )
        .unwrap();
        assert_eq!(c.program, d.join("mpiexec.mpich"));
        assert_eq!(c.args, ["-n", "2", "/x/commperf"].map(OsString::from));
        let _ = std::fs::remove_dir_all(d);
    }

    #[test]
    fn a_missing_launcher_is_named() {
        let d = bin_dir(&["unrelated"]);
        let host = Host {
            cpus: 2,
            root: false,
        };
        let e = mpirun(
            Flavor::Mpich,
            2,
            Path::new("c"),
            &[],
            host,
            Some(d.as_os_str()),
        )
        .unwrap_err();
        assert!(
            e.contains("mpiexec.mpich, mpirun.mpich, mpiexec not in PATH"),
            "{e}"
        );
        let _ = std::fs::remove_dir_all(d);
    }
}
