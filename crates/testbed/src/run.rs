//! The orchestrator: builds the cluster, starts one rank per namespace, calibrates Tcom by
//! ping-pong between two of them, measures each pattern, predicts it, and reports both.
//!
//! Cleanup is layered so that nothing outlives a run: rank processes are killed by a guard's
//! `Drop` (and by their parent-death signal if this process is killed outright); the cluster
//! removes everything with the run's name prefix in its `Drop`; SIGINT, SIGTERM and SIGHUP
//! only set a flag that every wait here checks, so an interrupted run unwinds through those
//! same guards instead of dying in the middle. What a SIGKILLed run leaves behind,
//! `--cleanup` ([`crate::netns::cleanup_stale`]) removes.

use crate::netns::{Cluster, ClusterSpec, Shaper};
use crate::pattern::Pattern;
use crate::proto::{FromRank, PingPongPoint, Rung, ToRank, Work, TOKEN_ENV};
use crate::{now_ns, TestbedError};
use commperf_core::{Profile, TcomPoint};
use commperf_stats::median;
use commperf_transport::launch::{self, Control};
use serde::{Deserialize, Serialize};
use std::net::{SocketAddr, TcpListener};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Version of the report schema.
pub const TESTBED_SCHEMA_VERSION: u32 = commperf_formats::version::TESTBED;

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Makes SIGINT, SIGTERM and SIGHUP set a flag instead of killing the process, so that a run
/// unwinds and cleans up. Call once, from the binary, before [`run`].
pub fn install_interrupt_handler() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
        unsafe { libc::signal(sig, on_signal as *const () as libc::sighandler_t) };
    }
}

/// Whether a signal asked the run to stop.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// What to run.
#[derive(Debug, Clone)]
pub struct TestbedConfig {
    pub hosts: u32,
    pub rate_bit_per_s: u64,
    pub shaper: Shaper,
    pub offloads_off: bool,
    /// See [`ClusterSpec::gso_max_bytes`].
    pub gso_max_bytes: Option<u32>,
    /// Pattern names (`incast`, `alltoall`, `ring`, `halo`).
    pub patterns: Vec<String>,
    /// Message size of every pattern.
    pub bytes: u64,
    /// Timed iterations per pattern (after `warmup` untimed ones).
    pub iters: u32,
    pub warmup: u32,
    /// Calibration ladder; None = the default for the rate and message size.
    pub ladder: Option<Vec<Rung>>,
    /// The binary to start as a rank (`commperf`, which has the hidden rank subcommand).
    pub exe: PathBuf,
    /// Leave the namespaces in place afterwards.
    pub keep: bool,
    /// Test hook: kill this rank's process just before the first pattern starts.
    pub kill_rank_for_test: Option<u32>,
}

/// One pattern's outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PatternResult {
    pub pattern: String,
    pub messages: u64,
    pub bytes_per_message: u64,
    /// Most bytes one host sends or receives per iteration.
    pub max_host_bytes: u64,
    /// That over the link rate: no iteration can be faster (µs).
    pub rate_bound_us: f64,
    /// Every timed iteration, µs (start barrier to the last rank's finish).
    pub measured_us: Vec<f64>,
    pub measured_median_us: f64,
    pub measured_min_us: f64,
    pub measured_max_us: f64,
    /// Per iteration, how late the last thread of any rank started after the common start;
    /// the median over iterations (µs). Scheduling noise: it adds to the measured time.
    pub start_late_median_us: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub predicted_us: Option<f64>,
    /// (predicted − measured median) / measured median · 100.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_pct: Option<f64>,
    /// Why there is no prediction, if there is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub predict_error: Option<String>,
}

/// The whole run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TestbedReport {
    pub schema_version: u32,
    pub tool: String,
    pub hosts: u32,
    pub rate_bit_per_s: u64,
    pub shaper: String,
    pub bytes_per_message: u64,
    pub iters: u32,
    pub warmup: u32,
    /// Ping-pong medians between hosts 0 and 1 (one-way µs) and the profile fitted to them.
    pub profile: Profile,
    pub patterns: Vec<PatternResult>,
    pub notes: Vec<String>,
}

/// The default ladder: powers of four from 1 B, then every power of two from 64 KiB up to
/// `max(4 MiB, bytes)`; about one second of round trips per rung, at least 3 and at most 30.
pub fn default_ladder(rate_bit_per_s: u64, bytes: u64) -> Vec<Rung> {
    let top = bytes.max(4 << 20);
    let mut sizes: Vec<u64> = vec![1, 1 << 10, 4 << 10, 16 << 10];
    let mut s = 64u64 << 10;
    while s < top {
        sizes.push(s);
        s *= 2;
    }
    sizes.push(top);
    if !sizes.contains(&bytes) {
        sizes.push(bytes);
        sizes.sort_unstable();
    }
    sizes
        .into_iter()
        .map(|b| {
            let rt_s = 2.0 * (b as f64 * 8.0) / rate_bit_per_s as f64 + 0.0005;
            Rung {
                bytes: b,
                reps: (1.0 / rt_s).clamp(3.0, 30.0) as u32,
            }
        })
        .collect()
}

/// Rank processes of the run; killed on drop.
#[derive(Debug)]
struct Ranks {
    children: Vec<Child>,
}

impl Ranks {
    /// A rank that has exited: (rank, status text).
    fn exited(&mut self) -> Option<(u32, String)> {
        for (i, c) in self.children.iter_mut().enumerate() {
            if let Ok(Some(st)) = c.try_wait() {
                return Some((i as u32, st.to_string()));
            }
        }
        None
    }

    fn kill_all(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Ranks {
    fn drop(&mut self) {
        self.kill_all();
    }
}

enum Event {
    Msg(u32, FromRank),
    Closed(u32, String),
}

/// The coordinator's side of the control channels.
struct Coordinator {
    writers: Vec<Control>,
    events: mpsc::Receiver<Event>,
    ranks: Ranks,
}

impl Coordinator {
    fn send(&mut self, rank: u32, msg: &ToRank) -> Result<(), TestbedError> {
        self.writers[rank as usize]
            .send(msg)
            .map_err(|e| TestbedError::Rank {
                rank,
                message: e.to_string(),
            })
    }

    /// Waits for one message from each of `from`; a failure, a closed channel, an exited
    /// process, a signal or the timeout ends the wait with an error naming the rank.
    fn gather(
        &mut self,
        from: &[u32],
        what: &str,
        timeout: Duration,
    ) -> Result<Vec<(u32, FromRank)>, TestbedError> {
        let deadline = Instant::now() + timeout;
        let mut got: Vec<(u32, FromRank)> = Vec::with_capacity(from.len());
        while got.len() < from.len() {
            if interrupted() {
                return Err(TestbedError::Interrupted);
            }
            match self.events.recv_timeout(Duration::from_millis(100)) {
                Ok(Event::Msg(rank, FromRank::Failed { message })) => {
                    return Err(self.dead_rank_first(rank, message, what))
                }
                Ok(Event::Msg(rank, msg)) => {
                    if !from.contains(&rank) || got.iter().any(|(r, _)| *r == rank) {
                        return Err(TestbedError::Rank {
                            rank,
                            message: format!("unexpected message while waiting for {what}"),
                        });
                    }
                    got.push((rank, msg));
                }
                Ok(Event::Closed(rank, why)) => {
                    // Give the closing rank's own Failed report, already on its way, the chance
                    // to be the message. Another rank's failure is not: it is most likely the
                    // consequence (a connection to the closed rank refused).
                    std::thread::sleep(Duration::from_millis(50));
                    if let Ok(Event::Msg(r, FromRank::Failed { message })) = self.events.try_recv()
                    {
                        if r == rank {
                            return Err(TestbedError::Rank { rank: r, message });
                        }
                    }
                    let status = self.ranks.exited().map(|(_, s)| s).unwrap_or_default();
                    return Err(TestbedError::Rank {
                        rank,
                        message: format!(
                            "control channel closed while waiting for {what}: {why} {status}"
                        )
                        .trim_end()
                        .to_string(),
                    });
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if let Some((rank, status)) = self.ranks.exited() {
                        return Err(TestbedError::Rank {
                            rank,
                            message: format!("process exited ({status}) while waiting for {what}"),
                        });
                    }
                    if Instant::now() > deadline {
                        let missing: Vec<u32> = from
                            .iter()
                            .copied()
                            .filter(|r| !got.iter().any(|(g, _)| g == r))
                            .collect();
                        return Err(TestbedError::Timeout {
                            what: format!("{what} from ranks {missing:?}"),
                            secs: timeout.as_secs(),
                        });
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(TestbedError::Protocol(
                        "every control channel closed".into(),
                    ))
                }
            }
        }
        Ok(got)
    }

    /// The error for rank `rank` reporting `message`: unless another rank's process has exited,
    /// which is then the news (the report is most likely its consequence: a connection to the
    /// dead rank refused or reset). Its exit is waited for briefly: a killed rank's sockets
    /// close a moment before its parent can reap it, and on a loaded machine the failure of
    /// the rank that found it gone can arrive first.
    fn dead_rank_first(&mut self, rank: u32, message: String, what: &str) -> TestbedError {
        let until = Instant::now() + Duration::from_millis(200);
        loop {
            let other = self
                .ranks
                .children
                .iter_mut()
                .enumerate()
                .find_map(|(i, c)| {
                    let st = c.try_wait().ok().flatten()?;
                    (i as u32 != rank).then_some((i as u32, st))
                });
            if let Some((dead, status)) = other {
                return TestbedError::Rank {
                    rank: dead,
                    message: format!(
                        "process exited ({status}) while waiting for {what} \
                         (then rank {rank}: {message})"
                    ),
                };
            }
            if Instant::now() > until {
                return TestbedError::Rank { rank, message };
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Sends a job to `ranks` and waits until each has its connections.
    fn start_job(
        &mut self,
        job: u32,
        peers: &[SocketAddr],
        works: Vec<(u32, Work)>,
        timeout: Duration,
    ) -> Result<(), TestbedError> {
        let ranks: Vec<u32> = works.iter().map(|(r, _)| *r).collect();
        for (r, work) in works {
            self.send(
                r,
                &ToRank::Job {
                    job,
                    peers: peers.to_vec(),
                    work,
                    timeout_s: timeout.as_secs().max(1),
                },
            )?;
        }
        self.gather(&ranks, "data connections (Ready)", timeout)?;
        Ok(())
    }

    /// A common start time, far enough ahead for a Go to reach every rank.
    fn go(&mut self, ranks: &[u32], iter: u32) -> Result<u64, TestbedError> {
        let start_at_ns = now_ns() + 2_000_000 + 200_000 * ranks.len() as u64;
        for &r in ranks {
            self.send(r, &ToRank::Go { iter, start_at_ns })?;
        }
        Ok(start_at_ns)
    }
}

/// Runs the testbed: calibrate, measure, predict. `progress` gets one line per step.
/// Most timed or warm-up iterations, and round trips per calibration size.
pub const MAX_ITERS: u32 = 10_000;

/// Every option that becomes memory or time has a bound, refused by name before a namespace is
/// made: each rank holds a buffer of the largest message (at most the transports'
/// [`MAX_SIZE`](commperf_transport::bounds::MAX_SIZE), 1 GiB).
fn check_bounds(cfg: &TestbedConfig) -> Result<(), TestbedError> {
    use commperf_transport::bounds::MAX_SIZE;
    let size = |what: &str, b: u64| {
        if b == 0 || b > MAX_SIZE {
            Err(TestbedError::Config(format!(
                "{what} {b} B: from 1 B to {MAX_SIZE} B (1 GiB)"
            )))
        } else {
            Ok(())
        }
    };
    let count = |what: &str, n: u32, least: u32| {
        if n < least || n > MAX_ITERS {
            Err(TestbedError::Config(format!(
                "{what} {n}: from {least} to {MAX_ITERS}"
            )))
        } else {
            Ok(())
        }
    };
    count("--iters", cfg.iters, 1)?;
    count("--warmup", cfg.warmup, 0)?;
    size("--bytes", cfg.bytes)?;
    for r in cfg.ladder.iter().flatten() {
        size("--ladder size", r.bytes)?;
        count("--ladder-reps", r.reps, 1)?;
    }
    Ok(())
}

pub fn run(
    cfg: &TestbedConfig,
    progress: &mut dyn FnMut(&str),
) -> Result<TestbedReport, TestbedError> {
    check_bounds(cfg)?;
    // Every pattern is built first: a bad name fails before anything is made.
    let patterns: Vec<Pattern> = cfg
        .patterns
        .iter()
        .map(|n| Pattern::by_name(n, cfg.hosts, cfg.bytes))
        .collect::<Result<_, _>>()?;
    progress(&format!(
        "building {} namespaces, {} per link per direction ({:?})",
        cfg.hosts,
        format_rate(cfg.rate_bit_per_s),
        cfg.shaper
    ));
    let mut cluster = Cluster::build(&ClusterSpec {
        hosts: cfg.hosts,
        rate_bit_per_s: cfg.rate_bit_per_s,
        shaper: cfg.shaper,
        offloads_off: cfg.offloads_off,
        gso_max_bytes: cfg.gso_max_bytes,
    })?;
    if cfg.keep {
        cluster.keep();
    }
    let mut notes = cluster.notes.clone();
    for n in &notes {
        progress(&format!("note: {n}"));
    }
    let result = run_on(cfg, &cluster, &patterns, progress, &mut notes);
    // The ranks are gone by now (their guard dropped inside run_on); the cluster goes next.
    if !cfg.keep {
        cluster.remove();
    } else {
        progress(&format!(
            "kept namespaces {}h0.. (remove with `commperf testbed --cleanup`)",
            cluster.prefix
        ));
    }
    let (profile, results) = result?;
    Ok(TestbedReport {
        schema_version: TESTBED_SCHEMA_VERSION,
        tool: format!("commperf {}", env!("CARGO_PKG_VERSION")),
        hosts: cfg.hosts,
        rate_bit_per_s: cfg.rate_bit_per_s,
        shaper: format!("{:?}", cfg.shaper).to_lowercase(),
        bytes_per_message: cfg.bytes,
        iters: cfg.iters,
        warmup: cfg.warmup,
        profile,
        patterns: results,
        notes,
    })
}

fn format_rate(bit: u64) -> String {
    if bit % 1_000_000_000 == 0 {
        format!("{} Gbit/s", bit / 1_000_000_000)
    } else if bit % 1_000_000 == 0 {
        format!("{} Mbit/s", bit / 1_000_000)
    } else {
        format!("{} kbit/s", bit as f64 / 1e3)
    }
}

fn spawn_ranks(
    cfg: &TestbedConfig,
    cluster: &Cluster,
    ctrl: SocketAddr,
    token: &str,
) -> Result<Ranks, TestbedError> {
    let mut ranks = Ranks {
        children: Vec::new(),
    };
    for (i, h) in cluster.hosts.iter().enumerate() {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &h.netns])
            .arg(&cfg.exe)
            .args(["__testbed-rank", "--rank", &i.to_string()])
            .args(["--ctrl", &ctrl.to_string(), "--listen", &h.addr.to_string()])
            .env(TOKEN_ENV, token)
            .stdin(Stdio::null())
            .stdout(Stdio::null());
        // SAFETY: between fork and exec only async-signal-safe calls: setpgid and prctl.
        // Own process group: a terminal's Ctrl-C reaches the coordinator only, which then
        // stops the ranks itself. Parent-death signal: if the coordinator is killed outright,
        // the kernel kills the rank (`ip netns exec` execs the rank in place, so the signal
        // setting carries over to it).
        unsafe {
            cmd.pre_exec(|| {
                libc::setpgid(0, 0);
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let child = cmd
            .spawn()
            .map_err(|e| TestbedError::io(format!("start rank {i} in {}", h.netns), e))?;
        ranks.children.push(child);
    }
    Ok(ranks)
}

/// Accepts every rank's control connection and checks its hello.
fn connect_ranks(
    listener: &TcpListener,
    mut ranks: Ranks,
    n: u32,
    token: &str,
) -> Result<(Coordinator, Vec<SocketAddr>, Vec<std::net::IpAddr>), TestbedError> {
    let deadline = Instant::now() + Duration::from_secs(30);
    listener
        .set_nonblocking(true)
        .map_err(|e| TestbedError::io("control listener", e))?;
    let mut slots: Vec<Option<(Control, u16, std::net::IpAddr)>> = (0..n).map(|_| None).collect();
    let mut have = 0;
    let (tx, rx) = mpsc::channel::<Event>();
    while have < n {
        if interrupted() {
            return Err(TestbedError::Interrupted);
        }
        if let Some((rank, status)) = ranks.exited() {
            return Err(TestbedError::Rank {
                rank,
                message: format!("process exited ({status}) before connecting"),
            });
        }
        if Instant::now() > deadline {
            let missing: Vec<usize> = (0..n as usize).filter(|&i| slots[i].is_none()).collect();
            return Err(TestbedError::Timeout {
                what: format!("ranks {missing:?} to connect"),
                secs: 30,
            });
        }
        let (stream, addr) = match listener.accept() {
            Ok(x) => x,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                poll_in(listener.as_raw_fd(), 100);
                continue;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(TestbedError::io("accept a rank", e)),
        };
        stream
            .set_nonblocking(false)
            .map_err(|e| TestbedError::io("control stream", e))?;
        let _ = stream.set_nodelay(true);
        let reader = stream
            .try_clone()
            .map_err(|e| TestbedError::io("control stream", e))?;
        let mut ctrl = Control::new(Box::new(stream), format!("rank at {addr}"));
        ctrl.set_timeout(Duration::from_secs(10))?;
        let (rank, port) = match ctrl.recv::<FromRank>() {
            Ok(FromRank::Hello {
                token: t,
                rank,
                data_port,
            }) if t == token && rank < n && slots[rank as usize].is_none() => (rank, data_port),
            // A stranger, a wrong token or a duplicate: not one of ours; drop it.
            _ => continue,
        };
        ctrl.set_peer(format!("rank {rank}"));
        ctrl.set_timeout(Duration::from_secs(600))?;
        let mut rctl = Control::new(Box::new(reader), format!("rank {rank}"));
        // The reader blocks as long as a job can take; the coordinator's own waits carry
        // the real timeouts.
        rctl.set_timeout(Duration::from_secs(24 * 3600))?;
        let tx = tx.clone();
        std::thread::spawn(move || loop {
            match rctl.recv::<FromRank>() {
                Ok(m) => {
                    if tx.send(Event::Msg(rank, m)).is_err() {
                        break;
                    }
                }
                Err(e) => {
                    let _ = tx.send(Event::Closed(rank, e.to_string()));
                    break;
                }
            }
        });
        slots[rank as usize] = Some((ctrl, port, addr.ip()));
        have += 1;
    }
    let mut writers = Vec::with_capacity(n as usize);
    let mut data = Vec::with_capacity(n as usize);
    let mut ips = Vec::with_capacity(n as usize);
    for (ctrl, port, ip) in slots.into_iter().flatten() {
        writers.push(ctrl);
        data.push(SocketAddr::new(ip, port));
        ips.push(ip);
    }
    Ok((
        Coordinator {
            writers,
            events: rx,
            ranks,
        },
        data,
        ips,
    ))
}

fn poll_in(fd: i32, ms: i32) {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd; the result only says whether to try again.
    unsafe { libc::poll(&mut p, 1, ms) };
}

type Measured = (Profile, Vec<PatternResult>);

/// Starts the ranks on `cluster`, calibrates over its shaped links, measures every pattern and
/// predicts it from that calibration, then lets the ranks go. Each step is its own function.
fn run_on(
    cfg: &TestbedConfig,
    cluster: &Cluster,
    patterns: &[Pattern],
    progress: &mut dyn FnMut(&str),
    notes: &mut Vec<String>,
) -> Result<Measured, TestbedError> {
    let listener = TcpListener::bind((cluster.bridge_addr, 0))
        .map_err(|e| TestbedError::io(format!("listen on {}", cluster.bridge_addr), e))?;
    let ctrl_addr = listener
        .local_addr()
        .map_err(|e| TestbedError::io("control listener", e))?;
    let token = launch::new_token();
    progress(&format!("starting {} ranks", cfg.hosts));
    let ranks = spawn_ranks(cfg, cluster, ctrl_addr, &token)?;
    let (mut co, peers, _) = connect_ranks(&listener, ranks, cfg.hosts, &token)?;
    let profile = calibrate(cfg, &mut co, &peers, progress)?;

    if let Some(r) = cfg.kill_rank_for_test {
        if let Some(c) = co.ranks.children.get_mut(r as usize) {
            let _ = c.kill();
        }
    }

    let mut results = Vec::with_capacity(patterns.len());
    for (k, p) in patterns.iter().enumerate() {
        // Job 0 was the calibration.
        results.push(measure_pattern(
            cfg,
            &mut co,
            &peers,
            k as u32 + 1,
            p,
            &profile,
            progress,
        )?);
    }
    if results.iter().any(|r| r.predict_error.is_some()) {
        notes.push("some patterns have no prediction (see predict_error)".into());
    }
    dismiss(co, cfg.hosts);
    Ok((profile, results))
}

/// Seconds a byte takes on a shaped link.
fn per_byte_s(cfg: &TestbedConfig) -> f64 {
    8.0 / cfg.rate_bit_per_s as f64
}

/// Calibration (job 0): ping-pong between hosts 0 and 1 over the shaped links, fitted into the
/// profile the predictions use.
fn calibrate(
    cfg: &TestbedConfig,
    co: &mut Coordinator,
    peers: &[SocketAddr],
    progress: &mut dyn FnMut(&str),
) -> Result<Profile, TestbedError> {
    let ladder = cfg
        .ladder
        .clone()
        .unwrap_or_else(|| default_ladder(cfg.rate_bit_per_s, cfg.bytes));
    let est: f64 = ladder
        .iter()
        .map(|r| (r.reps + 1) as f64 * 2.0 * (r.bytes as f64 * per_byte_s(cfg) + 0.001))
        .sum();
    progress(&format!(
        "calibrating: ping-pong host 0 <-> host 1, {} sizes {} B .. {} B (about {:.0} s)",
        ladder.len(),
        ladder.first().map_or(0, |r| r.bytes),
        ladder.last().map_or(0, |r| r.bytes),
        est
    ));
    let timeout = Duration::from_secs_f64(30.0 + 10.0 * est);
    let side = |peer: u32, initiator: bool| Work::PingPong {
        peer,
        initiator,
        ladder: ladder.clone(),
    };
    co.start_job(
        0,
        peers,
        vec![(0, side(1, true)), (1, side(0, false))],
        timeout,
    )?;
    co.go(&[0, 1], 0)?;
    let mut points: Vec<PingPongPoint> = Vec::new();
    for (_, m) in co.gather(&[0, 1], "ping-pong results", timeout)? {
        if let FromRank::PingPong { points: p } = m {
            if !p.is_empty() {
                points = p;
            }
        }
    }
    let tpoints: Vec<TcomPoint> = points
        .iter()
        .map(|p| TcomPoint {
            size_bytes: p.bytes,
            // A point without samples keeps NaN, which profile_from_points refuses, naming its size.
            time_us: median(&p.one_way_us).unwrap_or(f64::NAN),
        })
        .collect();
    for p in &tpoints {
        progress(&format!(
            "  {:>9} B  one-way {:>12.1} us",
            p.size_bytes, p.time_us
        ));
    }
    let mut profile = commperf_model::profile::profile_from_points(
        &tpoints,
        &format!(
            "commperf testbed calibration ({} hosts, {}, {:?})",
            cfg.hosts,
            format_rate(cfg.rate_bit_per_s),
            cfg.shaper
        ),
    )
    .map_err(|e| TestbedError::Calibration(e.to_string()))?;
    profile.transport = Some("tcp".into());
    join_pieces(&mut profile);
    Ok(profile)
}

/// Measures pattern `p` as job `job` (warm-up, then timed iterations, every host started
/// together) and predicts it from `profile`.
fn measure_pattern(
    cfg: &TestbedConfig,
    co: &mut Coordinator,
    peers: &[SocketAddr],
    job: u32,
    p: &Pattern,
    profile: &Profile,
    progress: &mut dyn FnMut(&str),
) -> Result<PatternResult, TestbedError> {
    let bound_s = p.max_host_bytes() as f64 * per_byte_s(cfg);
    progress(&format!(
        "measuring {}: {} messages of {} B, {} + {} iterations (rate bound {:.1} ms each)",
        p.name,
        p.messages().len(),
        cfg.bytes,
        cfg.warmup,
        cfg.iters,
        bound_s * 1e3
    ));
    let timeout = Duration::from_secs_f64(30.0 + 20.0 * bound_s);
    let total = cfg.warmup + cfg.iters;
    let works = p
        .ranks
        .iter()
        .enumerate()
        .map(|(r, part)| {
            (
                r as u32,
                Work::Pattern {
                    part: part.clone(),
                    iters: total,
                },
            )
        })
        .collect();
    co.start_job(job, peers, works, timeout)?;
    let (measured, lates) = time_iterations(cfg, co, &p.name, timeout)?;
    // No measured iteration (all warm-up): NaN, written as null in the result file.
    let med = median(&measured).unwrap_or(f64::NAN);
    let (predicted_us, predict_error) = match crate::predict::predict_pattern(p, profile) {
        Ok(t) => (Some(t), None),
        Err(e) => (None, Some(e.to_string())),
    };
    let error_pct = predicted_us.map(|t| (t - med) / med * 100.0);
    let r = PatternResult {
        pattern: p.name.clone(),
        messages: p.messages().len() as u64,
        bytes_per_message: cfg.bytes,
        max_host_bytes: p.max_host_bytes(),
        rate_bound_us: bound_s * 1e6,
        measured_median_us: med,
        measured_min_us: measured.iter().copied().fold(f64::INFINITY, f64::min),
        measured_max_us: measured.iter().copied().fold(0.0, f64::max),
        measured_us: measured,
        start_late_median_us: median(&lates).unwrap_or(f64::NAN),
        predicted_us,
        error_pct,
        predict_error,
    };
    progress(&format!(
        "  {}: measured median {:.1} ms (min {:.1}, max {:.1}; latest start +{:.2} ms), predicted {}",
        r.pattern,
        r.measured_median_us / 1e3,
        r.measured_min_us / 1e3,
        r.measured_max_us / 1e3,
        r.start_late_median_us / 1e3,
        match (r.predicted_us, &r.predict_error) {
            (Some(t), _) => format!("{:.1} ms", t / 1e3),
            (None, Some(e)) => format!("none ({e})"),
            (None, None) => "none".into(),
        }
    ));
    Ok(r)
}

/// Runs the started job's iterations on every host: per measured (post-warm-up) iteration, the
/// time from the common start to the last host's finish and the latest host's start delay, in
/// microseconds.
fn time_iterations(
    cfg: &TestbedConfig,
    co: &mut Coordinator,
    name: &str,
    timeout: Duration,
) -> Result<(Vec<f64>, Vec<f64>), TestbedError> {
    let all: Vec<u32> = (0..cfg.hosts).collect();
    let mut measured = Vec::with_capacity(cfg.iters as usize);
    let mut lates = Vec::with_capacity(cfg.iters as usize);
    for it in 0..cfg.warmup + cfg.iters {
        let start = co.go(&all, it)?;
        let done = co.gather(&all, &format!("{name} iteration {it}"), timeout)?;
        let (mut finish, mut late) = (start, 0);
        for (_, m) in &done {
            if let FromRank::Done {
                finish_ns, late_ns, ..
            } = m
            {
                finish = finish.max(*finish_ns);
                late = late.max(*late_ns);
            }
        }
        if it >= cfg.warmup {
            measured.push(finish.saturating_sub(start) as f64 / 1e3);
            lates.push(late as f64 / 1e3);
        }
    }
    Ok((measured, lates))
}

/// Tells every rank to quit and gives them a moment to leave on their own; the guard kills
/// what remains when `co` is dropped.
fn dismiss(mut co: Coordinator, hosts: u32) {
    for r in 0..hosts {
        let _ = co.send(r, &ToRank::Quit);
    }
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(2)
        && co
            .ranks
            .children
            .iter_mut()
            .any(|c| matches!(c.try_wait(), Ok(None)))
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(co);
}

/// Moves each boundary between two Tcom pieces to where their lines cross, when they cross
/// between the two pieces' measured sizes. A piece fitted over large sizes can have a negative
/// intercept (the shaper's token bucket lets the first bytes through at veth speed), and then
/// costs less than nothing just above the last size of the piece before it; the crossing is
/// where the large-message line really takes over.
pub fn join_pieces(p: &mut Profile) {
    for i in 1..p.tcom.len() {
        let (a, b) = (p.tcom[i - 1], p.tcom[i]);
        let cost =
            |q: &commperf_core::TcomPiece, x: u64| q.intercept_us + q.slope_us_per_byte * x as f64;
        if cost(&b, b.from_bytes) >= cost(&a, a.to_bytes) {
            continue;
        }
        let last = p
            .points
            .iter()
            .map(|q| q.size_bytes)
            .filter(|&x| x > b.from_bytes)
            .min()
            .unwrap_or(b.from_bytes);
        if b.slope_us_per_byte > a.slope_us_per_byte {
            let x = (a.intercept_us - b.intercept_us) / (b.slope_us_per_byte - a.slope_us_per_byte);
            let x = (x.ceil() as u64).clamp(b.from_bytes, last);
            p.tcom[i - 1].to_bytes = x - 1;
            p.tcom[i].from_bytes = x;
        }
        // Still below the piece before (no crossing in range): lift the piece to meet it.
        let (a, b) = (p.tcom[i - 1], p.tcom[i]);
        let gap = cost(&a, a.to_bytes) - cost(&b, b.from_bytes);
        if gap > 0.0 {
            p.tcom[i].intercept_us += gap;
        }
    }
}

/// The report as a table: measured against predicted, per pattern.
pub fn render_table(r: &TestbedReport) -> String {
    let mut s = format!(
        "# commperf testbed | {} hosts, {} per link per direction ({}), {} B messages, median of {} iterations\n",
        r.hosts,
        format_rate(r.rate_bit_per_s),
        r.shaper,
        r.bytes_per_message,
        r.iters
    );
    s += "# Tcom (one-way, from ping-pong host 0 <-> 1):";
    for p in &r.profile.tcom {
        s += &format!(
            " [{}..{} B: {:.1} us + {:.6} us/B]",
            p.from_bytes,
            if p.to_bytes == u64::MAX {
                "inf".to_string()
            } else {
                p.to_bytes.to_string()
            },
            p.intercept_us,
            p.slope_us_per_byte
        );
    }
    s += "\n";
    s += &format!(
        "{:<10} {:>8} {:>12} {:>14} {:>12} {:>12} {:>14} {:>9}\n",
        "pattern",
        "messages",
        "bound(ms)",
        "measured(ms)",
        "min(ms)",
        "max(ms)",
        "predicted(ms)",
        "error(%)"
    );
    for p in &r.patterns {
        s += &format!(
            "{:<10} {:>8} {:>12.2} {:>14.2} {:>12.2} {:>12.2} {:>14} {:>9}\n",
            p.pattern,
            p.messages,
            p.rate_bound_us / 1e3,
            p.measured_median_us / 1e3,
            p.measured_min_us / 1e3,
            p.measured_max_us / 1e3,
            p.predicted_us
                .map_or("-".to_string(), |t| format!("{:.2}", t / 1e3)),
            p.error_pct.map_or("-".to_string(), |e| format!("{e:+.1}")),
        );
    }
    for p in &r.patterns {
        if let Some(e) = &p.predict_error {
            s += &format!("# {}: no prediction: {e}\n", p.pattern);
        }
    }
    for n in &r.notes {
        s += &format!("# note: {n}\n");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_that_become_memory_or_time_are_bounded_by_name() {
        let base = TestbedConfig {
            hosts: 2,
            rate_bit_per_s: 100_000_000,
            shaper: Shaper::HtbFair,
            offloads_off: false,
            gso_max_bytes: None,
            patterns: vec!["ring".into()],
            bytes: 1 << 30,
            iters: MAX_ITERS,
            warmup: 0,
            ladder: Some(vec![Rung { bytes: 1, reps: 1 }]),
            exe: PathBuf::from("/nonexistent"),
            keep: false,
            kill_rank_for_test: None,
        };
        assert!(check_bounds(&base).is_ok());
        let refused = |f: &dyn Fn(&mut TestbedConfig)| {
            let mut c = base.clone();
            f(&mut c);
            check_bounds(&c).unwrap_err().to_string()
        };
        let msg = refused(&|c| c.bytes = 1 << 62);
        assert!(
            msg.contains("--bytes 4611686018427387904 B: from 1 B to 1073741824 B"),
            "{msg}"
        );
        let msg = refused(&|c| c.bytes = 0);
        assert!(msg.contains("--bytes 0 B"), "{msg}");
        let msg = refused(&|c| c.iters = 0);
        assert!(msg.contains("--iters 0: from 1 to 10000"), "{msg}");
        let msg = refused(&|c| c.warmup = u32::MAX);
        assert!(
            msg.contains("--warmup 4294967295: from 0 to 10000"),
            "{msg}"
        );
        let msg = refused(&|c| {
            c.ladder = Some(vec![Rung {
                bytes: 1 << 31,
                reps: 3,
            }])
        });
        assert!(msg.contains("--ladder size 2147483648 B"), "{msg}");
        let msg = refused(&|c| c.ladder = Some(vec![Rung { bytes: 8, reps: 0 }]));
        assert!(msg.contains("--ladder-reps 0: from 1 to 10000"), "{msg}");
    }

    #[test]
    fn pieces_meet_where_their_lines_cross() {
        use commperf_core::TcomPiece;
        let mut p = commperf_model::profile::profile_from_points(
            &[
                TcomPoint {
                    size_bytes: 1,
                    time_us: 12.8,
                },
                TcomPoint {
                    size_bytes: 4096,
                    time_us: 44.0,
                },
                TcomPoint {
                    size_bytes: 16384,
                    time_us: 686.0,
                },
                TcomPoint {
                    size_bytes: 1 << 20,
                    time_us: 84316.0,
                },
            ],
            "t",
        )
        .unwrap();
        p.tcom = vec![
            TcomPiece {
                from_bytes: 0,
                to_bytes: 4096,
                intercept_us: 12.8,
                slope_us_per_byte: 0.0077,
            },
            TcomPiece {
                from_bytes: 4097,
                to_bytes: u64::MAX,
                intercept_us: -641.5,
                slope_us_per_byte: 0.081,
            },
        ];
        join_pieces(&mut p);
        assert_eq!(p.tcom[1].from_bytes, 8927);
        assert_eq!(p.tcom[0].to_bytes, 8926);
        assert!(commperf_model::tcom::Tcom::from_profile(&p).is_ok());
    }

    #[test]
    fn ladder_covers_the_message_size() {
        let l = default_ladder(100_000_000, 1 << 20);
        assert_eq!(l.first().map(|r| r.bytes), Some(1));
        assert_eq!(l.last().map(|r| r.bytes), Some(4 << 20));
        assert!(l.iter().any(|r| r.bytes == 1 << 20));
        assert!(l.iter().all(|r| (3..=30).contains(&r.reps)));
        let big = default_ladder(100_000_000, 10 << 20);
        assert_eq!(big.last().map(|r| r.bytes), Some(10 << 20));
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
    }
}
