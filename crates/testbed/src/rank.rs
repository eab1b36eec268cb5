//! The rank process: one per namespace, the commperf binary re-executed inside it.
//!
//! It connects to the coordinator's control channel, then runs the jobs it is given: for each
//! job it opens one TCP connection per directed pair it sends on and accepts one per pair it
//! receives on (so sends and receives never wait on each other: a sender thread per outgoing
//! connection, a receiver thread per incoming one), waits for a `Go` with a common start time,
//! replays its part, and reports when it finished. Everything runs in blocking mode: 8+ ranks
//! on 2 cores must sleep, not spin. Every wait has a timeout, and a rank whose coordinator
//! vanishes exits (the control channel closes; the parent-death signal covers the rest).

use crate::pattern::{Msg, RankPart};
use crate::proto::{FromRank, PingPongPoint, Rung, ToRank, Work};
use crate::{now_ns, sleep_until_ns, TestbedError};
use commperf_core::Mode;
use commperf_transport::launch::Control;
use commperf_transport::sys::tcp::{self, TcpEndpoint};
use commperf_transport::{Endpoint, EndpointConfig};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Tag of the timed messages.
const DATA_TAG: u32 = 1;
/// Tag of the first message on a data connection: `<token> <rank>`.
const INTRO_TAG: u32 = 0x7E57_BED0;

/// How a rank is started.
#[derive(Debug, Clone)]
pub struct RankArgs {
    pub rank: u32,
    /// The coordinator's control address.
    pub ctrl: SocketAddr,
    /// This rank's own address (its namespace's veth), where it accepts data connections.
    pub listen: IpAddr,
    pub token: String,
}

/// Runs a rank until the coordinator says `Quit` or goes away.
pub fn rank_main(args: &RankArgs) -> Result<(), TestbedError> {
    tune_namespace();
    let listener = TcpListener::bind((args.listen, 0))
        .map_err(|e| TestbedError::io(format!("listen on {}", args.listen), e))?;
    let data_port = listener
        .local_addr()
        .map_err(|e| TestbedError::io("local address", e))?
        .port();
    let stream = TcpStream::connect_timeout(&args.ctrl, Duration::from_secs(10))
        .map_err(|e| TestbedError::io(format!("connect to coordinator {}", args.ctrl), e))?;
    let _ = stream.set_nodelay(true);
    let mut ctrl = Control::new(Box::new(stream), format!("coordinator {}", args.ctrl));
    ctrl.set_timeout(Duration::from_secs(60))?;
    ctrl.send(&FromRank::Hello {
        token: args.token.clone(),
        rank: args.rank,
        data_port,
    })?;
    loop {
        ctrl.set_phase("waiting for a job");
        match ctrl.recv::<ToRank>()? {
            ToRank::Quit => return Ok(()),
            ToRank::Go { .. } => return Err(TestbedError::Protocol("Go without a job".into())),
            ToRank::Job {
                job,
                peers,
                work,
                timeout_s,
            } => {
                let timeout = Duration::from_secs(timeout_s.max(1));
                ctrl.set_timeout(timeout)?;
                if let Err(e) = run_job(args, &listener, &mut ctrl, job, &peers, &work, timeout) {
                    // Tell the coordinator why, best effort; it names this rank.
                    let _ = ctrl.send(&FromRank::Failed {
                        message: e.to_string(),
                    });
                    return Err(e);
                }
                ctrl.set_timeout(Duration::from_secs(600))?;
            }
        }
    }
}

/// Makes TCP in this namespace behave the same on every transfer: no return to slow start
/// after an idle period (the default would restart each ping-pong direction and each
/// iteration from a small window). Best effort: the sysctl is per namespace, and a kernel
/// without it just keeps its default.
fn tune_namespace() {
    let _ = std::fs::write("/proc/sys/net/ipv4/tcp_slow_start_after_idle", "0");
}

fn run_job(
    args: &RankArgs,
    listener: &TcpListener,
    ctrl: &mut Control,
    job: u32,
    peers: &[SocketAddr],
    work: &Work,
    timeout: Duration,
) -> Result<(), TestbedError> {
    let (dsts, srcs) = match work {
        Work::Pattern { part, .. } => (part.dsts(), part.srcs()),
        Work::PingPong { peer, .. } => (vec![*peer], vec![*peer]),
    };
    let cfg = EndpointConfig {
        mode: Mode::Block,
        max_message: 1 << 30,
        idle_timeout: timeout,
        block_spins: 0,
    };
    let mut outs = Vec::with_capacity(dsts.len());
    for &d in &dsts {
        let addr = *peers
            .get(d as usize)
            .ok_or_else(|| TestbedError::Protocol(format!("no address for rank {d}")))?;
        let mut ep = tcp::connect(addr, cfg)?;
        ep.send(
            INTRO_TAG,
            format!("{} {}", args.token, args.rank).as_bytes(),
        )?;
        outs.push((d, ep));
    }
    let ins = accept_from(listener, &srcs, &args.token, cfg, timeout)?;
    ctrl.send(&FromRank::Ready { job })?;
    match work {
        Work::Pattern { part, iters } => run_pattern(ctrl, part, *iters, outs, ins),
        Work::PingPong {
            initiator, ladder, ..
        } => {
            let (Some((_, out)), Some((_, inn))) = (outs.pop(), ins.into_iter().next()) else {
                return Err(TestbedError::Protocol("ping-pong without a peer".into()));
            };
            run_pingpong(ctrl, *initiator, ladder, out, inn)
        }
    }
}

/// Accepts one data connection from each of `srcs`, checking each one's introduction.
fn accept_from(
    listener: &TcpListener,
    srcs: &[u32],
    token: &str,
    cfg: EndpointConfig,
    timeout: Duration,
) -> Result<Vec<(u32, TcpEndpoint)>, TestbedError> {
    let deadline = Instant::now() + timeout;
    listener
        .set_nonblocking(true)
        .map_err(|e| TestbedError::io("listener", e))?;
    let mut got: Vec<(u32, TcpEndpoint)> = Vec::with_capacity(srcs.len());
    while got.len() < srcs.len() {
        match listener.accept() {
            Ok((stream, addr)) => {
                let mut ep = tcp::from_stream(stream, cfg, addr.to_string())?;
                let mut buf = [0u8; 256];
                let info = ep.recv(&mut buf)?;
                let text = std::str::from_utf8(&buf[..info.len]).unwrap_or("");
                let from = text
                    .strip_prefix(token)
                    .and_then(|r| r.strip_prefix(' '))
                    .and_then(|r| r.parse::<u32>().ok());
                match from {
                    Some(r) if info.tag == INTRO_TAG && srcs.contains(&r) => {
                        if got.iter().any(|(g, _)| *g == r) {
                            return Err(TestbedError::Protocol(format!(
                                "two data connections from rank {r}"
                            )));
                        }
                        got.push((r, ep));
                    }
                    // A stranger or a wrong token: drop it and keep waiting.
                    _ => continue,
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    let missing: Vec<u32> = srcs
                        .iter()
                        .copied()
                        .filter(|s| !got.iter().any(|(g, _)| g == s))
                        .collect();
                    return Err(TestbedError::Timeout {
                        what: format!("data connections from ranks {missing:?}"),
                        secs: timeout.as_secs(),
                    });
                }
                wait_readable(listener.as_raw_fd(), left.min(Duration::from_millis(200)));
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(TestbedError::io("accept a data connection", e)),
        }
    }
    Ok(got)
}

fn wait_readable(fd: i32, t: Duration) {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd; the result only tells whether to retry accept.
    unsafe { libc::poll(&mut p, 1, t.as_millis() as libc::c_int) };
}

/// What a worker thread reports per iteration: its finish time or why it failed.
/// (how late it started after the common start, finish time), ns.
type WorkerResult = Result<(u64, u64), String>;

fn run_pattern(
    ctrl: &mut Control,
    part: &RankPart,
    iters: u32,
    outs: Vec<(u32, TcpEndpoint)>,
    ins: Vec<(u32, TcpEndpoint)>,
) -> Result<(), TestbedError> {
    let sizes_for = |list: &[Msg], peer: u32| -> Vec<u64> {
        list.iter()
            .filter(|m| m.peer == peer)
            .map(|m| m.bytes)
            .collect()
    };
    std::thread::scope(|scope| -> Result<(), TestbedError> {
        let (done_tx, done_rx) = mpsc::channel::<WorkerResult>();
        let mut starts: Vec<mpsc::Sender<u64>> = Vec::new();
        for (peer, mut ep) in outs {
            let sizes = sizes_for(&part.sends, peer);
            let (tx, rx) = mpsc::channel::<u64>();
            starts.push(tx);
            let done = done_tx.clone();
            scope.spawn(move || {
                let buf = vec![0x5Au8; sizes.iter().copied().max().unwrap_or(0) as usize];
                while let Ok(at) = rx.recv() {
                    sleep_until_ns(at);
                    let late = now_ns().saturating_sub(at);
                    let r = sizes
                        .iter()
                        .try_for_each(|&n| ep.send(DATA_TAG, &buf[..n as usize]))
                        .map(|_| (late, now_ns()))
                        .map_err(|e| format!("send to rank {peer}: {e}"));
                    if done.send(r).is_err() {
                        break;
                    }
                }
            });
        }
        for (peer, mut ep) in ins {
            let sizes = sizes_for(&part.recvs, peer);
            let (tx, rx) = mpsc::channel::<u64>();
            starts.push(tx);
            let done = done_tx.clone();
            scope.spawn(move || {
                let mut buf = vec![0u8; sizes.iter().copied().max().unwrap_or(0) as usize];
                while let Ok(at) = rx.recv() {
                    sleep_until_ns(at);
                    let late = now_ns().saturating_sub(at);
                    let r = sizes
                        .iter()
                        .try_for_each(|&n| match ep.recv(&mut buf) {
                            Ok(i) if i.len as u64 == n => Ok(()),
                            Ok(i) => Err(commperf_transport::TransportError::Protocol {
                                peer: format!("rank {peer}"),
                                what: format!("expected {n} bytes, got {}", i.len),
                            }),
                            Err(e) => Err(e),
                        })
                        .map(|_| (late, now_ns()))
                        .map_err(|e| format!("receive from rank {peer}: {e}"));
                    if done.send(r).is_err() {
                        break;
                    }
                }
            });
        }
        drop(done_tx);
        let workers = starts.len();
        let result = (|| {
            for _ in 0..iters {
                ctrl.set_phase("waiting for Go");
                let (iter, start_at_ns) = match ctrl.recv::<ToRank>()? {
                    ToRank::Go { iter, start_at_ns } => (iter, start_at_ns),
                    ToRank::Quit => return Err(TestbedError::Protocol("quit mid-job".into())),
                    other => {
                        return Err(TestbedError::Protocol(format!(
                            "expected Go, got {other:?}"
                        )))
                    }
                };
                for s in &starts {
                    // A worker that is gone has already reported why.
                    let _ = s.send(start_at_ns);
                }
                // A rank with nothing to do finishes the moment it starts.
                let (mut finish, mut late_ns) = (start_at_ns, 0);
                for _ in 0..workers {
                    match done_rx.recv() {
                        Ok(Ok((l, t))) => {
                            finish = finish.max(t);
                            late_ns = late_ns.max(l);
                        }
                        Ok(Err(m)) => return Err(TestbedError::Protocol(m)),
                        Err(_) => {
                            return Err(TestbedError::Protocol("a worker thread vanished".into()))
                        }
                    }
                }
                if workers == 0 {
                    sleep_until_ns(start_at_ns);
                }
                ctrl.send(&FromRank::Done {
                    iter,
                    finish_ns: finish,
                    late_ns,
                })?;
            }
            Ok(())
        })();
        // Closing the start channels ends the workers (a worker blocked in I/O ends with
        // its endpoint's idle timeout, or at once when the process exits after an error).
        drop(starts);
        result
    })
}

fn run_pingpong(
    ctrl: &mut Control,
    initiator: bool,
    ladder: &[Rung],
    mut out: TcpEndpoint,
    mut inn: TcpEndpoint,
) -> Result<(), TestbedError> {
    ctrl.set_phase("waiting for Go");
    match ctrl.recv::<ToRank>()? {
        ToRank::Go { start_at_ns, .. } => sleep_until_ns(start_at_ns),
        other => {
            return Err(TestbedError::Protocol(format!(
                "expected Go, got {other:?}"
            )))
        }
    }
    let max = ladder.iter().map(|r| r.bytes).max().unwrap_or(0) as usize;
    let data = vec![0xA5u8; max];
    let mut buf = vec![0u8; max];
    let mut points = Vec::with_capacity(ladder.len());
    for rung in ladder {
        let n = rung.bytes as usize;
        let mut one_way = Vec::with_capacity(rung.reps as usize);
        // One untimed round trip first: it opens the congestion window for this size.
        for rep in 0..=rung.reps {
            if initiator {
                let t0 = now_ns();
                out.send(DATA_TAG, &data[..n])?;
                inn.recv(&mut buf)?;
                let t1 = now_ns();
                if rep > 0 {
                    one_way.push((t1 - t0) as f64 / 2000.0);
                }
            } else {
                inn.recv(&mut buf)?;
                out.send(DATA_TAG, &data[..n])?;
            }
        }
        points.push(PingPongPoint {
            bytes: rung.bytes,
            one_way_us: one_way,
        });
    }
    ctrl.send(&FromRank::PingPong {
        points: if initiator { points } else { Vec::new() },
    })?;
    Ok(())
}
