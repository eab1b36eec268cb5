//! Running an unmodified MPI program under commperf's interposer (`LD_PRELOAD`): shared by
//! `commperf monitor -- …` (recording) and `commperf emulate -- …` (the LogGP knobs), which differ
//! only in the environment they give the ranks. Finds which MPI the program uses (from the
//! program's libraries, or the launcher's flavour), installs the interposer built for it, and
//! passes the variables the way that launcher wants them (Open MPI `-x VAR=value`, MPICH's Hydra
//! `-genv VAR value`), never in mpirun's own environment, where the preload would load MPI into
//! the launcher itself.

use anyhow::{bail, Context, Result};
use commperf_pmpi::Flavour;
use std::path::{Path, PathBuf};
use std::process::Command;

pub(crate) fn flavour_from(s: &str) -> Option<Flavour> {
    let s = s.to_ascii_lowercase();
    if s.contains("mpich") || s.contains("hydra") {
        Some(Flavour::Mpich)
    } else if s.contains("openmpi")
        || s.contains("open mpi")
        || s.contains("orterun")
        || s.contains("open-rte")
    {
        Some(Flavour::OpenMpi)
    } else {
        None
    }
}

fn which(name: &str) -> Option<PathBuf> {
    if name.contains('/') {
        let p = PathBuf::from(name);
        return p.is_file().then_some(p);
    }
    std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    })
}

/// Which MPI a launcher is: by its resolved file name, else by `--version`.
fn launcher_flavour(cmd: &str) -> Option<Flavour> {
    let p = which(cmd)?;
    let real = std::fs::canonicalize(&p).unwrap_or(p.clone());
    if let Some(f) = flavour_from(&real.to_string_lossy()) {
        return Some(f);
    }
    let o = Command::new(&p).arg("--version").output().ok()?;
    flavour_from(&String::from_utf8_lossy(&o.stdout))
        .or_else(|| flavour_from(&String::from_utf8_lossy(&o.stderr)))
}

fn is_launcher(cmd: &str) -> bool {
    let base = Path::new(cmd)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("");
    base.starts_with("mpirun") || base.starts_with("mpiexec") || base.starts_with("orterun")
}

/// Which MPI a program links (ldd), or None when it links none (a script, a non-MPI tool).
pub(crate) fn program_flavour(prog: &Path) -> Option<(Flavour, String)> {
    let o = Command::new("ldd").arg(prog).output().ok()?;
    let s = String::from_utf8_lossy(&o.stdout);
    for line in s.lines() {
        let name = line.split_whitespace().next().unwrap_or("");
        if name.starts_with("libmpich") {
            return Some((Flavour::Mpich, line.trim().to_string()));
        }
        if name.starts_with("libmpi.so") {
            // Debian's libmpi.so.40 is Open MPI's, libmpi.so.12 MPICH's.
            let f = if line.contains("mpich") || name == "libmpi.so.12" {
                Flavour::Mpich
            } else {
                Flavour::OpenMpi
            };
            return Some((f, line.trim().to_string()));
        }
    }
    None
}

/// The first argument of the command that is an executable linking an MPI. A rank moved into
/// a namespace first (`commperf __netns-rank PREFIX -- PROGRAM`, `commperf app`'s network
/// stacks) is looked for after the mover, which is commperf itself and may link an MPI.
fn find_program(cmd: &[String]) -> Option<(PathBuf, Flavour, String)> {
    let from = cmd
        .iter()
        .position(|a| a == "__netns-rank")
        .and_then(|i| cmd[i..].iter().position(|a| a == "--").map(|j| i + j + 1))
        .unwrap_or(usize::from(is_launcher(&cmd[0])));
    cmd.iter().skip(from).find_map(|a| {
        if a.starts_with('-') {
            return None;
        }
        let p = which(a)?;
        let (f, lib) = program_flavour(&p)?;
        Some((p, f, lib))
    })
}

/// The recording runtime (the pmpi crate's cdylib), looked for beside the commperf binary.
fn runtime_lib() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os("COMMPERF_PMPI_RUNTIME") {
        return Ok(PathBuf::from(p));
    }
    let exe = std::env::current_exe().context("locate the commperf binary")?;
    let dir = exe.parent().unwrap_or(Path::new("."));
    // In a cargo tree the cdylib built as commperf's dependency lands in deps/ (not uplifted),
    // one built by `cargo build -p commperf-pmpi` beside the binary: take the newest.
    let newest = [
        dir.join("libcommperf_pmpi.so"),
        dir.join("deps/libcommperf_pmpi.so"),
        dir.join("../lib/libcommperf_pmpi.so"),
    ]
    .into_iter()
    .filter_map(|c| Some((std::fs::metadata(&c).ok()?.modified().ok()?, c)))
    .max();
    if let Some((_, c)) = newest {
        return Ok(std::fs::canonicalize(&c).unwrap_or(c));
    }
    bail!(
        "cannot find libcommperf_pmpi.so beside {} (build it with `cargo build -p commperf-pmpi`, \
         or set COMMPERF_PMPI_RUNTIME)",
        exe.display()
    )
}

/// How a command is run under the interposer: which MPI, and whether (and which) launcher.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    pub flavour: Flavour,
    launcher: bool,
    launcher_flavour: Option<Flavour>,
}

/// Chooses the interposer for `command` (`interposer`: the user's `--interposer openmpi|mpich`),
/// refusing a launcher of one MPI running a program of the other.
pub(crate) fn plan(command: &[String], interposer: Option<&str>) -> Result<Plan> {
    let launcher = is_launcher(&command[0]);
    let lf = if launcher {
        launcher_flavour(&command[0])
    } else {
        None
    };
    let prog = find_program(command);
    if let (Some(l), Some((p, f, lib))) = (lf, &prog) {
        if l != *f {
            bail!(
                "{} is {} but {} links {} ({lib}): launch it with {}'s mpirun",
                command[0],
                l.name(),
                p.display(),
                f.name(),
                f.name()
            );
        }
    }
    let flavour = match interposer {
        Some(s) => match s {
            "openmpi" => Flavour::OpenMpi,
            "mpich" => Flavour::Mpich,
            _ => bail!("--interposer {s}: expected openmpi or mpich"),
        },
        None => match (prog.as_ref().map(|p| p.1), lf) {
            (Some(f), _) | (None, Some(f)) => f,
            (None, None) => bail!(
                "cannot tell which MPI {} uses (no program linking libmpi found in the command, \
                 and the launcher is not one of Open MPI's or MPICH's); say it with --interposer",
                command.join(" ")
            ),
        },
    };
    if let (Some(s), Some((p, f, lib))) = (interposer, &prog) {
        if *f != flavour {
            crate::say(&format!(
                "commperf: warning: --interposer {s} ({}) but {} links {} ({lib}); the interposer will refuse it",
                flavour.name(), p.display(), f.name()
            ));
        }
    }
    Ok(Plan {
        flavour,
        launcher,
        launcher_flavour: lf,
    })
}

impl Plan {
    /// Writes the interposer into `libdir` and returns the `LD_PRELOAD` value (interposer and
    /// runtime).
    pub(crate) fn install(&self, libdir: &Path) -> Result<String> {
        let f = self.flavour;
        let Some(shim_bytes) = commperf_pmpi::interposer(f) else {
            bail!(
                "this commperf was built without the {} interposer ({}): install {}'s mpicc and rebuild",
                f.name(),
                f.file_name(),
                f.name()
            );
        };
        std::fs::create_dir_all(libdir)
            .with_context(|| format!("cannot create {}", libdir.display()))?;
        let shim = libdir.join(f.file_name());
        std::fs::write(&shim, shim_bytes)
            .with_context(|| format!("cannot write {}", shim.display()))?;
        let rt = runtime_lib()?;
        Ok(format!("{}:{}", shim.display(), rt.display()))
    }

    /// `command` with `vars` given to its ranks (through the launcher's options, or in the
    /// environment of a singleton).
    pub(crate) fn command(&self, command: &[String], vars: &[(String, String)]) -> Command {
        let mut cmd = Command::new(&command[0]);
        if self.launcher {
            for (k, v) in vars {
                match self.launcher_flavour {
                    Some(Flavour::Mpich) => cmd.args(["-genv", k, v]),
                    _ => cmd.args(["-x", &format!("{k}={v}")]),
                };
            }
        } else {
            cmd.envs(vars.iter().map(|(k, v)| (k, v)));
        }
        cmd.args(&command[1..]);
        cmd
    }
}
