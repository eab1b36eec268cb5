//! The options of `bench`, `serve` and `limits` (the measuring verbs), and their translation
//! into the bench crate's validated [`BenchConfig`]; `cli.rs` holds the verbs and the value
//! parsers every verb shares.

use crate::cli::{
    benchmarks_help, cpu_pair, fragment, modes, names, pipeline_model, positive_u64, seconds,
    single_copy, sizes, transports, transports_help, Fragment, List, MpiCalls, SingleCopy,
};
use crate::output::{Format, OutputArgs};
use clap::Args;
use commperf_bench::{BenchConfig, ConfigError, Launcher};
use commperf_core::{Benchmark, Mode, TransportKind};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Args)]
pub struct BenchArgs {
    #[arg(value_name = "BENCHMARK", value_parser = benchmark_name, help = benchmarks_help())]
    pub benchmarks: Vec<Vec<Benchmark>>,
    #[arg(long = "transport", short = 't', value_name = "LIST", value_parser = transports, help = transports_help())]
    pub transport: Option<List<TransportKind>>,
    /// Completion modes, comma-separated: poll (busy-poll), block (sleep in the kernel)
    #[arg(long, value_name = "LIST", value_parser = modes, default_value = "poll")]
    pub mode: List<Mode>,
    /// Message sizes: a list (1,8,64), a power-of-two ladder (1:4M), or both; k/M/G suffixes
    /// [default: 1:4M; with --quick 4,64,4K,64K,1M]
    #[arg(long, value_name = "SIZES", value_parser = sizes)]
    pub sizes: Option<List<u64>>,
    /// A quick pass: five sizes (unless --sizes is given) and a tenth of the iterations
    #[arg(long)]
    pub quick: bool,
    /// Timed iterations per size [default: OSU-like, more for small messages]
    #[arg(long, value_name = "N", value_parser = positive_u64)]
    pub iters: Option<u64>,
    /// Untimed warm-up iterations per size [default: a tenth of the iterations]
    #[arg(long, value_name = "N")]
    pub warmup: Option<u64>,
    /// Messages in flight per iteration for bw, bibw and mr
    #[arg(long, value_name = "W", default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=65536))]
    pub window: u32,
    /// Check every payload byte (as OSU's -c); timings then include the checking
    #[arg(long)]
    pub validate: bool,
    /// Pin the local end to CPU A and the peer to CPU B (A = B is allowed, with a warning)
    /// [default: for a local peer the first two allowed CPUs, peer on the first; with --peer
    /// this end on the first allowed CPU and the peer where its host puts it]
    #[arg(long, value_name = "A,B", value_parser = cpu_pair)]
    pub cpus: Option<(usize, usize)>,
    /// Use a `commperf serve` at HOST:PORT as the peer instead of starting one locally
    #[arg(long, value_name = "HOST:PORT", requires = "token")]
    pub peer: Option<String>,
    /// How the ends are started: local (commperf starts its peer) or mpi (ranks placed by
    /// mpirun or srun: `mpirun -np 2 commperf bench --launcher mpi -t tcp`; more ranks form
    /// pairs as OSU's multi-pair tests do). Outside mpirun, commperf starts `mpirun -np 2`
    /// itself. Needs a build with `--features mpi`
    #[arg(long, value_name = "local|mpi", default_value = "local", value_parser = ["local", "mpi"], conflicts_with = "peer")]
    pub launcher: String,
    /// Run the suite at two layers between the same two ranks and compare them (after Kutluğ
    /// 2000, chapter 4): the latency the upper layer adds, the bandwidth it delivers, where it
    /// changes protocol. LOWER is a transport, UPPER usually mpi: shm,mpi or tcp,mpi
    #[arg(long, value_name = "LOWER,UPPER", value_parser = transports, conflicts_with_all = ["transport", "peer"])]
    pub layers: Option<List<TransportKind>>,
    /// The session token `commperf serve` printed
    #[arg(long, value_name = "TOKEN", requires = "peer")]
    pub token: Option<String>,
    /// shm: messages from this size go single-copy (process_vm_readv); 'never' pipelines all
    /// through the ring
    #[arg(long, value_name = "SIZE|never", value_parser = single_copy, default_value = "never")]
    pub shm_single_copy: SingleCopy,
    /// shm: the fragment size large messages are cut into: auto (from the pipeline model, per
    /// message length) or a size (64 B to a quarter of the ring, less 64)
    #[arg(long, value_name = "SIZE|auto", value_parser = fragment, default_value = "auto")]
    pub fragment: Fragment,
    /// shm: the profile (from `commperf calibrate -t shm`) whose pipeline stages the adaptive
    /// fragment size comes from [default: the built-in profile of the development machine]
    #[arg(long, value_name = "FILE")]
    pub pipeline_profile: Option<PathBuf>,
    /// uring-tcp, uring-uds: a kernel thread polls the submission queue (IORING_SETUP_SQPOLL),
    /// so submitting costs no syscall; it takes a core while it polls
    #[arg(long)]
    pub uring_sqpoll: bool,
    /// mpi: the calls loggp's and bufmgmt's sends and receives are made with: blocking
    /// (MPI_Send, MPI_Recv) or nonblocking (MPI_Isend, MPI_Irecv, each then MPI_Wait: what
    /// programs built on requests pay)
    #[arg(long, value_enum, default_value = "blocking")]
    pub mpi_calls: MpiCalls,
    /// blocking: checks spun before sleeping in the spin-then-block variant
    #[arg(long, value_name = "N", default_value_t = 1000)]
    pub spin: u32,
    /// conns: most endpoints held open (the test tries 1, 2, 4 … up to this)
    #[arg(long, value_name = "N", default_value_t = 1024, value_parser = clap::value_parser!(u32).range(1..=65536))]
    pub conns_max: u32,
    /// Give up when the peer makes no progress for this many seconds
    #[arg(long, value_name = "SECS", value_parser = seconds, default_value = "60", allow_negative_numbers = true)]
    pub timeout: Duration,
    /// Also draw the results as an SVG file: latency (p50, p50 to p99 shaded) and bandwidth
    /// against message size, log axes, a line per benchmark, transport and mode (with
    /// --layers, both layers' lines)
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub hooks: PeerHookArgs,
    /// At the MPI start-up check this rank says it runs commperf VERSION, for proving the
    /// version check fires (give it to one rank of an MPMD mpirun)
    #[arg(long, value_name = "VERSION", hide = true)]
    pub claim_version: Option<String>,
}

/// The peer's test options (hidden): given to `bench`, they reach the peer it starts; given to
/// `serve`, they apply to every session it serves.
#[derive(Debug, Args)]
pub struct PeerHookArgs {
    /// The peer sends byte OFFSET of its message MESSAGE of each run (of BENCHMARK only, if
    /// given) XORed with 0xFF, so `--validate` must find it; for proving the check fires
    #[arg(long, value_name = "MESSAGE:OFFSET[:BENCHMARK]", hide = true)]
    pub inject_corruption: Option<commperf_bench::session::InjectCorruption>,
    /// The peer prints `commperf peer PID runs BENCHMARK SIZE B` on stderr as it enters each
    /// measurement's loop, for tests that must act while one runs
    #[arg(long, hide = true)]
    pub announce_runs: bool,
    /// Creating a shared-memory segment stops for good at POINT (filled: sized and
    /// initialized, not yet named; named: linked, before the client attaches), saying so on
    /// stderr, so a test can kill the peer exactly there
    #[arg(long, value_name = "POINT", hide = true)]
    pub pause_shm_create: Option<commperf_transport::sys::shm::ShmPause>,
}

impl PeerHookArgs {
    pub fn to_hooks(&self) -> commperf_bench::session::PeerHooks {
        commperf_bench::session::PeerHooks {
            corrupt: self.inject_corruption,
            announce_runs: self.announce_runs,
            pause_shm_create: self.pause_shm_create,
        }
    }
}

/// What `all` runs: every benchmark but pipeline, which sweeps fragment sizes for minutes and
/// is asked for by name.
pub(crate) fn all_benchmarks() -> Vec<Benchmark> {
    (Benchmark::ALL.iter().copied())
        .filter(|&b| b != Benchmark::Pipeline)
        .collect()
}

fn benchmark_name(s: &str) -> Result<Vec<Benchmark>, String> {
    if s == "all" {
        return Ok(all_benchmarks());
    }
    s.parse::<Benchmark>()
        .map(|b| vec![b])
        .map_err(|e| format!("{e} or all"))
}

impl BenchArgs {
    pub fn to_config(&self) -> Result<BenchConfig, ConfigError> {
        let launcher = match (&self.peer, &self.token) {
            (Some(addr), Some(token)) => Launcher::Peer {
                addr: addr.clone(),
                token: token.clone(),
            },
            _ => Launcher::Local {
                exe: std::env::current_exe().unwrap_or_else(|_| PathBuf::from("commperf")),
            },
        };
        let mut c = BenchConfig::new(launcher);
        let mut benches: Vec<Benchmark> = self.benchmarks.iter().flatten().copied().collect();
        benches.dedup();
        if !benches.is_empty() {
            c.benchmarks = benches;
        }
        // `all` means "everything each transport can do"; named benchmarks must all be possible.
        c.skip_unsupported = self
            .benchmarks
            .iter()
            .any(|b| b.len() == all_benchmarks().len());
        if let Some(t) = &self.transport {
            c.transports = t.0.clone();
        }

        c.modes = self.mode.0.clone();
        c.quick = self.quick;
        c.sizes = match (&self.sizes, self.quick) {
            (Some(s), _) => s.0.clone(),
            (None, true) => vec![4, 64, 4 << 10, 64 << 10, 1 << 20],
            (None, false) => c.sizes.clone(),
        };
        c.iterations = self.iters;
        c.warmup = self.warmup;
        c.window = self.window;
        c.validate = self.validate;
        c.cpus = self.cpus;
        c.idle_timeout = self.timeout;
        c.block_spins = self.spin;
        c.conns_max = self.conns_max;
        c.shm_single_copy_from = self.shm_single_copy.0;
        c.shm_fragment = self.fragment.0;
        if let Some(path) = &self.pipeline_profile {
            c.shm_pipeline = pipeline_model(path)?;
            c.shm_pipeline_source = path.display().to_string();
        }
        c.uring_sqpoll = self.uring_sqpoll;
        c.mpi_nonblocking = self.mpi_calls == MpiCalls::Nonblocking;
        c.peer_hooks = self.hooks.to_hooks();
        match &self.layers {
            // Each layer is checked as the run of its own it will be (`mpi` runs alone).
            Some(l) => {
                for &t in &l.0 {
                    let mut one = c.clone();
                    one.transports = vec![t];
                    one.validate()?;
                }
                c.transports = l.0.clone();
            }
            None => c.validate()?,
        }
        Ok(c)
    }
}

impl BenchArgs {
    /// The layers an MPI run measures, one report each: `[[mpi]]` for `--transport mpi`, the
    /// transports for `--launcher mpi`, one per layer for `--layers`; `None` without MPI.
    pub fn mpi_layers(&self, cfg: &BenchConfig) -> Result<Option<Vec<Vec<TransportKind>>>, String> {
        let uses_mpi = self.launcher == "mpi"
            || self.layers.is_some()
            || cfg.transports.contains(&TransportKind::Mpi);
        if !uses_mpi {
            return Ok(None);
        }
        if self.cpus.is_some() {
            return Err(
                "--cpus: mpirun places and binds MPI ranks; use its binding options \
                        (Open MPI: --bind-to core, --cpu-list; MPICH: -bind-to core)"
                    .into(),
            );
        }
        let Some(layers) = &self.layers else {
            return Ok(Some(vec![cfg.transports.clone()]));
        };
        match layers.0[..] {
            [lower, upper] if lower != upper => {
                if lower == TransportKind::Mpi {
                    return Err(format!(
                        "--layers {lower},{upper}: the lower layer comes first (e.g. \
                         {upper},{lower})"
                    ));
                }
                Ok(Some(vec![vec![lower], vec![upper]]))
            }
            _ => Err(format!(
                "--layers takes two different layers, lower first (e.g. shm,mpi), not '{}'",
                layers
                    .0
                    .iter()
                    .map(|t| t.as_str())
                    .collect::<Vec<_>>()
                    .join(",")
            )),
        }
    }

    /// `--plot-loggp` draws loggp results, `--plot` latency or bandwidth against size: each is
    /// refused before a run that will have nothing for it, instead of failing after it (where
    /// the files can be written is checked with the run's other outputs).
    pub fn check_plot(&self, cfg: &BenchConfig) -> Result<(), String> {
        if let Some(path) = &self.output.plot_loggp {
            if !cfg.benchmarks.contains(&Benchmark::Loggp) {
                return Err(format!(
                    "--plot-loggp {}: draws loggp results, and this run has no loggp benchmark \
                     (add `loggp` to the benchmarks)",
                    path.display()
                ));
            }
        }
        if let Some(path) = &self.plot {
            // These vary something else at each size: endpoints, fragments, segments.
            let against_size = |b: &Benchmark| {
                !matches!(
                    b,
                    Benchmark::Conns | Benchmark::Cq | Benchmark::Pipeline | Benchmark::Noncontig
                )
            };
            if !cfg.benchmarks.iter().any(against_size) {
                return Err(format!(
                    "--plot {}: draws latency and bandwidth against message size, and this \
                     run's benchmarks ({}) measure neither against size (add latency or bw)",
                    path.display(),
                    names(&cfg.benchmarks)
                ));
            }
        }
        Ok(())
    }
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on (loopback by default; give 0.0.0.0:PORT to accept other hosts)
    #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:7707")]
    pub listen: SocketAddr,
    /// Use this session token instead of a random one
    #[arg(long, value_name = "TOKEN")]
    pub token: Option<String>,
    /// Exit after the first session
    #[arg(long)]
    pub once: bool,
    #[command(flatten)]
    pub hooks: PeerHookArgs,
}

#[derive(Debug, Args)]
pub struct LimitsArgs {
    /// The two CPUs to measure between [default: the first two allowed]
    #[arg(long, value_name = "A,B", value_parser = cpu_pair)]
    pub cpus: Option<(usize, usize)>,
    /// Output format: table or json
    #[arg(long, default_value = "table", value_parser = table_or_json)]
    pub format: Format,
}

/// `limits` prints a few figures, as a table or as JSON; csv and md would only repeat the table.
fn table_or_json(s: &str) -> Result<Format, String> {
    match s.parse::<Format>() {
        Ok(f @ (Format::Table | Format::Json)) => Ok(f),
        _ => Err(format!(
            "'{s}' is not a limits format (allowed: table, json)"
        )),
    }
}

impl LimitsArgs {
    pub fn cpus(&self) -> Result<[usize; 2], String> {
        let allowed = commperf_transport::affinity::allowed_cpus();
        let (a, b) = match self.cpus {
            Some(p) => p,
            None if allowed.len() >= 2 => (allowed[0], allowed[1]),
            None => return Err("--cpus: limits need two CPUs; this process may use one".into()),
        };
        for c in [a, b] {
            if !allowed.contains(&c) {
                return Err(format!("--cpus: CPU {c} is not available here"));
            }
        }
        Ok([a, b])
    }
}
