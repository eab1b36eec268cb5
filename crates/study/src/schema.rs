//! The study's file schema: what `commperf app --json` and `-o DIR`'s `study.json` hold, the loop's
//! section (`--loop`) and the sensitivity sweeps (`--sweep`), with their version. The field order
//! is the files' order: change it and every kept study changes bytes.

use crate::verdict;
use commperf_emulate::sweep::SweepResult;
use commperf_pmpi::Summary;
use commperf_stats::spearman;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Version of [`Study`] (`study.json`, `--json`).
/// 2: the `loop` section (`--loop`); version 1 files (no loop) are still read.
pub const STUDY_SCHEMA_VERSION: u32 = commperf_formats::version::STUDY;
/// The `schema` of [`Study`].
pub const STUDY_SCHEMA: &str = "commperf-app-study";

/// A study's result: `study.json` and `--json`.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Study {
    pub schema: String,
    pub schema_version: u32,
    pub np: u32,
    pub repeat: u32,
    pub programs: Vec<String>,
    pub stacks: Vec<String>,
    /// Wall time of the whole study (runs, compiles and micro-benchmarks).
    pub wall_time_s: f64,
    /// Set when the ranks outnumber the CPUs (what that does to the stacks).
    pub oversubscribed: Option<String>,
    /// One per program and stack, programs first.
    pub cells: Vec<Cell>,
    /// One per stack: its micro-benchmark figures at the programs' dominant sizes.
    pub benches: Vec<StackBench>,
    /// One per program: which figure orders the stacks as the program's times do.
    pub explanations: Vec<Explanation>,
    /// The loop (`--loop`): predictions and emulations against the measured runs; null
    /// without `--loop` and absent from version 1 files.
    #[serde(default, rename = "loop")]
    pub loop_study: Option<Loop>,
    /// One per program with `--sweep`: its sensitivity to each knob on one stack.
    #[serde(default)]
    pub sensitivity: Vec<Sensitivity>,
    /// What disturbed the study, when something did (another commperf measurement at the same
    /// time, CPU contention: [`commperf_core::disturbance`]); absent when nothing did and in
    /// files from before it was looked for.
    #[serde(default, skip_serializing_if = "commperf_core::Disturbance::is_empty")]
    pub disturbance: commperf_core::Disturbance,
}

#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Cell {
    pub program: String,
    pub stack: String,
    /// The failure of the first run that failed (build, launch, a failure pattern, a missing
    /// success or time pattern, exit status, signal, timeout).
    pub error: Option<String>,
    /// That failure's reasons, typed, where the program's verdict gave it (empty for a build,
    /// launch or timeout): which pattern matched on which line, the exit status or signal.
    #[serde(default)]
    pub failures: Vec<verdict::Failure>,
    /// Completion time: median over the runs of the program's own time (found by its time
    /// pattern: the kit's `time X s`, NAS's `Time in seconds =`, hpcc's `HPL_time=`, LAMMPS's
    /// `Loop time of`, `--time-pattern`), else, for a program without one, of the launch's wall
    /// time.
    pub time_s: Option<f64>,
    /// What `time_s` is: `program` (its own report) or `wall` (the whole launch).
    pub time_source: Option<String>,
    /// The pattern that found the program's time, with its origin: "`…` (NAS)"; null for the
    /// wall time.
    #[serde(default)]
    pub time_pattern: Option<String>,
    /// Every run's completion time, in run order.
    pub times_s: Vec<f64>,
    /// Median wall time of the whole launch (mpirun start-up included).
    pub wall_s: Option<f64>,
    /// The first run's message profile, from the monitor: a kit program's timed loop, another
    /// program's whole run ([`Profile::from_barrier`]).
    pub profile: Option<Profile>,
    /// The stack's micro-benchmark figures at the program's dominant message size.
    pub micro: Option<Micro>,
    /// The runs' monitor directories (kept under `-o DIR`).
    pub monitor_dirs: Vec<PathBuf>,
    /// What to know about a run that succeeded (a launch stopped after the ranks finished).
    pub notes: Vec<String>,
    /// Per run that succeeded, as `times_s`: the machine's state over it (a cache line's
    /// one-way trip between the ranks' CPUs, ns; null where it changed during the run or could
    /// not be probed). Absent from files written before it was kept.
    #[serde(default)]
    pub run_states_ns: Vec<Option<f64>>,
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Profile {
    pub mpi_library: String,
    /// Matched point-to-point messages, all ranks.
    pub messages: u64,
    pub bytes: u64,
    /// Messages each rank sent (index: rank).
    pub sent_per_rank: Vec<u64>,
    /// Collective calls each rank made (index: rank).
    pub collectives_per_rank: Vec<u64>,
    /// Messages per size bin (bin: largest size in it, powers of two), ascending.
    pub bins: Vec<Bin>,
    /// The bin with the most messages, and its mean message size (what the micro-benchmarks
    /// measure).
    pub dominant_bin_bytes: Option<u64>,
    pub dominant_mean_bytes: Option<u64>,
    /// Share of the messages in the dominant bin.
    pub dominant_share: f64,
    /// Whether the profile is of the timed loop only, from the end of each rank's last
    /// MPI_Barrier (a kit program: its warm-up and set-up left out); false: the whole run.
    #[serde(default)]
    pub from_barrier: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Bin {
    pub size_bin_bytes: u64,
    pub count: u64,
    pub bytes: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Micro {
    pub size_bytes: u64,
    /// One-way latency, median (`bench latency --transport mpi`).
    pub latency_us: f64,
    /// Streaming bandwidth (`bench bw --transport mpi`, window 64), MB = 1e6 bytes.
    pub bandwidth_mb_per_s: f64,
    /// Gap per message in the stream: 1 / message rate.
    pub gap_us: f64,
}

#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StackBench {
    pub stack: String,
    pub error: Option<String>,
    /// Something to know about the figures (a launch stopped after its results).
    pub note: Option<String>,
    /// The bench's result file (under `-o DIR`).
    pub file: Option<PathBuf>,
    pub figures: Vec<Micro>,
}

#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Explanation {
    pub program: String,
    /// Stacks with both a completion time and figures.
    pub stacks_compared: usize,
    /// The figure with the highest rank correlation (`latency`, `bandwidth`), if any.
    pub figure: Option<String>,
    pub spearman: Option<f64>,
    /// Each figure's Spearman rank correlation between its cost (latency; 1/bandwidth) and the
    /// completion times (None: fewer than two stacks, or ties everywhere).
    pub latency_spearman: Option<f64>,
    pub bandwidth_spearman: Option<f64>,
    /// Why there is no figure.
    pub note: Option<String>,
}

/// The loop's section of the study (`loop` in study.json).
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Loop {
    /// The stack every program's trace is taken on and every emulation runs on.
    pub reference: Option<String>,
    /// How the reference was chosen, in words (with the figures).
    pub reference_rule: String,
    /// The sizes and repetitions of each stack's `bench loggp --transport mpi`.
    pub loggp_sizes: String,
    pub loggp_iters: u64,
    pub eager_threshold_bytes: u64,
    pub stacks: Vec<LoopStack>,
    /// One per program and stack, programs first.
    pub cells: Vec<LoopCell>,
    /// Predictions of the total time with |error| ≤ 10 %, of those made.
    pub predictions_within_10_percent: usize,
    pub predictions: usize,
    /// Emulations with |error| ≤ 10 % (the emulated total against the real stack's), of those
    /// run.
    pub emulations_within_10_percent: usize,
    pub emulations: usize,
    /// The machine's usual state over the study: the median of every run's and bench's state
    /// (a cache line's one-way trip between the ranks' CPUs, ns; [`commperf_emulate::state`]). None
    /// without a probe, and in files written before it was kept.
    #[serde(default)]
    pub usual_state_ns: Option<f64>,
    /// The same counts over the cells none of whose figures came from another state
    /// ([`LoopCell::other_state`]).
    #[serde(default)]
    pub predictions_within_10_percent_usual: usize,
    #[serde(default)]
    pub predictions_usual: usize,
    #[serde(default)]
    pub emulations_within_10_percent_usual: usize,
    #[serde(default)]
    pub emulations_usual: usize,
    /// The same counts on the communication time (time inside MPI calls in the window): where
    /// the network shows, since computation dominates most totals.
    #[serde(default)]
    pub comm_predictions_within_10_percent: usize,
    #[serde(default)]
    pub comm_predictions: usize,
    #[serde(default)]
    pub comm_emulations_within_10_percent: usize,
    #[serde(default)]
    pub comm_emulations: usize,
    #[serde(default)]
    pub comm_predictions_within_10_percent_usual: usize,
    #[serde(default)]
    pub comm_predictions_usual: usize,
    #[serde(default)]
    pub comm_emulations_within_10_percent_usual: usize,
    #[serde(default)]
    pub comm_emulations_usual: usize,
}

/// A stack's LogGP parameters at the MPI layer.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LoopStack {
    pub stack: String,
    /// Why there are no parameters (no commperf linking its MPI, the bench failed …).
    pub error: Option<String>,
    /// What to know about the bench's figures (its own notes on the piece used).
    pub notes: Vec<String>,
    /// The bench's result file (under `-o DIR`).
    pub file: Option<PathBuf>,
    /// The first piece (the smallest messages): what the reference is chosen by; a program's
    /// replay and knobs take the piece of `pieces` covering its messages.
    pub params: Option<Params>,
    /// Every piece the bench fitted, smallest messages first: a program's replay takes the one
    /// covering its median message.
    #[serde(default)]
    pub pieces: Vec<Params>,
    /// The geometric mean of the bench's one-way times over its sizes (µs): what the rounds
    /// are told apart by.
    #[serde(default)]
    pub ladder_us: Option<f64>,
    /// The machine's state over the bench (as [`Cell`]'s runs').
    #[serde(default)]
    pub state_ns: Option<f64>,
}

/// LogGOPS parameters of the first protocol piece `bench loggp` fitted (the smallest messages),
/// in ns (per byte for G and O).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[allow(non_snake_case)]
pub struct Params {
    pub L_ns: f64,
    pub o_s_ns: f64,
    pub o_r_ns: f64,
    pub g_ns: f64,
    pub G_ns_per_byte: f64,
    /// Mean of the send and receive per-byte overheads (the model has one O).
    pub O_ns_per_byte: f64,
    /// The piece these come from, bytes.
    pub piece_from_bytes: Option<u64>,
    pub piece_to_bytes: Option<u64>,
    /// o_s + L + o_r: what the reference is chosen by.
    pub small_message_ns: f64,
    /// How far the one-way time falls below o_s + L + o_r, and an exchange below o_s + o_r or
    /// above it (`commperf_predict::engine::Overlap`); 0 in studies written before they were
    /// measured.
    #[serde(default)]
    pub overlap_ns: f64,
    #[serde(default)]
    pub send_wait_ns: f64,
    #[serde(default)]
    pub duplex_ns: f64,
}

/// One program on one stack: measured, predicted from the reference's trace, emulated on the
/// reference.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LoopCell {
    pub program: String,
    pub stack: String,
    /// Why there is no prediction (the run failed, no parameters, the trace is incomplete …).
    pub error: Option<String>,
    /// Where the compared window starts: `barrier` (the end of each rank's last MPI_Barrier,
    /// where the kit starts timing) or `init` (the whole run: a rank calls no barrier).
    pub window_from: Option<String>,
    /// The window (to the end of the last MPI call), longest rank, median over the runs (s).
    pub measured_total_s: Option<f64>,
    /// Time inside MPI calls in the window (window − compute between the calls), mean over the
    /// ranks, median over the runs (s).
    pub measured_comm_s: Option<f64>,
    /// The program's own timed loop, median over the runs (the study's `time_s`).
    pub measured_program_s: Option<f64>,
    /// The trace replayed: the reference's run with the median window, from the barrier on.
    pub trace: Option<PathBuf>,
    /// The LogGP piece the replay took (the one covering the trace's median message), bytes.
    #[serde(default)]
    pub piece_from_bytes: Option<u64>,
    #[serde(default)]
    pub piece_to_bytes: Option<u64>,
    /// The share of the trace's point-to-point bytes (%) in messages larger than the piece's
    /// sizes: priced at its G, fitted on smaller messages (hpcc's 2 MiB messages at the 8–256 B
    /// piece's G; the sizes above are other protocols, see `predict --loggp-from`).
    #[serde(default)]
    pub bytes_above_piece_percent: Option<f64>,
    /// The replay's finish time of the last rank (s).
    pub predicted_total_s: Option<f64>,
    /// The replay's time not computing (finish − compute), mean over the ranks (s).
    pub predicted_comm_s: Option<f64>,
    /// (predicted − measured) / measured × 100.
    pub total_error_percent: Option<f64>,
    pub comm_error_percent: Option<f64>,
    /// None on the reference itself.
    pub emulation: Option<Emulation>,
    /// Which of the cell's figures came mostly from another state of the machine than the
    /// study's usual one (its runs, the reference's runs its trace is taken from, a stack's
    /// bench; `emulated runs: …` for the emulation's): such a figure is not comparable with
    /// the rest. Empty when all are in the usual state or nothing was probed.
    #[serde(default)]
    pub other_state: Vec<String>,
    /// Calls of the reference's run its trace left out (one-sided transfers, collectives on
    /// unknown communicators …): their time is in the measured communication, not in the
    /// replay's. None without a trace.
    #[serde(default)]
    pub trace_left_out_calls: Option<u64>,
    /// What the trace holds and what it left out, in words (`TraceStats::describe`).
    #[serde(default)]
    pub trace_summary: Option<String>,
    /// Each communication time off by more than 10 % (predicted or emulated), with the causes
    /// the study's own figures show ([`crate::rounds::miss_causes`]); empty when none is off.
    #[serde(default)]
    pub comm_misses: Vec<String>,
}

/// A stack emulated on the reference: the reference's runs with the knobs set.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[allow(non_snake_case)]
pub struct Emulation {
    /// The knobs: o = the mean of Δo_s and Δo_r (the knob adds o on both sides), g, G, L = the
    /// differences (this stack − the reference), each clamped at 0.
    pub o_ns: f64,
    pub g_ns: f64,
    pub G_ns_per_byte: f64,
    pub L_ns: f64,
    /// The differences that were negative (the knobs cannot lower a parameter) and set to 0.
    pub clamped: Vec<String>,
    /// Why there is no emulated time.
    pub error: Option<String>,
    /// The same window of the emulated runs, longest rank, median (s).
    pub total_s: Option<f64>,
    /// The program's own timed loop in the emulated runs, median (s).
    pub program_s: Option<f64>,
    /// (emulated − this stack's measured) / measured × 100, for the span and the program's
    /// own time.
    pub total_error_percent: Option<f64>,
    pub program_error_percent: Option<f64>,
    /// Time inside MPI calls in the window of the emulated runs, mean over the ranks, median
    /// over the runs (s), and its error against this stack's measured communication time.
    #[serde(default)]
    pub comm_s: Option<f64>,
    #[serde(default)]
    pub comm_error_percent: Option<f64>,
    /// Share of the collective calls the knobs did not reach (left to the library), percent.
    pub untouched_calls_percent: Option<f64>,
    pub monitor_dirs: Vec<PathBuf>,
    /// Per emulated run that succeeded: the machine's state over it (as [`Cell`]'s).
    #[serde(default)]
    pub run_states_ns: Vec<Option<f64>>,
}

/// One program's sensitivity study.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Sensitivity {
    pub program: String,
    /// The stack it was swept on.
    pub stack: String,
    /// Why there is no sweep (the program failed there, the sweep failed).
    pub error: Option<String>,
    /// `commperf emulate sweep`'s result, as its `--format json` writes it.
    pub sweep: Option<SweepResult>,
}

/// The collective calls a profile counts per rank.
const COLLECTIVES: &[&str] = &[
    "MPI_Barrier",
    "MPI_Bcast",
    "MPI_Reduce",
    "MPI_Allreduce",
    "MPI_Gather",
    "MPI_Gatherv",
    "MPI_Scatter",
    "MPI_Scatterv",
    "MPI_Allgather",
    "MPI_Allgatherv",
    "MPI_Alltoall",
    "MPI_Alltoallv",
    "MPI_Reduce_scatter",
    "MPI_Reduce_scatter_block",
    "MPI_Scan",
    "MPI_Exscan",
];

impl Profile {
    /// The profile of a monitored run's summary: every matched message (the whole run; a kit
    /// program's caller sets [`Profile::from_barrier`] when it cut the summary there).
    pub fn of(s: &Summary) -> Profile {
        let n = s.ranks as usize;
        let mut sent = vec![0u64; n];
        let mut coll = vec![0u64; n];
        let mut bins: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
        for p in &s.pairs {
            if let Some(x) = sent.get_mut(p.src as usize) {
                *x += p.count;
            }
            let b = bins.entry(p.size_bin).or_default();
            b.0 += p.count;
            b.1 += p.bytes;
        }
        for c in &s.calls {
            if COLLECTIVES.contains(&c.call) {
                if let Some(x) = coll.get_mut(c.rank as usize) {
                    *x += c.count;
                }
            }
        }
        let bins: Vec<Bin> = bins
            .into_iter()
            .map(|(k, (count, bytes))| Bin {
                size_bin_bytes: k,
                count,
                bytes,
            })
            .collect();
        let messages: u64 = bins.iter().map(|b| b.count).sum();
        // Most messages; among equals, the larger bin (more bytes on the wire).
        let dom = bins.iter().max_by_key(|b| (b.count, b.size_bin_bytes));
        Profile {
            mpi_library: s.mpi_library.lines().next().unwrap_or("").to_string(),
            messages,
            bytes: bins.iter().map(|b| b.bytes).sum(),
            sent_per_rank: sent,
            collectives_per_rank: coll,
            dominant_bin_bytes: dom.map(|b| b.size_bin_bytes),
            dominant_mean_bytes: dom.map(|b| (b.bytes as f64 / b.count as f64).round() as u64),
            dominant_share: dom.map_or(0.0, |b| b.count as f64 / messages as f64),
            from_barrier: false,
            bins,
        }
    }
}

impl Explanation {
    /// Which of the micro-benchmark figures orders `program`'s stacks as its completion times
    /// do (Spearman's rank correlation of each figure's cost with the times); `no_bench`: the
    /// study ran none, which is then the note.
    pub fn of(program: &str, cells: &[Cell], no_bench: bool) -> Explanation {
        let mine: Vec<(&Cell, f64, &Micro)> = cells
            .iter()
            .filter(|c| c.program == program)
            .filter_map(|c| Some((c, c.time_s?, c.micro.as_ref()?)))
            .collect();
        let times: Vec<f64> = mine.iter().map(|m| m.1).collect();
        let lat: Vec<f64> = mine.iter().map(|m| m.2.latency_us).collect();
        let inv_bw: Vec<f64> = mine.iter().map(|m| 1.0 / m.2.bandwidth_mb_per_s).collect();
        let (l, b) = (spearman(&lat, &times), spearman(&inv_bw, &times));
        let best = [("latency", l), ("bandwidth", b)]
            .into_iter()
            .filter_map(|(n, r)| Some((n, r?)))
            .filter(|(_, r)| *r > 0.0)
            .fold(None::<(&str, f64)>, |acc, (n, r)| match acc {
                Some((_, ar)) if ar >= r => acc,
                _ => Some((n, r)),
            });
        let note = if best.is_some() {
            None
        } else if l.is_some() || b.is_some() {
            Some(
                "no figure orders the stacks as the times do (no positive rank correlation)".into(),
            )
        } else if no_bench {
            Some("no micro-benchmarks (--no-bench)".to_string())
        } else if cells
            .iter()
            .filter(|c| c.program == program)
            .all(|c| c.profile.as_ref().is_some_and(|p| p.messages == 0))
        {
            Some("no point-to-point messages: its time depends on no network figure".to_string())
        } else if mine.len() < 2 {
            Some(format!(
                "{} stack(s) with both a time and micro-benchmark figures: nothing to order",
                mine.len()
            ))
        } else {
            Some("the figures or the times are all equal: no ordering".to_string())
        };
        Explanation {
            program: program.into(),
            stacks_compared: mine.len(),
            figure: best.map(|b| b.0.to_string()),
            spearman: best.map(|b| b.1),
            latency_spearman: l,
            bandwidth_spearman: b,
            note,
        }
    }
}
