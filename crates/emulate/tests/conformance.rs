//! The conformance kit through `Emulated`, knobs at zero (pass-through) and set (delay queue,
//! spins, gaps): emulation changes when messages are delivered, never what is delivered.

use commperf_emulate::{EmulateConfig, Emulated, Knobs, Probe};
use commperf_transport::clock::{Clock, Timer};
use commperf_transport::conformance as kit;
use commperf_transport::sys::model::{self, LogGp, ModelParams};
use commperf_transport::sys::shm::{self, ShmOptions};
use commperf_transport::sys::{tcp, uds};
use commperf_transport::{Endpoint, EndpointConfig, Mode};
use std::sync::OnceLock;
use std::time::Duration;

fn cfg(mode: Mode) -> EndpointConfig {
    EndpointConfig {
        mode,
        max_message: 64 << 20,
        idle_timeout: Duration::from_secs(30),
        block_spins: 0,
    }
}

fn clock() -> Clock {
    static C: OnceLock<Clock> = OnceLock::new();
    *C.get_or_init(Clock::calibrate)
}

fn set() -> Knobs {
    Knobs {
        o_ns: 200.0,
        g_ns: 300.0,
        gap_per_byte_ns: 0.01,
        l_ns: 2000.0,
    }
}

fn emu<E: Probe>((a, b): (E, E), k: Knobs) -> (Emulated<E>, Emulated<E>) {
    let c = EmulateConfig::new(k);
    (
        Emulated::with_timer(a, c, clock()).unwrap(),
        Emulated::with_timer(b, c, clock()).unwrap(),
    )
}

fn model_emu(k: Knobs) -> (impl Endpoint + Send, impl Endpoint + Send) {
    let p = LogGp {
        o_s_ns: 300.0,
        o_r_ns: 200.0,
        g_ns: 100.0,
        gap_per_byte_ns: 0.1,
        l_ns: 1000.0,
        ..LogGp::default()
    };
    let (a, b) = model::pair(
        ModelParams {
            small: p,
            large: None,
        },
        cfg(Mode::Poll),
    );
    let c = EmulateConfig::new(k);
    let (ta, tb) = (a.timer(), b.timer());
    (
        Box::new(Emulated::with_timer(a, c, ta).unwrap()),
        Box::new(Emulated::with_timer(b, c, tb).unwrap()),
    )
}

fn shm_pair(mode: Mode) -> (shm::ShmEndpoint, shm::ShmEndpoint) {
    shm::pair(cfg(mode), ShmOptions::default()).expect("shm pair")
}

fn tcp_pair(mode: Mode) -> (tcp::TcpEndpoint, tcp::TcpEndpoint) {
    let l = tcp::listen("127.0.0.1:0".parse().unwrap()).expect("listen");
    let addr = l.local_addr().unwrap();
    let h = std::thread::spawn(move || tcp::accept(&l, cfg(mode)).expect("accept"));
    let a = tcp::connect(addr, cfg(mode)).expect("connect");
    (a, h.join().unwrap())
}

commperf_transport::conformance_tests!(model_zero, model_emu(Knobs::default()), no_vectored);
commperf_transport::conformance_tests!(model_set, model_emu(set()), no_vectored);
commperf_transport::conformance_tests!(
    shm_zero,
    emu(shm_pair(Mode::Poll), Knobs::default()),
    no_vectored
);
commperf_transport::conformance_tests!(shm_set, emu(shm_pair(Mode::Poll), set()), no_vectored);
commperf_transport::conformance_tests!(
    shm_set_block,
    emu(shm_pair(Mode::Block), set()),
    no_vectored
);
commperf_transport::conformance_tests!(
    tcp_zero,
    emu(tcp_pair(Mode::Poll), Knobs::default()),
    no_vectored
);
commperf_transport::conformance_tests!(tcp_set, emu(tcp_pair(Mode::Poll), set()), no_vectored);
commperf_transport::conformance_tests!(
    uds_set,
    emu(uds::pair(cfg(Mode::Poll)).expect("uds pair"), set()),
    no_vectored
);

#[test]
fn vectored_send_through_emulation() {
    let (a, b) = emu(shm_pair(Mode::Poll), set());
    kit::vectored_send_integrity(a, b);
}

/// A message that arrived while the receiver was away (computing, outside the decorator) is
/// held ΔL from its arrival, not from when the receiver came back: over shm the sender's stamp
/// dates it. Over a socket, which has no side band, it is dated when seen, and held ΔL from
/// then: the difference is the point of the stamp.
#[test]
fn an_arrival_the_receiver_did_not_see_is_dated_by_the_senders_stamp() {
    // ΔL = 20 ms: a receive that dates the message by its stamp returns at once, one that
    // holds ΔL from when it saw it takes 20 ms; the bar between them, 5 ms, is a preemption
    // no short receive meets even on a loaded machine (at 4 ms with two CPU hogs and a build
    // beside the test the bar was 1 ms, and the sender's thread alone could start that late).
    const L_NS: f64 = 20e6;
    let k = Knobs {
        l_ns: L_NS,
        ..Knobs::default()
    };
    fn away<E: Probe + Send + 'static>((mut a, mut b): (Emulated<E>, Emulated<E>)) -> f64 {
        let c = clock();
        let t = std::thread::spawn(move || {
            a.send(1, &[7u8; 64]).unwrap();
            a
        });
        // Away for twice ΔL after the message left (the send has returned: the sender's
        // thread is joined first, however late the machine's load let it run), then receive it.
        let a = t.join().unwrap();
        std::thread::sleep(Duration::from_secs_f64(2.0 * L_NS / 1e9));
        let mut buf = [0u8; 64];
        let t0 = c.now_ns();
        let info = b.recv(&mut buf).unwrap();
        let took = c.now_ns() - t0;
        assert_eq!((info.len, buf[63]), (64, 7));
        drop(a);
        took
    }
    let shm_took = away(emu(shm_pair(Mode::Poll), k));
    assert!(
        shm_took < 0.25 * L_NS,
        "shm: the message was due {} ms ago, yet the receive took {:.2} ms",
        L_NS / 1e6,
        shm_took / 1e6
    );
    let tcp_took = away(emu(tcp_pair(Mode::Poll), k));
    assert!(
        tcp_took > 0.9 * L_NS,
        "tcp has no stamp: seen now, held ΔL from now ({:.2} ms)",
        tcp_took / 1e6
    );
}
