//! An unmodified MPI program run with Martin's (1999) LogGP knobs inside commperf's interposer
//! (the knobs themselves are C, crates/pmpi/csrc/emulate.c, applied on point-to-point calls):
//! [`run_emulated`] is the one entry point, which `commperf emulate -- …`, a sensitivity sweep
//! (once per setting) and the application study call.
//!
//! The knobs travel to the ranks as `COMMPERF_EMULATE=o=…ns,g=…ns,G=…ns,L=…ns`, validated here
//! first by this crate's rules (negative, over 1 s or malformed values refused naming the knob
//! and the range). Collectives: with [`Collectives::P2p`] (the default) the interposer runs
//! Barrier, Bcast, Reduce, Allreduce, Allgather, Alltoall, Gather and Scatter itself as
//! point-to-point messages under the knobs, with `commperf predict`'s default algorithms
//! (crates/pmpi/csrc/coll.c); the others, the cases it leaves to the library (non-commutative
//! Reduce to a root other than 0, Alltoall in place, intercommunicators) and every collective
//! with [`Collectives::Native`] run inside the library, untouched. Each rank counts both kinds
//! (calls and its bytes, and the emulated ones' messages) beside the point-to-point traffic the
//! knobs touched, and [`RunOutcome::describe`] says the share they did not reach.
//!
//! [`MpiParams`], [`MpiRow`] and [`MpiCalibration`] are the knobs' calibration at the MPI layer
//! (`commperf emulate calibrate -t mpi`), judged by the criteria of the transport calibration.

use crate::{EmulateError, Knob, Knobs};
use commperf_core::file::{OutDir, OutputError};
use commperf_launch::run_dir::{Kind, RunDir};
use commperf_launch::LaunchError;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// What keeps an emulated run from running (a failing program is an outcome, not an error).
#[derive(Debug, thiserror::Error)]
pub enum MpiRunError {
    #[error(transparent)]
    Knobs(#[from] EmulateError),
    #[error("no command to emulate: commperf emulate --L 20us -- mpirun -np 4 ./app")]
    NoCommand,
    #[error(transparent)]
    Launch(#[from] LaunchError),
    #[error(transparent)]
    Output(#[from] OutputError),
    /// A file or process operation failed; `what` says on what.
    #[error("{what}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// A rank's counts file or `bench loggp`'s results could not be read.
    #[error("{0}")]
    Bad(String),
}

fn io(what: String) -> impl FnOnce(std::io::Error) -> MpiRunError {
    move |source| MpiRunError::Io { what, source }
}

/// How the interposer treats collectives while a knob is set (`COMMPERF_EMULATE_COLL`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Collectives {
    /// The common collectives run as point-to-point messages under the knobs.
    #[default]
    P2p,
    /// Every collective runs inside the MPI library, untouched by the knobs.
    Native,
}

impl Collectives {
    /// The `COMMPERF_EMULATE_COLL` value the interposer reads.
    pub fn env_value(self) -> &'static str {
        match self {
            Collectives::P2p => "p2p",
            Collectives::Native => "off",
        }
    }
}

/// What the knobs did and did not touch, summed over the ranks that reached MPI_Finalize.
#[derive(Debug, Clone, Default, Serialize, PartialEq, schemars::JsonSchema)]
pub struct Untouched {
    /// Ranks that wrote their counts (reached MPI_Finalize with a knob set).
    pub ranks: u64,
    /// Point-to-point messages sent under the knobs, and their bytes.
    pub p2p_messages: u64,
    pub p2p_bytes: u64,
    /// Point-to-point receives delivered under the knobs.
    pub p2p_receives: u64,
    /// Every collective call, and the ranks' own bytes in them (emulated or native).
    pub collective_calls: u64,
    pub collective_bytes: u64,
    /// Collective calls the interposer ran as point-to-point messages under the knobs, and the
    /// ranks' own bytes in them.
    pub collectives_emulated: u64,
    pub collectives_emulated_bytes: u64,
    /// Collective calls left to the MPI library (untouched by the knobs), and their bytes.
    pub collectives_native: u64,
    pub collectives_native_bytes: u64,
    /// The messages the emulated collectives sent (each under the knobs), their bytes, and
    /// the receives of them; not counted in `p2p_messages` (the program's own).
    pub collective_p2p_messages: u64,
    pub collective_p2p_bytes: u64,
    pub collective_p2p_receives: u64,
    /// Share the knobs did not touch, percent: native collective calls and other communication
    /// calls among those + messages sent under the knobs (the program's and the emulated
    /// collectives') + charged collective calls and one-sided transfers; and the same for bytes
    /// (the charged collectives' wire bytes, the transfers' bytes).
    pub untouched_calls_percent: f64,
    pub untouched_bytes_percent: f64,
    /// Communication calls no knob applies to: the nonblocking and persistent collectives no
    /// charge models (an alltoallv or alltoallw in place, any on an intercommunicator, all
    /// under `--collectives native`) and every large-count (`_c`) collective (their bytes: the
    /// call's send contribution).
    pub other_calls: u64,
    pub other_bytes: u64,
    /// Collectives the library ran and the knobs charged (emulate.md): nonblocking ones started,
    /// persistent ones' MPI_Starts, and over both the messages the ranks' parts send and receive
    /// (o each), the rounds in which they receive (ΔL each), their wire bytes (ΔG each), the
    /// gaps between their sends (Δg each), and the completions held to their due time.
    pub charged_nonblocking_collectives: u64,
    pub charged_persistent_collectives: u64,
    pub charged_collective_sends: u64,
    pub charged_collective_receives: u64,
    pub charged_collective_rounds: u64,
    pub charged_collective_wire_bytes: u64,
    pub charged_collective_gaps: u64,
    pub charged_collective_completions: u64,
    /// One-sided transfers under the knobs (o and g at the origin's call), their bytes (origin
    /// data out plus result data back), the round trips among them (2ΔL), the synchronisations
    /// that completed some of them (held to their due), and request-based ones' completions.
    pub one_sided_transfers: u64,
    pub one_sided_bytes: u64,
    pub one_sided_round_trips: u64,
    pub one_sided_synchronisations: u64,
    pub one_sided_request_completions: u64,
    /// Time the charged collectives' completions and one-sided synchronisations were held, ns.
    pub charged_held_ns: f64,
    /// MPI_Isendrecv(_replace) calls (their halves counted with the point-to-point messages).
    pub isendrecv_calls: u64,
    /// Receives whose sender stamp was missing (L fell back to the completion time).
    pub unstamped_receives: u64,
    /// Irecvs the per-thread table could not track (their completion was not emulated).
    pub untracked_requests: u64,
    /// Time the L delay queue held messages, and the g/G pacing made senders wait, ns.
    pub held_ns: f64,
    pub paced_ns: f64,
    /// L's arrival dating (pmpi's arrival.h): receives the receiver watched arrive (dated at
    /// their completion), receives dated by the typical one-way time of their size class, and
    /// the mean excess of a watched one-way time over the least of its class, ns (how far the
    /// least time would have dated a message too early).
    pub arrivals_watched: u64,
    pub arrivals_estimated: u64,
    pub watched_excess_ns: f64,
}

/// A counter of a rank's `.emu` file and the field of [`Untouched`] it is summed into: a count,
/// or a sum of nanoseconds.
enum Counter {
    Count(fn(&mut Untouched) -> &mut u64),
    Sum(fn(&mut Untouched) -> &mut f64),
}

/// The keys of the ranks' `rank-N.emu` files and the fields they are summed into; a key not
/// here is ignored.
const COUNTERS: [(&str, Counter); 34] = [
    ("p2p_sent", Counter::Count(|u| &mut u.p2p_messages)),
    ("p2p_sent_bytes", Counter::Count(|u| &mut u.p2p_bytes)),
    ("p2p_recv", Counter::Count(|u| &mut u.p2p_receives)),
    ("coll_calls", Counter::Count(|u| &mut u.collective_calls)),
    ("coll_bytes", Counter::Count(|u| &mut u.collective_bytes)),
    (
        "coll_emulated",
        Counter::Count(|u| &mut u.collectives_emulated),
    ),
    (
        "coll_emulated_bytes",
        Counter::Count(|u| &mut u.collectives_emulated_bytes),
    ),
    (
        "coll_p2p_sent",
        Counter::Count(|u| &mut u.collective_p2p_messages),
    ),
    (
        "coll_p2p_sent_bytes",
        Counter::Count(|u| &mut u.collective_p2p_bytes),
    ),
    (
        "coll_p2p_recv",
        Counter::Count(|u| &mut u.collective_p2p_receives),
    ),
    ("unstamped", Counter::Count(|u| &mut u.unstamped_receives)),
    ("untracked", Counter::Count(|u| &mut u.untracked_requests)),
    ("hold_ns", Counter::Sum(|u| &mut u.held_ns)),
    ("pace_ns", Counter::Sum(|u| &mut u.paced_ns)),
    ("dated_watched", Counter::Count(|u| &mut u.arrivals_watched)),
    (
        "dated_estimated",
        Counter::Count(|u| &mut u.arrivals_estimated),
    ),
    (
        "watched_excess_ns",
        Counter::Sum(|u| &mut u.watched_excess_ns),
    ),
    ("other_calls", Counter::Count(|u| &mut u.other_calls)),
    ("other_bytes", Counter::Count(|u| &mut u.other_bytes)),
    (
        "nbc_calls",
        Counter::Count(|u| &mut u.charged_nonblocking_collectives),
    ),
    (
        "pcoll_calls",
        Counter::Count(|u| &mut u.charged_persistent_collectives),
    ),
    (
        "charged_sends",
        Counter::Count(|u| &mut u.charged_collective_sends),
    ),
    (
        "charged_recvs",
        Counter::Count(|u| &mut u.charged_collective_receives),
    ),
    (
        "charged_rounds",
        Counter::Count(|u| &mut u.charged_collective_rounds),
    ),
    (
        "charged_wire_bytes",
        Counter::Count(|u| &mut u.charged_collective_wire_bytes),
    ),
    (
        "charged_gaps",
        Counter::Count(|u| &mut u.charged_collective_gaps),
    ),
    (
        "charged_done",
        Counter::Count(|u| &mut u.charged_collective_completions),
    ),
    ("rma_calls", Counter::Count(|u| &mut u.one_sided_transfers)),
    ("rma_bytes", Counter::Count(|u| &mut u.one_sided_bytes)),
    (
        "rma_round_trips",
        Counter::Count(|u| &mut u.one_sided_round_trips),
    ),
    (
        "rma_syncs",
        Counter::Count(|u| &mut u.one_sided_synchronisations),
    ),
    (
        "rma_requests",
        Counter::Count(|u| &mut u.one_sided_request_completions),
    ),
    ("charged_hold_ns", Counter::Sum(|u| &mut u.charged_held_ns)),
    (
        "isendrecv_calls",
        Counter::Count(|u| &mut u.isendrecv_calls),
    ),
];

impl Untouched {
    fn add(&mut self, key: &str, v: f64) {
        match COUNTERS.iter().find(|(k, _)| *k == key) {
            Some((_, Counter::Count(field))) => *field(self) += v as u64,
            Some((_, Counter::Sum(field))) => *field(self) += v,
            None => {}
        }
    }

    fn finish(&mut self) {
        let pct = |part: u64, other: u64| {
            if part + other == 0 {
                0.0
            } else {
                100.0 * part as f64 / (part + other) as f64
            }
        };
        self.collectives_native = self
            .collective_calls
            .saturating_sub(self.collectives_emulated);
        self.collectives_native_bytes = self
            .collective_bytes
            .saturating_sub(self.collectives_emulated_bytes);
        self.untouched_calls_percent = pct(
            self.collectives_native + self.other_calls,
            self.p2p_messages
                + self.collective_p2p_messages
                + self.charged_nonblocking_collectives
                + self.charged_persistent_collectives
                + self.one_sided_transfers,
        );
        self.untouched_bytes_percent = pct(
            self.collectives_native_bytes + self.other_bytes,
            self.p2p_bytes
                + self.collective_p2p_bytes
                + self.charged_collective_wire_bytes
                + self.one_sided_bytes,
        );
        // Summed over the ranks' watched receives until here.
        if self.arrivals_watched > 0 {
            self.watched_excess_ns /= self.arrivals_watched as f64;
        }
    }

    /// Sums the ranks' `rank-N.emu` files in `dir` (each `key value` per line).
    pub fn read(dir: &Path) -> Result<Untouched, MpiRunError> {
        let mut u = Untouched::default();
        let rd = std::fs::read_dir(dir).map_err(io(format!("reading {}", dir.display())))?;
        for e in rd.flatten() {
            let name = e.file_name();
            let name = name.to_string_lossy();
            if !(name.starts_with("rank-") && name.ends_with(".emu")) {
                continue;
            }
            let text = std::fs::read_to_string(e.path())
                .map_err(io(format!("reading {}", e.path().display())))?;
            u.ranks += 1;
            for line in text.lines() {
                if let Some((k, v)) = line.split_once(' ') {
                    let v: f64 = v.trim().parse().map_err(|err| {
                        MpiRunError::Bad(format!(
                            "{}: bad line {line:?}: {err}",
                            e.path().display()
                        ))
                    })?;
                    u.add(k, v);
                }
            }
        }
        u.finish();
        Ok(u)
    }
}

/// The version of [`RunOutcome`]'s JSON.
pub const RUN_SCHEMA_VERSION: u32 = commperf_formats::version::EMULATED_RUN;

/// One emulated run: what a sweep needs per setting.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct RunOutcome {
    /// 3: `engaged`. 2: `collectives` and the emulated/native collective counts in `untouched`
    /// (1, unnumbered: every collective native, `collective_calls` all untouched).
    pub schema_version: u32,
    /// The knobs in ns (G in ns per byte).
    pub o_ns: f64,
    pub g_ns: f64,
    #[serde(rename = "G_ns_per_byte")]
    pub gap_per_byte_ns: f64,
    #[serde(rename = "L_ns")]
    pub l_ns: f64,
    /// Wall time of the whole command (launch included), seconds.
    pub wall_s: f64,
    /// The command's exit code (None: killed by a signal).
    pub exit_code: Option<i32>,
    pub success: bool,
    /// How collectives ran: `p2p` (as messages under the knobs) or `native`.
    pub collectives: Collectives,
    /// The whole apparatus ran whatever the knobs (`--engaged`).
    pub engaged: bool,
    /// None when every knob is zero and the emulator was not engaged (the interposer then
    /// passes every call straight through).
    pub untouched: Option<Untouched>,
}

/// The `COMMPERF_EMULATE` value: every knob, in ns (G in ns per byte), exact to the ns.
pub fn env_value(k: &Knobs) -> String {
    format!(
        "o={}ns,g={}ns,G={}ns,L={}ns",
        k.o_ns, k.g_ns, k.gap_per_byte_ns, k.l_ns
    )
}

/// The child a SIGINT or SIGTERM sent to this process is passed on to (0: none).
static CHILD: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

/// The last signal passed on (0: none): a run it ended is a failure even when the launcher
/// exits 0 after passing it to its ranks (MPICH's Hydra sometimes does).
static FORWARDED: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

extern "C" fn forward(sig: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    FORWARDED.store(sig, std::sync::atomic::Ordering::Relaxed);
    // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler.
    let from_terminal = !info.is_null() && unsafe { (*info).si_code } == libc::SI_KERNEL;
    let pid = CHILD.load(std::sync::atomic::Ordering::Relaxed);
    if pid > 0 && !from_terminal {
        // SAFETY: kill is async-signal-safe; pid is our own child, not yet reaped.
        unsafe { libc::kill(pid, sig) };
    }
}

/// While alive, SIGINT and SIGTERM go to the launched command instead of ending this process:
/// mpirun then stops its ranks, and this process still removes the run directory (the L side
/// band) and reports. A handler, not SIG_IGN, so the command starts with the default action.
/// A signal the terminal generated (Ctrl-C: `si_code` SI_KERNEL) reached the whole foreground
/// process group, the command included, and is not passed on: Open MPI's mpirun takes a
/// second SIGINT as "terminate at once", leaving ranks and shared memory behind. One sent to
/// this process alone (`kill PID`, a sweep passing on its interrupt, a parent's death) is.
struct Forward {
    old: [libc::sigaction; 2],
}

impl Forward {
    fn to(pid: u32) -> Forward {
        CHILD.store(pid as i32, std::sync::atomic::Ordering::Relaxed);
        let h = forward as extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void);
        // SAFETY: installing a handler that only stores an atomic and calls the
        // async-signal-safe kill; the sigaction structs are plain data, zeroed then filled.
        unsafe {
            let mut act: libc::sigaction = std::mem::zeroed();
            act.sa_sigaction = h as libc::sighandler_t;
            act.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
            libc::sigemptyset(&mut act.sa_mask);
            let mut old: [libc::sigaction; 2] = std::mem::zeroed();
            libc::sigaction(libc::SIGINT, &act, &mut old[0]);
            libc::sigaction(libc::SIGTERM, &act, &mut old[1]);
            Forward { old }
        }
    }
}

impl Drop for Forward {
    fn drop(&mut self) {
        CHILD.store(0, std::sync::atomic::Ordering::Relaxed);
        // SAFETY: restoring the actions that were there before.
        unsafe {
            libc::sigaction(libc::SIGINT, &self.old[0], std::ptr::null_mut());
            libc::sigaction(libc::SIGTERM, &self.old[1], std::ptr::null_mut());
        }
    }
}

/// How [`run_emulated`] runs the command, beside the knobs.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// `openmpi` / `mpich`: the interposer, instead of the one matching the command's program.
    pub interposer: Option<String>,
    /// Send the program's stdout to this process's stderr (keeps our stdout for JSON).
    pub program_stdout_to_stderr: bool,
    /// Record the run into this directory as well (the interposer's monitoring).
    pub monitor_dir: Option<PathBuf>,
    /// Collectives as messages under the knobs (the default) or left to the library.
    pub collectives: Collectives,
    /// Run the whole apparatus whatever the knobs (`COMMPERF_EMULATE_ENGAGE=1`).
    pub engaged: bool,
}

/// Runs `command` (an MPI launch or a singleton MPI program) under the interposer with `knobs`,
/// and reports its wall time, exit status and what the knobs did not touch. A failing program
/// is an outcome (`success: false`), not an error; errors are what prevents running it (bad
/// knobs, no interposer, no such command). Nothing is left behind: the run directory (the
/// interposer, the L side band, the per-rank counts) is removed.
pub fn run_emulated(
    knobs: &Knobs,
    command: &[String],
    opts: &RunOptions,
) -> Result<RunOutcome, MpiRunError> {
    knobs.validate()?;
    if command.is_empty() {
        return Err(MpiRunError::NoCommand);
    }
    let plan = commperf_launch::preload::plan(command, opts.interposer.as_deref())?;
    let mut dir = RunDir::new(Kind::Emulate)?;
    let preload = plan.preload()?;
    let mut vars = vec![
        ("LD_PRELOAD".to_string(), preload),
        ("COMMPERF_EMULATE".to_string(), env_value(knobs)),
        (
            "COMMPERF_EMULATE_DIR".to_string(),
            dir.path().display().to_string(),
        ),
        (
            "COMMPERF_EMULATE_COLL".to_string(),
            opts.collectives.env_value().to_string(),
        ),
    ];
    if opts.engaged {
        vars.push(("COMMPERF_EMULATE_ENGAGE".into(), "1".into()));
    }
    // Kept while the program runs; removed after it if it recorded nothing.
    let monitor_dir = match &opts.monitor_dir {
        Some(m) => {
            let d = OutDir::create("--monitor", m)?;
            commperf_pmpi::clear_rank_files(d.path())
                .map_err(io(format!("--monitor {}", d.path().display())))?;
            Some(d)
        }
        None => None,
    };
    if let Some(m) = &monitor_dir {
        vars.push(("COMMPERF_PMPI_DIR".into(), m.path().display().to_string()));
    }
    let mut cmd = plan.command(command, &vars);
    if opts.program_stdout_to_stderr {
        cmd.stdout(std::io::stderr());
    }
    let t0 = Instant::now();
    let mut child = cmd
        .spawn()
        .map_err(io(format!("cannot run {}", command[0])))?;
    dir.launched(child.id());
    FORWARDED.store(0, std::sync::atomic::Ordering::Relaxed);
    let status = {
        let _fwd = Forward::to(child.id());
        child
            .wait()
            .map_err(io(format!("waiting for {}", command[0])))?
    };
    let signalled = FORWARDED.swap(0, std::sync::atomic::Ordering::Relaxed);
    let wall = t0.elapsed();
    let untouched = if knobs.is_zero() && !opts.engaged {
        None
    } else {
        Some(Untouched::read(dir.path())?)
    };
    Ok(RunOutcome {
        schema_version: RUN_SCHEMA_VERSION,
        o_ns: knobs.o_ns,
        g_ns: knobs.g_ns,
        gap_per_byte_ns: knobs.gap_per_byte_ns,
        l_ns: knobs.l_ns,
        wall_s: wall.as_secs_f64(),
        // Ended by a signal we passed on: the shell's convention, 128 + the signal.
        exit_code: if signalled != 0 && status.success() {
            Some(128 + signalled)
        } else {
            status.code()
        },
        success: status.success() && signalled == 0,
        collectives: opts.collectives,
        engaged: opts.engaged,
        untouched,
    })
}

impl RunOutcome {
    /// What the run did, in lines for stderr: the knobs, the wall time and exit, and what the
    /// knobs touched and did not.
    pub fn describe(&self) -> String {
        describe(self)
    }
}

fn describe(r: &RunOutcome) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let _ = write!(
        o,
        "commperf: emulated o=+{} ns g=+{} ns G=+{} ns/B L=+{} ns: wall time {:.3} s, ",
        r.o_ns, r.g_ns, r.gap_per_byte_ns, r.l_ns, r.wall_s
    );
    let _ = match r.exit_code {
        Some(c) => write!(o, "exit status {c}"),
        None => write!(o, "killed by a signal"),
    };
    match &r.untouched {
        None => o.push_str("\ncommperf: every knob is zero: the program ran untouched"),
        Some(u) if u.ranks == 0 => o.push_str(
            "\ncommperf: no rank reached MPI_Finalize with the knobs set: what they touched is unknown",
        ),
        Some(u) => {
            if r.engaged {
                o.push_str("\ncommperf: the emulator engaged (--engaged): collectives as messages, L's side band");
            }
            let _ = write!(
                o,
                "\ncommperf: knobs applied to {} point-to-point messages ({} B) on {} rank(s), \
                 and to {} collective calls run as {} messages ({} B); \
                 not touched: {} collective calls ({} B) and {} other communication calls \
                 (collectives no charge models: large-count forms, in place alltoallv/w: \
                 {} B) = {:.1} % of calls, {:.1} % of bytes",
                u.p2p_messages,
                u.p2p_bytes,
                u.ranks,
                u.collectives_emulated,
                u.collective_p2p_messages,
                u.collective_p2p_bytes,
                u.collectives_native,
                u.collectives_native_bytes,
                u.other_calls,
                u.other_bytes,
                u.untouched_calls_percent,
                u.untouched_bytes_percent
            );
            if u.charged_nonblocking_collectives
                + u.charged_persistent_collectives
                + u.one_sided_transfers
                > 0
            {
                let _ = write!(
                    o,
                    "\ncommperf: charged as the library ran them: {} nonblocking and {} persistent \
                     collective calls ({} sends, {} receives, {} rounds, {} B on the wire), \
                     {} one-sided transfers ({} B, {} round trips) completed at {} \
                     synchronisations and {} request completions; held {:.0} ns",
                    u.charged_nonblocking_collectives,
                    u.charged_persistent_collectives,
                    u.charged_collective_sends,
                    u.charged_collective_receives,
                    u.charged_collective_rounds,
                    u.charged_collective_wire_bytes,
                    u.one_sided_transfers,
                    u.one_sided_bytes,
                    u.one_sided_round_trips,
                    u.one_sided_synchronisations,
                    u.one_sided_request_completions,
                    u.charged_held_ns
                );
            }
            if u.unstamped_receives > 0 || u.untracked_requests > 0 {
                let _ = write!(
                    o,
                    "\ncommperf: {} receive(s) without their sender's stamp (L from the completion \
                     time), {} Irecv(s) not tracked",
                    u.unstamped_receives, u.untracked_requests
                );
            }
            if u.arrivals_watched + u.arrivals_estimated > 0 {
                let _ = write!(
                    o,
                    "\ncommperf: L's arrivals: {} watched (dated at completion), {} dated by the \
                     typical one-way time of their size class; the watched ones took {:.0} ns \
                     over their class's least on average",
                    u.arrivals_watched, u.arrivals_estimated, u.watched_excess_ns
                );
            }
        }
    }
    o
}

/// The LogGP parameters one `bench loggp -t mpi` run fitted (ns; G in ns per byte).
#[derive(Debug, Clone, Copy, Default, Serialize, schemars::JsonSchema)]
pub struct MpiParams {
    pub o_s_ns: Option<f64>,
    pub o_r_ns: Option<f64>,
    pub g_ns: Option<f64>,
    #[serde(rename = "G_ns_per_byte")]
    pub gap_per_byte_ns: Option<f64>,
    #[serde(rename = "L_ns")]
    pub l_ns: Option<f64>,
}

/// The parameters in calibration order, with the knob that owns each.
const PARAMS: [(&str, Knob); 5] = [
    ("o_s", Knob::O),
    ("o_r", Knob::O),
    ("g", Knob::LowerG),
    ("G", Knob::UpperG),
    ("L", Knob::L),
];

impl MpiParams {
    pub fn get(&self, i: usize) -> Option<f64> {
        [
            self.o_s_ns,
            self.o_r_ns,
            self.g_ns,
            self.gap_per_byte_ns,
            self.l_ns,
        ][i]
    }

    /// Reads the piece `bench loggp` fitted from its JSON results (µs in the file).
    pub fn from_bench_json(text: &str) -> Result<MpiParams, MpiRunError> {
        let mut v: serde_json::Value = serde_json::from_str(text)
            .map_err(|e| MpiRunError::Bad(format!("bench loggp JSON: {e}")))?;
        // A result file's version by the one rule (version 1's loggp L_us meant something
        // else); a document without one is judged by its rows alone.
        if v.get("schema_version").is_some() {
            commperf_formats::upgrade(commperf_formats::Kind::Result, &mut v)
                .map_err(|e| MpiRunError::Bad(format!("bench loggp JSON: {e}")))?;
        }
        let row = v["results"]
            .as_array()
            .and_then(|r| r.iter().find(|r| r["benchmark"] == "loggp"))
            .ok_or_else(|| MpiRunError::Bad("bench loggp wrote no loggp result".into()))?;
        let us = |k: &str| row[k].as_f64().map(|x| x * 1e3);
        Ok(MpiParams {
            o_s_ns: us("o_s_fixed_us"),
            o_r_ns: us("o_r_fixed_us"),
            g_ns: us("g_us"),
            gap_per_byte_ns: us("G_us_per_byte"),
            l_ns: us("L_us"),
        })
    }

    pub fn mean(a: &MpiParams, b: &MpiParams) -> MpiParams {
        let m = |x: Option<f64>, y: Option<f64>| match (x, y) {
            (Some(x), Some(y)) => Some((x + y) / 2.0),
            (x, y) => x.or(y),
        };
        MpiParams {
            o_s_ns: m(a.o_s_ns, b.o_s_ns),
            o_r_ns: m(a.o_r_ns, b.o_r_ns),
            g_ns: m(a.g_ns, b.g_ns),
            gap_per_byte_ns: m(a.gap_per_byte_ns, b.gap_per_byte_ns),
            l_ns: m(a.l_ns, b.l_ns),
        }
    }
}

/// One knob setting at the MPI layer, against the mean of the baselines around its knob.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct MpiRow {
    pub knob: String,
    /// ns, or ns per byte for G.
    pub set: f64,
    pub measured: MpiParams,
    /// Per parameter (o_s, o_r, g, G, L): measured − baseline, and whether within the criterion.
    pub delta: Vec<Option<f64>>,
    pub within: Vec<Option<bool>>,
    pub pass: bool,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct MpiCalibration {
    pub kind: &'static str,
    pub command: String,
    pub sizes: String,
    pub iterations: u64,
    pub baselines: Vec<MpiParams>,
    pub rows: Vec<MpiRow>,
}

/// Martin's (1999) two criteria, as `emulate calibrate` applies them on the transports: the own
/// parameter moves by the set value ± 5 % (or ± 50 ns; for G, 50 ns over the largest message),
/// every other by less than 5 % of its baseline (or 50 ns).
pub fn judge_mpi(k: Knob, set: f64, base: &MpiParams, got: &MpiParams, max_size: f64) -> MpiRow {
    let mut delta = Vec::new();
    let mut within = Vec::new();
    for (i, (name, owner)) in PARAMS.iter().enumerate() {
        let floor = if *name == "G" { 50.0 / max_size } else { 50.0 };
        let own = *owner == k;
        let want = if own { set } else { 0.0 };
        let b = base.get(i);
        let tol = if own {
            (0.05 * set).max(floor)
        } else {
            (0.05 * b.unwrap_or(0.0).abs()).max(floor)
        };
        let d = b.zip(got.get(i)).map(|(b, m)| m - b);
        delta.push(d);
        within.push(d.map(|d| (d - want).abs() <= tol));
    }
    let pass = PARAMS.iter().zip(&within).all(|((_, owner), w)| {
        if *owner == k {
            *w == Some(true)
        } else {
            *w != Some(false)
        }
    });
    MpiRow {
        knob: k.to_string(),
        set,
        measured: *got,
        delta,
        within,
        pass,
    }
}

pub fn render_mpi(c: &MpiCalibration) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "# commperf emulate calibrate -t mpi: `{}`, sizes {}, {} repetitions per PRTT figure",
        c.command, c.sizes, c.iterations
    );
    let _ = writeln!(o, "# own: moves by the set value ±5 % or ±50 ns; others: < 5 % (or 50 ns); drift against knobs-at-zero measured before and after each knob");
    let _ = writeln!(
        o,
        "{:<4} {:>10}  {:<32} {:<60} verdict",
        "knob", "set", "own Δ", "others' drift"
    );
    let fmt = |name: &str, d: Option<f64>| match d {
        None => format!("{name} -"),
        Some(x) if name == "G" => format!("{name} {x:+.4}ns/B"),
        Some(x) => format!("{name} {x:+.0}ns"),
    };
    for r in &c.rows {
        let base = |i: usize| {
            // The baseline is measured − delta.
            r.measured.get(i).zip(r.delta[i]).map(|(m, d)| m - d)
        };
        let mut own = Vec::new();
        let mut others = Vec::new();
        for (i, (name, owner)) in PARAMS.iter().enumerate() {
            let mut cell = fmt(name, r.delta[i]);
            if owner.to_string() == r.knob {
                own.push(cell);
            } else {
                if let (Some(b), Some(d)) = (base(i), r.delta[i]) {
                    if b.abs() > 0.0 {
                        let _ = write!(cell, " ({:+.0}%)", d / b * 100.0);
                    }
                }
                if r.within[i] == Some(false) {
                    cell.push('!');
                }
                others.push(cell);
            }
        }
        let set = if r.knob == "G" {
            format!("{} ns/B", r.set)
        } else {
            format!("{} µs", r.set / 1e3)
        };
        let _ = writeln!(
            o,
            "{:<4} {:>10}  {:<32} {:<60} {}",
            r.knob,
            set,
            own.join(", "),
            others.join(" "),
            if r.pass { "pass" } else { "FAIL" }
        );
    }
    for (i, b) in c.baselines.iter().enumerate() {
        let v = |x: Option<f64>| x.map_or("-".to_string(), |x| format!("{x:.0}ns"));
        let _ = writeln!(
            o,
            "# baseline {i}: o_s {} o_r {} g {} G {} L {}",
            v(b.o_s_ns),
            v(b.o_r_ns),
            v(b.g_ns),
            b.gap_per_byte_ns
                .map_or("-".to_string(), |x| format!("{x:.4}ns/B")),
            v(b.l_ns)
        );
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_value_carries_every_knob_in_ns() {
        let k = Knobs {
            o_ns: 5000.0,
            g_ns: 0.0,
            gap_per_byte_ns: 0.5,
            l_ns: 20000.0,
        };
        assert_eq!(env_value(&k), "o=5000ns,g=0ns,G=0.5ns,L=20000ns");
    }

    #[test]
    fn the_bench_json_gives_the_piece_in_ns() {
        let text = r#"{"results": [{"benchmark": "loggp", "o_s_fixed_us": 0.03,
            "o_r_fixed_us": 0.125, "g_us": 0.5, "G_us_per_byte": 0.0001, "L_us": null}]}"#;
        let p = MpiParams::from_bench_json(text).unwrap();
        assert_eq!(p.o_s_ns, Some(30.0));
        assert_eq!(p.o_r_ns, Some(125.0));
        assert_eq!(p.g_ns, Some(500.0));
        assert!((p.gap_per_byte_ns.unwrap() - 0.1).abs() < 1e-12);
        assert_eq!(p.l_ns, None);
        assert!(MpiParams::from_bench_json(r#"{"results": []}"#).is_err());
    }

    #[test]
    fn a_version_1_result_file_is_refused_for_its_loggp_l() {
        let row = r#"[{"benchmark": "loggp", "o_s_fixed_us": 0.03, "L_us": -0.2}]"#;
        let v1 = format!(r#"{{"schema_version": 1, "results": {row}}}"#);
        let e = MpiParams::from_bench_json(&v1).unwrap_err().to_string();
        assert!(
            e.contains("bench loggp JSON: result file: schema_version 1 is not read"),
            "{e}"
        );
        let v3 = format!(r#"{{"schema_version": 3, "results": {row}}}"#);
        let e = MpiParams::from_bench_json(&v3).unwrap_err().to_string();
        assert!(
            e.ends_with("schema_version 3, this commperf reads 1 to 2"),
            "{e}"
        );
        let v2 = format!(r#"{{"schema_version": 2, "results": {row}}}"#);
        let p = MpiParams::from_bench_json(&v2).unwrap();
        assert_eq!((p.o_s_ns, p.l_ns), (Some(30.0), Some(-200.0)));
    }

    #[test]
    fn a_setting_is_judged_by_seed_001s_criteria() {
        let base = MpiParams {
            o_s_ns: Some(100.0),
            o_r_ns: Some(100.0),
            g_ns: Some(2000.0),
            gap_per_byte_ns: Some(0.1),
            l_ns: Some(200.0),
        };
        // L by +5000 ± 250 ns; g moved 90 ns: within 5 % of 2000 (100 ns).
        let got = MpiParams {
            l_ns: Some(5150.0),
            g_ns: Some(2090.0),
            ..base
        };
        let r = judge_mpi(Knob::L, 5000.0, &base, &got, 16384.0);
        assert!(r.pass, "{r:?}");
        assert_eq!(r.delta[4], Some(4950.0));
        // o_s moved 60 ns: beyond the 50 ns floor (5 % of 100 ns is less).
        let got = MpiParams {
            o_s_ns: Some(160.0),
            ..got
        };
        let r = judge_mpi(Knob::L, 5000.0, &base, &got, 16384.0);
        assert!(!r.pass);
        assert_eq!(r.within[0], Some(false));
        // An own parameter short by 6 %: fails.
        let got = MpiParams {
            l_ns: Some(200.0 + 4700.0),
            ..base
        };
        assert!(!judge_mpi(Knob::L, 5000.0, &base, &got, 16384.0).pass);
    }

    #[test]
    fn counts_are_summed_and_shares_computed() {
        let d = RunDir::unguarded().unwrap();
        std::fs::write(
            d.path().join("rank-0.emu"),
            "p2p_sent 30\np2p_sent_bytes 3000\ncoll_calls 10\ncoll_bytes 1000\nhold_ns 5\n\
             dated_watched 30\ndated_estimated 10\nwatched_excess_ns 600\n",
        )
        .unwrap();
        std::fs::write(
            d.path().join("rank-1.emu"),
            "p2p_sent 30\np2p_sent_bytes 3000\ncoll_calls 20\ncoll_bytes 3000\nhold_ns 7\n\
             dated_watched 10\ndated_estimated 5\nwatched_excess_ns 1400\n",
        )
        .unwrap();
        let u = Untouched::read(d.path()).unwrap();
        assert_eq!(u.ranks, 2);
        assert_eq!(u.p2p_messages, 60);
        assert_eq!(u.collective_calls, 30);
        assert_eq!(u.held_ns, 12.0);
        assert_eq!((u.arrivals_watched, u.arrivals_estimated), (40, 15));
        // 2000 ns of excess over 40 watched receives.
        assert_eq!(u.watched_excess_ns, 50.0);
        // 30 of 90 calls, 4000 of 10000 bytes.
        assert!((u.untouched_calls_percent - 100.0 / 3.0).abs() < 1e-9);
        assert!((u.untouched_bytes_percent - 40.0).abs() < 1e-9);
    }

    #[test]
    fn emulated_collectives_are_touched_and_their_messages_counted_apart() {
        let d = RunDir::unguarded().unwrap();
        std::fs::write(
            d.path().join("rank-0.emu"),
            "p2p_sent 10\np2p_sent_bytes 1000\ncoll_calls 8\ncoll_bytes 800\n\
             coll_emulated 6\ncoll_emulated_bytes 700\ncoll_p2p_sent 20\n\
             coll_p2p_sent_bytes 1900\ncoll_p2p_recv 19\n",
        )
        .unwrap();
        let u = Untouched::read(d.path()).unwrap();
        assert_eq!(u.p2p_messages, 10);
        assert_eq!(u.collective_calls, 8);
        assert_eq!(u.collectives_emulated, 6);
        assert_eq!(u.collectives_native, 2);
        assert_eq!(u.collectives_native_bytes, 100);
        assert_eq!(u.collective_p2p_messages, 20);
        assert_eq!(u.collective_p2p_receives, 19);
        // 2 native calls beside 30 messages under the knobs; 100 B beside 2900 B.
        assert!((u.untouched_calls_percent - 100.0 * 2.0 / 32.0).abs() < 1e-9);
        assert!((u.untouched_bytes_percent - 100.0 * 100.0 / 3000.0).abs() < 1e-9);
    }

    #[test]
    fn charged_calls_are_touched_and_the_rest_counted_as_other() {
        let d = RunDir::unguarded().unwrap();
        std::fs::write(
            d.path().join("rank-0.emu"),
            "p2p_sent 4\np2p_sent_bytes 400\nother_calls 2\nother_bytes 100\n\
             nbc_calls 3\npcoll_calls 1\ncharged_sends 6\ncharged_recvs 5\ncharged_rounds 4\n\
             charged_wire_bytes 300\ncharged_gaps 2\ncharged_done 4\nrma_calls 2\n\
             rma_bytes 200\nrma_round_trips 1\nrma_syncs 2\nrma_requests 1\n\
             charged_hold_ns 1500\nisendrecv_calls 2\n",
        )
        .unwrap();
        let u = Untouched::read(d.path()).unwrap();
        assert_eq!(
            (
                u.charged_nonblocking_collectives,
                u.charged_persistent_collectives,
                u.charged_collective_sends,
                u.charged_collective_receives,
                u.charged_collective_rounds,
                u.charged_collective_wire_bytes,
                u.charged_collective_gaps,
                u.charged_collective_completions
            ),
            (3, 1, 6, 5, 4, 300, 2, 4)
        );
        assert_eq!(
            (
                u.one_sided_transfers,
                u.one_sided_bytes,
                u.one_sided_round_trips,
                u.one_sided_synchronisations,
                u.one_sided_request_completions
            ),
            (2, 200, 1, 2, 1)
        );
        assert_eq!((u.charged_held_ns, u.isendrecv_calls), (1500.0, 2));
        // 2 other calls beside 4 messages, 4 charged collective calls and 2 transfers; 100 B
        // beside 400 + 300 + 200 B.
        assert!((u.untouched_calls_percent - 100.0 * 2.0 / 12.0).abs() < 1e-9);
        assert!((u.untouched_bytes_percent - 10.0).abs() < 1e-9);
    }
}
