//! Shared-memory realization: two single-producer/single-consumer rings in one POSIX segment.
//!
//! The shape, one file a part:
//! - `segment.rs`: the segment's layout (a header page, then the two rings),
//!   creating it without a name and linking it once complete, mapping, attaching, unlinking and
//!   unmapping (one `Mapping` for connection and completion-queue
//!   segments alike), and removing what crashed runs left behind ([`remove_stale_segments`]).
//! - `ring.rs`: the records (header, payload placement, side value), their readiness
//!   stamps, the head and tail indices, and the producer's and consumer's steps on one record.
//! - `large.rs`: the large-message path: fragmenting through the ring and
//!   reassembling, or the single-copy rendezvous.
//! - `endpoint.rs`: [`ShmEndpoint`], one end of a connection: waits and bells,
//!   peer liveness, and the [`crate::Endpoint`] operations (with their small-message fast paths)
//!   built from the steps above.
//! - `cq.rs`: [`ShmCq`], a completion queue over many rings.
//!
//! Why it looks like this: each part's notes say why it is shaped as it is (stamps and indices
//! in the ring, fragments and rendezvous in the large-message path, bells and peer death in the
//! endpoint, cleanup in the segment).

mod cq;
mod endpoint;
mod large;
mod ring;
mod segment;
#[cfg(test)]
mod tests;

pub use cq::{attach_cq, CqAttachment, CqPoster, ShmCq, CQ_SLOTS};
pub use endpoint::{pair, ShmEndpoint};
pub use segment::{
    attach, remove_stale_segments, segment_bytes, ShmOptions, ShmPause, ShmPauseParseError,
    ShmSegment, NAME_PREFIX,
};

use std::sync::atomic::AtomicU32;
use std::time::Duration;

fn futex_wait(word: &AtomicU32, expected: u32, timeout: Duration) {
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: word is a valid aligned u32 in shared memory; FUTEX_WAIT (not PRIVATE) works across
    // processes; spurious returns are handled by the callers' loops.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            expected,
            &ts as *const libc::timespec,
        )
    };
}

fn futex_wake(word: &AtomicU32) {
    // SAFETY: as in futex_wait.
    unsafe { libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE, 1) };
}
