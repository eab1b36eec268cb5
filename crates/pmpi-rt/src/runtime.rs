//! The recording runtime preloaded into every MPI rank (the cdylib's exported `cpmpi_rt_*`
//! functions, called by the C shim). Why this shape: the application must never wait for the
//! monitor. Each thread writes fixed-size events into its own bounded single-producer ring (no
//! lock, no allocation on the hot path); one writer thread drains all rings every few
//! milliseconds into the rank file, so a crash loses at most that interval; a full ring drops the
//! event and counts the drop instead of blocking. Nonblocking operations wait in a per-thread
//! table keyed by request handle until a Wait/Test completes them (no lock when the posting thread
//! completes them; see `ReqTable` for the cross-thread case).

use crate::format::{self, FrameKind, EVENT_BYTES};
use crate::guard::{self, Entry};
// The ring's and the request tables' primitives: loom's under `--cfg loom` (see `sync`).
use crate::sync::{Arc, AtomicU32, AtomicU64, AtomicUsize, Mutex, Ordering, UnsafeCell};
use std::ffi::{c_char, c_int, CStr};
use std::fs::File;
use std::io::Write;
use std::mem::MaybeUninit;
use std::sync::atomic::AtomicBool;
use std::sync::OnceLock;
use std::time::Duration;

/// One event as the C shim fills it (`cev` in csrc/shim.c); written to disk as is (64 bytes,
/// little-endian, see `format`). `aux` carries the communicator handle while a request is
/// pending and the recording thread's index once recorded.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct CEvent {
    pub kind: u8,
    pub flags: u8,
    pub pad: u16,
    pub peer: i32,
    pub tag: i32,
    pub comm: u32,
    pub bytes: u64,
    pub t_post_enter: u64,
    pub t_post_exit: u64,
    pub t_done_enter: u64,
    pub t_done_exit: u64,
    pub aux: u64,
}

const _: () = assert!(std::mem::size_of::<CEvent>() == EVENT_BYTES);

impl CEvent {
    #[cfg(target_endian = "little")]
    fn to_bytes(self, out: &mut Vec<u8>) {
        // The in-memory layout is the file layout on little-endian targets (repr(C), no padding:
        // the size assertion above): one copy instead of eleven appends, the writer thread's
        // share of the 2 shared cores.
        // SAFETY: CEvent is plain old data of EVENT_BYTES bytes without padding.
        let b: [u8; EVENT_BYTES] = unsafe { std::mem::transmute(self) };
        out.extend_from_slice(&b);
    }

    #[cfg(not(target_endian = "little"))]
    fn to_bytes(self, out: &mut Vec<u8>) {
        out.push(self.kind);
        out.push(self.flags);
        out.extend_from_slice(&self.pad.to_le_bytes());
        out.extend_from_slice(&self.peer.to_le_bytes());
        out.extend_from_slice(&self.tag.to_le_bytes());
        out.extend_from_slice(&self.comm.to_le_bytes());
        for v in [
            self.bytes,
            self.t_post_enter,
            self.t_post_exit,
            self.t_done_enter,
            self.t_done_exit,
            self.aux,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
    }
}

/// A bounded single-producer (the owning thread) single-consumer (the writer, under the file
/// lock) ring of events. Full, it drops the new event and counts it (`drops`): the producer never
/// waits. `scripts/loom.sh` model-checks it (`push` against `drain`, `runtime/tests.rs`).
///
/// Why `repr(C)` and raw fields: the producer side runs in the C shim (`cring` and `record` in
/// csrc/shim.c), which caches the thread's ring in an initial-exec thread-local and writes the
/// event straight into its slot. Through an FFI call into a Rust thread-local (a
/// `__tls_get_addr` call in a cdylib) and a copy of the event the same push cost ~10 ns more per
/// recorded call. The layout below is the C struct's, field for field; head (the producer's line)
/// and tail (the consumer's) sit on separate cache lines so a push does not pull the writer's line.
#[repr(C, align(64))]
pub struct Ring {
    // Line 0, read-only after creation.
    slots: *mut CEvent,
    mask: u64,
    thread: u64,
    _pad0: [u64; 5],
    // Line 1, the producer's: next slot to write, and its last view of `tail` (producer-only:
    // it rereads `tail` only when the ring looks full or half full through that view).
    head: AtomicU64,
    tail_cache: UnsafeCell<u64>,
    drops: AtomicU64,
    _pad1: [u64; 5],
    // Line 2, the consumer's.
    tail: AtomicU64,
    /// Set by the producer when it woke the writer early (the ring half full), cleared by the
    /// writer's drain: one wake per fill, not one per event.
    woken: AtomicU32,
    _pad2: [u32; 13],
    /// Owns `slots` (never reallocated, so the C side's pointer stays valid).
    storage: Box<[UnsafeCell<MaybeUninit<CEvent>>]>,
}

// SAFETY: a slot is written only by the producer while it is outside [tail, head) and read only
// by the consumer while inside it; head/tail hand slots over with release/acquire ordering;
// `tail_cache` is touched only by the producer.
unsafe impl Sync for Ring {}
// SAFETY: as above; the ring owns plain data.
unsafe impl Send for Ring {}

impl Ring {
    fn new(cap: usize, thread: u32) -> Ring {
        let cap = cap.next_power_of_two();
        let storage: Box<[UnsafeCell<MaybeUninit<CEvent>>]> = (0..cap)
            .map(|_| UnsafeCell::new(MaybeUninit::uninit()))
            .collect();
        Ring {
            slots: storage.as_ptr() as *mut CEvent,
            mask: cap as u64 - 1,
            thread: u64::from(thread),
            _pad0: [0; 5],
            head: AtomicU64::new(0),
            tail_cache: UnsafeCell::new(0),
            drops: AtomicU64::new(0),
            _pad1: [0; 5],
            tail: AtomicU64::new(0),
            woken: AtomicU32::new(0),
            _pad2: [0; 13],
            storage,
        }
    }

    /// Producer side, the owning thread: `record` in csrc/shim.c, statement for statement (the
    /// shim pushes in C, see the type's comment; this twin is what the model checker and the
    /// stress tests run against `drain`: change both together).
    #[cfg(test)]
    fn push(&self, e: &CEvent) -> Pushed {
        // Only the producer stores head: its own last store.
        let h = self.head.load(Ordering::Relaxed);
        let cap = self.mask + 1;
        let mut woke = false;
        // SAFETY: `tail_cache` is the producer's alone.
        let mut tail = self.tail_cache.with(|p| unsafe { *p });
        if h - tail >= cap / 2 {
            tail = self.tail.load(Ordering::Acquire);
            // SAFETY: as above.
            self.tail_cache.with_mut(|p| unsafe { *p = tail });
            if h - tail >= cap {
                let d = self.drops.load(Ordering::Relaxed);
                self.drops.store(d + 1, Ordering::Relaxed);
                return Pushed::Dropped;
            }
            if h - tail >= cap / 2 && self.woken.load(Ordering::Relaxed) == 0 {
                self.woken.store(1, Ordering::Relaxed);
                woke = true; // the shim calls cpmpi_rt_wake() here
            }
        }
        let mut ev = *e;
        // The file's `aux`: the recording thread.
        ev.aux = self.thread;
        // SAFETY: slot h is outside [tail, head): the consumer does not read it (it released
        // the slot's last read with its store of tail, acquired above or at an earlier reread).
        self.storage[(h & self.mask) as usize].with_mut(|p| unsafe { (*p).write(ev) });
        self.head.store(h + 1, Ordering::Release);
        if woke {
            Pushed::StoredWoke
        } else {
            Pushed::Stored
        }
    }

    /// Consumer side: appends every published event to `out`.
    fn drain(&self, out: &mut Vec<u8>) -> usize {
        let h = self.head.load(Ordering::Acquire);
        let t = self.tail.load(Ordering::Relaxed);
        for i in t..h {
            // SAFETY: slots in [tail, head) were fully written before head was released, and the
            // producer does not touch them until tail moves past them.
            let e = self.storage[(i & self.mask) as usize].with(|p| unsafe { (*p).assume_init() });
            e.to_bytes(out);
        }
        self.tail.store(h, Ordering::Release);
        self.woken.store(0, Ordering::Relaxed);
        (h - t) as usize
    }
}

/// What [`Ring::push`] did with an event.
#[cfg(test)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pushed {
    Stored,
    /// Stored, and the ring was half full with no wake pending: the shim wakes the writer.
    StoredWoke,
    /// The ring was full: dropped and counted in `drops`.
    Dropped,
}

impl std::fmt::Debug for Ring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ring")
            .field("thread", &self.thread)
            .field("capacity", &(self.mask + 1))
            .finish_non_exhaustive()
    }
}

// The C shim's `cring` mirrors these offsets (csrc/shim.c asserts them too). Loom's atomics are
// larger than the plain values; its build has no C side.
#[cfg(not(loom))]
const _: () = assert!(std::mem::offset_of!(Ring, head) == 64);
#[cfg(not(loom))]
const _: () = assert!(std::mem::offset_of!(Ring, tail_cache) == 72);
#[cfg(not(loom))]
const _: () = assert!(std::mem::offset_of!(Ring, drops) == 80);
#[cfg(not(loom))]
const _: () = assert!(std::mem::offset_of!(Ring, tail) == 128);
#[cfg(not(loom))]
const _: () = assert!(std::mem::offset_of!(Ring, woken) == 136);

struct Writer {
    file: File,
    events: u64,
    drops_reported: u64,
}

struct Runtime {
    rings: std::sync::Mutex<Vec<std::sync::Arc<Ring>>>,
    writer: std::sync::Mutex<Writer>,
    stop: AtomicBool,
    thread: std::sync::Mutex<Option<std::thread::JoinHandle<()>>>,
    requests: Requests,
    ring_cap: usize,
    next_thread: std::sync::atomic::AtomicU32,
    finished: AtomicBool,
}

/// Every posted nonblocking operation not yet completed: the threads' tables and the spill.
struct Requests {
    /// Every thread's request table (never removed: a thread may post and exit, and another
    /// complete its request). Its lock also serializes foreign scans against owners' rehashes.
    tables: Mutex<Vec<Arc<ReqTable>>>,
    n_tables: AtomicUsize,
    /// Capacity of each thread's table ([`TABLE_CAP`]; a handful in the model checker's runs).
    table_cap: usize,
    /// Posted operations that did not fit a thread's table, by request handle. A handle can be
    /// live more than once: Open MPI answers every send it completes inline with the same
    /// `ompi_request_empty_send`, MPICH its lightweight sends with one builtin request; so a
    /// shard is a list scanned from its oldest entry.
    pending: Vec<Mutex<Vec<(u64, CEvent)>>>,
    /// Entries in `pending`: lets a completion skip the shards when nothing spilled.
    pending_len: AtomicUsize,
}

static RT: OnceLock<Runtime> = OnceLock::new();
/// See [`cpmpi_rt_thread_multiple`].
static THREAD_MULTIPLE: AtomicBool = AtomicBool::new(false);
/// The writer thread, for a producer to wake it early.
static WRITER: OnceLock<std::thread::Thread> = OnceLock::new();

/// Shards of the spill table ([`Requests::pending`]).
const SHARDS: usize = 64;

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec through a valid pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

impl Requests {
    fn new(table_cap: usize, shards: usize) -> Requests {
        Requests {
            tables: Mutex::new(Vec::new()),
            n_tables: AtomicUsize::new(0),
            table_cap,
            pending: (0..shards.max(1))
                .map(|_| Mutex::new(Vec::with_capacity(64)))
                .collect(),
            pending_len: AtomicUsize::new(0),
        }
    }

    /// A new thread's table, registered for the other threads' completions.
    fn table(&self) -> Arc<ReqTable> {
        let t = Arc::new(ReqTable::new(self.table_cap));
        let mut v = self.tables.lock().unwrap_or_else(|e| e.into_inner());
        v.push(t.clone());
        self.n_tables.store(v.len(), Ordering::Release);
        t
    }

    fn shard(&self, key: u64) -> &Mutex<Vec<(u64, CEvent)>> {
        &self.pending[((key >> 4) ^ (key >> 12) ^ key) as usize % self.pending.len()]
    }

    /// Remembers a posted operation: in the posting thread's table `mine` when it fits, else
    /// in the shared spill.
    fn post(&self, mine: Option<&ReqTable>, key: u64, e: &CEvent) {
        let own = !matches!(key, EMPTY | TOMB | CLAIMED)
            && mine.is_some_and(|t| t.insert(&self.tables, key, e));
        if !own {
            let mut m = self.shard(key).lock().unwrap_or_else(|e| e.into_inner());
            m.push((key, *e));
            // Counted before the shard is released: a completion that finds the entry must
            // find it counted too, or its uncount could precede this count and let the total
            // read 0 while another spilled entry waits (its completion then missed it: loom's
            // `table_spill_count_races_completion`).
            self.pending_len.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// Takes the oldest posted operation with `key` (completed by the thread whose table is
    /// `mine`); `multiple` says whether another thread may complete requests meanwhile
    /// (MPI_THREAD_MULTIPLE, see [`ReqTable::take_own`]).
    fn take(&self, mine: Option<&ReqTable>, key: u64, multiple: bool) -> Option<CEvent> {
        if matches!(key, EMPTY | TOMB | CLAIMED) {
            // Never stored in a thread's table (the sentinels would match its free slots).
            return self.take_spilled(key);
        }
        mine.and_then(|m| m.take_own(key, multiple))
            .or_else(|| self.take_elsewhere(key, mine))
    }

    fn take_spilled(&self, key: u64) -> Option<CEvent> {
        if self.pending_len.load(Ordering::Acquire) == 0 {
            return None;
        }
        let mut m = self.shard(key).lock().unwrap_or_else(|e| e.into_inner());
        let i = m.iter().position(|(k, _)| *k == key)?;
        self.pending_len.fetch_sub(1, Ordering::AcqRel);
        Some(m.remove(i).1)
    }

    /// Slow path of a completion: the spilled entries, then other threads' tables.
    fn take_elsewhere(&self, key: u64, mine: Option<&ReqTable>) -> Option<CEvent> {
        if let Some(e) = self.take_spilled(key) {
            return Some(e);
        }
        let others = self.n_tables.load(Ordering::Acquire) - usize::from(mine.is_some());
        if others == 0 {
            return None;
        }
        let v = self.tables.lock().unwrap_or_else(|e| e.into_inner());
        v.iter()
            .filter(|t| mine.is_none_or(|m| !std::ptr::eq(Arc::as_ptr(t), m)))
            .find_map(|t| t.take_foreign(key))
    }

    /// Operations posted and never completed (the footer's `pending_requests`).
    fn pending(&self) -> usize {
        let spilled: usize = self
            .pending
            .iter()
            .map(|m| m.lock().unwrap_or_else(|e| e.into_inner()).len())
            .sum();
        let tables = self.tables.lock().unwrap_or_else(|e| e.into_inner());
        spilled + tables.iter().map(|t| t.pending()).sum::<usize>()
    }
}

impl Runtime {
    fn ring(&self) -> std::sync::Arc<Ring> {
        let id = self.next_thread.fetch_add(1, Ordering::Relaxed);
        let r = std::sync::Arc::new(Ring::new(self.ring_cap, id));
        self.rings
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(r.clone());
        r
    }

    /// Drains every ring into one frame. Holds the writer lock: the only consumer at a time.
    fn flush(&self) {
        let mut w = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        let rings: Vec<std::sync::Arc<Ring>> =
            self.rings.lock().unwrap_or_else(|e| e.into_inner()).clone();
        // The frame is built in place: 8 bytes reserved for its header, the events behind them,
        // the checksum appended by `seal` (no second copy of the events).
        let mut buf = vec![0u8; 8];
        let mut n = 0;
        let mut drops = 0;
        for r in &rings {
            n += r.drain(&mut buf);
            drops += r.drops.load(Ordering::Relaxed);
        }
        if n > 0 {
            w.events += n as u64;
            format::seal(FrameKind::Events, &mut buf);
            let _ = w.file.write_all(&buf);
        }
        if drops != w.drops_reported {
            w.drops_reported = drops;
            let j = serde_json::json!({ "drops": drops });
            let _ = w
                .file
                .write_all(&format::frame(FrameKind::Drops, j.to_string().as_bytes()));
        }
    }
}

/// Pending nonblocking operations of one thread: the request table of the hot path.
///
/// Why per thread: a post and its completion almost always happen on the same thread, and a
/// shared table costs a lock (an atomic read-modify-write pair, and a contended line under
/// MPI_THREAD_MULTIPLE) per post and per completion. The scheme, correct under
/// MPI_THREAD_MULTIPLE:
///
/// - Each thread owns one fixed-capacity open-addressing table (linear probing). Only the owner
///   inserts, and only the owner turns slots EMPTY, so its fast path takes no lock: an insert
///   writes the event and sequence number, then publishes the key with a release store; a take
///   finds the oldest entry with the key (a handle can be live more than once: Open MPI completes
///   inline sends with one shared request, MPICH its lightweight sends with one builtin) and
///   claims it with one CAS key → TOMB on a line no other thread normally touches.
/// - A request completed by another thread than the one that posted it (legal: MPI lets any
///   thread complete a request) misses in the completer's own table and falls back to the slow
///   path: under the registry lock it scans the other threads' tables and claims the entry with
///   CAS key → CLAIMED, copies the event, then stores TOMB (release). The CAS arbitrates the only
///   possible race, an owner taking a duplicate handle at the same time; CLAIMED keeps the owner
///   from reusing the slot while the event is being copied.
/// - The owner empties a TOMB slot only when the next slot is EMPTY (the end of a probe run, which
///   no live key's run crosses), so a concurrent foreign scan never stops short of its key. The
///   owner compacts tombstones (rehash) only under the registry lock, when no foreign scan runs.
/// - When the table is 3/4 full of live entries, posts spill into a shared locked table (the old
///   scheme), which completions also check; a process with one posting thread and nothing spilled
///   answers an untracked request (persistent, collective) without any lock.
pub struct ReqTable {
    keys: Box<[AtomicU64]>,
    seqs: Box<[AtomicU64]>,
    events: Box<[UnsafeCell<MaybeUninit<CEvent>>]>,
    /// Slots - 1 (a power of two, at least 8: see `new`).
    mask: usize,
    /// Owner-only counters.
    own: UnsafeCell<Own>,
    /// Entries other threads claimed (so live = owner's count - this).
    foreign_taken: AtomicUsize,
}

/// A table's owner-only counters.
#[derive(Clone, Copy, Debug, Default)]
struct Own {
    /// Slots that are not EMPTY.
    used: usize,
    /// Entries the owner inserted and has not taken itself (some may have been claimed by
    /// other threads: `foreign_taken`).
    inserted: usize,
    /// The next insert's sequence number (the oldest duplicate is taken first).
    seq: u64,
}

// SAFETY: see the scheme above: events are written only by the owner into EMPTY/TOMB slots (not
// visible under any key) and read by whoever won the CAS on the slot's key; `own` is touched only
// by the owning thread.
unsafe impl Sync for ReqTable {}
// SAFETY: as above; plain data.
unsafe impl Send for ReqTable {}

const EMPTY: u64 = 0;
const TOMB: u64 = u64::MAX;
const CLAIMED: u64 = u64::MAX - 1;
const TABLE_CAP: usize = 1024;

impl ReqTable {
    /// A table of `cap` slots, rounded up to a power of two of at least 8: the insert keeps a
    /// quarter of the slots EMPTY only while an eighth of them is at least one slot, and every
    /// probe loop relies on an EMPTY slot to end.
    fn new(cap: usize) -> ReqTable {
        let cap = cap.max(8).next_power_of_two();
        ReqTable {
            keys: (0..cap).map(|_| AtomicU64::new(EMPTY)).collect(),
            seqs: (0..cap).map(|_| AtomicU64::new(0)).collect(),
            events: (0..cap)
                .map(|_| UnsafeCell::new(MaybeUninit::uninit()))
                .collect(),
            mask: cap - 1,
            own: UnsafeCell::new(Own::default()),
            foreign_taken: AtomicUsize::new(0),
        }
    }

    fn home(&self, key: u64) -> usize {
        // Handles are aligned pointers (Open MPI) or small indices under a tag (MPICH): mix.
        (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 54) as usize & self.mask
    }

    fn next(&self, i: usize) -> usize {
        (i + 1) & self.mask
    }

    /// Owner: stores a posted operation; false when full (the caller spills to the shared table).
    /// `registry` is the lock of every table's registry ([`Requests::tables`]), taken to rehash.
    fn insert(&self, registry: &Mutex<Vec<Arc<ReqTable>>>, key: u64, e: &CEvent) -> bool {
        let slots = self.mask + 1;
        self.own.with_mut(|own| {
            // SAFETY: `own` is only touched by the owning thread (this one).
            let own = unsafe { &mut *own };
            if own.used + 1 > slots * 3 / 4 {
                let live = own.inserted - self.foreign_taken.load(Ordering::Relaxed);
                if own.used - live < slots / 8 {
                    return false;
                }
                let _g = registry.lock().unwrap_or_else(|e| e.into_inner());
                self.rehash(own);
            }
            self.insert_at_free(own, key, e);
            true
        })
    }

    /// Owner: writes the entry into the first EMPTY or TOMB slot of `key`'s probe run.
    fn insert_at_free(&self, own: &mut Own, key: u64, e: &CEvent) {
        let mut i = self.home(key);
        loop {
            let k = self.keys[i].load(Ordering::Acquire);
            if k == EMPTY || k == TOMB {
                // SAFETY: an EMPTY or TOMB slot is read by nobody (a claimer stores TOMB only
                // after its copy, and the acquire load above orders that copy before this write).
                self.events[i].with_mut(|p| unsafe { (*p).write(*e) });
                self.seqs[i].store(own.seq, Ordering::Relaxed);
                own.seq += 1;
                own.inserted += 1;
                if k == EMPTY {
                    own.used += 1;
                }
                self.keys[i].store(key, Ordering::Release);
                return;
            }
            i = self.next(i);
        }
    }

    /// Owner: rebuilds the table without tombstones. Caller holds the registry lock, so no
    /// foreign scan is running and no slot is CLAIMED.
    fn rehash(&self, own: &mut Own) {
        let mut live = Vec::new();
        for i in 0..=self.mask {
            let k = self.keys[i].load(Ordering::Acquire);
            if k != EMPTY && k != TOMB && k != CLAIMED {
                // SAFETY: a published key's event was written before the key (release/acquire).
                let e = self.events[i].with(|p| unsafe { (*p).assume_init() });
                live.push((self.seqs[i].load(Ordering::Relaxed), k, e));
            }
            self.keys[i].store(EMPTY, Ordering::Relaxed);
        }
        live.sort_by_key(|x| x.0);
        *own = Own {
            seq: own.seq,
            ..Own::default()
        };
        self.foreign_taken.store(0, Ordering::Relaxed);
        for (s, k, e) in live {
            let mut i = self.home(k);
            while self.keys[i].load(Ordering::Relaxed) != EMPTY {
                i = self.next(i);
            }
            // SAFETY: the slot is EMPTY and no other thread reads it (registry lock held).
            self.events[i].with_mut(|p| unsafe { (*p).write(e) });
            self.seqs[i].store(s, Ordering::Relaxed);
            self.keys[i].store(k, Ordering::Release);
            own.used += 1;
            own.inserted += 1;
        }
    }

    /// Owner: takes the oldest entry with `key`. `multiple`: another thread may be claiming
    /// entries of this table meanwhile (MPI_THREAD_MULTIPLE); without it no other thread calls
    /// MPI at the same time, so a plain store claims the slot instead of a CAS.
    fn take_own(&self, key: u64, multiple: bool) -> Option<CEvent> {
        loop {
            let i = self.oldest(key)?;
            if !multiple {
                // No other thread calls MPI at the same time (the program did not ask for
                // MPI_THREAD_MULTIPLE), so none can be claiming this slot now: a plain store.
                self.keys[i].store(TOMB, Ordering::Relaxed);
            } else if self.keys[i]
                .compare_exchange(key, TOMB, Ordering::Acquire, Ordering::Relaxed)
                .is_err()
            {
                continue; // another thread claimed this duplicate meanwhile: look again
            }
            // SAFETY: winning the CAS makes this thread the slot's only reader; the owner wrote
            // the event itself.
            let e = self.events[i].with(|p| unsafe { (*p).assume_init() });
            self.own.with_mut(|own| {
                // SAFETY: owner-only counters.
                let own = unsafe { &mut *own };
                own.inserted -= 1;
                self.trim(i, own);
            });
            return Some(e);
        }
    }

    /// Owner: the slot of the oldest entry with `key` (lowest sequence number) in its probe run.
    fn oldest(&self, key: u64) -> Option<usize> {
        let mut i = self.home(key);
        let mut best: Option<(usize, u64)> = None;
        loop {
            let k = self.keys[i].load(Ordering::Relaxed);
            if k == EMPTY {
                return best.map(|(i, _)| i);
            }
            if k == key {
                let s = self.seqs[i].load(Ordering::Relaxed);
                if best.is_none_or(|(_, b)| s < b) {
                    best = Some((i, s));
                }
            }
            i = self.next(i);
        }
    }

    /// Owner, after turning slot `i` into a TOMB: at the end of a probe run (the next slot
    /// EMPTY), which no live key's run crosses, the TOMBs from `i` backwards can be EMPTY.
    fn trim(&self, i: usize, own: &mut Own) {
        let mut j = i;
        while self.keys[self.next(j)].load(Ordering::Relaxed) == EMPTY
            && self.keys[j].load(Ordering::Acquire) == TOMB
        {
            self.keys[j].store(EMPTY, Ordering::Relaxed);
            own.used -= 1;
            j = j.wrapping_sub(1) & self.mask;
        }
    }

    /// Another thread (registry lock held): claims any entry with `key`.
    fn take_foreign(&self, key: u64) -> Option<CEvent> {
        let mut i = self.home(key);
        for _ in 0..=self.mask {
            let k = self.keys[i].load(Ordering::Relaxed);
            if k == EMPTY {
                return None;
            }
            if k == key
                && self.keys[i]
                    .compare_exchange(key, CLAIMED, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                // SAFETY: the CAS won the slot; the owner does not reuse a CLAIMED slot.
                let e = self.events[i].with(|p| unsafe { (*p).assume_init() });
                self.foreign_taken.fetch_add(1, Ordering::Relaxed);
                self.keys[i].store(TOMB, Ordering::Release);
                return Some(e);
            }
            i = self.next(i);
        }
        None
    }

    fn pending(&self) -> usize {
        self.keys
            .iter()
            .filter(|k| !matches!(k.load(Ordering::Acquire), EMPTY | TOMB | CLAIMED))
            .count()
    }
}

impl std::fmt::Debug for ReqTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReqTable")
            .field("pending", &self.pending())
            .finish_non_exhaustive()
    }
}

fn cstr(p: *const c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: the shim passes NUL-terminated strings that live for the call.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// Opens `$COMMPERF_PMPI_DIR/rank-N.cpmpi`, writes the header and starts the writer thread.
/// Returns nonzero (and says why on stderr) when monitoring cannot run in this process.
#[no_mangle]
pub extern "C" fn cpmpi_rt_init(
    rank: c_int,
    size: c_int,
    flavour: *const c_char,
    libversion: *const c_char,
) -> c_int {
    guard::arm_test_hook();
    guard::entry(Entry::Init, 1, || {
        let Some(dir) = std::env::var_os("COMMPERF_PMPI_DIR") else {
            eprintln!("commperf-pmpi: COMMPERF_PMPI_DIR is not set; rank {rank} is not monitored");
            return 1;
        };
        let path = std::path::Path::new(&dir).join(format::rank_file_name(rank as u32));
        let mut file = match File::create(&path) {
            Ok(f) => f,
            Err(e) => {
                eprintln!(
                    "commperf-pmpi: cannot write {}: {e}; rank {rank} is not monitored",
                    path.display()
                );
                return 1;
            }
        };
        let header = format::Header {
            format: format::FORMAT_NAME.to_string(),
            version: format::VERSION,
            rank: rank as u32,
            size: size as u32,
            pid: std::process::id(),
            host: hostname(),
            mpi_flavour: cstr(flavour),
            mpi_library: cstr(libversion).trim().to_string(),
            program_tag: std::env::var("COMMPERF_PMPI_TAG").unwrap_or_default(),
            // The timebase of every time in the file. The shim reads it from the TSC calibrated
            // against CLOCK_MONOTONIC across MPI_Init where the CPU's TSC is invariant (cheaper
            // than clock_gettime per call), else from clock_gettime itself. "Invariant" is the
            // one rule of `commperf_transport::clock::tsc_invariant_from`, which the shim
            // applies in C (csrc/tsc.h) before this runtime runs; the runtime decides nothing
            // about the TSC, so it does not link the transport crate for it.
            clock: "CLOCK_MONOTONIC ns (TSC-calibrated where invariant)".to_string(),
            start_ns: monotonic_ns(),
            empty_wrappers: std::env::var_os("COMMPERF_PMPI_EMPTY").is_some(),
        };
        let mut out = format::MAGIC.to_vec();
        out.extend(format::frame(
            FrameKind::Header,
            serde_json::to_string(&header)
                .unwrap_or_default()
                .as_bytes(),
        ));
        if let Err(e) = file.write_all(&out) {
            eprintln!("commperf-pmpi: cannot write {}: {e}", path.display());
            return 1;
        }
        let rt = Runtime {
            rings: std::sync::Mutex::new(Vec::new()),
            writer: std::sync::Mutex::new(Writer {
                file,
                events: 0,
                drops_reported: 0,
            }),
            stop: AtomicBool::new(false),
            thread: std::sync::Mutex::new(None),
            requests: Requests::new(TABLE_CAP, SHARDS),
            ring_cap: env_u64("COMMPERF_PMPI_RING", 1 << 16).max(16) as usize,
            next_thread: std::sync::atomic::AtomicU32::new(0),
            finished: AtomicBool::new(false),
        };
        if RT.set(rt).is_err() {
            return 1; // initialized twice (MPI_Init after MPI_Finalize is erroneous anyway)
        }
        let every = Duration::from_millis(env_u64("COMMPERF_PMPI_FLUSH_MS", 50).max(1));
        let h = std::thread::Builder::new()
            .name("commperf-pmpi-writer".into())
            .spawn(move || {
                let Some(rt) = RT.get() else { return };
                step_aside();
                // A panicked entry point stops the runtime: the writer too (guard.rs).
                while !rt.stop.load(Ordering::Acquire) && !guard::broken() {
                    std::thread::park_timeout(every);
                    rt.flush();
                }
            });
        match h {
            Ok(h) => {
                let _ = WRITER.set(h.thread().clone());
                if let Some(rt) = RT.get() {
                    *rt.thread.lock().unwrap_or_else(|e| e.into_inner()) = Some(h);
                }
                0
            }
            Err(e) => {
                eprintln!("commperf-pmpi: cannot start the writer thread: {e}");
                1
            }
        }
    })
}

/// Moves the writer thread off the rank's core and below the application's priority.
///
/// Why: MPI launchers bind each rank to a core (Open MPI binds to cores by default for up to two
/// ranks), and a thread inherits its creator's binding, so the writer shared its rank's core and
/// every drain took time from the application even with another core idle (callcost's wall
/// time per iteration was its thread's CPU time plus the writer's). Unbound, it runs on any
/// online core the cgroup allows. Its priority stays the rank's unless
/// `COMMPERF_PMPI_WRITER_NICE` says otherwise: at nice 19 it yields to busy ranks, but on a
/// loaded machine it then fell so far behind that 93 % of callcost's events were dropped
/// (counted, the application never waits), against 7 % at nice 0 under the same load.
/// `COMMPERF_PMPI_WRITER_BIND=inherit` keeps the rank's binding.
fn step_aside() {
    if std::env::var("COMMPERF_PMPI_WRITER_BIND").as_deref() != Ok("inherit") {
        // SAFETY: sysconf takes no pointers; cpu_set_t is plain data that CPU_ZERO/CPU_SET fill
        // within its size; sched_setaffinity(0, …) reads it for the calling thread only.
        unsafe {
            let n = libc::sysconf(libc::_SC_NPROCESSORS_ONLN).clamp(1, 1024) as usize;
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_ZERO(&mut set);
            for cpu in 0..n.min(libc::CPU_SETSIZE as usize) {
                libc::CPU_SET(cpu, &mut set);
            }
            // Best effort: a cgroup that confines the process keeps it where it is.
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
        }
    }
    let Some(nice) = std::env::var("COMMPERF_PMPI_WRITER_NICE")
        .ok()
        .and_then(|v| v.parse::<i32>().ok())
    else {
        return;
    };
    let nice = nice.clamp(-20, 19);
    // SAFETY: gettid and setpriority take no pointers; on Linux PRIO_PROCESS with a thread id
    // sets that thread's nice value only.
    unsafe {
        let tid = libc::gettid();
        libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, nice);
    }
}

fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most buf.len() bytes into buf.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return String::new();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// One clock synchronization with rank 0 (phase 0 at MPI_Init, 1 at MPI_Finalize): rank 0's
/// time ≈ local + offset, within ±err (half the minimum round trip). `local_ns` is the shim's
/// own clock at the sync (the clock its events are stamped with, TSC-derived where it can), so
/// that the reader's interpolation between syncs runs on the events' time axis.
#[no_mangle]
pub extern "C" fn cpmpi_rt_clock(
    phase: c_int,
    offset_ns: i64,
    err_ns: i64,
    rtt_ns: i64,
    local_ns: u64,
) {
    guard::entry(Entry::Clock, (), || {
        let Some(rt) = RT.get() else { return };
        let c = format::ClockSync {
            phase: phase as u32,
            local_ns,
            offset_ns,
            err_ns,
            rtt_ns,
        };
        let mut w = rt.writer.lock().unwrap_or_else(|e| e.into_inner());
        let _ = w.file.write_all(&format::frame(
            FrameKind::Clock,
            serde_json::to_string(&c).unwrap_or_default().as_bytes(),
        ));
    })
}

/// A communicator's members (csrc/shim.c calls this the first time it translates one of its
/// ranks): `world` holds `n` world ranks in the communicator's rank order.
///
/// # Safety
/// `world` points to `n` readable ints (or `n` is 0).
#[no_mangle]
pub unsafe extern "C" fn cpmpi_rt_comm(id: u32, inter: c_int, n: c_int, world: *const c_int) {
    guard::entry(Entry::Comm, (), || {
        let Some(rt) = RT.get() else { return };
        let n = usize::try_from(n).unwrap_or(0);
        let members: Vec<u32> = if n == 0 || world.is_null() {
            Vec::new()
        } else {
            // SAFETY: the caller passes n readable ints.
            unsafe { std::slice::from_raw_parts(world, n) }
                .iter()
                .map(|&w| u32::try_from(w).unwrap_or(u32::MAX))
                .collect()
        };
        let c = format::CommDef {
            id,
            inter: inter != 0,
            world: members,
        };
        let mut w = rt.writer.lock().unwrap_or_else(|e| e.into_inner());
        let _ = w.file.write_all(&format::frame(
            FrameKind::Comm,
            serde_json::to_string(&c).unwrap_or_default().as_bytes(),
        ));
    })
}

/// `n` ints at `p` as world ranks, a negative one (MPI_PROC_NULL) as None.
///
/// # Safety
/// `p` points to `n` readable ints (or `n` is 0 or below).
unsafe fn neighbor_ranks(n: c_int, p: *const c_int) -> Vec<Option<u32>> {
    let n = usize::try_from(n).unwrap_or(0);
    if n == 0 || p.is_null() {
        return Vec::new();
    }
    // SAFETY: the caller passes n readable ints.
    unsafe { std::slice::from_raw_parts(p, n) }
        .iter()
        .map(|&w| u32::try_from(w).ok())
        .collect()
}

/// This rank's neighbours in a communicator's process topology (csrc/families.c calls this
/// the first time the communicator runs a neighbourhood collective): `index` is the number the
/// collectives' events carry in `tag`; `in_` and `out` hold `nin` and `nout` world ranks in the
/// standard's neighbour order, negative for MPI_PROC_NULL.
///
/// # Safety
/// `in_` points to `nin` readable ints and `out` to `nout` (or the count is 0).
#[no_mangle]
pub unsafe extern "C" fn cpmpi_rt_neighbors(
    id: u32,
    index: c_int,
    nin: c_int,
    in_: *const c_int,
    nout: c_int,
    out: *const c_int,
) {
    guard::entry(Entry::Neighbors, (), || {
        let Some(rt) = RT.get() else { return };
        let d = format::NeighborDef {
            id,
            index: u32::try_from(index).unwrap_or(u32::MAX),
            // SAFETY: the caller passes nin readable ints at in_ and nout at out.
            sources: unsafe { neighbor_ranks(nin, in_) },
            // SAFETY: as above.
            destinations: unsafe { neighbor_ranks(nout, out) },
        };
        let mut w = rt.writer.lock().unwrap_or_else(|e| e.into_inner());
        let _ = w.file.write_all(&format::frame(
            FrameKind::Neighbors,
            serde_json::to_string(&d).unwrap_or_default().as_bytes(),
        ));
    })
}

/// `n` u64s at `p`.
///
/// # Safety
/// `p` points to `n` readable u64s (or `n` is 0 or below).
unsafe fn sizes(n: c_int, p: *const u64) -> Vec<u64> {
    let n = usize::try_from(n).unwrap_or(0);
    if n == 0 || p.is_null() {
        return Vec::new();
    }
    // SAFETY: the caller passes n readable u64s.
    unsafe { std::slice::from_raw_parts(p, n) }.to_vec()
}

/// The bytes per neighbour of a v/w neighbourhood all-to-all (csrc/families.c calls this the
/// first time it sees a list of sizes): `index` is the number the calls' events carry in
/// `peer`; `sends` holds `nout` sizes (one per out-neighbour slot), `recvs` `nin`.
///
/// # Safety
/// `sends` points to `nout` readable u64s and `recvs` to `nin` (or the count is 0).
#[no_mangle]
pub unsafe extern "C" fn cpmpi_rt_neighbor_counts(
    index: c_int,
    nout: c_int,
    sends: *const u64,
    nin: c_int,
    recvs: *const u64,
) {
    guard::entry(Entry::NeighborCounts, (), || {
        let Some(rt) = RT.get() else { return };
        let d = format::NeighborCounts {
            index: u32::try_from(index).unwrap_or(u32::MAX),
            // SAFETY: the caller passes nout readable u64s at sends and nin at recvs.
            sends: unsafe { sizes(nout, sends) },
            // SAFETY: as above.
            recvs: unsafe { sizes(nin, recvs) },
        };
        let mut w = rt.writer.lock().unwrap_or_else(|e| e.into_inner());
        let _ = w.file.write_all(&format::frame(
            FrameKind::NeighborCounts,
            serde_json::to_string(&d).unwrap_or_default().as_bytes(),
        ));
    })
}

/// One wrapped function's statistics as the shim keeps them (csrc/stats.h `cpmpi_stat`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct CStat {
    pub count: u64,
    pub time_ns: u64,
    pub min_ns: u64,
    pub max_ns: u64,
    pub sent_bytes: u64,
    pub received_bytes: u64,
    /// How many of the calls were timed (polls are sampled: see csrc/shim.c `enter_poll`).
    pub timed: u64,
}

/// Every wrapped function's statistics, summed over the threads, written once at MPI_Finalize:
/// `names[i]` is function i's MPI name, `stats[i]` its figures; functions never called are left
/// out of the frame.
///
/// # Safety
/// `names` points to `n` NUL-terminated strings and `stats` to `n` readable `CStat`s.
#[no_mangle]
pub unsafe extern "C" fn cpmpi_rt_calls(
    n: c_int,
    names: *const *const c_char,
    stats: *const CStat,
) {
    guard::entry(Entry::Calls, (), || {
        let Some(rt) = RT.get() else { return };
        let n = usize::try_from(n).unwrap_or(0);
        if n == 0 || names.is_null() || stats.is_null() {
            return;
        }
        // SAFETY: the caller passes n names and n stats.
        let (names, stats) = unsafe {
            (
                std::slice::from_raw_parts(names, n),
                std::slice::from_raw_parts(stats, n),
            )
        };
        let rows: Vec<format::CallStat> = names
            .iter()
            .zip(stats)
            .filter(|(p, s)| s.count > 0 && !p.is_null())
            .map(|(&p, s)| format::CallStat {
                // SAFETY: a NUL-terminated name from the shim's static table.
                call: unsafe { std::ffi::CStr::from_ptr(p) }
                    .to_string_lossy()
                    .into_owned(),
                count: s.count,
                time_ns: s.time_ns,
                min_ns: s.min_ns,
                max_ns: s.max_ns,
                sent_bytes: s.sent_bytes,
                received_bytes: s.received_bytes,
                timed_count: s.timed,
            })
            .collect();
        let mut w = rt.writer.lock().unwrap_or_else(|e| e.into_inner());
        let _ = w.file.write_all(&format::frame(
            FrameKind::Calls,
            serde_json::to_string(&rows).unwrap_or_default().as_bytes(),
        ));
    })
}

/// One call site as the shim hands it over (csrc/shim.c `csite`).
#[repr(C)]
#[derive(Debug)]
pub struct CSite {
    pub call: *const c_char,
    pub module: *const c_char,
    pub symbol: *const c_char,
    pub addr: u64,
    pub base: u64,
    pub symaddr: u64,
    pub count: u64,
    pub time_ns: u64,
    pub sent: u64,
    pub received: u64,
    pub timed: u64,
}

fn opt_cstr(p: *const c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: a non-null pointer from the shim is a NUL-terminated string it keeps alive for
    // the call (dladdr's names live as long as their module; the call names are static).
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// Every call site of the run (merged over the threads), written once at MPI_Finalize.
///
/// # Safety
/// `sites` points to `n` readable `CSite`s (or `n` is 0).
#[no_mangle]
pub unsafe extern "C" fn cpmpi_rt_sites(n: c_int, sites: *const CSite, overflow: u64) {
    guard::entry(Entry::Sites, (), || {
        let Some(rt) = RT.get() else { return };
        let n = usize::try_from(n).unwrap_or(0);
        let v: &[CSite] = if n == 0 || sites.is_null() {
            &[]
        } else {
            // SAFETY: the caller passes n sites.
            unsafe { std::slice::from_raw_parts(sites, n) }
        };
        let s = format::Sites {
            sites: v
                .iter()
                .map(|c| format::Site {
                    call: opt_cstr(c.call),
                    addr: c.addr,
                    module: opt_cstr(c.module),
                    base: c.base,
                    symbol: opt_cstr(c.symbol),
                    symbol_addr: c.symaddr,
                    count: c.count,
                    time_ns: c.time_ns,
                    sent_bytes: c.sent,
                    received_bytes: c.received,
                    timed_count: c.timed,
                })
                .collect(),
            overflow_calls: overflow,
        };
        let mut w = rt.writer.lock().unwrap_or_else(|e| e.into_inner());
        let _ = w.file.write_all(&format::frame(
            FrameKind::Sites,
            serde_json::to_string(&s).unwrap_or_default().as_bytes(),
        ));
    })
}

/// This thread's ring, created on its first recorded event; the shim caches the pointer in a
/// thread-local and pushes into it itself (`record` in csrc/shim.c). Null before MPI_Init.
/// The ring lives as long as the process (the runtime keeps every ring), so the pointer never
/// dangles, also in a thread that is exiting.
#[no_mangle]
pub extern "C" fn cpmpi_rt_ring() -> *const Ring {
    guard::entry(Entry::Ring, std::ptr::null(), || match RT.get() {
        Some(rt) => std::sync::Arc::as_ptr(&rt.ring()),
        None => std::ptr::null(),
    })
}

/// Wakes the writer early: a producer's ring is half full.
#[no_mangle]
pub extern "C" fn cpmpi_rt_wake() {
    guard::entry(Entry::Wake, (), || {
        if let Some(w) = WRITER.get() {
            w.unpark();
        }
    })
}

/// Whether the program runs under MPI_THREAD_MULTIPLE: only then can another thread claim an
/// entry of this thread's request table while it takes one, and only then does a take pay for
/// an atomic compare-and-swap.
#[no_mangle]
pub extern "C" fn cpmpi_rt_thread_multiple(multiple: c_int) {
    guard::entry(Entry::ThreadMultiple, (), || {
        THREAD_MULTIPLE.store(multiple != 0, Ordering::Relaxed);
    })
}

/// This thread's request table, created on its first post (the shim caches the pointer like the
/// ring's; the runtime keeps every table, so it never dangles). Null before MPI_Init.
#[no_mangle]
pub extern "C" fn cpmpi_rt_table() -> *const ReqTable {
    guard::entry(Entry::Table, std::ptr::null(), || match RT.get() {
        Some(rt) => Arc::as_ptr(&rt.requests.table()),
        None => std::ptr::null(),
    })
}

/// Remembers a posted nonblocking operation until its request completes.
///
/// # Safety
/// `table` is null or this thread's table from [`cpmpi_rt_table`]; `e` points to a valid event.
#[no_mangle]
pub unsafe extern "C" fn cpmpi_rt_post(table: *const ReqTable, key: u64, e: *const CEvent) {
    guard::entry(Entry::Post, (), || {
        let Some(rt) = RT.get() else { return };
        // SAFETY: the caller passes a valid event, and null or a table the runtime keeps alive.
        let (e, table) = unsafe { (&*e, table.as_ref()) };
        rt.requests.post(table, key, e);
    })
}

/// Takes the posted operation of a completed request; 0 when it was not tracked.
///
/// # Safety
/// `table` is null or this thread's table from [`cpmpi_rt_table`]; `out` points to writable
/// memory for one event.
#[no_mangle]
pub unsafe extern "C" fn cpmpi_rt_take(
    table: *const ReqTable,
    key: u64,
    out: *mut CEvent,
) -> c_int {
    guard::entry(Entry::Take, 0, || {
        let Some(rt) = RT.get() else { return 0 };
        // SAFETY: null or a table the runtime keeps alive (the caller's own).
        let mine = unsafe { table.as_ref() };
        let multiple = THREAD_MULTIPLE.load(Ordering::Relaxed);
        match rt.requests.take(mine, key, multiple) {
            Some(e) => {
                // SAFETY: the caller passes a writable event.
                unsafe { *out = e };
                1
            }
            None => 0,
        }
    })
}

/// Writes everything recorded so far (MPI_Abort calls this before the job is torn down).
#[no_mangle]
pub extern "C" fn cpmpi_rt_flush() {
    guard::entry(Entry::Flush, (), || {
        if let Some(rt) = RT.get() {
            rt.flush();
        }
    })
}

/// Whether the wrappers should only pass calls through (the cost benchmark's baseline).
#[no_mangle]
pub extern "C" fn cpmpi_rt_empty_wrappers() -> c_int {
    guard::entry(Entry::EmptyWrappers, 0, || {
        c_int::from(std::env::var_os("COMMPERF_PMPI_EMPTY").is_some())
    })
}

/// Stops the writer, drains, and writes the footer that marks the run complete.
#[no_mangle]
pub extern "C" fn cpmpi_rt_finalize() {
    guard::entry(Entry::Finalize, (), || {
        let Some(rt) = RT.get() else { return };
        if rt.finished.swap(true, Ordering::AcqRel) {
            return;
        }
        rt.stop.store(true, Ordering::Release);
        if let Some(h) = rt.thread.lock().unwrap_or_else(|e| e.into_inner()).take() {
            h.thread().unpark();
            let _ = h.join();
        }
        rt.flush();
        let pending = rt.requests.pending();
        let mut w = rt.writer.lock().unwrap_or_else(|e| e.into_inner());
        let f = format::Footer {
            events: w.events,
            drops: w.drops_reported,
            pending_requests: pending as u64,
            end_ns: monotonic_ns(),
        };
        let _ = w.file.write_all(&format::frame(
            FrameKind::Footer,
            serde_json::to_string(&f).unwrap_or_default().as_bytes(),
        ));
        let _ = w.file.sync_data();
    })
}

// The ring's and the request tables' tests: model-checked under `--cfg loom` (scripts/loom.sh),
// stress tests with std threads otherwise.
#[cfg(test)]
mod tests;
