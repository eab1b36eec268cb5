//! The command line, and its translation into library configurations.

use crate::output::OutputArgs;
use clap::{Args, Parser, Subcommand};
use commperf_bench::ConfigError;
use commperf_core::{parse_size, parse_sizes, Benchmark, Mode, TransportKind};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[cfg(test)]
use crate::bench_args::all_benchmarks;
pub use crate::bench_args::{BenchArgs, LimitsArgs, PeerHookArgs, ServeArgs};

/// The MPI calls of `--mpi-calls`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum MpiCalls {
    /// MPI_Send and MPI_Recv
    Blocking,
    /// MPI_Isend and MPI_Irecv, each then MPI_Wait
    Nonblocking,
}

#[derive(Debug, Parser)]
#[command(
    name = "commperf",
    version = concat!(env!("CARGO_PKG_VERSION"), " (", env!("COMMPERF_GIT"), ")"),
    long_version = long_version(),
    about = "Measure, monitor, emulate and predict communication performance: micro-benchmarks \
             (shared memory, sockets, io_uring, MPI), MPI programs monitored unmodified, LogGP \
             knobs injected, and predictions with contention",
    long_about = None,
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// `commperf --version`: the revision, the features this binary was built with, and the MPI
/// interposers it carries (what `monitor`, `emulate` and `app` can run).
pub fn long_version() -> &'static str {
    static TEXT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TEXT.get_or_init(|| {
        let features = if cfg!(feature = "mpi") {
            "mpi (the MPI layer: bench --transport mpi, --launcher mpi)"
        } else {
            "none (built without the mpi feature: no MPI layer in bench)"
        };
        let interposers: Vec<String> = commperf_pmpi::Flavour::ALL
            .iter()
            .filter_map(|&f| {
                commperf_pmpi::interposer_mpi(f).map(|v| format!("{} (built against {v})", f.key()))
            })
            .collect();
        let interposers = if interposers.is_empty() {
            "none (no MPI compiler wrapper was found at build time: monitor, emulate and app \
             cannot run MPI programs)"
                .to_string()
        } else {
            interposers.join(", ")
        };
        format!(
            "{} ({})\nfeatures: {features}\ninterposers: {interposers}",
            env!("CARGO_PKG_VERSION"),
            env!("COMMPERF_GIT")
        )
    })
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run micro-benchmarks (default: latency and bw over shm and tcp)
    Bench(Box<BenchArgs>),
    /// Measure a network path (or convert a Netgauge file, or take Tcom by hand) into the
    /// profile `predict` reads
    Calibrate(Box<crate::calibrate::CalibrateArgs>),
    /// Serve as the peer of `commperf bench --peer` on another host
    Serve(ServeArgs),
    /// Measure this machine's physical limits (cache-line ping-pong, memcpy)
    Limits(LimitsArgs),
    /// Re-render a saved JSON result file
    Report(ReportArgs),
    /// Compare two result files layer against layer: the latency an upper layer (MPI) adds to a
    /// lower one (shm, tcp), the bandwidth it delivers, where it changes protocol
    Compare(crate::compare::CompareArgs),
    /// Predict a trace's communication time on a network, with contention (Papaefstathiou 2001)
    /// or LogGP
    Predict(Box<crate::predict::PredictArgs>),
    /// Write a workload trace of a known pattern (for predict, the testbed, LogGOPSim)
    GenTrace(crate::gentrace::GenTraceArgs),
    /// Monitor communication (commperf's transports, or an unmodified MPI program with
    /// `-- mpirun …`): latency stages, histograms, signatures against a baseline
    Monitor(Box<crate::monitor::MonitorArgs>),
    /// LogGP emulation (after Martin 1999): run an MPI program with the o, g, G and L knobs
    /// (`emulate --L 20us -- mpirun …`), or calibrate the knobs on a transport
    Emulate(Box<crate::emulate::EmulateArgs>),
    /// The peer process a local `emulate calibrate` starts (internal)
    #[command(name = commperf_emulate::calibrate::PEER_VERB, hide = true)]
    EmulatePeer,
    /// The guard that removes a killed verb's run directory (internal)
    #[command(name = "__reap", hide = true)]
    Reap { dir: std::path::PathBuf },
    /// The peer process a local `monitor run` starts (internal)
    #[command(name = commperf_monitor::workload::PEER_VERB, hide = true)]
    MonitorPeer,
    /// The peer process a local `bench` starts (internal)
    #[command(name = "__peer", hide = true)]
    Peer(PeerHookArgs),
    /// Run programs (the NAS-pattern kit, or any MPI command) over MPI stacks under the monitor:
    /// completion time per program and stack beside their message profiles and the stacks'
    /// micro-benchmark figures (after Kutluğ 2000, Table 5.1)
    App(Box<crate::app::AppArgs>),
    /// Build a rate-limited cluster of network namespaces, measure patterns on it and compare
    /// with their prediction (needs root)
    Testbed(Box<crate::testbed::TestbedArgs>),
    /// One rank of `testbed` inside its namespace (internal)
    #[command(name = "__testbed-rank", hide = true)]
    TestbedRank(crate::testbed::TestbedRankArgs),
    /// One MPI rank moved into its namespace of an `app` network stack (internal)
    #[command(name = "__netns-rank", hide = true)]
    NetnsRank(crate::testbed::NetnsRankArgs),
    /// The loopback relay of a `__netns-rank` (internal)
    #[command(name = "__netns-relay", hide = true)]
    NetnsRelay(crate::testbed::NetnsRelayArgs),
    /// Print a shell's completion script (`commperf completions bash >
    /// /etc/bash_completion.d/commperf`)
    Completions(crate::shell::CompletionsArgs),
    /// Print the manual page (roff), or write one page per subcommand with --dir
    Man(crate::shell::ManArgs),
    /// Print the JSON Schema of a file commperf writes and reads back (`commperf schema
    /// study`); its versions are in the manual's reference
    Schema(crate::schema::SchemaArgs),
}

fn list<T: std::str::FromStr>(s: &str) -> Result<Vec<T>, String>
where
    T::Err: std::fmt::Display,
{
    let v: Result<Vec<T>, _> = s
        .split(',')
        .map(str::trim)
        .filter(|x| !x.is_empty())
        .map(T::from_str)
        .collect();
    match v {
        Ok(v) if v.is_empty() => Err("empty list".into()),
        Ok(v) => Ok(v),
        Err(e) => Err(e.to_string()),
    }
}

/// A comma-separated option value (one occurrence, many items).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct List<T>(pub Vec<T>);

/// `a, b, c` of every value of a named enum, for help texts.
pub(crate) fn names<T: std::fmt::Display>(all: &[T]) -> String {
    all.iter()
        .map(|v| v.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The transports `bench` measures: every one but the tests' in-process model.
pub(crate) fn bench_transports() -> Vec<TransportKind> {
    (TransportKind::ALL.iter().copied())
        .filter(|&t| t != TransportKind::Model)
        .collect()
}

/// The transports `calibrate` measures: `bench`'s but MPI, which mpirun starts.
pub(crate) fn calibrate_transports() -> Vec<TransportKind> {
    (bench_transports().into_iter())
        .filter(|&t| t != TransportKind::Mpi)
        .collect()
}

/// One transport name, one of `allowed`; an error lists exactly those (and `uring` where it
/// may be used).
pub(crate) fn transport_in(
    s: &str,
    allowed: &[TransportKind],
    uring_alias: bool,
) -> Result<TransportKind, String> {
    let listed = || {
        let mut l: Vec<String> = allowed.iter().map(|t| t.to_string()).collect();
        if uring_alias {
            l.push("uring (both io_uring ones)".into());
        }
        l.join(", ")
    };
    match s.parse::<TransportKind>() {
        Ok(t) if allowed.contains(&t) => Ok(t),
        Ok(TransportKind::Model) => Err(format!(
            "'model' is the in-process LogGP model of the tests, not a transport to measure \
             (allowed: {})",
            listed()
        )),
        Ok(t) => Err(format!("'{t}' cannot be used here (allowed: {})", listed())),
        Err(_) => Err(format!("unknown transport '{s}' (allowed: {})", listed())),
    }
}

pub(crate) fn transports(s: &str) -> Result<List<TransportKind>, String> {
    let allowed = bench_transports();
    let mut v = Vec::new();
    for t in s.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        // `uring` names both io_uring realizations.
        if t == "uring" {
            v.extend([TransportKind::UringTcp, TransportKind::UringUds]);
        } else {
            v.push(transport_in(t, &allowed, true)?);
        }
    }
    if v.is_empty() {
        return Err("empty list".into());
    }
    Ok(List(v))
}

pub(crate) fn benchmarks_help() -> String {
    format!(
        "Benchmarks to run: {}, or all [default: latency bw]",
        names(Benchmark::ALL)
    )
}

pub(crate) fn transports_help() -> String {
    format!(
        "Transports, comma-separated: {} (uring = both io_uring ones; mpi needs a build with \
         --features mpi) [default: shm,tcp]",
        names(&bench_transports())
    )
}
pub(crate) fn modes(s: &str) -> Result<List<Mode>, String> {
    list(s).map(List)
}
pub(crate) fn sizes(s: &str) -> Result<List<u64>, String> {
    parse_sizes(s).map(List).map_err(|e| e.to_string())
}
pub(crate) fn cpu_pair(s: &str) -> Result<(usize, usize), String> {
    let v: Vec<usize> = list(s).map_err(|_| format!("'{s}' is not two CPU numbers A,B"))?;
    match v[..] {
        [a, b] => Ok((a, b)),
        _ => Err(format!("'{s}' is not two CPU numbers A,B")),
    }
}
/// `--shm-single-copy`: a size, or never.
/// One message size (k/M/G suffixes), for any subcommand.
pub(crate) fn size(s: &str) -> Result<u64, String> {
    parse_size(s).map_err(|e| e.to_string())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SingleCopy(pub Option<usize>);

pub(crate) fn single_copy(s: &str) -> Result<SingleCopy, String> {
    if s == "never" {
        return Ok(SingleCopy(None));
    }
    parse_size(s)
        .map(|v| SingleCopy(Some(v as usize)))
        .map_err(|e| format!("{e}, or 'never'"))
}
/// `--fragment`: a size, or auto.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fragment(pub commperf_bench::FragmentSetting);

pub(crate) fn fragment(s: &str) -> Result<Fragment, String> {
    use commperf_bench::FragmentSetting;
    if s == "auto" {
        return Ok(Fragment(FragmentSetting::Adaptive));
    }
    parse_size(s)
        .map(|v| Fragment(FragmentSetting::Fixed(v as usize)))
        .map_err(|e| format!("{e}, or 'auto'"))
}

/// The shm pipeline model of `--pipeline-profile FILE`.
pub(crate) fn pipeline_model(
    path: &std::path::Path,
) -> Result<commperf_model::pipeline::PipelineModel, ConfigError> {
    let bad = |why: String| ConfigError::PipelineProfile(format!("{}: {why}", path.display()));
    let text = commperf_core::read_text(path).map_err(|e| bad(e.to_string()))?;
    let p: commperf_core::Profile =
        serde_json::from_str(&text).map_err(|e| bad(format!("not a commperf profile ({e})")))?;
    commperf_formats::check(
        commperf_formats::Kind::Profile,
        Some(u64::from(p.schema_version)),
    )
    .map_err(|e| bad(e.to_string()))?;
    let pipe = p.pipeline.ok_or_else(|| {
        bad("has no pipeline section (calibrate it with `commperf calibrate -t shm`)".into())
    })?;
    if pipe.transport != "shm" {
        return Err(bad(format!(
            "its pipeline stages are {}'s; adaptive fragmenting needs shm's",
            pipe.transport
        )));
    }
    commperf_model::pipeline::PipelineModel::from_profile(&pipe).map_err(|e| bad(e.to_string()))
}

/// Iterations of a timed loop: 1 to [`commperf_bench::MAX_ITERS`] (their samples are kept in
/// memory).
pub(crate) fn iters(s: &str) -> Result<u64, String> {
    let n = positive_u64(s)?;
    if n > commperf_bench::MAX_ITERS {
        return Err(format!(
            "must be between 1 and {} (got {n})",
            commperf_bench::MAX_ITERS
        ));
    }
    Ok(n)
}

/// A list of message sizes, kept as given, each at most [`commperf_bench::MAX_SIZE`] (1G):
/// each sizes a buffer.
pub(crate) fn bounded_sizes(s: &str) -> Result<String, String> {
    let too_big = |what: &str| {
        format!(
            "{what} bytes exceeds the largest supported message size, {} bytes (1G)",
            commperf_bench::MAX_SIZE
        )
    };
    let v = parse_sizes(s).map_err(|e| match e {
        // Past what a size can be at all, and past this bound as well: the bound is the news.
        commperf_core::units::SizeError::TooLarge(what) => too_big(&what),
        e => e.to_string(),
    })?;
    if let Some(big) = v.iter().find(|&&b| b > commperf_bench::MAX_SIZE) {
        return Err(too_big(&big.to_string()));
    }
    Ok(s.to_string())
}

pub(crate) fn positive_u64(s: &str) -> Result<u64, String> {
    match s.parse::<u64>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(v) => Ok(v),
        Err(_) => Err(format!("'{s}' is not a whole number")),
    }
}
/// A timeout in seconds: from a millisecond (0 would give up at once) to a day; the message
/// states exactly the range accepted.
pub(crate) fn seconds(s: &str) -> Result<Duration, String> {
    match s.parse::<f64>() {
        Ok(v) if (0.001..=86_400.0).contains(&v) => Ok(Duration::from_secs_f64(v)),
        _ => Err(format!(
            "'{s}' is not a number of seconds from 0.001 to 86400"
        )),
    }
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A JSON result file written by `commperf bench --format json`
    pub file: PathBuf,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// Clap's message up to its first blank line (the usage and tip that follow are dropped), joined
/// into one line: `the following required arguments were not provided: --token <TOKEN>`.
pub fn one_line(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let head: Vec<&str> = text
        .lines()
        .take_while(|l| !l.trim().is_empty())
        .map(str::trim)
        .collect();
    let joined = head.join(" ");
    joined
        .strip_prefix("error: ")
        .unwrap_or(&joined)
        .to_string()
}

/// Prints a clap error as one line (exit 2), or help/version as clap would (exit 0).
pub fn clap_exit(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind::*;
    match e.kind() {
        DisplayHelp | DisplayVersion | DisplayHelpOnMissingArgumentOrSubcommand => {
            use std::io::IsTerminal;
            let failed = if e.use_stderr() || std::io::stdout().is_terminal() {
                // Help for a missing subcommand goes to stderr, best effort as every message;
                // clap prints in colour on a terminal.
                let _ = e.print();
                false
            } else {
                crate::output::print(&e.render().to_string())
                    .map_err(|w| crate::say(&format!("commperf: {w}")))
                    .is_err()
            };
            if failed {
                ExitCode::from(1)
            } else if e.kind() == DisplayHelpOnMissingArgumentOrSubcommand {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            }
        }
        _ => {
            crate::say(&format!("commperf: {}", one_line(&e)));
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn command_line_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn the_long_version_names_the_revision_features_and_interposers() {
        let v = long_version();
        let lines: Vec<&str> = v.lines().collect();
        assert_eq!(lines.len(), 3, "{v}");
        assert!(
            lines[0].starts_with(concat!(env!("CARGO_PKG_VERSION"), " (")),
            "{v}"
        );
        assert_eq!(
            lines[1].starts_with("features: mpi "),
            cfg!(feature = "mpi"),
            "{v}"
        );
        for f in commperf_pmpi::Flavour::ALL {
            let named = lines[2].contains(&format!("{} (built against {}", f.key(), f.name()));
            assert_eq!(named, commperf_pmpi::interposer(f).is_some(), "{v}");
        }
        // Plain -V is the first line.
        let e = Cli::try_parse_from(["commperf", "-V"]).unwrap_err();
        assert_eq!(e.to_string().trim_end(), format!("commperf {}", lines[0]));
    }

    #[test]
    fn options_become_a_validated_config() {
        let cli = Cli::try_parse_from([
            "commperf",
            "bench",
            "latency",
            "all",
            "-t",
            "uds,shm",
            "--mode",
            "poll,block",
            "--sizes",
            "1:8,1M",
            "--iters",
            "7",
            "--cpus",
            "0,0",
            "--shm-single-copy",
            "never",
        ])
        .unwrap();
        let Command::Bench(b) = cli.command else {
            panic!("bench expected")
        };
        let c = b.to_config().unwrap();
        assert_eq!(c.benchmarks, all_benchmarks());
        assert!(!c.benchmarks.contains(&Benchmark::Pipeline), "named only");
        assert_eq!(c.transports, vec![TransportKind::Uds, TransportKind::Shm]);
        assert_eq!(c.modes, vec![Mode::Poll, Mode::Block]);
        assert_eq!(c.sizes, vec![1, 2, 4, 8, 1 << 20]);
        assert_eq!(c.iterations, Some(7));
        assert_eq!(c.cpus, Some((0, 0)));
        assert_eq!(c.shm_single_copy_from, None);
    }

    #[test]
    fn plot_loggp_needs_the_loggp_benchmark() {
        let check = |args: &[&str]| {
            let mut argv = vec!["commperf", "bench"];
            argv.extend(args);
            let Command::Bench(b) = Cli::try_parse_from(&argv).unwrap().command else {
                panic!("bench expected")
            };
            b.check_plot(&b.to_config().unwrap())
        };
        let e = check(&["latency", "--plot-loggp", "f.svg"]).unwrap_err();
        assert!(e.starts_with("--plot-loggp f.svg: "), "{e}");
        assert!(e.contains("no loggp benchmark"), "{e}");
        assert_eq!(
            check(&["latency", "loggp", "--plot-loggp", "f.svg"]),
            Ok(())
        );
        assert_eq!(check(&["all", "--plot-loggp", "f.svg"]), Ok(()));
        assert_eq!(check(&["latency"]), Ok(()));
        // --plot needs a benchmark measured against size.
        let e = check(&["conns", "cq", "--plot", "f.svg"]).unwrap_err();
        assert_eq!(
            e,
            "--plot f.svg: draws latency and bandwidth against message size, and this run's \
             benchmarks (conns, cq) measure neither against size (add latency or bw)"
        );
        assert_eq!(check(&["conns", "bw", "--plot", "f.svg"]), Ok(()));
        assert_eq!(
            check(&["--plot", "f.svg"]),
            Ok(()),
            "the default latency and bw"
        );
    }

    #[test]
    fn bad_values_are_refused_with_the_option_named() {
        for (args, needle) in [
            (
                vec!["-t", "rdma"],
                "unknown transport 'rdma' (allowed: shm, tcp, uds, uring-tcp, uring-uds, mpi, \
                 uring (both io_uring ones))",
            ),
            (
                vec!["--mode", "spin"],
                "unknown mode 'spin' (allowed: poll block)",
            ),
            (vec!["--sizes", "8:1"], "range '8:1' is empty or reversed"),
            (vec!["--sizes", "9223372036854775808"], "too large"),
            (vec!["--window", "0"], "--window"),
            (vec!["--iters", "0"], "must be at least 1"),
            (vec!["--cpus", "1"], "not two CPU numbers"),
            (vec!["--peer", "h:1"], "--token"),
            (vec!["latenzy"], "unknown benchmark 'latenzy'"),
        ] {
            let mut argv = vec!["commperf", "bench"];
            argv.extend(args.iter().copied());
            let line = one_line(&Cli::try_parse_from(&argv).unwrap_err());
            assert!(line.contains(needle), "{argv:?}: {line}");
            assert!(!line.contains('\n'));
        }
    }

    /// `--fragment` takes a size or auto; a size the ring cannot carry, a word, and a pipeline
    /// profile that is not one are refused with the option named.
    #[test]
    fn fragment_options_are_checked_by_name() {
        use commperf_bench::FragmentSetting;
        let config = |args: &[&str]| {
            // The default transports, shm and tcp.
            let mut argv = vec!["commperf", "bench", "pipeline"];
            argv.extend(args);
            match Cli::try_parse_from(&argv) {
                Ok(Cli {
                    command: Command::Bench(b),
                }) => b.to_config().map_err(|e| e.to_string()),
                Ok(_) => panic!("bench expected"),
                Err(e) => Err(one_line(&e)),
            }
        };
        let c = config(&[]).unwrap();
        assert_eq!(c.shm_fragment, FragmentSetting::Adaptive);
        assert_eq!(c.benchmarks, vec![Benchmark::Pipeline]);
        let c = config(&["--fragment", "32K"]).unwrap();
        assert_eq!(c.shm_fragment, FragmentSetting::Fixed(32 << 10));
        let e = config(&["--fragment", "12q"]).unwrap_err();
        assert!(e.contains("--fragment") && e.contains("or 'auto'"), "{e}");
        let e = config(&["--fragment", "16"]).unwrap_err();
        assert_eq!(
            e,
            "--fragment: 16 B is outside 64 B to 262080 B (a quarter of the 1 MiB ring, less 64)"
        );
        let e = config(&["--fragment", "1M"]).unwrap_err();
        assert!(e.starts_with("--fragment: 1048576 B is outside"), "{e}");
        let dir = std::env::temp_dir().join(format!("commperf-frag-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let old = dir.join("v1.json");
        std::fs::write(
            &old,
            r#"{"schema_version":1,"source":"hand","tcom":[{"from_bytes":0,"to_bytes":18446744073709551615,"intercept_us":1.0,"slope_us_per_byte":0.001}]}"#,
        )
        .unwrap();
        let e = config(&["--pipeline-profile", old.to_str().unwrap()]).unwrap_err();
        assert!(
            e.starts_with("--pipeline-profile: ") && e.contains("has no pipeline section"),
            "{e}"
        );
        let e = config(&["--pipeline-profile", "/nonexistent/p.json"]).unwrap_err();
        assert!(
            e.starts_with("--pipeline-profile: /nonexistent/p.json"),
            "{e}"
        );
        let e = config(&["-t", "uring-tcp"]).unwrap_err();
        assert!(e.contains("cannot do pipeline"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn uring_names_both_io_uring_transports() {
        let cli = Cli::try_parse_from(["commperf", "bench", "-t", "shm,uring"]).unwrap();
        let Command::Bench(b) = cli.command else {
            panic!("bench expected")
        };
        assert_eq!(
            b.transport.unwrap().0,
            [
                TransportKind::Shm,
                TransportKind::UringTcp,
                TransportKind::UringUds
            ]
        );
    }
}
