//! The conformance kit: one set of expectations that every realization, in both completion
//! modes, must meet (ripgrep's one-expectation-every-path idea). Realizations and, later,
//! decorators instantiate it from their tests with a factory for a connected pair.
//!
//! Every check asserts exact bytes, tags and lengths, so a realization that reorders, truncates,
//! mixes tags or corrupts a byte fails with a message saying where.

use crate::{Endpoint, Fragment, TransportError, VectoredSend};
use std::thread;

/// Sizes every realization must carry, 0 B to 64 MiB: powers of two plus awkward odd sizes.
pub fn size_ladder() -> Vec<usize> {
    let mut v: Vec<usize> = vec![0];
    let mut s = 1;
    while s <= 64 << 20 {
        v.push(s);
        s *= 2;
    }
    v.extend([3, 31, 33, 1000, 4095, 65537, (1 << 20) + 7]);
    v.sort_unstable();
    v
}

/// The byte at `offset` of the test message of `size` bytes with sequence number `seq`.
#[inline]
pub fn pattern(seq: u64, size: usize, offset: usize) -> u8 {
    (offset as u64)
        .wrapping_mul(31)
        .wrapping_add(size as u64)
        .wrapping_add(seq.wrapping_mul(7)) as u8
}

/// Fills `buf` with the pattern for message `seq`.
pub fn fill(buf: &mut [u8], seq: u64) {
    let n = buf.len();
    for (i, b) in buf.iter_mut().enumerate() {
        *b = pattern(seq, n, i);
    }
}

/// Index of the first byte of `buf` that differs from the pattern, if any.
pub fn first_mismatch(buf: &[u8], seq: u64) -> Option<usize> {
    let n = buf.len();
    buf.iter()
        .enumerate()
        .position(|(i, b)| *b != pattern(seq, n, i))
}

fn run_pair<A, B, FA, FB>(a: A, b: B, fa: FA, fb: FB)
where
    A: Endpoint + Send + 'static,
    B: Endpoint + Send + 'static,
    FA: FnOnce(A) + Send + 'static,
    FB: FnOnce(B) + Send + 'static,
{
    let h = thread::spawn(move || fb(b));
    fa(a);
    h.join()
        .expect("peer side of the conformance check panicked");
}

/// Messages with interleaved tags arrive in send order, each with its own tag and payload.
pub fn order_and_tags<A, B>(a: A, b: B)
where
    A: Endpoint + Send + 'static,
    B: Endpoint + Send + 'static,
{
    const N: u64 = 2000;
    run_pair(
        a,
        b,
        |mut a| {
            let mut buf = vec![0u8; 300];
            for i in 0..N {
                let len = (i % 300) as usize;
                fill(&mut buf[..len], i);
                a.send((i % 3) as u32 + 10, &buf[..len]).expect("send");
            }
            // The peer echoes a summary: proves it saw everything before we drop.
            let n = a.recv(&mut buf).expect("recv summary");
            assert_eq!(n.tag, 99);
            assert_eq!(&buf[..8], &N.to_le_bytes());
        },
        |mut b| {
            let mut buf = vec![0u8; 300];
            for i in 0..N {
                let info = b.recv(&mut buf).expect("recv");
                assert_eq!(info.tag, (i % 3) as u32 + 10, "tag of message {i}");
                assert_eq!(info.len, (i % 300) as usize, "length of message {i}");
                assert_eq!(
                    first_mismatch(&buf[..info.len], i),
                    None,
                    "payload of message {i}"
                );
            }
            b.send(99, &N.to_le_bytes()).expect("send summary");
        },
    );
}

/// Every size of the ladder arrives byte-exact through the copying `recv`, then through the
/// lending `recv_with`, and is echoed back through the lending `send_with`.
pub fn size_ladder_integrity<A, B>(a: A, b: B)
where
    A: Endpoint + Send + 'static,
    B: Endpoint + Send + 'static,
{
    let sizes = size_ladder();
    let sizes2 = sizes.clone();
    run_pair(
        a,
        b,
        move |mut a| {
            let mut buf = vec![0u8; 64 << 20];
            for (i, &s) in sizes.iter().enumerate() {
                let seq = i as u64;
                fill(&mut buf[..s], seq);
                a.send(7, &buf[..s]).expect("send");
                a.send(8, &buf[..s]).expect("send again");
                // The echo comes back through send_with on the other side.
                buf[..s].fill(0);
                let info = a.recv(&mut buf).expect("recv echo");
                assert_eq!((info.tag, info.len), (9, s), "echo of size {s}");
                assert_eq!(
                    first_mismatch(&buf[..s], seq + 1000),
                    None,
                    "echo of size {s}"
                );
            }
        },
        move |mut b| {
            let mut buf = vec![0u8; 64 << 20];
            for (i, &s) in sizes2.iter().enumerate() {
                let seq = i as u64;
                let info = b.recv(&mut buf).expect("recv");
                assert_eq!((info.tag, info.len), (7, s));
                assert_eq!(first_mismatch(&buf[..s], seq), None, "size {s} via recv");
                let mut next = 0usize;
                let mut bad = None;
                let info = b
                    .recv_with(|f: Fragment<'_>| {
                        assert_eq!(f.offset, next, "pieces in order");
                        assert_eq!(f.total_len, s);
                        for (j, &x) in f.data.iter().enumerate() {
                            if bad.is_none() && x != pattern(seq, s, f.offset + j) {
                                bad = Some(f.offset + j);
                            }
                        }
                        next += f.data.len();
                    })
                    .expect("recv_with");
                assert_eq!(
                    (info.tag, info.len, next, bad),
                    (8, s, s, None),
                    "size {s} lent"
                );
                b.send_with(9, s, |off, piece| {
                    for (j, x) in piece.iter_mut().enumerate() {
                        *x = pattern(seq + 1000, s, off + j);
                    }
                })
                .expect("send_with");
            }
        },
    );
}

/// Both sides `sendrecv` at once with messages far larger than any internal buffer.
pub fn duplex_large<A, B>(a: A, b: B)
where
    A: Endpoint + Send + 'static,
    B: Endpoint + Send + 'static,
{
    fn side<E: Endpoint>(mut e: E, me: u64) {
        for &s in &[0usize, 1, 4096, 1 << 20, 64 << 20] {
            let mut out = vec![0u8; s];
            fill(&mut out, me * 100 + s as u64);
            let mut inb = vec![0u8; s];
            let info = e.sendrecv(me as u32, &out, &mut inb).expect("sendrecv");
            assert_eq!((info.tag, info.len), (1 - me as u32, s));
            assert_eq!(
                first_mismatch(&inb, (1 - me) * 100 + s as u64),
                None,
                "duplex {s}"
            );
        }
    }
    run_pair(a, b, |a| side(a, 0), |b| side(b, 1));
}

/// A message larger than the receive buffer is consumed whole and reported; the next message is
/// intact, so the stream stayed in step.
pub fn truncation_keeps_stream<A, B>(a: A, b: B)
where
    A: Endpoint + Send + 'static,
    B: Endpoint + Send + 'static,
{
    run_pair(
        a,
        b,
        |mut a| {
            let mut big = vec![0u8; 3 << 20];
            fill(&mut big, 5);
            a.send(1, &big).expect("send big");
            a.send(2, &big[..100]).expect("send small");
            let mut ack = [0u8; 1];
            a.recv(&mut ack).expect("ack");
        },
        |mut b| {
            let mut small = vec![0u8; 1000];
            match b.recv(&mut small) {
                Err(TransportError::Truncated { len, cap }) => {
                    assert_eq!((len, cap), (3 << 20, 1000))
                }
                other => panic!("expected Truncated, got {other:?}"),
            }
            let info = b.recv(&mut small).expect("next message");
            assert_eq!((info.tag, info.len), (2, 100));
            let mut want = vec![0u8; 3 << 20];
            fill(&mut want, 5);
            assert_eq!(&small[..100], &want[..100]);
            b.send(3, &[1]).expect("ack");
        },
    );
}

/// Sending beyond the negotiated maximum is refused before anything is sent.
pub fn send_too_large<E: Endpoint>(mut e: E) {
    let max = e.info().max_message;
    let r = e.send_with(0, max + 1, |_, _| panic!("must not be asked to fill"));
    assert!(
        matches!(r, Err(TransportError::SendTooLarge { len, max: m }) if len == max + 1 && m == max),
        "got {r:?}"
    );
}

/// The peer goes away (dropped) while we wait for a message: an error naming it, not a hang.
pub fn peer_closed_while_waiting<A, B>(a: A, b: B)
where
    A: Endpoint + Send + 'static,
    B: Endpoint + Send + 'static,
{
    run_pair(
        a,
        b,
        |mut a| {
            let mut buf = [0u8; 16];
            let start = std::time::Instant::now();
            let r = a.recv(&mut buf);
            assert!(
                matches!(&r, Err(e) if e.is_peer_gone()),
                "expected the peer to be reported gone, got {r:?}"
            );
            assert!(start.elapsed().as_secs() < 5, "took {:?}", start.elapsed());
        },
        |b| {
            thread::sleep(std::time::Duration::from_millis(50));
            drop(b);
        },
    );
}

/// A message gathered from scattered parts arrives as their exact concatenation: parts of
/// uneven sizes, empty parts, many parts (past the iovec limit of one `sendmsg`), large totals.
pub fn vectored_send_integrity<A, B>(a: A, b: B)
where
    A: Endpoint + VectoredSend + Send + 'static,
    B: Endpoint + Send + 'static,
{
    const CASES: [(usize, usize); 6] = [
        (0, 1),
        (1, 3),
        (100, 7),
        (65536, 64),
        (16 << 20, 64),
        (100_000, 200),
    ];
    run_pair(
        a,
        b,
        |mut a| {
            for (i, &(total, k)) in CASES.iter().enumerate() {
                let mut whole = vec![0u8; total];
                fill(&mut whole, i as u64);
                // Scatter: each part copied to its own allocation, with an empty part in between.
                let step = total.div_ceil(k).max(1);
                let owned: Vec<Vec<u8>> = whole.chunks(step).map(<[u8]>::to_vec).collect();
                let mut parts: Vec<&[u8]> = Vec::new();
                for (j, p) in owned.iter().enumerate() {
                    parts.push(p);
                    if j % 5 == 1 {
                        parts.push(&[]);
                    }
                }
                a.send_vectored(40 + i as u32, &parts)
                    .expect("send_vectored");
            }
            let mut ack = [0u8; 1];
            a.recv(&mut ack).expect("ack");
        },
        |mut b| {
            let mut buf = vec![0u8; 16 << 20];
            for (i, &(total, _)) in CASES.iter().enumerate() {
                let info = b.recv(&mut buf).expect("recv");
                assert_eq!((info.tag, info.len), (40 + i as u32, total), "case {i}");
                assert_eq!(first_mismatch(&buf[..total], i as u64), None, "case {i}");
            }
            b.send(1, &[1]).expect("ack");
        },
    );
}

/// One test module running the whole kit over a pair factory: `conformance_tests!(name,
/// make_pair())`, or `conformance_tests!(name, make_pair(), no_vectored)` for endpoints without
/// [`VectoredSend`]. The transports' own tests and each decorator's use it, so all of them hold
/// every endpoint to the same list of expectations.
#[macro_export]
macro_rules! conformance_tests {
    ($name:ident, $make:expr) => {
        $crate::conformance_tests!(@kit $name, $make, {
            #[test]
            fn vectored_send_integrity() {
                let (a, b) = $make;
                $crate::conformance::vectored_send_integrity(a, b);
            }
        });
    };
    ($name:ident, $make:expr, no_vectored) => {
        $crate::conformance_tests!(@kit $name, $make, {});
    };
    (@kit $name:ident, $make:expr, { $($extra:tt)* }) => {
        mod $name {
            use super::*;
            #[test]
            fn order_and_tags() {
                let (a, b) = $make;
                $crate::conformance::order_and_tags(a, b);
            }
            #[test]
            fn size_ladder_integrity() {
                let (a, b) = $make;
                $crate::conformance::size_ladder_integrity(a, b);
            }
            #[test]
            fn duplex_large() {
                let (a, b) = $make;
                $crate::conformance::duplex_large(a, b);
            }
            #[test]
            fn truncation_keeps_stream() {
                let (a, b) = $make;
                $crate::conformance::truncation_keeps_stream(a, b);
            }
            #[test]
            fn send_too_large() {
                let (a, _b) = $make;
                $crate::conformance::send_too_large(a);
            }
            #[test]
            fn peer_closed_while_waiting() {
                let (a, b) = $make;
                $crate::conformance::peer_closed_while_waiting(a, b);
            }
            $($extra)*
        }
    };
}
