use super::cq::*;
use super::endpoint::*;
use super::ring::*;
use super::segment::*;
use crate::cq::CompletionQueue;
use crate::endpoint::copy_into;
use crate::{Endpoint, EndpointConfig, Tag, TransportError};
use commperf_core::Mode;
use std::time::Duration;

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

/// The sender cuts each message as its fragment plan says (the receiver sees the pieces as they
/// lie in the ring): whole up to the short-path length, the octave's fragment above it, the
/// tail shorter; `set_fragments(None)` goes back to the segment's fixed size.
#[test]
fn messages_are_cut_as_the_fragment_plan_says() {
    let cfg = EndpointConfig {
        max_message: 1 << 20,
        ..EndpointConfig::default()
    };
    let mut plan = crate::FragmentPlan::fixed(8192);
    plan.whole_up_to = 3000;
    plan.by_octave[16] = 12_345; // 64 KiB .. 128 KiB
    let opts = ShmOptions {
        frag_bytes: 16 << 10,
        fragments: Some(plan),
        ..ShmOptions::default()
    };
    let (mut a, mut b) = pair(cfg, opts).unwrap();
    let pieces = |a: &mut ShmEndpoint, b: &mut ShmEndpoint, len: usize| {
        let data: Vec<u8> = (0..len).map(|i| (i * 7) as u8).collect();
        a.send(1, &data).unwrap();
        let mut got = Vec::new();
        let mut back = Vec::new();
        b.recv_with(|f| {
            got.push(f.data.len());
            back.extend_from_slice(f.data);
        })
        .unwrap();
        assert_eq!(back, data, "{len} B intact");
        got
    };
    assert_eq!(pieces(&mut a, &mut b, 3000), vec![3000]);
    assert_eq!(
        pieces(&mut a, &mut b, 3001),
        vec![3001],
        "octave 11 says 8192"
    );
    assert_eq!(pieces(&mut a, &mut b, 20_000), vec![8192, 8192, 3616]);
    let mut want = vec![12_345; 8];
    want.push(100_000 - 8 * 12_345);
    assert_eq!(pieces(&mut a, &mut b, 100_000), want);
    a.set_fragments(None);
    assert_eq!(pieces(&mut a, &mut b, 20_000), vec![16384, 3616]);
}
