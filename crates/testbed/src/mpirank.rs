//! Ranks of an unmodified MPI program placed in the testbed's namespaces, so that `commperf app`
//! can run a program over rate-limited links: the launcher (`mpirun`) starts `commperf
//! __netns-rank PREFIX -- PROGRAM …` as each rank; that reads the rank the launcher gave it,
//! moves itself into the namespace `PREFIX h<rank>` and execs the program, which then talks to
//! its peers through the namespace's veth, the bridge and the shapers.
//!
//! The move itself is `ip netns exec`. One obstacle, and why this module is more than that: a rank must still reach
//! its launcher. MPICH's Hydra hands each rank an inherited socket (PMI_FD), which crosses
//! namespaces as it is; Open MPI 4.1's PMIx server listens on `127.0.0.1` of the root namespace
//! and tells its clients so (`PMIX_SERVER_URI*=…;tcp4://127.0.0.1:PORT`), and a namespace's
//! loopback is its own. So before the program starts, a relay process listens on the same
//! loopback ports inside the namespace and forwards every connection to the root namespace's:
//! a socket stays in the namespace it was created in, so one process holding a listener made
//! inside and connections made outside bridges the two. The relay dies with the rank (parent-
//! death signal, which survives the rank's exec) and holds none of its standard streams.

use std::convert::Infallible;
use std::ffi::OsString;
use std::fs::File;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, Shutdown, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

/// Where launchers put the rank: Open MPI, MPICH's Hydra (PMI), PMIx.
pub const RANK_VARS: [&str; 3] = ["OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"];

/// Why a rank could not be placed.
#[derive(Debug, thiserror::Error)]
pub enum RankError {
    #[error(
        "no rank in the environment (none of {}): run this under mpirun or mpiexec",
        RANK_VARS.join(", ")
    )]
    NoRank,
    #[error("{var}={value}: not a rank number")]
    BadRank { var: &'static str, value: String },
    #[error("network namespace {netns}: {cause} (is the study's cluster up? `ip netns list`)")]
    Namespace {
        netns: String,
        cause: std::io::Error,
    },
    #[error("entering network namespace {netns}: {cause} (needs root)")]
    Setns {
        netns: String,
        cause: std::io::Error,
    },
    #[error("the loopback relay for {netns}: {why}")]
    Relay { netns: String, why: String },
    #[error("cannot run {cmd}: {cause}")]
    Exec { cmd: String, cause: std::io::Error },
    #[error("no program to run")]
    NoCommand,
}

/// The rank the launcher gave this process.
pub fn rank_from_env() -> Result<u32, RankError> {
    for var in RANK_VARS {
        if let Ok(value) = std::env::var(var) {
            return value
                .trim()
                .parse()
                .map_err(|_| RankError::BadRank { var, value });
        }
    }
    Err(RankError::NoRank)
}

/// The root-namespace loopback ports a rank must reach: those of the PMIx server's URIs
/// (`PMIX_SERVER_URI2=0.0;tcp4://127.0.0.1:55911`, one variable per PMIx version).
pub fn loopback_ports<I: IntoIterator<Item = (String, String)>>(vars: I) -> Vec<u16> {
    let mut ports: Vec<u16> = vars
        .into_iter()
        .filter(|(k, _)| k.starts_with("PMIX_SERVER_URI"))
        .flat_map(|(_, v)| {
            v.split(';')
                .filter_map(|part| {
                    part.strip_prefix("tcp4://127.0.0.1:")
                        .and_then(|p| p.parse::<u16>().ok())
                })
                .collect::<Vec<_>>()
        })
        .collect();
    ports.sort_unstable();
    ports.dedup();
    ports
}

fn open_netns(netns: &str) -> Result<File, RankError> {
    File::open(format!("/run/netns/{netns}")).map_err(|cause| RankError::Namespace {
        netns: netns.to_string(),
        cause,
    })
}

fn setns(f: &File, netns: &str) -> Result<(), RankError> {
    // SAFETY: setns on a namespace file descriptor we hold open; it changes only the calling
    // thread's network namespace.
    if unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(RankError::Setns {
            netns: netns.to_string(),
            cause: std::io::Error::last_os_error(),
        });
    }
    Ok(())
}

/// Places this process, rank `rank`, in namespace `netns` and runs `cmd` there (never returns
/// on success). `relay` is the command that runs [`relay`] (this binary's hidden subcommand);
/// it gets the namespace and the ports as arguments and is started only where a port must be
/// relayed.
pub fn exec_in(netns: &str, cmd: &[OsString], mut relay: Command) -> Result<Infallible, RankError> {
    if cmd.is_empty() {
        return Err(RankError::NoCommand);
    }
    // Checked here for an error naming the namespace (`ip` would only say it cannot open it).
    open_netns(netns)?;
    let ports = loopback_ports(std::env::vars());
    if !ports.is_empty() {
        relay
            .arg(netns)
            .args(ports.iter().map(u16::to_string))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // SAFETY: between fork and exec only prctl, which is async-signal-safe. The relay dies
        // when this process (the rank, after its exec) exits.
        unsafe {
            relay.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let relay_err = |why: String| RankError::Relay {
            netns: netns.to_string(),
            why,
        };
        let mut child = relay
            .spawn()
            .map_err(|e| relay_err(format!("cannot start it: {e}")))?;
        // It prints one line once every listener is bound (or dies saying why).
        let mut line = Vec::new();
        let mut out = child.stdout.take().expect("piped");
        let mut b = [0u8; 1];
        while out.read(&mut b).map_err(|e| relay_err(e.to_string()))? == 1 && b[0] != b'\n' {
            line.push(b[0]);
        }
        if line != b"ready" {
            let mut err = String::new();
            let _ = child.stderr.take().expect("piped").read_to_string(&mut err);
            let _ = child.kill();
            let _ = child.wait();
            return Err(relay_err(err.trim().to_string()));
        }
        // The relay keeps running after our exec; its pipes close with it.
    }
    // `ip netns exec` (as `commperf testbed` starts its ranks) enters the namespace and mounts
    // a /sys of its own, where UCX (MPICH's netmod) lists its devices (with the root
    // namespace's /sys it sees only `lo` usable and finds no route to its peers), and execs the
    // program in place: the launcher's pid, the environment and the relay's parent-death
    // signal all carry over.
    let e = Command::new("ip")
        .args(["netns", "exec", netns])
        .args(cmd)
        .exec();
    Err(RankError::Exec {
        cmd: format!("ip netns exec {netns} {}", cmd[0].to_string_lossy()),
        cause: e,
    })
}

/// The relay process: listens on `ports` of `netns`'s loopback, forwards each connection to the
/// same port of this (the root) namespace's loopback. Prints `ready` on stdout once listening,
/// then closes its standard streams and serves until killed.
pub fn relay(netns: &str, ports: &[u16]) -> Result<Infallible, RankError> {
    let target = open_netns(netns)?;
    let root = File::open("/proc/self/ns/net").map_err(|cause| RankError::Namespace {
        netns: "of this process".into(),
        cause,
    })?;
    setns(&target, netns)?;
    let bound: Result<Vec<(TcpListener, u16)>, RankError> = ports
        .iter()
        .map(|&p| {
            TcpListener::bind((Ipv4Addr::LOCALHOST, p))
                .map(|l| (l, p))
                .map_err(|e| RankError::Relay {
                    netns: netns.to_string(),
                    why: format!("cannot listen on 127.0.0.1:{p}: {e}"),
                })
        })
        .collect();
    // Back in the root namespace before any thread exists: threads inherit it, so every
    // outgoing connection is made there.
    setns(&root, "of this process")?;
    let bound = bound?;
    let mut stdout = std::io::stdout();
    let _ = stdout.write_all(b"ready\n");
    let _ = stdout.flush();
    // The rank's launcher forwards the rank's output until every holder of the pipes has
    // closed them: the relay must not be one.
    if let Ok(null) = File::options().read(true).write(true).open("/dev/null") {
        for fd in 0..3 {
            // SAFETY: dup2 of a descriptor we own onto the standard streams.
            unsafe { libc::dup2(null.as_raw_fd(), fd) };
        }
    }
    let servers: Vec<_> = bound
        .into_iter()
        .map(|(l, port)| std::thread::spawn(move || serve(l, port)))
        .collect();
    for s in servers {
        let _ = s.join();
    }
    // Unreachable in practice (accept loops run until the process is killed).
    std::process::exit(0)
}

fn serve(l: TcpListener, port: u16) {
    for inside in l.incoming().flatten() {
        let Ok(outside) = TcpStream::connect((Ipv4Addr::LOCALHOST, port)) else {
            continue; // the server is gone; the client sees its connection closed
        };
        let _ = inside.set_nodelay(true);
        let _ = outside.set_nodelay(true);
        let (Ok(i2), Ok(o2)) = (inside.try_clone(), outside.try_clone()) else {
            continue;
        };
        std::thread::spawn(move || pump(inside, outside));
        std::thread::spawn(move || pump(o2, i2));
    }
}

fn pump(mut from: TcpStream, mut to: TcpStream) {
    let _ = std::io::copy(&mut from, &mut to);
    let _ = to.shutdown(Shutdown::Write);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pmix_uris_give_their_loopback_ports_once() {
        let vars = [
            ("PMIX_SERVER_URI2", "1194131456.0;tcp4://127.0.0.1:55911"),
            ("PMIX_SERVER_URI3", "1194131456.0;tcp4://127.0.0.1:55911"),
            ("PMIX_SERVER_URI21", "x;tcp4://127.0.0.1:40001"),
            ("PMIX_SERVER_URI4", "x;tcp4://10.0.0.1:40002"),
            ("PMIX_SERVER_URI41", "x;tcp4://127.0.0.1:notaport"),
            ("OTHER", "x;tcp4://127.0.0.1:40003"),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string()));
        assert_eq!(loopback_ports(vars), vec![40001, 55911]);
    }

    #[test]
    fn no_namespace_is_named() {
        let e = exec_in(
            "cpt-no-such-namespace",
            &["true".into()],
            Command::new("true"),
        )
        .unwrap_err();
        assert!(e.to_string().contains("cpt-no-such-namespace"), "{e}");
    }
}
