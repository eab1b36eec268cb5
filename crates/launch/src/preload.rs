//! Running an unmodified MPI program under commperf's interposer (`LD_PRELOAD`): shared by
//! `commperf monitor -- …` (recording) and `commperf emulate -- …` (the LogGP knobs), which differ
//! only in the environment they give the ranks. Finds which MPI the program uses (from the
//! program's libraries, or the launcher's flavour), installs the interposer built for it, and
//! passes the variables the way that launcher wants them (Open MPI `-x VAR=value`, MPICH's Hydra
//! `-genv VAR value`), never in mpirun's own environment, where the preload would load MPI into
//! the launcher itself.

use crate::LaunchError;
use commperf_pmpi::Flavour;
use std::path::{Path, PathBuf};
use std::process::Command;

pub fn flavour_from(s: &str) -> Option<Flavour> {
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

/// What starts the ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Launcher {
    /// None: the command is a singleton MPI program.
    None,
    /// An MPI library's own launcher (mpirun, mpiexec, orterun), of this MPI if known.
    Mpirun(Option<Flavour>),
    /// Slurm's srun: ranks it starts itself, each given its variables by `env` in front of the
    /// program, never through srun's own environment (which would preload srun).
    Srun,
}

fn base_name(cmd: &str) -> &str {
    Path::new(cmd)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("")
}

fn launcher_of(cmd: &str) -> Launcher {
    let base = base_name(cmd);
    if base == "srun" {
        Launcher::Srun
    } else if base.starts_with("mpirun")
        || base.starts_with("mpiexec")
        || base.starts_with("orterun")
    {
        Launcher::Mpirun(launcher_flavour(cmd))
    } else {
        Launcher::None
    }
}

/// Which MPI a program links (ldd), or None when it links none (a script, a non-MPI tool).
pub fn program_flavour(prog: &Path) -> Option<(Flavour, String)> {
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

/// Where the words after the launcher's start: past a launcher's name, and past a rank mover
/// (`commperf __netns-rank PREFIX -- PROGRAM`, `commperf app`'s network stacks), which is
/// commperf itself and may link an MPI.
fn program_words_from(cmd: &[String], launcher: Launcher) -> usize {
    cmd.iter()
        .position(|a| a == "__netns-rank")
        .and_then(|i| cmd[i..].iter().position(|a| a == "--").map(|j| i + j + 1))
        .unwrap_or(usize::from(launcher != Launcher::None))
}

/// The program in the command: the first word (from `from`) that is an executable linking an
/// MPI, with its index.
fn find_program(cmd: &[String], from: usize) -> Option<(usize, PathBuf, Flavour, String)> {
    cmd.iter().enumerate().skip(from).find_map(|(i, a)| {
        if a.starts_with('-') {
            return None;
        }
        let p = which(a)?;
        let (f, lib) = program_flavour(&p)?;
        Some((i, p, f, lib))
    })
}

/// Refuses a command whose program does not exist, naming it: the command itself, or (under a
/// launcher, `from` > 0) the first path-like word before any executable, which is where the
/// program goes. A program's own arguments (`from` = 0) are its business: `touch new/file`.
fn check_program_exists(cmd: &[String], from: usize) -> Result<(), LaunchError> {
    if which(&cmd[0]).is_none() {
        if cmd[0].contains('/') {
            return Err(LaunchError::NoProgram(format!("{}: no such file", cmd[0])));
        }
        return Err(LaunchError::NoProgram(format!(
            "{}: no such program on PATH",
            cmd[0]
        )));
    }
    if from == 0 {
        return Ok(());
    }
    for a in cmd.iter().skip(from) {
        if a.starts_with('-') {
            continue;
        }
        if which(a).is_some() {
            break;
        }
        if a.contains('/') && !Path::new(a).exists() {
            return Err(LaunchError::NoProgram(format!(
                "{a}: no such file (the program to run, in `{}`)",
                cmd.join(" ")
            )));
        }
    }
    Ok(())
}

/// How a command is run under the interposer: which MPI, which launcher, and where its program
/// is.
#[derive(Debug, Clone)]
pub struct Plan {
    pub flavour: Flavour,
    launcher: Launcher,
    /// The index of the program in the command, where it was found.
    program_at: Option<usize>,
}

/// Chooses the interposer for `command` (`interposer`: the user's `--interposer openmpi|mpich`),
/// refusing a program that does not exist and a launcher of one MPI running a program of the
/// other.
pub fn plan(command: &[String], interposer: Option<&str>) -> Result<Plan, LaunchError> {
    let launcher = launcher_of(&command[0]);
    let from = program_words_from(command, launcher);
    check_program_exists(command, from)?;
    let lf = match launcher {
        Launcher::Mpirun(f) => f,
        _ => None,
    };
    let prog = find_program(command, from);
    if let (Some(l), Some((_, p, f, lib))) = (lf, &prog) {
        if l != *f {
            return Err(LaunchError::WhichMpi(format!(
                "{} is {} but {} links {} ({lib}): launch it with {}'s mpirun",
                command[0],
                l.name(),
                p.display(),
                f.name(),
                f.name()
            )));
        }
    }
    let flavour = match interposer {
        Some(s) => match s {
            "openmpi" => Flavour::OpenMpi,
            "mpich" => Flavour::Mpich,
            _ => {
                return Err(LaunchError::WhichMpi(format!(
                    "--interposer {s}: expected openmpi or mpich"
                )))
            }
        },
        None => match (prog.as_ref().map(|p| p.2), lf) {
            (Some(f), _) | (None, Some(f)) => f,
            (None, None) => {
                return Err(LaunchError::WhichMpi(format!(
                "cannot tell which MPI {} uses (no program linking libmpi found in the command, \
                 and the launcher is not one of Open MPI's or MPICH's); say it with --interposer",
                command.join(" ")
            )))
            }
        },
    };
    if let (Some(s), Some((_, p, f, lib))) = (interposer, &prog) {
        if *f != flavour {
            crate::say(&format!(
                "commperf: warning: --interposer {s} ({}) but {} links {} ({lib}); the interposer will refuse it",
                flavour.name(), p.display(), f.name()
            ));
        }
    }
    // Under srun the variables go in front of the program, so it must be found; a script or
    // a tool that does not link MPI counts when the user named the interposer.
    let program_at = prog.map(|p| p.0).or_else(|| {
        command
            .iter()
            .enumerate()
            .skip(from)
            .find(|(_, a)| !a.starts_with('-') && which(a).is_some())
            .map(|(i, _)| i)
    });
    if launcher == Launcher::Srun && program_at.is_none() {
        return Err(LaunchError::NoProgram(format!(
            "cannot find the program in `{}`: srun's ranks get the interposer from `env` in \
             front of the program, which must be an executable file or on PATH",
            command.join(" ")
        )));
    }
    Ok(Plan {
        flavour,
        launcher,
        program_at,
    })
}

impl Plan {
    /// The `LD_PRELOAD` value for the ranks: the interposer and the runtime this binary
    /// carries, extracted into (and checked in) the per-user cache ([`commperf_pmpi::LibCache`]).
    pub fn preload(&self) -> Result<String, LaunchError> {
        // Refused for want of the interposer before the cache directory is made.
        commperf_pmpi::install::carried_interposer(self.flavour)?;
        let cache = commperf_pmpi::LibCache::open()?;
        Ok(cache.preload(self.flavour)?)
    }

    /// `command` with `vars` given to its ranks: through mpirun's options (Open MPI `-x
    /// VAR=value`, MPICH's Hydra `-genv VAR value`), as `env VAR=value` in front of the program
    /// under srun, or in the environment of a singleton.
    /// The command dies with this process (SIGTERM: [`crate::interrupt::die_with_parent`]).
    pub fn command(&self, command: &[String], vars: &[(String, String)]) -> Command {
        let mut cmd = Command::new(&command[0]);
        crate::interrupt::die_with_parent(&mut cmd);
        match self.launcher {
            Launcher::Mpirun(f) => {
                for (k, v) in vars {
                    match f {
                        Some(Flavour::Mpich) => cmd.args(["-genv", k, v]),
                        _ => cmd.args(["-x", &format!("{k}={v}")]),
                    };
                }
                cmd.args(&command[1..]);
            }
            Launcher::Srun => {
                // `plan` refused an srun command without a program.
                let at = self.program_at.unwrap_or(command.len());
                cmd.args(&command[1..at]).arg("env");
                cmd.args(vars.iter().map(|(k, v)| format!("{k}={v}")));
                cmd.args(&command[at..]);
            }
            Launcher::None => {
                cmd.envs(vars.iter().map(|(k, v)| (k, v)));
                cmd.args(&command[1..]);
            }
        }
        cmd
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(c: &Command) -> Vec<String> {
        c.get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    fn cmd(words: &[&str]) -> Vec<String> {
        words.iter().map(|s| s.to_string()).collect()
    }

    const VARS: [(&str, &str); 2] = [("LD_PRELOAD", "/c/shim.so:/c/rt.so"), ("K", "a,b=c")];

    fn vars() -> Vec<(String, String)> {
        VARS.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn srun_gives_the_variables_to_the_ranks_and_not_to_itself() {
        let plan = Plan {
            flavour: Flavour::OpenMpi,
            launcher: Launcher::Srun,
            program_at: Some(3),
        };
        let c = plan.command(&cmd(&["srun", "-n", "4", "./app", "x"]), &vars());
        assert_eq!(c.get_program(), "srun");
        assert_eq!(
            args(&c),
            [
                "-n",
                "4",
                "env",
                "LD_PRELOAD=/c/shim.so:/c/rt.so",
                "K=a,b=c",
                "./app",
                "x"
            ]
        );
        assert_eq!(
            c.get_envs().count(),
            0,
            "srun's own environment is untouched"
        );
    }

    #[test]
    fn mpirun_gets_the_variables_as_its_options() {
        let words = cmd(&["mpirun", "-np", "2", "./app"]);
        let ompi = Plan {
            flavour: Flavour::OpenMpi,
            launcher: Launcher::Mpirun(Some(Flavour::OpenMpi)),
            program_at: Some(3),
        };
        assert_eq!(
            args(&ompi.command(&words, &vars())),
            [
                "-x",
                "LD_PRELOAD=/c/shim.so:/c/rt.so",
                "-x",
                "K=a,b=c",
                "-np",
                "2",
                "./app"
            ]
        );
        let hydra = Plan {
            flavour: Flavour::Mpich,
            launcher: Launcher::Mpirun(Some(Flavour::Mpich)),
            program_at: Some(3),
        };
        let c = hydra.command(&words, &vars());
        assert_eq!(
            args(&c),
            [
                "-genv",
                "LD_PRELOAD",
                "/c/shim.so:/c/rt.so",
                "-genv",
                "K",
                "a,b=c",
                "-np",
                "2",
                "./app"
            ]
        );
        assert_eq!(
            c.get_envs().count(),
            0,
            "mpirun's own environment is untouched"
        );
    }

    #[test]
    fn a_missing_program_is_named() {
        let e = plan(&cmd(&["./no_such_program"]), None).unwrap_err();
        assert_eq!(e.to_string(), "./no_such_program: no such file");
        let e = plan(&cmd(&["no-such-command-anywhere"]), None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "no-such-command-anywhere: no such program on PATH"
        );
        // Under a launcher (any command that exists stands in for it), the program's place.
        let words = cmd(&["/bin/true", "-np", "2", "./nope", "arg"]);
        let e = check_program_exists(&words, 1).unwrap_err();
        assert!(e.to_string().starts_with("./nope: no such file"), "{e}");
        // A program's own arguments are not programs.
        check_program_exists(&cmd(&["/bin/true", "./not/yet/made"]), 0).unwrap();
    }
}
