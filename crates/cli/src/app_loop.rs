//! `commperf app --loop`: the loop bench → monitor → predict, closed and measured. Per stack, its
//! LogGP parameters at the MPI layer (`commperf bench loggp --transport mpi`, 2 ranks under the
//! stack's own launch); the reference stack is the one with the least small-message cost o_s + L +
//! o_r. Each program's monitored run on the reference is converted into a trace (the one `commperf
//! monitor --trace` writes) and replayed in-process by the predict crate's LogGP model with every
//! stack's parameters; each other stack is emulated on the reference by the interposer's knobs
//! set to the parameters' differences. Both are set against the runs the study already made.
//!
//! The times compared are a window of the monitored runs, not MPI_Init to MPI_Finalize: for the
//! kit's programs, from the end of each rank's last MPI_Barrier (every kit program times its loop
//! from the barrier before it) to the end of its last MPI call; the whole run when a rank calls
//! no barrier, and for every other program (whose barriers say nothing of its timed part). The span
//! before it is start-up (the interposer's clock sync, communicator set-up, the first messages
//! that open Open MPI's TCP connections: 0.2 s of a 0.02 s halo run on ompi-tcp) which no LogGP
//! parameter describes. The trace replayed is cut at the same point, so prediction and
//! measurement cover the same calls, and the monitor measures that window (and the time inside
//! MPI calls in it) on every run alike, the real ones and the emulated ones. The program's own
//! times (`time X s`) are kept beside the emulated ones, where both sides are real runs.
//!
//! Its own module because it is a second study on top of the first: it needs the cells' runs
//! (monitor directories) and adds runs of its own, but none of the table's logic. `app` calls
//! it in three places: [`measure`] before any program runs, [`plan`] and [`emulate_round`]
//! inside the rounds of each program (the emulated runs interleaved with the real ones), and
//! [`finish`] once every run is done.

use crate::app::{self, AppArgs, Cell, Config, Stack};
use anyhow::{anyhow, bail, Context, Result};
use commperf_bench::Progress;
use commperf_emulate::sweep::same_state;
use commperf_emulate::Knobs;
use commperf_model::tcom::Tcom;
use commperf_predict::engine::{self, Inputs, LogGp, Overlap, PredictConfig};
use commperf_predict::parse::{self, ParseOptions, TraceFormat};
use commperf_predict::topology::{self, RankMap, TopologySpec};
use commperf_stats::median;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The sizes `bench loggp` fits over (the kit's messages are 8 B to 8 KiB): dense enough around
/// 4–16 KiB for the piecewise g + G·s fit to find a protocol switch there (MPICH over TCP goes
/// from 5.9 µs one way at 4 KiB to 37 µs at 8 KiB; with 4k and 16k alone the fit kept one
/// piece and priced transpose's 8 KiB blocks at the small messages' rate, −65 %).
pub const LOGGP_SIZES: &str = "8,64,256,1k,2k,4k,8k,16k,32k";
/// PRTT repetitions per figure of `bench loggp`.
pub const LOGGP_ITERS: u64 = 500;
/// Rounds of each stack's `bench loggp` (one per stack a round, the stacks in turn); the loop
/// keeps, per stack, the round with the least one-way time over the sizes (their geometric
/// mean) of those that gave parameters. A few seconds of one bench meet a disturbance of the
/// machine now and then: in one study of five mpich-shm's parameters came out three times the
/// others' (L 305 ns), in another ompi-tcp's G came out below zero beyond its noise and the stack
/// had none. The test VM's slow spells (a cache line crossing its vCPUs in 160 ns, not 31) raise
/// every figure of a round (mpich-shm's one-way 0.18 → 0.65 µs) and came in two of a stack's three
/// rounds in two studies running: a median kept them, the least keeps the undisturbed one.
pub const LOGGP_ROUNDS: usize = 3;
/// What the goal calls close: |error| within 10 %.
pub const GOAL_PERCENT: f64 = 10.0;
/// Messages up to this size are eager in the replay: `predict`'s default, Open MPI's TCP eager
/// limit. The kit's messages are at most 8 KiB, so none waits for its receive in the replay,
/// although Open MPI's shared memory sends those above 4 KiB (transpose's blocks) by rendezvous.
pub const EAGER_BYTES: u64 = 64 * 1024;

/// The loop's section of the study (`loop` in study.json).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
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
    /// (a cache line's one-way trip between the ranks' CPUs, ns; [`crate::probe`]). None
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
#[derive(Debug, Clone, Serialize, Deserialize)]
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
    /// The machine's state over the bench (as [`app::Cell`]'s runs').
    #[serde(default)]
    pub state_ns: Option<f64>,
}

/// LogGOPS parameters of the first protocol piece `bench loggp` fitted (the smallest messages),
/// in ns (per byte for G and O).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
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
    /// above it (`predict`'s [`Overlap`]); 0 in studies written before they were measured.
    #[serde(default)]
    pub overlap_ns: f64,
    #[serde(default)]
    pub send_wait_ns: f64,
    #[serde(default)]
    pub duplex_ns: f64,
}

impl Params {
    fn loggp(&self) -> LogGp {
        LogGp {
            L_ns: self.L_ns,
            o_s_ns: self.o_s_ns,
            o_r_ns: self.o_r_ns,
            g_ns: self.g_ns,
            G_ns_per_byte: self.G_ns_per_byte,
            O_ns_per_byte: self.O_ns_per_byte,
        }
    }
}

/// One program on one stack: measured, predicted from the reference's trace, emulated on the
/// reference.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
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
    /// the study's own figures show ([`miss_causes`]); empty when none is off.
    #[serde(default)]
    pub comm_misses: Vec<String>,
}

/// A stack emulated on the reference: the reference's runs with the knobs set.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
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
    /// Per emulated run that succeeded: the machine's state over it (as [`app::Cell`]'s).
    #[serde(default)]
    pub run_states_ns: Vec<Option<f64>>,
}

/// Progress of the study the loop's steps count in.
pub(crate) struct Steps<'a> {
    pub progress: &'a mut crate::progress::RunProgress,
    pub done: &'a mut usize,
    pub total: usize,
}

impl Steps<'_> {
    fn step<T>(&mut self, label: &str, f: impl FnOnce() -> T) -> T {
        self.progress.update(label, *self.done, self.total);
        let r = f();
        *self.done += 1;
        self.progress.finished(label, *self.done, self.total);
        r
    }
}

/// The loop's steps for the progress count: a bench per stack, and the emulated runs.
pub(crate) fn steps(cfg: &Config, repeat: u32) -> usize {
    cfg.stacks.len() * LOGGP_ROUNDS
        + cfg.programs.len() * cfg.stacks.len().saturating_sub(1) * repeat as usize
}

/// (predicted − measured) / measured × 100; None without a measured time above zero.
pub fn error_percent(predicted: f64, measured: f64) -> Option<f64> {
    (measured > 0.0 && predicted.is_finite()).then(|| (predicted - measured) / measured * 100.0)
}

/// The stack with the least o_s + L + o_r among those with parameters (the first on a tie).
pub fn reference(stacks: &[LoopStack]) -> Option<usize> {
    stacks
        .iter()
        .enumerate()
        .filter_map(|(i, s)| Some((i, s.params?.small_message_ns)))
        .fold(None, |best: Option<(usize, f64)>, (i, v)| match best {
            Some((_, b)) if b <= v => best,
            _ => Some((i, v)),
        })
        .map(|b| b.0)
}

/// What the L knob's side band costs a one-way message on its own (the stamp's cache line and
/// the clock reads: +148 ns with L = 1 ns on Open MPI's shared memory, measured on the
/// development VM). A smaller ΔL would add that cost to add less than it.
pub const L_SIDE_BAND_NS: f64 = 150.0;

/// The knobs that make `reference` look like `slower`: o raises both sides, so it takes the
/// mean of the two overheads' differences (o_s + o_r moves by their sum); a negative
/// difference cannot be emulated (the knobs only add) and is clamped to 0, named in the list;
/// so is a ΔL below [`L_SIDE_BAND_NS`] (mpich-shm's L of 5 ns over ompi-shm's 0 made every
/// emulated message some 150 ns slower, +11 to +19 % on halo, cg and pipeline).
pub fn knob_deltas(slower: &Params, reference: &Params) -> (Knobs, Vec<String>) {
    let mut clamped = Vec::new();
    let mut clamp = |name: &str, unit: &str, d: f64| {
        if d < 0.0 {
            clamped.push(format!("{name} {d:+.3} {unit} → 0"));
            0.0
        } else {
            d
        }
    };
    let o = clamp(
        "o",
        "ns",
        ((slower.o_s_ns - reference.o_s_ns) + (slower.o_r_ns - reference.o_r_ns)) / 2.0,
    );
    let g = clamp("g", "ns", slower.g_ns - reference.g_ns);
    let big_g = clamp("G", "ns/B", slower.G_ns_per_byte - reference.G_ns_per_byte);
    let mut l = clamp("L", "ns", slower.L_ns - reference.L_ns);
    if l > 0.0 && l < L_SIDE_BAND_NS {
        clamped.push(format!(
            "L {l:+.3} ns → 0 (less than the ≈{L_SIDE_BAND_NS:.0} ns a message L's side band costs)"
        ));
        l = 0.0;
    }
    (
        Knobs {
            o_ns: o,
            g_ns: g,
            gap_per_byte_ns: big_g,
            l_ns: l,
        },
        clamped,
    )
}

/// A monitored run's window and time in MPI: (longest rank's window, mean over the ranks of
/// window − compute), seconds.
pub fn measured_times(run_ns: &[u64], compute_ns: &[u64]) -> Option<(f64, f64)> {
    if run_ns.is_empty() || run_ns.len() != compute_ns.len() {
        return None;
    }
    let total = *run_ns.iter().max()? as f64 * 1e-9;
    let comm = run_ns
        .iter()
        .zip(compute_ns)
        .map(|(r, c)| r.saturating_sub(*c) as f64)
        .sum::<f64>()
        / run_ns.len() as f64
        * 1e-9;
    Some((total, comm))
}

/// The loggp rows of a `bench loggp` result file, smallest size first: read once, for the
/// parameters, the pieces and the ladder.
pub fn bench_rows(text: &str) -> Result<Vec<commperf_core::Row>> {
    let rep = commperf_report::load_json(text)?;
    let mut rows: Vec<_> = rep
        .results
        .into_iter()
        .filter(|r| r.benchmark == commperf_core::Benchmark::Loggp)
        .collect();
    rows.sort_by_key(|r| r.size_bytes);
    Ok(rows)
}

/// The parameters of a bench's loggp rows ([`bench_rows`]): its first piece (the smallest
/// messages).
pub fn params_from_bench(rows: &[commperf_core::Row]) -> Result<(Params, Vec<String>)> {
    let row = rows.first().context("the bench wrote no loggp result")?;
    Ok((params_of_row(row)?, row.notes.clone()))
}

/// The geometric mean of a bench's one-way times (µs) over its sizes ([`bench_rows`]).
pub fn ladder_from_bench(rows: &[commperf_core::Row]) -> Result<f64> {
    let logs: Vec<f64> = rows
        .iter()
        .filter_map(|r| r.p50_us.filter(|v| *v > 0.0 && v.is_finite()))
        .map(f64::ln)
        .collect();
    if logs.is_empty() {
        bail!("the bench wrote no loggp latency");
    }
    Ok((logs.iter().sum::<f64>() / logs.len() as f64).exp())
}

/// Every piece of a bench's loggp rows ([`bench_rows`]), smallest messages first, each from
/// the first row fitted with it; a piece whose parameters the bench could not all identify is
/// left out.
pub fn pieces_from_bench(rows: &[commperf_core::Row]) -> Vec<Params> {
    let mut out: Vec<Params> = Vec::new();
    for r in rows {
        let span = (r.piece_from_bytes, r.piece_to_bytes);
        if out
            .iter()
            .any(|p| (p.piece_from_bytes, p.piece_to_bytes) == span)
        {
            continue;
        }
        if let Ok(p) = params_of_row(r) {
            out.push(p);
        }
    }
    out
}

/// How far `size` lies from the piece `lo..=hi`, on a log scale: 0 inside it.
pub fn piece_distance(size: u64, lo: u64, hi: u64) -> f64 {
    if (lo..=hi).contains(&size) {
        return 0.0;
    }
    let s = size.max(1) as f64;
    (s / lo.max(1) as f64)
        .ln()
        .abs()
        .min((s / hi.max(1) as f64).ln().abs())
}

impl Params {
    /// Of `pieces`, the one covering `size` bytes (the nearest on a log scale when it falls
    /// between two, or past the last).
    pub fn covering(pieces: &[Params], size: u64) -> Option<&Params> {
        let d = |p: &Params| match (p.piece_from_bytes, p.piece_to_bytes) {
            (Some(lo), Some(hi)) => piece_distance(size, lo, hi),
            _ => f64::INFINITY,
        };
        pieces.iter().min_by(|a, b| d(a).total_cmp(&d(b)))
    }
}

/// One row's LogGOPS parameters in ns.
fn params_of_row(row: &commperf_core::Row) -> Result<Params> {
    let need = |name: &str, v: Option<f64>| {
        v.filter(|x| x.is_finite() && *x >= 0.0).with_context(|| {
            format!(
                "bench loggp left {name} out at {} B ({})",
                row.size_bytes,
                if row.notes.is_empty() {
                    "no note".to_string()
                } else {
                    row.notes.join("; ")
                }
            )
        })
    };
    let o_s = need("o_s", row.o_s_fixed_us)? * 1e3;
    let o_r = need("o_r", row.o_r_fixed_us)? * 1e3;
    let l = need("L", row.L_us)? * 1e3;
    let p = Params {
        L_ns: l,
        o_s_ns: o_s,
        o_r_ns: o_r,
        g_ns: need("g", row.g_us)? * 1e3,
        G_ns_per_byte: need("G", row.gap_per_byte_us)? * 1e3,
        O_ns_per_byte: (row.O_s_us_per_byte.unwrap_or(0.0) + row.O_r_us_per_byte.unwrap_or(0.0))
            / 2.0
            * 1e3,
        piece_from_bytes: row.piece_from_bytes,
        piece_to_bytes: row.piece_to_bytes,
        small_message_ns: o_s + l + o_r,
        // Absent where not measured (figures of a bench without exchanges): LogGOPSim's rule.
        overlap_ns: row.overlap_us.unwrap_or(0.0) * 1e3,
        send_wait_ns: row.send_wait_us.unwrap_or(0.0) * 1e3,
        duplex_ns: row.duplex_us.unwrap_or(0.0) * 1e3,
    };
    Ok(p)
}

/// Where round `round` (from 0) of a stack's bench writes its figures.
fn round_file(root: &Path, s: Stack, round: usize) -> PathBuf {
    root.join(format!("loggp-{}-round{}.json", s.name(), round + 1))
}

fn loop_stack(
    a: &AppArgs,
    s: Stack,
    nets: &crate::app_stack::Nets,
    root: &Path,
    round: usize,
) -> LoopStack {
    let file = round_file(root, s, round);
    let args = [
        "loggp",
        "--transport",
        "mpi",
        "--sizes",
        LOGGP_SIZES,
        "--iters",
        &LOGGP_ITERS.to_string(),
    ]
    .map(String::from);
    let mut state_ns = None;
    let r = (|| -> Result<(Params, Vec<Params>, Vec<String>, f64)> {
        nets.check(s).map_err(anyhow::Error::msg)?;
        let (note, state) =
            commperf_emulate::state::around(|| app::launch_bench(a, s, &args, &file));
        state_ns = state;
        let note = note?;
        let text = commperf_core::read_text(&file)?;
        let ctx = || file.display().to_string();
        let rows = bench_rows(&text).with_context(ctx)?;
        let (p, mut notes) = params_from_bench(&rows).with_context(ctx)?;
        let pieces = pieces_from_bench(&rows);
        let ladder = ladder_from_bench(&rows).with_context(ctx)?;
        notes.extend(note);
        Ok((p, pieces, notes, ladder))
    })();
    let mut st = LoopStack {
        stack: s.name(),
        error: None,
        notes: Vec::new(),
        file: a.out.is_some().then(|| file.clone()),
        params: None,
        pieces: Vec::new(),
        ladder_us: None,
        state_ns,
    };
    match r {
        Ok((p, pieces, notes, ladder)) => {
            st.params = Some(p);
            st.pieces = pieces;
            st.notes = notes;
            st.ladder_us = Some(ladder);
        }
        Err(e) => st.error = Some(format!("{e:#}")),
    }
    st
}

/// Cuts a run at the end of each rank's last MPI_Barrier (the records up to it dropped, the
/// rank's start moved to its end) when every rank has one; says whether it did.
pub fn window(run: &mut commperf_pmpi::Run) -> bool {
    let cut: Vec<Option<usize>> = run
        .ranks
        .iter()
        .map(|r| {
            r.events
                .iter()
                .rposition(|e| e.call == commperf_pmpi::Call::Barrier)
        })
        .collect();
    if run.ranks.is_empty() || cut.iter().any(Option::is_none) {
        return false;
    }
    for (r, i) in run.ranks.iter_mut().zip(cut.into_iter().flatten()) {
        let e = r.events[i];
        r.header.start_ns = e.post_exit.max(e.done_exit);
        r.events.drain(..=i);
    }
    true
}

/// A monitored run, windowed: its trace (statistics: compute per rank), each rank's window
/// (ns, from its start to the end of its last call), and whether it starts at a barrier.
struct Windowed {
    trace: commperf_pmpi::TraceOutput,
    window_ns: Vec<u64>,
    from_barrier: bool,
}

/// `kit`: the program is one of the kit's, whose timed loop starts at the end of its last
/// barrier; any other program's window is its whole run (LAMMPS's last barrier comes after its
/// loop: from there its window was 0 s).
fn windowed(dir: &Path, kit: bool) -> Result<Windowed> {
    let mut run = commperf_pmpi::read_dir(dir)
        .with_context(|| format!("reading the monitor files in {}", dir.display()))?;
    let from_barrier = kit && window(&mut run);
    let trace = commperf_pmpi::to_trace(&run);
    let mut window_ns = vec![0u64; trace.stats.compute_ns.len()];
    for r in &run.ranks {
        // The trace's own start: after MPI_Init's clock sync, or the barrier's end.
        let begin = r
            .clocks
            .iter()
            .find(|c| c.phase == 0)
            .map_or(r.header.start_ns, |c| c.local_ns.max(r.header.start_ns));
        let end = r
            .events
            .iter()
            .map(|e| e.post_exit.max(e.done_exit))
            .max()
            .unwrap_or(begin);
        if let Some(w) = window_ns.get_mut(r.header.rank as usize) {
            *w = end.saturating_sub(begin);
        }
    }
    Ok(Windowed {
        trace,
        window_ns,
        from_barrier,
    })
}

/// Median window and time in MPI over the runs in `dirs`.
fn measured(dirs: &[PathBuf], kit: bool) -> Result<(f64, f64)> {
    let mut totals = Vec::new();
    let mut comms = Vec::new();
    for d in dirs {
        let w = windowed(d, kit)?;
        let (total, comm) = measured_times(&w.window_ns, &w.trace.stats.compute_ns)
            .with_context(|| format!("{}: no rank recorded", d.display()))?;
        totals.push(total);
        comms.push(comm);
    }
    match (median(&totals), median(&comms)) {
        (Some(t), Some(c)) => Ok((t, c)),
        _ => bail!("no run"),
    }
}

/// The replay of `workload` with `p`, its messages to oneself at `own`'s overheads: (last
/// rank's finish, mean time not computing), seconds.
fn predict(
    workload: &commperf_predict::workload::Workload,
    p: &Params,
    own: &Params,
) -> Result<(f64, f64)> {
    let net = topology::build(&TopologySpec::Crossbar, workload.nranks(), 1)?;
    let map = RankMap::identity(workload.nranks(), &*net)?;
    let loggp = p.loggp();
    // The LogGP model takes every cost from `loggp`; Tcom is only the contention model's.
    let tcom = Tcom::from_loggp(&loggp);
    // A rank's messages to itself take `own`'s overheads (the reference stack's in-memory path).
    let cfg = PredictConfig {
        // A rendezvous send waits out the peer's copy (Open MPI's shared memory above 4 KiB):
        // charged as CPU, transpose's exchanges were replayed at o_s + o_r, +20 %. Over TCP
        // an exchange takes 0.7 µs beyond o_s + o_r: without it cg on mpich-tcp was replayed
        // 10…13 % short (−1…0 % so; seven studies replayed, 135 within 10 % against 130).
        overlap: Some(
            Overlap::new(p.overlap_ns, p.send_wait_ns)
                .and_then(|v| v.with_duplex(p.duplex_ns))
                .map_err(|e| anyhow!(e))?,
        ),
        ..PredictConfig::one_node_mpi(EAGER_BYTES, engine::SelfOverheads::of(&own.loggp()))
    };
    let inputs = Inputs {
        workload,
        network: &*net,
        rank_map: &map,
        tcom: &tcom,
        loggp: Some(&loggp),
        trace_name: "trace.txt",
        trace_format: "commperf",
        profile_name: "bench loggp --transport mpi",
    };
    let o = engine::predict(&inputs, &cfg).context("the replay failed")?;
    let ranks = &o.prediction.ranks;
    if ranks.is_empty() {
        bail!("the replay has no rank");
    }
    let comm = ranks
        .iter()
        .map(|r| (r.finish_us - r.compute_us).max(0.0))
        .sum::<f64>()
        / ranks.len() as f64;
    Ok((o.prediction.total_us * 1e-6, comm * 1e-6))
}

/// The reference's trace of a program (of its run with the median window, windowed), written
/// beside the run as trace.txt; whether the window starts at a barrier; the run's directory.
/// The reference's trace of a program, parsed: the workload, whether its window starts at a
/// barrier, the trace file, and what the conversion wrote and left out.
type RefTrace = (
    commperf_predict::workload::Workload,
    bool,
    PathBuf,
    commperf_pmpi::TraceStats,
);

fn reference_workload(c: &Cell, kit: bool) -> Result<RefTrace> {
    if let Some(e) = &c.error {
        bail!("the program failed on the reference stack: {e}");
    }
    // The median run, not the first: the trace carries that run's computation, which the
    // shared machine's load moves from run to run as much as the communication.
    let mut runs: Vec<(f64, &PathBuf)> = Vec::new();
    for d in &c.monitor_dirs {
        runs.push((measured(std::slice::from_ref(d), kit)?.0, d));
    }
    runs.sort_by(|a, b| a.0.total_cmp(&b.0));
    let dir = runs
        .get(runs.len().saturating_sub(1) / 2)
        .map(|r| r.1)
        .context("the reference stack has no run of it")?;
    let w = windowed(dir, kit)?;
    let t = w.trace;
    let path = dir.join("trace.txt");
    crate::output::write_atomically(&path, t.text.as_bytes())?;
    if t.stats.drops > 0 {
        bail!(
            "the monitored run on the reference dropped {} events (its call rate outran the \
             monitor's writer): its trace is not the program",
            t.stats.drops
        );
    }
    let wl = parse::parse_str(
        &t.text,
        &path.display().to_string(),
        TraceFormat::Own,
        &ParseOptions::default(),
    )
    .with_context(|| format!("reading {}", path.display()))?;
    Ok((wl, w.from_barrier, path, t.stats))
}

/// The stacks' parameters and the reference, measured before any program runs (the emulated
/// runs need them, and are interleaved with the real ones).
pub(crate) struct Measured {
    /// In the study's order of stacks.
    stacks: Vec<LoopStack>,
    reference: Option<usize>,
}

impl Measured {
    /// The reference stack's index in the study's stacks.
    pub(crate) fn reference(&self) -> Option<usize> {
        self.reference
    }
}

/// `st`'s piece covering `size` bytes; its first piece without a size.
fn piece_for(st: &LoopStack, size: Option<u64>) -> Option<&Params> {
    size.and_then(|s| Params::covering(&st.pieces, s))
        .or(st.params.as_ref())
}

/// Measures every stack's LogGP parameters and picks the reference.
pub(crate) fn measure(
    a: &AppArgs,
    cfg: &Config,
    nets: &crate::app_stack::Nets,
    root: &Path,
    steps: &mut Steps<'_>,
) -> Measured {
    let mut rounds: Vec<Vec<LoopStack>> = vec![Vec::new(); cfg.stacks.len()];
    // Whether a stack is tried again: not when its bench did not run (no commperf for its MPI,
    // no network: no result file), only when its figures gave no parameters, or it has some.
    let mut again = vec![true; cfg.stacks.len()];
    for k in 0..LOGGP_ROUNDS {
        for ((&s, runs), again) in cfg.stacks.iter().zip(&mut rounds).zip(&mut again) {
            let label = format!(
                "LogGP parameters of {} (round {}/{LOGGP_ROUNDS})",
                s.name(),
                k + 1
            );
            if !*again || commperf_testbed::run::interrupted() {
                steps.step(&label, || ());
                continue;
            }
            let st = steps.step(&label, || {
                let mut st = loop_stack(a, s, nets, root, k);
                if st.error.is_none() && commperf_testbed::run::interrupted() {
                    st.error = Some("interrupted".into());
                }
                st
            });
            *again = st.error.is_none() || round_file(root, s, k).is_file();
            runs.push(st);
        }
    }
    let stacks: Vec<LoopStack> = cfg
        .stacks
        .iter()
        .zip(rounds)
        .map(|(&s, runs)| {
            least_round(runs, &root.join(format!("loggp-{}.json", s.name()))).unwrap_or_else(|| {
                LoopStack {
                    stack: s.name(),
                    error: Some("interrupted".into()),
                    notes: Vec::new(),
                    file: None,
                    params: None,
                    pieces: Vec::new(),
                    ladder_us: None,
                    state_ns: None,
                }
            })
        })
        .collect();
    let reference = reference(&stacks);
    Measured { stacks, reference }
}

/// Of one stack's rounds, the one with the least one-way time over the ladder (the geometric
/// mean over its sizes; o_s + L + o_r in studies written before it was kept) among those with
/// parameters (the first of equals), its file copied to `file` (where the table and the tests
/// read it); the first round's when none has parameters (None: no round ran). Its notes say
/// which round and what each gave.
fn least_round(mut runs: Vec<LoopStack>, file: &Path) -> Option<LoopStack> {
    // µs; the whole ladder, as a round whose small messages are quick can still be in another
    // regime from 2 KiB on (ompi-tcp's first round of a study: g + G·s 7.3 against 5.3 µs at
    // 2 KiB, 21.8 against 9.3 at 32 KiB, its o_s + L + o_r the least).
    let cost = |r: &LoopStack| {
        r.params
            .map(|p| r.ladder_us.unwrap_or(p.small_message_ns / 1e3))
    };
    let costs: Vec<String> = runs
        .iter()
        .map(|r| cost(r).map_or_else(|| "none".into(), |c| format!("{c:.3}")))
        .collect();
    let mut good: Vec<usize> = (0..runs.len())
        .filter(|&i| runs[i].params.is_some())
        .collect();
    let cost = |r: &LoopStack| cost(r).unwrap_or(f64::INFINITY);
    good.sort_by(|&i, &j| cost(&runs[i]).total_cmp(&cost(&runs[j])).then(i.cmp(&j)));
    let pick = good.first().copied().unwrap_or(0);
    let n = runs.len();
    if n == 0 {
        return None;
    }
    let mut st = runs.swap_remove(pick);
    if let Some(f) = st.file.take() {
        // Under -o DIR the kept round is also `loggp-STACK.json`, the others stay beside it.
        let copied = !f.is_file() || std::fs::copy(&f, file).is_ok();
        st.file = Some(if copied { file.to_path_buf() } else { f });
    }
    if n > 1 && st.params.is_some() {
        st.notes.insert(
            0,
            format!(
                "round {} of {n}: the least one-way time over the sizes (geometric mean) of the rounds with parameters (µs, by round: {})",
                pick + 1,
                costs.join(", ")
            ),
        );
    }
    Some(st)
}

/// One stack's emulation of one program, filled run by run.
pub(crate) struct EmuRuns {
    stack: String,
    knobs: Knobs,
    command: Vec<String>,
    totals: Vec<f64>,
    comms: Vec<f64>,
    programs: Vec<f64>,
    e: Emulation,
}

/// The emulations of program `p`: one per stack other than the reference, with its knobs (or
/// why it cannot run): the differences of the two stacks' pieces covering `size`, the
/// program's typical message (the first pieces without one).
#[allow(clippy::too_many_arguments)]
pub(crate) fn plan(
    a: &AppArgs,
    p: &app::Program,
    cfg: &Config,
    m: &Measured,
    nets: &crate::app_stack::Nets,
    root: &Path,
    cache: &Path,
    size: Option<u64>,
) -> Vec<EmuRuns> {
    let Some(ri) = m.reference else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (_, st) in m.stacks.iter().enumerate().filter(|(si, _)| *si != ri) {
        let mut e = Emulation {
            o_ns: 0.0,
            g_ns: 0.0,
            G_ns_per_byte: 0.0,
            L_ns: 0.0,
            clamped: Vec::new(),
            error: None,
            total_s: None,
            program_s: None,
            total_error_percent: None,
            program_error_percent: None,
            comm_s: None,
            comm_error_percent: None,
            untouched_calls_percent: None,
            monitor_dirs: Vec::new(),
            run_states_ns: Vec::new(),
        };
        let mut knobs = Knobs::default();
        let mut command = Vec::new();
        match (piece_for(st, size), piece_for(&m.stacks[ri], size)) {
            (Some(slow), Some(fast)) => {
                let (k, clamped) = knob_deltas(slow, fast);
                (knobs, e.clamped) = (k, clamped);
                (e.o_ns, e.g_ns, e.G_ns_per_byte, e.L_ns) =
                    (k.o_ns, k.g_ns, k.gap_per_byte_ns, k.l_ns);
                match k
                    .validate()
                    .map_err(anyhow::Error::from)
                    .and_then(|()| app::launch_of(a, nets, p, cfg.stacks[ri], cache, root))
                {
                    Ok(c) => command = c,
                    Err(err) => e.error = Some(format!("{err:#}")),
                }
            }
            _ => {
                e.error = Some(format!(
                    "no LogGP parameters of {}: {}",
                    st.stack,
                    st.error.as_deref().unwrap_or("unknown")
                ))
            }
        }
        out.push(EmuRuns {
            stack: st.stack.clone(),
            knobs,
            command,
            totals: Vec::new(),
            comms: Vec::new(),
            programs: Vec::new(),
            e,
        });
    }
    out
}

/// Run `k` of an emulation: program `p` on the reference under the knobs, monitored like the
/// study's runs (one step of progress, run or not).
#[allow(clippy::too_many_arguments)]
pub(crate) fn emulate_round(
    a: &AppArgs,
    p: &app::Program,
    m: &Measured,
    cfg: &Config,
    er: &mut EmuRuns,
    k: u32,
    root: &Path,
    steps: &mut Steps<'_>,
) {
    let Some(ri) = m.reference else {
        return;
    };
    if er.e.error.is_some() {
        *steps.done += 1;
        return;
    }
    let reference = cfg.stacks[ri];
    let label = format!(
        "{} on {} emulating {} (run {}/{})",
        p.name,
        reference.name(),
        er.stack,
        k + 1,
        a.repeat
    );
    let dir = root
        .join(&p.name)
        .join(reference.name())
        .join(format!("emulate-{}", er.stack))
        .join(format!("run-{k}"));
    let emu_dir = dir.join(".emulate");
    let (knobs, command) = (er.knobs, &er.command);
    let r = steps.step(
        &label,
        || -> Result<((f64, f64), app::RunResult, Option<f64>)> {
            let _ = std::fs::remove_dir_all(&emu_dir);
            std::fs::create_dir_all(&emu_dir)
                .with_context(|| format!("cannot create {}", emu_dir.display()))?;
            let vars = [
                (
                    "COMMPERF_EMULATE".to_string(),
                    crate::emulate_mpi::env_value(&knobs),
                ),
                (
                    "COMMPERF_EMULATE_DIR".to_string(),
                    emu_dir.display().to_string(),
                ),
                (
                    "COMMPERF_EMULATE_COLL".to_string(),
                    crate::emulate_mpi::Collectives::P2p.env_value().to_string(),
                ),
            ];
            let run = app::monitored_run(
                command,
                a.np,
                &dir,
                Duration::from_secs(a.timeout),
                &vars,
                false,
                &app::Verdict {
                    judge: &p.judge,
                    files: &p.output_files(root, reference),
                },
            )?;
            let untouched = if knobs.is_zero() {
                None
            } else {
                crate::emulate_mpi::Untouched::read(&emu_dir)
                    .ok()
                    .map(|u| u.untouched_calls_percent)
            };
            Ok((
                measured(std::slice::from_ref(&dir), p.is_kit())?,
                run,
                untouched,
            ))
        },
    );
    let _ = std::fs::remove_dir_all(&emu_dir);
    er.e.monitor_dirs.push(dir);
    match r {
        Ok(((t, comm), run, untouched)) => {
            er.totals.push(t);
            er.comms.push(comm);
            er.programs.extend(run.program_s);
            er.e.run_states_ns.push(run.state_ns);
            er.e.untouched_calls_percent = er.e.untouched_calls_percent.or(untouched);
        }
        // The later rounds count their step without running.
        Err(err) => er.e.error = Some(format!("run {}: {err:#}", k + 1)),
    }
}

/// The loop's section from the study's runs (`cells`), the parameters and the emulated runs
/// (`emulations[i]`: program i's).
pub(crate) fn finish(
    cfg: &Config,
    cells: &[Cell],
    m: Measured,
    emulations: Vec<Vec<EmuRuns>>,
) -> Loop {
    let Measured {
        stacks,
        reference: ref_idx,
    } = m;
    let reference_rule = match ref_idx {
        Some(i) => {
            let list: Vec<String> = stacks
                .iter()
                .filter_map(|s| {
                    Some(format!(
                        "{} {:.2} µs",
                        s.stack,
                        s.params.as_ref()?.small_message_ns / 1e3
                    ))
                })
                .collect();
            format!(
                "{}: the least small-message cost o_s + L + o_r ({})",
                stacks[i].stack,
                list.join(", ")
            )
        }
        None => "none: no stack has LogGP parameters".into(),
    };
    // Every run's and bench round's state: the study's usual one is their median.
    let usual = median(
        &cells
            .iter()
            .flat_map(|c| &c.run_states_ns)
            .chain(emulations.iter().flatten().flat_map(|e| &e.e.run_states_ns))
            .copied()
            .chain(stacks.iter().map(|s| s.state_ns))
            .flatten()
            .collect::<Vec<f64>>(),
    );
    let mut out = Vec::new();
    let mut emulations = emulations.into_iter();
    for p in &cfg.programs {
        let mut emus = emulations.next().unwrap_or_default();
        let cell_of = |st: &str| cells.iter().find(|c| c.program == p.name && c.stack == st);
        let workload = match ref_idx {
            None => Err(anyhow::anyhow!("no stack has LogGP parameters")),
            Some(i) => cell_of(&stacks[i].stack)
                .context("no run on the reference stack")
                .and_then(|c| reference_workload(c, p.is_kit())),
        };
        for (si, &s) in cfg.stacks.iter().enumerate() {
            let st = &stacks[si];
            let c = cell_of(&s.name());
            let mut lc = LoopCell {
                program: p.name.clone(),
                stack: s.name(),
                error: None,
                window_from: None,
                measured_total_s: None,
                measured_comm_s: None,
                measured_program_s: c.and_then(|c| c.time_s),
                trace: None,
                piece_from_bytes: None,
                piece_to_bytes: None,
                predicted_total_s: None,
                predicted_comm_s: None,
                total_error_percent: None,
                comm_error_percent: None,
                emulation: None,
                other_state: Vec::new(),
                trace_left_out_calls: None,
                trace_summary: None,
                comm_misses: Vec::new(),
                ..LoopCell::default()
            };
            if let Some(u) = usual {
                let reference = ref_idx.map(|i| &stacks[i]);
                let mut off = Vec::new();
                off.extend(runs_off(
                    "its runs",
                    c.map_or(&[][..], |c| &c.run_states_ns),
                    u,
                ));
                if let Some(r) = reference.filter(|r| r.stack != st.stack) {
                    let runs = cell_of(&r.stack).map_or(&[][..], |c| &c.run_states_ns);
                    off.extend(runs_off("the reference's runs", runs, u));
                }
                for b in std::iter::once(st).chain(reference.filter(|r| r.stack != st.stack)) {
                    if !same_state(b.state_ns, Some(u)) {
                        off.push(format!(
                            "the bench of {} ({})",
                            b.stack,
                            state_name(b.state_ns)
                        ));
                    }
                }
                lc.other_state = off;
            }
            let mut why: Vec<String> = Vec::new();
            match c {
                Some(Cell { error: Some(e), .. }) => why.push(format!("the run failed: {e}")),
                Some(c) => match measured(&c.monitor_dirs, p.is_kit()) {
                    Ok((t, m)) => {
                        lc.measured_total_s = Some(t);
                        lc.measured_comm_s = Some(m);
                    }
                    Err(e) => why.push(format!("{e:#}")),
                },
                None => why.push("no run".into()),
            }
            match (&workload, &st.params) {
                (Err(e), _) => why.push(format!("no trace: {e:#}")),
                (_, None) => why.push(format!(
                    "no LogGP parameters: {}",
                    st.error.as_deref().unwrap_or("unknown")
                )),
                (Ok((w, from_barrier, trace, stats)), Some(first)) => {
                    lc.trace_left_out_calls = Some(stats.left_out());
                    lc.trace_summary = Some(stats.describe());
                    // The piece covering the program's median message: a program of 8 KiB
                    // blocks priced by the 8 B – 4 KiB piece missed by up to 67 % on a stack
                    // whose protocol switches between.
                    let size = crate::emulate_sweep::median_send_bytes(w);
                    let params = piece_for(st, size).unwrap_or(first);
                    lc.piece_from_bytes = params.piece_from_bytes;
                    lc.piece_to_bytes = params.piece_to_bytes;
                    lc.bytes_above_piece_percent = params
                        .piece_to_bytes
                        .and_then(|top| crate::emulate_sweep::send_bytes_above_percent(w, top));
                    // A message to oneself takes the MPI library's in-memory path on every
                    // stack: it costs what the reference's overheads are, not a TCP stack's
                    // kernel send path (halo's two self messages an iteration on 2 ranks were
                    // charged ompi-tcp's o_s of 4.9 µs each, +62 to +75 %).
                    let own = ref_idx
                        .and_then(|i| piece_for(&stacks[i], size))
                        .unwrap_or(params);
                    match predict(w, params, own) {
                        Ok((t, m)) => {
                            lc.window_from =
                                Some(if *from_barrier { "barrier" } else { "init" }.into());
                            lc.trace = Some(trace.clone());
                            lc.predicted_total_s = Some(t);
                            lc.predicted_comm_s = Some(m);
                            lc.total_error_percent =
                                lc.measured_total_s.and_then(|x| error_percent(t, x));
                            lc.comm_error_percent =
                                lc.measured_comm_s.and_then(|x| error_percent(m, x));
                        }
                        Err(e) => why.push(format!("{e:#}")),
                    }
                }
            }
            if let Some(i) = emus.iter().position(|e| e.stack == s.name()) {
                let er = emus.swap_remove(i);
                let mut e = er.e;
                if e.error.is_none() {
                    e.total_s = median(&er.totals);
                    e.program_s = median(&er.programs);
                    e.total_error_percent = e
                        .total_s
                        .zip(lc.measured_total_s)
                        .and_then(|(x, m)| error_percent(x, m));
                    e.program_error_percent = e
                        .program_s
                        .zip(lc.measured_program_s)
                        .and_then(|(x, m)| error_percent(x, m));
                    e.comm_s = median(&er.comms);
                    e.comm_error_percent = e
                        .comm_s
                        .zip(lc.measured_comm_s)
                        .and_then(|(x, m)| error_percent(x, m));
                }
                if let Some(u) = usual {
                    lc.other_state
                        .extend(runs_off(EMULATED_RUNS, &e.run_states_ns, u));
                }
                lc.emulation = Some(e);
            }
            if !why.is_empty() {
                lc.error = Some(why.join("; "));
            }
            lc.comm_misses = miss_causes(&lc);
            out.push(lc);
        }
    }
    tally(Loop {
        reference: ref_idx.map(|i| stacks[i].stack.clone()),
        reference_rule,
        loggp_sizes: LOGGP_SIZES.into(),
        loggp_iters: LOGGP_ITERS,
        eager_threshold_bytes: EAGER_BYTES,
        stacks,
        cells: out,
        predictions_within_10_percent: 0,
        predictions: 0,
        emulations_within_10_percent: 0,
        emulations: 0,
        usual_state_ns: usual,
        predictions_within_10_percent_usual: 0,
        predictions_usual: 0,
        emulations_within_10_percent_usual: 0,
        emulations_usual: 0,
        comm_predictions_within_10_percent: 0,
        comm_predictions: 0,
        comm_emulations_within_10_percent: 0,
        comm_emulations: 0,
        comm_predictions_within_10_percent_usual: 0,
        comm_predictions_usual: 0,
        comm_emulations_within_10_percent_usual: 0,
        comm_emulations_usual: 0,
    })
}

/// The communication times of `c` off by more than [`GOAL_PERCENT`], each with what the study's
/// own figures say about it: calls the trace left out (their time is measured, never
/// replayed), figures from another state of the machine, knobs that could not be set (a
/// parameter of this stack below the reference's) or collectives the knobs did not reach.
/// "nothing the study measured explains it" when none applies: a miss is never left bare. A
/// figure named is a candidate, not a proof (a G clamped at 0 weighs little on 32 B messages).
pub fn miss_causes(c: &LoopCell) -> Vec<String> {
    let off = |e: Option<f64>| e.filter(|e| e.abs() > GOAL_PERCENT);
    let state = (!c.other_state.is_empty())
        .then(|| "figures from another state of the machine (~)".to_string());
    let left_out = c
        .trace_left_out_calls
        .filter(|n| *n > 0)
        .map(|n| format!("the trace left out {n} calls"));
    let mut out = Vec::new();
    let mut say = |what: &str, err: f64, mut causes: Vec<String>| {
        if causes.is_empty() {
            causes.push("nothing the study measured explains it".into());
        }
        out.push(format!(
            "{what} {err:+.1} %; may explain it: {}",
            causes.join("; ")
        ));
    };
    // A tenth of the bytes beyond the piece's sizes is where its G decides the replay.
    let above = c
        .bytes_above_piece_percent
        .filter(|p| *p >= 10.0)
        .zip(c.piece_to_bytes)
        .map(|(p, top)| {
            format!(
                "{p:.0} % of the bytes in messages above the sizes of the piece the replay took \
                 (up to {top} B), priced at its G"
            )
        });
    if let Some(err) = off(c.comm_error_percent) {
        say(
            "predicted communication",
            err,
            left_out
                .iter()
                .chain(&above)
                .chain(&state)
                .cloned()
                .collect(),
        );
    }
    if let Some(e) = &c.emulation {
        if let Some(err) = off(e.comm_error_percent) {
            let mut causes: Vec<String> = state.iter().cloned().collect();
            if !e.clamped.is_empty() {
                causes.push(format!(
                    "knobs clamped at 0 (this stack is faster in {})",
                    e.clamped.join(", ")
                ));
            }
            if let Some(u) = e.untouched_calls_percent.filter(|u| *u > 0.0) {
                causes.push(format!(
                    "{u:.0} % of the collective calls untouched by the knobs"
                ));
            }
            say("emulated communication", err, causes);
        }
    }
    out
}

/// How [`LoopCell::other_state`] names the emulation's own runs.
const EMULATED_RUNS: &str = "emulated runs";

/// A state in words: its ns, or that it changed during the run.
fn state_name(s: Option<f64>) -> String {
    s.map_or_else(|| "changing".into(), |x| format!("{x:.0} ns"))
}

/// `what` when most of `runs` (so their median) are in another state than `usual`, or changed
/// during the run; None when most are in it.
fn runs_off(what: &str, runs: &[Option<f64>], usual: f64) -> Option<String> {
    let off: Vec<String> = runs
        .iter()
        .filter(|s| !same_state(**s, Some(usual)))
        .map(|s| state_name(*s))
        .collect();
    (!runs.is_empty() && 2 * off.len() > runs.len()).then(|| {
        format!(
            "{what}: {} of {} in another state ({})",
            off.len(),
            runs.len(),
            off.join(", ")
        )
    })
}

/// Fills in the counts of predictions and emulations within the goal's 10 %, of all cells
/// and of those whose figures are all from the machine's usual state (the emulated runs count
/// for the emulation only).
pub fn tally(mut l: Loop) -> Loop {
    let count = |errors: Vec<f64>| {
        let within = errors.iter().filter(|e| e.abs() <= GOAL_PERCENT).count();
        (within, errors.len())
    };
    let usual_runs = |c: &&LoopCell| c.other_state.iter().all(|w| w.starts_with(EMULATED_RUNS));
    let usual = |c: &&LoopCell| c.other_state.is_empty();
    let cells = &l.cells;
    // (predictions, emulations, the same in the usual state) for one of the two times.
    let counts = |pred: fn(&LoopCell) -> Option<f64>, emu: fn(&Emulation) -> Option<f64>| {
        let emu = |c: &LoopCell| c.emulation.as_ref().and_then(emu);
        (
            count(cells.iter().filter_map(pred).collect()),
            count(cells.iter().filter_map(emu).collect()),
            count(cells.iter().filter(usual_runs).filter_map(pred).collect()),
            count(cells.iter().filter(usual).filter_map(emu).collect()),
        )
    };
    let total = counts(|c| c.total_error_percent, |e| e.total_error_percent);
    let comm = counts(|c| c.comm_error_percent, |e| e.comm_error_percent);
    (l.predictions_within_10_percent, l.predictions) = total.0;
    (l.emulations_within_10_percent, l.emulations) = total.1;
    (l.predictions_within_10_percent_usual, l.predictions_usual) = total.2;
    (l.emulations_within_10_percent_usual, l.emulations_usual) = total.3;
    (l.comm_predictions_within_10_percent, l.comm_predictions) = comm.0;
    (l.comm_emulations_within_10_percent, l.comm_emulations) = comm.1;
    (
        l.comm_predictions_within_10_percent_usual,
        l.comm_predictions_usual,
    ) = comm.2;
    (
        l.comm_emulations_within_10_percent_usual,
        l.comm_emulations_usual,
    ) = comm.3;
    l
}

fn ms(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |x| format!("{:.3}", x * 1e3))
}

fn pct(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |x| format!("{x:+.1}%"))
}

/// The loop's table: per program and stack, measured, predicted and emulated times.
pub fn render(l: &Loop) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "\n# the loop: predicted (LogGP replay of the reference's monitored trace) and emulated \
         (the reference under the knobs) against measured; times in ms, from the barrier before the timed loop (the kit; other programs: from MPI_Init) to the last MPI call"
    );
    let _ = writeln!(o, "reference stack: {}", l.reference_rule);
    let _ = writeln!(
        o,
        "{:<10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}  LogGP: `bench loggp --transport mpi`, per protocol piece",
        "stack", "L ns", "o_s ns", "o_r ns", "g ns", "G ns/B", "O ns/B", "over. ns", "wait ns", "dupl. ns"
    );
    for s in &l.stacks {
        match (&s.params, &s.error) {
            (Some(first), _) => {
                let pieces = if s.pieces.is_empty() {
                    std::slice::from_ref(first)
                } else {
                    &s.pieces[..]
                };
                for p in pieces {
                    let _ = writeln!(
                        o,
                        "{:<10} {:>9.0} {:>9.0} {:>9.0} {:>9.0} {:>9.4} {:>9.4} {:>9.0} {:>9.0} {:>9.0}  (sizes {}..{} B)",
                        s.stack,
                        p.L_ns,
                        p.o_s_ns,
                        p.o_r_ns,
                        p.g_ns,
                        p.G_ns_per_byte,
                        p.O_ns_per_byte,
                        p.overlap_ns,
                        p.send_wait_ns,
                        p.duplex_ns,
                        p.piece_from_bytes.unwrap_or(0),
                        p.piece_to_bytes.unwrap_or(0)
                    );
                }
            }
            (None, e) => {
                let _ = writeln!(
                    o,
                    "{:<10} no parameters: {}",
                    s.stack,
                    e.as_deref().unwrap_or("")
                );
            }
        }
    }
    let _ = writeln!(
        o,
        "{:<12} {:<10} {:>10} {:>10} {:>8} {:>10} {:>10} {:>8} {:>10} {:>8} {:>10} {:>8} {:>10} {:>10} {:>8}  knobs",
        "program",
        "stack",
        "total",
        "predicted",
        "err",
        "comm",
        "predicted",
        "err",
        "emulated",
        "err",
        "emulated",
        "err",
        "program",
        "emulated",
        "err"
    );
    for c in &l.cells {
        let e = c.emulation.as_ref();
        let knobs = match e {
            None => "reference".to_string(),
            Some(e) => format!(
                "o {:.0} g {:.0} L {:.0} ns, G {:.4} ns/B{}",
                e.o_ns,
                e.g_ns,
                e.L_ns,
                e.G_ns_per_byte,
                if e.clamped.is_empty() {
                    String::new()
                } else {
                    format!(" (clamped: {})", e.clamped.join(", "))
                }
            ),
        };
        let _ = writeln!(
            o,
            "{:<12} {:<10} {:>10} {:>10} {:>8} {:>10} {:>10} {:>8} {:>10} {:>8} {:>10} {:>8} {:>10} {:>10} {:>8}  {knobs}{}",
            c.program,
            c.stack,
            ms(c.measured_total_s),
            ms(c.predicted_total_s),
            pct(c.total_error_percent),
            ms(c.measured_comm_s),
            ms(c.predicted_comm_s),
            pct(c.comm_error_percent),
            ms(e.and_then(|e| e.comm_s)),
            pct(e.and_then(|e| e.comm_error_percent)),
            ms(e.and_then(|e| e.total_s)),
            pct(e.and_then(|e| e.total_error_percent)),
            ms(c.measured_program_s),
            ms(e.and_then(|e| e.program_s)),
            pct(e.and_then(|e| e.program_error_percent)),
            if c.other_state.is_empty() { "" } else { " ~" },
        );
    }
    for c in &l.cells {
        if let Some(e) = &c.error {
            let _ = writeln!(o, "{} on {}: {e}", c.program, c.stack);
        }
        if let Some(e) = c.emulation.as_ref().and_then(|e| e.error.as_ref()) {
            let _ = writeln!(o, "{} emulating {}: {e}", c.program, c.stack);
        }
        // Say where a replay took another piece than the table's first.
        let first = l
            .stacks
            .iter()
            .find(|s| s.stack == c.stack)
            .and_then(|s| s.params.as_ref())
            .map(|p| (p.piece_from_bytes, p.piece_to_bytes));
        if let (Some(lo), Some(hi)) = (c.piece_from_bytes, c.piece_to_bytes) {
            if first.is_some_and(|f| f != (Some(lo), Some(hi))) {
                let _ = writeln!(
                    o,
                    "{} on {}: replayed with the {lo}–{hi} B piece (its median message's)",
                    c.program, c.stack
                );
            }
        }
    }
    for s in &l.stacks {
        for n in &s.notes {
            let _ = writeln!(o, "LogGP of {}: {n}", s.stack);
        }
    }
    for c in l.cells.iter().filter(|c| !c.other_state.is_empty()) {
        let _ = writeln!(
            o,
            "~ {} on {}: {}",
            c.program,
            c.stack,
            c.other_state.join("; ")
        );
    }
    for c in &l.cells {
        for m in &c.comm_misses {
            let _ = writeln!(o, "miss: {} on {}: {m}", c.program, c.stack);
        }
    }
    let _ = writeln!(
        o,
        "within {GOAL_PERCENT} %: {} of {} predictions (total), {} of {} emulations (total){}",
        l.predictions_within_10_percent,
        l.predictions,
        l.emulations_within_10_percent,
        l.emulations,
        usual_counts(l)
    );
    let _ = writeln!(
        o,
        "within {GOAL_PERCENT} % on communication time (inside MPI calls): {} of {} predictions, {} of {} emulations{}",
        l.comm_predictions_within_10_percent,
        l.comm_predictions,
        l.comm_emulations_within_10_percent,
        l.comm_emulations,
        usual_comm_counts(l)
    );
    o
}

/// [`usual_counts`] on the communication time.
pub(crate) fn usual_comm_counts(l: &Loop) -> String {
    match l.usual_state_ns {
        Some(_) if l.cells.iter().any(|c| !c.other_state.is_empty()) => format!(
            "; in the machine's usual state: {} of {} predictions, {} of {} emulations",
            l.comm_predictions_within_10_percent_usual,
            l.comm_predictions_usual,
            l.comm_emulations_within_10_percent_usual,
            l.comm_emulations_usual
        ),
        _ => String::new(),
    }
}

/// The counts over the cells in the machine's usual state, where a cell is in another.
pub(crate) fn usual_counts(l: &Loop) -> String {
    match l.usual_state_ns {
        Some(u) if l.cells.iter().any(|c| !c.other_state.is_empty()) => format!(
            "; in the machine's usual state (a cache line crosses between the ranks' CPUs in \
             {u:.0} ns; the cells not marked ~): {} of {} predictions, {} of {} emulations",
            l.predictions_within_10_percent_usual,
            l.predictions_usual,
            l.emulations_within_10_percent_usual,
            l.emulations_usual
        ),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(l: f64, o_s: f64, o_r: f64, g: f64, big_g: f64) -> Params {
        Params {
            L_ns: l,
            o_s_ns: o_s,
            o_r_ns: o_r,
            g_ns: g,
            G_ns_per_byte: big_g,
            O_ns_per_byte: 0.0,
            piece_from_bytes: None,
            piece_to_bytes: None,
            small_message_ns: o_s + l + o_r,
            overlap_ns: 0.0,
            send_wait_ns: 0.0,
            duplex_ns: 0.0,
        }
    }

    fn stack(name: &str, p: Option<Params>) -> LoopStack {
        LoopStack {
            stack: name.into(),
            error: p.is_none().then(|| "no commperf linking MPICH".to_string()),
            notes: Vec::new(),
            file: None,
            params: p,
            pieces: Vec::new(),
            ladder_us: None,
            state_ns: None,
        }
    }

    #[test]
    fn the_reference_is_the_least_small_message_cost() {
        let s = vec![
            stack("ompi-tcp", Some(params(9000.0, 1000.0, 1000.0, 500.0, 0.1))),
            stack("mpich-shm", None),
            // 150 + 200 + 150 = 500 ns, the least; mpich-tcp's 700 ns, ompi-tcp's 11 µs.
            stack("ompi-shm", Some(params(200.0, 150.0, 150.0, 90.0, 0.05))),
            stack("mpich-tcp", Some(params(100.0, 300.0, 300.0, 90.0, 0.05))),
        ];
        assert_eq!(reference(&s), Some(2));
        assert_eq!(reference(&s[..2]), Some(0));
        assert_eq!(reference(&s[1..2]), None);
    }

    #[test]
    fn the_round_kept_is_the_least_of_those_with_parameters() {
        let p = |small: f64| {
            let mut x = params(0.0, small / 2.0, small / 2.0, 90.0, 0.05);
            x.small_message_ns = small;
            x
        };
        let f = Path::new("/nonexistent/loggp-x.json");
        // 300, 900, 100 ns: the least is round 3's; the note lists every round.
        let runs = vec![
            stack("x", Some(p(300.0))),
            stack("x", Some(p(900.0))),
            stack("x", Some(p(100.0))),
        ];
        let st = least_round(runs, f).unwrap();
        assert_eq!(st.params.unwrap().small_message_ns, 100.0);
        assert_eq!(
            st.notes[0],
            "round 3 of 3: the least one-way time over the sizes (geometric mean) of the rounds with parameters (µs, by round: 0.300, 0.900, 0.100)"
        );
        // Where the ladder is known it decides: round 1's small messages are the quickest, its
        // ladder is not.
        let with = |small: f64, ladder: f64| LoopStack {
            ladder_us: Some(ladder),
            ..stack("x", Some(p(small)))
        };
        let runs = vec![with(100.0, 2.5), with(150.0, 1.2), with(140.0, 1.3)];
        let st = least_round(runs, f).unwrap();
        assert_eq!(st.params.unwrap().small_message_ns, 150.0);
        assert!(st.notes[0].ends_with("(µs, by round: 2.500, 1.200, 1.300)"));
        // A round without parameters does not count, however it would sort.
        let runs = vec![
            stack("x", Some(p(300.0))),
            stack("x", None),
            stack("x", Some(p(200.0))),
        ];
        assert_eq!(
            least_round(runs, f)
                .unwrap()
                .params
                .unwrap()
                .small_message_ns,
            200.0
        );
        // None with parameters: the first round, its error kept; no round: None.
        let mut failed = stack("x", None);
        failed.error = Some("first".into());
        let st = least_round(vec![failed, stack("x", None)], f).unwrap();
        assert_eq!(st.error.as_deref(), Some("first"));
        assert!(least_round(Vec::new(), f).is_none());
    }

    #[test]
    fn knobs_are_the_differences_with_negatives_clamped() {
        let fast = params(200.0, 150.0, 250.0, 90.0, 0.05);
        let slow = params(9200.0, 1150.0, 1050.0, 60.0, 0.30);
        let (k, clamped) = knob_deltas(&slow, &fast);
        // o: ((1150 − 150) + (1050 − 250)) / 2 = 900.
        assert_eq!(k.o_ns, 900.0);
        assert_eq!(k.l_ns, 9000.0);
        assert!((k.gap_per_byte_ns - 0.25).abs() < 1e-12);
        // g: 60 − 90 < 0 cannot be emulated.
        assert_eq!(k.g_ns, 0.0);
        assert_eq!(clamped, vec!["g -30.000 ns → 0".to_string()]);
        let (k, clamped) = knob_deltas(&fast, &fast);
        assert!(k.is_zero() && clamped.is_empty());
        // A ΔL below what L's side band costs is not emulated, and named; one above it is.
        let mut near = fast;
        near.L_ns += 5.0;
        let (k, clamped) = knob_deltas(&near, &fast);
        assert_eq!(k.l_ns, 0.0);
        assert_eq!(
            clamped,
            vec![
                "L +5.000 ns → 0 (less than the ≈150 ns a message L's side band costs)".to_string()
            ]
        );
        near.L_ns = fast.L_ns + L_SIDE_BAND_NS;
        assert_eq!(knob_deltas(&near, &fast).0.l_ns, L_SIDE_BAND_NS);
    }

    #[test]
    fn spans_and_time_in_mpi_per_rank() {
        // Rank 0 ran 2 ms and computed 1.5 ms; rank 1 ran 3 ms and computed 1 ms.
        let (t, c) = measured_times(&[2_000_000, 3_000_000], &[1_500_000, 1_000_000]).unwrap();
        assert!((t - 0.003).abs() < 1e-15, "{t}");
        assert!((c - 0.00125).abs() < 1e-15, "{c}");
        assert_eq!(measured_times(&[], &[]), None);
        assert_eq!(measured_times(&[1], &[]), None);
        assert_eq!(
            error_percent(1.1, 1.0).map(|e| (e * 1e9).round()),
            Some(1e10)
        );
        assert_eq!(error_percent(1.0, 0.0), None);
    }

    fn cell(stack: &str, total_err: Option<f64>, emu_err: Option<f64>) -> LoopCell {
        LoopCell {
            program: "halo".into(),
            stack: stack.into(),
            error: None,
            window_from: Some("barrier".into()),
            measured_total_s: Some(1.0),
            measured_comm_s: Some(0.5),
            measured_program_s: Some(0.9),
            trace: None,
            piece_from_bytes: None,
            piece_to_bytes: None,
            predicted_total_s: total_err.map(|e| 1.0 + e / 100.0),
            predicted_comm_s: None,
            total_error_percent: total_err,
            comm_error_percent: None,
            emulation: emu_err.map(|e| Emulation {
                o_ns: 1.0,
                g_ns: 0.0,
                G_ns_per_byte: 0.0,
                L_ns: 0.0,
                clamped: Vec::new(),
                error: None,
                total_s: Some(1.0 + e / 100.0),
                program_s: None,
                total_error_percent: Some(e),
                program_error_percent: None,
                untouched_calls_percent: None,
                monitor_dirs: Vec::new(),
                run_states_ns: Vec::new(),
                ..Default::default()
            }),
            other_state: Vec::new(),
            ..Default::default()
        }
    }

    #[test]
    fn runs_are_off_the_usual_state_when_most_are_in_another_or_changed() {
        let fast = Some(31.0);
        // Two of five slow: the median run is a fast one.
        let runs = [fast, Some(32.0), Some(165.0), Some(160.0), fast];
        assert_eq!(runs_off("its runs", &runs, 31.0), None);
        // Three of five off, one of them across a change of state (no reading).
        let runs = [fast, Some(165.0), None, Some(160.0), Some(33.0)];
        assert_eq!(
            runs_off("its runs", &runs, 31.0).as_deref(),
            Some("its runs: 3 of 5 in another state (165 ns, changing, 160 ns)")
        );
        // Within the factor of 1.5 is the same state (14 ns, the two threads of one core, is not).
        assert_eq!(
            runs_off("r", &[Some(45.0), Some(22.0), Some(40.0)], 31.0),
            None
        );
        assert!(runs_off("r", &[Some(14.0)], 31.0).is_some());
        assert_eq!(runs_off("r", &[], 31.0), None);
    }

    #[test]
    fn the_tally_counts_errors_within_ten_percent_and_the_json_round_trips() {
        let l = tally(Loop {
            reference: Some("ompi-shm".into()),
            reference_rule: "r".into(),
            loggp_sizes: LOGGP_SIZES.into(),
            loggp_iters: LOGGP_ITERS,
            eager_threshold_bytes: EAGER_BYTES,
            stacks: vec![stack("ompi-shm", Some(params(1.0, 1.0, 1.0, 1.0, 0.1)))],
            cells: vec![
                cell("ompi-shm", Some(-3.0), None),
                cell("ompi-tcp", Some(12.5), Some(-10.0)),
                cell("mpich-shm", None, Some(10.01)),
                cell("mpich-tcp", Some(10.0), Some(2.0)),
            ],
            predictions_within_10_percent: 99,
            predictions: 99,
            emulations_within_10_percent: 99,
            emulations: 99,
            usual_state_ns: None,
            predictions_within_10_percent_usual: 0,
            predictions_usual: 0,
            emulations_within_10_percent_usual: 0,
            emulations_usual: 0,
            ..Default::default()
        });
        assert_eq!((l.predictions_within_10_percent, l.predictions), (2, 3));
        assert_eq!((l.emulations_within_10_percent, l.emulations), (2, 3));
        // Nothing in another state of the machine: the table says nothing of it.
        assert!(!render(&l).contains("usual state"));
        // mpich-tcp's runs in another state: its prediction and emulation leave the usual
        // counts; mpich-shm's emulated runs only: its emulation does.
        let mut l = l;
        l.usual_state_ns = Some(31.0);
        l.cells[3].other_state = vec!["its runs: 3 of 5 in another state (165 ns)".into()];
        l.cells[2].other_state = vec!["emulated runs: 2 of 3 in another state".into()];
        let l = tally(l);
        assert_eq!(
            (l.predictions_within_10_percent_usual, l.predictions_usual),
            (1, 2)
        );
        assert_eq!(
            (l.emulations_within_10_percent_usual, l.emulations_usual),
            (1, 1)
        );
        let t = render(&l);
        assert!(
            t.contains("~ halo on mpich-tcp: its runs: 3 of 5 in another state (165 ns)"),
            "{t}"
        );
        assert!(
            t.contains("in 31 ns; the cells not marked ~): 1 of 2 predictions, 1 of 1 emulations"),
            "{t}"
        );
        assert_eq!(t.lines().filter(|l| l.ends_with(" ~")).count(), 2, "{t}");
        // A replay that took another piece than the stack's first is named under the table.
        let mut l = l;
        let mut first = params(1.0, 1.0, 1.0, 1.0, 0.1);
        (first.piece_from_bytes, first.piece_to_bytes) = (Some(8), Some(4096));
        let mut second = first;
        (second.piece_from_bytes, second.piece_to_bytes) = (Some(8192), Some(32768));
        l.stacks[0].params = Some(first);
        l.stacks[0].pieces = vec![first, second];
        (l.cells[0].piece_from_bytes, l.cells[0].piece_to_bytes) = (Some(8192), Some(32768));
        let t = render(&l);
        assert!(t.contains("+12.5%"), "{t}");
        assert!(
            t.contains("within 10 %: 2 of 3 predictions (total), 2 of 3 emulations"),
            "{t}"
        );
        assert!(
            t.contains("halo on ompi-shm: replayed with the 8192–32768 B piece"),
            "{t}"
        );
        assert_eq!(t.matches("(sizes 8192..32768 B)").count(), 1, "{t}");
        let j = serde_json::to_value(&l).unwrap();
        assert_eq!(j["cells"][1]["emulation"]["total_error_percent"], -10.0);
        assert_eq!(j["stacks"][0]["params"]["G_ns_per_byte"], 0.1);
        let back: Loop = serde_json::from_value(j.clone()).unwrap();
        assert_eq!(serde_json::to_value(&back).unwrap(), j);
    }

    fn rank(rank: u32, calls: &[(commperf_pmpi::Call, u64, u64)]) -> commperf_pmpi::RankData {
        use commperf_pmpi::format::{Footer, Header};
        commperf_pmpi::RankData {
            path: PathBuf::from(format!("rank-{rank}.cpmpi")),
            header: Header {
                format: "commperf-pmpi".into(),
                version: 2,
                rank,
                size: 2,
                pid: 1,
                host: "h".into(),
                mpi_flavour: "openmpi".into(),
                mpi_library: "Open MPI".into(),
                program_tag: String::new(),
                clock: "tsc".into(),
                start_ns: 1_000,
                empty_wrappers: false,
            },
            clocks: Vec::new(),
            events: calls
                .iter()
                .map(|&(call, enter, exit)| commperf_pmpi::Event {
                    call,
                    fortran: false,
                    any_source: false,
                    persistent: false,
                    partitioned: false,
                    synchronous: false,
                    peer: -1,
                    tag: 0,
                    comm: 0,
                    bytes: 0,
                    post_enter: enter,
                    post_exit: exit,
                    done_enter: 0,
                    done_exit: 0,
                    thread: 0,
                })
                .collect(),
            drops: 0,
            footer: Some(Footer {
                events: calls.len() as u64,
                drops: 0,
                pending_requests: 0,
                end_ns: 99_000,
            }),
            comms: Vec::new(),
            functions: Vec::new(),
            sites: Default::default(),
            neighbors: Vec::new(),
            neighbor_counts: Vec::new(),
        }
    }

    #[test]
    fn the_window_starts_where_each_ranks_last_barrier_ends() {
        use commperf_pmpi::Call::{Allreduce, Barrier, Recv, Send};
        let mut run = commperf_pmpi::Run::new(
            PathBuf::new(),
            vec![
                rank(
                    0,
                    &[
                        (Allreduce, 2_000, 2_500),
                        (Barrier, 3_000, 4_000),
                        (Send, 5_000, 5_100),
                        (Barrier, 6_000, 7_000),
                        (Send, 8_000, 8_100),
                    ],
                ),
                rank(1, &[(Barrier, 6_500, 7_200), (Recv, 7_300, 8_200)]),
            ],
        );
        assert!(window(&mut run));
        assert_eq!(run.ranks[0].header.start_ns, 7_000);
        assert_eq!(run.ranks[1].header.start_ns, 7_200);
        assert_eq!(run.ranks[0].events.len(), 1);
        assert_eq!(run.ranks[0].events[0].call, Send);
        assert_eq!(run.ranks[1].events[0].call, Recv);
        // A rank without a barrier: the whole run, untouched.
        let mut run = commperf_pmpi::Run::new(
            PathBuf::new(),
            vec![
                rank(0, &[(Barrier, 3_000, 4_000), (Send, 5_000, 5_100)]),
                rank(1, &[(Recv, 3_300, 5_200)]),
            ],
        );
        assert!(!window(&mut run));
        assert_eq!(run.ranks[0].header.start_ns, 1_000);
        assert_eq!(run.ranks[0].events.len(), 2);
    }

    #[test]
    fn bench_parameters_come_from_the_first_piece_in_ns() {
        let text = r#"{"schema_version": 2, "tool": "commperf 0.1.0", "started_unix_s": 1,
          "machine": {"hostname": "vm", "cpu_model": "AMD EPYC", "cores": 2, "kernel": "6",
            "timer": {"source": "tsc", "tsc_ghz": 2.6, "cost_ns": 9.5}},
          "options": {"benchmarks": ["loggp"], "transports": ["mpi"], "modes": ["poll"],
            "sizes_bytes": [8, 16384], "iterations": 5, "window": 64, "validate": false,
            "launcher": "mpi", "peer": "rank 1", "mpi_library": "Open MPI v4.1.4"},
          "placement": {"pinned": false, "local_cpu": 0, "peer_cpu": 1},
          "results": [
          {"benchmark": "loggp", "transport": "mpi", "mode": "poll", "size_bytes": 16384,
           "iterations": 5, "warmup": 1, "validated": true, "o_s_fixed_us": 9.0,
           "o_r_fixed_us": 9.0, "g_us": 9.0, "G_us_per_byte": 0.009, "L_us": 9.0},
          {"benchmark": "loggp", "transport": "mpi", "mode": "poll", "size_bytes": 8,
           "iterations": 5, "warmup": 1, "validated": true, "o_s_fixed_us": 0.25,
           "o_r_fixed_us": 0.5, "g_us": 0.125, "G_us_per_byte": 0.0001, "L_us": 1.0,
           "O_s_us_per_byte": 0.00002, "piece_from_bytes": 8, "piece_to_bytes": 4096}
        ]}"#;
        let (p, _) = params_from_bench(&bench_rows(text).unwrap()).unwrap();
        assert_eq!(
            (p.o_s_ns, p.o_r_ns, p.g_ns, p.L_ns),
            (250.0, 500.0, 125.0, 1000.0)
        );
        assert!((p.G_ns_per_byte - 0.1).abs() < 1e-12);
        assert!((p.O_ns_per_byte - 0.01).abs() < 1e-12);
        assert_eq!(p.small_message_ns, 1750.0);
        assert_eq!(p.piece_to_bytes, Some(4096));
        let no_l = text.replace("\"L_us\": 1.0,", "");
        let e = params_from_bench(&bench_rows(&no_l).unwrap())
            .unwrap_err()
            .to_string();
        assert!(e.contains("left L out at 8 B"), "{e}");
        // Every piece: the 16 KiB row's own (8 KiB – 1 MiB) beside the first.
        let two = text.replace(
            "\"L_us\": 9.0}",
            "\"L_us\": 9.0, \"piece_from_bytes\": 8192, \"piece_to_bytes\": 1048576}",
        );
        let pieces = pieces_from_bench(&bench_rows(&two).unwrap());
        assert_eq!(pieces.len(), 2);
        assert_eq!(pieces[0].o_s_ns, 250.0);
        assert_eq!(pieces[1].o_s_ns, 9000.0);
        // A program's median message takes the piece covering it, or the nearer on a log
        // scale: 6 KiB is 1.5× past 4 KiB and 1.33× short of 8 KiB.
        let at = |size| Params::covering(&pieces, size).unwrap().o_s_ns;
        assert_eq!(
            (at(8), at(4096), at(16384), at(1 << 30)),
            (250.0, 250.0, 9000.0, 9000.0)
        );
        assert_eq!((at(5000), at(6144)), (250.0, 9000.0));
    }

    #[test]
    fn communication_times_are_tallied_and_every_miss_names_its_causes() {
        let with_comm = |stack: &str, pred: Option<f64>, emu: Option<f64>| {
            let mut c = cell(stack, Some(0.0), emu.map(|_| 0.0));
            c.comm_error_percent = pred;
            if let Some(e) = c.emulation.as_mut() {
                e.comm_error_percent = emu;
            }
            c
        };
        let mut cells = vec![
            with_comm("ompi-shm", Some(-50.0), None),
            with_comm("ompi-tcp", Some(9.9), Some(43.0)),
            with_comm("mpich-shm", Some(10.0), Some(-10.5)),
            with_comm("mpich-tcp", None, Some(1.0)),
        ];
        // The reference's trace left out 16 calls; ompi-tcp's emulation had a knob clamped and
        // collectives the knobs did not reach; mpich-shm's miss has no cause in the figures.
        cells[0].trace_left_out_calls = Some(16);
        // ompi-shm's replay took the 8–256 B piece, 97 % of the bytes above it; mpich-shm's
        // 9 %, under the tenth that makes it a cause.
        cells[0].piece_to_bytes = Some(256);
        cells[0].bytes_above_piece_percent = Some(97.4);
        cells[2].piece_to_bytes = Some(256);
        cells[2].bytes_above_piece_percent = Some(9.0);
        let e = cells[1].emulation.as_mut().unwrap();
        e.clamped = vec!["L -150 ns → 0".into()];
        e.untouched_calls_percent = Some(25.0);
        cells[1].other_state = vec!["its runs: 3 of 5 in another state (165 ns)".into()];
        for c in &mut cells {
            c.comm_misses = miss_causes(c);
        }
        let l = tally(Loop {
            cells,
            usual_state_ns: Some(31.0),
            ..Default::default()
        });
        assert_eq!(
            (l.comm_predictions_within_10_percent, l.comm_predictions),
            (2, 3)
        );
        assert_eq!(
            (l.comm_emulations_within_10_percent, l.comm_emulations),
            (1, 3)
        );
        // ompi-tcp's figures are from another state: out of both usual counts.
        assert_eq!(
            (
                l.comm_predictions_within_10_percent_usual,
                l.comm_predictions_usual
            ),
            (1, 2)
        );
        assert_eq!(
            (
                l.comm_emulations_within_10_percent_usual,
                l.comm_emulations_usual
            ),
            (1, 2)
        );
        // The totals are counted apart (all 0 % here).
        assert_eq!((l.predictions_within_10_percent, l.predictions), (4, 4));
        assert_eq!(
            l.cells[0].comm_misses,
            ["predicted communication -50.0 %; may explain it: the trace left out 16 calls; 97 % \
              of the bytes in messages above the sizes of the piece the replay took (up to 256 B), \
              priced at its G"]
        );
        assert_eq!(
            l.cells[1].comm_misses,
            [
                "emulated communication +43.0 %; may explain it: figures from another state of the machine (~); \
              knobs clamped at 0 (this stack is faster in L -150 ns → 0); 25 % of the \
              collective calls untouched by the knobs"
            ]
        );
        assert_eq!(
            l.cells[2].comm_misses,
            ["emulated communication -10.5 %; may explain it: nothing the study measured explains it"]
        );
        assert!(l.cells[3].comm_misses.is_empty());
        let t = render(&l);
        assert!(
            t.contains("on communication time (inside MPI calls): 2 of 3 predictions, 1 of 3 emulations; in the machine's usual state: 1 of 2 predictions, 1 of 2 emulations"),
            "{t}"
        );
        assert!(
            t.contains("miss: halo on mpich-shm: emulated communication -10.5 %"),
            "{t}"
        );
        let back: Loop = serde_json::from_str(&serde_json::to_string(&l).unwrap()).unwrap();
        assert_eq!(back.cells[1].comm_misses, l.cells[1].comm_misses);
        assert_eq!(back.comm_emulations, 3);
    }
}
