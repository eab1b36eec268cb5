//! Upper bounds on everything one end of a session asks the other to do: the one place both
//! sides read them from. A `commperf serve` checks every size a client sends against these before
//! it allocates, maps, spawns or opens anything, and the client checks its own requests against
//! the same values before it sends them, so a legitimate client never meets a refusal it could
//! not have predicted.
//!
//! Each bound is the largest value the command line lets a user ask for (or, where the command
//! line has no option, the value the client always sends, with room to grow), so no legitimate
//! run is refused; what a bound refuses is a hand-made request. A refusal names the field, the
//! value and the bound in one line ([`BoundError`]).

use std::fmt::Display;
use std::time::Duration;

/// Largest message (and largest `max_message` of a data channel): both ends allocate two buffers
/// of the largest size.
pub const MAX_SIZE: u64 = 1 << 30;

/// Most iterations (timed or warm-up) per size: latency keeps one 8-byte sample per timed
/// iteration, so this bounds that buffer at 800 MB.
pub const MAX_ITERS: u64 = 100_000_000;

/// Most messages in flight per iteration (`--window`).
pub const MAX_WINDOW: u32 = 65_536;

/// Smallest shared-memory ring (per direction).
pub const MIN_SHM_RING_BYTES: usize = 64 << 10;

/// Largest shared-memory ring (per direction). The client asks for 1 MiB; 64 MiB leaves room for
/// experiments while a segment (two rings, pre-faulted) stays at 128 MiB.
pub const MAX_SHM_RING_BYTES: usize = 64 << 20;

/// Largest ring of a held-open channel (the conns benchmark opens up to thousands; the client
/// asks for the smallest ring).
pub const MAX_EXTRA_SHM_RING_BYTES: usize = MIN_SHM_RING_BYTES;

/// Smallest shared-memory fragment.
pub const MIN_SHM_FRAG_BYTES: usize = 64;

/// Largest shared-memory fragment for a ring of `ring_bytes`: a record (header line + fragment)
/// must fit four times in the ring.
pub fn max_shm_frag_bytes(ring_bytes: usize) -> usize {
    (ring_bytes / 4).saturating_sub(64)
}

/// Longest idle timeout (`--timeout` takes at most a day).
pub const MAX_IDLE_TIMEOUT_MS: u64 = 86_400_000;

/// Most messages of one parametrized round trip (loggp sends 1 and 10).
pub const MAX_PRTT_N: u32 = 100;

/// Most readiness checks spun before blocking (`--spin`). A check on a socket is a system call
/// (about a microsecond), so this is about a second of spinning per wait, after which the idle
/// timeout governs again.
pub const MAX_BLOCK_SPINS: u32 = 1_000_000;

/// Most segments a noncontig message is split into: every segment adds at least two pages of
/// memory, and the validating loops keep the segments' slices on the stack.
pub const MAX_SEGMENTS: u32 = 64;

/// Most endpoints of the conns and cq benchmarks (`--conns-max`): the data channel and up to
/// `MAX_CONNS - 1` held-open extra channels.
pub const MAX_CONNS: u32 = 65_536;

/// Most memory one session may make the server hold at once: the two message buffers (twice
/// the largest size), the data channel (shared-memory rings, io_uring buffers, socket staging),
/// the benchmark's working buffers (bufmgmt's pools of fresh buffers, noncontig's scattered
/// copy and pack buffer) and every held-open channel. 4.5 GiB holds every benchmark at the 1 GiB
/// size limit except bufmgmt, whose two pools of two 1 GiB buffers alone would be 4 GiB: with
/// 1 GiB buffers held, bufmgmt goes up to 512 MiB messages.
pub const MAX_SESSION_BYTES: u64 = 9 << 29;

/// Descriptors the peer of a session keeps for itself beside held-open channels: a server's
/// pending connections (two each), its listener, the data channel, standard streams.
pub const FD_RESERVE: u64 = 2 * MAX_PENDING as u64 + 64;

/// Most held-open channels a process that may open `fd_limit` descriptors serves, each taking
/// `per` of them.
pub fn max_extra_channels(fd_limit: u64, per: u64) -> u64 {
    (fd_limit.saturating_sub(FD_RESERVE) / per.max(1)).min(MAX_CONNS as u64 - 1)
}

/// Longest a connection may take from accept to a complete, authenticated hello. One deadline
/// for the whole handshake, however the bytes trickle in.
pub const HANDSHAKE_DEADLINE: Duration = Duration::from_secs(5);

/// Most connections a server holds while they have not authenticated yet; beyond it the one
/// that has waited longest is closed.
pub const MAX_PENDING: usize = 64;

/// Largest hello frame (the hello carries a magic, two versions and the token).
pub const MAX_HELLO: usize = 64 << 10;

/// Longest session token (the data channels carry it in one 64-byte message).
pub const MAX_TOKEN: usize = 64;

/// A request outside its bound: names the field, the value and the bound.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field} = {value} is out of bounds: {rule}")]
pub struct BoundError {
    pub field: String,
    pub value: String,
    /// The bound, as a user reads it ("at most 67108864 (64 MiB)").
    pub rule: String,
}

impl BoundError {
    pub fn new(field: impl Into<String>, value: impl Display, rule: impl Into<String>) -> Self {
        BoundError {
            field: field.into(),
            value: value.to_string(),
            rule: rule.into(),
        }
    }
}

/// `value <= max`, or an error naming `field`.
pub fn at_most<T: PartialOrd + Display>(field: &str, value: T, max: T) -> Result<(), BoundError> {
    if value <= max {
        Ok(())
    } else {
        Err(BoundError::new(field, &value, format!("at most {max}")))
    }
}

/// A byte count `value <= max`, or an error naming `field` (the bound also for people).
pub fn at_most_bytes(field: &str, value: u64, max: u64) -> Result<(), BoundError> {
    at_most(field, value, max).map_err(|mut e| {
        e.rule += &format!(" ({})", human_bytes(max));
        e
    })
}

/// `min <= value <= max`, or an error naming `field`.
pub fn within<T: PartialOrd + Display>(
    field: &str,
    value: T,
    min: T,
    max: T,
) -> Result<(), BoundError> {
    if min <= value && value <= max {
        Ok(())
    } else {
        Err(BoundError::new(
            field,
            &value,
            format!("between {min} and {max}"),
        ))
    }
}

/// Byte counts for people: "1.5 GiB".
pub fn human_bytes(b: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{b} B")
    } else if v.fract() == 0.0 {
        format!("{v:.0} {}", UNITS[u])
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// Memory a session holds, checked against [`MAX_SESSION_BYTES`] before each addition.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SessionMemory {
    held: u64,
}

impl SessionMemory {
    pub fn held(&self) -> u64 {
        self.held
    }

    /// Whether `more` bytes (for `what`) may be added; does not add them.
    pub fn check(&self, more: u64, what: &str) -> Result<(), BoundError> {
        let total = self.held.saturating_add(more);
        if total <= MAX_SESSION_BYTES {
            return Ok(());
        }
        Err(BoundError::new(
            "session memory",
            total,
            format!(
                "at most {MAX_SESSION_BYTES} ({} per session): {what} needs {more} B ({}) \
                 beside the {} B ({}) the session holds",
                human_bytes(MAX_SESSION_BYTES),
                human_bytes(more),
                self.held,
                human_bytes(self.held)
            ),
        ))
    }

    /// Adds `more` bytes after checking them.
    pub fn add(&mut self, more: u64, what: &str) -> Result<(), BoundError> {
        self.check(more, what)?;
        self.held += more;
        Ok(())
    }

    pub fn release(&mut self, less: u64) {
        self.held = self.held.saturating_sub(less);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_names_the_field_the_value_and_the_bound() {
        let e = at_most("shm_ring_bytes", 1u64 << 40, MAX_SHM_RING_BYTES as u64).unwrap_err();
        assert_eq!(
            e.to_string(),
            "shm_ring_bytes = 1099511627776 is out of bounds: at most 67108864"
        );
        assert!(at_most("window", MAX_WINDOW, MAX_WINDOW).is_ok());
        assert_eq!(
            within("idle_timeout_ms", 0, 1, MAX_IDLE_TIMEOUT_MS)
                .unwrap_err()
                .to_string(),
            "idle_timeout_ms = 0 is out of bounds: between 1 and 86400000"
        );
    }

    #[test]
    fn session_memory_refuses_the_byte_beyond_the_bound() {
        let mut m = SessionMemory::default();
        m.add(MAX_SESSION_BYTES - 10, "buffers").unwrap();
        m.check(10, "ring").unwrap();
        let e = m.add(11, "ring").unwrap_err();
        assert_eq!(e.field, "session memory");
        assert_eq!(e.value, (MAX_SESSION_BYTES + 1).to_string());
        assert!(e.rule.contains("at most 4831838208 (4.5 GiB"), "{e}");
        assert_eq!(
            m.held(),
            MAX_SESSION_BYTES - 10,
            "a refused addition is not held"
        );
        m.release(u64::MAX);
        assert_eq!(m.held(), 0);
        assert_eq!(human_bytes(1536 << 20), "1.5 GiB");
        assert_eq!(human_bytes(100), "100 B");
    }
}
