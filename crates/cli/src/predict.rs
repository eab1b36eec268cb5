//! `commperf predict`: the command line of the predictor, turned into the predict crate's
//! configuration (the library never sees clap).

use crate::output::{print, write_atomically};
use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use commperf_core::Profile;
use commperf_predict::collectives::Algorithms;
use commperf_predict::engine::{
    self, Background, Inputs, LinkClass, LogGp, LoggpReceive, Model, Overlap, PredictConfig,
    Progress, SelfOverheads, Sharing, SizeFactors,
};
use commperf_predict::parse::{self, ParseOptions, TraceFormat};
use commperf_predict::topology::{self, RankMap, TopologySpec};
use commperf_predict::values;
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
    #[arg(long, value_name = "SPEC", default_value = "crossbar", value_parser = values::parse_topology_spec)]
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
    #[arg(long = "algo", value_name = "FAMILY=NAME,…", value_parser = values::parse_algorithms, help = algorithms_help())]
    pub algo: Vec<String>,
    /// Background load on every link: none, const:F (a fraction in [0, 1)), or exp:F
    /// (exponential around the mean F, redrawn every --background-period)
    #[arg(long, value_name = "SPEC", default_value = "none", value_parser = values::parse_background)]
    pub background: Background,
    /// How often an exponential background load is redrawn, in µs
    #[arg(long, value_name = "US", default_value = "100", value_parser = values::parse_background_period)]
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
    #[arg(long, value_name = "FLOPS", default_value = "1e9", value_parser = values::parse_positive_f64)]
    pub host_speed: f64,
    /// LogGP/LogGOPS parameters for --model loggp, in ns (ns per byte for G and O), as
    /// LogGOPSim takes them: L=…,o=…,g=…,G=…[,O=…] (o for both sides, or o_s=… and o_r=…)
    /// [default: from the profile's LogGP points]
    #[arg(long, value_name = "L=NS,o=NS,g=NS,G=NS[,O=NS]", value_parser = values::parse_loggp_params)]
    pub loggp: Option<LogGp>,
    /// LogGP parameters for messages of SIZE bytes and more: SIZE:L=…,o=…,g=…,G=…[,O=…]
    /// (repeatable; a message takes the set of the largest SIZE not above its size, smaller
    /// ones --loggp's). A platform's costs per byte change with the protocol: one set fitted to
    /// small messages priced hpcc's 2 MiB messages at 3.7 times their time
    #[arg(long, value_name = "SIZE:L=NS,o=NS,g=NS,G=NS", value_parser = values::parse_loggp_from)]
    pub loggp_from: Vec<(u64, LogGp)>,
    /// Messages up to this size are sent eagerly; larger ones wait for the receive
    #[arg(long, value_name = "SIZE", default_value = "64k", value_parser = crate::cli::size)]
    pub eager: u64,
    /// A link class's bandwidth and extra latency: CLASS=RATE[,LATENCY], e.g. core=40Gb/s,1us or
    /// host=1.25GB/s (B bytes, b bits)
    /// (repeatable; classes not given run at the profile's bandwidth)
    #[arg(long = "link", value_name = "CLASS=RATE[,LAT]", value_parser = values::parse_link_class)]
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
    #[arg(long, value_name = "SPEC", value_parser = values::parse_size_factors)]
    pub latency_factor: Option<SizeFactors>,
    /// The bandwidth factor, SimGrid's syntax (replaces the one --factors gives)
    #[arg(long, value_name = "SPEC", value_parser = values::parse_size_factors)]
    pub bandwidth_factor: Option<SizeFactors>,
    /// SimGrid's TCP window (network/TCP-gamma, bytes): a message moves at most
    /// gamma / (2 × its links' latency) per second; 0 turns the bound off
    #[arg(long, value_name = "BYTES", default_value = "0", value_parser = values::parse_nonneg_f64)]
    pub tcp_gamma: f64,
    /// LogGP model: a message a rank sends to itself costs only o_s + O·s and o_r + O·s (MPI
    /// copies it in memory), no L, g or G [default: through the network, as LogGOPSim]
    #[arg(long)]
    pub local_self_messages: bool,
    /// With --local-self-messages: what a message to oneself costs, when not the model's own
    /// overheads (ns, ns per byte for O): o=…[,O=…], or o_s=… and o_r=… [default: O=0]. A
    /// message to oneself takes the MPI library's in-memory path on every stack (a TCP stack's
    /// o_s is its kernel send path, which such a message never enters)
    #[arg(long, value_name = "o_s=NS,o_r=NS[,O=NS]", value_parser = values::parse_self_overheads, requires = "local_self_messages")]
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
    #[arg(long, value_name = "overlap=NS[,wait=NS][,duplex=NS]", value_parser = values::parse_overlap)]
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

/// Reads a profile from `commperf calibrate`, naming the file when it is not one.
pub(crate) fn read_profile(path: Option<&std::path::Path>) -> Result<Option<Profile>> {
    Ok(path
        .map(commperf_predict::values::read_profile)
        .transpose()?)
}

/// Runs `commperf predict`: read the workload, the costs and the network, assemble the
/// engine's configuration, predict, write what was asked for.
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
    let platform = matches!(a.topology, TopologySpec::SimGrid(_));
    let tcom = values::quiet_network(profile.as_ref(), platform).with_context(|| {
        let path = a.profile.as_ref();
        format!(
            "profile {}",
            path.map_or(String::new(), |p| p.display().to_string())
        )
    })?;
    let loggp = a
        .loggp
        .unwrap_or_else(|| LogGp::from_profile(profile.as_ref(), &tcom));
    let net = topology::build(&a.topology, workload.nranks(), a.seed)?;
    let map = match &a.rank_map {
        Some(path) => RankMap::from_file(path, &*net)?,
        None => RankMap::identity(workload.nranks(), &*net)?,
    };
    let simgrid_trace = text_format == Some(TraceFormat::SimGrid);
    let calc_scale = values::calc_scale(simgrid_trace, a.host_speed, &map, &*net);
    let cfg = config(a, calc_scale)?;
    check_model_options(a, cfg.model)?;
    let trace_name = a.trace.display().to_string();
    let format_name = text_format.map_or_else(|| "otf2".to_string(), |f| f.to_string());
    let profile_name =
        values::cost_source(a.loggp.as_ref(), profile.as_ref(), platform, &a.loggp_from);
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
    write_outputs(a, &outcome)
}

/// The engine's configuration from the validated options.
fn config(a: &PredictArgs, calc_scale: Vec<f64>) -> Result<PredictConfig> {
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
    Ok(PredictConfig {
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
    })
}

/// Refuses the options of one model given with the other.
fn check_model_options(a: &PredictArgs, model: Model) -> Result<()> {
    let loggp_only = [
        (a.loggp.is_some(), "--loggp sets the parameters of"),
        (!a.loggp_from.is_empty(), "--loggp-from sets parameters of"),
        (
            a.loggp_receive != LoggpReceiveArg::FirstByte,
            "--loggp-receive is a rule of",
        ),
        (a.no_receive_gap, "--no-receive-gap is a rule of"),
        (a.overlap.is_some(), "--overlap is a rule of"),
        (
            a.progress != ProgressArg::Arrival,
            "--progress is a rule of",
        ),
    ];
    if let Some((_, what)) = loggp_only.iter().find(|(given, _)| *given) {
        if model != Model::LogGp {
            bail!("{what} --model loggp; add --model loggp");
        }
    }
    if a.bounds && model == Model::LogGp {
        bail!("--bounds needs the contention model: the LogGP model has no background load");
    }
    Ok(())
}

/// Writes the summary (to stdout, and to -o's file) and the timelines asked for.
fn write_outputs(a: &PredictArgs, outcome: &engine::Outcome) -> Result<()> {
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
    let Some(tl) = &outcome.timeline else {
        return Ok(());
    };
    if let Some(path) = &a.timeline {
        let chrome = commperf_predict::output::chrome::render(tl, p);
        write_atomically(path, chrome.as_bytes())?;
        crate::say(&format!(
            "commperf: wrote {} (Chrome trace events)",
            path.display()
        ));
    }
    if let Some(path) = &a.timeline_svg {
        let svg = commperf_predict::output::svg::render(tl, p);
        write_atomically(path, svg.as_bytes())?;
        crate::say(&format!("commperf: wrote {} (svg)", path.display()));
    }
    Ok(())
}
