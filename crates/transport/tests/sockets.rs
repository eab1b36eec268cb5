//! The TCP and Unix-domain stream endpoints over real sockets: thread pairs in one process, TCP on
//! 127.0.0.1 port 0, both completion modes. Malformed peers are raw sockets writing hand-made
//! bytes, so the wire format is checked independently of the code that produces it.
//!
//! A counting global allocator (per thread) checks the claims that matter for measurement: a
//! header announcing 2^63 bytes allocates nothing, and steady-state send/receive allocates
//! nothing at all.

use commperf_transport::sys::socket::{HEADER_LEN, MAGIC, READ_BUF_LEN};
use commperf_transport::sys::{tcp, uds};
use commperf_transport::{
    Endpoint, EndpointConfig, Mode, RecvInfo, Tag, TransportError, TransportKind,
};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::thread;
use std::time::{Duration, Instant};

// ---------------------------------------------------------------------------------------------
// Allocation counting

struct Counting;

thread_local! {
    static ALLOCATED: Cell<u64> = const { Cell::new(0) };
}

fn note(bytes: usize) {
    let _ = ALLOCATED.try_with(|c| c.set(c.get() + bytes as u64));
}

/// Bytes allocated so far by the calling thread.
fn allocated_here() -> u64 {
    ALLOCATED.with(|c| c.get())
}

// SAFETY: every method forwards to the system allocator with the caller's arguments unchanged;
// the only addition is bumping a thread-local counter, which neither allocates nor unwinds.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: forwarded with the caller's (valid, non-zero-size) layout.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: as for `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `System` with `layout` (all allocations go there).
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
        // SAFETY: `ptr` was allocated by `System` with `layout`; arguments forwarded unchanged.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

// ---------------------------------------------------------------------------------------------
// Helpers

const MODES: [Mode; 2] = [Mode::Poll, Mode::Block];
const MAX: usize = 64 << 20;
const PROMPT: Duration = Duration::from_secs(2);
const RAW_TIMEOUT: Duration = Duration::from_secs(10);

fn cfg(mode: Mode) -> EndpointConfig {
    EndpointConfig {
        mode,
        max_message: MAX,
        idle_timeout: Duration::from_secs(10),
        block_spins: 0,
    }
}

fn tcp_pair(cfg: EndpointConfig) -> (tcp::TcpEndpoint, tcp::TcpEndpoint) {
    let l = tcp::listen("127.0.0.1:0".parse().unwrap()).unwrap();
    let a = tcp::connect(l.local_addr().unwrap(), cfg).unwrap();
    let b = tcp::accept(&l, cfg).unwrap();
    (a, b)
}

fn uds_pair(cfg: EndpointConfig) -> (uds::UdsEndpoint, uds::UdsEndpoint) {
    uds::pair(cfg).unwrap()
}

/// An endpoint and a raw socket at its other end.
fn tcp_raw(cfg: EndpointConfig) -> (tcp::TcpEndpoint, TcpStream) {
    let l = tcp::listen("127.0.0.1:0".parse().unwrap()).unwrap();
    let raw = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let ep = tcp::accept(&l, cfg).unwrap();
    assert_eq!(ep.info().peer, raw.local_addr().unwrap().to_string());
    // A failing test must fail, not hang a raw writer on a full socket.
    raw.set_write_timeout(Some(RAW_TIMEOUT)).unwrap();
    raw.set_read_timeout(Some(RAW_TIMEOUT)).unwrap();
    (ep, raw)
}

fn uds_raw(cfg: EndpointConfig) -> (uds::UdsEndpoint, UnixStream) {
    let (x, y) = UnixStream::pair().unwrap();
    y.set_write_timeout(Some(RAW_TIMEOUT)).unwrap();
    y.set_read_timeout(Some(RAW_TIMEOUT)).unwrap();
    let ep = uds::from_stream(x, cfg, "raw test peer".to_string()).unwrap();
    (ep, y)
}

/// The payload of a `size`-byte message: byte i is `(i * 31 + size + salt) as u8`. The pattern
/// repeats every 256 bytes, so it is built by doubling (memcpy, fast even unoptimized).
fn pattern(size: usize, salt: usize) -> Vec<u8> {
    let mut v: Vec<u8> = (0..size.min(256))
        .map(|i| (i.wrapping_mul(31) + size + salt) as u8)
        .collect();
    v.reserve_exact(size - v.len());
    while v.len() < size {
        let n = v.len().min(size - v.len());
        v.extend_from_within(..n);
    }
    v
}

/// Asserts byte equality without printing megabytes on failure.
#[track_caller]
fn assert_bytes(got: &[u8], exp: &[u8], what: &str) {
    assert_eq!(got.len(), exp.len(), "{what}: length");
    if got != exp {
        let i = got.iter().zip(exp).position(|(a, b)| a != b).unwrap();
        panic!(
            "{what}: first difference at byte {i}: got {} expected {}",
            got[i], exp[i]
        );
    }
}

fn header(len: u64, tag: Tag, magic: u32) -> [u8; HEADER_LEN] {
    let mut h = [0u8; HEADER_LEN];
    h[..8].copy_from_slice(&len.to_le_bytes());
    h[8..12].copy_from_slice(&tag.to_le_bytes());
    h[12..].copy_from_slice(&magic.to_le_bytes());
    h
}

fn frame(tag: Tag, payload: &[u8]) -> Vec<u8> {
    let mut v = header(payload.len() as u64, tag, MAGIC).to_vec();
    v.extend_from_slice(payload);
    v
}

/// Receives one message with `recv_with`, checking that the pieces cover `exp` exactly once, in
/// order, with consistent `tag` and `total_len`.
#[track_caller]
fn recv_pieces<E: Endpoint>(e: &mut E, exp: &[u8], what: &str) -> RecvInfo {
    let mut next = 0usize;
    let mut pieces = 0usize;
    let mut tags = None;
    let info = e
        .recv_with(|f| {
            assert_eq!(f.total_len, exp.len(), "{what}: total_len");
            assert_eq!(f.offset, next, "{what}: pieces in order, no gaps");
            assert!(
                f.offset + f.data.len() <= exp.len(),
                "{what}: piece past the end"
            );
            if f.data != &exp[f.offset..f.offset + f.data.len()] {
                panic!("{what}: piece at offset {} differs", f.offset);
            }
            if let Some(t) = tags {
                assert_eq!(t, f.tag, "{what}: tag changed between pieces");
            }
            tags = Some(f.tag);
            next += f.data.len();
            pieces += 1;
        })
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(next, exp.len(), "{what}: pieces cover the message");
    assert_eq!(tags, Some(info.tag), "{what}: fragment tag");
    if exp.is_empty() {
        assert_eq!(pieces, 1, "{what}: an empty message is one empty piece");
    }
    assert_eq!(info.len, exp.len(), "{what}: len");
    info
}

fn ladder() -> Vec<usize> {
    let mut v = vec![0];
    let mut p = 1;
    while p <= MAX {
        v.push(p);
        p <<= 1;
    }
    // Odd sizes, and sizes around the 64 KiB read buffer and the 256 KiB send scratch.
    v.extend([
        3, 1000, 4095, 65_519, 65_520, 65_521, 65_535, 65_537, 262_127, 262_128, 262_129,
    ]);
    v.extend([262_145, 1_000_003]);
    v.sort_unstable();
    v.dedup();
    v
}

// ---------------------------------------------------------------------------------------------
// Test bodies, generic over the endpoint type

/// Interleaved tags arrive in order with intact payloads, through every send/recv flavor, in
/// both directions.
fn order_and_tags<E: Endpoint + Send>(mut a: E, mut b: E, what: &str) {
    const N: usize = 400;
    const TAGS: [Tag; 6] = [5, 1, 9, 1, 5, u32::MAX];
    let size_of = |i: usize| (i * 37) % 3001;
    for round in 0..2 {
        thread::scope(|s| {
            s.spawn(|| {
                for i in 0..N {
                    let p = pattern(size_of(i), i);
                    if i % 2 == 0 {
                        a.send(TAGS[i % 6], &p).unwrap();
                    } else {
                        a.send_with(TAGS[i % 6], p.len(), |off, piece| {
                            piece.copy_from_slice(&p[off..off + piece.len()])
                        })
                        .unwrap();
                    }
                }
            });
            let mut buf = vec![0u8; 4096];
            for i in 0..N {
                let exp = pattern(size_of(i), i);
                let what = format!("{what} round {round} message {i}");
                let info = if i % 3 == 0 {
                    recv_pieces(&mut b, &exp, &what)
                } else {
                    let info = b.recv(&mut buf).unwrap();
                    assert_bytes(&buf[..info.len], &exp, &what);
                    info
                };
                assert_eq!(
                    info,
                    RecvInfo {
                        tag: TAGS[i % 6],
                        len: exp.len()
                    },
                    "{what}"
                );
            }
        });
        std::mem::swap(&mut a, &mut b);
    }
}

/// Every size of the ladder arrives byte-exact, once via `send`/`recv` and once via
/// `send_with`/`recv_with`. `top` bounds the sizes (the 64 MiB rung runs once per transport).
fn size_ladder<E: Endpoint + Send>(mut a: E, mut b: E, top: usize, what: &str) {
    let sizes: Vec<usize> = ladder().into_iter().filter(|&s| s <= top).collect();
    thread::scope(|s| {
        s.spawn(|| {
            for (i, &size) in sizes.iter().enumerate() {
                let p = pattern(size, 0);
                a.send(i as Tag, &p).unwrap();
                a.send_with(i as Tag | 1 << 31, size, |off, piece| {
                    piece.copy_from_slice(&p[off..off + piece.len()])
                })
                .unwrap();
            }
        });
        let mut buf = vec![0u8; top];
        for (i, &size) in sizes.iter().enumerate() {
            let exp = pattern(size, 0);
            let w = format!("{what} size {size} via recv");
            let info = b.recv(&mut buf).unwrap_or_else(|e| panic!("{w}: {e}"));
            assert_eq!(
                info,
                RecvInfo {
                    tag: i as Tag,
                    len: size
                },
                "{w}"
            );
            assert_bytes(&buf[..size], &exp, &w);
            let w = format!("{what} size {size} via recv_with");
            let info = recv_pieces(&mut b, &exp, &w);
            assert_eq!(
                info,
                RecvInfo {
                    tag: i as Tag | 1 << 31,
                    len: size
                },
                "{w}"
            );
        }
    });
}

/// Both sides `sendrecv` 64 MiB at once; then small and empty exchanges on the same stream.
fn sendrecv_both_ways<E: Endpoint + Send>(mut a: E, mut b: E, what: &str) {
    const BIG: usize = 64 << 20;
    let pa = pattern(BIG, 1);
    let pb = pattern(BIG - 3, 2);
    thread::scope(|s| {
        s.spawn(|| {
            let mut buf = vec![0u8; BIG];
            let info = a.sendrecv(7, &pa, &mut buf).unwrap();
            assert_eq!(
                info,
                RecvInfo {
                    tag: 9,
                    len: BIG - 3
                },
                "{what}"
            );
            assert_bytes(&buf[..BIG - 3], &pb, what);
            let info = a.sendrecv(70, b"ping", &mut buf[..10]).unwrap();
            assert_eq!(info, RecvInfo { tag: 90, len: 4 }, "{what}");
            assert_eq!(&buf[..4], b"pong");
            let info = a.sendrecv(71, &[], &mut []).unwrap();
            assert_eq!(info, RecvInfo { tag: 91, len: 0 }, "{what}");
            // Against a peer that does recv then send.
            let info = a.sendrecv(72, &pa[..100_000], &mut buf).unwrap();
            assert_eq!(info, RecvInfo { tag: 92, len: 1000 }, "{what}");
            assert_bytes(&buf[..1000], &pb[..1000], what);
        });
        let mut buf = vec![0u8; BIG];
        let info = b.sendrecv(9, &pb, &mut buf).unwrap();
        assert_eq!(info, RecvInfo { tag: 7, len: BIG }, "{what}");
        assert_bytes(&buf, &pa, what);
        let info = b.sendrecv(90, b"pong", &mut buf[..4]).unwrap();
        assert_eq!(info, RecvInfo { tag: 70, len: 4 }, "{what}");
        assert_eq!(&buf[..4], b"ping");
        let info = b.sendrecv(91, &[], &mut buf[..0]).unwrap();
        assert_eq!(info, RecvInfo { tag: 71, len: 0 }, "{what}");
        let info = b.recv(&mut buf).unwrap();
        assert_eq!(
            info,
            RecvInfo {
                tag: 72,
                len: 100_000
            },
            "{what}"
        );
        assert_bytes(&buf[..100_000], &pa[..100_000], what);
        b.send(92, &pb[..1000]).unwrap();
    });
}

/// A message longer than the receive buffer is consumed whole and the next one is intact, for
/// `recv` and for `sendrecv`.
fn truncated_keeps_stream<E: Endpoint + Send>(mut a: E, mut b: E, what: &str) {
    let sizes = [100_000usize, 65_537, 10, 300_000, 5, 1025, 1024];
    thread::scope(|s| {
        s.spawn(|| {
            for (i, &n) in sizes.iter().enumerate() {
                let p = pattern(n, i);
                if i == 3 {
                    a.send_with(i as Tag, n, |off, piece| {
                        piece.copy_from_slice(&p[off..off + piece.len()])
                    })
                    .unwrap();
                } else {
                    a.send(i as Tag, &p).unwrap();
                }
            }
            let mut buf = [0u8; 16];
            let info = a.sendrecv(40, &pattern(3000, 40), &mut buf).unwrap();
            assert_eq!(info, RecvInfo { tag: 41, len: 7 }, "{what}");
            assert_eq!(&buf[..7], &pattern(7, 41)[..]);
        });
        let mut buf = vec![0u8; 1024];
        for (i, &n) in sizes.iter().enumerate() {
            let r = b.recv(&mut buf);
            if n > 1024 {
                match r {
                    Err(TransportError::Truncated { len, cap }) => {
                        assert_eq!((len, cap), (n, 1024), "{what} message {i}")
                    }
                    other => panic!("{what} message {i}: expected Truncated, got {other:?}"),
                }
            } else {
                assert_eq!(
                    r.unwrap(),
                    RecvInfo {
                        tag: i as Tag,
                        len: n
                    },
                    "{what} message {i}"
                );
                assert_bytes(&buf[..n], &pattern(n, i), what);
            }
        }
        match b.sendrecv(41, &pattern(7, 41), &mut buf[..100]) {
            Err(TransportError::Truncated {
                len: 3000,
                cap: 100,
            }) => {}
            other => panic!("{what}: expected Truncated from sendrecv, got {other:?}"),
        }
        // Still in sync after the truncated sendrecv.
        b.send(50, b"after").unwrap();
    });
    let mut buf = [0u8; 8];
    assert_eq!(
        a.recv(&mut buf).unwrap(),
        RecvInfo { tag: 50, len: 5 },
        "{what}"
    );
    assert_eq!(&buf[..5], b"after");
}

/// Each thread runs send/recv, send_with/recv_with (multi-chunk) and sendrecv in a ping-pong;
/// after warm-up, not one byte is allocated on either thread.
fn no_alloc_steady_state<E: Endpoint + Send>(mut a: E, mut b: E, what: &str) {
    fn rounds<E: Endpoint>(e: &mut E, first: bool, n: usize) -> u64 {
        let small = pattern(1024, 0);
        let big = pattern(600_000, 0);
        let mut buf = vec![0u8; 600_000];
        let mut go = |count: usize| {
            for _ in 0..count {
                if first {
                    e.send(1, &small).unwrap();
                    e.recv(&mut buf).unwrap();
                    e.send_with(2, big.len(), |o, p| p.copy_from_slice(&big[o..o + p.len()]))
                        .unwrap();
                    e.recv_with(|f| assert!(f.data.len() <= READ_BUF_LEN))
                        .unwrap();
                } else {
                    e.recv(&mut buf).unwrap();
                    e.send(1, &small).unwrap();
                    e.recv_with(|f| assert!(f.data.len() <= READ_BUF_LEN))
                        .unwrap();
                    e.send_with(2, big.len(), |o, p| p.copy_from_slice(&big[o..o + p.len()]))
                        .unwrap();
                }
                let info = e.sendrecv(3, &small, &mut buf).unwrap();
                assert_eq!(info.len, 1024);
            }
        };
        go(5);
        let before = allocated_here();
        go(n);
        allocated_here() - before
    }
    thread::scope(|s| {
        let h = s.spawn(|| rounds(&mut a, true, 100));
        let here = rounds(&mut b, false, 100);
        assert_eq!(
            here, 0,
            "{what}: bytes allocated in steady state (receiver side)"
        );
        assert_eq!(
            h.join().unwrap(),
            0,
            "{what}: bytes allocated in steady state (sender side)"
        );
    });
}

// ---------------------------------------------------------------------------------------------
// Bodies with a raw peer

/// The header on the wire is exactly `{len u64 LE, tag u32 LE, "1MPC"}` + payload, whichever
/// send flavor produced it; a frame written in dribbles is reassembled.
fn wire_format<E: Endpoint, R: Read + Write + Send>(mut ep: E, mut raw: R, what: &str) {
    let mut exp = vec![5, 0, 0, 0, 0, 0, 0, 0, 0xD4, 0xC3, 0xB2, 0xA1];
    exp.extend_from_slice(b"1MPC");
    exp.extend_from_slice(b"hello");
    ep.send(0xA1B2_C3D4, b"hello").unwrap();
    ep.send_with(0xA1B2_C3D4, 5, |_, p| p.copy_from_slice(b"hello"))
        .unwrap();
    let mut got = [0u8; 42];
    raw.read_exact(&mut got).unwrap();
    assert_eq!(&got[..21], &exp[..], "{what}: send");
    assert_eq!(&got[21..], &exp[..], "{what}: send_with");

    // Hand-made frames in small writes: the header itself is split across reads.
    let p = pattern(200_000, 9);
    let mut bytes = frame(77, b"dribble");
    bytes.extend(frame(78, &p));
    bytes.extend(frame(79, b""));
    thread::scope(|s| {
        s.spawn(|| {
            for (i, chunk) in bytes.chunks(3).take(12).enumerate() {
                raw.write_all(chunk).unwrap();
                raw.flush().unwrap();
                thread::sleep(Duration::from_millis(1 + i as u64 % 2));
            }
            for chunk in bytes[36..].chunks(7919) {
                raw.write_all(chunk).unwrap();
            }
        });
        let mut buf = vec![0u8; 200_000];
        assert_eq!(
            ep.recv(&mut buf).unwrap(),
            RecvInfo { tag: 77, len: 7 },
            "{what}"
        );
        assert_eq!(&buf[..7], b"dribble");
        let info = recv_pieces(&mut ep, &p, what);
        assert_eq!(info.tag, 78);
        assert_eq!(
            ep.recv(&mut buf).unwrap(),
            RecvInfo { tag: 79, len: 0 },
            "{what}"
        );
    });
}

/// A header split across the end of the 64 KiB read buffer is carried over correctly.
fn framing_across_buffer_end<E: Endpoint + AsRawFd, R: Write + Send>(
    mut ep: E,
    mut raw: R,
    what: &str,
) {
    // First message fills the buffer but 8 bytes, so the next header straddles its end.
    let sizes = [
        READ_BUF_LEN - HEADER_LEN - 8,
        10,
        2 * READ_BUF_LEN,
        3,
        READ_BUF_LEN - 40,
        0,
        1,
    ];
    let mut bytes = Vec::new();
    for (i, &n) in sizes.iter().enumerate() {
        bytes.extend(frame(i as Tag, &pattern(n, i)));
    }
    thread::scope(|s| {
        s.spawn(|| raw.write_all(&bytes).unwrap());
        // Wait until more than a buffer is queued, so the first read fills the buffer and the
        // second header straddles its end, whatever the scheduling.
        wait_queued(ep.as_raw_fd(), READ_BUF_LEN + HEADER_LEN, what);
        let mut buf = vec![0u8; 2 * READ_BUF_LEN];
        for (i, &n) in sizes.iter().enumerate() {
            let w = format!("{what} message {i}");
            if i % 2 == 0 {
                assert_eq!(
                    ep.recv(&mut buf).unwrap(),
                    RecvInfo {
                        tag: i as Tag,
                        len: n
                    },
                    "{w}"
                );
                assert_bytes(&buf[..n], &pattern(n, i), &w);
            } else {
                assert_eq!(
                    recv_pieces(&mut ep, &pattern(n, i), &w).tag,
                    i as Tag,
                    "{w}"
                );
            }
        }
    });
}

/// Waits until at least `n` bytes are queued for reading on `fd`.
fn wait_queued(fd: RawFd, n: usize, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let mut queued: libc::c_int = 0;
        // SAFETY: FIONREAD writes one c_int through the pointer, which is valid for the call.
        let r = unsafe { libc::ioctl(fd, libc::FIONREAD, &mut queued) };
        assert_eq!(
            r,
            0,
            "{what}: FIONREAD: {}",
            std::io::Error::last_os_error()
        );
        if queued as usize >= n {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: only {queued} bytes queued"
        );
        thread::sleep(Duration::from_millis(1));
    }
}

#[derive(Debug, Clone, Copy)]
enum Via {
    Recv,
    RecvWith,
    SendRecv,
}

fn receive<E: Endpoint>(ep: &mut E, via: Via) -> Result<RecvInfo, TransportError> {
    let mut buf = vec![0u8; 2 << 20];
    match via {
        Via::Recv => ep.recv(&mut buf),
        Via::RecvWith => ep.recv_with(|_| {}),
        Via::SendRecv => ep.sendrecv(1, b"x", &mut buf),
    }
}

#[track_caller]
fn expect_closed(r: Result<RecvInfo, TransportError>, peer: &str, mid: bool, what: &str) {
    match r {
        Err(TransportError::PeerClosed {
            peer: p,
            mid_message,
        }) => {
            assert_eq!(p, peer, "{what}: the error names the peer");
            assert_eq!(mid_message, mid, "{what}: mid_message");
        }
        other => panic!("{what}: expected PeerClosed, got {other:?}"),
    }
}

/// A peer that dies mid-message (after a header for 1 MiB and 100 bytes, or half a header) is
/// reported promptly as PeerClosed{mid_message: true}; one that closes between messages as
/// PeerClosed{mid_message: false}.
fn peer_closes<E: Endpoint, R: Write>(mk: impl Fn(EndpointConfig) -> (E, R), what: &str) {
    for mode in MODES {
        for via in [Via::Recv, Via::RecvWith, Via::SendRecv] {
            let w = format!("{what}/{mode} via {via:?}");
            let (mut ep, mut raw) = mk(cfg(mode));
            raw.write_all(&header(1 << 20, 4, MAGIC)).unwrap();
            raw.write_all(&[0xAB; 100]).unwrap();
            drop(raw);
            let t = Instant::now();
            let peer = ep.info().peer.clone();
            expect_closed(receive(&mut ep, via), &peer, true, &w);
            assert!(t.elapsed() < PROMPT, "{w}: took {:?}", t.elapsed());

            let (mut ep, mut raw) = mk(cfg(mode));
            raw.write_all(&header(1 << 20, 4, MAGIC)[..9]).unwrap();
            drop(raw);
            expect_closed(
                receive(&mut ep, via),
                &peer_of(&ep),
                true,
                &format!("{w} half header"),
            );

            let (mut ep, mut raw) = mk(cfg(mode));
            raw.write_all(&frame(6, b"last words")).unwrap();
            drop(raw);
            if !matches!(via, Via::SendRecv) {
                assert_eq!(
                    receive(&mut ep, via).unwrap(),
                    RecvInfo { tag: 6, len: 10 },
                    "{w}"
                );
                expect_closed(
                    receive(&mut ep, via),
                    &peer_of(&ep),
                    false,
                    &format!("{w} clean"),
                );
            }
        }
    }
}

fn peer_of<E: Endpoint>(e: &E) -> String {
    e.info().peer.clone()
}

/// A header announcing 2^63 bytes (or max + 1) is TooLarge, promptly, with nothing allocated;
/// one with a bad magic is Protocol.
fn bad_headers<E: Endpoint, R: Write>(mk: impl Fn(EndpointConfig) -> (E, R), what: &str) {
    for mode in MODES {
        for via in [Via::Recv, Via::RecvWith, Via::SendRecv] {
            for len in [1u64 << 63, MAX as u64 + 1] {
                let w = format!("{what}/{mode} via {via:?} len {len}");
                let (mut ep, mut raw) = mk(cfg(mode));
                raw.write_all(&header(len, 3, MAGIC)).unwrap();
                let mut buf = vec![0u8; 16];
                let t = Instant::now();
                let before = allocated_here();
                let r = match via {
                    Via::Recv => ep.recv(&mut buf),
                    Via::RecvWith => ep.recv_with(|_| panic!("no piece of a refused message")),
                    Via::SendRecv => ep.sendrecv(1, b"x", &mut buf),
                };
                let allocated = allocated_here() - before;
                match r {
                    Err(TransportError::TooLarge { peer, len: l, max }) => {
                        assert_eq!((peer.as_str(), l, max), (ep.info().peer.as_str(), len, MAX))
                    }
                    other => panic!("{w}: expected TooLarge, got {other:?}"),
                }
                assert!(allocated < 1024, "{w}: allocated {allocated} bytes");
                assert!(t.elapsed() < PROMPT, "{w}");
                drop(raw);
            }

            let w = format!("{what}/{mode} via {via:?} bad magic");
            let (mut ep, mut raw) = mk(cfg(mode));
            raw.write_all(&header(5, 3, 0xDEAD_BEEF)).unwrap();
            raw.write_all(b"hello").unwrap();
            match receive(&mut ep, via) {
                Err(TransportError::Protocol { peer, what: msg }) => {
                    assert_eq!(peer, ep.info().peer, "{w}");
                    assert!(
                        msg.contains("magic") && msg.contains("deadbeef"),
                        "{w}: {msg}"
                    );
                }
                other => panic!("{w}: expected Protocol, got {other:?}"),
            }

            // Someone speaking HTTP at us.
            let (mut ep, mut raw) = mk(cfg(mode));
            raw.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
            assert!(
                matches!(receive(&mut ep, via), Err(TransportError::Protocol { .. })),
                "{w}: HTTP"
            );
        }
    }
}

/// A silent (but connected) peer gives Timeout after the idle timeout, for receives, for
/// `sendrecv`, and for a send that fills the socket buffers.
fn silent_peer<E: Endpoint, R>(mk: impl Fn(EndpointConfig) -> (E, R), what: &str) {
    let idle = Duration::from_millis(300);
    for mode in MODES {
        let c = EndpointConfig {
            idle_timeout: idle,
            ..cfg(mode)
        };
        for via in 0..4 {
            let w = format!("{what}/{mode} case {via}");
            let (mut ep, raw) = mk(c);
            let t = Instant::now();
            let r = match via {
                0 => ep.recv(&mut [0u8; 8]),
                1 => ep.recv_with(|_| {}),
                2 => ep.sendrecv(1, b"x", &mut [0u8; 8]),
                _ => ep
                    .send(1, &vec![0u8; MAX])
                    .map(|()| RecvInfo { tag: 0, len: 0 }),
            };
            let took = t.elapsed();
            match r {
                Err(TransportError::Timeout { peer, secs }) => {
                    assert_eq!((peer.as_str(), secs), (ep.info().peer.as_str(), 0), "{w}")
                }
                other => panic!("{w}: expected Timeout, got {other:?}"),
            }
            assert!(
                took >= idle - Duration::from_millis(20),
                "{w}: gave up early: {took:?}"
            );
            assert!(
                took < idle + Duration::from_secs(3),
                "{w}: gave up late: {took:?}"
            );
            drop(raw);
        }
    }
}

/// Sends beyond max_message are refused before anything reaches the wire.
fn send_too_large<E: Endpoint + Send>(mut a: E, mut b: E, what: &str) {
    let data = pattern(1001, 0);
    match a.send(1, &data) {
        Err(TransportError::SendTooLarge {
            len: 1001,
            max: 1000,
        }) => {}
        other => panic!("{what}: send: {other:?}"),
    }
    match a.send_with(1, 1001, |_, _| panic!("fill must not run")) {
        Err(TransportError::SendTooLarge {
            len: 1001,
            max: 1000,
        }) => {}
        other => panic!("{what}: send_with: {other:?}"),
    }
    match a.sendrecv(1, &data, &mut [0u8; 10]) {
        Err(TransportError::SendTooLarge {
            len: 1001,
            max: 1000,
        }) => {}
        other => panic!("{what}: sendrecv: {other:?}"),
    }
    a.send(2, &data[..1000]).unwrap();
    let mut buf = [0u8; 1001];
    assert_eq!(
        b.recv(&mut buf).unwrap(),
        RecvInfo { tag: 2, len: 1000 },
        "{what}"
    );
    assert_bytes(&buf[..1000], &data[..1000], what);
}

// ---------------------------------------------------------------------------------------------
// The tests, once per transport

macro_rules! transport_tests {
    ($name:ident, $kind:expr, $pair:path, $raw:path) => {
        mod $name {
            use super::*;

            #[test]
            fn info_names_transport_mode_and_peer() {
                for mode in MODES {
                    let (a, b) = $pair(cfg(mode));
                    for e in [&a, &b] {
                        let i = e.info();
                        assert_eq!((i.transport, i.mode, i.max_message), ($kind, mode, MAX));
                        assert!(!i.peer.is_empty());
                    }
                    assert_eq!(a.config(), &cfg(mode));
                }
            }

            #[test]
            fn interleaved_tags_arrive_in_order() {
                for mode in MODES {
                    let (a, b) = $pair(cfg(mode));
                    order_and_tags(a, b, &format!("{}/{mode}", stringify!($name)));
                }
            }

            #[test]
            fn size_ladder_byte_exact() {
                // The 64 MiB rung once per transport (Block); the rest in both modes.
                for (mode, top) in [(Mode::Poll, 16 << 20), (Mode::Block, MAX)] {
                    let (a, b) = $pair(cfg(mode));
                    size_ladder(a, b, top, &format!("{}/{mode}", stringify!($name)));
                }
            }

            #[test]
            fn sendrecv_64mib_both_ways() {
                for mode in MODES {
                    let (a, b) = $pair(cfg(mode));
                    sendrecv_both_ways(a, b, &format!("{}/{mode}", stringify!($name)));
                }
            }

            #[test]
            fn truncated_leaves_stream_usable() {
                for mode in MODES {
                    let (a, b) = $pair(cfg(mode));
                    truncated_keeps_stream(a, b, &format!("{}/{mode}", stringify!($name)));
                }
            }

            #[test]
            fn steady_state_allocates_nothing() {
                for mode in MODES {
                    let (a, b) = $pair(cfg(mode));
                    no_alloc_steady_state(a, b, &format!("{}/{mode}", stringify!($name)));
                }
            }

            #[test]
            fn send_above_max_is_refused() {
                for mode in MODES {
                    let (a, b) = $pair(EndpointConfig {
                        max_message: 1000,
                        ..cfg(mode)
                    });
                    send_too_large(a, b, &format!("{}/{mode}", stringify!($name)));
                }
            }

            #[test]
            fn wire_format_is_exact() {
                for mode in MODES {
                    let (ep, raw) = $raw(cfg(mode));
                    wire_format(ep, raw, &format!("{}/{mode}", stringify!($name)));
                }
            }

            #[test]
            fn header_straddling_read_buffer() {
                for mode in MODES {
                    let (ep, raw) = $raw(cfg(mode));
                    framing_across_buffer_end(ep, raw, &format!("{}/{mode}", stringify!($name)));
                }
            }

            #[test]
            fn peer_closing_is_peer_closed() {
                peer_closes($raw, stringify!($name));
            }

            #[test]
            fn too_large_and_bad_magic() {
                bad_headers($raw, stringify!($name));
            }

            #[test]
            fn silent_peer_times_out() {
                silent_peer($raw, stringify!($name));
            }
        }
    };
}

transport_tests!(tcp_tests, TransportKind::Tcp, tcp_pair, tcp_raw);
transport_tests!(uds_tests, TransportKind::Uds, uds_pair, uds_raw);

// ---------------------------------------------------------------------------------------------
// Connection set-up and signals

#[test]
fn uds_listen_connect_accept_names_peer_process() {
    let path = std::env::temp_dir().join(format!("commperf-sockets-{}.sock", std::process::id()));
    let _ = std::fs::remove_file(&path);
    // The socket file goes with the test, also when it fails.
    struct Removed<'a>(&'a std::path::Path);
    impl Drop for Removed<'_> {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(self.0);
        }
    }
    let _removed = Removed(&path);
    let l = uds::listen(&path).unwrap();
    let mut a = uds::connect(&path, cfg(Mode::Block)).unwrap();
    let mut b = uds::accept(&l, cfg(Mode::Poll)).unwrap();
    let pid = std::process::id();
    assert_eq!(
        a.info().peer,
        format!("local peer process {pid} at {}", path.display())
    );
    assert_eq!(b.info().peer, format!("local peer process {pid}"));
    a.send(3, b"over a path").unwrap();
    let mut buf = [0u8; 32];
    assert_eq!(b.recv(&mut buf).unwrap(), RecvInfo { tag: 3, len: 11 });
    assert_eq!(&buf[..11], b"over a path");
}

#[test]
fn tcp_connect_refused_names_address() {
    let l = tcp::listen("127.0.0.1:0".parse().unwrap()).unwrap();
    let addr: SocketAddr = l.local_addr().unwrap();
    drop(l);
    match tcp::connect(addr, cfg(Mode::Poll)) {
        Err(TransportError::Io { op, cause: source }) => {
            assert_eq!(op, format!("connect to {addr}"));
            assert_eq!(source.kind(), std::io::ErrorKind::ConnectionRefused);
        }
        other => panic!("expected Io(connection refused), got {other:?}"),
    }
}

#[test]
fn tcp_sets_nodelay() {
    let (a, b) = tcp_pair(cfg(Mode::Block));
    assert!(a.get_ref().nodelay().unwrap());
    assert!(b.get_ref().nodelay().unwrap());
}

/// Sending to a peer that has gone is PeerClosed, never SIGPIPE: the default SIGPIPE action
/// (terminate) is restored for the duration, so a send without MSG_NOSIGNAL would kill the
/// test binary.
#[test]
fn send_to_dead_peer_is_peer_closed_not_sigpipe() {
    // SAFETY: changing a signal disposition to SIG_DFL is always valid; every socket write in
    // this binary to a possibly closed peer goes through the endpoint (or std's TcpStream,
    // which also uses MSG_NOSIGNAL).
    let old = unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    fn check<E: Endpoint, R>(mut ep: E, raw: R, what: &str) {
        drop(raw);
        let peer = ep.info().peer.clone();
        let data = pattern(10_000, 0);
        // The first sends may still be accepted (TCP learns of the close from the RST its
        // first send provokes); a peer that stays "alive" for 10 s is a failure.
        let deadline = Instant::now() + Duration::from_secs(10);
        for i in 0.. {
            let r = if i % 2 == 0 {
                ep.send(1, &data)
            } else {
                ep.send_with(1, data.len(), |o, p| {
                    p.copy_from_slice(&data[o..o + p.len()])
                })
            };
            match r {
                Ok(()) if Instant::now() < deadline => thread::sleep(Duration::from_millis(5)),
                Ok(()) => panic!("{what}: sends to a closed peer keep succeeding"),
                Err(TransportError::PeerClosed { peer: p, .. }) => {
                    assert_eq!(p, peer, "{what}");
                    break;
                }
                Err(e) => panic!("{what}: expected PeerClosed, got {e:?}"),
            }
        }
    }
    for mode in MODES {
        let (ep, raw) = tcp_raw(cfg(mode));
        check(ep, raw, &format!("tcp/{mode}"));
        let (ep, raw) = uds_raw(cfg(mode));
        check(ep, raw, &format!("uds/{mode}"));
    }
    // SAFETY: restores the disposition saved above.
    unsafe { libc::signal(libc::SIGPIPE, old) };
}
