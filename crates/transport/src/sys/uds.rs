//! Unix-domain stream realization: a [`StreamEndpoint`] over a `UnixStream`.
//!
//! All framing, waiting and duplex logic lives in [`super::socket`]; this module only makes the
//! connection and names the peer. A Unix socket's peer address is usually unnamed, so an
//! accepted connection is named by the peer's process id (`SO_PEERCRED`), which is what a user
//! can match against `ps`. [`pair`] gives two connected endpoints in one process, for tests and
//! for the local launcher's self-checks.

use super::socket::StreamEndpoint;
use crate::{EndpointConfig, TransportError};
use commperf_core::TransportKind;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;

/// A Unix-domain stream endpoint.
pub type UdsEndpoint = StreamEndpoint<UnixStream>;

/// Connects to the socket at `path` and wraps the connection.
pub fn connect(path: impl AsRef<Path>, cfg: EndpointConfig) -> Result<UdsEndpoint, TransportError> {
    let path = path.as_ref();
    let stream = UnixStream::connect(path)
        .map_err(|e| TransportError::io(format!("connect to unix socket {}", path.display()), e))?;
    let peer = match peer_pid(stream.as_raw_fd()) {
        Some(pid) => format!("local peer process {pid} at {}", path.display()),
        None => format!("unix socket {}", path.display()),
    };
    from_stream(stream, cfg, peer)
}

/// Wraps a connected stream in the configured mode. `peer` names the other side in errors.
pub fn from_stream(
    stream: UnixStream,
    cfg: EndpointConfig,
    peer: String,
) -> Result<UdsEndpoint, TransportError> {
    StreamEndpoint::new(stream, cfg, TransportKind::Uds, peer)
}

/// Two connected endpoints (`socketpair(2)`), both configured with `cfg`.
pub fn pair(cfg: EndpointConfig) -> Result<(UdsEndpoint, UdsEndpoint), TransportError> {
    let (a, b) = UnixStream::pair().map_err(|e| TransportError::io("socketpair", e))?;
    Ok((
        from_stream(a, cfg, "socketpair end b".to_string())?,
        from_stream(b, cfg, "socketpair end a".to_string())?,
    ))
}

/// Binds a listening socket at `path` (which must not exist yet).
pub fn listen(path: impl AsRef<Path>) -> Result<UnixListener, TransportError> {
    let path = path.as_ref();
    UnixListener::bind(path)
        .map_err(|e| TransportError::io(format!("listen on unix socket {}", path.display()), e))
}

/// Accepts one connection on `listener` and wraps it; the peer is named by its process id.
pub fn accept(listener: &UnixListener, cfg: EndpointConfig) -> Result<UdsEndpoint, TransportError> {
    let (stream, _) = listener
        .accept()
        .map_err(|e| TransportError::io("accept on unix socket", e))?;
    let peer = match peer_pid(stream.as_raw_fd()) {
        Some(pid) => format!("local peer process {pid}"),
        None => "local peer process (unknown pid)".to_string(),
    };
    from_stream(stream, cfg, peer)
}

/// The process id of the peer of a connected Unix socket, from `SO_PEERCRED`.
pub(crate) fn peer_pid(fd: RawFd) -> Option<i32> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: `cred` and `len` are valid for writes and live for the call; `len` holds the exact
    // size of `cred`, so the kernel writes no more than that.
    let r = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    if r < 0 {
        return None;
    }
    (cred.pid > 0).then_some(cred.pid)
}
