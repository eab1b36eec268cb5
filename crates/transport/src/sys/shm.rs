//! Shared-memory realization: two single-producer/single-consumer rings in one POSIX segment.
//!
//! Why it looks like this:
//! - **Records carry their own readiness stamp.** A record's first word is `(position + 1) ^ key`,
//!   written last with release ordering. The consumer polls that word at its own read position,
//!   so a small message costs one cache-line transfer (header and payload share the line), not
//!   two (data, then a separate tail index). The random per-segment `key` makes stale bytes from
//!   an earlier lap practically impossible to mistake for a fresh stamp.
//! - **Indices on their own cache lines** (128 B apart, so the adjacent-line prefetcher does not
//!   pair them). The consumer publishes its head after every record; the producer reads it only
//!   when its cached copy says the ring is full.
//! - **Large messages** either pipeline through the ring in fragments (two copies, overlapped on
//!   two cores) or go single-copy: the sender posts a rendezvous record with its buffer address
//!   and the receiver pulls the bytes with `process_vm_readv` (Linux CMA), then bumps a
//!   completion counter the sender waits on.
//! - **Blocking mode** sleeps on a per-side futex "bell". Whoever changes state the other side
//!   may wait for (data published, space freed, rendezvous completed) rings the peer's bell when
//!   the peer says it is asleep; Dekker-style SeqCst fences close the lost-wakeup race.
//! - **Cleanup**: the segment is created without a name (`O_TMPFILE` in `/dev/shm`), sized,
//!   mapped, pre-faulted and initialized, and only then linked under its name, so a creator
//!   killed while doing any of that leaves nothing behind (the unnamed file dies with it). The
//!   creator unlinks the name as soon as the peer has mapped the segment, so even two SIGKILLs
//!   after that leave nothing in `/dev/shm`. Names embed the creator's pid, so that what a
//!   creator killed between linking and the peer's attach leaves behind is removed by the next
//!   run ([`remove_stale_segments`]).
//! - **Peer death** is seen through a pidfd (readable once the process exits) and a `closed`
//!   flag set on drop; both are checked only on the slow path of a wait.

use crate::backoff::{Backoff, Stopped, WaitStop};
use crate::endpoint::copy_into;
use crate::{
    Endpoint, EndpointConfig, EndpointInfo, Fragment, RecvInfo, Side, Tag, TransportError,
    SIDE_WORDS,
};
use commperf_core::{Mode, TransportKind};
use std::ffi::CString;
use std::fmt;
use std::io;
use std::ptr::NonNull;
use std::sync::atomic::{fence, AtomicI32, AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

const MAGIC: u64 = u64::from_le_bytes(*b"CPSHM001");
const LAYOUT_VERSION: u32 = 1;
const LINE: usize = 64;
const HDR: usize = 32;
const PAGE: usize = 4096;
/// Prefix of every segment name, followed by `<creator pid>-<random>`.
pub const NAME_PREFIX: &str = "commperf-";

/// Payloads up to this size share the stamp's cache line (one line per small message).
const INLINE_MAX: usize = LINE - HDR;

/// Offset of a `len`-byte payload within its record: right after the 32-byte header for small
/// payloads, a full cache line in for larger ones. Copies into and out of the ring then start
/// 64-byte aligned, which matters a great deal: on AMD Zen, `rep movsb` (what memcpy uses for
/// kilobyte sizes) runs an order of magnitude slower when the destination is misaligned
/// relative to the source (measured here: 3 GB/s against 50–80 GB/s).
#[inline]
fn payload_offset(len: usize) -> usize {
    if len <= INLINE_MAX {
        HDR
    } else {
        LINE
    }
}

/// Offset of the payload of a record that carries a side value ([`crate::SideBand`]): the side
/// value sits in the header's spare half line (bytes 32..56), so the payload starts a full line
/// in whatever its size. A record of more than 32 payload bytes has that half line unused
/// anyway: the side value costs it no extra cache line.
#[inline]
fn payload_offset_for(len: usize, side: bool) -> usize {
    if side {
        LINE
    } else {
        payload_offset(len)
    }
}

/// Where a record's side value starts: right after the 32-byte header.
const SIDE_AT: usize = HDR;
const _: () = assert!(SIDE_AT + SIDE_WORDS * 8 <= LINE);

/// Bit of a record's kind word saying that the record carries a side value. Only the last
/// record of a message carries one (where a trailer would be: stamped just before the last
/// piece is published).
const SIDE_FLAG: u32 = 1 << 8;

const KIND_WHOLE: u32 = 1;
const KIND_FRAG: u32 = 2;
const KIND_SKIP: u32 = 3;
const KIND_RNDV: u32 = 4;

/// How large messages travel and how big the rings are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShmOptions {
    /// Bytes of each ring's data area (power of two, at least 64 KiB).
    pub ring_bytes: usize,
    /// Largest payload of one ring record; larger messages are fragmented.
    pub frag_bytes: usize,
    /// Messages of at least this many bytes sent with `send` go single-copy
    /// (`process_vm_readv`); `None` pipelines everything through the ring.
    pub single_copy_from: Option<usize>,
}

impl Default for ShmOptions {
    fn default() -> Self {
        // Pipelining through the ring measured 2–3× faster than single-copy here (28 GB/s
        // against 10 GB/s at 1 MiB, BENCHMARKS.md), so single-copy is opt-in.
        ShmOptions {
            ring_bytes: 1 << 20,
            frag_bytes: 64 << 10,
            single_copy_from: None,
        }
    }
}

impl ShmOptions {
    fn validate(&self) -> Result<(), TransportError> {
        use crate::bounds::{MAX_SHM_RING_BYTES, MIN_SHM_RING_BYTES};
        let bad = |what: String| Err(TransportError::io("shm options", io::Error::other(what)));
        if !self.ring_bytes.is_power_of_two()
            || !(MIN_SHM_RING_BYTES..=MAX_SHM_RING_BYTES).contains(&self.ring_bytes)
        {
            return bad(format!(
                "ring size {} is not a power of two between {MIN_SHM_RING_BYTES} and \
                 {MAX_SHM_RING_BYTES}",
                self.ring_bytes
            ));
        }
        if self.frag_bytes < LINE || LINE + self.frag_bytes > self.ring_bytes / 4 {
            return bad(format!(
                "fragment size {} must be between 64 B and a quarter of the ring ({} B) minus 64",
                self.frag_bytes, self.ring_bytes
            ));
        }
        Ok(())
    }
}

#[repr(C, align(128))]
struct Line<T>(T);

#[repr(C)]
struct SegHeader {
    magic: u64,
    version: u32,
    _pad: u32,
    ring_bytes: u64,
    max_message: u64,
    frag_bytes: u64,
    key: u64,
    pid: [AtomicI32; 2],
    closed: [AtomicU32; 2],
}

/// Control words of one side, as consumer of its incoming ring and as sleeper.
#[repr(C)]
struct SideCtrl {
    /// Read position in the ring this side consumes (written by this side).
    head: Line<AtomicU64>,
    /// Rendezvous transfers this side has completed (written by this side).
    rndv_done: Line<AtomicU64>,
    /// Futex word rung by the peer, and whether this side sleeps on it.
    bell: Line<(AtomicU32, AtomicU32)>,
}

#[repr(C)]
struct Control {
    hdr: Line<SegHeader>,
    side: [SideCtrl; 2],
}

fn header_bytes() -> usize {
    std::mem::size_of::<Control>().div_ceil(PAGE) * PAGE
}

/// Size of the segment of two rings of `ring_bytes` each.
pub fn segment_bytes(ring_bytes: usize) -> usize {
    header_bytes().saturating_add(ring_bytes.saturating_mul(2))
}

/// Where POSIX shared memory lives (glibc's `shm_open` names files here).
const SHM_DIR: &str = "/dev/shm";

/// A file for a segment that has no name yet: `O_TMPFILE` in [`SHM_DIR`], linked under its
/// name by [`link_segment`] once it is filled. `None` where the file system cannot make unnamed
/// files (the caller then falls back to `shm_open`, named from the start).
fn unnamed_segment() -> Option<io::Result<i32>> {
    let dir = CString::new(SHM_DIR).expect("no NUL");
    // SAFETY: valid C string; O_TMPFILE makes an unnamed regular file in the directory.
    let fd = unsafe {
        libc::open(
            dir.as_ptr(),
            libc::O_TMPFILE | libc::O_RDWR | libc::O_CLOEXEC,
            0o600,
        )
    };
    if fd >= 0 {
        return Some(Ok(fd));
    }
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        // No O_TMPFILE on this file system or kernel (EISDIR: a kernel that ignores the flag),
        // or no /dev/shm directory at all: shm_open may still work.
        Some(libc::EOPNOTSUPP | libc::EISDIR | libc::EINVAL | libc::ENOENT) => None,
        _ => Some(Err(e)),
    }
}

/// Gives the unnamed file `fd` the shared-memory name `name` ("/commperf-…").
fn link_segment(fd: i32, name: &str) -> io::Result<()> {
    let from = CString::new(format!("/proc/self/fd/{fd}")).expect("no NUL");
    let to = CString::new(format!("{SHM_DIR}{name}")).expect("no NUL in generated name");
    // SAFETY: valid C strings; AT_SYMLINK_FOLLOW links the file the /proc entry points to.
    let r = unsafe {
        libc::linkat(
            libc::AT_FDCWD,
            from.as_ptr(),
            libc::AT_FDCWD,
            to.as_ptr(),
            libc::AT_SYMLINK_FOLLOW,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Test hook: with `COMMPERF_TEST_PAUSE_SHM_CREATE` set, creation stops at `point` ("filled":
/// sized, mapped, pre-faulted and initialized, not yet named; "named": linked, before the peer
/// attaches), says so on stderr with the segment's size, and waits to be killed, so a test can
/// kill the creator exactly there.
fn pause_for_test(point: &str, len: usize) {
    if std::env::var("COMMPERF_TEST_PAUSE_SHM_CREATE").as_deref() != Ok(point) {
        return;
    }
    eprintln!(
        "commperf: test hook: shm segment of {len} bytes {point} in process {}, pausing",
        std::process::id()
    );
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

/// A mapped segment (a connection's or a completion queue's). Unmapped on drop; unlinked on
/// drop by the creator if still linked.
#[derive(Debug)]
struct Mapping {
    base: NonNull<u8>,
    len: usize,
    name: String,
    linked: bool,
}

// SAFETY: the mapping is plain shared memory; all cross-thread access goes through atomics or
// through ring regions whose ownership the ring protocol hands over with acquire/release.
unsafe impl Send for Mapping {}

impl Mapping {
    fn ctrl(&self) -> &Control {
        // SAFETY: the segment is at least header_bytes() long, page aligned, and Control has only
        // atomics and plain integers written once before the peer attaches.
        unsafe { &*(self.base.as_ptr() as *const Control) }
    }

    fn ring(&self, idx: usize, ring_bytes: usize) -> *mut u8 {
        // SAFETY: offsets stay within the mapping laid out by `create`.
        unsafe { self.base.as_ptr().add(header_bytes() + idx * ring_bytes) }
    }

    fn unlink(&mut self) {
        if self.linked {
            if let Ok(c) = CString::new(self.name.clone()) {
                // SAFETY: c is a valid NUL-terminated string.
                unsafe { libc::shm_unlink(c.as_ptr()) };
            }
            self.linked = false;
        }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        self.unlink();
        // SAFETY: base/len come from a successful mmap and are unmapped once.
        unsafe { libc::munmap(self.base.as_ptr().cast(), self.len) };
    }
}

/// A fresh segment name, `/commperf-<pid>-<random>`, with its C string.
fn fresh_name() -> (String, CString) {
    let name = format!("/{NAME_PREFIX}{}-{:016x}", std::process::id(), random_u64());
    let cname = CString::new(name.clone()).expect("no NUL in generated name");
    (name, cname)
}

/// Creates the named segment `cname`, read-write for this user; `O_EXCL` so that we never adopt
/// someone else's segment.
fn shm_create(cname: &CString) -> io::Result<i32> {
    // SAFETY: valid C string.
    let fd = unsafe {
        libc::shm_open(
            cname.as_ptr(),
            libc::O_CREAT | libc::O_EXCL | libc::O_RDWR,
            0o600,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(fd)
}

fn random_u64() -> u64 {
    let mut b = [0u8; 8];
    if std::fs::File::open("/dev/urandom")
        .and_then(|mut f| io::Read::read_exact(&mut f, &mut b))
        .is_err()
    {
        let t = Instant::now().elapsed().as_nanos() as u64;
        return t ^ (std::process::id() as u64).rotate_left(32) ^ 0x9e37_79b9_7f4a_7c15;
    }
    u64::from_le_bytes(b)
}

fn map_fd(fd: i32, len: usize) -> io::Result<NonNull<u8>> {
    // SAFETY: mapping a shared-memory fd we own, with a length it has been sized to.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_POPULATE,
            fd,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    NonNull::new(p.cast()).ok_or_else(|| io::Error::other("mmap returned null"))
}

/// A freshly created segment waiting for its peer to attach.
#[derive(Debug)]
pub struct ShmSegment {
    map: Mapping,
    opts: ShmOptions,
}

impl ShmSegment {
    /// Creates and initializes a segment named `/commperf-<pid>-<random>`. The name appears
    /// only once the segment is complete (see the module notes on cleanup).
    pub fn create(opts: ShmOptions, max_message: usize) -> Result<Self, TransportError> {
        opts.validate()?;
        let (name, cname) = fresh_name();
        let len = segment_bytes(opts.ring_bytes);
        let failed = |what: &str, e: io::Error| {
            TransportError::io(
                format!("{what} shared-memory segment {name} ({len} bytes)"),
                e,
            )
        };
        let (fd, named) = match unnamed_segment() {
            Some(Ok(fd)) => (fd, false),
            Some(Err(e)) => return Err(failed("creating", e)),
            None => match shm_create(&cname) {
                Ok(fd) => (fd, true),
                Err(e) => return Err(failed("creating", e)),
            },
        };
        let cleanup = |e: io::Error, what: &str| {
            // SAFETY: fd is open; the name (if any) was created by us.
            unsafe {
                libc::close(fd);
                if named {
                    libc::shm_unlink(cname.as_ptr());
                }
            }
            failed(what, e)
        };
        // SAFETY: fd is a valid shm fd.
        if unsafe { libc::ftruncate(fd, len as libc::off_t) } != 0 {
            return Err(cleanup(io::Error::last_os_error(), "sizing"));
        }
        let base = match map_fd(fd, len) {
            Ok(b) => b,
            Err(e) => return Err(cleanup(e, "mapping")),
        };
        let map = Mapping {
            base,
            len,
            name: name.clone(),
            linked: named,
        };
        // SAFETY: nobody else has mapped the segment yet, so plain writes are exclusive.
        unsafe {
            let h = base.as_ptr() as *mut SegHeader;
            (*h).magic = MAGIC;
            (*h).version = LAYOUT_VERSION;
            (*h).ring_bytes = opts.ring_bytes as u64;
            (*h).max_message = max_message as u64;
            (*h).frag_bytes = opts.frag_bytes as u64;
            (*h).key = random_u64() | 1;
        }
        map.ctrl().hdr.0.pid[0].store(std::process::id() as i32, Ordering::Release);
        pause_for_test("filled", len);
        let mut map = map;
        if !named {
            let linked = link_segment(fd, &map.name);
            // SAFETY: fd is open; the mapping keeps the memory from here on.
            unsafe { libc::close(fd) };
            // Dropping the unnamed mapping frees everything on failure.
            linked.map_err(|e| failed("naming", e))?;
            map.linked = true;
        } else {
            // SAFETY: fd no longer needed once mapped.
            unsafe { libc::close(fd) };
        }
        pause_for_test("named", len);
        Ok(ShmSegment { map, opts })
    }

    /// The name a peer passes to [`attach`].
    pub fn name(&self) -> &str {
        &self.map.name
    }

    /// Waits until the peer has attached, unlinks the name (nothing is left behind from here on,
    /// whatever happens), and returns the creator's endpoint.
    pub fn accept(
        mut self,
        cfg: EndpointConfig,
        timeout: Duration,
    ) -> Result<ShmEndpoint, TransportError> {
        let start = Instant::now();
        let peer_pid = loop {
            let p = self.map.ctrl().hdr.0.pid[1].load(Ordering::Acquire);
            if p != 0 {
                break p;
            }
            if start.elapsed() > timeout {
                return Err(TransportError::Timeout {
                    peer: "shm peer (never attached)".into(),
                    secs: timeout.as_secs(),
                });
            }
            std::thread::sleep(Duration::from_micros(200));
        };
        self.map.unlink();
        ShmEndpoint::new(self.map, 0, peer_pid, cfg, self.opts)
    }
}

/// Opens the existing segment `name` read-write, after checking that it names a commperf
/// segment.
fn open_segment(name: &str) -> io::Result<i32> {
    if !name.starts_with('/') || name[1..].contains('/') || !name[1..].starts_with(NAME_PREFIX) {
        return Err(io::Error::other("not a commperf segment name"));
    }
    let cname = CString::new(name).map_err(|_| io::Error::other("NUL in name"))?;
    // SAFETY: valid C string.
    let fd = unsafe { libc::shm_open(cname.as_ptr(), libc::O_RDWR, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(fd)
}

/// Attaches to a segment created by the peer.
pub fn attach(name: &str, cfg: EndpointConfig) -> Result<ShmEndpoint, TransportError> {
    let err =
        |e: io::Error| TransportError::io(format!("attaching shared-memory segment {name}"), e);
    let fd = open_segment(name).map_err(err)?;
    // SAFETY: fstat on an fd we own into a zeroed struct.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        let e = io::Error::last_os_error();
        // SAFETY: fd is open.
        unsafe { libc::close(fd) };
        return Err(err(e));
    }
    let len = st.st_size as usize;
    // Checked before mapping (and pre-faulting) anything: the creator may be a stranger.
    let (min, max) = (
        segment_bytes(crate::bounds::MIN_SHM_RING_BYTES),
        segment_bytes(crate::bounds::MAX_SHM_RING_BYTES),
    );
    if !(min..=max).contains(&len) {
        // SAFETY: fd is open.
        unsafe { libc::close(fd) };
        return Err(err(io::Error::other(format!(
            "segment of {len} bytes is outside {min}..={max}"
        ))));
    }
    let base = map_fd(fd, len);
    // SAFETY: fd is open; the mapping (if any) keeps the memory.
    unsafe { libc::close(fd) };
    let map = Mapping {
        base: base.map_err(err)?,
        len,
        name: name.to_string(),
        linked: false,
    };
    let h = &map.ctrl().hdr.0;
    let ring = h.ring_bytes as usize;
    if h.magic != MAGIC
        || h.version != LAYOUT_VERSION
        || !ring.is_power_of_two()
        || header_bytes() + 2 * ring != len
    {
        return Err(err(io::Error::other(format!(
            "segment layout mismatch (magic {:#x}, version {}, ring {} B, size {} B)",
            h.magic, h.version, ring, len
        ))));
    }
    let opts = ShmOptions {
        ring_bytes: ring,
        frag_bytes: h.frag_bytes as usize,
        single_copy_from: None,
    };
    opts.validate()?;
    if h.max_message as usize != cfg.max_message {
        return Err(err(io::Error::other(format!(
            "maximum message size differs: segment {} B, ours {} B",
            h.max_message, cfg.max_message
        ))));
    }
    let peer_pid = h.pid[0].load(Ordering::Acquire);
    h.pid[1].store(std::process::id() as i32, Ordering::Release);
    ShmEndpoint::new(map, 1, peer_pid, cfg, opts)
}

/// Removes segments whose creator process no longer exists (left by a crashed run before its
/// peer attached). Returns the names removed.
pub fn remove_stale_segments() -> Vec<String> {
    let mut removed = Vec::new();
    let Ok(dir) = std::fs::read_dir("/dev/shm") else {
        return removed;
    };
    for ent in dir.flatten() {
        let fname = ent.file_name().to_string_lossy().into_owned();
        let Some(rest) = fname.strip_prefix(NAME_PREFIX) else {
            continue;
        };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<i32>().ok()) else {
            continue;
        };
        if pid <= 0 || process_alive(pid) {
            continue;
        }
        let cname = CString::new(format!("/{fname}")).expect("no NUL in dir entry");
        // SAFETY: valid C string.
        if unsafe { libc::shm_unlink(cname.as_ptr()) } == 0 {
            removed.push(fname);
        }
    }
    removed
}

fn process_alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks existence and permission.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

fn pidfd_open(pid: i32) -> Option<i32> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new fd or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    (fd >= 0).then_some(fd as i32)
}

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

/// A slice of a ring record, as raw pointers (the ring is shared with another process).
#[derive(Clone, Copy)]
struct Rec {
    ptr: *mut u8,
}

impl Rec {
    fn stamp(&self) -> &AtomicU64 {
        // SAFETY: records are 64-byte aligned inside the mapping.
        unsafe { &*(self.ptr as *const AtomicU64) }
    }
    fn word(&self, i: usize) -> u64 {
        // SAFETY: the header is 32 bytes inside the ring; read after an acquire on the stamp.
        unsafe { std::ptr::read_volatile((self.ptr as *const u64).add(i)) }
    }
    fn set_word(&self, i: usize, v: u64) {
        // SAFETY: the producer owns this record until it publishes the stamp.
        unsafe { std::ptr::write((self.ptr as *mut u64).add(i), v) }
    }
    /// Where a payload of `len` bytes starts (see [`payload_offset`]).
    fn payload(&self, len: usize) -> *mut u8 {
        self.payload_for(len, false)
    }
    /// Where a payload of `len` bytes starts in a record with or without a side value.
    fn payload_for(&self, len: usize, side: bool) -> *mut u8 {
        // SAFETY: the payload lies within the reserved record, whose size counts this offset.
        unsafe { self.ptr.add(payload_offset_for(len, side)) }
    }
    /// Reads the side value of a published record whose kind carries [`SIDE_FLAG`].
    fn side(&self) -> Side {
        std::array::from_fn(|i| self.word(SIDE_AT / 8 + i))
    }
    /// Writes the side value of a record the producer still owns.
    fn set_side(&self, v: Side) {
        for (i, w) in v.into_iter().enumerate() {
            self.set_word(SIDE_AT / 8 + i, w);
        }
    }
}

/// Where an incoming message comes from, for the receive paths.
enum Incoming {
    Ring(Piece),
    Rndv {
        total: usize,
        tag: Tag,
        addr: u64,
        rec_bytes: u64,
        side: Option<Side>,
    },
}

/// One published ring record of an incoming message.
#[derive(Clone, Copy)]
struct Piece {
    total: usize,
    tag: Tag,
    len: usize,
    rec: Rec,
    rec_bytes: u64,
    kind: u32,
    /// The record's side value, if it carries one (its payload then starts a line in).
    side: Option<Side>,
}

/// One end of a shared-memory connection.
#[derive(Debug)]
pub struct ShmEndpoint {
    map: Mapping,
    side: usize,
    key: u64,
    cap: u64,
    frag: usize,
    tx: *mut u8,
    rx: *mut u8,
    tail: u64,
    peer_head_cache: u64,
    head: u64,
    rndv_sent: u64,
    single_copy_from: usize,
    peer_pid: i32,
    pidfd: Option<i32>,
    info: EndpointInfo,
    cfg: EndpointConfig,
    scratch: Vec<u8>,
    /// Where every published record is also announced, with this endpoint's key.
    notify: Option<CqPoster>,
}

// SAFETY: the raw ring pointers point into `map`, which the endpoint owns; an endpoint is used by
// one thread at a time (all methods take &mut self).
unsafe impl Send for ShmEndpoint {}

impl Drop for ShmEndpoint {
    fn drop(&mut self) {
        let c = self.map.ctrl();
        c.hdr.0.closed[self.side].store(1, Ordering::SeqCst);
        self.ring_peer_always();
        if let Some(fd) = self.pidfd.take() {
            // SAFETY: fd is ours.
            unsafe { libc::close(fd) };
        }
    }
}

impl ShmEndpoint {
    fn new(
        map: Mapping,
        side: usize,
        peer_pid: i32,
        cfg: EndpointConfig,
        opts: ShmOptions,
    ) -> Result<Self, TransportError> {
        let key = map.ctrl().hdr.0.key;
        let ring = opts.ring_bytes;
        let tx = map.ring(side, ring);
        let rx = map.ring(1 - side, ring);
        let me = std::process::id() as i32;
        let peer = if peer_pid == me {
            format!("shm peer in this process ({me})")
        } else {
            format!("local peer process {peer_pid} (shm)")
        };
        let pidfd = if peer_pid > 0 && peer_pid != me {
            pidfd_open(peer_pid)
        } else {
            None
        };
        Ok(ShmEndpoint {
            key,
            cap: ring as u64,
            frag: opts.frag_bytes,
            tx,
            rx,
            tail: 0,
            peer_head_cache: 0,
            head: 0,
            rndv_sent: 0,
            single_copy_from: opts.single_copy_from.unwrap_or(usize::MAX),
            peer_pid,
            pidfd,
            info: EndpointInfo {
                transport: TransportKind::Shm,
                mode: cfg.mode,
                peer,
                max_message: cfg.max_message,
            },
            cfg,
            scratch: Vec::new(),
            notify: None,
            map,
            side,
        })
    }

    /// Announces every record this endpoint publishes on a completion queue (`None`: stop).
    pub fn set_notify(&mut self, poster: Option<CqPoster>) {
        self.notify = poster;
    }

    /// Sets the size from which `send` goes single-copy (`None`: never). Both ends may differ.
    pub fn set_single_copy_from(&mut self, from: Option<usize>) {
        self.single_copy_from = from.unwrap_or(usize::MAX);
    }

    fn ctrl(&self) -> &Control {
        self.map.ctrl()
    }

    fn me(&self) -> &SideCtrl {
        &self.ctrl().side[self.side]
    }

    fn peer(&self) -> &SideCtrl {
        &self.ctrl().side[1 - self.side]
    }

    /// Liveness probe for the slow path: Err names how the peer went away.
    fn check_peer(&self, mid_message: bool) -> Result<(), TransportError> {
        if self.ctrl().hdr.0.closed[1 - self.side].load(Ordering::Acquire) != 0 {
            return Err(TransportError::PeerClosed {
                peer: self.info.peer.clone(),
                mid_message,
            });
        }
        if let Some(fd) = self.pidfd {
            let mut p = libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd, zero timeout.
            if unsafe { libc::poll(&mut p, 1, 0) } > 0 {
                return Err(TransportError::PeerDied {
                    peer: self.info.peer.clone(),
                    mid_message,
                });
            }
        } else if self.peer_pid > 0 && !process_alive(self.peer_pid) {
            return Err(TransportError::PeerDied {
                peer: self.info.peer.clone(),
                mid_message,
            });
        }
        Ok(())
    }

    /// Waits until `ready()` holds, spinning then yielding (poll) or sleeping on our bell (block).
    #[inline]
    fn wait_until(
        &self,
        mid_message: bool,
        mut ready: impl FnMut(&Self) -> bool,
    ) -> Result<(), TransportError> {
        if ready(self) {
            return Ok(());
        }
        match self.cfg.mode {
            Mode::Poll => {
                let mut b = Backoff::new(self.cfg.idle_timeout);
                while !ready(self) {
                    match b.snooze_checked(|| self.check_peer(mid_message)) {
                        Ok(()) => {}
                        Err(Stopped::Gone(e)) => return Err(e),
                        Err(Stopped::TimedOut) => return Err(self.timeout_error()),
                    }
                }
                Ok(())
            }
            Mode::Block => {
                for _ in 0..self.cfg.block_spins {
                    if ready(self) {
                        return Ok(());
                    }
                    std::hint::spin_loop();
                }
                self.sleep_until(mid_message, ready)
            }
        }
    }

    #[cold]
    fn sleep_until(
        &self,
        mid_message: bool,
        mut ready: impl FnMut(&Self) -> bool,
    ) -> Result<(), TransportError> {
        let start = Instant::now();
        let (bell, sleeping) = (&self.me().bell.0 .0, &self.me().bell.0 .1);
        loop {
            let seen = bell.load(Ordering::SeqCst);
            sleeping.store(1, Ordering::SeqCst);
            fence(Ordering::SeqCst);
            if ready(self) {
                sleeping.store(0, Ordering::Relaxed);
                return Ok(());
            }
            futex_wait(bell, seen, Duration::from_millis(50));
            sleeping.store(0, Ordering::Relaxed);
            if ready(self) {
                return Ok(());
            }
            if bell.load(Ordering::SeqCst) == seen {
                // Timed out (or spurious): the slow checks.
                self.check_peer(mid_message)?;
                if start.elapsed() > self.cfg.idle_timeout {
                    return Err(self.timeout_error());
                }
            }
        }
    }

    fn timeout_error(&self) -> TransportError {
        TransportError::Timeout {
            peer: self.info.peer.clone(),
            secs: self.cfg.idle_timeout.as_secs(),
        }
    }

    /// After a state change the peer may be sleeping on: ring its bell (blocking mode only).
    #[inline]
    fn ring_peer(&self) {
        if self.cfg.mode == Mode::Block {
            fence(Ordering::SeqCst);
            self.ring_peer_always_if_sleeping();
        }
    }

    fn ring_peer_always_if_sleeping(&self) {
        let (bell, sleeping) = (&self.peer().bell.0 .0, &self.peer().bell.0 .1);
        if sleeping.load(Ordering::SeqCst) != 0 {
            bell.fetch_add(1, Ordering::SeqCst);
            futex_wake(bell);
        }
    }

    fn ring_peer_always(&self) {
        fence(Ordering::SeqCst);
        let bell = &self.peer().bell.0 .0;
        bell.fetch_add(1, Ordering::SeqCst);
        futex_wake(bell);
    }

    // ---- producer side -------------------------------------------------------------------

    fn record_bytes(payload: usize) -> u64 {
        Self::record_bytes_for(payload, false)
    }

    fn record_bytes_for(payload: usize, side: bool) -> u64 {
        ((payload_offset_for(payload, side) + payload).div_ceil(LINE) * LINE) as u64
    }

    /// Room needed to place a record of `rec` bytes at the tail, counting a skip to the ring end.
    fn room_needed(&self, rec: u64) -> u64 {
        let contig = self.cap - (self.tail & (self.cap - 1));
        if rec > contig {
            contig + rec
        } else {
            rec
        }
    }

    fn has_room(&mut self, need: u64) -> bool {
        if self.cap - (self.tail - self.peer_head_cache) >= need {
            return true;
        }
        self.peer_head_cache = self.peer().head.0.load(Ordering::Acquire);
        self.cap - (self.tail - self.peer_head_cache) >= need
    }

    /// Reserves a record (writing a skip record first if it would cross the ring end).
    /// Requires `has_room(room_needed(rec))`.
    fn reserve(&mut self, rec: u64) -> Rec {
        let off = self.tail & (self.cap - 1);
        let contig = self.cap - off;
        if rec > contig {
            let skip = Rec {
                ptr: self.tx_at(off),
            };
            skip.set_word(1, 0);
            skip.set_word(2, (KIND_SKIP as u64) << 32);
            skip.stamp()
                .store((self.tail + 1) ^ self.key, Ordering::Release);
            self.tail += contig;
            return Rec { ptr: self.tx_at(0) };
        }
        Rec {
            ptr: self.tx_at(off),
        }
    }

    fn tx_at(&self, off: u64) -> *mut u8 {
        // SAFETY: off < cap, inside the tx ring.
        unsafe { self.tx.add(off as usize) }
    }

    fn publish(&mut self, r: Rec, rec: u64) {
        r.stamp()
            .store((self.tail + 1) ^ self.key, Ordering::Release);
        self.tail += rec;
        self.ring_peer();
        if let Some(n) = &self.notify {
            n.post();
        }
    }

    fn write_header(r: Rec, total: usize, tag: Tag, kind: u32, frag_len: usize) {
        r.set_word(1, total as u64);
        r.set_word(2, tag as u64 | (kind as u64) << 32);
        r.set_word(3, frag_len as u64);
    }

    /// Payload bytes of the piece of a `total`-byte message that starts at `off`, and the size
    /// of its record (with the side value when `side` and it is the last piece).
    fn piece_plan(&self, total: usize, off: usize, side: bool) -> (usize, u64) {
        let n = if total <= self.frag {
            total
        } else {
            (total - off).min(self.frag)
        };
        (n, Self::record_bytes_for(n, side && off + n >= total))
    }

    /// Tries to put the next piece of an outgoing ring message; returns bytes written or None.
    /// The last piece carries the side value, if any, computed just before it is published.
    fn try_put_piece<S: FnOnce() -> Side>(
        &mut self,
        tag: Tag,
        total: usize,
        off: usize,
        fill: &mut impl FnMut(usize, &mut [u8]),
        side: &mut Option<S>,
    ) -> Option<usize> {
        let whole = total <= self.frag;
        let (n, rec) = self.piece_plan(total, off, side.is_some());
        let with_side = side.is_some() && off + n >= total;
        let need = self.room_needed(rec);
        if !self.has_room(need) {
            return None;
        }
        let r = self.reserve(rec);
        let kind = if whole { KIND_WHOLE } else { KIND_FRAG };
        let flag = if with_side { SIDE_FLAG } else { 0 };
        Self::write_header(r, total, tag, kind | flag, n);
        // SAFETY: the reserved record has room for n payload bytes; we own it until publish.
        let piece = unsafe { std::slice::from_raw_parts_mut(r.payload_for(n, with_side), n) };
        fill(off, piece);
        if with_side {
            if let Some(f) = side.take() {
                r.set_side(f());
            }
        }
        self.publish(r, rec);
        Some(n)
    }

    fn check_send_len(&self, len: usize) -> Result<(), TransportError> {
        if len > self.cfg.max_message {
            return Err(TransportError::SendTooLarge {
                len,
                max: self.cfg.max_message,
            });
        }
        Ok(())
    }

    fn ring_send<S: FnOnce() -> Side>(
        &mut self,
        tag: Tag,
        len: usize,
        mut fill: impl FnMut(usize, &mut [u8]),
        mut side: Option<S>,
    ) -> Result<(), TransportError> {
        let mut off = 0;
        loop {
            match self.try_put_piece(tag, len, off, &mut fill, &mut side) {
                Some(n) => {
                    off += n;
                    if off >= len {
                        return Ok(());
                    }
                }
                None => {
                    let (_, rec) = self.piece_plan(len, off, side.is_some());
                    let need = self.room_needed(rec);
                    let (tail, cap) = (self.tail, self.cap);
                    self.wait_until(off > 0, |s| {
                        cap - (tail - s.peer().head.0.load(Ordering::Acquire)) >= need
                    })?;
                }
            }
        }
    }

    /// Posts a rendezvous record for `data`; the caller then waits for `rndv_done`.
    fn try_post_rndv(&mut self, tag: Tag, data: &[u8], side: Option<Side>) -> bool {
        let rec = Self::record_bytes_for(8, side.is_some());
        let need = self.room_needed(rec);
        if !self.has_room(need) {
            return false;
        }
        let r = self.reserve(rec);
        let flag = if side.is_some() { SIDE_FLAG } else { 0 };
        Self::write_header(r, data.len(), tag, KIND_RNDV | flag, 8);
        let at = r.payload_for(8, side.is_some());
        // SAFETY: 8 payload bytes reserved at `at`.
        unsafe { std::ptr::write_unaligned(at as *mut u64, data.as_ptr() as u64) };
        if let Some(v) = side {
            r.set_side(v);
        }
        self.rndv_sent += 1;
        self.publish(r, rec);
        true
    }

    fn rndv_complete(&self) -> bool {
        self.peer().rndv_done.0.load(Ordering::Acquire) >= self.rndv_sent
    }

    // ---- consumer side -------------------------------------------------------------------

    fn rx_rec(&self) -> Rec {
        // SAFETY: head & (cap-1) < cap, inside the rx ring.
        let ptr = unsafe { self.rx.add((self.head & (self.cap - 1)) as usize) };
        Rec { ptr }
    }

    #[inline]
    fn rx_ready(&self) -> bool {
        self.rx_rec().stamp().load(Ordering::Acquire) == (self.head + 1) ^ self.key
    }

    fn release(&mut self, rec_bytes: u64) {
        self.head += rec_bytes;
        self.me().head.0.store(self.head, Ordering::Release);
        self.ring_peer();
    }

    /// Parses the ready record at head (skipping skip records). Returns None if nothing ready.
    fn try_incoming(&mut self, mid_message: bool) -> Result<Option<Incoming>, TransportError> {
        loop {
            if !self.rx_ready() {
                return Ok(None);
            }
            let r = self.rx_rec();
            let total = r.word(1);
            let w2 = r.word(2);
            let (tag, kind) = (w2 as u32, (w2 >> 32) as u32);
            let (kind, has_side) = (kind & !SIDE_FLAG, kind & SIDE_FLAG != 0);
            let frag_len = r.word(3);
            let off = self.head & (self.cap - 1);
            if kind == KIND_SKIP {
                self.release(self.cap - off);
                continue;
            }
            let proto = |what: String| TransportError::Protocol {
                peer: self.info.peer.clone(),
                what,
            };
            if total > self.cfg.max_message as u64 {
                return Err(TransportError::TooLarge {
                    peer: self.info.peer.clone(),
                    len: total,
                    max: self.cfg.max_message,
                });
            }
            let max_frag = if kind == KIND_RNDV {
                8
            } else {
                self.frag as u64
            };
            let rec_bytes = Self::record_bytes_for(frag_len.min(max_frag) as usize, has_side);
            if frag_len > max_frag || off + rec_bytes > self.cap {
                return Err(proto(format!(
                    "bad shm record: kind {kind}, fragment {frag_len} B"
                )));
            }
            let total = total as usize;
            let side = has_side.then(|| r.side());
            return Ok(Some(match kind {
                KIND_WHOLE | KIND_FRAG if !mid_message || kind == KIND_FRAG => {
                    Incoming::Ring(Piece {
                        total,
                        tag,
                        len: frag_len as usize,
                        rec: r,
                        rec_bytes,
                        kind,
                        side,
                    })
                }
                KIND_RNDV if !mid_message => {
                    let at = r.payload_for(8, has_side);
                    // SAFETY: 8 payload bytes are part of the record, at `at`.
                    let addr = unsafe { std::ptr::read_unaligned(at as *const u64) };
                    Incoming::Rndv {
                        total,
                        tag,
                        addr,
                        rec_bytes,
                        side,
                    }
                }
                _ => return Err(proto(format!("unexpected shm record kind {kind}"))),
            }));
        }
    }

    fn next_incoming(&mut self, mid_message: bool) -> Result<Incoming, TransportError> {
        loop {
            if let Some(i) = self.try_incoming(mid_message)? {
                return Ok(i);
            }
            self.wait_until(mid_message, |s| s.rx_ready())?;
        }
    }

    /// Checks that `p` continues the message being received at offset `off` (or starts one,
    /// when `cont` is None), lends its payload to `sink` and frees its record. Returns its length.
    fn take_piece(
        &mut self,
        p: Piece,
        cont: Option<(Tag, usize)>,
        off: usize,
        sink: &mut impl FnMut(Fragment<'_>),
    ) -> Result<usize, TransportError> {
        let continues = match cont {
            None => off == 0,
            Some((tag, total)) => tag == p.tag && total == p.total,
        };
        if !continues
            || (p.kind == KIND_WHOLE && p.len != p.total)
            || off + p.len > p.total
            || (p.len == 0 && p.total != 0)
        {
            return Err(TransportError::Protocol {
                peer: self.info.peer.clone(),
                what: format!(
                    "a {}-byte piece of a {}-byte message (tag {}) does not continue the message \
                     being received at offset {off}",
                    p.len, p.total, p.tag
                ),
            });
        }
        // SAFETY: the record holds `p.len` payload bytes, published with release.
        let data = unsafe {
            std::slice::from_raw_parts(p.rec.payload_for(p.len, p.side.is_some()), p.len)
        };
        sink(Fragment {
            tag: p.tag,
            total_len: p.total,
            offset: off,
            data,
        });
        self.release(p.rec_bytes);
        Ok(p.len)
    }

    /// Delivers the ring message whose first record is `first`, piece by piece; returns the
    /// side value its last record carried, if any.
    fn drain_ring_message(
        &mut self,
        first: Piece,
        sink: &mut impl FnMut(Fragment<'_>),
    ) -> Result<(RecvInfo, Option<Side>), TransportError> {
        let (tag, total) = (first.tag, first.total);
        let mut side = first.side;
        let mut off = self.take_piece(first, None, 0, sink)?;
        while off < total {
            let Incoming::Ring(p) = self.next_incoming(true)? else {
                unreachable!("try_incoming refuses a rendezvous in the middle of a message")
            };
            side = p.side;
            off += self.take_piece(p, Some((tag, total)), off, sink)?;
        }
        Ok((RecvInfo { tag, len: total }, side))
    }

    fn cma_read(&self, addr: u64, off: usize, dst: &mut [u8]) -> Result<(), TransportError> {
        let mut done = 0;
        while done < dst.len() {
            let local = libc::iovec {
                // SAFETY: within dst.
                iov_base: unsafe { dst.as_mut_ptr().add(done) }.cast(),
                iov_len: dst.len() - done,
            };
            let remote = libc::iovec {
                iov_base: (addr as usize + off + done) as *mut libc::c_void,
                iov_len: dst.len() - done,
            };
            // SAFETY: local iovec is our writable memory; the remote one is read by the kernel
            // from the peer, which keeps the buffer alive until we bump rndv_done.
            let n = unsafe { libc::process_vm_readv(self.peer_pid, &local, 1, &remote, 1, 0) };
            if n <= 0 {
                let e = io::Error::last_os_error();
                if e.raw_os_error() == Some(libc::ESRCH) {
                    return Err(TransportError::PeerDied {
                        peer: self.info.peer.clone(),
                        mid_message: true,
                    });
                }
                self.check_peer(true)?;
                return Err(TransportError::io(
                    format!(
                        "single-copy read from {} (process_vm_readv; use --shm-single-copy never \
                         where the kernel forbids it)",
                        self.info.peer
                    ),
                    e,
                ));
            }
            done += n as usize;
        }
        Ok(())
    }

    fn finish_rndv(&mut self, rec_bytes: u64) {
        let c = &self.me().rndv_done.0;
        c.store(c.load(Ordering::Relaxed) + 1, Ordering::Release);
        self.release(rec_bytes);
    }

    /// Completes an incoming rendezvous into `buf` if it fits (else just acknowledges it).
    fn rndv_into(
        &mut self,
        addr: u64,
        total: usize,
        rec_bytes: u64,
        buf: &mut [u8],
    ) -> Result<(), TransportError> {
        let r = if total <= buf.len() {
            self.cma_read(addr, 0, &mut buf[..total])
        } else {
            Ok(())
        };
        self.finish_rndv(rec_bytes);
        r
    }

    fn recv_into(&mut self, inc: Incoming, buf: &mut [u8]) -> Result<RecvInfo, TransportError> {
        let cap = buf.len();
        let info = match inc {
            Incoming::Rndv {
                total,
                tag,
                addr,
                rec_bytes,
                ..
            } => {
                self.rndv_into(addr, total, rec_bytes, buf)?;
                RecvInfo { tag, len: total }
            }
            Incoming::Ring(p) => self.drain_ring_message(p, &mut |f| copy_into(buf, &f))?.0,
        };
        if info.len > cap {
            return Err(TransportError::Truncated { len: info.len, cap });
        }
        Ok(info)
    }
}

impl Endpoint for ShmEndpoint {
    fn send_with<F: FnMut(usize, &mut [u8])>(
        &mut self,
        tag: Tag,
        len: usize,
        fill: F,
    ) -> Result<(), TransportError> {
        self.check_send_len(len)?;
        self.ring_send(tag, len, fill, None::<fn() -> Side>)
    }

    #[inline]
    fn send(&mut self, tag: Tag, data: &[u8]) -> Result<(), TransportError> {
        // Fast path: a small message that fits before the ring end with room known to be free.
        let len = data.len();
        if len <= self.frag && len <= self.cfg.max_message {
            let rec = Self::record_bytes(len);
            let off = self.tail & (self.cap - 1);
            if rec <= self.cap - off && self.cap - (self.tail - self.peer_head_cache) >= rec {
                let r = Rec {
                    ptr: self.tx_at(off),
                };
                Self::write_header(r, len, tag, KIND_WHOLE, len);
                // SAFETY: the record has room for len payload bytes and is ours until published.
                unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), r.payload(len), len) };
                self.publish(r, rec);
                return Ok(());
            }
        }
        self.send_slow(tag, data)
    }

    fn recv(&mut self, buf: &mut [u8]) -> Result<RecvInfo, TransportError> {
        // Fast path: the next record is a whole small message that fits `buf`.
        if self.poll_ready()? {
            let r = self.rx_rec();
            let w2 = r.word(2);
            let total = r.word(1) as usize;
            if (w2 >> 32) as u32 == KIND_WHOLE && total <= self.frag && total <= buf.len() {
                // SAFETY: a published whole record holds `total` payload bytes.
                unsafe { std::ptr::copy_nonoverlapping(r.payload(total), buf.as_mut_ptr(), total) };
                self.release(Self::record_bytes(total));
                return Ok(RecvInfo {
                    tag: w2 as u32,
                    len: total,
                });
            }
        }
        let inc = self.next_incoming(false)?;
        self.recv_into(inc, buf)
    }
    fn recv_with<F: FnMut(Fragment<'_>)>(&mut self, sink: F) -> Result<RecvInfo, TransportError> {
        self.recv_with_side_inner(sink).map(|(info, _)| info)
    }

    fn sendrecv(
        &mut self,
        tag: Tag,
        data: &[u8],
        buf: &mut [u8],
    ) -> Result<RecvInfo, TransportError> {
        self.sendrecv_inner(tag, data, None, buf)
            .map(|(info, _)| info)
    }

    fn info(&self) -> &EndpointInfo {
        &self.info
    }
}

/// The side value travels in the header's spare half line (see [`payload_offset_for`]); only
/// the last record of a fragmented message carries it, and a rendezvous record carries it.
impl crate::SideBand for ShmEndpoint {
    fn send_with_side<F: FnMut(usize, &mut [u8]), S: FnOnce() -> Side>(
        &mut self,
        tag: Tag,
        len: usize,
        fill: F,
        side: S,
    ) -> Result<(), TransportError> {
        self.check_send_len(len)?;
        // Fast path, as `send`'s: a whole message that fits before the ring end with room known
        // to be free (a monitored stream of small messages takes it every time).
        if len <= self.frag {
            let rec = Self::record_bytes_for(len, true);
            let off = self.tail & (self.cap - 1);
            if rec <= self.cap - off && self.cap - (self.tail - self.peer_head_cache) >= rec {
                let r = Rec {
                    ptr: self.tx_at(off),
                };
                Self::write_header(r, len, tag, KIND_WHOLE | SIDE_FLAG, len);
                // SAFETY: the record has room for len payload bytes after the side value and is
                // ours until published.
                let piece =
                    unsafe { std::slice::from_raw_parts_mut(r.payload_for(len, true), len) };
                let mut fill = fill;
                fill(0, piece);
                r.set_side(side());
                self.publish(r, rec);
                return Ok(());
            }
        }
        self.ring_send(tag, len, fill, Some(side))
    }

    fn recv_with_side<F: FnMut(Fragment<'_>)>(
        &mut self,
        mut sink: F,
    ) -> Result<(RecvInfo, Option<Side>), TransportError> {
        // Fast path, as `recv`'s: the next record is a whole message with a side value; lent
        // to `sink` straight from the ring.
        if self.poll_ready()? {
            let r = self.rx_rec();
            let w2 = r.word(2);
            let total = r.word(1) as usize;
            let rec = Self::record_bytes_for(total, true);
            if (w2 >> 32) as u32 == KIND_WHOLE | SIDE_FLAG
                && total <= self.frag
                && total <= self.cfg.max_message
                && r.word(3) as usize == total
                && (self.head & (self.cap - 1)) + rec <= self.cap
            {
                let side = r.side();
                // SAFETY: a published whole record holds `total` payload bytes after its side
                // value, inside the ring (checked above).
                let data = unsafe { std::slice::from_raw_parts(r.payload_for(total, true), total) };
                let tag = w2 as u32;
                sink(Fragment {
                    tag,
                    total_len: total,
                    offset: 0,
                    data,
                });
                self.release(rec);
                return Ok((RecvInfo { tag, len: total }, Some(side)));
            }
        }
        self.recv_with_side_inner(sink)
    }

    fn sendrecv_side(
        &mut self,
        tag: Tag,
        data: &[u8],
        side: Side,
        buf: &mut [u8],
    ) -> Result<(RecvInfo, Option<Side>), TransportError> {
        self.sendrecv_inner(tag, data, Some(side), buf)
    }
}

impl ShmEndpoint {
    /// The receive fast paths' wait: in poll mode spins (with back-off) until a record is
    /// ready at the head and returns true; false sends the caller the general way (block mode
    /// and nothing ready yet). The peer gone with a record left still delivers it; the peer
    /// gone with nothing left is its error.
    #[inline]
    fn poll_ready(&mut self) -> Result<bool, TransportError> {
        let mut b = None;
        loop {
            if self.rx_ready() {
                return Ok(true);
            }
            if self.cfg.mode == Mode::Block {
                return Ok(false);
            }
            let bo = b.get_or_insert_with(|| Backoff::new(self.cfg.idle_timeout));
            match bo.snooze(|| self.check_peer(false).is_ok()) {
                Ok(()) => {}
                Err(WaitStop::TimedOut) => return Err(self.timeout_error()),
                Err(WaitStop::PeerGone) => {
                    // Deliver what the peer managed to send before it went; else say it went.
                    if self.rx_ready() {
                        return Ok(true);
                    }
                    self.check_peer(false)?;
                }
            }
        }
    }

    fn recv_with_side_inner<F: FnMut(Fragment<'_>)>(
        &mut self,
        mut sink: F,
    ) -> Result<(RecvInfo, Option<Side>), TransportError> {
        match self.next_incoming(false)? {
            Incoming::Rndv {
                total,
                tag,
                addr,
                rec_bytes,
                side,
            } => {
                const CHUNK: usize = 1 << 20;
                if self.scratch.len() < CHUNK.min(total) {
                    self.scratch.resize(CHUNK.min(total), 0);
                }
                let mut scratch = std::mem::take(&mut self.scratch);
                let mut off = 0;
                let mut res = Ok(());
                loop {
                    let n = (total - off).min(CHUNK);
                    if let Err(e) = self.cma_read(addr, off, &mut scratch[..n]) {
                        res = Err(e);
                        break;
                    }
                    sink(Fragment {
                        tag,
                        total_len: total,
                        offset: off,
                        data: &scratch[..n],
                    });
                    off += n;
                    if off >= total {
                        break;
                    }
                }
                self.scratch = scratch;
                self.finish_rndv(rec_bytes);
                res.map(|()| (RecvInfo { tag, len: total }, side))
            }
            Incoming::Ring(p) => self.drain_ring_message(p, &mut sink),
        }
    }

    /// The duplex call, with an optional side value on the outgoing message; returns the
    /// incoming message's side value.
    fn sendrecv_inner(
        &mut self,
        tag: Tag,
        data: &[u8],
        side: Option<Side>,
        buf: &mut [u8],
    ) -> Result<(RecvInfo, Option<Side>), TransportError> {
        self.check_send_len(data.len())?;
        let has_side = side.is_some();
        let mut side_fn = side.map(|v| move || v);
        let mut got_side = None;
        let rndv = data.len() >= self.single_copy_from;
        let mut sent = 0usize;
        let mut send_done = false;
        let mut posted = false;
        let mut got: Option<RecvInfo> = None;
        let mut recv_off = 0usize;
        let mut recv_meta: Option<(Tag, usize)> = None;
        let cap = buf.len();
        let mut truncated = false;
        loop {
            let mut progressed = false;
            // Outgoing: one piece per turn, so the incoming side keeps draining.
            if !send_done {
                if rndv {
                    if !posted {
                        posted = self.try_post_rndv(tag, data, side);
                        progressed |= posted;
                    }
                    if posted && self.rndv_complete() {
                        send_done = true;
                        progressed = true;
                    }
                } else if let Some(n) = self.try_put_piece(
                    tag,
                    data.len(),
                    sent,
                    &mut |off, piece: &mut [u8]| {
                        piece.copy_from_slice(&data[off..off + piece.len()])
                    },
                    &mut side_fn,
                ) {
                    sent += n;
                    send_done = sent >= data.len();
                    progressed = true;
                }
            }
            // Incoming: one record per turn.
            if got.is_none() {
                if let Some(inc) = self.try_incoming(recv_meta.is_some())? {
                    progressed = true;
                    match inc {
                        Incoming::Rndv {
                            total,
                            tag,
                            addr,
                            rec_bytes,
                            side,
                        } => {
                            self.rndv_into(addr, total, rec_bytes, buf)?;
                            truncated = total > cap;
                            got = Some(RecvInfo { tag, len: total });
                            got_side = side;
                        }
                        Incoming::Ring(p) => {
                            let (t, total) = (p.tag, p.total);
                            got_side = p.side;
                            recv_off += self
                                .take_piece(p, recv_meta, recv_off, &mut |f| copy_into(buf, &f))?;
                            if recv_off >= total {
                                truncated = total > cap;
                                got = Some(RecvInfo { tag: t, len: total });
                            } else {
                                recv_meta = Some((t, total));
                            }
                        }
                    }
                }
            }
            if send_done {
                if let Some(info) = got {
                    if truncated {
                        return Err(TransportError::Truncated { len: info.len, cap });
                    }
                    return Ok((info, got_side));
                }
            }
            if !progressed {
                let (tail, c, sent_now, frag) = (self.tail, self.cap, sent, self.frag);
                let dlen = data.len();
                let rs = self.rndv_sent;
                let mid = recv_meta.is_some() || sent > 0;
                let recv_pending = got.is_none();
                self.wait_until(mid, |s| {
                    if recv_pending && s.rx_ready() {
                        return true;
                    }
                    if send_done {
                        return false;
                    }
                    if rndv {
                        return if posted {
                            s.peer().rndv_done.0.load(Ordering::Acquire) >= rs
                        } else {
                            let need = s.room_needed(Self::record_bytes_for(8, has_side));
                            c - (tail - s.peer().head.0.load(Ordering::Acquire)) >= need
                        };
                    }
                    let n = if dlen <= frag {
                        dlen
                    } else {
                        (dlen - sent_now).min(frag)
                    };
                    let last = has_side && sent_now + n >= dlen;
                    let need = s.room_needed(Self::record_bytes_for(n, last));
                    c - (tail - s.peer().head.0.load(Ordering::Acquire)) >= need
                })?;
            }
        }
    }

    fn send_slow(&mut self, tag: Tag, data: &[u8]) -> Result<(), TransportError> {
        self.check_send_len(data.len())?;
        if data.len() >= self.single_copy_from {
            while !self.try_post_rndv(tag, data, None) {
                let need = self.room_needed(Self::record_bytes(8));
                let (tail, cap) = (self.tail, self.cap);
                self.wait_until(false, |s| {
                    cap - (tail - s.peer().head.0.load(Ordering::Acquire)) >= need
                })?;
            }
            return self.wait_until(true, |s| s.rndv_complete());
        }
        self.ring_send(
            tag,
            data.len(),
            |off, piece| piece.copy_from_slice(&data[off..off + piece.len()]),
            None::<fn() -> Side>,
        )
    }
}

/// Gathers the parts straight into transport memory (the ring, for shm): no packing buffer.
impl crate::VectoredSend for ShmEndpoint {
    fn send_vectored(&mut self, tag: Tag, parts: &[&[u8]]) -> Result<(), TransportError> {
        let len = parts.iter().map(|p| p.len()).sum();
        self.send_with(tag, len, |off, piece| crate::gather(parts, off, piece))
    }
}

/// A record published at the read position: one load of the stamp's cache line.
impl crate::Readiness for ShmEndpoint {
    fn readable_now(&self) -> Result<bool, TransportError> {
        Ok(self.rx_ready())
    }

    fn check_alive(&self) -> Result<(), TransportError> {
        self.check_peer(false)
    }
}

impl crate::SwitchMode for ShmEndpoint {
    fn set_mode(&mut self, mode: Mode, block_spins: u32) -> Result<(), TransportError> {
        (self.cfg.mode, self.cfg.block_spins, self.info.mode) = (mode, block_spins, mode);
        Ok(())
    }
}

/// Both ends of a connection in this process (for tests and in-process use).
pub fn pair(
    cfg: EndpointConfig,
    opts: ShmOptions,
) -> Result<(ShmEndpoint, ShmEndpoint), TransportError> {
    let seg = ShmSegment::create(opts, cfg.max_message)?;
    let name = seg.name().to_string();
    let mut b = attach(&name, cfg)?;
    let mut a = seg.accept(cfg, Duration::from_secs(5))?;
    a.set_single_copy_from(opts.single_copy_from);
    b.set_single_copy_from(opts.single_copy_from);
    Ok((a, b))
}

// ---- a completion queue over many rings ---------------------------------------------------------

/// Slots of a shared-memory completion queue.
pub const CQ_SLOTS: u64 = 4096;
const CQ_MAGIC: u64 = u64::from_le_bytes(*b"CPSHMCQ1");

#[repr(C)]
struct CqSlot {
    /// `position + 1` once `key` is written (release), so the consumer reads whole entries.
    stamp: AtomicU64,
    key: AtomicU64,
}

#[repr(C)]
struct CqShared {
    magic: u64,
    /// Next slot the consumer reads.
    head: Line<AtomicU64>,
    /// Next slot a producer claims.
    tail: Line<AtomicU64>,
    /// The consumer's futex bell, whether it sleeps on it, and whether an entry was dropped.
    bell: Line<(AtomicU32, AtomicU32, AtomicU32)>,
    slots: [CqSlot; CQ_SLOTS as usize],
}

/// A mapped completion-queue segment: a [`Mapping`] of `size_of::<CqShared>()` bytes, which
/// unlinks and unmaps it.
struct CqMap(Mapping);

// SAFETY: the segment holds only atomics, so sharing the mapping between threads is sound
// (`Send` comes with the `Mapping`).
unsafe impl Sync for CqMap {}

impl CqMap {
    /// Wraps a mapping of `size_of::<CqShared>()` bytes at `base`.
    fn new(base: NonNull<u8>, name: String, linked: bool) -> Self {
        CqMap(Mapping {
            base,
            len: std::mem::size_of::<CqShared>(),
            name,
            linked,
        })
    }

    #[inline]
    fn shared(&self) -> &CqShared {
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

/// A completion queue in shared memory: the shm answer to epoll (seed 004 §3.3.9). Endpoints of
/// the *other* process post their key into it each time they publish a record
/// ([`ShmEndpoint::set_notify`]), so one poller reads one queue instead of sweeping every ring.
/// Many producers, one consumer; polling reads a cache line, blocking sleeps on a futex.
#[derive(Debug)]
pub struct ShmCq {
    map: CqMap,
    mode: Mode,
}

impl ShmCq {
    /// Creates the queue's segment (named like the connection segments, so a crashed run's is
    /// removed by [`remove_stale_segments`]).
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
    fn try_pop(&self) -> Option<u64> {
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

    fn overflowed(&self) -> Result<(), TransportError> {
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
    map: std::sync::Arc<CqMap>,
    key: u64,
}

/// A producer's attachment to a completion queue another process created; hand out
/// [`CqPoster`]s with [`CqAttachment::poster`].
#[derive(Debug, Clone)]
pub struct CqAttachment {
    map: std::sync::Arc<CqMap>,
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
    fn post(&self) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cq::CompletionQueue;

    /// The completion queue reports the endpoint that published, only it, once per record, and
    /// wakes a sleeping poller; a ping-pong driven by it in either mode never loses a wake-up.
    #[test]
    fn the_completion_queue_names_the_endpoint_that_published() {
        for mode in [Mode::Poll, Mode::Block] {
            let cfg = EndpointConfig {
                mode,
                idle_timeout: Duration::from_secs(10),
                ..EndpointConfig::default()
            };
            let mut cq = ShmCq::create(mode).unwrap();
            let att = attach_cq(cq.name()).unwrap();
            cq.unlink();
            let (mut a1, mut b1) = pair(cfg, ShmOptions::default()).unwrap();
            let (mut a2, mut b2) = pair(cfg, ShmOptions::default()).unwrap();
            a1.set_notify(Some(att.poster(10)));
            a2.set_notify(Some(att.poster(20)));
            assert_eq!(cq.wait(0).unwrap(), None);
            a2.send(1, b"x").unwrap();
            assert_eq!(cq.wait(0).unwrap(), Some(20));
            assert_eq!(cq.wait(0).unwrap(), None, "one entry per record");
            b2.recv(&mut [0u8; 8]).unwrap();
            b1.send(1, b"y").unwrap(); // b1 does not post
            assert_eq!(cq.wait(50).unwrap(), None);
            a1.recv(&mut [0u8; 8]).unwrap();
            // A ping-pong whose replies are found through the queue only.
            const N: u64 = 20_000;
            let (mut x, mut y) = pair(cfg, ShmOptions::default()).unwrap();
            y.set_notify(Some(att.poster(7)));
            let h = std::thread::spawn(move || {
                let mut buf = [0u8; 16];
                for _ in 0..N {
                    y.recv(&mut buf).unwrap();
                    y.send(1, &buf).unwrap();
                }
            });
            let mut buf = [0u8; 16];
            for i in 0..N {
                x.send(1, &buf).unwrap();
                let k = cq.wait(2000).unwrap();
                assert!(k.is_some(), "{mode}: reply {i} never announced");
                assert_eq!(k, Some(7));
                x.recv(&mut buf).unwrap();
            }
            h.join().unwrap();
        }
    }

    /// Publishes a forged whole-message record announcing `total` bytes on `a`'s ring.
    fn forge(a: &mut ShmEndpoint, total: usize) {
        let rec = ShmEndpoint::record_bytes(8);
        assert!(a.has_room(a.room_needed(rec)));
        let r = a.reserve(rec);
        ShmEndpoint::write_header(r, total, 3, KIND_WHOLE, 8);
        a.publish(r, rec);
    }

    #[test]
    fn a_record_announcing_more_than_the_maximum_is_refused() {
        let cfg = EndpointConfig {
            max_message: 1 << 20,
            ..EndpointConfig::default()
        };
        let (mut a, mut b) = pair(cfg, ShmOptions::default()).unwrap();
        forge(&mut a, 1 << 63);
        let r = b.recv(&mut [0u8; 64]);
        assert!(
            matches!(r, Err(TransportError::TooLarge { len, max, .. }) if len == 1 << 63 && max == 1 << 20),
            "{r:?}"
        );
        let (mut a, mut b) = pair(cfg, ShmOptions::default()).unwrap();
        forge(&mut a, (1 << 20) + 1);
        let r = b.recv_with(|_| panic!("nothing may be delivered"));
        assert!(matches!(r, Err(TransportError::TooLarge { .. })), "{r:?}");
    }

    #[test]
    fn small_payloads_share_the_stamp_line_and_larger_ones_start_aligned() {
        assert_eq!(ShmEndpoint::record_bytes(0), 64);
        assert_eq!(ShmEndpoint::record_bytes(INLINE_MAX), 64);
        assert_eq!(payload_offset(INLINE_MAX + 1), 64);
        assert_eq!(ShmEndpoint::record_bytes(INLINE_MAX + 1), 128);
        assert_eq!(ShmEndpoint::record_bytes(4096), 64 + 4096);
    }

    /// Side values arrive with their message on every path (inline, one line, fragmented,
    /// rendezvous, duplex), interleaved with messages sent without one, and never change the
    /// bytes or lengths the caller sees.
    #[test]
    fn side_values_travel_in_the_header_on_every_path() {
        use crate::SideBand;
        let cfg = EndpointConfig {
            max_message: 1 << 20,
            ..EndpointConfig::default()
        };
        let opts = ShmOptions {
            frag_bytes: 4096,
            single_copy_from: Some(256 << 10),
            ..ShmOptions::default()
        };
        let (mut a, mut b) = pair(cfg, opts).unwrap();
        // A side-band record of more than 32 payload bytes is no longer than a plain one.
        assert_eq!(
            ShmEndpoint::record_bytes_for(64, true),
            ShmEndpoint::record_bytes(64)
        );
        let sizes = [
            0usize,
            1,
            8,
            32,
            33,
            64,
            4095,
            4096,
            4097,
            20_000,
            300 << 10,
        ];
        let h = std::thread::spawn(move || {
            let mut buf = vec![0u8; 1 << 20];
            for (i, &n) in sizes.iter().enumerate() {
                let mut got = vec![0u8; n];
                let (info, side) = b.recv_with_side(|f| copy_into(&mut got, &f)).unwrap();
                assert_eq!((info.len, info.tag), (n, i as Tag));
                assert!(got.iter().enumerate().all(|(k, &v)| v == (k % 251) as u8));
                assert_eq!(side, Some([n as u64, !(n as u64), i as u64]), "{n} B");
                // A plain message in between: no side value, plain payload offset.
                let info = b.recv(&mut buf).unwrap();
                assert_eq!(info.len, n);
                assert!(buf[..n]
                    .iter()
                    .enumerate()
                    .all(|(k, &v)| v == (k % 251) as u8));
                // Duplex with side values both ways (single-copy from 256 KiB).
                let data = buf[..n].to_vec();
                let (info, side) = b
                    .sendrecv_side(9, &data, [7, 8, n as u64], &mut buf)
                    .unwrap();
                assert_eq!((info.len, side), (n, Some([1, 2, n as u64])));
            }
        });
        let data: Vec<u8> = (0..300 << 10).map(|k| (k % 251) as u8).collect();
        let mut buf = vec![0u8; 1 << 20];
        for (i, &n) in sizes.iter().enumerate() {
            let d = &data[..n];
            a.send_with_side(
                i as Tag,
                n,
                |off, piece| piece.copy_from_slice(&d[off..off + piece.len()]),
                || [n as u64, !(n as u64), i as u64],
            )
            .unwrap();
            a.send(i as Tag, d).unwrap();
            let (info, side) = a.sendrecv_side(9, d, [1, 2, n as u64], &mut buf).unwrap();
            assert_eq!((info.len, side), (n, Some([7, 8, n as u64])));
            assert_eq!(&buf[..n], d);
        }
        h.join().unwrap();
    }
}
