//! The real programs a study can run beside the kit: Debian's `hpcc` (HPC Challenge: HPL,
//! PTRANS, FFT, RandomAccess, b_eff) and `lammps` (a Lennard-Jones melt: its halo exchange and
//! allreduce). Nobody here wrote them, which is the point: the study's loop must work on code it
//! cannot change.
//!
//! Both read their input from a file, so each program × stack gets a working directory
//! (`-wdir`, which Open MPI's and MPICH's launchers both take) holding the input written from the
//! study's arguments. Debian builds them against Open MPI only; the MPICH stacks need builds of
//! their own (`scripts/build_mpich_apps.sh [--lammps]`, whose output directory `--mpich-apps`
//! names). A binary that links the other MPI is refused naming both, before mpirun would fail
//! obscurely.

use crate::error::{chain, Context, Result, StudyError};
use crate::stack::Stack;
use commperf_pmpi::Flavour;
use std::path::{Path, PathBuf};

/// An installed program of the study.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Installed {
    Hpcc,
    Lammps,
}

/// Name, the study's default arguments, and what each argument means (name, lowest, highest).
pub const INSTALLED: &[(&str, Installed, &str)] = &[
    ("hpcc", Installed::Hpcc, "n=400"),
    ("lammps", Installed::Lammps, "size=8 steps=200"),
];

const ARGS: &[(Installed, &str, u64, u64, &str)] = &[
    (
        Installed::Hpcc,
        "n",
        40,
        20_000,
        "HPL and PTRANS matrix order",
    ),
    (
        Installed::Lammps,
        "size",
        2,
        64,
        "box edge in lattice cells (4·size³ atoms)",
    ),
    (Installed::Lammps, "steps", 1, 1_000_000, "time steps"),
];

const HPCCINF: &str = include_str!("../../pmpi/tests/apps/hpccinf.txt");
const IN_LJ: &str = include_str!("../../pmpi/tests/apps/in.lj");

impl Installed {
    fn binary(self) -> &'static str {
        match self {
            Installed::Hpcc => "hpcc",
            Installed::Lammps => "lmp",
        }
    }

    fn package(self) -> &'static str {
        match self {
            Installed::Hpcc => "hpcc",
            Installed::Lammps => "lammps",
        }
    }
}

/// The value of argument `name` among `args` (`name=value`), checked against its range.
fn arg(i: Installed, args: &[String], name: &str) -> Result<u64> {
    let (_, _, lo, hi, what) = ARGS
        .iter()
        .find(|a| a.0 == i && a.1 == name)
        .expect("known argument");
    let v = args
        .iter()
        .rev()
        .find_map(|a| a.strip_prefix(&format!("{name}=")))
        .ok_or(StudyError::Missing("missing argument"))?;
    match v.parse::<u64>() {
        Ok(x) if (*lo..=*hi).contains(&x) => Ok(x),
        _ => Err(StudyError::Refused(format!(
            "{name}={v}: expected {what}, an integer from {lo} to {hi}"
        ))),
    }
}

/// Checks the arguments of an installed program (unknown names and bad values, by name).
pub fn check_args(i: Installed, args: &[String]) -> Result<(), String> {
    for a in args {
        let name = a.split_once('=').map_or(a.as_str(), |(k, _)| k);
        if !ARGS.iter().any(|x| x.0 == i && x.1 == name) {
            let known: Vec<&str> = ARGS.iter().filter(|x| x.0 == i).map(|x| x.1).collect();
            return Err(format!(
                "{a}: {} has no argument '{name}' (it has: {})",
                i.package(),
                known.join(", ")
            ));
        }
        arg(i, args, name).map_err(|e| chain(&e))?;
    }
    Ok(())
}

/// The process grid hpcc gets for `np` ranks: P × Q = np, P ≤ Q, as square as possible.
fn grid(np: u32) -> (u32, u32) {
    let p = (1..=np)
        .take_while(|p| p * p <= np)
        .filter(|p| np % p == 0)
        .last()
        .unwrap_or(1);
    (p, np / p)
}

/// hpcc's input for `np` ranks and matrix order `n`: tests/apps/hpccinf.txt with its order and
/// grid replaced.
fn hpccinf(np: u32, n: u64) -> Result<String> {
    let (p, q) = grid(np);
    let mut out = String::new();
    let mut seen = [false; 3];
    for line in HPCCINF.lines() {
        let rest = line.split_once(char::is_whitespace).map_or("", |x| x.1);
        let label = rest.trim_start();
        let value = if label == "Ns" {
            seen[0] = true;
            Some(n.to_string())
        } else if label == "Ps" {
            seen[1] = true;
            Some(p.to_string())
        } else if label == "Qs" {
            seen[2] = true;
            Some(q.to_string())
        } else {
            None
        };
        match value {
            Some(v) => out.push_str(&format!("{v:<13}{label}\n")),
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    if seen != [true; 3] {
        return Err(StudyError::Missing(
            "the built-in hpccinf.txt has no Ns, Ps or Qs line",
        ));
    }
    Ok(out)
}

/// The Lennard-Jones input with its box edge and step count.
fn in_lj(size: u64, steps: u64) -> Result<String> {
    let t = IN_LJ
        .replace(
            "block 0 8 0 8 0 8",
            &format!("block 0 {size} 0 {size} 0 {size}"),
        )
        .replace("run             200", &format!("run             {steps}"));
    if !t.contains(&format!("run             {steps}")) || !t.contains(&format!("0 {size} 0")) {
        return Err(StudyError::Missing(
            "the built-in in.lj has no box or run line to set",
        ));
    }
    Ok(t)
}

fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    })
}

/// The binary for the stack's MPI: Debian's for Open MPI, `--mpich-apps DIR`/bin's for MPICH.
fn binary(i: Installed, s: Stack, mpich_apps: Option<&Path>) -> Result<PathBuf> {
    let bin = match s.flavour() {
        Flavour::OpenMpi => which(i.binary()).ok_or_else(|| {
            StudyError::Refused(format!(
                "{} is not installed (apt-get install {})",
                i.binary(),
                i.package()
            ))
        })?,
        _ => {
            let script = format!(
                "scripts/build_mpich_apps.sh{}",
                if i == Installed::Lammps {
                    " --lammps"
                } else {
                    ""
                }
            );
            let Some(dir) = mpich_apps else {
                return Err(StudyError::Refused(format!(
                    "Debian's {} links Open MPI only: build one against MPICH with {script} \
                     and pass its directory as --mpich-apps",
                    i.package(),
                )));
            };
            let b = dir.join("bin").join(i.binary());
            if !b.is_file() {
                return Err(StudyError::Refused(format!(
                    "--mpich-apps {}: no bin/{} in it ({script} builds it)",
                    dir.display(),
                    i.binary()
                )));
            }
            b
        }
    };
    match commperf_launch::preload::program_flavour(&bin) {
        Some((f, _)) if f == s.flavour() => Ok(bin),
        Some((f, lib)) => Err(StudyError::Refused(format!(
            "{} links {} ({lib}), not {} as {} needs",
            bin.display(),
            f.name(),
            s.flavour().name(),
            s.name()
        ))),
        None => Err(StudyError::Refused(format!(
            "{} links no MPI library",
            bin.display()
        ))),
    }
}

/// The launch of an installed program on stack `s`: its input written into `workdir`, the
/// launcher told to run the ranks there.
pub fn command(
    i: Installed,
    args: &[String],
    s: Stack,
    np: u32,
    mpich_apps: Option<&Path>,
    workdir: &Path,
) -> Result<Vec<String>> {
    let bin = binary(i, s, mpich_apps)?;
    std::fs::create_dir_all(workdir)
        .with_context(|| format!("cannot create {}", workdir.display()))?;
    let (file, text) = match i {
        Installed::Hpcc => ("hpccinf.txt", hpccinf(np, arg(i, args, "n")?)?),
        Installed::Lammps => (
            "in.lj",
            in_lj(arg(i, args, "size")?, arg(i, args, "steps")?)?,
        ),
    };
    let input = workdir.join(file);
    std::fs::write(&input, text).with_context(|| format!("cannot write {}", input.display()))?;
    let mut cmd = s.launch(np);
    // A launcher option: before the program, and before a network stack's mover (the commperf
    // binary ahead of `__netns-rank`).
    let at = cmd
        .iter()
        .position(|x| x == "__netns-rank")
        .map_or(cmd.len(), |i| i - 1);
    cmd.splice(at..at, ["-wdir".to_string(), workdir.display().to_string()]);
    cmd.push(bin.display().to_string());
    if i == Installed::Lammps {
        cmd.extend(["-in".into(), file.into(), "-log".into(), "none".into()]);
    }
    Ok(cmd)
}

/// The patterns an installed program's runs are judged by: hpcc's summary in its
/// `hpccoutf.txt` (timed by HPL's solve), LAMMPS's `Loop time of`.
pub fn builtin(i: Installed) -> crate::verdict::Builtin {
    match i {
        Installed::Hpcc => crate::verdict::Builtin::Hpcc,
        Installed::Lammps => crate::verdict::Builtin::Lammps,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hpcc_gets_a_grid_for_every_rank_count() {
        assert_eq!(grid(1), (1, 1));
        assert_eq!(grid(2), (1, 2));
        assert_eq!(grid(4), (2, 2));
        assert_eq!(grid(6), (2, 3));
        assert_eq!(grid(7), (1, 7));
        let t = hpccinf(6, 1000).unwrap();
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[5], "1000         Ns");
        assert_eq!(lines[10], "2            Ps");
        assert_eq!(lines[11], "3            Qs");
        assert_eq!(lines.len(), HPCCINF.lines().count());
    }

    #[test]
    fn lammps_input() {
        let t = in_lj(5, 77).unwrap();
        assert!(t.contains("region          box block 0 5 0 5 0 5"), "{t}");
        assert!(t.contains("run             77"), "{t}");
    }

    #[test]
    fn arguments_are_checked_by_name() {
        let a = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert!(check_args(Installed::Hpcc, &a(&["n=400"])).is_ok());
        let e = check_args(Installed::Hpcc, &a(&["n=10"])).unwrap_err();
        assert!(
            e.contains("n=10: expected HPL and PTRANS matrix order"),
            "{e}"
        );
        let e = check_args(Installed::Lammps, &a(&["size=8", "atoms=5"])).unwrap_err();
        assert!(
            e.contains("lammps has no argument 'atoms' (it has: size, steps)"),
            "{e}"
        );
    }

    #[test]
    fn the_working_directory_goes_to_the_launcher() {
        if which("hpcc").is_none() {
            return; // nothing to resolve; the MPI tests cover it where hpcc is installed
        }
        let d = std::env::temp_dir().join(format!("commperf-inst-{}", std::process::id()));
        let args = vec!["n=400".to_string()];
        let c = command(Installed::Hpcc, &args, Stack::OMPI_SHM, 4, None, &d).unwrap();
        let w = c.iter().position(|x| x == "-wdir").unwrap();
        assert_eq!(c[w + 1], d.display().to_string());
        assert!(c.last().unwrap().ends_with("hpcc"));
        assert!(std::fs::read_to_string(d.join("hpccinf.txt"))
            .unwrap()
            .contains("2            Ps"));
        let _ = std::fs::remove_dir_all(&d);
        let e = command(Installed::Hpcc, &args, Stack::MPICH_SHM, 4, None, &d).unwrap_err();
        assert!(chain(&e).contains("--mpich-apps"), "{e}");
    }
}
