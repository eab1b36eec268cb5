//! The sweep of a real program: `commperf emulate sweep --knob L=0,5,10,20us -- COMMAND` runs
//! the program once per setting under the interposer's knobs (`commperf emulate`, the calling
//! executable), each run in its own process group with a timeout and its output in a log of its
//! own, so a run that hangs or crashes is reported for its setting and the sweep keeps the rest.
//!
//! With predictions ([`PredictOptions`]), the program is first run once under `commperf
//! monitor --trace` (knobs at zero); [`super::predicted`] then replays that trace with each knob
//! raised, in LogGP mode and in contention mode, beside the measured slowdowns.

use super::loggp::can_measure_loggp;
use super::{run_sweep, Runner, Setting, Statistic, SweepError, SweepPlan, SweepResult};
use crate::state::MachineProbe;
use crate::{Knob, Knobs};
use commperf_core::Watch;
use commperf_launch::say;
use commperf_model::loggp::LogGp;
use commperf_pmpi::Flavour;
use commperf_predict::engine::LoggpReceive;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Why a sweep of a program could not be run, or its predictions not made. The messages are
/// the command line's (`commperf: {e:#}`): each names what failed, its cause following.
#[derive(Debug, thiserror::Error)]
pub enum SweepRunError {
    #[error(transparent)]
    Plan(#[from] SweepError),
    #[error(transparent)]
    Launch(#[from] commperf_launch::LaunchError),
    #[error(
        "--predict needs the platform's parameters the knobs add to: --loggp L=…,o=…,g=…,G=… \
         (ns, from `commperf bench loggp -t mpi`) or --profile FILE (from `commperf \
         calibrate`); a commperf built with --features mpi measures them itself"
    )]
    NoMpiToMeasure,
    #[error(
        "--predict would measure LogGP with this commperf's {own} but the program runs {prog}: \
         give --loggp (from `commperf bench loggp -t mpi` built against {prog})"
    )]
    OtherMpi {
        own: &'static str,
        prog: &'static str,
    },
    #[error("cannot create {}", path.display())]
    Create {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot start commperf {verb}")]
    Start {
        verb: &'static str,
        #[source]
        source: std::io::Error,
    },
    /// A child run timed out, was interrupted, or could not be waited for
    /// ([`wait_timeout`]'s message).
    #[error("{0}")]
    Stopped(String),
    #[error("the monitored run for --predict failed ({status}); see {}", log.display())]
    MonitorFailed { status: ExitStatus, log: PathBuf },
    #[error("the monitored run wrote no {}", .0.display())]
    NoTrace(PathBuf),
    #[error("bench loggp -t mpi failed ({status}); see {}", log.display())]
    BenchFailed { status: ExitStatus, log: PathBuf },
    #[error("reading {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("reading {}", path.display())]
    BenchJson {
        path: PathBuf,
        #[source]
        source: super::loggp::PieceError,
    },
    #[error("bench loggp identified no {key} in any of its {runs} runs{why}; give --loggp")]
    Unidentified {
        key: &'static str,
        runs: usize,
        why: String,
    },
    #[error("{}: not JSON", path.display())]
    StatsJson {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error(
        "the monitored run dropped {drops} events (its call rate outran the monitor's \
         writer), so {} is incomplete; predict from a run with fewer calls per second",
        trace.display()
    )]
    Dropped { drops: u64, trace: PathBuf },
    #[error("reading trace {}", path.display())]
    Trace {
        path: PathBuf,
        #[source]
        source: commperf_predict::parse::TraceError,
    },
    #[error(transparent)]
    Profile(#[from] commperf_predict::values::ProfileFileError),
    #[error("the profile's Tcom")]
    Tcom(#[source] commperf_model::tcom::TcomError),
    #[error(transparent)]
    Topology(#[from] commperf_predict::topology::TopologyError),
    /// The baseline's prediction failed (the engine's message).
    #[error("{0}")]
    Predict(String),
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    #[error(transparent)]
    Output(#[from] commperf_core::file::OutputError),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// How the predictions beside a sweep are made.
#[derive(Debug, Clone)]
pub struct PredictOptions {
    /// The platform's LogGP parameters (ns), which the knobs add to; `None`: from `profile`,
    /// or measured now by `bench loggp -t mpi`.
    pub loggp: Option<LogGp>,
    /// A profile from `commperf calibrate` (Tcom of the contention model; LogGP without
    /// `loggp`).
    pub profile: Option<PathBuf>,
    /// Messages up to this size are eager.
    pub eager: u64,
    /// LogGP predictions: when a message's receive begins.
    pub loggp_receive: LoggpReceive,
}

/// A sweep as it was asked for, unchecked: [`SweepConfig::new`] checks it.
#[derive(Debug, Clone)]
pub struct SweepSpec {
    /// Each knob and its values (zeros are the shared baseline).
    pub knobs: Vec<(Knob, Vec<f64>)>,
    /// Rounds: every setting runs this many times, interleaved.
    pub repeat: u32,
    pub statistic: Statistic,
    /// The program, e.g. `mpirun -np 4 ./app`.
    pub command: Vec<String>,
    /// The interposer (openmpi, mpich); `None`: the program's MPI.
    pub interposer: Option<String>,
    /// Longest one run may take before it is stopped and counted as failed.
    pub timeout: Duration,
    /// Where the runs' logs, the monitor trace and `sweep.json` go.
    pub dir: PathBuf,
    /// Predictions beside the measured slowdowns.
    pub predict: Option<PredictOptions>,
}

/// A checked sweep: its plan is valid, and its predictions have the parameters they need or
/// this executable can measure them.
#[derive(Debug, Clone)]
pub struct SweepConfig {
    plan: SweepPlan,
    spec: SweepSpec,
}

impl SweepConfig {
    /// Checks `spec`. `own_mpi`: the MPI this executable's `bench -t mpi` runs on (`None`:
    /// built without MPI), for predictions that must measure LogGP themselves.
    pub fn new(spec: SweepSpec, own_mpi: Option<Flavour>) -> Result<SweepConfig, SweepRunError> {
        let plan = SweepPlan::new(&spec.knobs, spec.repeat)?.with_statistic(spec.statistic);
        if let Some(p) = &spec.predict {
            if p.loggp.is_none() && p.profile.is_none() {
                can_measure_loggp(&spec.command, spec.interposer.as_deref(), own_mpi)?;
            }
        }
        Ok(SweepConfig { plan, spec })
    }

    pub fn plan(&self) -> &SweepPlan {
        &self.plan
    }

    pub fn spec(&self) -> &SweepSpec {
        &self.spec
    }
}

/// What a caller is told while a sweep runs (e.g. to draw a progress bar).
pub trait SweepProgress {
    /// Before each run: `done` of `total` runs finished, `setting` next.
    fn before_run(&mut self, done: usize, total: usize, setting: &Setting);
    /// After the last run, before the predictions (if any) and the result.
    fn runs_ended(&mut self) {}
}

/// Runs the sweep `cfg` with `exe` (the commperf executable: `exe emulate`, `exe monitor`,
/// `exe bench loggp` run the program and measure), telling `progress` before each run and
/// when the runs have ended. The result is saved as DIR/`sweep.json` (before its predictions too: a
/// replay can take long) and returned; an interrupted sweep is saved unpredicted and marked
/// [`SweepResult::partial`].
pub fn run(
    cfg: &SweepConfig,
    exe: &Path,
    progress: &mut dyn SweepProgress,
) -> Result<SweepResult, SweepRunError> {
    let (plan, a) = (&cfg.plan, &cfg.spec);
    let trace = match a.predict {
        Some(_) => Some(monitored_trace(a, exe)?),
        None => None,
    };
    say(&format!(
        "commperf: sweep of {} settings × {} rounds = {} runs; logs in {}",
        plan.settings().len(),
        a.repeat,
        plan.schedule().len(),
        a.dir.display()
    ));
    let mut runs = EmulatedRuns {
        spec: a,
        exe: exe.to_path_buf(),
        n: 0,
        probe: crate::state::shared(),
        // The cache-line probe tells the machine's state, not whether the program shared its
        // CPUs: the watch does, over the whole sweep.
        watch: Watch::start("emulate sweep", &[]),
    };
    let mut result = run_sweep(plan, &mut runs, &a.command, |done, total, s| {
        progress.before_run(done, total, s)
    });
    progress.runs_ended();
    result.disturbance = runs.watch.finish();
    // An interrupted sweep is saved at once: its predictions would compare partial figures.
    if result.partial && trace.is_some() {
        result
            .notes
            .push("Not predicted: the sweep was interrupted.".into());
    }
    if let (Some(trace), Some(p), false) = (&trace, &a.predict, result.partial) {
        // The measurements are on disk before any prediction runs: a replay can take long.
        save(&result, &a.dir)?;
        say("commperf: --predict: replaying the trace with each knob raised");
        // The measured sweep is kept whatever happens to its prediction.
        let how = super::predicted::Replay {
            trace,
            exe,
            dir: &a.dir,
            timeout: a.timeout,
            probe: runs.probe,
        };
        if let Err(e) = super::predicted::add_predictions(&mut result, p, &how) {
            result
                .notes
                .push(format!("not predicted: {}", crate::calibrate::chain(&e)));
        }
    }
    save(&result, &a.dir)?;
    Ok(result)
}

/// Writes `r` as DIR/`sweep.json`, whole or not at all.
fn save(r: &SweepResult, dir: &Path) -> Result<(), SweepRunError> {
    let json = serde_json::to_string_pretty(r)? + "\n";
    Ok(commperf_core::file::write_file(
        &dir.join("sweep.json"),
        json.as_bytes(),
    )?)
}

/// Runs the program under `commperf emulate` (this executable), timing the child from spawn to
/// exit. A child process per run keeps a crash, a hang or a leftover rank of one setting from
/// touching the next: each run is its own process group, killed whole on timeout.
struct EmulatedRuns<'a> {
    spec: &'a SweepSpec,
    exe: PathBuf,
    n: usize,
    probe: Option<&'static MachineProbe>,
    watch: Watch,
}

/// The `commperf emulate` flags that set `k`: only the knobs that are not zero.
pub(crate) fn knob_flags(k: &Knobs) -> Vec<String> {
    let mut v = Vec::new();
    for knob in Knob::ALL {
        let x = k.get(knob);
        if x > 0.0 {
            v.push(format!("--{knob}"));
            // ns for o, g and L; ns per byte for G (its parser's default unit).
            v.push(format!("{x}ns"));
        }
    }
    v
}

/// How long a child run has, once asked to stop (an interrupt passed on, its timeout past), to
/// stop its command and clean up before its process group is killed.
const STOP_GRACE: Duration = Duration::from_secs(10);

/// Waits for `child` (spawned with `process_group(0)`) up to `timeout`. Past it, the child is
/// asked to stop (SIGTERM: `commperf emulate` passes it on to its mpirun, which stops its ranks
/// and removes its files), and its process group is killed if it still runs [`STOP_GRACE`]
/// later. An interrupt meanwhile is passed on to the child ([`commperf_launch::interrupt::Child`]), which
/// then has the same grace. Returns the exit status and the instant the child ended (taken by
/// the waiting thread, not at the next poll).
pub(crate) fn wait_timeout(
    mut child: std::process::Child,
    timeout: Duration,
) -> Result<(ExitStatus, Instant), String> {
    let pid = child.id() as i32;
    let _child = commperf_launch::interrupt::Child::of(child.id());
    let (tx, rx) = mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let r = child.wait();
        let _ = tx.send((r, Instant::now()));
    });
    let mut deadline = Instant::now() + timeout;
    let (mut interrupted, mut timed_out) = (false, false);
    loop {
        let slice = deadline
            .saturating_duration_since(Instant::now())
            .min(Duration::from_millis(100));
        match rx.recv_timeout(slice) {
            Ok((Ok(_), _)) if timed_out => {
                let _ = waiter.join();
                return Err(format!("timed out after {timeout:?}; stopped"));
            }
            Ok((Ok(st), at)) => {
                let _ = waiter.join();
                return Ok((st, at));
            }
            Ok((Err(e), _)) => return Err(format!("cannot wait for the program: {e}")),
            Err(_) if Instant::now() < deadline => {
                if !interrupted && !timed_out && commperf_launch::interrupt::requested() {
                    interrupted = true;
                    deadline = deadline.min(Instant::now() + STOP_GRACE);
                }
            }
            Err(_) if !interrupted && !timed_out => {
                timed_out = true;
                deadline = Instant::now() + STOP_GRACE;
                // SAFETY: kill(2) on our own child, not yet reaped; no memory is involved.
                unsafe { libc::kill(pid, libc::SIGTERM) };
            }
            Err(_) => break,
        }
    }
    // SAFETY: kill(2) on the child's own process group (it was spawned with process_group(0),
    // so its pgid is its pid); no memory is involved.
    unsafe {
        libc::kill(-pid, libc::SIGKILL);
    }
    let _ = rx.recv();
    let _ = waiter.join();
    Err(if interrupted {
        format!("interrupted; still running {STOP_GRACE:?} later; killed")
    } else {
        format!("timed out after {timeout:?}; still running {STOP_GRACE:?} later; killed")
    })
}

/// Makes `cmd` a child run: no input, stdout and stderr into `log` (created now), its own
/// process group (killed whole by [`wait_timeout`]), dying with this process.
pub(crate) fn logged(cmd: &mut Command, log: &Path) -> Result<(), SweepRunError> {
    let file = std::fs::File::create(log).map_err(|source| SweepRunError::Create {
        path: log.to_path_buf(),
        source,
    })?;
    cmd.stdin(Stdio::null())
        .stdout(file.try_clone()?)
        .stderr(file);
    std::os::unix::process::CommandExt::process_group(cmd, 0);
    commperf_launch::interrupt::die_with_parent(cmd);
    Ok(())
}

/// Starts `cmd` (made a child run by [`logged`]) and waits for it up to `timeout`: its exit
/// status. `verb`: the commperf verb it runs, for the error.
pub(crate) fn run_logged(
    cmd: &mut Command,
    verb: &'static str,
    timeout: Duration,
) -> Result<ExitStatus, SweepRunError> {
    let child = cmd
        .spawn()
        .map_err(|source| SweepRunError::Start { verb, source })?;
    let (st, _) = wait_timeout(child, timeout).map_err(SweepRunError::Stopped)?;
    Ok(st)
}

impl Runner for EmulatedRuns<'_> {
    fn probe(&mut self) -> Option<f64> {
        self.probe?.read()
    }

    fn stop_requested(&mut self) -> bool {
        // The program runs in its own process group, out of the terminal's reach: an
        // interrupt is passed on to the run in hand (`wait_timeout`), which stops, and is left
        // out of the figures (a run cut short is not a measurement).
        commperf_launch::interrupt::requested()
    }

    fn run(&mut self, setting: &Setting) -> Result<f64, String> {
        // Between runs nothing of ours spins: measurements started since, and the run queue.
        self.watch.check();
        self.n += 1;
        let log = self.spec.dir.join(format!("run-{:03}.log", self.n));
        let file = std::fs::File::create(&log)
            .map_err(|e| format!("cannot create {}: {e}", log.display()))?;
        let err = file
            .try_clone()
            .map_err(|e| format!("cannot reopen {}: {e}", log.display()))?;
        let mut cmd = Command::new(&self.exe);
        cmd.arg("emulate").args(knob_flags(&setting.knobs()));
        if !setting.untouched {
            // Every setting and the baseline run the whole apparatus, L's side band included,
            // so its own per-message cost is in the anchor as in each setting
            // (commperf_emulate::sweep).
            cmd.arg("--engaged");
        }
        if let Some(i) = &self.spec.interposer {
            cmd.args(["--interposer", i]);
        }
        cmd.arg("--")
            .args(&self.spec.command)
            .stdin(Stdio::null())
            .stdout(file)
            .stderr(err);
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        commperf_launch::interrupt::die_with_parent(&mut cmd);
        let start = Instant::now();
        let child = cmd
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", self.exe.display()))?;
        let (st, end) = wait_timeout(child, self.spec.timeout)
            .map_err(|e| format!("{e} (log {})", log.display()))?;
        if !st.success() {
            let last = commperf_launch::last_lines(&std::fs::read(&log).unwrap_or_default(), 1);
            return Err(format!("{st}: {last} (log {})", log.display()));
        }
        Ok(end.duration_since(start).as_secs_f64())
    }
}

/// Runs the program once under `commperf monitor --trace` and returns the trace it wrote.
fn monitored_trace(a: &SweepSpec, exe: &Path) -> Result<PathBuf, SweepRunError> {
    let mdir = a.dir.join("monitor");
    let log = a.dir.join("monitor.log");
    let mut cmd = Command::new(exe);
    cmd.arg("monitor").arg("--trace").arg("-o").arg(&mdir);
    if let Some(i) = &a.interposer {
        cmd.args(["--interposer", i]);
    }
    cmd.arg("--").args(&a.command);
    logged(&mut cmd, &log)?;
    say("commperf: --predict: one monitored run for the trace");
    let status = run_logged(&mut cmd, "monitor", a.timeout)?;
    if !status.success() {
        return Err(SweepRunError::MonitorFailed { status, log });
    }
    let trace = mdir.join("trace.txt");
    if !trace.is_file() {
        return Err(SweepRunError::NoTrace(trace));
    }
    Ok(trace)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knob_flags_name_only_the_set_knobs() {
        assert_eq!(
            knob_flags(&Knobs::only(Knob::L, 5000.0)),
            vec!["--L".to_string(), "5000ns".to_string()]
        );
        assert!(knob_flags(&Knobs::default()).is_empty());
    }
}
