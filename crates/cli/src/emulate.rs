//! `commperf emulate calibrate`: seed 001's calibration of the LogGP knobs on a real transport.
//!
//! The model transport checks the knob arithmetic exactly (`cargo test -p commperf-emulate`);
//! this verb checks what a real transport makes of it, where the knobs sit on top of a
//! transport's own overlaps and noise. It starts a local peer process (as `monitor run` does),
//! sets each knob alone to each value on *both* ends (the peer learns the knobs with each step),
//! measures LogGP with the same PRTT loops and fit `bench loggp` uses, and judges each setting
//! by the seed's two criteria against a knob-at-zero baseline measured in the same run, between
//! the knobs, so slow drift of a shared machine hits baseline and setting alike.
//!
//! It also measures the decorator's cost with every knob at zero: ping-pong through `Emulated`
//! against the bare transport, alternating in rounds on the same connection.

use crate::output::{print, write_atomically};
use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use commperf_bench::loggp::{self, Piece, Prtt, SizePrtt};
use commperf_core::{format_size, Mode, TransportKind};
use commperf_emulate::{parse_knob_list, EmulateConfig, Emulated, Knob, Knobs};
use commperf_transport::clock::{Clock, Timer};
use commperf_transport::launch::{self, AnyEndpoint, Control, DataSpec};
use commperf_transport::{with_endpoint, Endpoint};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Duration;

/// Criteria of seed 001's calibration: a knob moves its own parameter by the set amount within
/// 5 % (or 50 ns, where that is larger) and every other one by less than 5 %.
const REL: f64 = 0.05;
const ABS_NS: f64 = 50.0;

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct EmulateArgs {
    #[command(subcommand)]
    pub cmd: Option<EmulateCmd>,
    /// Without a subcommand: an unmodified MPI program under the knobs (`emulate_mpi`)
    #[command(flatten)]
    pub run: crate::emulate_mpi::RunArgs,
}

#[derive(Debug, Subcommand)]
pub enum EmulateCmd {
    /// Set each knob alone to each value on a local pair of processes, measure LogGP (PRTT), and
    /// judge whether it moves only its own parameter, by the set amount
    Calibrate(CalibrateArgs),
    /// Run a program at each setting of each knob (seed 001's sensitivity study) and report
    /// its slowdown per setting; with --predict, beside what `predict` expects
    Sweep(Box<crate::emulate_sweep::SweepArgs>),
}

/// One `--knob` value, read by the library's parser so that the CLI and the library refuse
/// the same things with the same words.
fn knob_list(s: &str) -> Result<(Knob, Vec<f64>), String> {
    parse_knob_list(s).map_err(|e| e.to_string())
}

#[derive(Debug, Args)]
pub struct CalibrateArgs {
    /// Transport: shm, tcp, uds, uring-tcp, uring-uds
    #[arg(short = 't', long, default_value = "shm")]
    pub transport: TransportKind,
    /// Completion mode: poll or block
    #[arg(long, default_value = "poll")]
    pub mode: Mode,
    /// A knob and its values, e.g. o=0,1,2,5us (G in ns per byte: G=0,0.5); repeat for more
    /// knobs. Default: o=0,1,2,5us g=0,1,2,5us G=0,0.5 L=0,5,20us
    #[arg(long = "knob", value_name = "KNOB=VALUES", value_parser = knob_list)]
    pub knobs: Vec<(Knob, Vec<f64>)>,
    /// Message sizes of the PRTT fit (one protocol piece: at most five sizes)
    #[arg(long, default_value = "64,256,1k,4k,16k")]
    pub sizes: String,
    /// Timed repetitions of each PRTT figure
    #[arg(long, default_value_t = 1000)]
    pub iters: u64,
    /// Messages per configuration of the knobs-at-zero cost check (0: skip it)
    #[arg(long, default_value_t = 20_000)]
    pub cost_iters: u64,
    /// Write the calibration as JSON to FILE (the table is still printed)
    #[arg(short = 'o', long = "output", value_name = "FILE.json")]
    pub out: Option<PathBuf>,
}

/// Knobs as they travel to the peer ([`Knobs`] has no serde: the library does not need it).
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

/// The LogGP parameters a knob can move, with units in the names.
#[derive(Debug, Clone, Copy, Default, Serialize)]
struct Params {
    o_s_ns: Option<f64>,
    o_r_ns: Option<f64>,
    g_ns: Option<f64>,
    #[serde(rename = "G_ns_per_byte")]
    gap_per_byte_ns: Option<f64>,
    #[serde(rename = "L_ns")]
    l_ns: Option<f64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Param {
    Os,
    Or,
    G,
    BigG,
    L,
}

impl Param {
    const ALL: [Param; 5] = [Param::Os, Param::Or, Param::G, Param::BigG, Param::L];
    fn name(self) -> &'static str {
        match self {
            Param::Os => "o_s",
            Param::Or => "o_r",
            Param::G => "g",
            Param::BigG => "G",
            Param::L => "L",
        }
    }
    fn owned_by(self, k: Knob) -> bool {
        matches!(
            (k, self),
            (Knob::O, Param::Os | Param::Or)
                | (Knob::LowerG, Param::G)
                | (Knob::UpperG, Param::BigG)
                | (Knob::L, Param::L)
        )
    }
}

impl Params {
    fn of(p: &Piece) -> Self {
        Params {
            o_s_ns: p.o_s_ns,
            o_r_ns: p.o_r_ns,
            g_ns: p.g_ns,
            gap_per_byte_ns: p.gap_per_byte_ns,
            l_ns: p.l_ns,
        }
    }
    fn get(&self, p: Param) -> Option<f64> {
        match p {
            Param::Os => self.o_s_ns,
            Param::Or => self.o_r_ns,
            Param::G => self.g_ns,
            Param::BigG => self.gap_per_byte_ns,
            Param::L => self.l_ns,
        }
    }
    /// Mean of the baselines before and after a knob's settings (linear drift cancels).
    fn mean(a: &Params, b: &Params) -> Params {
        let m = |p| match (a.get(p), b.get(p)) {
            (Some(x), Some(y)) => Some((x + y) / 2.0),
            (x, y) => x.or(y),
        };
        Params {
            o_s_ns: m(Param::Os),
            o_r_ns: m(Param::Or),
            g_ns: m(Param::G),
            gap_per_byte_ns: m(Param::BigG),
            l_ns: m(Param::L),
        }
    }
}

/// Figures in ns, G's in ns per byte: the JSON names carry the unit ([`Figures`]).
#[derive(Debug, Clone, Serialize)]
struct Drift {
    parameter: &'static str,
    #[serde(skip)]
    delta: Option<f64>,
    #[serde(flatten)]
    figures: Figures,
    drift_percent: Option<f64>,
    within: Option<bool>,
}

/// One set of figures under the name of its unit, the other set absent.
#[derive(Debug, Clone, Default, Serialize)]
struct Figures {
    #[serde(skip_serializing_if = "Option::is_none")]
    baseline_ns: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    measured_ns: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    delta_ns: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    baseline_ns_per_byte: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    measured_ns_per_byte: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    delta_ns_per_byte: Option<f64>,
}

impl Figures {
    fn new(per_byte: bool, b: Option<f64>, m: Option<f64>, d: Option<f64>) -> Self {
        if per_byte {
            Figures {
                baseline_ns_per_byte: b,
                measured_ns_per_byte: m,
                delta_ns_per_byte: d,
                ..Figures::default()
            }
        } else {
            Figures {
                baseline_ns: b,
                measured_ns: m,
                delta_ns: d,
                ..Figures::default()
            }
        }
    }
}

#[derive(Debug, Clone, Serialize)]
struct Row {
    knob: String,
    #[serde(skip)]
    set: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    set_ns: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    set_ns_per_byte: Option<f64>,
    #[serde(skip)]
    unit: &'static str,
    /// The knob's own parameter(s): o moves o_s and o_r.
    own: Vec<Drift>,
    others: Vec<Drift>,
    pass: bool,
    notes: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
struct KnobVerdict {
    knob: String,
    /// ns, or ns/B for G: the unit of the two figures below and of the failing settings.
    unit: &'static str,
    pass: bool,
    /// The own parameter's measured move over all settings (min, max).
    measured_delta_min: Option<f64>,
    measured_delta_max: Option<f64>,
    failing_settings: Vec<f64>,
}

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

#[derive(Debug, Serialize)]
struct Calibration {
    schema_version: u32,
    kind: &'static str,
    machine: commperf_core::Machine,
    transport: String,
    mode: String,
    sizes_bytes: Vec<u64>,
    iterations: u64,
    criteria: serde_json::Value,
    baselines: Vec<Params>,
    rows: Vec<Row>,
    knobs: Vec<KnobVerdict>,
    zero_cost: Option<ZeroCost>,
}

fn unit(k: Knob) -> &'static str {
    if k == Knob::UpperG {
        "ns/B"
    } else {
        "ns"
    }
}

fn default_knobs() -> Vec<(Knob, Vec<f64>)> {
    ["o=0,1,2,5us", "g=0,1,2,5us", "G=0,0.5", "L=0,5,20us"]
        .iter()
        .map(|s| parse_knob_list(s).expect("default knob lists parse"))
        .collect()
}

pub fn run(a: &EmulateArgs) -> Result<()> {
    match &a.cmd {
        Some(EmulateCmd::Calibrate(c)) => calibrate(c),
        Some(EmulateCmd::Sweep(s)) => crate::emulate_sweep::run(s),
        None => crate::emulate_mpi::run(&a.run),
    }
}

fn calibrate(c: &CalibrateArgs) -> Result<()> {
    if c.transport == TransportKind::Mpi {
        return crate::emulate_mpi::calibrate(c);
    }
    if c.transport == TransportKind::Model {
        bail!("--transport model is the tests' in-process model (`cargo test -p commperf-emulate` checks the knobs on it exactly); pick shm, tcp, uds, uring-tcp or uring-uds");
    }
    let mut sizes = commperf_core::parse_sizes(&c.sizes).context("--sizes")?;
    sizes.sort_unstable();
    sizes.dedup();
    // Three points at least for a line with a misfit; six or more let the fit split the range
    // into protocols, and a knob is judged against one piece.
    if !(3..=5).contains(&sizes.len()) {
        bail!(
            "--sizes: give 3 to 5 sizes (one protocol piece), not {}",
            sizes.len()
        );
    }
    if c.iters < 10 {
        bail!("--iters must be at least 10 (the median and its noise need them)");
    }
    // A knob given twice: the later list wins, as with any repeated option.
    let mut knobs: Vec<(Knob, Vec<f64>)> = Vec::new();
    for (k, vals) in if c.knobs.is_empty() {
        default_knobs()
    } else {
        c.knobs.clone()
    } {
        let mut vals: Vec<f64> = vals.into_iter().filter(|v| *v > 0.0).collect();
        vals.sort_by(f64::total_cmp);
        vals.dedup();
        knobs.retain(|(kk, _)| *kk != k);
        if !vals.is_empty() {
            knobs.push((k, vals));
        }
    }
    if knobs.is_empty() {
        bail!("--knob: every value is 0; give at least one value above zero to calibrate");
    }
    let max = *sizes.last().unwrap_or(&0) as usize;

    let (mut peer, mut ctrl, theirs, token) =
        crate::localpair::spawn("__emulate-peer", Duration::from_secs(600))?;
    ctrl.send(&Job { cpu: theirs, max })?;
    let spec = DataSpec::new(c.transport, c.mode, max.max(64));
    let mut ep = launch::connect_data(&mut ctrl, &spec, &token)?;
    let clock = Clock::calibrate();
    let mut s = Session {
        ctrl: &mut ctrl,
        clock,
        sizes: &sizes,
        iters: c.iters,
        sbuf: vec![0u8; max.max(64)],
        rbuf: vec![0u8; max.max(64)],
    };

    // Baselines between the knobs: 0, o…, 0, g…, 0, G…, 0, L…, 0; each knob is judged against
    // the mean of the two around it.
    let mut baselines = vec![s.fit(&mut ep, Knobs::default()).context("baseline")?];
    let mut measured: Vec<(Knob, Vec<(f64, Params)>)> = Vec::new();
    for (k, vals) in &knobs {
        let mut got = Vec::new();
        for &v in vals {
            crate::say(&format!("emulate calibrate: {k} = {v} {}", unit(*k)));
            let p = s
                .fit(&mut ep, Knobs::only(*k, v))
                .with_context(|| format!("knob {k} = {v} {}", unit(*k)))?;
            got.push((v, p));
        }
        measured.push((*k, got));
        baselines.push(s.fit(&mut ep, Knobs::default()).context("baseline")?);
    }
    let zero_cost = if c.cost_iters > 0 {
        Some(s.zero_cost(&mut ep, 64, c.cost_iters, 5)?)
    } else {
        None
    };
    ctrl.send(&Step::Done)?;
    peer.finish(Duration::from_secs(5));

    let mut rows = Vec::new();
    let mut verdicts = Vec::new();
    for (i, (k, got)) in measured.iter().enumerate() {
        let base = Params::mean(&baselines[i], &baselines[i + 1]);
        let mut failing = Vec::new();
        let mut deltas = Vec::new();
        for (v, p) in got {
            let row = judge(*k, *v, &base, p, max as f64);
            if !row.pass {
                failing.push(*v);
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
    let cal = Calibration {
        schema_version: 1,
        kind: "emulate-calibrate",
        machine: commperf_bench::machine::describe(clock.timer_info()),
        transport: c.transport.to_string(),
        mode: c.mode.to_string(),
        sizes_bytes: sizes.clone(),
        iterations: c.iters,
        criteria: serde_json::json!({
            "own_parameter": "moves by the set value within 5 % or 50 ns (G: 50 ns over the largest size), whichever is larger",
            "other_parameters": "move by less than 5 % of the baseline, or 50 ns (G: 50 ns over the largest size) where that is larger",
            "zero_cost": "ping-pong through Emulated with every knob at zero within 2 % or 10 ns of the bare transport",
        }),
        baselines,
        rows,
        knobs: verdicts,
        zero_cost,
    };
    if let Some(path) = &c.out {
        write_atomically(
            path,
            (serde_json::to_string_pretty(&cal)? + "\n").as_bytes(),
        )?;
    }
    print(&render(&cal))
}

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
    fn fit(&mut self, ep: &mut AnyEndpoint, knobs: Knobs) -> Result<Params> {
        let mut pts = Vec::with_capacity(self.sizes.len());
        let mut samples = vec![0.0; self.iters as usize];
        for &size in self.sizes {
            let mut figs = [loggp::Timing::default(); 4];
            for k in 0..4 {
                // The last two variants wait d = PRTT(1,0,s), measured just before.
                let prtt = loggp::variants(loggp::N, figs[0].ns)[k];
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
                        .map_err(loop_error)
                })?;
                peer_done(self.ctrl)?;
                figs[k] = fig;
            }
            pts.push(SizePrtt::new(size, loggp::N, figs));
        }
        let fit = loggp::extract(&pts).context("the PRTT figures gave no LogGP fit")?;
        Ok(Params::of(&fit.pieces[0]))
    }

    /// Ping-pong of `size` bytes, alternating bare and emulated-at-zero blocks of `iters`
    /// messages for `rounds` rounds; one-way medians of each.
    fn zero_cost(
        &mut self,
        ep: &mut AnyEndpoint,
        size: u64,
        iters: u64,
        rounds: u64,
    ) -> Result<ZeroCost> {
        crate::say("emulate calibrate: knobs-at-zero cost (ping-pong, bare against emulated)");
        let mut bare = Vec::new();
        let mut emu = Vec::new();
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
        let b = median(&mut bare);
        let e = median(&mut emu);
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

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// 1000 untimed round trips, then one timed per slot of `rtt`.
fn pingpong<E: Endpoint>(
    e: &mut E,
    clock: &Clock,
    s: &[u8],
    r: &mut [u8],
    rtt: &mut [f64],
) -> Result<()> {
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

fn loop_error(e: commperf_bench::patterns::LoopError) -> anyhow::Error {
    anyhow::Error::new(e.source).context(format!("at iteration {}", e.iteration))
}

fn peer_done(ctrl: &mut Control) -> Result<()> {
    match ctrl.recv::<Result<(), String>>()? {
        Ok(()) => Ok(()),
        Err(e) => bail!("the peer: {e}"),
    }
}

/// One setting judged against the baseline.
fn judge(k: Knob, v: f64, base: &Params, got: &Params, max_size: f64) -> Row {
    // G is per byte: its 50 ns floor is 50 ns over the largest message measured.
    let floor = |p: Param| {
        if p == Param::BigG {
            ABS_NS / max_size
        } else {
            ABS_NS
        }
    };
    let mut notes = Vec::new();
    let mut own = Vec::new();
    let mut others = Vec::new();
    for p in Param::ALL {
        let (b, m) = (base.get(p), got.get(p));
        let delta = b.zip(m).map(|(b, m)| m - b);
        let is_own = p.owned_by(k);
        let want = if is_own { v } else { 0.0 };
        let tol = if is_own {
            (REL * v).max(floor(p))
        } else {
            (REL * b.unwrap_or(0.0).abs()).max(floor(p))
        };
        let within = delta.map(|d| (d - want).abs() <= tol);
        if within.is_none() {
            notes.push(format!(
                "{} not identified {}",
                p.name(),
                if b.is_none() {
                    "at zero"
                } else {
                    "at this setting"
                }
            ));
        }
        let d = Drift {
            parameter: p.name(),
            delta,
            figures: Figures::new(p == Param::BigG, b, m, delta),
            drift_percent: b
                .zip(delta)
                .filter(|(b, _)| b.abs() > 0.0)
                .map(|(b, d)| d / b * 100.0),
            within,
        };
        if is_own {
            own.push(d);
        } else {
            others.push(d);
        }
    }
    // An own parameter that cannot be measured fails the knob; another that cannot is noted
    // but does not (the seed's criterion is about what moved).
    let pass = own.iter().all(|d| d.within == Some(true))
        && others.iter().all(|d| d.within != Some(false));
    Row {
        knob: k.to_string(),
        set: v,
        set_ns: (k != Knob::UpperG).then_some(v),
        set_ns_per_byte: (k == Knob::UpperG).then_some(v),
        unit: unit(k),
        own,
        others,
        pass,
        notes,
    }
}

fn fmt_value(x: Option<f64>, unit: &str) -> String {
    match x {
        None => "-".into(),
        Some(x) if unit == "ns/B" => format!("{x:+.3} ns/B"),
        Some(x) => format!("{:+.3} µs", x / 1e3),
    }
}

fn set_text(v: f64, unit: &str) -> String {
    if unit == "ns/B" {
        format!("{v} ns/B")
    } else {
        format!("{} µs", v / 1e3)
    }
}

fn render(c: &Calibration) -> String {
    let mut out = format!(
        "# commperf emulate calibrate: {} ({}), sizes {}, {} repetitions per PRTT figure\n",
        c.transport,
        c.mode,
        c.sizes_bytes
            .iter()
            .map(|s| format_size(*s))
            .collect::<Vec<_>>()
            .join(","),
        c.iterations
    );
    out += "# own: moves by the set value ±5 % or ±50 ns; others: < 5 % (or 50 ns); drift against knobs-at-zero measured before and after each knob\n";
    let mut t = vec![vec![
        "knob".to_string(),
        "set".into(),
        "own Δ".into(),
        "others' drift".into(),
        "verdict".into(),
    ]];
    for r in &c.rows {
        let unit_of = |d: &Drift| if d.parameter == "G" { "ns/B" } else { "ns" };
        let own = r
            .own
            .iter()
            .map(|d| format!("{} {}", d.parameter, fmt_value(d.delta, unit_of(d))))
            .collect::<Vec<_>>()
            .join(", ");
        let others = r
            .others
            .iter()
            .map(|d| {
                let mark = if d.within == Some(false) { "!" } else { "" };
                // Absolute and relative: a 40 ns move of a 30 ns overhead is +130 % and still
                // within the 50 ns floor.
                let abs = match (d.delta, unit_of(d)) {
                    (None, _) => "-".to_string(),
                    (Some(x), "ns/B") => format!("{x:+.4}ns/B"),
                    (Some(x), _) => format!("{x:+.0}ns"),
                };
                match d.drift_percent {
                    Some(p) => format!("{} {abs} ({p:+.0}%){mark}", d.parameter),
                    None => format!("{} {abs}{mark}", d.parameter),
                }
            })
            .collect::<Vec<_>>()
            .join(" ");
        t.push(vec![
            r.knob.clone(),
            set_text(r.set, r.unit),
            own,
            others,
            if r.pass { "pass" } else { "FAIL" }.into(),
        ]);
    }
    let widths: Vec<usize> = (0..5)
        .map(|i| t.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    for r in &t {
        let mut line = String::new();
        for (i, cell) in r.iter().enumerate() {
            let pad = widths[i] - cell.chars().count();
            line += cell;
            if i + 1 < r.len() {
                line += &" ".repeat(pad + 2);
            }
        }
        out += line.trim_end();
        out += "\n";
    }
    for (i, b) in c.baselines.iter().enumerate() {
        out += &format!(
            "# baseline {i}: o_s {} o_r {} g {} G {} L {}\n",
            fmt_value(b.o_s_ns, "ns"),
            fmt_value(b.o_r_ns, "ns"),
            fmt_value(b.g_ns, "ns"),
            fmt_value(b.gap_per_byte_ns, "ns/B"),
            fmt_value(b.l_ns, "ns"),
        );
    }
    for k in &c.knobs {
        let range = match (k.measured_delta_min, k.measured_delta_max) {
            (Some(a), Some(b)) => format!(
                "measured own Δ {} .. {}",
                fmt_value(Some(a), k.unit),
                fmt_value(Some(b), k.unit)
            ),
            _ => "own parameter not measured".into(),
        };
        if k.pass {
            out += &format!("# knob {}: pass at every setting; {range}\n", k.knob);
        } else {
            let at: Vec<String> = k
                .failing_settings
                .iter()
                .map(|v| set_text(*v, k.unit))
                .collect();
            out += &format!("# knob {}: FAILS at {}; {range}\n", k.knob, at.join(", "));
        }
    }
    if let Some(z) = &c.zero_cost {
        out += &format!(
            "# knobs at zero: ping-pong {} one-way p50 bare {:.1} ns, emulated {:.1} ns ({:+.1} ns, {:+.2} %; goal within 2 % or 10 ns: {})\n",
            format_size(z.size_bytes),
            z.bare_one_way_ns,
            z.emulated_one_way_ns,
            z.difference_ns,
            z.difference_percent,
            if z.within_goal { "met" } else { "NOT met" }
        );
    }
    out
}

/// The hidden `__emulate-peer` process: runs the steps the client sends, with the knobs each
/// carries, and answers each.
pub fn peer() -> Result<()> {
    let (mut ctrl, job, mut ep) =
        crate::localpair::accept(Duration::from_secs(3600), |j: &Job| j.cpu)?;
    let clock = Clock::calibrate();
    let sbuf = vec![0u8; job.max.max(64)];
    let mut rbuf = vec![0u8; job.max.max(64)];
    loop {
        let step: Step = ctrl.recv()?;
        let res = match step {
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
                        .map_err(anyhow::Error::from)
                        .and_then(|mut em| {
                            loggp::prtt_server(&mut em, &clock, s, &mut rbuf, &prtt, total)
                                .map_err(loop_error)
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
                            .map_err(anyhow::Error::from)
                            .and_then(|mut em| echo(&mut em, s, &mut rbuf, total))
                    } else {
                        echo(e, s, &mut rbuf, total)
                    }
                })
            }
        };
        let failed = res.is_err();
        ctrl.send(&res.map_err(|e| format!("{e:#}")))?;
        if failed {
            bail!("stopped after a failed step");
        }
    }
}

fn echo<E: Endpoint>(e: &mut E, s: &[u8], r: &mut [u8], total: u64) -> Result<()> {
    for _ in 0..total {
        e.recv(r)?;
        e.send(DATA, s)?;
    }
    Ok(())
}
