//! The segment: its layout, creation, mapping and cleanup, attaching to it, and removing what
//! crashed runs left behind.
//!
//! The segment is a header page ([`Control`]: the layout, the random record key, and one
//! [`SideCtrl`] per side with its head index, bell and rendezvous counter) followed by the two
//! rings, one per direction.
//!
//! Why it looks like this:
//! - **Cleanup**: the segment is created without a name (`O_TMPFILE` in `/dev/shm`), sized,
//!   mapped, pre-faulted and initialized, and only then linked under its name, so a creator
//!   killed while doing any of that leaves nothing behind (the unnamed file dies with it). The
//!   creator unlinks the name as soon as the peer has mapped the segment, so even two SIGKILLs
//!   after that leave nothing in `/dev/shm`. Names embed the creator's pid, so that what a
//!   creator killed between linking and the peer's attach leaves behind is removed by the next
//!   run ([`remove_stale_segments`]).
//! - **One mapping type**: a [`Mapping`] unlinks its name (if this process created it and it is
//!   still linked) and unmaps on drop, for connection segments and completion-queue segments
//!   alike.

use crate::{EndpointConfig, TransportError};
use std::ffi::CString;
use std::io;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::endpoint::ShmEndpoint;
use super::ring::LINE;

pub(super) const MAGIC: u64 = u64::from_le_bytes(*b"CPSHM001");
pub(super) const LAYOUT_VERSION: u32 = 1;
pub(super) const PAGE: usize = 4096;
/// Prefix of every segment name, followed by `<creator pid>-<random>`.
pub const NAME_PREFIX: &str = "commperf-";

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
    /// The fragment size per message length this end sends in (`None`: `frag_bytes` for
    /// every message). Only the sender's business: the peer reads each piece's length.
    pub fragments: Option<crate::FragmentPlan>,
}

impl Default for ShmOptions {
    fn default() -> Self {
        // Pipelining through the ring measured 2–3× faster than single-copy here (28 GB/s
        // against 10 GB/s at 1 MiB on the development VM), so single-copy is opt-in.
        ShmOptions {
            ring_bytes: 1 << 20,
            frag_bytes: 64 << 10,
            single_copy_from: None,
            fragments: None,
        }
    }
}

impl ShmOptions {
    pub(super) fn validate(&self) -> Result<(), TransportError> {
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
        if let Some(p) = &self.fragments {
            if let Err(e) = p.check("shm fragments", LINE, self.frag_bytes) {
                return bad(e.to_string());
            }
        }
        Ok(())
    }
}

#[repr(C, align(128))]
pub(super) struct Line<T>(pub(super) T);

#[repr(C)]
pub(super) struct SegHeader {
    pub(super) magic: u64,
    pub(super) version: u32,
    pub(super) _pad: u32,
    pub(super) ring_bytes: u64,
    pub(super) max_message: u64,
    pub(super) frag_bytes: u64,
    pub(super) key: u64,
    pub(super) pid: [AtomicI32; 2],
    pub(super) closed: [AtomicU32; 2],
}

/// Control words of one side, as consumer of its incoming ring and as sleeper.
#[repr(C)]
pub(super) struct SideCtrl {
    /// Read position in the ring this side consumes (written by this side).
    pub(super) head: Line<AtomicU64>,
    /// Rendezvous transfers this side has completed (written by this side).
    pub(super) rndv_done: Line<AtomicU64>,
    /// Futex word rung by the peer, and whether this side sleeps on it.
    pub(super) bell: Line<(AtomicU32, AtomicU32)>,
}

#[repr(C)]
pub(super) struct Control {
    pub(super) hdr: Line<SegHeader>,
    pub(super) side: [SideCtrl; 2],
}

pub(super) fn header_bytes() -> usize {
    std::mem::size_of::<Control>().div_ceil(PAGE) * PAGE
}

/// Size of the segment of two rings of `ring_bytes` each.
pub fn segment_bytes(ring_bytes: usize) -> usize {
    header_bytes().saturating_add(ring_bytes.saturating_mul(2))
}

/// Where POSIX shared memory lives (glibc's `shm_open` names files here).
pub(super) const SHM_DIR: &str = "/dev/shm";

/// A file for a segment that has no name yet: `O_TMPFILE` in [`SHM_DIR`], linked under its
/// name by [`link_segment`] once it is filled. `None` where the file system cannot make unnamed
/// files (the caller then falls back to `shm_open`, named from the start).
pub(super) fn unnamed_segment() -> Option<io::Result<i32>> {
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
pub(super) fn link_segment(fd: i32, name: &str) -> io::Result<()> {
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

/// Where a test stops [`ShmSegment::create_pausing`], so it can kill the creator exactly there
/// (`commperf serve --pause-shm-create POINT`, a hidden option; never the environment).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShmPause {
    /// Sized, mapped, pre-faulted and initialized, not yet named.
    Filled,
    /// Linked under its name, before the peer attaches.
    Named,
}

impl ShmPause {
    fn name(self) -> &'static str {
        match self {
            ShmPause::Filled => "filled",
            ShmPause::Named => "named",
        }
    }
}

/// A `--pause-shm-create` value that is neither `filled` nor `named`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{0}' is not a point of shared-memory segment creation (filled or named)")]
pub struct ShmPauseParseError(String);

impl std::str::FromStr for ShmPause {
    type Err = ShmPauseParseError;

    fn from_str(v: &str) -> Result<Self, Self::Err> {
        [ShmPause::Filled, ShmPause::Named]
            .into_iter()
            .find(|p| p.name() == v)
            .ok_or_else(|| ShmPauseParseError(v.to_string()))
    }
}

impl std::fmt::Display for ShmPause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// When `pause` is `at`: says so on stderr with the segment's size, and waits to be killed.
fn pause_if(pause: Option<ShmPause>, at: ShmPause, len: usize) {
    if pause != Some(at) {
        return;
    }
    eprintln!(
        "commperf: test hook: shm segment of {len} bytes {at} in process {}, pausing",
        std::process::id()
    );
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

/// A mapped segment (a connection's or a completion queue's). Unmapped on drop; unlinked on
/// drop by the creator if still linked.
#[derive(Debug)]
pub(super) struct Mapping {
    pub(super) base: NonNull<u8>,
    pub(super) len: usize,
    pub(super) name: String,
    pub(super) linked: bool,
}

// SAFETY: the mapping is plain shared memory; all cross-thread access goes through atomics or
// through ring regions whose ownership the ring protocol hands over with acquire/release.
unsafe impl Send for Mapping {}

impl Mapping {
    #[inline]
    pub(super) fn ctrl(&self) -> &Control {
        // SAFETY: the segment is at least header_bytes() long, page aligned, and Control has only
        // atomics and plain integers written once before the peer attaches.
        unsafe { &*(self.base.as_ptr() as *const Control) }
    }

    #[inline]
    pub(super) fn ring(&self, idx: usize, ring_bytes: usize) -> *mut u8 {
        // SAFETY: offsets stay within the mapping laid out by `create`.
        unsafe { self.base.as_ptr().add(header_bytes() + idx * ring_bytes) }
    }

    pub(super) fn unlink(&mut self) {
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
pub(super) fn fresh_name() -> (String, CString) {
    let name = format!("/{NAME_PREFIX}{}-{:016x}", std::process::id(), random_u64());
    let cname = CString::new(name.clone()).expect("no NUL in generated name");
    (name, cname)
}

/// Creates the named segment `cname`, read-write for this user; `O_EXCL` so that we never adopt
/// someone else's segment.
pub(super) fn shm_create(cname: &CString) -> io::Result<i32> {
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

pub(super) fn random_u64() -> u64 {
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

pub(super) fn map_fd(fd: i32, len: usize) -> io::Result<NonNull<u8>> {
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
    pub(super) map: Mapping,
    pub(super) opts: ShmOptions,
}

impl ShmSegment {
    /// Creates and initializes a segment named `/commperf-<pid>-<random>`. The name appears
    /// only once the segment is complete (see the module notes on cleanup).
    pub fn create(opts: ShmOptions, max_message: usize) -> Result<Self, TransportError> {
        Self::create_pausing(opts, max_message, None)
    }

    /// [`ShmSegment::create`], stopping for good at `pause` (a test's kill point) if given.
    pub fn create_pausing(
        opts: ShmOptions,
        max_message: usize,
        pause: Option<ShmPause>,
    ) -> Result<Self, TransportError> {
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
        pause_if(pause, ShmPause::Filled, len);
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
        pause_if(pause, ShmPause::Named, len);
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
pub(super) fn open_segment(name: &str) -> io::Result<i32> {
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
        fragments: None,
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

pub(super) fn process_alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks existence and permission.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

pub(super) fn pidfd_open(pid: i32) -> Option<i32> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new fd or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    (fd >= 0).then_some(fd as i32)
}
