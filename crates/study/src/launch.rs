//! How a study runs things: a program's launch on a stack ([`launch_of`]), one monitored run of
//! it under the interposer, judged by its verdict ([`monitored_run`]), a `commperf bench` under a
//! stack's launch by the commperf that links the stack's MPI ([`launch_bench`]), and the
//! watchdog every launch runs under ([`run_with_timeout`]): a timeout, an interrupt, and a
//! launcher that hangs in MPI_Finalize after its ranks wrote everything.

use crate::config::StudyConfig;
use crate::error::{Context, Result, StudyError};
use crate::nets::Nets;
use crate::programs::{command_for, workdir, Program};
use crate::schema::Profile;
use crate::stack::Stack;
use crate::verdict::{self, Judge};
use commperf_pmpi::Flavour;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// The launch of program `p` on stack `s` (kit, installed or command), or why it cannot run
/// there (its network was not built, its build failed, no binary for that MPI).
pub fn launch_of(
    cfg: &StudyConfig,
    nets: &Nets,
    p: &Program,
    s: Stack,
    root: &Path,
) -> Result<Vec<String>> {
    nets.check(s).map_err(StudyError::Refused)?;
    match p.installed {
        Some(i) => crate::installed::command(
            i,
            &p.args,
            s,
            cfg.np,
            cfg.mpich_apps.as_deref(),
            &workdir(root, &p.name, s),
        ),
        None => command_for(p, s, cfg.np, &cfg.cache),
    }
}

pub use commperf_launch::last_lines;

/// One monitored run's figures.
#[derive(Debug)]
pub struct RunResult {
    pub wall_s: f64,
    pub note: Option<String>,
    /// The program's own time, and the pattern that found it.
    pub program_s: Option<f64>,
    pub time_pattern: Option<String>,
    pub profile: Profile,
    /// The machine's state over the run ([`commperf_emulate::state::around`], ns).
    pub state_ns: Option<f64>,
}

/// How a run is judged: the program's [`Judge`] and the files it writes its results to.
#[derive(Debug)]
pub struct Verdict<'a> {
    pub judge: &'a Judge,
    pub files: &'a [PathBuf],
}

/// One monitored run: the command under the interposer (as `commperf monitor -o DIR -- …`),
/// with `extra` variables beside the monitor's (the loop's emulation knobs). `timed_loop`: the
/// program times a loop from the end of its last MPI_Barrier (the kit's programs), and its
/// profile is of that window. A run the verdict fails is [`StudyError::Failed`].
pub fn monitored_run(
    command: &[String],
    np: u32,
    dir: &Path,
    timeout: Duration,
    extra: &[(String, String)],
    timed_loop: bool,
    verdict: &Verdict<'_>,
) -> Result<RunResult> {
    prepare_run_dir(dir, verdict.files)?;
    let dir = std::fs::canonicalize(dir)?;
    let cmd = monitored_command(command, &dir, extra)?;
    // Done: every rank's monitor file is complete (the interposer writes it in MPI_Finalize,
    // before the library's own finalization).
    let all_finalized = || {
        commperf_monitor::mpi::load(&dir)
            .is_ok_and(|(s, _)| !s.cut_short && s.missing_ranks.is_empty() && s.ranks == np)
    };
    let ((finished, wall_s), state_ns) = commperf_emulate::state::around(|| {
        let t0 = Instant::now();
        let r = run_with_timeout(cmd, timeout, &all_finalized);
        (r, t0.elapsed().as_secs_f64())
    });
    let f = finished.with_context(|| format!("cannot run {}", command[0]))?;
    std::fs::write(dir.join("stdout.txt"), &f.stdout)?;
    std::fs::write(dir.join("stderr.txt"), &f.stderr)?;
    let note = f.after_results.then(|| {
        "stopped 10 s after every rank had finalized its monitor file (MPI_Finalize did not \
         return)"
            .to_string()
    });
    // A run stopped after its results has no exit status to judge (None).
    let status = match f.status {
        Some(st) => Some(verdict::Status::from(st)),
        None if f.after_results => None,
        None => return Err(StudyError::Timeout(timeout.as_secs())),
    };
    let passed = judge_run(&dir, &f, status, verdict)?;
    let profile = profile_of(&dir, timed_loop)?;
    Ok(RunResult {
        wall_s,
        program_s: passed.time.as_ref().map(|t| t.seconds),
        time_pattern: passed.time.map(|t| t.pattern),
        profile,
        note,
        state_ns,
    })
}

/// A run's directory, made, holding no earlier run's rank files, nor its result files (hpcc
/// appends to its hpccoutf.txt: an earlier run's results must not be judged as this one's).
fn prepare_run_dir(dir: &Path, files: &[PathBuf]) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    commperf_pmpi::clear_rank_files(dir)?;
    for f in files {
        match std::fs::remove_file(f) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(e).with_context(|| format!("cannot remove {}", f.display()))
            }
            _ => {}
        }
    }
    Ok(())
}

/// `command` with the interposer preloaded, writing into `dir`, and `extra` variables.
fn monitored_command(
    command: &[String],
    dir: &Path,
    extra: &[(String, String)],
) -> Result<Command> {
    let plan = commperf_launch::preload::plan(command, None)?;
    let preload = plan.preload()?;
    let mut vars = vec![
        ("LD_PRELOAD".to_string(), preload),
        ("COMMPERF_PMPI_DIR".to_string(), dir.display().to_string()),
        ("COMMPERF_PMPI_TAG".to_string(), String::new()),
    ];
    vars.extend(extra.iter().cloned());
    let mut cmd = plan.command(command, &vars);
    cmd.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    Ok(cmd)
}

/// The verdict on a finished run: its output, exit and result files (copied beside the run).
fn judge_run(
    dir: &Path,
    f: &Finished,
    status: Option<verdict::Status>,
    verdict: &Verdict<'_>,
) -> Result<verdict::Passed> {
    let mut files = Vec::new();
    for file in verdict.files {
        // A file the program did not write is judged empty: its patterns name what is missing.
        let t = std::fs::read(file).unwrap_or_default();
        if let Some(name) = file.file_name() {
            std::fs::write(dir.join(name), &t)?;
        }
        files.push((
            file.file_name().map_or_else(
                || file.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            ),
            String::from_utf8_lossy(&t).into_owned(),
        ));
    }
    let text = String::from_utf8_lossy(&f.stdout);
    let errtext = String::from_utf8_lossy(&f.stderr);
    let output = verdict::Output {
        files: files
            .iter()
            .map(|(name, text)| verdict::Text { name, text })
            .collect(),
        stdout: &text,
        stderr: &errtext,
        status,
    };
    Ok(verdict.judge.judge(&output)?)
}

/// The run's message profile from its monitor files (summary.json written beside them). A kit
/// program's profile is its timed loop's (its warm-up and set-up before the barrier that starts
/// it left out), the part the study times and the loop replays.
fn profile_of(dir: &Path, timed_loop: bool) -> Result<Profile> {
    let mut run = commperf_pmpi::read_dir(dir).context(
        "the interposer recorded nothing: the program does not use MPI, or not the stack's MPI",
    )?;
    let s = commperf_pmpi::summarize(&run);
    std::fs::write(dir.join("summary.json"), serde_json::to_string_pretty(&s)?)?;
    if s.cut_short {
        return Err(StudyError::CutShort(s.unfinished_ranks.clone()));
    }
    Ok(if timed_loop && crate::looping::window(&mut run) {
        let mut p = Profile::of(&commperf_pmpi::summarize(&run));
        p.from_barrier = true;
        p
    } else {
        Profile::of(&s)
    })
}

/// How a command ended.
#[derive(Debug)]
pub struct Finished {
    /// Its exit status; None: it was stopped.
    pub status: Option<ExitStatus>,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// Whether it was stopped after writing its results.
    pub after_results: bool,
}

/// Runs `cmd` (stdout and stderr piped) for at most `timeout`; a status of None: it was stopped
/// (SIGTERM to the launcher, which passes it on to the ranks; SIGKILL 10 s later).
///
/// `done`: whether the command's work is complete (checked once a second); when it has been for
/// 10 s and the command still runs (MPICH 4.0.2 over UCX's TCP transport was seen spinning in
/// MPI_Finalize for minutes after the ranks had written everything), the command is stopped the
/// same way and `after_results` says so.
pub fn run_with_timeout(
    mut cmd: Command,
    timeout: Duration,
    done: &dyn Fn() -> bool,
) -> Result<Finished> {
    let mut shm = commperf_launch::run_dir::RunDir::ompi(&mut cmd)?;
    let mut child = commperf_launch::interrupt::die_with_parent(&mut cmd).spawn()?;
    shm.launched(child.id());
    let out = drain(child.stdout.take());
    let err = drain(child.stderr.take());
    let (status, after_results) = watch(&mut child, timeout, done)?;
    Ok(Finished {
        status,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
        after_results,
    })
}

/// A thread reading `r` to its end (a child's pipe, which must not fill while it runs).
fn drain(r: Option<impl std::io::Read + Send + 'static>) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut v = Vec::new();
        if let Some(mut r) = r {
            let _ = r.read_to_end(&mut v);
        }
        v
    })
}

/// Waits for `child`, stopping it on the timeout, an interrupt, or 10 s after `done`; its exit
/// status (None: stopped), and whether it was stopped after its results.
fn watch(
    child: &mut std::process::Child,
    timeout: Duration,
    done: &dyn Fn() -> bool,
) -> Result<(Option<ExitStatus>, bool)> {
    let t0 = Instant::now();
    let mut status = None;
    let mut termed: Option<Instant> = None;
    let mut results_seen: Option<Instant> = None;
    let mut after_results = false;
    let mut checked = Instant::now();
    loop {
        if let Some(st) = child.try_wait()? {
            if termed.is_none() {
                status = Some(st);
            }
            break;
        }
        if results_seen.is_none() && checked.elapsed() > Duration::from_secs(1) {
            checked = Instant::now();
            if done() {
                results_seen = Some(checked);
            }
        }
        let hung = results_seen.is_some_and(|t| t.elapsed() > Duration::from_secs(10));
        if termed.is_none() && hung {
            after_results = true;
        }
        let stop = t0.elapsed() > timeout || hung || commperf_testbed::run::interrupted();
        if termed.is_none() && stop {
            // SAFETY: kill on our own child's pid.
            unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
            termed = Some(Instant::now());
        }
        if termed.is_some_and(|t| t.elapsed() > Duration::from_secs(10)) {
            let _ = child.kill();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok((status, after_results))
}

/// The commperf that measures the stack's MPI layer: the one given for its MPI, else this one
/// when it links that MPI.
fn bench_binary(cfg: &StudyConfig, f: Flavour) -> Result<PathBuf> {
    let given = match f {
        Flavour::OpenMpi => &cfg.openmpi_commperf,
        _ => &cfg.mpich_commperf,
    };
    if let Some(p) = given {
        return Ok(p.clone());
    }
    if !commperf_mpi::AVAILABLE {
        return Err(StudyError::Refused(commperf_mpi::NOT_BUILT.to_string()));
    }
    let exe = std::env::current_exe().context("locate the commperf binary")?;
    match commperf_launch::preload::program_flavour(&exe) {
        Some((mine, _)) if mine == f => Ok(exe),
        mine => Err(StudyError::Refused(format!(
            "this commperf links {}, not {}: {}",
            mine.map_or("no MPI", |m| m.0.name()),
            f.name(),
            build_hint(f)
        ))),
    }
}

/// How to build a commperf that links `f`'s MPI and give it to `app`: each MPI in a target
/// directory of its own (`CARGO_TARGET_DIR`), so that building one does not overwrite the
/// binary built with the other, which the other stacks use.
pub fn build_hint(f: Flavour) -> String {
    let key = f.key();
    format!(
        "build one with `MPICC=mpicc.{key} CARGO_TARGET_DIR=target/{key} cargo build --release \
         --features mpi` and give it as `--{key}-commperf target/{key}/release/commperf`"
    )
}

/// `commperf bench ARGS --format json -o FILE` with 2 ranks under the stack's launch, by the
/// commperf that links the stack's MPI; returns a note when the launch had to be stopped after
/// the bench wrote its results.
pub(crate) fn launch_bench(
    cfg: &StudyConfig,
    s: Stack,
    bench_args: &[String],
    file: &Path,
) -> Result<Option<String>> {
    let exe = bench_binary(cfg, s.flavour())?;
    let mut cmd = s.launch(2);
    cmd.push(exe.display().to_string());
    cmd.push("bench".into());
    cmd.extend(bench_args.iter().cloned());
    cmd.extend(["--format".into(), "json".into(), "-o".into()]);
    cmd.push(file.display().to_string());
    let mut c = Command::new(&cmd[0]);
    c.args(&cmd[1..])
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let _ = std::fs::remove_file(file);
    let f = run_with_timeout(c, cfg.timeout, &|| file.is_file())?;
    let note = f.after_results.then(|| {
        "the launch was stopped 10 s after the bench wrote its results (MPI_Finalize did \
         not return)"
            .to_string()
    });
    match f.status {
        None if f.after_results => {}
        None => return Err(StudyError::Timeout(cfg.timeout.as_secs())),
        Some(status) if !status.success() => {
            return Err(StudyError::BenchExit {
                command: cmd.join(" "),
                status,
                stderr: last_lines(&f.stderr, 2),
            })
        }
        Some(_) => {}
    }
    Ok(note)
}
