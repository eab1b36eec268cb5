//! `commperf predict`: the command line of the predictor, turned into the predict crate's
//! configuration (the library never sees clap).

use crate::output::{print, write_atomically};
use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use commperf_core::Profile;
use commperf_model::tcom::Tcom;
use commperf_predict::collectives::Algorithms;
use commperf_predict::engine::{
    self, Background, Inputs, LinkClass, LogGp, LoggpReceive, Model, Overlap, PredictConfig,
    Progress, SelfOverheads, Sharing, SizeFactors,
};
use commperf_predict::parse::{self, ParseOptions, TraceFormat};
use commperf_predict::topology::{self, RankMap, TopologySpec};
use std::path::PathBuf;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ModelArg {
    /// The contention model (after Papaefstathiou 2001): link contention and background load
    /// over the topology
    Contention,
    /// LogGP/LogGOPS: endpoint contention only, for comparison with LogGOPSim
    Loggp,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LoggpReceiveArg {
    /// LogGOPSim: the first byte arrives after o_s + L; the receive holds the CPU for the rest
    FirstByte,
    /// LogGP's original: the last byte arrives after o_s + L + G·(s−1); the CPU is free meanwhile
    LastByte,
}

impl From<LoggpReceiveArg> for LoggpReceive {
    fn from(a: LoggpReceiveArg) -> Self {
        match a {
            LoggpReceiveArg::FirstByte => LoggpReceive::FirstByte,
            LoggpReceiveArg::LastByte => LoggpReceive::LastByte,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProgressArg {
    /// LogGOPSim: as soon as the CPU is free, before what the program does next
    Arrival,
    /// When the rank has nothing else ready: its sends and computation first (an MPI library
    /// without a progress thread)
    Wait,
}

impl From<ProgressArg> for Progress {
    fn from(a: ProgressArg) -> Self {
        match a {
            ProgressArg::Arrival => Progress::Arrival,
            ProgressArg::Wait => Progress::Wait,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SharingArg {
    /// Each direction of a cable has its whole bandwidth
    FullDuplex,
    /// Both directions of a cable share one bandwidth (SimGrid's SHARED, its default)
    Shared,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FactorsArg {
    /// No correction: latency and bandwidth as given
    None,
    /// SMPI's piecewise factors by message size (what `smpirun` uses: network/model SMPI)
    Smpi,
    /// SimGrid's LV08 model: latency × 13.01, bandwidth × 0.97
    Lv08,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PredictFormat {
    Table,
    Json,
}

#[derive(Debug, Args)]
pub struct PredictArgs {
    /// The workload trace: commperf's own format, a GOAL schedule, a SimGrid
    /// time-independent trace (one file, or an index of per-rank files), or an OTF2 archive
    /// (its anchor file, `traces.otf2`: Score-P's, or `commperf monitor --trace`'s)
    #[arg(long, value_name = "FILE")]
    pub trace: PathBuf,
    #[arg(long = "format-in", value_name = "FORMAT", value_parser = trace_format, help = trace_format_help())]
    pub format_in: Option<InFormat>,
    /// The network: crossbar, clos[:hosts=N,group=G], fattree:k=K, torus:XxY[xZ], a
    /// Graphviz .dot file whose edge comments list the destinations routed over them, or a
    /// SimGrid platform .xml (cluster, or hosts, links and routes; links keep their bandwidth,
    /// latency and sharing policy, hosts their speed)
    #[arg(long, value_name = "SPEC", default_value = "crossbar", value_parser = topology_spec)]
    pub topology: TopologySpec,
    /// Rank → host placement file (`RANK HOST` per line) [default: rank r on host r]
    #[arg(long, value_name = "FILE")]
    pub rank_map: Option<PathBuf>,
    /// A profile from `commperf calibrate` (Tcom pieces, LogGP) [default: 10 Gbit/s, 5 µs]
    #[arg(long, value_name = "FILE")]
    pub profile: Option<PathBuf>,
    /// The model
    #[arg(long, value_enum, default_value = "contention")]
    pub model: ModelArg,
    #[arg(long = "algo", value_name = "FAMILY=NAME,…", value_parser = algorithms, help = algorithms_help())]
    pub algo: Vec<String>,
    /// Background load on every link: none, const:F (a fraction in [0, 1)), or exp:F
    /// (exponential around the mean F, redrawn every --background-period)
    #[arg(long, value_name = "SPEC", default_value = "none", value_parser = background)]
    pub background: Background,
    /// How often an exponential background load is redrawn, in µs
    #[arg(long, value_name = "US", default_value = "100", value_parser = background_period)]
    pub background_period: f64,
    /// Seed of every random choice (background draws, Clos uplinks)
    #[arg(long, default_value = "1")]
    pub seed: u64,
    /// Also predict best (no background), average and worst case over seeded draws, on all cores
    #[arg(long)]
    pub bounds: bool,
    /// Background draws for --bounds
    #[arg(long, value_name = "N", default_value = "16", value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub bounds_runs: u32,
    /// Host speed for SimGrid `compute` actions, flop/s
    #[arg(long, value_name = "FLOPS", default_value = "1e9", value_parser = positive_f64)]
    pub host_speed: f64,
    /// LogGP/LogGOPS parameters for --model loggp, in ns (ns per byte for G and O), as
    /// LogGOPSim takes them: L=…,o=…,g=…,G=…[,O=…] (o for both sides, or o_s=… and o_r=…)
    /// [default: from the profile's LogGP points]
    #[arg(long, value_name = "L=NS,o=NS,g=NS,G=NS[,O=NS]", value_parser = loggp_params)]
    pub loggp: Option<LogGp>,
    /// LogGP parameters for messages of SIZE bytes and more: SIZE:L=…,o=…,g=…,G=…[,O=…]
    /// (repeatable; a message takes the set of the largest SIZE not above its size, smaller
    /// ones --loggp's). A platform's costs per byte change with the protocol: one set fitted to
    /// small messages priced hpcc's 2 MiB messages at 3.7 times their time
    #[arg(long, value_name = "SIZE:L=NS,o=NS,g=NS,G=NS", value_parser = loggp_from)]
    pub loggp_from: Vec<(u64, LogGp)>,
    /// Messages up to this size are sent eagerly; larger ones wait for the receive
    #[arg(long, value_name = "SIZE", default_value = "64k", value_parser = crate::cli::size)]
    pub eager: u64,
    /// A link class's bandwidth and extra latency: CLASS=RATE[,LATENCY], e.g. core=40Gb/s,1us or
    /// host=1.25GB/s (B bytes, b bits)
    /// (repeatable; classes not given run at the profile's bandwidth)
    #[arg(long = "link", value_name = "CLASS=RATE[,LAT]", value_parser = link_class)]
    pub links: Vec<LinkClass>,
    /// Whether a cable's two directions share its bandwidth (contention model)
    #[arg(long, value_enum, default_value = "full-duplex")]
    pub sharing: SharingArg,
    /// Latency and bandwidth correction factors by message size, as SimGrid applies them to
    /// link latency and bandwidth (Tcom's own intercept is never scaled)
    #[arg(long, value_enum, default_value = "none")]
    pub factors: FactorsArg,
    /// The links' latency factor, SimGrid's syntax: a number, or SIZE:FACTOR;… (replaces the
    /// one --factors gives)
    #[arg(long, value_name = "SPEC", value_parser = size_factors)]
    pub latency_factor: Option<SizeFactors>,
    /// The bandwidth factor, SimGrid's syntax (replaces the one --factors gives)
    #[arg(long, value_name = "SPEC", value_parser = size_factors)]
    pub bandwidth_factor: Option<SizeFactors>,
    /// SimGrid's TCP window (network/TCP-gamma, bytes): a message moves at most
    /// gamma / (2 × its links' latency) per second; 0 turns the bound off
    #[arg(long, value_name = "BYTES", default_value = "0", value_parser = nonneg_f64)]
    pub tcp_gamma: f64,
    /// LogGP model: a message a rank sends to itself costs only o_s + O·s and o_r + O·s (MPI
    /// copies it in memory), no L, g or G [default: through the network, as LogGOPSim]
    #[arg(long)]
    pub local_self_messages: bool,
    /// With --local-self-messages: what a message to oneself costs, when not the model's own
    /// overheads (ns, ns per byte for O): o=…[,O=…], or o_s=… and o_r=… [default: O=0]. A
    /// message to oneself takes the MPI library's in-memory path on every stack (a TCP stack's
    /// o_s is its kernel send path, which such a message never enters)
    #[arg(long, value_name = "o_s=NS,o_r=NS[,O=NS]", value_parser = self_overheads, requires = "local_self_messages")]
    pub self_overheads: Option<SelfOverheads>,
    /// LogGP model: when a message's receive begins. first-byte (LogGOPSim): the first byte
    /// arrives o_s + L after the send starts and the receive holds the CPU for
    /// o_r + max(O, G)·(s−1) while the rest comes in; last-byte (LogGP's original, and G as
    /// `commperf emulate` slows it): the last byte arrives o_s + L + G·(s−1) after, and the
    /// receive holds the CPU for o_r + O·(s−1) only
    #[arg(long, value_enum, default_value = "first-byte")]
    pub loggp_receive: LoggpReceiveArg,
    /// LogGP model: no gap between a rank's receives: it takes messages that have arrived at
    /// its CPU's pace (o_r + O·s) rather than g + G·s apart (LogGOPSim's receiving NIC), as on
    /// one node, where the sender's kernel or copy delivers them (TCP over loopback's g is a
    /// send's kernel path). Arrivals stay paced by the senders' g
    #[arg(long)]
    pub no_receive_gap: bool,
    /// LogGP model: how much of a send and its receive run at once, as `bench loggp` measures
    /// it (ns): a message leaves `overlap` before its send's o_s ends (a ping-pong leg is
    /// o_s + o_r − overlap), and the send frees the CPU `wait` before its o_s + O·s ends (the
    /// part of the send call spent waiting for the receiver: an exchange is o_s + o_r − wait);
    /// `duplex`: where an exchange takes more than o_s + o_r, the excess, charged to a receive
    /// whose message crossed one of the receiver's own to the same peer [default: none, as
    /// LogGOPSim]
    #[arg(long, value_name = "overlap=NS[,wait=NS][,duplex=NS]", value_parser = overlap)]
    pub overlap: Option<Overlap>,
    /// LogGP model: when a rank takes in a message that has arrived and waits for its CPU.
    /// arrival (LogGOPSim): as soon as the CPU is free; wait: only when the rank has nothing
    /// else ready, its sends and computation going first, as an MPI library without a
    /// progress thread takes arrivals in inside its calls
    #[arg(long, value_enum, default_value = "arrival")]
    pub progress: ProgressArg,
    /// Packet size for the knee capacity
    #[arg(long, value_name = "SIZE", default_value = "4k", value_parser = crate::cli::size)]
    pub packet: u64,
    /// Output format
    #[arg(long, value_enum, default_value = "table")]
    pub format: PredictFormat,
    /// Write the result to FILE (JSON when it ends in .json)
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Write the space-time diagram as Chrome trace-event JSON (opens in Perfetto)
    #[arg(long, value_name = "FILE.json")]
    pub timeline: Option<PathBuf>,
    /// Write the space-time diagram as SVG
    #[arg(long, value_name = "FILE.svg")]
    pub timeline_svg: Option<PathBuf>,
}

/// `--algo`: checked here (a bad name is a usage error), combined in order in [`run`].
fn algorithms(s: &str) -> Result<String, String> {
    Algorithms::parse_list(s).map(|_| s.to_string())
}

fn algorithms_help() -> String {
    let families: Vec<String> = Algorithms::choices()
        .iter()
        .map(|(f, names)| format!("{f}={}", names.join("|")))
        .collect();
    format!(
        "The algorithm each collective family is expanded with, FAMILY=NAME,… (repeatable; \
         families not named keep the first): {}",
        families.join(", ")
    )
}

/// A trace format `--format-in` names: one of predict's text formats, or OTF2, which the
/// otf2 crate reads (predict itself links no C library).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InFormat {
    Text(TraceFormat),
    Otf2,
}

fn trace_format_help() -> String {
    format!(
        "The trace's format: {}, otf2 [default: otf2 for a .otf2 file, else detected from the \
         content]",
        crate::cli::names(TraceFormat::ALL)
    )
}

fn trace_format(s: &str) -> Result<InFormat, String> {
    if s == "otf2" {
        return Ok(InFormat::Otf2);
    }
    s.parse()
        .map(InFormat::Text)
        .map_err(|e: String| e.replace("or simgrid)", "simgrid or otf2)"))
}

/// Reads the trace `--trace` names: (workload, the text format read, or None for OTF2).
fn read_workload(
    a: &PredictArgs,
    opts: &ParseOptions,
) -> Result<(commperf_predict::workload::Workload, Option<TraceFormat>)> {
    let context = || format!("reading trace {}", a.trace.display());
    match a.format_in {
        Some(InFormat::Otf2) => {}
        None if commperf_otf2::is_anchor(&a.trace) => {}
        f => {
            let text = match f {
                Some(InFormat::Text(t)) => Some(t),
                _ => None,
            };
            let (w, t) = parse::read_trace_as(&a.trace, text, opts).with_context(context)?;
            return Ok((w, Some(t)));
        }
    }
    let w = commperf_otf2::read_workload(&a.trace, opts).with_context(context)?;
    Ok((w, None))
}

fn topology_spec(s: &str) -> Result<TopologySpec, String> {
    s.parse()
        .map_err(|e: topology::TopologyError| e.to_string())
}

/// `--loggp`: every parameter named once; L, o (or o_s and o_r), g and G required.
/// `NAME=NS,…` into slots: each key fills its slots (`o` both overheads), each slot at most
/// once; `what` names a key in the errors.
/// The largest time parameter (--loggp, --self-overheads, --overlap) read, in ns.
const MAX_PARAMETER_NS: f64 = 1e15;

fn named_ns<const N: usize>(
    s: &str,
    what: &str,
    keys: &[(&str, &[usize])],
    slots: [&str; N],
) -> Result<[Option<f64>; N], String> {
    let names = keys.iter().map(|k| k.0).collect::<Vec<_>>().join(", ");
    let mut v: [Option<f64>; N] = [None; N];
    for part in s.split(',') {
        let (k, val) = part
            .split_once('=')
            .ok_or_else(|| format!("'{part}' is not NAME=NS (names: {names})"))?;
        let x: f64 = val
            .trim()
            .trim_end_matches("ns")
            .parse()
            .ok()
            .filter(|x: &f64| x.is_finite() && *x >= 0.0)
            .ok_or_else(|| format!("{k}={val}: not a non-negative number of ns"))?;
        // Larger, and sums over a trace leave f64's range: the prediction would be infinite.
        if x > MAX_PARAMETER_NS {
            return Err(format!(
                "{k}={val}: more than {MAX_PARAMETER_NS:e} ns (11 days) per message or byte"
            ));
        }
        let Some((_, at)) = keys.iter().find(|(n, _)| *n == k.trim()) else {
            return Err(format!("unknown {what} '{}' (names: {names})", k.trim()));
        };
        for &i in *at {
            if v[i].replace(x).is_some() {
                return Err(format!("{} is given twice", slots[i]));
            }
        }
    }
    Ok(v)
}

/// `--self-overheads`: o (both sides) or o_s and o_r, and O (default 0), in ns.
fn self_overheads(s: &str) -> Result<SelfOverheads, String> {
    const SLOTS: [&str; 3] = ["o_s", "o_r", "O"];
    let keys: [(&str, &[usize]); 4] = [("o", &[0, 1]), ("o_s", &[0]), ("o_r", &[1]), ("O", &[2])];
    let v = named_ns(s, "overhead", &keys, SLOTS)?;
    let need = |i: usize| v[i].ok_or_else(|| format!("{} is missing", SLOTS[i]));
    Ok(SelfOverheads {
        o_s_ns: need(0)?,
        o_r_ns: need(1)?,
        O_ns_per_byte: v[2].unwrap_or(0.0),
    })
}

fn overlap(s: &str) -> Result<Overlap, String> {
    const SLOTS: [&str; 3] = ["overlap", "wait", "duplex"];
    let keys: [(&str, &[usize]); 3] = [("overlap", &[0]), ("wait", &[1]), ("duplex", &[2])];
    let v = named_ns(s, "figure", &keys, SLOTS)?;
    Overlap::new(v[0].ok_or("overlap is missing")?, v[1].unwrap_or(0.0))?
        .with_duplex(v[2].unwrap_or(0.0))
}

pub(crate) fn loggp_params(s: &str) -> Result<LogGp, String> {
    const NAMES: [&str; 6] = ["L", "o_s", "o_r", "g", "G", "O"];
    let keys: [(&str, &[usize]); 7] = [
        ("L", &[0]),
        ("o", &[1, 2]),
        ("o_s", &[1]),
        ("o_r", &[2]),
        ("g", &[3]),
        ("G", &[4]),
        ("O", &[5]),
    ];
    let v = named_ns(s, "LogGP parameter", &keys, NAMES)?;
    let need = |i: usize| v[i].ok_or_else(|| format!("{} is missing", NAMES[i]));
    Ok(LogGp {
        L_ns: need(0)?,
        o_s_ns: need(1)?,
        o_r_ns: need(2)?,
        g_ns: need(3)?,
        G_ns_per_byte: need(4)?,
        O_ns_per_byte: v[5].unwrap_or(0.0),
    })
}

/// LogGP parameters as the summary's header names them.
fn loggp_text(p: &LogGp) -> String {
    format!(
        "L={} o_s={} o_r={} g={} ns, G={} O={} ns/B",
        p.L_ns, p.o_s_ns, p.o_r_ns, p.g_ns, p.G_ns_per_byte, p.O_ns_per_byte
    )
}

/// `SIZE:PARAMS` of --loggp-from: a size as the other size options take it, then --loggp's
/// parameters.
fn loggp_from(s: &str) -> Result<(u64, LogGp), String> {
    let (size, params) = s
        .split_once(':')
        .ok_or_else(|| format!("'{s}' is not SIZE:L=…,o=…,g=…,G=…"))?;
    Ok((crate::cli::size(size.trim())?, loggp_params(params)?))
}

fn positive_f64(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!("'{s}' is not a positive number")),
    }
}

/// `--background-period` in µs: at least 1 ns, the engine's clock tick (a shorter period
/// would redraw without end).
fn background_period(s: &str) -> Result<f64, String> {
    let v = positive_f64(s)?;
    if v < 1e-3 {
        return Err(format!(
            "'{s}' µs is under 1 ns (rounds to 0 ns): give at least 0.001"
        ));
    }
    Ok(v)
}

fn nonneg_f64(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!("'{s}' is not a non-negative number")),
    }
}

fn size_factors(s: &str) -> Result<SizeFactors, String> {
    SizeFactors::parse(s).map_err(|e| e.to_string())
}

fn fraction(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if (0.0..1.0).contains(&v) => Ok(v),
        _ => Err(format!("'{s}' is not a fraction in [0, 1)")),
    }
}

fn background(s: &str) -> Result<Background, String> {
    match s.split_once(':') {
        None if s == "none" => Ok(Background::None),
        Some(("const", f)) => Ok(Background::Const(fraction(f)?)),
        // The period is filled in from --background-period.
        Some(("exp", f)) => Ok(Background::Exp {
            mean: fraction(f)?,
            period_ns: 0.0,
        }),
        _ => Err(format!(
            "'{s}' is not a background load (none, const:F or exp:F)"
        )),
    }
}

/// `RATE` in bytes per ns, in the one rate syntax of `commperf_core::rate` (B bytes, b bits).
fn rate_bytes_per_ns(s: &str) -> Result<f64, String> {
    commperf_core::parse_rate(s)
        .map(|r| r.bytes_per_ns())
        .map_err(|e| e.to_string())
}

fn duration_ns(s: &str) -> Result<f64, String> {
    let (num, unit) = s.split_at(
        s.find(|c: char| c.is_ascii_alphabetic() || c == 'µ')
            .unwrap_or(s.len()),
    );
    let v: f64 = num
        .parse()
        .map_err(|_| format!("'{s}' is not a duration like 1us"))?;
    let mult = match unit {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => return Err(format!("'{s}': give a unit (ns, us, ms, s)")),
    };
    if !(v.is_finite() && v >= 0.0) {
        return Err(format!("'{s}' is not a non-negative duration"));
    }
    Ok(v * mult)
}

fn link_class(s: &str) -> Result<LinkClass, String> {
    let (name, rest) = s
        .split_once('=')
        .ok_or_else(|| format!("'{s}' is not CLASS=RATE[,LATENCY]"))?;
    if name.is_empty() {
        return Err(format!("'{s}' names no link class"));
    }
    let (rate, lat) = match rest.split_once(',') {
        Some((r, l)) => (r, Some(l)),
        None => (rest, None),
    };
    Ok(LinkClass {
        name: name.to_string(),
        bandwidth_bytes_per_ns: if rate.is_empty() {
            None
        } else {
            Some(rate_bytes_per_ns(rate)?)
        },
        latency_ns: lat.map(duration_ns).transpose()?.unwrap_or(0.0),
    })
}

/// Reads a profile from `commperf calibrate`, naming the file when it is not one.
pub(crate) fn read_profile(path: Option<&std::path::Path>) -> Result<Option<Profile>> {
    Ok(path
        .map(commperf_predict::values::read_profile)
        .transpose()?)
}

/// Runs `commperf predict`.
pub fn run(a: &PredictArgs) -> Result<()> {
    crate::output::preflight(&[
        ("-o", a.out.as_deref()),
        ("--timeline", a.timeline.as_deref()),
        ("--timeline-svg", a.timeline_svg.as_deref()),
    ])?;
    let opts = ParseOptions {
        host_speed_flops: a.host_speed,
        algorithms: Algorithms::parse_list(&a.algo.join(",")).map_err(anyhow::Error::msg)?,
    };
    let (workload, text_format) = read_workload(a, &opts)?;
    let profile = read_profile(a.profile.as_deref())?;
    let tcom = match &profile {
        Some(p) => Tcom::from_profile(p).with_context(|| {
            format!(
                "profile {}",
                a.profile
                    .as_ref()
                    .map_or(String::new(), |p| p.display().to_string())
            )
        })?,
        // A SimGrid platform carries every link's bandwidth and latency: Tcom only sets the
        // reference the link bandwidths are relative to, with no start-up cost of its own.
        None if matches!(a.topology, TopologySpec::SimGrid(_)) => Tcom::line(0.0, 1.0),
        None => Tcom::default_ethernet(),
    };
    let loggp = a
        .loggp
        .unwrap_or_else(|| LogGp::from_profile(profile.as_ref(), &tcom));
    let net = topology::build(&a.topology, workload.nranks(), a.seed)?;
    let map = match &a.rank_map {
        Some(path) => RankMap::from_file(path, &*net)?,
        None => RankMap::identity(workload.nranks(), &*net)?,
    };
    let background = match a.background {
        Background::Exp { mean, .. } => Background::Exp {
            mean,
            period_ns: a.background_period * 1e3,
        },
        b => b,
    };
    let (lat_f, bw_f) = match a.factors {
        FactorsArg::None => (SizeFactors::default(), SizeFactors::default()),
        FactorsArg::Smpi => (
            SizeFactors::parse(SizeFactors::SMPI_LATENCY)?,
            SizeFactors::parse(SizeFactors::SMPI_BANDWIDTH)?,
        ),
        FactorsArg::Lv08 => (SizeFactors::constant(13.01), SizeFactors::constant(0.97)),
    };
    // A SimGrid trace's `compute` amounts are flops: a platform host's own speed replaces
    // --host-speed for the ranks placed on it.
    let calc_scale: Vec<f64> = if text_format == Some(TraceFormat::SimGrid) {
        map.0
            .iter()
            .map(|&h| net.host_speed(h).map_or(1.0, |s| a.host_speed / s))
            .collect()
    } else {
        Vec::new()
    };
    let cfg = PredictConfig {
        model: match a.model {
            ModelArg::Contention => Model::Contention,
            ModelArg::Loggp => Model::LogGp,
        },
        eager_threshold_bytes: a.eager,
        background,
        seed: a.seed,
        link_classes: a.links.clone(),
        packet_bytes: a.packet,
        timeline: a.timeline.is_some() || a.timeline_svg.is_some(),
        sharing: match a.sharing {
            SharingArg::FullDuplex => Sharing::FullDuplex,
            SharingArg::Shared => Sharing::Shared,
        },
        latency_factor: a.latency_factor.clone().unwrap_or(lat_f),
        bandwidth_factor: a.bandwidth_factor.clone().unwrap_or(bw_f),
        tcp_gamma_bytes: a.tcp_gamma,
        local_self_messages: a.local_self_messages,
        self_overheads: a.self_overheads,
        loggp_receive: a.loggp_receive.into(),
        receive_gap: !a.no_receive_gap,
        overlap: a.overlap,
        progress: a.progress.into(),
        loggp_by_size: a.loggp_from.clone(),
        calc_scale,
    };
    if a.loggp.is_some() && cfg.model != Model::LogGp {
        bail!("--loggp sets the parameters of --model loggp; add --model loggp");
    }
    if !a.loggp_from.is_empty() && cfg.model != Model::LogGp {
        bail!("--loggp-from sets parameters of --model loggp; add --model loggp");
    }
    if a.loggp_receive != LoggpReceiveArg::FirstByte && cfg.model != Model::LogGp {
        bail!("--loggp-receive is a rule of --model loggp; add --model loggp");
    }
    if a.no_receive_gap && cfg.model != Model::LogGp {
        bail!("--no-receive-gap is a rule of --model loggp; add --model loggp");
    }
    if a.overlap.is_some() && cfg.model != Model::LogGp {
        bail!("--overlap is a rule of --model loggp; add --model loggp");
    }
    if a.progress != ProgressArg::Arrival && cfg.model != Model::LogGp {
        bail!("--progress is a rule of --model loggp; add --model loggp");
    }
    if a.bounds && cfg.model == Model::LogGp {
        bail!("--bounds needs the contention model: the LogGP model has no background load");
    }
    let trace_name = a.trace.display().to_string();
    let format_name = text_format.map_or_else(|| "otf2".to_string(), |f| f.to_string());
    // The header names what the costs really came from.
    let profile_name = match (&a.loggp, &profile) {
        (Some(p), _) => format!("LogGP given: {}", loggp_text(p)),
        (None, Some(p)) => p.source.clone(),
        (None, None) if matches!(a.topology, TopologySpec::SimGrid(_)) => {
            "none: the platform's links are the whole cost".to_string()
        }
        (None, None) => "default (10 Gbit/s, 5 µs)".to_string(),
    };
    let profile_name = a.loggp_from.iter().fold(profile_name, |acc, (from, p)| {
        format!("{acc}; from {from} B: {}", loggp_text(p))
    });
    let inputs = Inputs {
        workload: &workload,
        network: &*net,
        rank_map: &map,
        tcom: &tcom,
        loggp: Some(&loggp),
        trace_name: &trace_name,
        trace_format: &format_name,
        profile_name: &profile_name,
    };
    // What failed here (a deadlock, a route the topology lacks) is in the inputs, which the
    // message names: the error itself cannot say which file it came from.
    let mut outcome = engine::predict(&inputs, &cfg).with_context(|| match &a.topology {
        TopologySpec::Dot(p) | TopologySpec::SimGrid(p) => {
            format!("prediction of {trace_name} on {} failed", p.display())
        }
        _ => format!("prediction of {trace_name} failed"),
    })?;
    if a.bounds {
        outcome.prediction.bounds =
            Some(engine::bounds(&inputs, &cfg, a.bounds_runs).context("bounds failed")?);
    }
    let p = &outcome.prediction;
    // Rendered only when written: a million-rank JSON summary is hundreds of megabytes.
    let json = || -> Result<String> {
        Ok(serde_json::to_string_pretty(p).context("serializing the prediction")? + "\n")
    };
    let table = || commperf_predict::output::table::render(p);
    match &a.out {
        Some(path) => {
            let as_json =
                a.format == PredictFormat::Json || path.extension().is_some_and(|e| e == "json");
            let body = if as_json { json()? } else { table() };
            write_atomically(path, body.as_bytes())?;
            print(&table())?;
            crate::say(&format!("commperf: wrote {}", path.display()));
        }
        None => match a.format {
            PredictFormat::Json => print(&json()?)?,
            PredictFormat::Table => print(&table())?,
        },
    }
    if let Some(tl) = &outcome.timeline {
        if let Some(path) = &a.timeline {
            write_atomically(
                path,
                commperf_predict::output::chrome::render(tl, p).as_bytes(),
            )?;
            crate::say(&format!(
                "commperf: wrote {} (Chrome trace events)",
                path.display()
            ));
        }
        if let Some(path) = &a.timeline_svg {
            write_atomically(
                path,
                commperf_predict::output::svg::render(tl, p).as_bytes(),
            )?;
            crate::say(&format!("commperf: wrote {} (svg)", path.display()));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_durations_and_classes_parse() {
        assert_eq!(rate_bytes_per_ns("10Gbit/s"), Ok(1.25));
        assert_eq!(rate_bytes_per_ns("100mbit"), Ok(0.0125));
        assert_eq!(rate_bytes_per_ns("2GByte/s"), Ok(2.0));
        assert_eq!(rate_bytes_per_ns("1.25GB/s"), Ok(1.25));
        assert!(rate_bytes_per_ns("10mbps").is_err());
        assert!(rate_bytes_per_ns("fast").is_err());
        assert!(rate_bytes_per_ns("0gbit").is_err());
        assert_eq!(duration_ns("1.5us"), Ok(1500.0));
        assert!(duration_ns("3").is_err());
        let c = link_class("core=40Gbit/s,1us").unwrap();
        assert_eq!(
            (c.name.as_str(), c.bandwidth_bytes_per_ns, c.latency_ns),
            ("core", Some(5.0), 1000.0)
        );
        assert!(link_class("=1Gbit").is_err());
        assert_eq!(background("const:0.3"), Ok(Background::Const(0.3)));
        assert!(background("const:1").is_err());
        assert!(background("exp:-1").is_err());
    }
}
