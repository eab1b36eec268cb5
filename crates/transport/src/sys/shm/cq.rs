//! A completion queue over many rings: the shm answer to epoll (Kutluğ 2000, §3.3.9).
//!
//! Endpoints of the other process post their key into it each time they publish a record, so
//! one poller reads one queue instead of sweeping every ring. Many producers claim slots with a
//! fetch-add on the tail; each slot carries its own stamp, as ring records do. Its segment is a
//! [`Mapping`] like a connection's, named like one, so a crashed run's is removed by
//! [`super::remove_stale_segments`].

use crate::TransportError;
use commperf_core::Mode;
use std::fmt;
use std::io;
use std::ptr::NonNull;
use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::segment::{fresh_name, map_fd, open_segment, shm_create, Line, Mapping};
use super::{futex_wait, futex_wake};

// ---- a completion queue over many rings ---------------------------------------------------------

/// Slots of a shared-memory completion queue.
pub const CQ_SLOTS: u64 = 4096;
pub(super) const CQ_MAGIC: u64 = u64::from_le_bytes(*b"CPSHMCQ1");

#[repr(C)]
pub(super) struct CqSlot {
    /// `position + 1` once `key` is written (release), so the consumer reads whole entries.
    pub(super) stamp: AtomicU64,
    pub(super) key: AtomicU64,
}

#[repr(C)]
pub(super) struct CqShared {
    pub(super) magic: u64,
    /// Next slot the consumer reads.
    pub(super) head: Line<AtomicU64>,
    /// Next slot a producer claims.
    pub(super) tail: Line<AtomicU64>,
    /// The consumer's futex bell, whether it sleeps on it, and whether an entry was dropped.
    pub(super) bell: Line<(AtomicU32, AtomicU32, AtomicU32)>,
    pub(super) slots: [CqSlot; CQ_SLOTS as usize],
}

/// A mapped completion-queue segment: a [`Mapping`] of `size_of::<CqShared>()` bytes, which
/// unlinks and unmaps it.
pub(super) struct CqMap(pub(super) Mapping);

// SAFETY: the segment holds only atomics, so sharing the mapping between threads is sound
// (`Send` comes with the `Mapping`).
unsafe impl Sync for CqMap {}

impl CqMap {
    /// Wraps a mapping of `size_of::<CqShared>()` bytes at `base`.
    pub(super) fn new(base: NonNull<u8>, name: String, linked: bool) -> Self {
        CqMap(Mapping {
            base,
            len: std::mem::size_of::<CqShared>(),
            name,
            linked,
        })
    }

    #[inline]
    pub(super) fn shared(&self) -> &CqShared {
        // SAFETY: the mapping is size_of::<CqShared>() long, page aligned, and all fields
        // written after creation are atomics.
        unsafe { &*(self.0.base.as_ptr() as *const CqShared) }
    }
}

impl fmt::Debug for CqMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CqMap").field("name", &self.0.name).finish()
    }
}

/// A completion queue in shared memory: the shm answer to epoll (Kutluğ 2000, §3.3.9). Endpoints of
/// the *other* process post their key into it each time they publish a record
/// ([`super::ShmEndpoint::set_notify`]), so one poller reads one queue instead of sweeping every
/// ring. Many producers, one consumer; polling reads a cache line, blocking sleeps on a futex.
#[derive(Debug)]
pub struct ShmCq {
    pub(super) map: CqMap,
    pub(super) mode: Mode,
}

impl ShmCq {
    /// Creates the queue's segment (named like the connection segments, so a crashed run's is
    /// removed by [`super::remove_stale_segments`]).
    pub fn create(mode: Mode) -> Result<Self, TransportError> {
        let (name, cname) = fresh_name();
        let len = std::mem::size_of::<CqShared>();
        let fd = shm_create(&cname).map_err(|e| {
            TransportError::io(format!("creating completion-queue segment {name}"), e)
        })?;
        // SAFETY: fd is a valid shm fd we own.
        let sized = unsafe { libc::ftruncate(fd, len as libc::off_t) } == 0;
        let mapped = if sized {
            map_fd(fd, len)
        } else {
            Err(io::Error::last_os_error())
        };
        // SAFETY: fd is no longer needed once mapped (or on failure).
        unsafe { libc::close(fd) };
        let base = match mapped {
            Ok(b) => b,
            Err(e) => {
                // SAFETY: the name was created by us.
                unsafe { libc::shm_unlink(cname.as_ptr()) };
                return Err(TransportError::io(
                    format!("mapping completion-queue segment {name} ({len} bytes)"),
                    e,
                ));
            }
        };
        // SAFETY: nobody else has mapped the segment yet; it is zero-filled by ftruncate.
        unsafe { (*base.cast::<CqShared>().as_ptr()).magic = CQ_MAGIC };
        Ok(ShmCq {
            map: CqMap::new(base, name, true),
            mode,
        })
    }

    /// The name the other process passes to [`attach_cq`].
    pub fn name(&self) -> &str {
        &self.map.0.name
    }

    /// Removes the name once the other process has attached: nothing is left behind.
    pub fn unlink(&mut self) {
        self.map.0.unlink();
    }

    /// Polling or sleeping when a wait has a timeout.
    pub fn set_mode(&mut self, mode: Mode) {
        self.mode = mode;
    }

    #[inline]
    pub(super) fn try_pop(&self) -> Option<u64> {
        let q = self.map.shared();
        let h = q.head.0.load(Ordering::Relaxed);
        let slot = &q.slots[(h % CQ_SLOTS) as usize];
        if slot.stamp.load(Ordering::Acquire) != h + 1 {
            return None;
        }
        let key = slot.key.load(Ordering::Relaxed);
        q.head.0.store(h + 1, Ordering::Release);
        Some(key)
    }

    pub(super) fn overflowed(&self) -> Result<(), TransportError> {
        if self.map.shared().bell.0 .2.swap(0, Ordering::AcqRel) != 0 {
            return Err(TransportError::Protocol {
                peer: "the completion queue's producers".into(),
                what: format!("more than {CQ_SLOTS} completions were left unreaped"),
            });
        }
        Ok(())
    }
}

impl crate::cq::CompletionQueue for ShmCq {
    #[inline]
    fn wait(&mut self, timeout_ms: i32) -> Result<Option<u64>, TransportError> {
        if let Some(k) = self.try_pop() {
            return Ok(Some(k));
        }
        self.overflowed()?;
        if timeout_ms == 0 {
            return Ok(None);
        }
        let limit = if timeout_ms < 0 {
            Duration::from_secs(u32::MAX as u64)
        } else {
            Duration::from_millis(timeout_ms as u64)
        };
        let start = Instant::now();
        let (bell, sleeping, _) = &self.map.shared().bell.0;
        let mut spins = 0u32;
        loop {
            if self.mode == Mode::Poll {
                // Spin a little, then yield: a polling wait must not own a core for a second.
                spins = spins.saturating_add(1);
                if spins < crate::backoff::SPIN_LIMIT {
                    std::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
            } else {
                let seen = bell.load(Ordering::SeqCst);
                sleeping.store(1, Ordering::SeqCst);
                fence(Ordering::SeqCst);
                // Dekker with the producer's post: it stores the entry, then reads `sleeping`.
                let late = self.try_pop();
                if late.is_none() {
                    futex_wait(bell, seen, limit.saturating_sub(start.elapsed()));
                }
                sleeping.store(0, Ordering::SeqCst);
                if late.is_some() {
                    return Ok(late);
                }
            }
            if let Some(k) = self.try_pop() {
                return Ok(Some(k));
            }
            if start.elapsed() >= limit {
                return Ok(None);
            }
        }
    }
}

/// A producer's handle on a completion queue: posts one key.
#[derive(Debug, Clone)]
pub struct CqPoster {
    pub(super) map: std::sync::Arc<CqMap>,
    pub(super) key: u64,
}

/// A producer's attachment to a completion queue another process created; hand out
/// [`CqPoster`]s with [`CqAttachment::poster`].
#[derive(Debug, Clone)]
pub struct CqAttachment {
    pub(super) map: std::sync::Arc<CqMap>,
}

/// Attaches to the completion queue named `name`.
pub fn attach_cq(name: &str) -> Result<CqAttachment, TransportError> {
    let err = |e: io::Error| TransportError::io(format!("attaching completion queue {name}"), e);
    let fd = open_segment(name).map_err(err)?;
    let len = std::mem::size_of::<CqShared>();
    // SAFETY: fstat on the fd we just opened, into a zeroed stat.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let size_ok = unsafe { libc::fstat(fd, &mut st) } == 0 && st.st_size as usize == len;
    let mapped = if size_ok {
        map_fd(fd, len)
    } else {
        Err(io::Error::other("segment has the wrong size"))
    };
    // SAFETY: fd no longer needed.
    unsafe { libc::close(fd) };
    let map = CqMap::new(mapped.map_err(err)?, name.to_string(), false);
    if map.shared().magic != CQ_MAGIC {
        return Err(err(io::Error::other("not a commperf completion queue")));
    }
    Ok(CqAttachment {
        map: std::sync::Arc::new(map),
    })
}

impl CqAttachment {
    /// A handle that posts `key`.
    pub fn poster(&self, key: u64) -> CqPoster {
        CqPoster {
            map: self.map.clone(),
            key,
        }
    }
}

impl CqPoster {
    /// Appends the key; sets the overflow flag instead when the queue is full (never blocks:
    /// a producer must not wait on a consumer that may be waiting on it).
    #[inline]
    pub(super) fn post(&self) {
        let q = self.map.shared();
        let mut t = q.tail.0.load(Ordering::Relaxed);
        loop {
            if t - q.head.0.load(Ordering::Acquire) >= CQ_SLOTS {
                q.bell.0 .2.store(1, Ordering::Release);
                return;
            }
            match q
                .tail
                .0
                .compare_exchange_weak(t, t + 1, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => break,
                Err(now) => t = now,
            }
        }
        let slot = &q.slots[(t % CQ_SLOTS) as usize];
        slot.key.store(self.key, Ordering::Relaxed);
        slot.stamp.store(t + 1, Ordering::Release);
        fence(Ordering::SeqCst);
        let (bell, sleeping, _) = &q.bell.0;
        if sleeping.load(Ordering::SeqCst) != 0 {
            bell.fetch_add(1, Ordering::SeqCst);
            futex_wake(bell);
        }
    }
}
