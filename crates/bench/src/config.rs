//! The validated configuration of a benchmark run, and the OSU-like defaults.

use commperf_core::{Benchmark, Mode, ProcessId, TransportKind};
use commperf_model::pipeline::{PipelineModel, Plan};
use commperf_transport::bounds::{self, BoundError, SessionMemory};
use commperf_transport::launch::DataSpec;
use commperf_transport::FragmentPlan;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

/// Largest message size and most iterations a run accepts: the bounds a `commperf serve` holds
/// its clients to ([`commperf_transport::bounds`]).
pub use commperf_transport::bounds::{MAX_ITERS, MAX_SIZE};

/// How the peer is started or reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Launcher {
    /// Start `exe __peer` locally (the default).
    Local { exe: PathBuf },
    /// A `commperf serve` at `addr` with session `token`.
    Peer { addr: String, token: String },
    /// The session server of an MPI rank placed by mpirun, at `addr` with `token` (both sent
    /// over MPI by that rank).
    Mpi { addr: String, token: String },
}

/// Why a configuration was refused; each names the option.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("--sizes: {0}")]
    Sizes(String),
    #[error("--window: must be between 1 and 65536 (got {0})")]
    Window(u64),
    #[error("--iters: must be between 1 and {MAX_ITERS} (got {0})")]
    Iterations(u64),
    #[error("--warmup: must be at most {MAX_ITERS} (got {0})")]
    Warmup(u64),
    #[error("--cpus: {0}")]
    Cpus(String),
    #[error("--transport: {0}")]
    Transport(String),
    #[error("--mode: {0}")]
    Mode(String),
    #[error("--conns-max: {0}")]
    Conns(String),
    #[error("--spin: must be at most {max} (got {0})", max = bounds::MAX_BLOCK_SPINS)]
    Spin(u32),
    #[error("--shm-single-copy: must be at most {MAX_SIZE} bytes (1G) or 'never' (got {0})")]
    SingleCopy(usize),
    #[error("--timeout: {0}")]
    Timeout(String),
    #[error("--fragment: {0}")]
    Fragment(String),
    #[error("--pipeline-profile: {0}")]
    PipelineProfile(String),
    /// The peer's hidden test options, given where this process does not start the peer.
    #[error("{0}: only a peer started here can take it; give it to `commperf serve` instead")]
    PeerHooks(&'static str),
    /// A data-channel option outside the bounds a server holds clients to.
    #[error(transparent)]
    Bound(#[from] BoundError),
}

/// Whether `t` drives its socket through io_uring.
pub fn is_uring(t: TransportKind) -> bool {
    matches!(t, TransportKind::UringTcp | TransportKind::UringUds)
}

/// How the shm transport cuts large messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FragmentSetting {
    /// The fragment size per message length from the pipeline model (Fröhlich et al. 2000, §3.2).
    Adaptive,
    /// Every message in fragments of this many bytes (`--fragment SIZE`); for tcp and uds, at
    /// most this many bytes per `sendmsg`.
    Fixed(usize),
    /// A plan computed for this channel (the pipeline benchmark's socket model).
    Planned(FragmentPlan),
}

/// Everything a run needs, already checked.
#[derive(Debug, Clone)]
pub struct BenchConfig {
    pub benchmarks: Vec<Benchmark>,
    pub transports: Vec<TransportKind>,
    pub modes: Vec<Mode>,
    pub sizes: Vec<u64>,
    pub iterations: Option<u64>,
    pub warmup: Option<u64>,
    pub window: u32,
    pub validate: bool,
    /// (local CPU, peer CPU).
    pub cpus: Option<(usize, usize)>,
    pub launcher: Launcher,
    pub idle_timeout: Duration,
    /// shm: messages from this size go single-copy (None: always through the ring).
    pub shm_single_copy_from: Option<usize>,
    pub shm_ring_bytes: usize,
    /// uring transports: a kernel thread polls the submission queue.
    pub uring_sqpoll: bool,
    /// mpi: loggp's and bufmgmt's sends and receives as MPI_Isend / MPI_Irecv + MPI_Wait.
    pub mpi_nonblocking: bool,
    /// `blocking`: checks spun before sleeping in the spin-then-block variant.
    pub block_spins: u32,
    /// A tenth of the default iterations (sizes are the caller's business).
    pub quick: bool,
    /// conns: most endpoints held open (1, 2, 4 … up to this).
    pub conns_max: u32,
    /// Skip benchmark × transport combinations the transport cannot do (for `all`) instead of
    /// refusing them.
    pub skip_unsupported: bool,
    /// shm: how large messages are cut.
    pub shm_fragment: FragmentSetting,
    /// shm: the fitted pipeline stages the adaptive fragment size and the pipeline benchmark's
    /// model come from (a calibrated profile's, or [`crate::pipeline::default_shm_profile`]).
    pub shm_pipeline: PipelineModel,
    /// Where `shm_pipeline` comes from, for the report.
    pub shm_pipeline_source: String,
    /// Processes of this measurement besides the peer (the other ranks of an MPI job): never
    /// reported as other measurements.
    pub partners: Vec<ProcessId>,
    /// A local peer's hidden test options (`--inject-corruption`, `--announce-runs`,
    /// `--pause-shm-create`).
    pub peer_hooks: crate::session::PeerHooks,
    /// The adaptive plan for this run's sizes, computed on first use (set every other field
    /// first).
    plan: OnceLock<(FragmentPlan, Plan)>,
}

impl BenchConfig {
    /// The default suite's configuration with the OSU-like size ladder 1 B … 4 MiB.
    pub fn new(launcher: Launcher) -> Self {
        let d = commperf_transport::sys::shm::ShmOptions::default();
        BenchConfig {
            benchmarks: vec![Benchmark::Latency, Benchmark::Bw],
            transports: vec![TransportKind::Shm, TransportKind::Tcp],
            modes: vec![Mode::Poll],
            sizes: (0..=22).map(|p| 1u64 << p).collect(),
            iterations: None,
            warmup: None,
            window: 64,
            validate: false,
            cpus: None,
            launcher,
            idle_timeout: Duration::from_secs(60),
            shm_single_copy_from: d.single_copy_from,
            shm_ring_bytes: d.ring_bytes,
            uring_sqpoll: false,
            mpi_nonblocking: false,
            block_spins: 1000,
            quick: false,
            conns_max: 1024,
            skip_unsupported: false,
            shm_fragment: FragmentSetting::Adaptive,
            shm_pipeline: PipelineModel::from_profile(&crate::pipeline::default_shm_profile())
                .expect("the built-in pipeline profile is valid"),
            shm_pipeline_source: "built-in default".into(),
            partners: Vec::new(),
            peer_hooks: Default::default(),
            plan: OnceLock::new(),
        }
    }

    /// The adaptive plan for this run (up to its largest message), and the model's own.
    pub fn shm_plan(&self) -> &(FragmentPlan, Plan) {
        self.plan.get_or_init(|| {
            crate::pipeline::fragment_plan(&self.shm_pipeline, self.max_message() as u64)
        })
    }

    /// The data channel over `t` in mode `m` with shm fragments cut as `f` says.
    pub fn data_spec_with(&self, t: TransportKind, m: Mode, f: FragmentSetting) -> DataSpec {
        let mut spec = DataSpec::new(t, m, self.max_message());
        spec.idle_timeout_ms = self.idle_timeout.as_millis() as u64;
        spec.shm_single_copy_from = self.shm_single_copy_from;
        spec.shm_ring_bytes = self.shm_ring_bytes;
        spec.uring_sqpoll = self.uring_sqpoll;
        if matches!(t, TransportKind::Tcp | TransportKind::Uds) {
            // Sockets send whole messages unless told otherwise: no default model says more.
            spec.socket_fragments = match f {
                FragmentSetting::Adaptive => None,
                FragmentSetting::Fixed(n) => Some(FragmentPlan::fixed(n)),
                FragmentSetting::Planned(p) => Some(p),
            };
        }
        if t == TransportKind::Shm {
            match f {
                FragmentSetting::Fixed(n) => spec.shm_frag_bytes = n,
                FragmentSetting::Planned(p) => {
                    spec.shm_frag_bytes = bounds::max_shm_frag_bytes(self.shm_ring_bytes);
                    spec.shm_fragments = Some(p);
                }
                FragmentSetting::Adaptive => {
                    spec.shm_frag_bytes = bounds::max_shm_frag_bytes(self.shm_ring_bytes);
                    let mut plan = self.shm_plan().0;
                    for f in plan.by_octave.iter_mut() {
                        *f = (*f).min(spec.shm_frag_bytes as u32);
                    }
                    spec.shm_fragments = Some(plan);
                }
            }
        }
        spec
    }

    /// A run that is allowed but will measure the scheduler rather than the transport: SQPOLL
    /// with polling ends needs a core for each of the two polling processes and each of their
    /// two kernel submission pollers. Measured on 2 CPUs: 4 ms per one-way trip instead of 10 µs.
    pub fn oversubscription_warning(&self) -> Option<String> {
        let cpus = commperf_transport::affinity::allowed_cpus().len();
        (self.uring_sqpoll && self.modes.contains(&Mode::Poll) && cpus < 4).then(|| {
            format!(
                "--uring-sqpoll with --mode poll keeps four threads busy (two polling processes, \
                 two kernel SQ pollers) on {cpus} CPUs: they take turns, and poll-mode latency \
                 becomes the scheduler's time slice; use --mode block with SQPOLL here"
            )
        })
    }

    /// The CPU both ends will share, when they must: `--cpus A,A` with the peer on this host
    /// (local, or a `commperf serve` reached over loopback), or a local run that may use one
    /// CPU only. Allowed (it measures how the two share a core), but never silently.
    pub fn shared_cpu(&self) -> Option<usize> {
        let same_host = match &self.launcher {
            Launcher::Local { .. } => true,
            Launcher::Peer { addr, .. } => is_loopback(addr),
            Launcher::Mpi { .. } => false,
        };
        match self.cpus {
            Some((a, b)) => (a == b && same_host).then_some(a),
            None => {
                let allowed = commperf_transport::affinity::allowed_cpus();
                (matches!(self.launcher, Launcher::Local { .. }) && allowed.len() == 1)
                    .then(|| allowed[0])
            }
        }
    }

    /// The warning for [`BenchConfig::shared_cpu`]. Measured with `--cpus 0,0`: 513 µs one-way
    /// for 8 bytes over shm, against 0.2 µs on two CPUs.
    pub fn placement_warning(&self) -> Option<String> {
        let c = self.shared_cpu()?;
        let why = match self.cpus {
            Some(_) => format!("--cpus {c},{c} puts both ends on CPU {c}"),
            None => format!("this process may only use CPU {c}, so both ends share it"),
        };
        Some(format!(
            "{why}: they take turns on it, and latencies measure the scheduler's time slice \
             rather than the transport; give two CPUs (--cpus A,B) unless that is what you \
             want to measure"
        ))
    }

    /// The data channel this configuration asks for over `t` in mode `m`.
    pub fn data_spec(&self, t: TransportKind, m: Mode) -> DataSpec {
        self.data_spec_with(t, m, self.shm_fragment)
    }

    /// What this run will ask of its peer, against the bounds a `commperf serve` holds every
    /// client to ([`commperf_transport::bounds`]): refused here rather than by the peer.
    fn check_bounds(&self) -> Result<(), ConfigError> {
        if self.block_spins > bounds::MAX_BLOCK_SPINS {
            return Err(ConfigError::Spin(self.block_spins));
        }
        if let Some(f) = self.shm_single_copy_from.filter(|&f| f as u64 > MAX_SIZE) {
            return Err(ConfigError::SingleCopy(f));
        }
        let shm = self.transports.contains(&TransportKind::Shm);
        if let (FragmentSetting::Fixed(f), true) = (self.shm_fragment, shm) {
            let max = bounds::max_shm_frag_bytes(self.shm_ring_bytes);
            if !(bounds::MIN_SHM_FRAG_BYTES..=max).contains(&f) {
                return Err(ConfigError::Fragment(format!(
                    "{f} B is outside {} B to {max} B (a quarter of the {} ring, less 64)",
                    bounds::MIN_SHM_FRAG_BYTES,
                    bounds::human_bytes(self.shm_ring_bytes as u64)
                )));
            }
        }
        let ms = self.idle_timeout.as_millis();
        if ms < 1 || ms > bounds::MAX_IDLE_TIMEOUT_MS as u128 {
            return Err(ConfigError::Timeout(format!(
                "{} s is outside 0.001 to {} s",
                self.idle_timeout.as_secs_f64(),
                bounds::MAX_IDLE_TIMEOUT_MS / 1000
            )));
        }
        let launched = self
            .transports
            .iter()
            .filter(|t| !matches!(t, TransportKind::Model | TransportKind::Mpi));
        for &t in launched {
            let spec = self.data_spec(t, Mode::Poll);
            spec.check()?;
            // What the peer will hold at the peak of each benchmark.
            let mut mem = SessionMemory::default();
            let sizes_err = |e: BoundError| ConfigError::Sizes(e.to_string());
            mem.add(
                spec.memory_bytes() + 2 * spec.max_message as u64,
                &format!("the {t} data channel and two message buffers of the largest size"),
            )
            .map_err(sizes_err)?;
            for &b in &self.benchmarks {
                match b {
                    Benchmark::Conns | Benchmark::Cq => {
                        let n = self.conns_max as u64 - 1;
                        let what = format!("{n} held-open {t} channels");
                        mem.check(n * spec.held_open().memory_bytes(), &what)
                            .map_err(|e| ConfigError::Conns(e.to_string()))?;
                    }
                    Benchmark::Bufmgmt | Benchmark::Noncontig => {
                        for &size in &self.sizes {
                            let working = if b == Benchmark::Bufmgmt {
                                crate::extended::fresh_pools_bytes(size)
                            } else {
                                let most = crate::extended::segment_counts(size)
                                    .into_iter()
                                    .max()
                                    .unwrap_or(1);
                                crate::extended::scattered_bytes(size, most) + size
                            };
                            let what = format!("{b} at {size} B");
                            mem.check(working, &what).map_err(sizes_err)?;
                        }
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }

    /// Checks cross-option constraints. Call after setting fields.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.sizes.is_empty() {
            return Err(ConfigError::Sizes("no sizes given".into()));
        }
        if !matches!(self.launcher, Launcher::Local { .. }) {
            if self.peer_hooks.corrupt.is_some() {
                return Err(ConfigError::PeerHooks("--inject-corruption"));
            }
            if self.peer_hooks.announce_runs {
                return Err(ConfigError::PeerHooks("--announce-runs"));
            }
            if self.peer_hooks.pause_shm_create.is_some() {
                return Err(ConfigError::PeerHooks("--pause-shm-create"));
            }
        }
        if self.benchmarks.contains(&Benchmark::Loggp) && self.sizes.len() < 2 {
            return Err(ConfigError::Sizes(
                "loggp fits g and G over message sizes: give at least two".into(),
            ));
        }
        if self.transports.contains(&TransportKind::Mpi) {
            if self.transports.len() > 1 {
                return Err(ConfigError::Transport(
                    "mpi runs alone: it is a layer above the others; to compare it with one, \
                     use --layers (e.g. --layers shm,mpi)"
                        .into(),
                ));
            }
            if self.modes != [Mode::Poll] {
                return Err(ConfigError::Mode(
                    "MPI completes messages its own way; its blocking benchmark compares \
                     MPI_Wait with an MPI_Test loop: run mpi with --mode poll"
                        .into(),
                ));
            }
        }
        if self.transports.contains(&TransportKind::Model) {
            return Err(ConfigError::Transport(
                "'model' is the in-process LogGP model used by the tests; use shm, tcp, uds, \
                 uring-tcp or uring-uds"
                    .into(),
            ));
        }
        if self.uring_sqpoll && !self.transports.iter().any(|t| is_uring(*t)) {
            return Err(ConfigError::Transport(
                "--uring-sqpoll applies to the io_uring transports; add uring-tcp or uring-uds"
                    .into(),
            ));
        }
        if self.mpi_nonblocking && !self.transports.contains(&TransportKind::Mpi) {
            return Err(ConfigError::Transport(
                "--mpi-calls applies to the mpi transport; add -t mpi".into(),
            ));
        }
        if self.benchmarks.contains(&Benchmark::Pipeline) && !self.skip_unsupported {
            let fragments = |t: &TransportKind| {
                matches!(
                    t,
                    TransportKind::Shm | TransportKind::Tcp | TransportKind::Uds
                )
            };
            if let Some(t) = self.transports.iter().find(|t| !fragments(t)) {
                return Err(ConfigError::Transport(format!(
                    "transport {t} cannot do pipeline: it measures shm (fragments through the \
                     ring), tcp and uds"
                )));
            }
        }
        if self.benchmarks.contains(&Benchmark::Cq) && !self.skip_unsupported {
            use commperf_transport::launch::has_completion_queue;
            if let Some(t) = self.transports.iter().find(|&&t| !has_completion_queue(t)) {
                return Err(ConfigError::Transport(format!(
                    "transport {t} cannot do cq: it has no completion queue (shm has one in \
                     shared memory, tcp and uds through epoll, uring-tcp and uring-uds through \
                     an io_uring)"
                )));
            }
        }
        if self.conns_max == 0 || self.conns_max > bounds::MAX_CONNS {
            return Err(ConfigError::Conns(format!(
                "must be between 1 and {} (got {})",
                bounds::MAX_CONNS,
                self.conns_max
            )));
        }
        let many =
            self.benchmarks.contains(&Benchmark::Conns) || self.benchmarks.contains(&Benchmark::Cq);
        if many {
            if self.benchmarks.contains(&Benchmark::Conns) && !self.modes.contains(&Mode::Poll) {
                return Err(ConfigError::Mode(
                    "conns sweeps its endpoints by polling; run it with --mode poll".into(),
                ));
            }
            // Each open endpoint costs both ends a descriptor (socket or pidfd), and an io_uring
            // endpoint one more for its ring; the peer keeps some for itself (a local peer
            // inherits this limit, and a server refuses by the same rule).
            let per = if self.transports.iter().any(|t| is_uring(*t)) {
                2
            } else {
                1
            };
            let need = per * (self.conns_max as u64 - 1) + bounds::FD_RESERVE;
            let limit = crate::extended::open_file_limit();
            if (self.conns_max as u64 - 1) > bounds::max_extra_channels(limit, per) {
                return Err(ConfigError::Conns(format!(
                    "{} endpoints need about {need} file descriptors, but this process may open \
                     {limit}; raise the limit (ulimit -n {need}) or lower --conns-max",
                    self.conns_max
                )));
            }
        }
        if let Some(&big) = self.sizes.iter().find(|&&s| s > MAX_SIZE) {
            return Err(ConfigError::Sizes(format!(
                "{big} bytes exceeds the largest supported message size, {MAX_SIZE} bytes (1G)"
            )));
        }
        if self.window == 0 || self.window > 65536 {
            return Err(ConfigError::Window(self.window as u64));
        }
        if let Some(n) = self.iterations.filter(|&n| n == 0 || n > MAX_ITERS) {
            return Err(ConfigError::Iterations(n));
        }
        if let Some(n) = self.warmup.filter(|&n| n > MAX_ITERS) {
            return Err(ConfigError::Warmup(n));
        }
        self.check_bounds()?;
        if let Some((a, b)) = self.cpus {
            let allowed = commperf_transport::affinity::allowed_cpus();
            for c in [a, b] {
                if !matches!(self.launcher, Launcher::Local { .. }) && c == b {
                    continue; // the peer's CPUs are the peer's business
                }
                if !allowed.contains(&c) {
                    return Err(ConfigError::Cpus(format!(
                        "CPU {c} is not available here (allowed: {})",
                        allowed
                            .iter()
                            .map(|c| c.to_string())
                            .collect::<Vec<_>>()
                            .join(",")
                    )));
                }
            }
        }
        Ok(())
    }

    /// Timed iterations and warm-up for one benchmark and size: OSU's scheme (many for small
    /// messages, fewer for large), unless fixed by the user.
    pub fn counts(&self, b: Benchmark, size: u64) -> (u64, u64) {
        let (iters, warm) = default_counts(b, size);
        let (iters, warm) = if self.quick {
            ((iters / 10).max(5), (warm / 10).max(1))
        } else {
            (iters, warm)
        };
        let iters = self.iterations.unwrap_or(iters);
        let warm = self.warmup.unwrap_or(if self.iterations.is_some() {
            iters / 10
        } else {
            warm
        });
        (iters, warm)
    }

    /// Largest message the data channel must carry.
    pub fn max_message(&self) -> usize {
        self.sizes.iter().copied().max().unwrap_or(1).max(64) as usize
    }
}

/// Whether `HOST:PORT` names this host by a loopback address.
fn is_loopback(addr: &str) -> bool {
    let host = addr.rsplit_once(':').map_or(addr, |(h, _)| h);
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// OSU-like defaults: (timed iterations, warm-up).
pub fn default_counts(b: Benchmark, size: u64) -> (u64, u64) {
    const LARGE: u64 = 8 << 10;
    match b {
        Benchmark::Latency if size <= LARGE => (10_000, 1_000),
        Benchmark::Latency if size < (1 << 20) => (1_000, 100),
        Benchmark::Latency if size < (16 << 20) => (200, 20),
        Benchmark::Latency => (20, 2),
        // Repetitions of each parametrized round trip (median taken).
        Benchmark::Loggp if size <= (64 << 10) => (100, 10),
        Benchmark::Loggp if size < (1 << 20) => (30, 3),
        Benchmark::Loggp => (10, 1),
        Benchmark::Conns => (2_000, 200),
        // Each of its rows is repeated over rounds (medians taken), for every fragment size.
        Benchmark::Pipeline if size < (1 << 20) => (200, 20),
        Benchmark::Pipeline if size < (16 << 20) => (50, 5),
        Benchmark::Pipeline => (10, 2),
        _ if size <= LARGE => (1_000, 100),
        _ if size < (1 << 20) => (100, 10),
        _ if size < (16 << 20) => (20, 2),
        _ => (4, 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_benchmark_at_the_size_limit_fits_a_session_but_bufmgmt() {
        for b in Benchmark::ALL.iter().copied() {
            if matches!(b, Benchmark::Conns | Benchmark::Cq) {
                continue; // 16-byte messages; bounded by --conns-max
            }
            let mut c = cfg();
            c.benchmarks = vec![b];
            c.sizes = vec![MAX_SIZE / 2, MAX_SIZE];
            let r = c.validate();
            if b == Benchmark::Bufmgmt {
                let e = r.unwrap_err().to_string();
                assert!(
                    e.starts_with("--sizes: session memory = ")
                        && e.contains("bufmgmt at 1073741824 B needs"),
                    "{e}"
                );
                // Up to 512 MiB messages beside 1 GiB buffers.
                c.sizes = vec![MAX_SIZE / 2];
                c.validate().unwrap();
            } else {
                r.unwrap_or_else(|e| panic!("{b}: {e}"));
            }
        }
    }

    fn cfg() -> BenchConfig {
        BenchConfig::new(Launcher::Local {
            exe: "/bin/true".into(),
        })
    }

    #[test]
    fn defaults_follow_osu_and_user_counts_win() {
        let mut c = cfg();
        assert_eq!(c.sizes.first(), Some(&1));
        assert_eq!(c.sizes.last(), Some(&(4 << 20)));
        assert_eq!(c.counts(Benchmark::Latency, 8), (10_000, 1_000));
        assert_eq!(c.counts(Benchmark::Latency, 64 << 10), (1_000, 100));
        assert_eq!(c.counts(Benchmark::Bw, 1 << 20), (20, 2));
        c.iterations = Some(50);
        assert_eq!(c.counts(Benchmark::Latency, 8), (50, 5));
        c.warmup = Some(0);
        assert_eq!(c.counts(Benchmark::Bw, 8), (50, 0));
        let mut q = cfg();
        q.quick = true;
        assert_eq!(q.counts(Benchmark::Latency, 8), (1_000, 100));
        assert_eq!(q.counts(Benchmark::Loggp, 4 << 20), (5, 1));
    }

    #[test]
    fn bad_values_name_the_option() {
        let mut c = cfg();
        c.sizes = vec![8, 2 << 30];
        assert_eq!(
            c.validate().unwrap_err().to_string(),
            "--sizes: 2147483648 bytes exceeds the largest supported message size, 1073741824 bytes (1G)"
        );
        let mut c = cfg();
        c.iterations = Some(1 << 63);
        assert_eq!(
            c.validate().unwrap_err().to_string(),
            "--iters: must be between 1 and 100000000 (got 9223372036854775808)"
        );
        let mut c = cfg();
        c.warmup = Some(u64::MAX);
        assert!(c
            .validate()
            .unwrap_err()
            .to_string()
            .starts_with("--warmup: must be at most"));
        let mut c = cfg();
        c.window = 0;
        assert!(c
            .validate()
            .unwrap_err()
            .to_string()
            .starts_with("--window"));
        let mut c = cfg();
        c.block_spins = commperf_transport::bounds::MAX_BLOCK_SPINS + 1;
        assert_eq!(
            c.validate().unwrap_err().to_string(),
            "--spin: must be at most 1000000 (got 1000001)"
        );
        let mut c = cfg();
        c.shm_single_copy_from = Some(MAX_SIZE as usize + 1);
        assert!(c
            .validate()
            .unwrap_err()
            .to_string()
            .starts_with("--shm-single-copy: must be at most 1073741824"));
        let mut c = cfg();
        c.idle_timeout = Duration::from_micros(100);
        assert!(c
            .validate()
            .unwrap_err()
            .to_string()
            .starts_with("--timeout: 0.0001 s is outside"));
        // The request, refused before it is sent.
        let mut c = cfg();
        c.shm_ring_bytes = 1 << 40;
        assert_eq!(
            c.validate().unwrap_err().to_string(),
            "shm_ring_bytes = 1099511627776 is out of bounds: at most 67108864 (64 MiB)"
        );
        let mut c = cfg();
        c.conns_max = commperf_transport::bounds::MAX_CONNS + 1;
        assert!(c
            .validate()
            .unwrap_err()
            .to_string()
            .starts_with("--conns-max: must be between 1 and 65536"));
        let mut c = cfg();
        c.cpus = Some((0, 4095));
        assert!(c
            .validate()
            .unwrap_err()
            .to_string()
            .starts_with("--cpus: CPU 4095"));
    }

    #[test]
    fn both_ends_on_one_cpu_of_this_host_are_warned_about() {
        let mut c = cfg();
        c.cpus = Some((0, 0));
        assert_eq!(c.shared_cpu(), Some(0));
        let w = c.placement_warning().unwrap();
        assert!(
            w.starts_with("--cpus 0,0 puts both ends on CPU 0: they take turns on it"),
            "{w}"
        );
        c.cpus = Some((0, 1));
        assert_eq!(c.placement_warning(), None);
        // The same number on another host is another CPU; over loopback it is the same one.
        let peer = |addr: &str| {
            let mut c = BenchConfig::new(Launcher::Peer {
                addr: addr.into(),
                token: "t".into(),
            });
            c.cpus = Some((1, 1));
            c.shared_cpu()
        };
        assert_eq!(peer("hostb:7707"), None);
        assert_eq!(peer("10.0.0.2:7707"), None);
        assert_eq!(peer("127.0.0.1:7707"), Some(1));
        assert_eq!(peer("localhost:7707"), Some(1));
        assert_eq!(peer("[::1]:7707"), Some(1));
    }
}
