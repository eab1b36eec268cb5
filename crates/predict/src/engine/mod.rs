//! The engines: Papaefstathiou's (2001) contention model and a LogGP (LogGOPS) model over the same
//! workload.

mod loggops;
mod queue;
mod sim;

use crate::output::{
    Bounds, Knee, LinkUse, Prediction, RankTimes, Timeline, PREDICTION_SCHEMA_VERSION,
};
use crate::tcom::Tcom;
use crate::topology::{Network, RankMap};
use crate::workload::Workload;
pub use commperf_model::LogGp;

/// Which model predicts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Model {
    /// Papaefstathiou (2001): link contention and background load over a topology.
    Contention,
    /// LogGP/LogGOPS: endpoint contention only (CPU overhead o, NIC gap g and G, latency L).
    LogGp,
}

/// Background load on every link.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Background {
    None,
    /// The same fraction of every link's bandwidth, all the time.
    Const(f64),
    /// Exponentially distributed around `mean` per link, redrawn every `period_ns` (Papaefstathiou
    /// 2001 Listing Seven), capped at 0.95.
    Exp {
        mean: f64,
        period_ns: f64,
    },
}

/// Bandwidth and latency of one link class.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkClass {
    pub name: String,
    /// Bytes per ns; None = the profile's peak bandwidth (the link Tcom was measured over).
    pub bandwidth_bytes_per_ns: Option<f64>,
    /// Latency added per crossing of a link of this class, beyond what Tcom already holds.
    pub latency_ns: f64,
}

/// How the two directions of a cable share its bandwidth (contention model).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Sharing {
    /// Each direction has the full bandwidth (Papaefstathiou's (2001) routing array: a row per
    /// direction).
    #[default]
    FullDuplex,
    /// Both directions share one capacity: SimGrid's default `SHARED` link policy. The reverse
    /// of a directed link is the link with `from` and `to` swapped.
    Shared,
}

/// A correction factor by message size, piecewise constant (SimGrid's `network/latency-factor`
/// and `network/bandwidth-factor`, e.g. SMPI's): the factor of the largest threshold not above
/// the size; below every threshold, 1.
#[derive(Debug, Clone, PartialEq)]
pub struct SizeFactors(Vec<(u64, f64)>);

/// Why a factor list cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FactorError {
    #[error(
        "`{spec}`: `{part}` is not SIZE:FACTOR (a whole number of bytes and a positive factor)"
    )]
    Part { spec: String, part: String },
}

impl Default for SizeFactors {
    fn default() -> Self {
        SizeFactors::constant(1.0)
    }
}

impl SizeFactors {
    /// SMPI's default latency factors (SimGrid 3.32, `network/model:SMPI`, which `smpirun` sets).
    pub const SMPI_LATENCY: &'static str = "65472:11.6436;15424:3.48845;9376:2.59299;\
        5776:2.18796;3484:1.88101;1426:1.61075;732:1.9503;257:1.95341;0:2.01467";
    /// SMPI's default bandwidth factors (SimGrid 3.32).
    pub const SMPI_BANDWIDTH: &'static str = "65472:0.940694;15424:0.697866;9376:0.58729;\
        5776:1.08739;3484:0.77493;1426:0.608902;732:0.341987;257:0.338112;0:0.812084";

    /// The same factor for every size.
    pub fn constant(f: f64) -> SizeFactors {
        SizeFactors(vec![(0, f)])
    }

    /// SimGrid's syntax: one factor (`13.01`), or `SIZE:FACTOR` pairs separated by `;` in any
    /// order (`65472:11.6436;0:2.01467`).
    pub fn parse(spec: &str) -> Result<SizeFactors, FactorError> {
        let bad = |part: &str| FactorError::Part {
            spec: spec.to_string(),
            part: part.to_string(),
        };
        let positive = |v: &str| {
            v.trim()
                .parse::<f64>()
                .ok()
                .filter(|f| f.is_finite() && *f > 0.0)
        };
        if let Some(f) = positive(spec) {
            return Ok(SizeFactors::constant(f));
        }
        let mut out = Vec::new();
        for part in spec.split(';').map(str::trim).filter(|p| !p.is_empty()) {
            let (size, f) = part.split_once(':').ok_or_else(|| bad(part))?;
            let size = size.trim().parse::<u64>().map_err(|_| bad(part))?;
            let f = positive(f).ok_or_else(|| bad(part))?;
            out.push((size, f));
        }
        if out.is_empty() {
            return Err(bad(spec));
        }
        out.sort_by_key(|p| p.0);
        Ok(SizeFactors(out))
    }

    /// The factor for a message of `bytes`.
    pub fn at(&self, bytes: u64) -> f64 {
        match self.0.partition_point(|p| p.0 <= bytes) {
            0 => 1.0,
            i => self.0[i - 1].1,
        }
    }
}

/// Everything but the inputs.
#[derive(Debug, Clone, PartialEq)]
pub struct PredictConfig {
    pub model: Model,
    /// Messages up to this size are eager (sent without waiting for the receive); larger ones
    /// wait for the matching receive (rendezvous).
    pub eager_threshold_bytes: u64,
    pub background: Background,
    pub seed: u64,
    /// Classes not listed use the profile's bandwidth and no extra latency.
    pub link_classes: Vec<LinkClass>,
    /// Packet size for the knee capacity.
    pub packet_bytes: u64,
    /// Record a timeline (spans and messages).
    pub timeline: bool,
    /// Whether a cable's two directions share its bandwidth.
    pub sharing: Sharing,
    /// Multiplies the links' latency of a message by size (SimGrid's latency factor; Tcom's
    /// own intercept is measured, so it is never scaled).
    pub latency_factor: SizeFactors,
    /// Multiplies the bandwidth a message gets by size (SimGrid's bandwidth factor: the message
    /// takes its share of the links but moves its bytes at `factor` times that share).
    pub bandwidth_factor: SizeFactors,
    /// SimGrid's TCP window bound (`network/TCP-gamma`, bytes): a message moves at most
    /// `gamma / (2 · its links' latency)` bytes per second. 0: no bound.
    pub tcp_gamma_bytes: f64,
    /// Per rank, a factor on its calc durations (a host faster or slower than the one the trace
    /// was converted for); missing ranks keep 1.
    pub calc_scale: Vec<f64>,
    /// LogGP model: a message a rank sends to itself costs only its CPU overheads (o_s + O·s
    /// to send, o_r + O·s to receive) and no L, g or G, as MPI libraries copy it in memory
    /// (Open MPI's `self` BTL). False (the default) sends it through the network like any
    /// other, as LogGOPSim does.
    pub local_self_messages: bool,
    /// With `local_self_messages`, what a message to oneself costs the CPU, when not the
    /// model's own o_s, o_r and O: a message to oneself takes the library's in-memory path on
    /// every stack of one MPI, so a TCP stack's o_s (5 µs of kernel send path) is not its cost;
    /// `commperf app --loop` gives the reference stack's overheads here.
    pub self_overheads: Option<SelfOverheads>,
    /// LogGP model: when a message's receive begins and what it holds the CPU for.
    pub loggp_receive: LoggpReceive,
    /// LogGP model: whether successive receives of a rank are g + G·s apart (LogGOPSim's
    /// receiving NIC; the default). False: a rank takes messages that have arrived at its CPU's
    /// pace, o_r + O·s, as on one node, where the sender's kernel or copy delivers them: TCP
    /// over loopback's g (5 µs, a send's kernel path) charged again between two receives of
    /// halo's put its replay 2.8 µs an iteration behind. Arrivals stay paced by the senders' g.
    pub receive_gap: bool,
    /// LogGP model: how much of a send and its receive run at the same time (see [`Overlap`]);
    /// None: none, as LogGOPSim has it.
    pub overlap: Option<Overlap>,
    /// LogGP model: when a rank takes in a message that has arrived (see [`Progress`]).
    pub progress: Progress,
    /// LogGP model: parameters by message size, `(from_bytes, parameters)` (any order): a
    /// message (a one-sided transfer: the larger of its two directions) of at least
    /// `from_bytes` takes the parameters of the largest such bound not above its size, the
    /// others the inputs' parameters. A platform's costs are not one line from 8 B to 2 MiB
    /// (Kielmann et al., "Fast measurement of LogP parameters for message passing platforms",
    /// give each parameter per size): the shared memory of Open MPI moves 8–256 B messages at
    /// 0.5 ns/B of G and 8–32 KiB ones at 0.08, and hpcc's 2 MiB messages priced at the first
    /// were replayed at 3.7 times their time. Empty (the default): one set, as LogGOPSim has.
    pub loggp_by_size: Vec<(u64, LogGp)>,
}

/// When the LogGP model's rank takes in a message that has arrived and waits for its CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Progress {
    /// LogGOPSim's rule: as soon as the CPU is free, before what the rank's program does next
    /// (the message came first).
    #[default]
    Arrival,
    /// When the rank has nothing else ready for its CPU: its ready sends and computation go
    /// first, as an MPI library without a progress thread handles arrivals only inside its
    /// calls, and a program that sends and then computes reaches its wait first. Under
    /// LogGOPSim's rule a rank leaving a computation took its peer's block in before sending
    /// its own, and the two halves of each of transpose's exchanges ran one after the other.
    Wait,
}

/// How a send and its receive overlap, measured (`bench loggp`): the one-way time is
/// `overlap_ns` below o_s + L + o_r, and an exchange (both sides send and receive at once) is
/// `send_wait_ns` below o_s + o_r. LogGP cannot hold either, as its L is not below zero and its
/// o_s is all CPU work.
///
/// The replay lets a message leave `overlap_ns` before its send's o_s ends (never before the
/// send begins), so a ping-pong takes the measured one-way time, and frees the sender's CPU
/// `send_wait_ns` before its o_s + O·s ends (never before the send begins): the part of the
/// send call spent waiting for the receiver, which an exchange spends on its own receive.
///
/// Open MPI's shared memory sends 8 KiB by rendezvous, its send call lasting until the peer
/// has copied the data: o_s 2.4 µs, o_r 2.4, one-way 2.4 (an overlap of 1.6 in the piece's
/// fit), an exchange 2.6 (a wait of 2.2, more than the overlap: the sender is free before the
/// data moves). Over loopback TCP the kernel delivers the message inside the send call, CPU
/// work that an exchange cannot overlap: o_s 4.9, o_r 2.3, one-way 5.3 (an overlap of 1.3–1.6
/// in the fits), an exchange 8.0 (no wait).
///
/// Where an exchange takes *more* than o_s + o_r (loopback TCP: 0.7 µs more, the two
/// directions' kernel work on the same sockets), `duplex_ns` is that excess: a receive costs it
/// on top of o_r when its message crossed the receiver's latest message to the same peer (sent
/// before this one was taken in, and not taken in before this one was sent), once per such
/// message. A ping-pong never pays it (each leg leaves after the other was taken in); an
/// exchange pays it on both receives, so it takes o_s + o_r + duplex, as measured; two
/// messages each way pay it once a side, as one exchange.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Overlap {
    pub overlap_ns: f64,
    pub send_wait_ns: f64,
    pub duplex_ns: f64,
}

impl Overlap {
    /// Checked: both finite and not negative.
    pub fn new(overlap_ns: f64, send_wait_ns: f64) -> Result<Overlap, String> {
        for (name, v) in [("overlap", overlap_ns), ("send's wait", send_wait_ns)] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(format!(
                    "the {name} must be a finite number of ns ≥ 0, not {v}"
                ));
            }
        }
        Ok(Overlap {
            overlap_ns,
            send_wait_ns,
            duplex_ns: 0.0,
        })
    }

    /// The same, with an exchange's excess over o_s + o_r (checked likewise).
    pub fn with_duplex(self, duplex_ns: f64) -> Result<Overlap, String> {
        if !(duplex_ns.is_finite() && duplex_ns >= 0.0) {
            return Err(format!(
                "the exchange's excess (duplex) must be a finite number of ns ≥ 0, not {duplex_ns}"
            ));
        }
        Ok(Overlap { duplex_ns, ..self })
    }
}

/// What a message to oneself costs the CPU under `local_self_messages` (ns, ns per byte).
#[derive(Debug, Clone, Copy, PartialEq)]
#[allow(non_snake_case)]
pub struct SelfOverheads {
    pub o_s_ns: f64,
    pub o_r_ns: f64,
    pub O_ns_per_byte: f64,
}

impl SelfOverheads {
    /// The model's own overheads.
    pub fn of(p: &LogGp) -> SelfOverheads {
        SelfOverheads {
            o_s_ns: p.o_s_ns,
            o_r_ns: p.o_r_ns,
            O_ns_per_byte: p.O_ns_per_byte,
        }
    }
}

/// When the LogGP model's receiver takes a message in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LoggpReceive {
    /// LogGOPSim's rule: the first byte arrives o_s + L after the send starts, and the receive
    /// holds the CPU for o_r + max(O, G)·(s−1) while the rest comes in.
    #[default]
    FirstByte,
    /// LogGP as Alexandrov et al. define it, and as `commperf emulate` slows G (Martin 1999: G
    /// is the sender's wire): the last byte arrives o_s + L + G·(s−1) after the send starts,
    /// and the receive holds the CPU for o_r + O·(s−1) only. The receiver's CPU is free while
    /// the bytes travel, so two ranks exchanging large messages both compute or send meanwhile,
    /// where LogGOPSim's rule makes each wait out the other's wire on its CPU.
    LastByte,
}

impl Default for PredictConfig {
    fn default() -> Self {
        PredictConfig {
            model: Model::Contention,
            eager_threshold_bytes: 64 * 1024,
            background: Background::None,
            seed: 1,
            link_classes: Vec::new(),
            packet_bytes: 4096,
            timeline: false,
            sharing: Sharing::FullDuplex,
            latency_factor: SizeFactors::default(),
            bandwidth_factor: SizeFactors::default(),
            tcp_gamma_bytes: 0.0,
            calc_scale: Vec::new(),
            local_self_messages: false,
            self_overheads: None,
            loggp_receive: LoggpReceive::FirstByte,
            receive_gap: true,
            overlap: None,
            progress: Progress::Arrival,
            loggp_by_size: Vec::new(),
        }
    }
}

impl PredictConfig {
    /// The LogGP replay of an MPI program whose ranks all ran on one node, with messages up to
    /// `eager_threshold_bytes` eager and a message to oneself at `self_overheads`: the preset of
    /// `commperf app --loop` and of `commperf emulate --sweep --predict`. Callers add what they
    /// measured: the `overlap` of a send and its receive (none by default), another `model` or
    /// `loggp_receive`.
    pub fn one_node_mpi(
        eager_threshold_bytes: u64,
        self_overheads: SelfOverheads,
    ) -> PredictConfig {
        PredictConfig {
            model: Model::LogGp,
            eager_threshold_bytes,
            // A rank's messages to itself (halo's west and east on 2 ranks) never reach the
            // network: both MPIs copy them in memory (Open MPI's `self` BTL), at overheads of
            // their own (on every stack of one MPI the same in-memory path; a TCP stack's o_s is
            // 5 µs of kernel send path, not theirs).
            local_self_messages: true,
            self_overheads: Some(self_overheads),
            // No NIC paces a rank's receives (ompi-tcp's 5 µs g charged between halo's two
            // receives an iteration: +26 %).
            receive_gap: false,
            // LogGP's own receive: on one node the sender's copy (shared memory) or its kernel
            // (TCP) moves the bytes, so they are all there when the send's work is done, and the
            // receive holds the CPU for o_r + O·s; LogGOPSim's NIC rule made the receiver wait
            // out G·s again (pipeline's 1 KiB stream on ompi-shm +10…+13 %, +2…+3 % so; seven
            // studies replayed both ways: 121 predictions within 10 % against 113, more in six
            // of them). It is also how the G knob of the emulations slows a message (the
            // sender's wire).
            loggp_receive: LoggpReceive::LastByte,
            // Neither MPI runs a progress thread: a rank takes in what has arrived inside its
            // calls, after its own sends. Taken in at once, a rank leaving a computation copied
            // its peer's block before sending its own, and transpose's exchanges ran one half
            // after the other (+22…+28 % on ompi-shm and mpich-tcp; −6…+1 % so, seven studies
            // replayed).
            progress: Progress::Wait,
            ..PredictConfig::default()
        }
    }
}

/// The inputs of one prediction.
#[derive(Debug, Clone, Copy)]
pub struct Inputs<'a> {
    pub workload: &'a Workload,
    pub network: &'a dyn Network,
    pub rank_map: &'a RankMap,
    pub tcom: &'a Tcom,
    /// LogGP parameters (LogGP model); None derives them from `tcom`.
    pub loggp: Option<&'a LogGp>,
    /// Names for the summary: trace path, format, profile source.
    pub trace_name: &'a str,
    pub trace_format: &'a str,
    pub profile_name: &'a str,
}

/// Why a prediction failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PredictError {
    #[error("deadlock at {at_us:.3} µs: {stuck} operations can never start or finish; first: rank {rank}, operation {op} ({what})")]
    Deadlock {
        at_us: f64,
        stuck: u64,
        rank: u32,
        op: u32,
        what: String,
    },
    #[error(transparent)]
    Topology(#[from] crate::topology::TopologyError),
    #[error("bad configuration: {0}")]
    Config(String),
}

/// A prediction and, when asked for, its timeline.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub prediction: Prediction,
    pub timeline: Option<Timeline>,
}

fn background_name(b: Background) -> String {
    match b {
        Background::None => "none".into(),
        Background::Const(f) => format!("const:{f}"),
        Background::Exp { mean, .. } => format!("exp:{mean}"),
    }
}

fn mean_background(b: Background) -> f64 {
    match b {
        Background::None => 0.0,
        Background::Const(f) => f,
        // The cap at 0.95 trims the tail: E[min(X, c)] = m·(1 − e^(−c/m)) for X ~ Exp(mean m).
        Background::Exp { mean, .. } if mean > 0.0 => mean * (1.0 - (-0.95 / mean).exp()),
        Background::Exp { .. } => 0.0,
    }
}

fn check(inputs: &Inputs<'_>, cfg: &PredictConfig) -> Result<(), PredictError> {
    match cfg.background {
        Background::Const(f) if !(0.0..1.0).contains(&f) => {
            return Err(PredictError::Config(format!(
                "constant background load {f} is outside [0, 1)"
            )))
        }
        Background::Exp { mean, period_ns }
            if !((0.0..1.0).contains(&mean) && period_ns.is_finite() && period_ns >= 1.0) =>
        {
            // The clock counts ns: a period under 1 ns redraws without end at one instant.
            return Err(PredictError::Config(format!(
                "exponential background mean {mean} must lie in [0, 1) and its period be at \
                 least 1 ns (not {period_ns} ns)"
            )));
        }
        _ => {}
    }
    let slowest = sim::MIN_SHARE * inputs.tcom.peak_bytes_per_ns();
    for c in &cfg.link_classes {
        if let Some(b) = c.bandwidth_bytes_per_ns.filter(|b| *b < slowest) {
            return Err(PredictError::Config(format!(
                "link class `{}`: {} B/s is slower than the engine models ({} B/s, a \
                 billionth of the profile's peak)",
                c.name,
                b * 1e9,
                slowest * 1e9
            )));
        }
        if c.bandwidth_bytes_per_ns
            .is_some_and(|b| !(b.is_finite() && b > 0.0))
            || !(c.latency_ns.is_finite() && c.latency_ns >= 0.0)
        {
            return Err(PredictError::Config(format!(
                "link class `{}` needs a positive bandwidth and a non-negative latency",
                c.name
            )));
        }
    }
    if !(cfg.tcp_gamma_bytes.is_finite() && cfg.tcp_gamma_bytes >= 0.0) {
        return Err(PredictError::Config(
            "the TCP window (gamma) must be a non-negative number of bytes".into(),
        ));
    }
    if let Some(s) = cfg
        .calc_scale
        .iter()
        .find(|s| !(s.is_finite() && **s > 0.0))
    {
        return Err(PredictError::Config(format!(
            "a calc scale of {s} is not a positive factor"
        )));
    }
    if cfg.packet_bytes == 0 {
        return Err(PredictError::Config(
            "the packet size must be positive".into(),
        ));
    }
    if inputs.rank_map.0.len() < inputs.workload.nranks() as usize {
        return Err(PredictError::Config(format!(
            "the rank map places {} ranks but the workload has {}",
            inputs.rank_map.0.len(),
            inputs.workload.nranks()
        )));
    }
    let hosts = inputs.network.hosts();
    if let Some(&h) = inputs.rank_map.0.iter().find(|&&h| h >= hosts) {
        return Err(PredictError::Config(format!(
            "the rank map names host {h}, but the network has {hosts} hosts"
        )));
    }
    Ok(())
}

/// What a deadlock report says of the first operation that can never finish.
fn stuck_op(op: crate::workload::OpKind) -> String {
    use crate::workload::{OpKind, ANY};
    let who = |v: u32, what: &str| {
        if v == ANY {
            "any".to_string()
        } else {
            format!("{what}{v}")
        }
    };
    match op {
        OpKind::Calc { ns } => format!("calc {ns} ns, waiting for its dependencies"),
        OpKind::Send { to, tag, bytes } => {
            format!("send {bytes} B to rank {to} tag {tag}, never received")
        }
        OpKind::Ssend { to, tag, bytes } => {
            format!("synchronous send {bytes} B to rank {to} tag {tag}, never received")
        }
        OpKind::Recv { from, tag, bytes } => format!(
            "recv {bytes} B from {} tag {}, never matched",
            who(from, "rank "),
            who(tag, "")
        ),
        OpKind::Rma { target, out, back } => format!(
            "one-sided transfer with rank {target} ({out} B out, {back} B back), waiting for \
             its dependencies"
        ),
    }
}

/// Predicts the workload's communication time.
pub fn predict(inputs: &Inputs<'_>, cfg: &PredictConfig) -> Result<Outcome, PredictError> {
    check(inputs, cfg)?;
    let sim = simulate(inputs, cfg)?;
    // A figure past f64's range is no prediction: refused, never printed as `-` or null.
    if !sim.total_ns.is_finite() {
        return Err(PredictError::Config(format!(
            "the predicted time is not finite ({}): a parameter is too large",
            sim.total_ns
        )));
    }
    let total_us = sim.total_ns / 1e3;
    let ranks = sim
        .ranks
        .iter()
        .enumerate()
        .map(|(r, &(finish, compute, comm))| RankTimes {
            rank: r as u32,
            host: inputs.network.host_name(inputs.rank_map.0[r]),
            finish_us: finish / 1e3,
            compute_us: compute / 1e3,
            comm_us: comm / 1e3,
            wait_us: ((finish - compute - comm) / 1e3).max(0.0),
        })
        .collect();
    let links = if cfg.model == Model::Contention {
        link_uses(inputs, &sim)
    } else {
        Vec::new()
    };
    let mut order: Vec<&LinkUse> = links.iter().collect();
    order.sort_by(|a, b| {
        b.busy_us
            .total_cmp(&a.busy_us)
            .then(b.bytes.total_cmp(&a.bytes))
            .then(a.id.cmp(&b.id))
    });
    let bottlenecks: Vec<String> = order
        .iter()
        .take(5)
        .map(|l| format!("{}->{}", l.from, l.to))
        .collect();
    let knee = order
        .first()
        .map(|l| knee_of(l, inputs, cfg, &sim, total_us));
    let prediction = Prediction {
        schema_version: PREDICTION_SCHEMA_VERSION,
        tool: format!("commperf {}", env!("CARGO_PKG_VERSION")),
        model: match cfg.model {
            Model::Contention => "contention".into(),
            Model::LogGp => match cfg.loggp_receive {
                LoggpReceive::FirstByte => "loggp".into(),
                LoggpReceive::LastByte => "loggp (last-byte)".into(),
            },
        },
        trace: inputs.trace_name.to_string(),
        trace_format: inputs.trace_format.to_string(),
        topology: inputs.network.describe(),
        profile: inputs.profile_name.to_string(),
        background: background_name(cfg.background),
        seed: cfg.seed,
        eager_threshold_bytes: cfg.eager_threshold_bytes,
        ranks_count: inputs.workload.nranks(),
        operations: inputs.workload.len() as u64,
        messages: sim.messages,
        events: sim.events,
        total_us,
        ranks,
        links,
        bottlenecks,
        knee: if cfg.model == Model::Contention {
            knee
        } else {
            None
        },
        bounds: None,
    };
    Ok(Outcome {
        prediction,
        timeline: sim.timeline,
    })
}

/// Runs the model `cfg` names over the inputs (checked by [`check`]).
fn simulate(inputs: &Inputs<'_>, cfg: &PredictConfig) -> Result<sim::SimResult, PredictError> {
    let loggp = inputs
        .loggp
        .copied()
        .unwrap_or_else(|| LogGp::from_profile(None, inputs.tcom));
    let mut by_size = cfg.loggp_by_size.clone();
    by_size.sort_by_key(|b| b.0);
    Ok(match cfg.model {
        Model::LogGp => loggops::run(
            inputs.workload,
            loggops::Params {
                base: loggp,
                by_size: &by_size,
            },
            cfg.eager_threshold_bytes,
            cfg.timeline,
            cfg.local_self_messages.then(|| {
                cfg.self_overheads
                    .unwrap_or_else(|| SelfOverheads::of(&loggp))
            }),
            loggops::Rules {
                receive: cfg.loggp_receive,
                receive_gap: cfg.receive_gap,
                overlap: cfg.overlap.unwrap_or_default(),
                progress: cfg.progress,
            },
        )?,
        Model::Contention => sim::Sim::new(
            inputs.workload,
            inputs.network,
            inputs.rank_map,
            inputs.tcom,
            cfg,
        )?
        .run()?,
    })
}

/// The contention model's use of each link that carried anything.
fn link_uses(inputs: &Inputs<'_>, sim: &sim::SimResult) -> Vec<LinkUse> {
    let net_links = inputs.network.links();
    let mut links = Vec::new();
    for (id, &(busy, bytes, max_count)) in sim.links.iter().enumerate() {
        if max_count == 0 {
            continue;
        }
        let l = &net_links[id];
        links.push(LinkUse {
            id: id as u32,
            from: l.from.clone(),
            to: l.to.clone(),
            class: l.class.clone(),
            bytes,
            busy_us: busy / 1e3,
            utilization: if sim.total_ns > 0.0 {
                busy / sim.total_ns
            } else {
                0.0
            },
            max_contention: max_count,
        });
    }
    links
}

/// The knee figures of the busiest link `l`: its capacity in packets per second under the
/// mean background load, against the throughput it carried while busy and over the run.
fn knee_of(
    l: &LinkUse,
    inputs: &Inputs<'_>,
    cfg: &PredictConfig,
    sim: &sim::SimResult,
    total_us: f64,
) -> Knee {
    let bg = mean_background(cfg.background);
    let pkt = cfg.packet_bytes as f64;
    let cap = sim.link_cap[l.id as usize];
    let peak_bytes_per_s = inputs.tcom.peak_bytes_per_ns() * 1e9 * cap;
    Knee {
        link: format!("{}->{}", l.from, l.to),
        packet_bytes: cfg.packet_bytes,
        capacity_pkts_per_s: peak_bytes_per_s * (1.0 - bg) / pkt,
        busy_throughput_pkts_per_s: if l.busy_us > 0.0 {
            l.bytes / pkt / (l.busy_us / 1e6)
        } else {
            0.0
        },
        mean_throughput_pkts_per_s: if total_us > 0.0 {
            l.bytes / pkt / (total_us / 1e6)
        } else {
            0.0
        },
        background_load: bg,
    }
}

/// `--bounds` (Papaefstathiou 2001: predict bounds, not single figures): the best case without
/// background load, and the average and worst over `runs` seeded background draws (seeds `seed`,
/// `seed + 1`, …), run on all cores. A constant load needs one draw.
pub fn bounds(inputs: &Inputs<'_>, cfg: &PredictConfig, runs: u32) -> Result<Bounds, PredictError> {
    let runs = match cfg.background {
        Background::Exp { .. } => runs.max(1),
        _ => 1,
    };
    let mut cfgs = Vec::with_capacity(runs as usize + 1);
    let mut best = cfg.clone();
    best.background = Background::None;
    best.timeline = false;
    cfgs.push(best);
    for i in 0..runs {
        let mut c = cfg.clone();
        c.seed = cfg.seed.wrapping_add(i as u64);
        c.timeline = false;
        cfgs.push(c);
    }
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(cfgs.len());
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut totals: Vec<Option<Result<f64, PredictError>>> = vec![None; cfgs.len()];
    let results = std::sync::Mutex::new(&mut totals);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if i >= cfgs.len() {
                    break;
                }
                let r = predict(inputs, &cfgs[i]).map(|o| o.prediction.total_us);
                if let Ok(mut guard) = results.lock() {
                    guard[i] = Some(r);
                }
            });
        }
    });
    let mut vals = Vec::with_capacity(totals.len());
    for t in totals {
        match t {
            Some(Ok(v)) => vals.push(v),
            Some(Err(e)) => return Err(e),
            None => return Err(PredictError::Config("a bounds run did not finish".into())),
        }
    }
    let draws = &vals[1..];
    Ok(Bounds {
        best_us: vals[0],
        average_us: draws.iter().sum::<f64>() / draws.len() as f64,
        worst_us: draws.iter().copied().fold(f64::MIN, f64::max),
        runs,
    })
}

#[cfg(test)]
mod tests;
