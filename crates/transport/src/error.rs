//! Typed transport errors. Every variant that involves the other side names it.

use std::io;

/// What went wrong on an endpoint.
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    #[error("peer {peer} closed the connection{}", during(*.mid_message))]
    PeerClosed { peer: String, mid_message: bool },
    #[error("peer {peer} died{}", during(*.mid_message))]
    PeerDied { peer: String, mid_message: bool },
    #[error("no progress from peer {peer} for {secs} s (idle timeout)")]
    Timeout { peer: String, secs: u64 },
    #[error(
        "peer {peer} announced a {len}-byte message, above the negotiated maximum of {max} bytes"
    )]
    TooLarge { peer: String, len: u64, max: usize },
    #[error("message of {len} bytes does not fit the {cap}-byte receive buffer")]
    Truncated { len: usize, cap: usize },
    #[error("cannot send {len} bytes: the negotiated maximum is {max} bytes")]
    SendTooLarge { len: usize, max: usize },
    #[error("protocol error from peer {peer}: {what}")]
    Protocol { peer: String, what: String },
    // The cause is part of the message (and deliberately not a `#[source]`), so chains printed
    // with `{:#}` do not repeat it.
    #[error("{op}: {cause}")]
    Io { op: String, cause: io::Error },
}

fn during(mid: bool) -> &'static str {
    if mid {
        " in the middle of a message"
    } else {
        ""
    }
}

impl TransportError {
    /// Wraps an I/O error with the operation that failed.
    pub fn io(op: impl Into<String>, source: io::Error) -> Self {
        TransportError::Io {
            op: op.into(),
            cause: source,
        }
    }

    /// True when the error means the peer is gone (closed, died or silent).
    pub fn is_peer_gone(&self) -> bool {
        matches!(
            self,
            TransportError::PeerClosed { .. }
                | TransportError::PeerDied { .. }
                | TransportError::Timeout { .. }
        )
    }
}
