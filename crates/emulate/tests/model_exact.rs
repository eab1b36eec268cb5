//! The knob arithmetic, checked exactly: over the model transport (virtual time) each knob,
//! set alone, must move its own LogGP parameter by exactly the set amount, as recovered by the
//! same PRTT measurement `bench loggp` runs, and leave every other parameter exactly as it was.

use commperf_bench::loggp::{extract, prtt_pair, Piece, SizePrtt};
use commperf_emulate::{EmulateConfig, Emulated, Knob, Knobs};
use commperf_transport::sys::model::{self, LogGp, ModelParams};
use commperf_transport::EndpointConfig;

const BASE: LogGp = LogGp {
    o_s_ns: 300.0,
    o_r_ns: 400.0,
    g_ns: 900.0,
    gap_per_byte_ns: 0.05,
    l_ns: 1000.0,
    o_s_per_byte_ns: 0.0,
    o_r_per_byte_ns: 0.0,
};

fn measure(base: LogGp, knobs: Knobs, sizes: &[u64]) -> Vec<SizePrtt> {
    let cfg = EndpointConfig {
        max_message: 1 << 20,
        ..EndpointConfig::default()
    };
    let params = ModelParams {
        small: base,
        large: None,
    };
    let (a, b) = model::pair(params, cfg);
    let (ta, tb) = (a.timer(), b.timer());
    let ec = EmulateConfig::new(knobs);
    let mut a = Emulated::with_timer(a, ec, ta.clone()).unwrap();
    let b = Emulated::with_timer(b, ec, tb.clone()).unwrap();
    prtt_pair(&mut a, &ta, b, tb, sizes, 1 << 20).unwrap()
}

fn fit(knobs: Knobs) -> Piece {
    fit_of(BASE, knobs)
}

fn fit_of(base: LogGp, knobs: Knobs) -> Piece {
    let sizes: Vec<u64> = (0..=14).map(|p| 1u64 << p).collect();
    let f = extract(&measure(base, knobs, &sizes)).expect("fit");
    assert_eq!(f.pieces.len(), 1, "{:?}", f.pieces);
    f.pieces[0].clone()
}

fn exact(got: Option<f64>, want: f64, what: &str) {
    let got = got.unwrap_or_else(|| panic!("{what}: absent, want {want}"));
    assert!(
        (got - want).abs() <= 1e-6 * want.abs().max(1.0),
        "{what}: got {got}, want {want}"
    );
}

/// The model with the knob's amount added to its own parameter(s).
fn raised(knob: Knob, v: f64) -> LogGp {
    let mut m = BASE;
    match knob {
        Knob::O => (m.o_s_ns, m.o_r_ns) = (m.o_s_ns + v, m.o_r_ns + v),
        Knob::LowerG => m.g_ns += v,
        Knob::UpperG => m.gap_per_byte_ns += v,
        Knob::L => m.l_ns += v,
    }
    m
}

/// Emulating a knob over the model measures exactly what the model with that parameter raised
/// measures, whatever the setting (also where the PRTT method itself cannot separate the
/// parameters, e.g. an overhead above the gap: then both agree on the same mixture).
fn same_as_raised_model(knob: Knob, v: f64) {
    let e = fit(Knobs::only(knob, v));
    let m = fit_of(raised(knob, v), Knobs::default());
    let what = |name: &str| format!("{name} with {knob} = {v}, emulated against raised model");
    let pairs = [
        ("o_s", e.o_s_ns, m.o_s_ns),
        ("o_r", e.o_r_ns, m.o_r_ns),
        ("g", e.g_ns, m.g_ns),
        ("G", e.gap_per_byte_ns, m.gap_per_byte_ns),
        ("L", e.l_ns, m.l_ns),
        ("O_s", e.o_s_per_byte_ns, m.o_s_per_byte_ns),
        ("O_r", e.o_r_per_byte_ns, m.o_r_per_byte_ns),
    ];
    for (name, got, want) in pairs {
        match want {
            Some(w) => exact(got, w, &what(name)),
            None => assert_eq!(got, None, "{}", what(name)),
        }
    }
}

/// The parameters a knob should give where PRTT separates them (overheads below the gap, gap
/// below a round trip): the model's plus the knob, on its own parameter(s).
fn check(knob: Knob, v: f64) {
    same_as_raised_model(knob, v);
    let p = fit(Knobs::only(knob, v));
    let d = |k: Knob| if k == knob { v } else { 0.0 };
    let what = |name: &str| format!("{name} with {knob} = {v}");
    exact(p.o_s_ns, BASE.o_s_ns + d(Knob::O), &what("o_s"));
    exact(p.o_r_ns, BASE.o_r_ns + d(Knob::O), &what("o_r"));
    exact(p.g_ns, BASE.g_ns + d(Knob::LowerG), &what("g"));
    exact(
        p.gap_per_byte_ns,
        BASE.gap_per_byte_ns + d(Knob::UpperG),
        &what("G"),
    );
    exact(p.l_ns, BASE.l_ns + d(Knob::L), &what("L"));
}

#[test]
fn zero_knobs_recover_the_model() {
    let p = fit(Knobs::default());
    exact(p.o_s_ns, BASE.o_s_ns, "o_s");
    exact(p.l_ns, BASE.l_ns, "L");
}

#[test]
fn overhead_knob_moves_o_s_and_o_r_only() {
    for v in [100.0, 250.0, 450.0] {
        check(Knob::O, v);
    }
    // Beyond the gap, the stream becomes CPU-bound: exactly as on the raised model.
    same_as_raised_model(Knob::O, 5000.0);
}

#[test]
fn gap_knob_moves_g_only() {
    for v in [100.0, 1000.0, 2000.0] {
        check(Knob::LowerG, v);
    }
    // Beyond a round trip (900 + 5000 > 3400 ns) the ping-pong itself is paced by g, so
    // PRTT(1) no longer gives the latency and o_r and L come out as a mixture. The raised
    // model paces only sends, the knob receptions too (LogP's g), so their mixtures differ;
    // g and G themselves still move exactly.
    let p = fit(Knobs::only(Knob::LowerG, 5000.0));
    exact(
        p.g_ns,
        BASE.g_ns + 5000.0,
        "g with g = 5000 (beyond a round trip)",
    );
    exact(p.gap_per_byte_ns, BASE.gap_per_byte_ns, "G with g = 5000");
    exact(p.o_s_ns, BASE.o_s_ns, "o_s with g = 5000");
}

#[test]
fn gap_per_byte_knob_moves_big_g_only() {
    for v in [0.01, 0.1, 1.0] {
        check(Knob::UpperG, v);
    }
}

#[test]
fn latency_knob_moves_l_only() {
    for v in [100.0, 1000.0, 20000.0] {
        check(Knob::L, v);
    }
}

/// A stream bound by the receiver, as shm's is (its receive copy is the slower one): the
/// stream's g + G·s is the receiver's o_r + O_r·s, not the NIC's. Martin's g and G add to the
/// stream's bottleneck (there the NIC's transmit loop); here both ends are paced, so the knob
/// still adds exactly: g + G·s + Δg (+ ΔG·s), and nothing else moves. A delay taken only at the
/// sender would give max(NIC + Δg, receiver): at Δg = 1000 ns that is 1300 + 0.05·s against
/// 400 + 0.2·s, a fitted G of about half (the first calibration's shm failure).
const RECEIVER_BOUND: LogGp = LogGp {
    o_s_ns: 200.0,
    o_r_ns: 400.0,
    g_ns: 300.0,
    gap_per_byte_ns: 0.05,
    l_ns: 1000.0,
    o_s_per_byte_ns: 0.0,
    o_r_per_byte_ns: 0.2,
};

#[test]
fn gap_knobs_add_to_a_receiver_bound_stream() {
    let base = fit_of(RECEIVER_BOUND, Knobs::default());
    // The bare stream is the receiver's: g = o_r, G = O_r.
    exact(base.g_ns, 400.0, "bare g (receiver-bound)");
    exact(base.gap_per_byte_ns, 0.2, "bare G (receiver-bound)");
    for (knob, v) in [
        (Knob::LowerG, 1000.0),
        (Knob::LowerG, 2000.0),
        (Knob::UpperG, 0.1),
    ] {
        let p = fit_of(RECEIVER_BOUND, Knobs::only(knob, v));
        let what = |name: &str| format!("{name} with {knob} = {v} over a receiver-bound stream");
        let (dg, dbig) = if knob == Knob::LowerG {
            (v, 0.0)
        } else {
            (0.0, v)
        };
        exact(p.g_ns, 400.0 + dg, &what("g"));
        exact(p.gap_per_byte_ns, 0.2 + dbig, &what("G"));
        exact(p.o_s_ns, base.o_s_ns.unwrap(), &what("o_s"));
        exact(p.o_r_ns, base.o_r_ns.unwrap(), &what("o_r"));
        exact(
            p.o_r_per_byte_ns,
            base.o_r_per_byte_ns.unwrap(),
            &what("O_r"),
        );
        exact(p.l_ns, base.l_ns.unwrap(), &what("L"));
    }
}
