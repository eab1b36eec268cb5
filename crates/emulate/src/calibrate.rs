//! Martin's (1999) calibration of the LogGP knobs on a real transport (`commperf emulate
//! calibrate`): [`CalibrateConfig`] says what to measure, [`calibrate`] measures and judges it
//! and returns a [`Calibration`] (JSON through serde, the table through
//! [`Calibration::render`]); [`peer`] is the other end of the pair.
//!
//! Why here and not in the binary: the measurement, the expectation LogGP gives for each
//! setting and the judging are what the knobs *are* checked by; they belong beside the knobs,
//! usable and tested without the command line, which only reads options, prints and writes.
//!
//! The model transport checks the knob arithmetic exactly (`cargo test -p commperf-emulate`);
//! this checks what a real transport makes of it, where the knobs sit on top of a transport's
//! own overlaps and noise. It starts a local peer process (the binary's hidden
//! `__emulate-peer` verb, which calls [`peer`]), sets each knob alone to each value on *both*
//! ends (the peer learns the knobs with each step), measures LogGP with the same PRTT loops and
//! fit `bench loggp` uses, and judges each setting by Martin's two criteria against a
//! knob-at-zero baseline measured in the same run, between the knobs, so slow drift of a shared
//! machine hits baseline and setting alike ([`judge`]).
//!
//! It also measures the decorator's cost with every knob at zero: ping-pong through `Emulated`
//! against the bare transport, alternating in rounds on the same connection.
//!
//! Progress lines go to stderr through [`commperf_launch::say`], the one writer of commperf's
//! stderr lines, as the other long-running verbs' do: a callback would add a parameter that
//! every caller fills with that same function.

mod judge;
pub mod mpi;
mod render;

use crate::{EmulateConfig, EmulateError, Emulated, Knob, Knobs};
use commperf_bench::loggp::{self, Prtt, SizePrtt};
use commperf_bench::{MAX_ITERS, MAX_SIZE};
use commperf_core::{Mode, TransportKind};
use commperf_launch::say;
use commperf_stats::median;
use commperf_transport::clock::{Clock, Timer};
use commperf_transport::launch::{self, AnyEndpoint, Control, DataSpec, LaunchError};
use commperf_transport::{with_endpoint, Endpoint, TransportError};
use judge::{
    expected_figures, judge, median_figures, same_state, unit, Fit, KnobVerdict, Params, Row,
    Trial, EXPECTED_TEXT, MAX_ATTEMPTS, OTHERS_TEXT, OWN_TEXT,
};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The binary's hidden verb that runs [`peer`]: [`calibrate`] starts the peer process with it.
pub const PEER_VERB: &str = "__emulate-peer";

/// Why a calibration is refused or stopped. The messages name the command line's options
/// (`--sizes`, `--iters`, `--knob`): the command line is where the values come from.
#[derive(Debug, thiserror::Error)]
pub enum CalibrateError {
    #[error("--transport model is the tests' in-process model (`cargo test -p commperf-emulate` checks the knobs on it exactly); pick shm, tcp, uds, uring-tcp or uring-uds")]
    ModelTransport,
    /// MPI is calibrated inside the interposer, under mpirun ([`crate::mpi`]), not here.
    #[error("--transport mpi is calibrated under mpirun, inside the interposer, not over a local pair; pick shm, tcp, uds, uring-tcp or uring-uds")]
    MpiTransport,
    #[error("--sizes: give 3 to 5 sizes (one protocol piece), not {0}")]
    SizeCount(usize),
    #[error(
        "--sizes: {0} bytes exceeds the largest supported message size, {MAX_SIZE} bytes (1G)"
    )]
    SizeTooLarge(u64),
    #[error("--iters must be at least 10 (the median and its noise need them)")]
    TooFewIters,
    #[error("--iters must be between 1 and {MAX_ITERS} (got {0})")]
    TooManyIters(u64),
    #[error("--repeat must be between 1 and 100 (got {0})")]
    Repeat(u32),
    #[error("--cost-iters must be at most {MAX_ITERS} (got {0})")]
    CostIters(u64),
    #[error(transparent)]
    Knob(#[from] EmulateError),
    #[error("--knob: every value is 0; give at least one value above zero to calibrate")]
    AllZero,
    #[error(transparent)]
    Launch(#[from] LaunchError),
    /// One fit failed; `what` says which (warm-up, baseline, or the knob and its value).
    #[error("{what}")]
    Fit {
        what: String,
        #[source]
        source: StepError,
    },
    #[error(transparent)]
    Step(#[from] StepError),
    /// The peer was asked for buffers beyond the largest message size.
    #[error("the client asked for {0} bytes of buffer, beyond the largest supported message size, {MAX_SIZE} bytes (1G)")]
    PeerBuffer(usize),
    #[error("stopped after a failed step")]
    PeerStopped,
}

/// One step of the measurement (a PRTT figure or a ping-pong block) that failed, on either end.
#[derive(Debug, thiserror::Error)]
pub enum StepError {
    #[error(transparent)]
    Launch(#[from] LaunchError),
    #[error(transparent)]
    Knobs(#[from] EmulateError),
    #[error(transparent)]
    Transport(#[from] TransportError),
    #[error("at iteration {iteration}")]
    Loop {
        iteration: u64,
        #[source]
        source: TransportError,
    },
    /// The peer's side of the step failed; its error, as it printed it.
    #[error("the peer: {0}")]
    Peer(String),
    #[error("the PRTT figures gave no LogGP fit")]
    NoFit,
    #[error(
        "emulate calibrate: no round trip was timed (rounds and iterations must be at least 1)"
    )]
    NoRoundTrip,
}

impl From<commperf_bench::patterns::LoopError> for StepError {
    fn from(e: commperf_bench::patterns::LoopError) -> Self {
        StepError::Loop {
            iteration: e.iteration,
            source: e.source,
        }
    }
}

/// A calibration's settings, validated: only [`CalibrateConfig::new`] makes one.
#[derive(Debug, Clone)]
pub struct CalibrateConfig {
    transport: TransportKind,
    mode: Mode,
    /// Sorted, distinct, 3 to 5 of them, each at most [`MAX_SIZE`].
    sizes: Vec<u64>,
    iters: u64,
    repeat: u32,
    cost_iters: u64,
    /// Each knob once, with its values above zero, sorted; at least one knob.
    knobs: Vec<(Knob, Vec<f64>)>,
}

/// The knobs calibrated when none is given: o=0,1,2,5us g=0,1,2,5us G=0,0.5 L=0,5,20us (ns,
/// G in ns per byte); the zeros are the baselines every run measures anyway.
fn default_knobs() -> Vec<(Knob, Vec<f64>)> {
    vec![
        (Knob::O, vec![0.0, 1000.0, 2000.0, 5000.0]),
        (Knob::LowerG, vec![0.0, 1000.0, 2000.0, 5000.0]),
        (Knob::UpperG, vec![0.0, 0.5]),
        (Knob::L, vec![0.0, 5000.0, 20000.0]),
    ]
}

impl CalibrateConfig {
    /// Checks the settings: a transport of a local pair (not model, not mpi), 3 to 5 sizes
    /// once sorted and deduplicated (one protocol piece), at least 10 timed repetitions, 1 to
    /// 100 rounds, and at least one knob value above zero (`knobs` empty: the defaults). A
    /// knob given twice: the later list wins, as with any repeated option; zeros are dropped
    /// (every setting is judged against baselines at zero anyway).
    pub fn new(
        transport: TransportKind,
        mode: Mode,
        sizes: &[u64],
        iters: u64,
        repeat: u32,
        cost_iters: u64,
        knobs: &[(Knob, Vec<f64>)],
    ) -> Result<Self, CalibrateError> {
        match transport {
            TransportKind::Model => return Err(CalibrateError::ModelTransport),
            TransportKind::Mpi => return Err(CalibrateError::MpiTransport),
            _ => {}
        }
        let mut sizes = sizes.to_vec();
        sizes.sort_unstable();
        sizes.dedup();
        // Three points at least for a line with a misfit; six or more let the fit split the
        // range into protocols, and a knob is judged against one piece.
        if !(3..=5).contains(&sizes.len()) {
            return Err(CalibrateError::SizeCount(sizes.len()));
        }
        if let Some(&big) = sizes.iter().find(|&&s| s > MAX_SIZE) {
            return Err(CalibrateError::SizeTooLarge(big));
        }
        if iters < 10 {
            return Err(CalibrateError::TooFewIters);
        }
        if iters > MAX_ITERS {
            return Err(CalibrateError::TooManyIters(iters));
        }
        if !(1..=100).contains(&repeat) {
            return Err(CalibrateError::Repeat(repeat));
        }
        if cost_iters > MAX_ITERS {
            return Err(CalibrateError::CostIters(cost_iters));
        }
        let knobs = Self::knobs_above_zero(if knobs.is_empty() {
            default_knobs()
        } else {
            knobs.to_vec()
        })?;
        Ok(CalibrateConfig {
            transport,
            mode,
            sizes,
            iters,
            repeat,
            cost_iters,
            knobs,
        })
    }

    /// Each knob's last list, its values checked, the zeros dropped, sorted and distinct.
    fn knobs_above_zero(
        given: Vec<(Knob, Vec<f64>)>,
    ) -> Result<Vec<(Knob, Vec<f64>)>, CalibrateError> {
        let mut knobs: Vec<(Knob, Vec<f64>)> = Vec::new();
        for (k, vals) in given {
            for &v in &vals {
                Knobs::only(k, v).validate()?;
            }
            let mut vals: Vec<f64> = vals.into_iter().filter(|v| *v > 0.0).collect();
            vals.sort_by(f64::total_cmp);
            vals.dedup();
            knobs.retain(|(kk, _)| *kk != k);
            if !vals.is_empty() {
                knobs.push((k, vals));
            }
        }
        if knobs.is_empty() {
            return Err(CalibrateError::AllZero);
        }
        Ok(knobs)
    }

    /// The largest message, which sizes both ends' buffers.
    fn max_size(&self) -> usize {
        // At most MAX_SIZE (1 GiB), checked in `new`.
        self.sizes.last().copied().unwrap_or(0) as usize
    }
}

/// The knobs-at-zero cost: ping-pong through `Emulated` against the bare transport.
#[derive(Debug, Clone, Serialize)]
struct ZeroCost {
    size_bytes: u64,
    rounds: u64,
    iterations: u64,
    bare_one_way_ns: f64,
    emulated_one_way_ns: f64,
    difference_ns: f64,
    difference_percent: f64,
    /// Goal: within 2 % or 10 ns, whichever is larger.
    within_goal: bool,
}

/// A calibration's result, as the JSON of `commperf emulate calibrate -o` has it
/// (`schema_version` 3) and as [`Calibration::render`] prints it.
#[derive(Debug, Serialize)]
pub struct Calibration {
    schema_version: u32,
    kind: &'static str,
    machine: commperf_core::Machine,
    transport: String,
    mode: String,
    sizes_bytes: Vec<u64>,
    iterations: u64,
    repeat: u32,
    criteria: serde_json::Value,
    /// Every baseline fit, in the order measured (each setting's brackets; the first also
    /// the first setting's).
    baselines: Vec<Params>,
    /// Max − min of each parameter over the brackets that agreed (the machine's noise within
    /// one state).
    baseline_noise: Params,
    rows: Vec<Row>,
    knobs: Vec<KnobVerdict>,
    zero_cost: Option<ZeroCost>,
}

impl Calibration {
    /// Whether every knob passed at every setting.
    pub fn pass(&self) -> bool {
        self.knobs.iter().all(|k| k.pass)
    }
}

/// Knobs as they travel to the peer ([`Knobs`] has no serde: the knobs do not need it).
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
struct WireKnobs {
    o_ns: f64,
    g_ns: f64,
    gap_per_byte_ns: f64,
    l_ns: f64,
}

impl From<Knobs> for WireKnobs {
    fn from(k: Knobs) -> Self {
        WireKnobs {
            o_ns: k.o_ns,
            g_ns: k.g_ns,
            gap_per_byte_ns: k.gap_per_byte_ns,
            l_ns: k.l_ns,
        }
    }
}

impl From<WireKnobs> for Knobs {
    fn from(k: WireKnobs) -> Self {
        Knobs {
            o_ns: k.o_ns,
            g_ns: k.g_ns,
            gap_per_byte_ns: k.gap_per_byte_ns,
            l_ns: k.l_ns,
        }
    }
}

#[derive(Debug, Serialize, Deserialize)]
struct Job {
    cpu: Option<usize>,
    max: usize,
}

/// What the peer runs next; it answers each with `Ok` or the error text once its side is done.
#[derive(Debug, Serialize, Deserialize)]
enum Step {
    Prtt {
        knobs: WireKnobs,
        size: u64,
        prtt: Prtt,
        total: u64,
    },
    /// Ping-pong responder: `emulated` with every knob at zero, or the bare transport.
    Echo {
        emulated: bool,
        size: u64,
        total: u64,
    },
    Done,
}

const DATA: u32 = 1;

/// Runs the calibration `cfg` says on a local pair of processes (this program re-run with
/// [`PEER_VERB`]) and judges every setting.
pub fn calibrate(cfg: &CalibrateConfig) -> Result<Calibration, CalibrateError> {
    let max = cfg.max_size();
    let (mut peer, mut ctrl, theirs, token) =
        launch::spawn_local_pair(PEER_VERB, Duration::from_secs(600))?;
    ctrl.send(&Job { cpu: theirs, max })?;
    let spec = DataSpec::new(cfg.transport, cfg.mode, max.max(64));
    let mut ep = launch::connect_data(&mut ctrl, &spec, &token)?;
    let clock = Clock::calibrate();
    let mut s = Session {
        ctrl: &mut ctrl,
        clock,
        sizes: &cfg.sizes,
        iters: cfg.iters,
        sbuf: vec![0u8; max.max(64)],
        rbuf: vec![0u8; max.max(64)],
    };
    let measured = measure(&mut s, &mut ep, cfg)?;
    let zero_cost = if cfg.cost_iters > 0 {
        Some(s.zero_cost(&mut ep, 64, cfg.cost_iters, 5)?)
    } else {
        None
    };
    ctrl.send(&Step::Done)?;
    peer.finish(Duration::from_secs(5));
    Ok(assemble(cfg, clock, &measured, zero_cost))
}

/// Every fit of a run: the baselines in the order measured, and each setting's trials
/// (`per_setting[knob][value]`, one per round).
struct Measured {
    baselines: Vec<Fit>,
    per_setting: Vec<Vec<Vec<Trial>>>,
}

fn at(what: impl Into<String>) -> impl FnOnce(StepError) -> CalibrateError {
    let what = what.into();
    move |source| CalibrateError::Fit { what, source }
}

/// The rounds.
///
/// Each round: 0, o₁, 0, o₂, 0, …, L₂, 0: every setting bracketed by two baselines, and
/// judged against the brackets of its own rounds (slow drift of a shared machine hits
/// baseline and setting alike), each figure by its median over the rounds. The AMD VM
/// also switches, every few seconds to minutes, between two states whose 16 KiB copy
/// differs fivefold (the host's doing: `bench bw -t shm --sizes 16k` gave 2.3 GB/s in one
/// run of eight, 11–19 GB/s in the others); a setting whose brackets disagree (a round
/// trip more than 25 % or 50 ns apart at any size) saw the state change and is measured
/// again, up to four times.
fn measure(
    s: &mut Session<'_>,
    ep: &mut AnyEndpoint,
    cfg: &CalibrateConfig,
) -> Result<Measured, CalibrateError> {
    // One fit thrown away first: the first fit of a fresh pair of processes can be far off
    // its later value (a 64 B round trip of 0.8 µs against 0.2 µs, seen here).
    say("emulate calibrate: warming up (one untimed fit)");
    s.fit(ep, Knobs::default()).map_err(at("warm-up"))?;
    let mut prev = s.fit(ep, Knobs::default()).map_err(at("baseline"))?;
    let mut m = Measured {
        baselines: vec![prev.clone()],
        per_setting: cfg
            .knobs
            .iter()
            .map(|(_, vals)| vec![Vec::new(); vals.len()])
            .collect(),
    };
    for round in 0..cfg.repeat {
        for (i, (k, vals)) in cfg.knobs.iter().enumerate() {
            for (j, &v) in vals.iter().enumerate() {
                let setting = Setting {
                    round,
                    repeat: cfg.repeat,
                    knob: *k,
                    value: v,
                };
                let trial = setting.measure(s, ep, &mut prev, &mut m.baselines)?;
                m.per_setting[i][j].push(trial);
            }
        }
    }
    Ok(m)
}

/// One setting in one round.
struct Setting {
    round: u32,
    repeat: u32,
    knob: Knob,
    value: f64,
}

impl Setting {
    /// The setting and the baseline after it (`prev` is the one before, and becomes the one
    /// after), measured again while the two disagree, at most [`MAX_ATTEMPTS`] times.
    fn measure(
        &self,
        s: &mut Session<'_>,
        ep: &mut AnyEndpoint,
        prev: &mut Fit,
        baselines: &mut Vec<Fit>,
    ) -> Result<Trial, CalibrateError> {
        let (k, v) = (self.knob, self.value);
        let mut attempt = 0;
        loop {
            attempt += 1;
            say(&format!(
                "emulate calibrate: round {}/{}: {k} = {v} {}{}",
                self.round + 1,
                self.repeat,
                unit(k),
                if attempt > 1 {
                    format!(" (again: the machine changed state, attempt {attempt})")
                } else {
                    String::new()
                }
            ));
            let set = s
                .fit(ep, Knobs::only(k, v))
                .map_err(at(format!("knob {k} = {v} {}", unit(k))))?;
            let after = s.fit(ep, Knobs::default()).map_err(at("baseline"))?;
            baselines.push(after.clone());
            let settled = same_state(&prev.pts, &after.pts);
            let t = Trial {
                before: std::mem::replace(prev, after.clone()),
                set,
                after,
                attempts: attempt,
                settled,
            };
            if settled || attempt >= MAX_ATTEMPTS {
                return Ok(t);
            }
        }
    }
}

/// The noise band of each parameter: its spread over the settled brackets of the run (the
/// state's own noise; a bracket that saw the state change would make it the change).
fn noise_band(m: &Measured) -> Params {
    let settled_base: Vec<&Params> = m
        .per_setting
        .iter()
        .flatten()
        .flatten()
        .filter(|t| t.settled)
        .flat_map(|t| [&t.before.params, &t.after.params])
        .collect();
    let all_base: Vec<&Params> = if settled_base.is_empty() {
        m.baselines.iter().map(|f| &f.params).collect()
    } else {
        settled_base
    };
    Params::spread(&all_base)
}

/// One setting judged on its trials: on the settled ones; if none settled, on all of them
/// (and said so).
fn judge_setting(k: Knob, v: f64, ts: &[Trial], noise: &Params, max_size: f64) -> Row {
    let settled: Vec<&Trial> = ts.iter().filter(|t| t.settled).collect();
    let used: Vec<&Trial> = if settled.is_empty() {
        ts.iter().collect()
    } else {
        settled
    };
    let around: Vec<&Fit> = used.iter().flat_map(|t| [&t.before, &t.after]).collect();
    // The reference is the fit of the brackets' median figures, the same figures the
    // expectation is computed from, so that the fit's own weighting cancels.
    let base_pts = median_figures(&around);
    let base_fit = loggp::extract(&base_pts);
    let overlap_ns = base_fit
        .as_ref()
        .and_then(|f| f.pieces[0].overlap_ns)
        .unwrap_or(0.0);
    let base = base_fit
        .map(|f| Params::of(&f.pieces[0]))
        .unwrap_or_else(|| Params::median(&around.iter().map(|f| &f.params).collect::<Vec<_>>()));
    let fits: Vec<&Params> = used.iter().map(|t| &t.set.params).collect();
    let got = Params::median(&fits);
    let spread = Params::spread(&fits);
    let expected =
        loggp::extract(&expected_figures(&base_pts, k, v)).map(|f| Params::of(&f.pieces[0]));
    let mut row = judge(
        k,
        v,
        &base,
        overlap_ns,
        expected.as_ref(),
        &got,
        &spread,
        noise,
        max_size,
    );
    let unsettled = ts.iter().filter(|t| !t.settled).count();
    let repeated: u32 = ts.iter().map(|t| t.attempts - 1).sum();
    if repeated > 0 {
        row.notes.push(format!(
            "measured again {repeated} time(s): the machine changed state between its brackets"
        ));
    }
    if unsettled > 0 {
        row.notes.push(format!(
            "{unsettled} of {} round(s) never had agreeing brackets{}",
            ts.len(),
            if used.len() == ts.len() {
                "; judged on them anyway"
            } else {
                "; left out"
            }
        ));
    }
    row.rounds_used = used.len();
    row
}

/// Every setting's row and each knob's verdict over its settings.
fn judge_all(cfg: &CalibrateConfig, m: &Measured, noise: &Params) -> (Vec<Row>, Vec<KnobVerdict>) {
    let mut rows = Vec::new();
    let mut verdicts = Vec::new();
    for (i, (k, vals)) in cfg.knobs.iter().enumerate() {
        let mut failing = Vec::new();
        let mut deltas = Vec::new();
        for (j, &v) in vals.iter().enumerate() {
            let row = judge_setting(*k, v, &m.per_setting[i][j], noise, cfg.max_size() as f64);
            if !row.pass {
                failing.push(v);
            }
            deltas.extend(row.own.iter().filter_map(|d| d.delta));
            rows.push(row);
        }
        verdicts.push(KnobVerdict {
            knob: k.to_string(),
            unit: unit(*k),
            pass: failing.is_empty(),
            measured_delta_min: deltas.iter().copied().reduce(f64::min),
            measured_delta_max: deltas.iter().copied().reduce(f64::max),
            failing_settings: failing,
        });
    }
    (rows, verdicts)
}

fn assemble(
    cfg: &CalibrateConfig,
    clock: Clock,
    m: &Measured,
    zero_cost: Option<ZeroCost>,
) -> Calibration {
    let noise = noise_band(m);
    let (rows, knobs) = judge_all(cfg, m, &noise);
    Calibration {
        schema_version: 3,
        kind: "emulate-calibrate",
        machine: commperf_bench::machine::describe(clock.timer_info()),
        transport: cfg.transport.to_string(),
        mode: cfg.mode.to_string(),
        sizes_bytes: cfg.sizes.clone(),
        iterations: cfg.iters,
        repeat: cfg.repeat,
        criteria: serde_json::json!({
            "expected": EXPECTED_TEXT,
            "own_parameter": OWN_TEXT,
            "other_parameters": OTHERS_TEXT,
            "zero_cost": "ping-pong through Emulated with every knob at zero within 2 % or 10 ns of the bare transport",
        }),
        baselines: m.baselines.iter().map(|f| f.params).collect(),
        baseline_noise: noise,
        rows,
        knobs,
        zero_cost,
    }
}

/// The client's end of the pair: its control channel, clock and buffers.
struct Session<'a> {
    ctrl: &'a mut Control,
    clock: Clock,
    sizes: &'a [u64],
    iters: u64,
    sbuf: Vec<u8>,
    rbuf: Vec<u8>,
}

impl Session<'_> {
    fn warmup(&self) -> u64 {
        (self.iters / 10).max(10)
    }

    /// One LogGP fit with `knobs` on both ends: `bench loggp`'s four PRTT variants per size.
    fn fit(&mut self, ep: &mut AnyEndpoint, knobs: Knobs) -> Result<Fit, StepError> {
        let mut pts = Vec::with_capacity(self.sizes.len());
        // At most MAX_ITERS, checked by `CalibrateConfig::new`.
        let mut samples = vec![0.0; self.iters as usize];
        for &size in self.sizes {
            let mut figs = [loggp::Timing::default(); 4];
            for k in 0..4 {
                // The last two variants wait a delay from the figures measured before them.
                let prtt = loggp::variants(loggp::N, &figs)[k];
                self.ctrl.send(&Step::Prtt {
                    knobs: knobs.into(),
                    size,
                    prtt,
                    total: self.warmup() + self.iters,
                })?;
                let (clock, warmup) = (self.clock, self.warmup());
                let s = &self.sbuf[..size as usize];
                let r = &mut self.rbuf[..];
                let cfg = EmulateConfig::new(knobs);
                // `AnyEndpoint` is no Endpoint: each arm wraps its own concrete endpoint.
                let fig = with_endpoint!(&mut *ep, e => {
                    let mut em = Emulated::with_timer(e, cfg, clock)?;
                    loggp::prtt_client(&mut em, &clock, s, r, &prtt, warmup, &mut samples)
                })?;
                peer_done(self.ctrl)?;
                figs[k] = fig;
            }
            pts.push(SizePrtt::new(size, loggp::N, figs));
        }
        let fit = loggp::extract(&pts).ok_or(StepError::NoFit)?;
        Ok(Fit {
            params: Params::of(&fit.pieces[0]),
            pts,
        })
    }

    /// Ping-pong of `size` bytes, alternating bare and emulated-at-zero blocks of `iters`
    /// messages for `rounds` rounds; one-way medians of each.
    fn zero_cost(
        &mut self,
        ep: &mut AnyEndpoint,
        size: u64,
        iters: u64,
        rounds: u64,
    ) -> Result<ZeroCost, StepError> {
        say("emulate calibrate: knobs-at-zero cost (ping-pong, bare against emulated)");
        let mut bare = Vec::new();
        let mut emu = Vec::new();
        // At most MAX_ITERS, checked by `CalibrateConfig::new`.
        let mut rtt = vec![0.0; iters as usize];
        let clock = self.clock;
        for round in 0..rounds {
            // Alternate which goes first, so neither always follows the other.
            let order = if round % 2 == 0 {
                [false, true]
            } else {
                [true, false]
            };
            for emulated in order {
                self.ctrl.send(&Step::Echo {
                    emulated,
                    size,
                    total: iters + 1000,
                })?;
                let s = &self.sbuf[..size as usize];
                let r = &mut self.rbuf[..];
                let cfg = EmulateConfig::new(Knobs::default());
                with_endpoint!(&mut *ep, e => {
                    if emulated {
                        let mut em = Emulated::with_timer(e, cfg, clock)?;
                        pingpong(&mut em, &clock, s, r, &mut rtt)
                    } else {
                        pingpong(e, &clock, s, r, &mut rtt)
                    }
                })?;
                peer_done(self.ctrl)?;
                let into = if emulated { &mut emu } else { &mut bare };
                into.extend(rtt.iter().map(|t| t / 2.0));
            }
        }
        let (Some(b), Some(e)) = (median(&bare), median(&emu)) else {
            return Err(StepError::NoRoundTrip);
        };
        let d = e - b;
        Ok(ZeroCost {
            size_bytes: size,
            rounds,
            iterations: iters,
            bare_one_way_ns: b,
            emulated_one_way_ns: e,
            difference_ns: d,
            difference_percent: d / b * 100.0,
            within_goal: d.abs() <= (0.02 * b).max(10.0),
        })
    }
}

/// 1000 untimed round trips, then one timed per slot of `rtt`.
fn pingpong<E: Endpoint>(
    e: &mut E,
    clock: &Clock,
    s: &[u8],
    r: &mut [u8],
    rtt: &mut [f64],
) -> Result<(), TransportError> {
    for _ in 0..1000 {
        e.send(DATA, s)?;
        e.recv(r)?;
    }
    for slot in rtt.iter_mut() {
        let t0 = clock.now_ns();
        e.send(DATA, s)?;
        e.recv(r)?;
        *slot = clock.now_ns() - t0;
    }
    Ok(())
}

fn peer_done(ctrl: &mut Control) -> Result<(), StepError> {
    match ctrl.recv::<Result<(), String>>()? {
        Ok(()) => Ok(()),
        Err(e) => Err(StepError::Peer(e)),
    }
}

/// An error and its sources, `: `-separated, as the client prints the peer's.
pub(crate) fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text += &format!(": {s}");
        source = s.source();
    }
    text
}

/// The peer process ([`PEER_VERB`]): runs the steps the client sends, with the knobs each
/// carries, and answers each.
pub fn peer() -> Result<(), CalibrateError> {
    let (mut ctrl, job, mut ep) =
        launch::accept_local_pair(Duration::from_secs(3600), |j: &Job| j.cpu)?;
    // The buffers are sized by the client's message: bounded before they are allocated.
    if job.max as u64 > MAX_SIZE {
        return Err(CalibrateError::PeerBuffer(job.max));
    }
    let clock = Clock::calibrate();
    let sbuf = vec![0u8; job.max.max(64)];
    let mut rbuf = vec![0u8; job.max.max(64)];
    loop {
        let step: Step = ctrl.recv()?;
        let res: Result<(), StepError> = match step {
            Step::Done => return Ok(()),
            Step::Prtt {
                knobs,
                size,
                prtt,
                total,
            } => {
                let cfg = EmulateConfig::new(knobs.into());
                let s = &sbuf[..(size as usize).min(sbuf.len())];
                with_endpoint!(&mut ep, e => {
                    Emulated::with_timer(e, cfg, clock)
                        .map_err(StepError::from)
                        .and_then(|mut em| {
                            loggp::prtt_server(&mut em, &clock, s, &mut rbuf, &prtt, total)
                                .map_err(StepError::from)
                        })
                })
            }
            Step::Echo {
                emulated,
                size,
                total,
            } => {
                let s = &sbuf[..(size as usize).min(sbuf.len())];
                let cfg = EmulateConfig::new(Knobs::default());
                with_endpoint!(&mut ep, e => {
                    if emulated {
                        Emulated::with_timer(e, cfg, clock)
                            .map_err(StepError::from)
                            .and_then(|mut em| echo(&mut em, s, &mut rbuf, total).map_err(StepError::from))
                    } else {
                        echo(e, s, &mut rbuf, total).map_err(StepError::from)
                    }
                })
            }
        };
        let failed = res.is_err();
        ctrl.send(&res.map_err(|e| chain(&e)))?;
        if failed {
            return Err(CalibrateError::PeerStopped);
        }
    }
}

fn echo<E: Endpoint>(e: &mut E, s: &[u8], r: &mut [u8], total: u64) -> Result<(), TransportError> {
    for _ in 0..total {
        e.recv(r)?;
        e.send(DATA, s)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_config_refuses_what_the_command_line_would_with_its_words() {
        let sizes = [64, 256, 1024];
        let new = |t, sizes: &[u64], iters, knobs: &[(Knob, Vec<f64>)]| {
            CalibrateConfig::new(t, Mode::Poll, sizes, iters, 3, 0, knobs)
                .map_err(|e| e.to_string())
        };
        assert_eq!(
            new(
                TransportKind::Shm,
                &[64, 64, 256, 1024, 4096, 16384, 65536],
                1000,
                &[]
            )
            .unwrap_err(),
            "--sizes: give 3 to 5 sizes (one protocol piece), not 6"
        );
        assert_eq!(
            new(TransportKind::Shm, &sizes, 9, &[]).unwrap_err(),
            "--iters must be at least 10 (the median and its noise need them)"
        );
        assert_eq!(
            new(
                TransportKind::Shm,
                &sizes,
                1000,
                &[(Knob::L, vec![0.0]), (Knob::O, vec![0.0])]
            )
            .unwrap_err(),
            "--knob: every value is 0; give at least one value above zero to calibrate"
        );
        assert!(new(TransportKind::Model, &sizes, 1000, &[])
            .unwrap_err()
            .starts_with("--transport model is the tests' in-process model"));
        // A knob given twice: the later list wins; zeros and repeats dropped, values sorted.
        let c = new(
            TransportKind::Shm,
            &[1024, 64, 256, 64],
            10,
            &[
                (Knob::L, vec![1.0]),
                (Knob::O, vec![0.0, 2.0, 1.0, 2.0]),
                (Knob::L, vec![0.0]),
            ],
        )
        .unwrap();
        assert_eq!(c.sizes, vec![64, 256, 1024]);
        assert_eq!(c.knobs, vec![(Knob::O, vec![1.0, 2.0])]);
        // None given: the defaults, without their zeros.
        let c = new(TransportKind::Tcp, &sizes, 10, &[]).unwrap();
        let counts: Vec<(Knob, usize)> = c.knobs.iter().map(|(k, v)| (*k, v.len())).collect();
        assert_eq!(
            counts,
            vec![
                (Knob::O, 3),
                (Knob::LowerG, 3),
                (Knob::UpperG, 1),
                (Knob::L, 2)
            ]
        );
    }

    #[test]
    fn a_failed_fit_reads_as_the_binary_printed_it() {
        let e = at("knob L = 5000 ns")(StepError::Peer("at iteration 3: closed".into()));
        assert_eq!(
            chain(&e),
            "knob L = 5000 ns: the peer: at iteration 3: closed"
        );
    }
}
