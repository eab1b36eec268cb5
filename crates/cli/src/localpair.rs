//! The local pair that `monitor run` and `emulate calibrate` measure over: this binary re-executed
//! as a hidden peer verb, authenticated by a session token, placed on CPUs as `bench` places its
//! pair (peer on the first allowed CPU, this end on the second). One copy of the start-up, so
//! both verbs start, authenticate and pin the same way.

use anyhow::{bail, Context, Result};
use commperf_transport::affinity;
use commperf_transport::launch::{self, AnyEndpoint, Control, LocalPeer, SetupMsg};
use serde::de::DeserializeOwned;
use std::time::Duration;

/// The client's half: the peer started as `verb`, its control channel authenticated (waiting at
/// most `timeout` for it), this process pinned. Returns the CPU the peer should pin itself to
/// (sent in the job), and the token the data channel is opened with.
pub fn spawn(verb: &str, timeout: Duration) -> Result<(LocalPeer, Control, Option<usize>, String)> {
    let exe = std::env::current_exe().context("finding this executable")?;
    commperf_transport::sys::shm::remove_stale_segments();
    let token = launch::new_token();
    let (peer, mut ctrl) = LocalPeer::spawn(
        &exe,
        &[verb.to_string()],
        &[("COMMPERF_SESSION_TOKEN", &token)],
    )?;
    ctrl.set_timeout(timeout)?;
    launch::client_handshake(&mut ctrl, &token)?;
    let cpus = affinity::allowed_cpus();
    let (mine, theirs) = match cpus.as_slice() {
        [p, m, ..] => (Some(*m), Some(*p)),
        _ => (None, None),
    };
    if let Some(cpu) = mine {
        affinity::pin_to(cpu).context("pinning to a CPU")?;
    }
    Ok((peer, ctrl, theirs, token))
}

/// The peer's half: the inherited control channel authenticated, the job received, this process
/// pinned to the CPU the job names (`cpu_of`), and the data endpoint the client asks for served.
pub fn accept<J: DeserializeOwned>(
    timeout: Duration,
    cpu_of: impl Fn(&J) -> Option<usize>,
) -> Result<(Control, J, AnyEndpoint)> {
    let token = std::env::var("COMMPERF_SESSION_TOKEN").unwrap_or_default();
    let mut ctrl: Control = launch::inherited_control(launch::PEER_CONTROL_FD)?;
    launch::server_handshake(&mut ctrl, &token)?;
    ctrl.set_timeout(timeout)?;
    let job: J = ctrl.recv()?;
    if let Some(cpu) = cpu_of(&job) {
        affinity::pin_to(cpu).context("pinning the peer")?;
    }
    let SetupMsg::Data(spec) = ctrl.recv::<SetupMsg>()? else {
        bail!("the client did not ask for a data channel");
    };
    let ep = launch::serve_data(
        &mut ctrl,
        &spec,
        std::net::Ipv4Addr::LOCALHOST.into(),
        &token,
    )?;
    Ok((ctrl, job, ep))
}
