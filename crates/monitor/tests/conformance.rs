//! The conformance kit over every realization, monitored on both ends: the monitor must not
//! change what the application sees (bytes, tags, lengths, truncation, errors, the maximum
//! message). The unmonitored runs of the same kit live in commperf-transport's tests; the model
//! transport, which has none there, runs both ways here.

use commperf_monitor::{MonitorConfig, Monitored, SideBandWire, TscClock, TRAILER};
use commperf_transport::sys::model::{self, LogGp, ModelParams};
use commperf_transport::sys::shm::{self, ShmOptions};
use commperf_transport::sys::uring::{self, UringOptions};
use commperf_transport::sys::{tcp, uds};
use commperf_transport::{Endpoint, EndpointConfig, Mode, SideBand};
use std::sync::OnceLock;
use std::time::Duration;

/// The kit sends up to 64 MiB; the inner endpoints carry the trailer on top.
fn cfg(mode: Mode, extra: usize) -> EndpointConfig {
    EndpointConfig {
        mode,
        max_message: (64 << 20) + extra,
        idle_timeout: Duration::from_secs(30),
        block_spins: 0,
    }
}

fn clock() -> TscClock {
    static C: OnceLock<TscClock> = OnceLock::new();
    *C.get_or_init(TscClock::calibrate)
}

fn mon<E: Endpoint>((a, b): (E, E)) -> (Monitored<E>, Monitored<E>) {
    (
        Monitored::with_clock(a, MonitorConfig::new(0, 1), clock()),
        Monitored::with_clock(b, MonitorConfig::new(1, 0), clock()),
    )
}

/// Both ends monitored with the stamp in the transport's header (no trailer: no extra room).
fn mon_side<E: Endpoint + SideBand>(
    (a, b): (E, E),
) -> (
    Monitored<E, TscClock, SideBandWire>,
    Monitored<E, TscClock, SideBandWire>,
) {
    (
        Monitored::with_sideband_clock(a, MonitorConfig::new(0, 1), clock()),
        Monitored::with_sideband_clock(b, MonitorConfig::new(1, 0), clock()),
    )
}

fn shm_pair_exact(mode: Mode, single_copy: Option<usize>) -> (shm::ShmEndpoint, shm::ShmEndpoint) {
    let o = ShmOptions {
        single_copy_from: single_copy,
        ..ShmOptions::default()
    };
    shm::pair(cfg(mode, 0), o).expect("shm pair")
}

fn model_pair(extra: usize) -> (model::ModelEndpoint, model::ModelEndpoint) {
    let p = LogGp {
        o_s_ns: 300.0,
        o_r_ns: 200.0,
        g_ns: 100.0,
        gap_per_byte_ns: 0.1,
        l_ns: 1000.0,
        ..LogGp::default()
    };
    model::pair(
        ModelParams {
            small: p,
            large: None,
        },
        cfg(Mode::Poll, extra),
    )
}

fn shm_pair(mode: Mode, single_copy: Option<usize>) -> (shm::ShmEndpoint, shm::ShmEndpoint) {
    let o = ShmOptions {
        single_copy_from: single_copy,
        ..ShmOptions::default()
    };
    shm::pair(cfg(mode, TRAILER), o).expect("shm pair")
}

fn tcp_pair(mode: Mode) -> (tcp::TcpEndpoint, tcp::TcpEndpoint) {
    let l = tcp::listen("127.0.0.1:0".parse().unwrap()).expect("listen");
    let addr = l.local_addr().unwrap();
    let h = std::thread::spawn(move || tcp::accept(&l, cfg(mode, TRAILER)).expect("accept"));
    let a = tcp::connect(addr, cfg(mode, TRAILER)).expect("connect");
    (a, h.join().unwrap())
}

commperf_transport::conformance_tests!(model_plain, model_pair(0));
commperf_transport::conformance_tests!(model_monitored, mon(model_pair(TRAILER)));
commperf_transport::conformance_tests!(shm_pipe_poll, mon(shm_pair(Mode::Poll, None)));
commperf_transport::conformance_tests!(shm_pipe_block, mon(shm_pair(Mode::Block, None)));
commperf_transport::conformance_tests!(shm_cma_poll, mon(shm_pair(Mode::Poll, Some(256 << 10))));
commperf_transport::conformance_tests!(shm_side_poll, mon_side(shm_pair_exact(Mode::Poll, None)));
commperf_transport::conformance_tests!(shm_side_block, mon_side(shm_pair_exact(Mode::Block, None)));
commperf_transport::conformance_tests!(
    shm_side_cma_poll,
    mon_side(shm_pair_exact(Mode::Poll, Some(256 << 10)))
);
commperf_transport::conformance_tests!(tcp_poll, mon(tcp_pair(Mode::Poll)));
commperf_transport::conformance_tests!(tcp_block, mon(tcp_pair(Mode::Block)));
commperf_transport::conformance_tests!(
    uds_poll,
    mon(uds::pair(cfg(Mode::Poll, TRAILER)).expect("uds pair"))
);
commperf_transport::conformance_tests!(
    uring_uds_poll,
    mon(uring::uds_pair(cfg(Mode::Poll, TRAILER), UringOptions::default()).expect("uring pair"))
);
commperf_transport::conformance_tests!(
    uring_uds_tiny_block,
    mon(uring::uds_pair(
        cfg(Mode::Block, TRAILER),
        UringOptions {
            sqpoll: false,
            send_buf_bytes: 1000,
            recv_buf_bytes: 333,
        }
    )
    .expect("uring pair"))
);

#[test]
fn an_unmonitored_peer_is_refused_with_a_clear_error() {
    let (a, b) = uds::pair(cfg(Mode::Poll, TRAILER)).unwrap();
    let mut plain = a;
    let mut m = Monitored::with_clock(b, MonitorConfig::new(1, 0), clock());
    plain.send(3, b"hello, no trailer here").unwrap();
    let e = m.recv(&mut [0u8; 64]).unwrap_err();
    assert!(e.to_string().contains("both ends must be monitored"), "{e}");
}

#[test]
fn a_peer_without_the_side_band_stamp_is_refused_with_a_clear_error() {
    // Unmonitored sender.
    let (mut plain, b) = shm_pair_exact(Mode::Poll, None);
    let mut m = Monitored::with_sideband_clock(b, MonitorConfig::new(1, 0), clock());
    plain.send(3, b"hello, no stamp here").unwrap();
    let e = m.recv(&mut [0u8; 64]).unwrap_err();
    assert!(e.to_string().contains("both ends must be monitored"), "{e}");
    // A sender monitored with the trailer: still no side-band stamp.
    let (a, b) = shm_pair(Mode::Poll, None);
    let mut t = Monitored::with_clock(a, MonitorConfig::new(0, 1), clock());
    let mut m = Monitored::with_sideband_clock(b, MonitorConfig::new(1, 0), clock());
    t.send(3, b"a trailer, not a side band").unwrap();
    let e = m.recv(&mut [0u8; 64]).unwrap_err();
    assert!(e.to_string().contains("both ends must be monitored"), "{e}");
}
