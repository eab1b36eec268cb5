//! The programs of a study: the kit of NAS-pattern programs (`apps/nas/`, compiled on demand
//! with each MPI's mpicc into a cache, [`compile`]), the installed ones (hpcc, lammps:
//! [`crate::installed`]) and any MPI command; each with its arguments and the [`Judge`] of its
//! runs.

use crate::error::{Context, Result, StudyError};
use crate::installed::{self, Installed};
use crate::stack::Stack;
use crate::verdict::{Builtin, Judge};
use commperf_pmpi::Flavour;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The kit: name, source, and the arguments of the study's default (short) run. Each
/// communicating program warms up for two untimed rounds first (`warmup=2`, `nas_warmup` in
/// `nas_common.h`): the default runs time loops of a millisecond or less, and MPICH's
/// shared-memory cells, touched for the first time, cost up to half of that (pipeline on
/// mpich-shm 0.67 ms cold, 0.29 ms warm).
pub const KIT: &[(&str, &str, &str)] = &[
    (
        "halo",
        include_str!("../../../apps/nas/halo.c"),
        "n=64 iters=200 warmup=2",
    ),
    (
        "transpose",
        include_str!("../../../apps/nas/transpose.c"),
        "elems=1024 iters=50 p2p=1 warmup=2",
    ),
    (
        "wavefront",
        include_str!("../../../apps/nas/wavefront.c"),
        "bx=8 by=8 nz=50 iters=10 warmup=2",
    ),
    (
        "cg",
        include_str!("../../../apps/nas/cg.c"),
        "m=1024 hw=4 iters=500 dots=2 warmup=2",
    ),
    (
        "pipeline",
        include_str!("../../../apps/nas/pipeline.c"),
        "bs=128 blocks=16 iters=20 warmup=2",
    ),
    (
        "ep",
        include_str!("../../../apps/nas/ep.c"),
        "n=1048576 work=64",
    ),
];
const KIT_HEADER: &str = include_str!("../../../apps/nas/nas_common.h");

/// One program of a study.
#[derive(Debug, Clone)]
pub struct Program {
    pub name: String,
    /// The kit's source, or None for a command.
    pub(crate) kit: Option<&'static str>,
    /// An installed program (hpcc, lammps): `args` are its `name=value` arguments.
    pub(crate) installed: Option<Installed>,
    /// Kit: `name=value` arguments; command: the whole command.
    pub(crate) args: Vec<String>,
    /// What its output and exit must say, and where its own time is.
    pub judge: Judge,
}

impl Program {
    /// The kit's or the installed program `name`, with the study's default arguments.
    pub fn named(name: &str) -> Option<Program> {
        let (kit, inst, defaults) = if let Some((_, src, d)) = KIT.iter().find(|k| k.0 == name) {
            (Some(*src), None, *d)
        } else if let Some((_, i, d)) = installed::INSTALLED.iter().find(|k| k.0 == name) {
            (None, Some(*i), *d)
        } else {
            return None;
        };
        let judge = match (kit, inst) {
            (Some(_), _) => Judge::builtin(Builtin::Kit),
            (_, Some(i)) => Judge::builtin(installed::builtin(i)),
            (None, None) => Judge::none(),
        };
        Some(Program {
            name: name.to_string(),
            kit,
            installed: inst,
            args: defaults.split_whitespace().map(String::from).collect(),
            judge,
        })
    }

    /// Any MPI command (`command` whole, launched after the stack's launcher).
    pub fn command(name: String, command: Vec<String>, judge: Judge) -> Program {
        Program {
            name,
            kit: None,
            installed: None,
            args: command,
            judge,
        }
    }

    /// Sets argument `name` to `name_value` (`name=value`), replacing the one it had.
    pub(crate) fn set_arg(&mut self, name: &str, name_value: &str) {
        self.args.retain(|x| !x.starts_with(&format!("{name}=")));
        self.args.push(name_value.to_string());
    }

    /// One of the kit's programs, which start their clock at the end of a barrier (the loop's
    /// window starts there); any other program's barriers say nothing of where its timed part is.
    pub fn is_kit(&self) -> bool {
        self.kit.is_some()
    }

    /// The files the program writes its results to, which its verdict reads beside its
    /// output: hpcc's `hpccoutf.txt` in its working directory.
    pub fn output_files(&self, root: &Path, s: Stack) -> Vec<PathBuf> {
        match self.installed {
            Some(Installed::Hpcc) => {
                vec![workdir(root, &self.name, s).join("hpccoutf.txt")]
            }
            _ => Vec::new(),
        }
    }
}

/// The working directory of program `name` on stack `s` (an installed program's input).
pub(crate) fn workdir(root: &Path, name: &str, s: Stack) -> PathBuf {
    root.join(name).join(s.name()).join("input")
}

/// Where the kit's binaries are compiled when no cache is given: `$XDG_CACHE_HOME/commperf/apps`,
/// else `~/.cache/commperf/apps`.
pub fn default_cache() -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("commperf").join("apps")
}

/// The full launch of program `p` on stack `s`: the kit's program compiled for the stack's MPI.
pub(crate) fn command_for(p: &Program, s: Stack, np: u32, cache: &Path) -> Result<Vec<String>> {
    let mut cmd = s.launch(np);
    match p.kit {
        Some(src) => {
            let bin = compile(&p.name, src, s, cache)?;
            cmd.push(bin.display().to_string());
            cmd.extend(p.args.iter().cloned());
        }
        None => cmd.extend(p.args.iter().cloned()),
    }
    Ok(cmd)
}

/// Compiles a kit program with the stack's mpicc into the cache (once per source and MPI: the
/// file name carries a hash of the sources).
pub fn compile(name: &str, src: &str, s: Stack, cache: &Path) -> Result<PathBuf> {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (src, KIT_HEADER).hash(&mut h);
    let flavour = match s.flavour() {
        Flavour::OpenMpi => "openmpi",
        _ => "mpich",
    };
    let bin = cache.join(format!("{name}-{flavour}-{:016x}", h.finish()));
    if bin.is_file() {
        return Ok(bin);
    }
    std::fs::create_dir_all(cache)
        .with_context(|| format!("cannot create the cache directory {}", cache.display()))?;
    let dir = cache.join(format!("src-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let c = dir.join(format!("{name}.c"));
    std::fs::write(&c, src).with_context(|| format!("cannot write {}", c.display()))?;
    std::fs::write(dir.join("nas_common.h"), KIT_HEADER)
        .with_context(|| format!("cannot write {}", dir.display()))?;
    let tmp = dir.join(name);
    let o = Command::new(s.compiler())
        .args(["-O2", "-I"])
        .arg(&dir)
        .arg("-o")
        .arg(&tmp)
        .arg(&c)
        .output();
    let r = match o {
        Err(e) => Err(StudyError::Refused(format!(
            "cannot run {} to build {name}: {e} (install {}'s development package)",
            s.compiler(),
            s.flavour().name()
        ))),
        Ok(o) if !o.status.success() => Err(StudyError::Refused(format!(
            "{} {name}.c failed: {}",
            s.compiler(),
            crate::launch::last_lines(&o.stderr, 3)
        ))),
        Ok(_) => std::fs::rename(&tmp, &bin)
            .with_context(|| format!("cannot move {} to {}", tmp.display(), bin.display())),
    };
    let _ = std::fs::remove_dir_all(&dir);
    r.map(|()| bin)
}
