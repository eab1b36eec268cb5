//! A study's configuration, validated: [`Options`] is what the user asked for (the command
//! line's values, unchecked), [`StudyConfig::new`] checks it and resolves it into the programs,
//! the stacks and the settings [`run`](crate::run::run) takes. Every refusal names the option it
//! concerns ([`ConfigError`]).

use crate::programs::{Program, KIT};
use crate::stack::Stack;
use crate::verdict::{self, Judge, Pattern, TimePattern};
use crate::{installed, stack};
use commperf_emulate::Knob;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What the user asked of a study, before it is checked (`commperf app`'s options).
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Programs, comma-separated (None: the kit's six, or none when a command is given).
    pub programs: Option<String>,
    /// Stacks, comma-separated.
    pub stacks: String,
    /// Ranks per run.
    pub np: u32,
    /// Runs per program and stack.
    pub repeat: u32,
    /// Kit programs' arguments, `PROGRAM:NAME=VALUE`.
    pub args: Vec<String>,
    /// Where each run's monitor files and the study's files are kept.
    pub out: Option<PathBuf>,
    /// The HTML page to write (checked here: a file in an existing directory).
    pub html: Option<PathBuf>,
    /// Where the kit's binaries are compiled (None: [`crate::programs::default_cache`]).
    pub cache: Option<PathBuf>,
    /// A commperf built with MPICH, and one built with Open MPI, for the stacks' benches.
    pub mpich_commperf: Option<PathBuf>,
    pub openmpi_commperf: Option<PathBuf>,
    /// Leave out the stacks' micro-benchmarks.
    pub no_bench: bool,
    /// Also close the loop (measure, predict, emulate).
    pub loop_: bool,
    /// The sensitivity sweeps' knobs and values.
    pub sweep: Vec<(Knob, Vec<f64>)>,
    /// The stack the sweeps run on (None: the first stack).
    pub sweep_stack: Option<String>,
    /// Where hpcc and lmp built against MPICH are (DIR/bin).
    pub mpich_apps: Option<PathBuf>,
    /// Seconds one run may take.
    pub timeout_s: u64,
    /// The command's own time, and the lines it must and must not print.
    pub time_pattern: Option<TimePattern>,
    pub success_pattern: Vec<Pattern>,
    pub failure_pattern: Vec<Pattern>,
    /// Any MPI program, run on every stack.
    pub command: Vec<String>,
}

/// An option the study refuses, with the option's name first.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("--stacks: {0}")]
    Stacks(stack::StackError),
    #[error("--stacks: empty list")]
    NoStacks,
    #[error("--programs: '{0}' is named twice")]
    Twice(String),
    #[error(
        "--programs: unknown program '{name}' (the kit has: {kit}; installed: {installed}; run \
         any other after --)"
    )]
    UnknownProgram {
        name: String,
        kit: String,
        installed: String,
    },
    #[error("--programs: empty list")]
    NoPrograms,
    #[error("--arg {0}: expected PROGRAM:NAME=VALUE (`halo:iters=50`)")]
    ArgSyntax(String),
    #[error("--arg {arg}: '{program}' is not a kit program of this study (it has: {have})")]
    ArgProgram {
        arg: String,
        program: String,
        have: String,
    },
    /// An installed program's argument out of its range, or unknown to it.
    #[error("--arg {0}")]
    InstalledArg(String),
    #[error(
        "{0}: applies to the command after --, and none is given (the kit, hpcc and lammps have \
         their own patterns)"
    )]
    PatternWithoutCommand(&'static str),
    #[error("--html {0}: not a file in an existing directory")]
    Html(String),
    #[error("--sweep-stack: no --sweep to run")]
    SweepStackWithoutSweep,
    #[error("--sweep-stack {0}: not one of the study's stacks (--stacks)")]
    SweepStack(String),
}

/// The validated study: its programs and stacks, and how it runs.
#[derive(Debug)]
pub struct StudyConfig {
    pub programs: Vec<Program>,
    pub stacks: Vec<Stack>,
    /// Where `--sweep` runs (None: no sweep).
    pub sweep_stack: Option<Stack>,
    pub sweep: Vec<(Knob, Vec<f64>)>,
    pub np: u32,
    pub repeat: u32,
    pub out: Option<PathBuf>,
    pub cache: PathBuf,
    pub mpich_commperf: Option<PathBuf>,
    pub openmpi_commperf: Option<PathBuf>,
    pub mpich_apps: Option<PathBuf>,
    pub no_bench: bool,
    pub loop_: bool,
    pub timeout: Duration,
}

impl StudyConfig {
    /// Checks `o` and resolves its programs and stacks.
    pub fn new(o: Options) -> Result<StudyConfig, ConfigError> {
        let stacks = stack::parse_stacks(&split(&o.stacks).collect::<Vec<_>>())
            .map_err(ConfigError::Stacks)?;
        if stacks.is_empty() {
            return Err(ConfigError::NoStacks);
        }
        let mut programs = named_programs(&o)?;
        apply_args(&mut programs, &o.args)?;
        if !o.command.is_empty() {
            programs.push(command_program(&o));
        } else {
            let given = [
                ("--time-pattern", o.time_pattern.is_some()),
                ("--success-pattern", !o.success_pattern.is_empty()),
                ("--failure-pattern", !o.failure_pattern.is_empty()),
            ];
            if let Some((flag, _)) = given.iter().find(|g| g.1) {
                return Err(ConfigError::PatternWithoutCommand(flag));
            }
        }
        if programs.is_empty() {
            return Err(ConfigError::NoPrograms);
        }
        for p in &programs {
            if let Some(i) = p.installed {
                installed::check_args(i, &p.args).map_err(ConfigError::InstalledArg)?;
            }
        }
        if let Some(h) = &o.html {
            check_html(h)?;
        }
        let sweep_stack = sweep_stack(&o, &stacks)?;
        Ok(StudyConfig {
            programs,
            stacks,
            sweep_stack,
            sweep: o.sweep,
            np: o.np,
            repeat: o.repeat,
            out: o.out,
            cache: o.cache.unwrap_or_else(crate::programs::default_cache),
            mpich_commperf: o.mpich_commperf,
            openmpi_commperf: o.openmpi_commperf,
            mpich_apps: o.mpich_apps,
            no_bench: o.no_bench,
            loop_: o.loop_,
            timeout: Duration::from_secs(o.timeout_s),
        })
    }
}

fn split(s: &str) -> impl Iterator<Item = &str> {
    s.split(',').map(str::trim).filter(|x| !x.is_empty())
}

/// The kit's and the installed programs `--programs` names, with their default arguments.
fn named_programs(o: &Options) -> Result<Vec<Program>, ConfigError> {
    let names: Vec<&str> = match &o.programs {
        Some(p) => split(p).collect(),
        None if o.command.is_empty() => KIT.iter().map(|k| k.0).collect(),
        None => Vec::new(),
    };
    let mut programs: Vec<Program> = Vec::new();
    for n in names {
        if programs.iter().any(|p| p.name == n) {
            return Err(ConfigError::Twice(n.to_string()));
        }
        let p = Program::named(n).ok_or_else(|| ConfigError::UnknownProgram {
            name: n.to_string(),
            kit: KIT.iter().map(|k| k.0).collect::<Vec<_>>().join(", "),
            installed: installed::INSTALLED
                .iter()
                .map(|k| k.0)
                .collect::<Vec<_>>()
                .join(", "),
        })?;
        programs.push(p);
    }
    Ok(programs)
}

/// `--arg PROGRAM:NAME=VALUE`s, each replacing the program's argument of that name.
fn apply_args(programs: &mut [Program], args: &[String]) -> Result<(), ConfigError> {
    for a in args {
        let bad = || ConfigError::ArgSyntax(a.clone());
        let (prog, kv) = a.split_once(':').ok_or_else(bad)?;
        let (k, _) = kv.split_once('=').ok_or_else(bad)?;
        if k.is_empty() {
            return Err(bad());
        }
        let have = programs
            .iter()
            .map(|p| p.name.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        let Some(p) = programs.iter_mut().find(|p| p.name == prog) else {
            return Err(ConfigError::ArgProgram {
                arg: a.clone(),
                program: prog.to_string(),
                have,
            });
        };
        // The program itself checks the name and value (and refuses a bad one by name).
        p.set_arg(k, kv);
    }
    Ok(())
}

/// The command after `--` as a program, named by its file.
fn command_program(o: &Options) -> Program {
    let name = Path::new(&o.command[0])
        .file_name()
        .map_or_else(|| o.command[0].clone(), |n| n.to_string_lossy().into());
    // A command commperf does not know by name: the built-in patterns of the program whose
    // banner its output carries, under the user's.
    let user = verdict::Rules {
        time: o.time_pattern.clone(),
        success: o.success_pattern.clone(),
        failure: o.failure_pattern.clone(),
    };
    Program::command(name, o.command.clone(), Judge::recognise().with_user(user))
}

fn check_html(h: &Path) -> Result<(), ConfigError> {
    let parent = h.parent().filter(|p| !p.as_os_str().is_empty());
    if parent.is_some_and(|p| !p.is_dir()) || h.is_dir() {
        return Err(ConfigError::Html(h.display().to_string()));
    }
    Ok(())
}

fn sweep_stack(o: &Options, stacks: &[Stack]) -> Result<Option<Stack>, ConfigError> {
    if o.sweep_stack.is_some() && o.sweep.is_empty() {
        return Err(ConfigError::SweepStackWithoutSweep);
    }
    Ok(match (&o.sweep_stack, o.sweep.is_empty()) {
        (_, true) => None,
        (None, false) => Some(stacks[0]),
        (Some(n), false) => Some(
            stacks
                .iter()
                .copied()
                .find(|s| s.name() == *n)
                .ok_or_else(|| ConfigError::SweepStack(n.clone()))?,
        ),
    })
}
