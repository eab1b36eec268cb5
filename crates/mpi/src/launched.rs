//! `--launcher mpi`: the transport layer (shm, tcp, uds, io_uring) measured between ranks that
//! mpirun placed, so a cluster run uses the cluster's launcher and its placement.
//!
//! Each pair runs the ordinary client/peer session of `commperf-bench`: the responder binds a
//! session server and sends its address and a fresh session token to its initiator over MPI
//! (the token never leaves the MPI job), the initiator connects as it would to `commperf
//! serve`. The server binds loopback when both ranks share a host, otherwise the address of the
//! interface that routes to the initiator's host. With several pairs the initiators meet at a
//! barrier before every measurement (through the session's progress hook), so the pairs
//! measure together as in OSU's multi-pair tests.

use crate::world::MpiWorld;
use crate::MpiError;
use commperf_bench::{BenchConfig, Launcher, Progress};
use commperf_core::{ProcessId, Report, TransportKind};
use commperf_transport::launch::Server;
use commperf_transport::serve::ServeLimits;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use serde::{Deserialize, Serialize};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, ToSocketAddrs, UdpSocket};
use std::time::Duration;

/// Responder → initiator: where its session server listens, or why it does not.
#[derive(Debug, Serialize, Deserialize)]
enum Offer {
    Listening { addr: String, token: String },
    Failed { message: String },
}

/// Progress that also starts every measurement of every pair together.
struct PairSync<'a> {
    initiators: &'a SimpleCommunicator,
    inner: &'a mut dyn Progress,
}

impl Progress for PairSync<'_> {
    fn update(&mut self, label: &str, done: usize, total: usize) {
        self.initiators.barrier();
        self.inner.update(label, done, total);
    }

    fn finished(&mut self, what: &str, done: usize, total: usize) {
        self.inner.finished(what, done, total);
    }

    fn finish(&mut self) {
        self.inner.finish();
    }

    fn note(&mut self, line: &str) {
        self.inner.note(line);
    }
}

/// Transports whose two ends must share a host.
fn same_host_only(t: TransportKind) -> bool {
    matches!(
        t,
        TransportKind::Shm | TransportKind::Uds | TransportKind::UringUds
    )
}

/// The address this rank's server binds: loopback for a peer on this host, else the local
/// address of the interface that routes to the peer's host.
fn bind_ip(peer_host: &str, same_host: bool) -> Result<IpAddr, String> {
    if same_host {
        return Ok(Ipv4Addr::LOCALHOST.into());
    }
    let there = (peer_host, 9)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve the initiator's host '{peer_host}': {e}"))?
        .next()
        .ok_or_else(|| format!("the initiator's host '{peer_host}' has no address"))?;
    // Connecting a UDP socket sends nothing; it only asks the kernel for the route.
    let probe = UdpSocket::bind(SocketAddr::new(
        if there.is_ipv4() {
            Ipv4Addr::UNSPECIFIED.into()
        } else {
            std::net::Ipv6Addr::UNSPECIFIED.into()
        },
        0,
    ))
    .and_then(|s| s.connect(there).map(|_| s))
    .and_then(|s| s.local_addr())
    .map_err(|e| format!("no route to the initiator's host '{peer_host}' ({there}): {e}"))?;
    Ok(probe.ip())
}

pub(crate) fn run(
    world: &MpiWorld,
    cfg: &BenchConfig,
    progress: &mut dyn Progress,
) -> Result<Option<Report>, MpiError> {
    let pair = world.pair();
    // Every rank checks every pair, so all reach the same verdict.
    for r in 0..(world.size() / 2) {
        let p = crate::Pair::of(r, world.size());
        let (a, b) = (world.host(r), world.host(p.peer));
        if let Some(t) = cfg.transports.iter().find(|&&t| same_host_only(t)) {
            if a != b {
                return Err(MpiError::Startup(format!(
                    "transport {t} needs both ranks of a pair on one host, and rank {r} runs on \
                     {a}, rank {} on {b}: place pairs together (e.g. mpirun --map-by ppr:2:node) \
                     or use tcp",
                    p.peer
                )));
            }
        }
    }
    // The job's other ranks are this measurement: each end's watch leaves them out (with
    // several pairs, another pair's ends are siblings of ours under mpirun, not children).
    let ids = world.process_ids()?;
    let me = world.rank() as usize;
    let others: Vec<ProcessId> = ids
        .iter()
        .enumerate()
        .filter(|&(r, _)| r != me)
        .map(|(_, p)| p.clone())
        .collect();
    let initiators = world.side();
    let same_host = world.host(world.rank()) == world.host(pair.peer);
    if !pair.initiator {
        let server = bind_ip(world.host(pair.peer), same_host)
            .and_then(|ip| Server::bind(SocketAddr::new(ip, 0), None).map_err(|e| e.to_string()));
        let server = match server {
            Ok(s) => s,
            Err(message) => {
                world.send_json(
                    pair.peer,
                    &Offer::Failed {
                        message: message.clone(),
                    },
                )?;
                return Err(MpiError::Startup(message));
            }
        };
        world.send_json(
            pair.peer,
            &Offer::Listening {
                addr: server.local_addr().to_string(),
                token: server.token().to_string(),
            },
        )?;
        serve(server, cfg, pair.peer, others)?;
        return Ok(None);
    }
    let (addr, token) = match world.recv_json::<Offer>(pair.peer)? {
        Offer::Listening { addr, token } => (addr, token),
        Offer::Failed { message } => {
            return Err(MpiError::Startup(format!("rank {}: {message}", pair.peer)))
        }
    };
    let mut c = cfg.clone();
    c.launcher = Launcher::Mpi { addr, token };
    c.partners = others;
    let mut sync = PairSync {
        initiators: &initiators,
        inner: progress,
    };
    let mut report = commperf_bench::run(&c, &mut sync)?;
    // Each initiator's findings (its peer's merged in) go to rank 0 with its rows.
    let pairs = pair.pairs as i32;
    let found = std::mem::take(&mut report.disturbance);
    let merged = world.merge_findings(0..pairs, &ids, found)?;
    let Some(results) = world.combine_pairs(std::mem::take(&mut report.results))? else {
        return Ok(None);
    };
    report.disturbance = merged.unwrap_or_default();
    report.results = results;
    report.options.mpi_library = Some(world.library().to_string());
    report.options.peer = Some(world.peer_description());
    Ok(Some(report))
}

/// Serves the one session of this pair, through the same concurrent accept loop as `commperf
/// serve`: a stranger on the network who connects first (or holds connections open) is turned
/// away by the token check within the handshake deadline, and never delays the pair's own
/// initiator.
fn serve(
    server: Server,
    cfg: &BenchConfig,
    initiator: i32,
    others: Vec<ProcessId>,
) -> Result<(), MpiError> {
    let ip = server.local_addr().ip();
    let token = server.token().to_string();
    let limits = ServeLimits {
        handshake: Duration::from_secs(30).min(cfg.idle_timeout),
        ..ServeLimits::default()
    };
    let acceptor = server.start(limits, move |event| {
        eprintln!("commperf: turned away a connection that was not rank {initiator}: {event}")
    })?;
    let mut session = acceptor
        .next_session()
        .map_err(|e| MpiError::Startup(format!("waiting for rank {initiator} to connect: {e}")))?;
    session
        .ctrl
        .set_timeout(cfg.idle_timeout.max(Duration::from_secs(600)))?;
    session.ctrl.add_partners(others);
    commperf_bench::serve_session(&mut session.ctrl, &token, ip)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_bind_loopback_for_a_peer_on_the_same_host() {
        assert_eq!(bind_ip("anything", true), Ok(Ipv4Addr::LOCALHOST.into()));
        // A peer named by a loopback address is reached through loopback.
        assert_eq!(bind_ip("127.0.0.1", false), Ok(Ipv4Addr::LOCALHOST.into()));
        let e = bind_ip("no-such-host.invalid", false).unwrap_err();
        assert!(e.contains("no-such-host.invalid"), "{e}");
    }
}
