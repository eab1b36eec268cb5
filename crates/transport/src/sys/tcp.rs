//! TCP realization: a [`StreamEndpoint`] over a `TcpStream` with `TCP_NODELAY`.
//!
//! All framing, waiting and duplex logic lives in [`super::socket`]; this module only makes and
//! tunes the connection. `TCP_NODELAY` is always on: commperf sends each message in one
//! `sendmsg`, and Nagle's algorithm would otherwise hold a small message back until the previous
//! one is acknowledged, which is exactly the latency being measured. Socket buffer sizes are left
//! to the kernel's autotuning (setting them explicitly disables it).

use super::socket::StreamEndpoint;
use crate::{EndpointConfig, TransportError};
use commperf_core::TransportKind;
use std::net::{SocketAddr, TcpListener, TcpStream};

/// A TCP endpoint.
pub type TcpEndpoint = StreamEndpoint<TcpStream>;

/// Connects to `addr` (giving up after the idle timeout) and wraps the connection.
pub fn connect(addr: SocketAddr, cfg: EndpointConfig) -> Result<TcpEndpoint, TransportError> {
    let stream = if cfg.idle_timeout.is_zero() {
        TcpStream::connect(addr)
    } else {
        TcpStream::connect_timeout(&addr, cfg.idle_timeout)
    }
    .map_err(|e| TransportError::io(format!("connect to {addr}"), e))?;
    from_stream(stream, cfg, addr.to_string())
}

/// Wraps a connected stream: sets `TCP_NODELAY` and the configured mode. `peer` names the other
/// side in errors and reports.
pub fn from_stream(
    stream: TcpStream,
    cfg: EndpointConfig,
    peer: String,
) -> Result<TcpEndpoint, TransportError> {
    stream
        .set_nodelay(true)
        .map_err(|e| TransportError::io(format!("set TCP_NODELAY on connection to {peer}"), e))?;
    StreamEndpoint::new(stream, cfg, TransportKind::Tcp, peer)
}

/// Binds a listening socket (port 0 picks a free one; see `TcpListener::local_addr`).
pub fn listen(addr: SocketAddr) -> Result<TcpListener, TransportError> {
    TcpListener::bind(addr).map_err(|e| TransportError::io(format!("listen on {addr}"), e))
}

/// Accepts one connection on `listener` and wraps it; the peer is named by its address.
pub fn accept(listener: &TcpListener, cfg: EndpointConfig) -> Result<TcpEndpoint, TransportError> {
    let (stream, addr) = listener.accept().map_err(|e| {
        let at = listener
            .local_addr()
            .map(|a| a.to_string())
            .unwrap_or_default();
        TransportError::io(format!("accept on {at}"), e)
    })?;
    from_stream(stream, cfg, addr.to_string())
}
