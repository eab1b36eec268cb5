//! The recording runtime preloaded into every MPI rank (the cdylib's exported `cpmpi_rt_*`
//! functions, called by the C shim). Why this shape: the application must never wait for the
//! monitor. Each thread writes fixed-size events into its own bounded single-producer ring (no
//! lock, no allocation on the hot path); one writer thread drains all rings every few
//! milliseconds into the rank file, so a crash loses at most that interval; a full ring drops the
//! event and counts the drop instead of blocking. Nonblocking operations wait in a sharded table
//! keyed by request handle until a Wait/Test completes them (one uncontended lock per post and per
//! completion).

use crate::format::{self, FrameKind, EVENT_BYTES};
use std::cell::{OnceCell, UnsafeCell};
use std::ffi::{c_char, c_int, CStr};
use std::fs::File;
use std::io::Write;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
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
/// lock) ring of events.
struct Ring {
    slots: Box<[UnsafeCell<MaybeUninit<CEvent>>]>,
    head: AtomicUsize,
    tail: AtomicUsize,
    drops: AtomicU64,
    thread: u32,
}

// SAFETY: a slot is written only by the producer while it is outside [tail, head) and read only
// by the consumer while inside it; head/tail hand slots over with release/acquire ordering.
unsafe impl Sync for Ring {}
// SAFETY: as above; the ring owns plain data.
unsafe impl Send for Ring {}

impl Ring {
    fn new(cap: usize, thread: u32) -> Ring {
        Ring {
            slots: (0..cap)
                .map(|_| UnsafeCell::new(MaybeUninit::uninit()))
                .collect(),
            head: AtomicUsize::new(0),
            tail: AtomicUsize::new(0),
            drops: AtomicU64::new(0),
            thread,
        }
    }

    /// Producer side: never blocks; a full ring counts a drop.
    fn push(&self, mut e: CEvent) {
        let h = self.head.load(Ordering::Relaxed);
        let t = self.tail.load(Ordering::Acquire);
        if h - t >= self.slots.len() {
            self.drops.fetch_add(1, Ordering::Relaxed);
            return;
        }
        e.aux = u64::from(self.thread);
        // SAFETY: slot h is outside [tail, head), so the consumer does not read it; only this
        // thread (the ring's single producer) writes slots.
        unsafe { (*self.slots[h % self.slots.len()].get()).write(e) };
        self.head.store(h + 1, Ordering::Release);
    }

    /// Consumer side: appends every published event to `out`.
    fn drain(&self, out: &mut Vec<u8>) -> usize {
        let h = self.head.load(Ordering::Acquire);
        let t = self.tail.load(Ordering::Relaxed);
        for i in t..h {
            // SAFETY: slots in [tail, head) were fully written before head was released, and the
            // producer does not touch them until tail moves past them.
            let e = unsafe { (*self.slots[i % self.slots.len()].get()).assume_init() };
            e.to_bytes(out);
        }
        self.tail.store(h, Ordering::Release);
        h - t
    }
}

struct Writer {
    file: File,
    events: u64,
    drops_reported: u64,
}

struct Runtime {
    rings: Mutex<Vec<Arc<Ring>>>,
    writer: Mutex<Writer>,
    stop: AtomicBool,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// Posted operations by request handle. A handle can be live more than once: Open MPI answers
    /// every send it completes inline with the same `ompi_request_empty_send`, MPICH its
    /// lightweight sends with one builtin request; so a shard is a list scanned from its oldest
    /// entry (few operations are pending at once; no hashing, no allocation once warm).
    pending: Vec<Mutex<Vec<(u64, CEvent)>>>,
    ring_cap: usize,
    next_thread: AtomicU32,
    finished: AtomicBool,
}

static RT: OnceLock<Runtime> = OnceLock::new();

thread_local! {
    static RING: OnceCell<Arc<Ring>> = const { OnceCell::new() };
}

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

impl Runtime {
    fn ring(&self) -> Arc<Ring> {
        let id = self.next_thread.fetch_add(1, Ordering::Relaxed);
        let r = Arc::new(Ring::new(self.ring_cap, id));
        self.rings
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(r.clone());
        r
    }

    /// Drains every ring into one frame. Holds the writer lock: the only consumer at a time.
    fn flush(&self) {
        let mut w = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        let rings: Vec<Arc<Ring>> = self.rings.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let mut buf = Vec::new();
        let mut n = 0;
        let mut drops = 0;
        for r in &rings {
            n += r.drain(&mut buf);
            drops += r.drops.load(Ordering::Relaxed);
        }
        if n > 0 {
            w.events += n as u64;
            let _ = w.file.write_all(&format::frame(FrameKind::Events, &buf));
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

fn shard(key: u64) -> usize {
    ((key >> 4) ^ (key >> 12) ^ key) as usize % SHARDS
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
        // than clock_gettime per call), else from clock_gettime itself.
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
        rings: Mutex::new(Vec::new()),
        writer: Mutex::new(Writer {
            file,
            events: 0,
            drops_reported: 0,
        }),
        stop: AtomicBool::new(false),
        thread: Mutex::new(None),
        pending: (0..SHARDS)
            .map(|_| Mutex::new(Vec::with_capacity(64)))
            .collect(),
        ring_cap: env_u64("COMMPERF_PMPI_RING", 1 << 16).max(16) as usize,
        next_thread: AtomicU32::new(0),
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
            while !rt.stop.load(Ordering::Acquire) {
                std::thread::park_timeout(every);
                rt.flush();
            }
        });
    match h {
        Ok(h) => {
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
}

/// Records one finished event into this thread's ring.
///
/// # Safety
/// `e` points to a valid event.
#[no_mangle]
pub unsafe extern "C" fn cpmpi_rt_record(e: *const CEvent) {
    let Some(rt) = RT.get() else { return };
    // SAFETY: the caller passes a valid event.
    let e = unsafe { *e };
    // try_with: a thread being torn down has no ring any more; its event is lost, not a crash.
    let _ = RING.try_with(|r| r.get_or_init(|| rt.ring()).push(e));
}

/// Remembers a posted nonblocking operation until its request completes.
///
/// # Safety
/// `e` points to a valid event.
#[no_mangle]
pub unsafe extern "C" fn cpmpi_rt_post(key: u64, e: *const CEvent) {
    let Some(rt) = RT.get() else { return };
    // SAFETY: the caller passes a valid event.
    let e = unsafe { *e };
    rt.pending[shard(key)]
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push((key, e));
}

/// Takes the posted operation of a completed request; 0 when it was not tracked.
///
/// # Safety
/// `out` points to writable memory for one event.
#[no_mangle]
pub unsafe extern "C" fn cpmpi_rt_take(key: u64, out: *mut CEvent) -> c_int {
    let Some(rt) = RT.get() else { return 0 };
    let e = {
        let mut m = rt.pending[shard(key)]
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        m.iter().position(|(k, _)| *k == key).map(|i| m.remove(i).1)
    };
    match e {
        Some(e) => {
            // SAFETY: the caller passes a writable event.
            unsafe { *out = e };
            1
        }
        None => 0,
    }
}

/// Writes everything recorded so far (MPI_Abort calls this before the job is torn down).
#[no_mangle]
pub extern "C" fn cpmpi_rt_flush() {
    if let Some(rt) = RT.get() {
        rt.flush();
    }
}

/// Whether the wrappers should only pass calls through (the cost benchmark's baseline).
#[no_mangle]
pub extern "C" fn cpmpi_rt_empty_wrappers() -> c_int {
    c_int::from(std::env::var_os("COMMPERF_PMPI_EMPTY").is_some())
}

/// Stops the writer, drains, and writes the footer that marks the run complete.
#[no_mangle]
pub extern "C" fn cpmpi_rt_finalize() {
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
    let pending: usize = rt
        .pending
        .iter()
        .map(|m| m.lock().unwrap_or_else(|e| e.into_inner()).len())
        .sum();
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
}
