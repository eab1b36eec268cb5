//! Exact answers computed by hand.

use super::*;
use crate::topology::Crossbar;
use crate::workload::{OpKind, SeqProgram, WorkloadBuilder};

fn send(to: u32, bytes: u64) -> OpKind {
    OpKind::Send { to, tag: 0, bytes }
}
fn recv(from: u32, bytes: u64) -> OpKind {
    OpKind::Recv {
        from,
        tag: 0,
        bytes,
    }
}

/// Runs `ranks` (each a list of blocking operations) on a crossbar with Tcom = 1000 ns + 1 ns/B.
fn run(ranks: &[Vec<OpKind>], cfg: &PredictConfig) -> Prediction {
    run_full(ranks, cfg).prediction
}

fn run_full(ranks: &[Vec<OpKind>], cfg: &PredictConfig) -> Outcome {
    let mut b = WorkloadBuilder::new(ranks.len() as u32);
    for (r, ops) in ranks.iter().enumerate() {
        let mut p = SeqProgram::new();
        for &op in ops {
            p.blocking(op);
        }
        b.add_program(r as u32, &p).unwrap();
    }
    let f = Fixture::new(b.finish());
    predict(&f.inputs(), cfg).unwrap()
}

/// A workload on a crossbar of its size, Tcom = 1000 ns + 1 ns/B, and LogGP parameters
/// L = 1000, o = 100, g = 200 ns, G = 1 ns/B.
struct Fixture {
    w: Workload,
    net: Crossbar,
    map: RankMap,
    tcom: Tcom,
    loggp: LogGp,
}

impl Fixture {
    fn new(w: Workload) -> Self {
        let net = Crossbar::new(w.nranks());
        let map = RankMap::identity(w.nranks(), &net).unwrap();
        Fixture {
            w,
            net,
            map,
            tcom: Tcom::line(1000.0, 1.0),
            loggp: LogGp {
                L_ns: 1000.0,
                o_s_ns: 100.0,
                o_r_ns: 100.0,
                g_ns: 200.0,
                G_ns_per_byte: 1.0,
                O_ns_per_byte: 0.0,
            },
        }
    }

    fn inputs(&self) -> Inputs<'_> {
        Inputs {
            workload: &self.w,
            network: &self.net,
            rank_map: &self.map,
            tcom: &self.tcom,
            loggp: Some(&self.loggp),
            trace_name: "test",
            trace_format: "own",
            profile_name: "line",
        }
    }
}

#[test]
fn one_message_costs_tcom() {
    let p = run(
        &[vec![send(1, 1000)], vec![recv(0, 1000)]],
        &PredictConfig::default(),
    );
    assert_eq!(p.total_us, 2.0);
    assert_eq!(p.messages, 1);
}

#[test]
fn two_messages_sharing_a_link_share_its_bandwidth_not_their_latency() {
    // Each pays Tcom's 1000 ns intercept alone, then 1000 B at half the link: 1000 + 2000 ns.
    let p = run(
        &[
            vec![send(2, 1000)],
            vec![send(2, 1000)],
            vec![recv(0, 1000), recv(1, 1000)],
        ],
        &PredictConfig::default(),
    );
    assert_eq!(p.total_us, 3.0);
    // The receiver's downlink carried both, two at a time, while their bytes moved.
    let down = p.links.iter().find(|l| l.to == "h2").unwrap();
    assert_eq!(
        (down.max_contention, down.bytes, down.busy_us),
        (2, 2000.0, 2.0)
    );
    assert_eq!(p.bottlenecks[0], "s0->h2");
}

#[test]
fn an_8_to_1_incast_serializes_at_the_receivers_link() {
    let mut ranks: Vec<Vec<OpKind>> = (1..=8).map(|_| vec![send(0, 1000)]).collect();
    ranks.insert(0, (1..=8).map(|s| recv(s, 1000)).collect());
    let p = run(&ranks, &PredictConfig::default());
    // The latencies overlap; the 8 × 1000 B share the receiver's link: 1000 + 8000 ns.
    assert_eq!(p.total_us, 9.0);
    for r in &p.ranks[1..] {
        assert_eq!(r.finish_us, 9.0);
    }
}

#[test]
fn a_short_message_leaves_and_the_long_one_speeds_up() {
    // A: 1000 B, B: 3000 B into the same receiver. Both pay the 1000 ns latency alone, then move
    // bytes at half speed until A is done at 1000 + 2000 ns; B then has 2000 B left at full
    // speed, done at 5000 ns.
    let o = run_full(
        &[
            vec![send(2, 1000)],
            vec![send(2, 3000)],
            vec![recv(0, 1000), recv(1, 3000)],
        ],
        &PredictConfig {
            timeline: true,
            ..PredictConfig::default()
        },
    );
    assert_eq!(o.prediction.ranks[0].finish_us, 3.0);
    assert_eq!(o.prediction.ranks[1].finish_us, 5.0);
    let tl = o.timeline.unwrap();
    assert_eq!(tl.messages.len(), 2);
    assert_eq!(
        (tl.messages[0].start_ns, tl.messages[0].end_ns),
        (0.0, 3000.0)
    );
    assert_eq!(tl.messages[1].end_ns, 5000.0);
}

#[test]
fn disjoint_routes_do_not_contend() {
    let p = run(
        &[
            vec![send(1, 1000)],
            vec![recv(0, 1000)],
            vec![send(3, 1000)],
            vec![recv(2, 1000)],
        ],
        &PredictConfig::default(),
    );
    assert_eq!(p.total_us, 2.0);
}

#[test]
fn eager_messages_fly_before_the_receive_and_rendezvous_waits_for_it() {
    let ranks = [
        vec![send(1, 1000)],
        vec![OpKind::Calc { ns: 5000 }, recv(0, 1000)],
    ];
    let eager = run(&ranks, &PredictConfig::default());
    assert_eq!(
        (eager.ranks[0].finish_us, eager.ranks[1].finish_us),
        (2.0, 5.0)
    );
    let rndv = run(
        &ranks,
        &PredictConfig {
            eager_threshold_bytes: 999,
            ..PredictConfig::default()
        },
    );
    assert_eq!(
        (rndv.ranks[0].finish_us, rndv.ranks[1].finish_us),
        (7.0, 7.0)
    );
    // Rank 0 waited 5 µs for the receive, then communicated for 2.
    assert_eq!(
        (
            rndv.ranks[0].compute_us,
            rndv.ranks[0].comm_us,
            rndv.ranks[0].wait_us
        ),
        (0.0, 2.0, 5.0)
    );
    assert_eq!(
        (
            rndv.ranks[1].compute_us,
            rndv.ranks[1].comm_us,
            rndv.ranks[1].wait_us
        ),
        (5.0, 2.0, 0.0)
    );
}

#[test]
fn constant_background_load_halves_availability() {
    let p = run(
        &[vec![send(1, 1000)], vec![recv(0, 1000)]],
        &PredictConfig {
            background: Background::Const(0.5),
            ..PredictConfig::default()
        },
    );
    // The load takes bandwidth, not latency: 1000 + 1000 B at half speed.
    assert_eq!(p.total_us, 3.0);
    let k = p.knee.unwrap();
    // Peak 1 B/ns = 1e9 B/s, half left, 4096-byte packets.
    assert_eq!(k.capacity_pkts_per_s, 0.5e9 / 4096.0);
}

#[test]
fn exponential_background_is_seeded_and_slows_down() {
    let ranks = [vec![send(1, 100_000)], vec![recv(0, 100_000)]];
    let cfg = |seed| PredictConfig {
        background: Background::Exp {
            mean: 0.3,
            period_ns: 1000.0,
        },
        seed,
        ..PredictConfig::default()
    };
    let a = run(&ranks, &cfg(1));
    let b = run(&ranks, &cfg(1));
    let c = run(&ranks, &cfg(2));
    assert_eq!(a, b);
    assert_ne!(a.total_us, c.total_us);
    // Quiet: 101 µs. The load takes on average about 30 % of the bandwidth.
    assert!(a.total_us > 120.0 && a.total_us < 200.0, "{}", a.total_us);
}

#[test]
fn loggp_charges_overheads_gaps_and_latency() {
    // Two independent sends from rank 0 (GOAL-style, no dependency between them).
    let mut b = WorkloadBuilder::new(2);
    b.add_rank(0, &[send(1, 1000), send(1, 1000)], &[]).unwrap();
    b.add_rank(1, &[recv(0, 1000), recv(0, 1000)], &[]).unwrap();
    let f = Fixture::new(b.finish());
    let inputs = f.inputs();
    let cfg = PredictConfig {
        model: Model::LogGp,
        ..PredictConfig::default()
    };
    let p = predict(&inputs, &cfg).unwrap().prediction;
    // LogGOPSim's rules, s = 1000 B so (s − 1)·G = 999 ns. First send at 0: CPU to 100, NIC
    // to 0 + 200 + 999 = 1199, first byte at 0 + 100 + 1000 = 1100. The second waits for the
    // NIC: 1199, CPU to 1299, arrives 2299. The receiver takes the first at 1100: CPU to
    // 1100 + 100 + 999 = 2199, NIC to 1100 + 200 + 999 = 2299; the second at 2299, CPU to
    // 2299 + 100 + 999 = 3398.
    assert_eq!(p.ranks[1].finish_us, 3.398);
    assert_eq!(p.ranks[0].finish_us, 1.299);
    // Overhead is communication, not compute; the rest is waiting (for data, for the gap).
    assert_eq!((p.ranks[0].compute_us, p.ranks[0].comm_us), (0.0, 0.2));
    assert_eq!((p.ranks[1].compute_us, p.ranks[1].comm_us), (0.0, 2.198));
    assert!((p.ranks[1].wait_us - 1.2).abs() < 1e-9);
    assert!((p.ranks[0].wait_us - 1.099).abs() < 1e-9);
    assert!(p.links.is_empty() && p.knee.is_none());
}

#[test]
fn loggp_by_size_prices_each_message_with_its_sizes_parameters() {
    // 1000 B with the parameters from 512 B on (L 300, o 50, g 20, G 0.1 ns/B), then 100 B
    // with the fixture's. Without bounds, the fixture's alone.
    let mut b = WorkloadBuilder::new(2);
    b.add_rank(0, &[send(1, 1000), send(1, 100)], &[]).unwrap();
    b.add_rank(1, &[recv(0, 1000), recv(0, 100)], &[]).unwrap();
    let f = Fixture::new(b.finish());
    let big = LogGp {
        L_ns: 300.0,
        o_s_ns: 50.0,
        o_r_ns: 50.0,
        g_ns: 20.0,
        G_ns_per_byte: 0.1,
        O_ns_per_byte: 0.0,
    };
    let cfg = |by_size| PredictConfig {
        model: Model::LogGp,
        loggp_by_size: by_size,
        ..PredictConfig::default()
    };
    // Out of order, and a bound above every message: sorted, and never taken.
    let p = predict(&f.inputs(), &cfg(vec![(1 << 20, f.loggp), (512, big)]))
        .unwrap()
        .prediction;
    // First (1000 B, s − 1 = 999): CPU to 50, NIC to 20 + 99.9 = 119.9, first byte at 350.
    // Second (100 B) waits for the NIC: CPU 119.9 to 219.9, first byte at 119.9 + 100 + 1000
    // = 1219.9. The receiver takes the first at 350 (CPU to 350 + 50 + 99.9, NIC to 469.9),
    // the second at 1219.9: CPU to 1219.9 + 100 + 99 = 1418.9.
    assert!(
        (p.ranks[0].finish_us - 0.2199).abs() < 1e-9,
        "{:?}",
        p.ranks
    );
    assert!(
        (p.ranks[1].finish_us - 1.4189).abs() < 1e-9,
        "{:?}",
        p.ranks
    );
    // One set: CPU to 100, NIC to 1199, first byte at 1100; the second at 1199, CPU to 1299,
    // first byte at 2299. The receiver: CPU 1100 to 2199, NIC to 2299; then 2299 + 100 + 99.
    let one = predict(&f.inputs(), &cfg(Vec::new())).unwrap().prediction;
    assert_eq!(
        (one.ranks[0].finish_us, one.ranks[1].finish_us),
        (1.299, 2.498)
    );
}

#[test]
fn loggp_self_messages_cost_the_cpu_only_when_local() {
    // Rank 0 sends 1000 B to itself and receives it (o = 100, g = 200, L = 1000, G = 1 ns/B).
    let mut b = WorkloadBuilder::new(2);
    b.add_rank(0, &[send(0, 1000), recv(0, 1000)], &[]).unwrap();
    let f = Fixture::new(b.finish());
    let inputs = f.inputs();
    let at = |local, self_overheads| {
        let cfg = PredictConfig {
            model: Model::LogGp,
            local_self_messages: local,
            self_overheads,
            ..PredictConfig::default()
        };
        predict(&inputs, &cfg).unwrap().prediction.ranks[0].finish_us
    };
    // LogGOPSim's rules, as for any message: arrival at 0 + 100 + 1000, then the receive's
    // CPU 100 + 999·G: 2199 ns.
    assert_eq!(at(false, None), 2.199);
    // Local: the send's CPU (100), arrival at once, the receive's CPU (100): 200 ns.
    assert_eq!(at(true, None), 0.2);
    // Local with overheads of their own (o_s 30, o_r 40, O 0.01 ns/B): 30 + 9.99 to send,
    // arrival at 30, 40 + 9.99 to receive once the CPU is free at 39.99: 89.98 ns.
    let own = SelfOverheads {
        o_s_ns: 30.0,
        o_r_ns: 40.0,
        O_ns_per_byte: 0.01,
    };
    assert!(
        (at(true, Some(own)) - 0.08998).abs() < 1e-12,
        "{}",
        at(true, Some(own))
    );
    // They are the self messages' only: without local_self_messages they change nothing.
    assert_eq!(at(false, Some(own)), 2.199);
}

#[test]
fn loggp_rendezvous_completes_at_the_match_and_receive_overhead_waits_for_the_cpu() {
    let run_loggp = |ranks: &[Vec<OpKind>]| {
        run(
            ranks,
            &PredictConfig {
                model: Model::LogGp,
                ..PredictConfig::default()
            },
        )
    };
    let p = run_loggp(&[
        vec![send(1, 100_000), send(1, 8)],
        vec![OpKind::Calc { ns: 5000 }, recv(0, 100_000), recv(0, 8)],
    ]);
    // The 100 kB message arrives at 1100 but the receiver computes until 5000: it is taken in
    // at 5000 (CPU to 5000 + 100 + 99 999 = 105 099) and the receive, posted at 5000, matches
    // it there: the rendezvous send completes at 5000, its host's NIC still busy until
    // 0 + 200 + 99 999 = 100 199, when the 8-byte send goes (CPU to 100 299, arrival 101 299).
    // The receiver takes it when its CPU (105 099) and its NIC are free: the NIC took the
    // 100 kB in from 5000 to 5000 + 200 + 99 999 = 105 199; CPU to 105 199 + 100 + 7.
    assert_eq!(p.ranks[0].finish_us, 100.299);
    assert_eq!(p.ranks[1].finish_us, 105.306);
    assert_eq!(p.ranks[1].compute_us, 5.0);
    let r = &p.ranks[1];
    assert!((r.compute_us + r.comm_us + r.wait_us - r.finish_us).abs() < 1e-9);
}

#[test]
fn an_unmatched_receive_is_a_deadlock_not_a_hang() {
    let mut b = WorkloadBuilder::new(2);
    b.add_rank(1, &[recv(0, 8)], &[]).unwrap();
    let f = Fixture::new(b.finish());
    let inputs = f.inputs();
    let e = predict(&inputs, &PredictConfig::default()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "deadlock at 0.000 µs: 1 operations can never start or finish; first: rank 1, operation 0 (recv 8 B from rank 0 tag 0, never matched)"
    );
}

#[test]
fn bounds_run_best_average_and_worst() {
    let mut b = WorkloadBuilder::new(2);
    b.add_rank(0, &[send(1, 100_000)], &[]).unwrap();
    b.add_rank(1, &[recv(0, 100_000)], &[]).unwrap();
    let f = Fixture::new(b.finish());
    let inputs = f.inputs();
    let cfg = PredictConfig {
        background: Background::Exp {
            mean: 0.3,
            period_ns: 1000.0,
        },
        ..PredictConfig::default()
    };
    let bd = bounds(&inputs, &cfg, 8).unwrap();
    assert_eq!(bd.best_us, 101.0);
    assert!(
        bd.best_us < bd.average_us && bd.average_us <= bd.worst_us,
        "{bd:?}"
    );
    assert_eq!(bd.runs, 8);
    let c = PredictConfig {
        background: Background::Const(0.5),
        ..PredictConfig::default()
    };
    let bd = bounds(&inputs, &c, 8).unwrap();
    assert_eq!(
        (bd.best_us, bd.average_us, bd.worst_us, bd.runs),
        (101.0, 201.0, 201.0, 1)
    );
}

#[test]
fn concurrent_small_messages_do_not_serialize_on_latency() {
    // 8 ranks each send 1 B to rank 0 at once over links with 10 µs of latency each (two per
    // route). Each pays 1000 ns of Tcom intercept + 20 µs of links alone; then the 8 bytes
    // share rank 0's downlink at 1/8 each: 8 ns. Dividing the latency by the share, as an older
    // model did, gave 8 × 21,001 ns = 168 µs.
    let mut ranks: Vec<Vec<OpKind>> = (1..=8).map(|_| vec![send(0, 1)]).collect();
    ranks.insert(0, (1..=8).map(|s| recv(s, 1)).collect());
    let cfg = PredictConfig {
        link_classes: vec![LinkClass {
            name: "host".into(),
            bandwidth_bytes_per_ns: None,
            latency_ns: 10_000.0,
        }],
        ..PredictConfig::default()
    };
    let p = run(&ranks, &cfg);
    assert_eq!(p.total_us, 21.008);
    for r in &p.ranks[1..] {
        assert_eq!(r.finish_us, 21.008);
    }
}

/// Runs `w` on a crossbar through the simulation itself, for its internal counters.
fn sim_result(w: Workload, cfg: &PredictConfig) -> sim::SimResult {
    let f = Fixture::new(w);
    sim::Sim::new(&f.w, &f.net, &f.map, &f.tcom, cfg)
        .unwrap()
        .run()
        .unwrap()
}

/// LogGOPSim schedgen's pipelinedring: rank 0 sends `segments` eager messages to rank 1, and
/// every other rank forwards each one as it arrives — all of a link's segments in flight at once.
fn pipelined_ring(nranks: u32, segments: u32) -> Workload {
    let mut b = WorkloadBuilder::new(nranks);
    for r in 0..nranks {
        let mut p = SeqProgram::new();
        let mut reqs = Vec::new();
        for _ in 0..segments {
            if r > 0 {
                p.blocking(recv(r - 1, 1));
            }
            if r + 1 < nranks {
                reqs.push(p.nonblocking(send(r + 1, 1)));
            }
        }
        p.wait(&reqs);
        b.add_program(r, &p).unwrap();
    }
    b.finish()
}

/// Every rank irecvs from and isends to every other, then waits: n − 1 flows per link at once.
fn linear_alltoall(nranks: u32, bytes: u64) -> Workload {
    let mut b = WorkloadBuilder::new(nranks);
    for r in 0..nranks {
        let mut p = SeqProgram::new();
        let mut reqs = Vec::new();
        for i in 1..nranks {
            reqs.push(p.nonblocking(recv((r + nranks - i) % nranks, bytes)));
        }
        for i in 1..nranks {
            reqs.push(p.nonblocking(send((r + i) % nranks, bytes)));
        }
        p.wait(&reqs);
        b.add_program(r, &p).unwrap();
    }
    b.finish()
}

#[test]
fn the_event_queue_holds_one_entry_per_active_flow() {
    // An older queue: every change of a flow's bandwidth pushed a new end event and left the old
    // one in the heap, so k flows on a link left O(k²) entries behind (24 GB on a 16-rank pipelined
    // ring). The queue may hold the active flows plus a few one-shot events (an epoch, a
    // calc's end per rank), never the history of changes. Checked after every event.
    let exp = PredictConfig {
        background: Background::Exp {
            mean: 0.3,
            period_ns: 5_000.0,
        },
        ..PredictConfig::default()
    };
    for cfg in [PredictConfig::default(), exp] {
        for (w, nranks) in [
            (pipelined_ring(8, 3000), 8u64),
            (linear_alltoall(48, 4096), 48),
            (linear_alltoall(16, 200_000), 16),
        ] {
            let s = sim_result(w, &cfg);
            assert!(
                s.peak_queue_over_active <= nranks + 1,
                "queue held {} entries beyond the active flows ({nranks} ranks, {:?})",
                s.peak_queue_over_active,
                cfg.background
            );
        }
    }
}

#[test]
fn shared_cables_carry_both_directions_in_one_capacity() {
    let ranks = [
        vec![send(1, 1000), recv(1, 1000)],
        vec![send(0, 1000), recv(0, 1000)],
    ];
    // Rank 1's send goes while rank 0's is in flight only if both are eager: they are.
    let full = run(&ranks, &PredictConfig::default());
    assert_eq!(full.total_us, 2.0);
    let shared = run(
        &ranks,
        &PredictConfig {
            sharing: Sharing::Shared,
            ..PredictConfig::default()
        },
    );
    // 1000 ns latency each, then 2 × 1000 B through each cable's one capacity.
    assert_eq!(shared.total_us, 3.0);
}

#[test]
fn latency_and_bandwidth_factors_scale_links_by_size() {
    let ranks = [vec![send(1, 1000)], vec![recv(0, 1000)]];
    let cfg = PredictConfig {
        link_classes: vec![LinkClass {
            name: "host".into(),
            bandwidth_bytes_per_ns: None,
            latency_ns: 500.0,
        }],
        latency_factor: SizeFactors::parse("0:2;2000:10").unwrap(),
        bandwidth_factor: SizeFactors::parse("0.5").unwrap(),
        ..PredictConfig::default()
    };
    // Tcom's 1000 ns intercept is not scaled, the links' 2 × 500 ns are (× 2 below 2000 B); the
    // bytes move at half speed.
    assert_eq!(run(&ranks, &cfg).total_us, 1.0 + 2.0 + 2.0);
    let f = SizeFactors::parse(SizeFactors::SMPI_LATENCY).unwrap();
    assert_eq!(
        (f.at(0), f.at(256), f.at(257), f.at(1 << 20)),
        (2.01467, 2.01467, 1.95341, 11.6436)
    );
    assert!(SizeFactors::parse("1:x").is_err() && SizeFactors::parse("0:-1").is_err());
    // TCP gamma: at most gamma / (2 × 1000 ns) = 0.5 B/ns, the bytes take 2000 ns instead of
    // 1000 (× 2 for the bandwidth factor).
    let gamma = PredictConfig {
        tcp_gamma_bytes: 1000.0,
        ..cfg
    };
    assert_eq!(run(&ranks, &gamma).total_us, 1.0 + 2.0 + 4.0);
}

#[test]
fn a_pipelined_ring_moves_each_links_segments_together() {
    // All of rank 0's segments pay Tcom's 1000 ns intercept at once (latency is not shared),
    // then share its link for their one byte each and end together at 1000 + segments · 1 ns;
    // each next link then carries all of them at once the same way. (Sharing the latency too,
    // as an older model did, gave segments · Tcom(1 B) per link: 334× longer here.)
    let (n, s) = (6u32, 500u32);
    let p = predict(
        &Fixture::new(pipelined_ring(n, s)).inputs(),
        &PredictConfig::default(),
    )
    .unwrap()
    .prediction;
    let want = (n - 1) as f64 * (1000.0 + s as f64) / 1e3;
    assert!((p.total_us - want).abs() < 1e-6 * want, "{} µs", p.total_us);
}

#[test]
fn a_pairwise_exchange_on_a_crossbar_takes_one_tcom_per_step() {
    // Every step uses each host's up- and downlink once, and every step's flows end at one
    // instant. In an older engine a flow whose end was due at that instant was re-timed by
    // another's end there first, to a rounding error later; that skew grew into real overlap
    // between steps (a 128-rank exchange came out 1.65× too long).
    let n = 128u32;
    let mut b = WorkloadBuilder::new(n);
    for r in 0..n {
        let mut p = SeqProgram::new();
        for i in 1..n {
            let a = p.nonblocking(OpKind::Recv {
                from: (r + n - i) % n,
                tag: i,
                bytes: 1024,
            });
            let c = p.nonblocking(OpKind::Send {
                to: (r + i) % n,
                tag: i,
                bytes: 1024,
            });
            p.wait(&[a, c]);
        }
        b.add_program(r, &p).unwrap();
    }
    // The CLI's default profile (10 Gbit/s, 5 µs), with which the skew showed.
    let mut f = Fixture::new(b.finish());
    f.tcom = Tcom::line(5000.0, 0.8);
    let p = predict(&f.inputs(), &PredictConfig::default())
        .unwrap()
        .prediction;
    let want = (n - 1) as f64 * (5000.0 + 0.8 * 1024.0) / 1e3;
    assert!((p.total_us - want).abs() < 1e-6 * want, "{} µs", p.total_us);
}

#[test]
fn loggp_many_sends_posted_at_once_wait_in_line_not_in_retries() {
    // 20,000 independent sends from rank 0 (LogGOPSim retries each blocked one at every free
    // instant: 2·10^8 retries). The NIC gap (200 ns) paces them: send i leaves at i·200, its
    // byte is taken in at i·200 + 100 + 1000 (receiver CPU 100 ns, NIC 200 ns: it keeps up).
    let n = 20_000u32;
    let mut b = WorkloadBuilder::new(2);
    b.add_rank(0, &vec![send(1, 1); n as usize], &[]).unwrap();
    b.add_rank(1, &vec![recv(0, 1); n as usize], &[]).unwrap();
    let f = Fixture::new(b.finish());
    let cfg = PredictConfig {
        model: Model::LogGp,
        ..PredictConfig::default()
    };
    let p = predict(&f.inputs(), &cfg).unwrap().prediction;
    let last = (n - 1) as f64 * 200.0;
    assert_eq!(p.ranks[0].finish_us, (last + 100.0) / 1e3);
    assert_eq!(p.ranks[1].finish_us, (last + 1200.0) / 1e3);
    // Each operation and message enters once and is retried a bounded number of times.
    assert!(p.events < 5 * n as u64, "{} events", p.events);
}

#[test]
fn loggp_last_byte_frees_the_receiving_cpu_while_the_bytes_travel() {
    // Rank 0 sends 1001 B to rank 1, which has posted the receive and computes 3000 ns before
    // waiting for it (L = 1000, o = 100, g = 200 ns, G = 1 ns/B, O = 0).
    let mut b = WorkloadBuilder::new(2);
    let mut sender = SeqProgram::new();
    sender.blocking(send(1, 1001));
    b.add_program(0, &sender).unwrap();
    let mut receiver = SeqProgram::new();
    let r = receiver.nonblocking(recv(0, 1001));
    receiver.calc(3000);
    receiver.wait(&[r]);
    b.add_program(1, &receiver).unwrap();
    let f = Fixture::new(b.finish());
    // Also a stream: rank 0 sends two such messages back to back, rank 1 receives them.
    let stream = [
        vec![send(1, 1001), send(1, 1001)],
        vec![recv(0, 1001), recv(0, 1001)],
    ];
    let finish = |receive| {
        let cfg = PredictConfig {
            model: Model::LogGp,
            loggp_receive: receive,
            ..PredictConfig::default()
        };
        let one = predict(&f.inputs(), &cfg).unwrap().prediction;
        let two = run(&stream, &cfg);
        (one.ranks[1].finish_us, two.ranks[1].finish_us)
    };
    // LogGOPSim: the first byte is there at 100 + 1000 = 1100, taken in when the calc ends
    // (3000), holding the CPU 100 + 1000·G: 4100 ns. The stream: message 1 at 1100 (CPU to
    // 2200, receiving NIC to 1100 + 200 + 1000 = 2300), message 2 sent at 1200 (the sending
    // NIC's g + 1000·G) arrives at 2300: 2300 + 1100 = 3400 ns.
    assert_eq!(finish(LoggpReceive::FirstByte), (4.1, 3.4));
    // Last byte: there at 100 + 1000 + 1000·G = 2100, during the calc; taken in at 3000 for
    // o_r = 100: 3100 ns. The stream: message 1 at 2100 (CPU to 2200, NIC to 3300), message 2
    // at 1200 + 2100 = 3300, done at 3400 ns: the same rate.
    assert_eq!(finish(LoggpReceive::LastByte), (3.1, 3.4));
}

#[test]
fn loggp_without_a_receive_gap_takes_arrived_messages_at_the_cpus_pace() {
    // Rank 1 sends two 1-byte messages to rank 0 (arrivals at 1100 and 1300 ns: o = 100,
    // L = 1000, g = 200), which computes 5000 ns before receiving them. LogGOPSim's receiving
    // NIC takes the second g = 200 ns after the first (5000 + 200, + o 100); without a receive
    // gap it follows the first's o_r at once (5100, + 100).
    let ranks = [
        vec![OpKind::Calc { ns: 5000 }, recv(1, 1), recv(1, 1)],
        vec![send(0, 1), send(0, 1)],
    ];
    let finish = |receive_gap| {
        let cfg = PredictConfig {
            model: Model::LogGp,
            receive_gap,
            ..PredictConfig::default()
        };
        run(&ranks, &cfg).ranks[0].finish_us
    };
    assert_eq!(finish(true), 5.3);
    assert_eq!(finish(false), 5.2);
}

/// One round trip of 1 byte between two ranks, blocking, under the fixture's LogGP with L = 0.
fn pingpong_without_l() -> Fixture {
    let mut b = WorkloadBuilder::new(2);
    for (r, ops) in [[send(1, 1), recv(1, 1)], [recv(0, 1), send(0, 1)]]
        .into_iter()
        .enumerate()
    {
        let mut p = SeqProgram::new();
        for op in ops {
            p.blocking(op);
        }
        b.add_program(r as u32, &p).unwrap();
    }
    let mut f = Fixture::new(b.finish());
    f.loggp.L_ns = 0.0;
    f
}

#[test]
fn loggp_overlap_shortens_a_one_way_trip_by_the_overlap_and_an_exchange_by_the_wait() {
    // L = 0, o = 100 ns, 1-byte messages (no per-byte part). A ping-pong's leg is
    // o_s − overlap + o_r; an exchange (both ranks send and receive at once) holds each CPU
    // o_s − wait for its send, then its receive, which arrived o_s − overlap after the start.
    let exchange = |r: u32| {
        let mut p = SeqProgram::new();
        let s = p.nonblocking(send(1 - r, 1));
        let q = p.nonblocking(recv(1 - r, 1));
        p.wait(&[s, q]);
        p
    };
    let mut b = WorkloadBuilder::new(2);
    for r in 0..2 {
        b.add_program(r, &exchange(r)).unwrap();
    }
    let mut f = Fixture::new(b.finish());
    f.loggp.L_ns = 0.0;
    let pingpong = pingpong_without_l();
    let finish = |overlap| {
        let cfg = PredictConfig {
            model: Model::LogGp,
            overlap,
            ..PredictConfig::default()
        };
        let x = predict(&f.inputs(), &cfg).unwrap().prediction;
        let pp = predict(&pingpong.inputs(), &cfg).unwrap().prediction;
        (x.ranks[0].finish_us, pp.ranks[0].finish_us)
    };
    // LogGOPSim: an exchange o_s + o_r = 200 ns, a round trip 2 × 200.
    assert_eq!(finish(None), (0.2, 0.4));
    // Overlap 80, wait 60: the send holds the CPU 40 ns, the peer's message is there at 20, so
    // the receive runs 40–140; a leg is 20 + 100, the round trip 240 ns.
    let v = Overlap::new(80.0, 60.0).unwrap();
    assert_eq!(finish(Some(v)), (0.14, 0.24));
    // No wait: the exchange is LogGOPSim's again, the ping-pong still shorter.
    let v = Overlap::new(80.0, 0.0).unwrap();
    assert_eq!(finish(Some(v)), (0.2, 0.24));
    // A wait beyond the overlap (a rendezvous: the sender is free before the data moves): the
    // send holds the CPU 40 ns, the message leaves at 80, is received 80–180; a leg 180 ns.
    let v = Overlap::new(20.0, 60.0).unwrap();
    assert_eq!(finish(Some(v)), (0.18, 0.36));
    // Either beyond o_s stops at the send's start, never before.
    let v = Overlap::new(150.0, 150.0).unwrap();
    assert_eq!(finish(Some(v)), (0.1, 0.2));
    assert!(Overlap::new(80.0, -1.0).is_err());
    // The wait covers the send's per-byte work too (a rendezvous send waits out the copy of
    // its bytes): 1001 B, O = 0.5 ns/B, G = 1 ns/B. The send's CPU is 100 + 500 − 550 = 50 ns,
    // the message leaves at once (overlap 100), its receive holds the CPU 100 + 1000·G from
    // 50: 1150 ns; without the figures 600 + 1100 = 1700.
    let mut b = WorkloadBuilder::new(2);
    for r in 0..2u32 {
        let mut p = SeqProgram::new();
        let s = p.nonblocking(send(1 - r, 1001));
        let q = p.nonblocking(recv(1 - r, 1001));
        p.wait(&[s, q]);
        b.add_program(r, &p).unwrap();
    }
    let mut big = Fixture::new(b.finish());
    (big.loggp.L_ns, big.loggp.O_ns_per_byte) = (0.0, 0.5);
    let finish = |overlap| {
        let cfg = PredictConfig {
            model: Model::LogGp,
            overlap,
            ..PredictConfig::default()
        };
        predict(&big.inputs(), &cfg).unwrap().prediction.ranks[0].finish_us
    };
    assert_eq!(finish(None), 1.7);
    assert_eq!(finish(Some(Overlap::new(100.0, 550.0).unwrap())), 1.15);
    assert!(Overlap::new(-1.0, 0.0).is_err());
    assert!(Overlap::new(f64::NAN, 0.0).is_err());
}

#[test]
fn loggp_duplex_charges_a_crossing_receive_once_per_message_and_a_ping_pong_never() {
    // L = 0, o = 100 ns, 1-byte messages, an exchange's excess of 30 ns. `k` messages each way,
    // all posted at once, then a wait for all (g = 0: a rank's sends leave back to back, before
    // it takes in the first arrival); or a ping-pong.
    let exchange = |k: usize| {
        let mut b = WorkloadBuilder::new(2);
        for r in 0..2u32 {
            let mut p = SeqProgram::new();
            let mut q: Vec<_> = (0..k).map(|_| p.nonblocking(send(1 - r, 1))).collect();
            q.extend((0..k).map(|_| p.nonblocking(recv(1 - r, 1))));
            p.wait(&q);
            b.add_program(r, &p).unwrap();
        }
        let mut f = Fixture::new(b.finish());
        (f.loggp.L_ns, f.loggp.g_ns) = (0.0, 0.0);
        f
    };
    let pingpong = pingpong_without_l();
    let finish = |f: &Fixture, duplex: f64| {
        let cfg = PredictConfig {
            model: Model::LogGp,
            overlap: Some(Overlap::new(0.0, 0.0).unwrap().with_duplex(duplex).unwrap()),
            ..PredictConfig::default()
        };
        let p = predict(&f.inputs(), &cfg).unwrap().prediction;
        (p.ranks[0].finish_us * 1e3).round()
    };
    // One exchange: the send 0–100, the peer's message there at 100, its receive 100–230 with
    // the excess: o_s + o_r + duplex, as `bench loggp` measures it.
    let one = exchange(1);
    assert_eq!((finish(&one, 0.0), finish(&one, 30.0)), (200.0, 230.0));
    // A ping-pong's legs leave after the other was taken in: 400 ns either way.
    assert_eq!(
        (finish(&pingpong, 0.0), finish(&pingpong, 30.0)),
        (400.0, 400.0)
    );
    // Two messages each way are one exchange: the sends 0–200, the receives 200–300–400; the
    // excess once a side, not on both receives.
    let two = exchange(2);
    assert_eq!((finish(&two, 0.0), finish(&two, 30.0)), (400.0, 430.0));
    assert!(Overlap::default().with_duplex(-1.0).is_err());
    assert!(Overlap::default().with_duplex(f64::INFINITY).is_err());
}

/// L = 0, o = 100 ns, 1-byte messages. Rank 0 sends to rank 1 at once (there at 100); rank 1
/// computes 1000 + 10 ns, then sends to rank 0 and waits for both.
fn a_message_arrives_while_its_receiver_computes() -> Fixture {
    let mut b = WorkloadBuilder::new(2);
    let mut p0 = SeqProgram::new();
    let s = p0.nonblocking(send(1, 1));
    let q = p0.nonblocking(recv(1, 1));
    p0.wait(&[s, q]);
    b.add_program(0, &p0).unwrap();
    let mut p1 = SeqProgram::new();
    p1.calc(1000);
    p1.calc(10);
    let s = p1.nonblocking(send(0, 1));
    let q = p1.nonblocking(recv(0, 1));
    p1.wait(&[s, q]);
    b.add_program(1, &p1).unwrap();
    let mut f = Fixture::new(b.finish());
    f.loggp.L_ns = 0.0;
    f
}

#[test]
fn loggp_progress_at_wait_lets_a_ranks_own_send_go_before_what_has_arrived() {
    let f = a_message_arrives_while_its_receiver_computes();
    let finish = |progress| {
        let cfg = PredictConfig {
            model: Model::LogGp,
            progress,
            ..PredictConfig::default()
        };
        let p = predict(&f.inputs(), &cfg).unwrap().prediction;
        (p.ranks[0].finish_us, p.ranks[1].finish_us)
    };
    // LogGOPSim: when rank 1's CPU is free (1010) the message that came first is taken in
    // (to 1110), then rank 1 sends (to 1210), and rank 0 receives 1210–1310.
    assert_eq!(finish(Progress::Arrival), (1.31, 1.21));
    // At its wait: rank 1 sends first (1010–1110), then takes rank 0's message in (to 1210);
    // rank 0 receives 1110–1210.
    assert_eq!(finish(Progress::Wait), (1.21, 1.21));
}

#[test]
fn the_one_node_mpi_preset_takes_messages_in_at_the_wait_and_self_messages_in_memory() {
    // Progress at the wait: rank 1 sends before it takes in rank 0's message (as above).
    let f = a_message_arrives_while_its_receiver_computes();
    let own = SelfOverheads {
        o_s_ns: 30.0,
        o_r_ns: 40.0,
        O_ns_per_byte: 0.01,
    };
    let cfg = PredictConfig::one_node_mpi(64 * 1024, own);
    let p = predict(&f.inputs(), &cfg).unwrap().prediction;
    assert_eq!((p.ranks[0].finish_us, p.ranks[1].finish_us), (1.21, 1.21));
    // A message to oneself: the send's 30 + 9.99 ns, the receive's 40 + 9.99 once the CPU is
    // free at 39.99: 89.98 ns, no L, g or G.
    let mut b = WorkloadBuilder::new(2);
    b.add_rank(0, &[send(0, 1000), recv(0, 1000)], &[]).unwrap();
    let f = Fixture::new(b.finish());
    let t = predict(&f.inputs(), &cfg).unwrap().prediction.ranks[0].finish_us;
    assert!((t - 0.08998).abs() < 1e-12, "{t}");
}

/// An own-format trace's prediction under `model`, on the fixture's crossbar and parameters.
fn run_text(text: &str, model: Model) -> Prediction {
    use crate::parse::{parse_str, ParseOptions, TraceFormat};
    let w = parse_str(text, "t", TraceFormat::Own, &ParseOptions::default()).unwrap();
    let f = Fixture::new(w);
    let cfg = PredictConfig {
        model,
        ..PredictConfig::default()
    };
    predict(&f.inputs(), &cfg).unwrap().prediction
}

fn finishes(p: &Prediction) -> Vec<f64> {
    p.ranks.iter().map(|r| r.finish_us).collect()
}

#[test]
fn one_sided_transfers_cost_the_origin_a_round_trip_and_the_target_nothing() {
    // A blocking put, get and fetch of 1000 B from rank 0 to rank 1, which only computes.
    for (op, loggp, contention) in [
        // LogGP: o_s = 100, then the request's last byte at + L + (out−1)·G and the reply's at
        // + L + (back−1)·G: 100 + 2·1000 + 999 = 3099 for a put (empty acknowledgement) and a
        // get (empty request), 100 + 2000 + 2·999 = 4098 for a fetch (1000 B each way).
        // Contention: Tcom each way, 1000 + 1000 then 1000 + 0 (a fetch: 2·2000).
        ("put", 3.099, 3.0),
        ("get", 3.099, 3.0),
        ("fetch", 4.098, 4.0),
    ] {
        let t = format!("ranks 2\nrank 0\n  {op} 1 1000B\nrank 1\n  compute 100ns\n");
        let p = run_text(&t, Model::LogGp);
        assert_eq!(finishes(&p), [loggp, 0.1], "{op}");
        // The origin's CPU is held for o_s only; the rest is waiting for the reply.
        assert_eq!((p.ranks[0].comm_us, p.ranks[1].comm_us), (0.1, 0.0), "{op}");
        let p = run_text(&t, Model::Contention);
        assert_eq!(finishes(&p), [contention, 0.1], "{op}");
    }
}

#[test]
fn a_fence_epoch_waits_for_the_put_then_synchronises() {
    // MPI_Put; compute; MPI_Win_fence = wait for the put, then a barrier of both ranks.
    let t = "ranks 2\nrank 0\n  put 1 1000B as a\n  compute 500ns\n  wait a\n  barrier\n\
             rank 1\n  compute 200ns\n  barrier\n";
    // LogGP: the put starts at 0 (CPU to 100) and completes at 100 + 2000 + 999 = 3099, the
    // compute runs 100..600. Rank 1's barrier message (0 B) leaves at 200 and is taken in by
    // rank 0 at 1300 (CPU to 1400, unexpected). Rank 0 enters the barrier at 3099: its
    // message leaves (CPU to 3199, at rank 1 at 4199) and its receive finds rank 1's: 3199.
    // Rank 1 takes rank 0's in at 4199 + o_r = 4299: the target leaves the fence after the
    // data is in (at 100 + 1000 + 999 = 2099).
    assert_eq!(finishes(&run_text(t, Model::LogGp)), [3.199, 4.299]);
    // Contention: the put's data is in at 2000, its acknowledgement at 3000; then the
    // barrier's message from rank 0 takes 1000 (rank 1's was in at 1200): both at 4000.
    assert_eq!(finishes(&run_text(t, Model::Contention)), [4.0, 4.0]);
}

#[test]
fn a_lock_epoch_unlocks_when_every_transfer_to_the_target_is_done() {
    // MPI_Win_lock(1); MPI_Put 1000 B; MPI_Get 500 B; MPI_Win_unlock(1) = wait for both.
    let t = "ranks 2\nrank 0\n  put 1 1000B as a\n  get 1 500B as b\n  waitall a b\n\
             rank 1\n  compute 100ns\n";
    // LogGP: the put holds the CPU to 100 and the NIC to 200 + 999 = 1199, done at 3099; the
    // get starts when the NIC is free, 1199: done at 1199 + 100 + 2000 + 499 = 3798.
    assert_eq!(finishes(&run_text(t, Model::LogGp)), [3.798, 0.1]);
    // Contention (full duplex): the get's request is in at 1000, its 500 B back at
    // 1000 + 1000 + 500 = 2500; the put's data is in at 2000, its acknowledgement at 3000.
    assert_eq!(finishes(&run_text(t, Model::Contention)), [3.0, 0.1]);
}

#[test]
fn a_small_synchronous_send_waits_for_a_late_receiver_in_both_models() {
    // Rank 0 sends 1000 B (far below the 64 KiB eager limit); rank 1 computes 5 µs first.
    let late = |first: OpKind| [vec![first], vec![OpKind::Calc { ns: 5000 }, recv(0, 1000)]];
    let ssend = OpKind::Ssend {
        to: 1,
        tag: 0,
        bytes: 1000,
    };
    // Contention model, Tcom(1000 B) = 1000 + 1000 = 2000 ns. Eager: the send is done when its
    // data is out (2 µs), the receive when posted (5 µs). Synchronous: the transfer starts
    // when the receive is posted, at 5 µs, and both complete at 5 + 2 = 7 µs.
    let finish = |p: &Prediction| (p.ranks[0].finish_us, p.ranks[1].finish_us);
    let cfg = PredictConfig::default();
    assert_eq!(finish(&run(&late(send(1, 1000)), &cfg)), (2.0, 5.0));
    assert_eq!(finish(&run(&late(ssend), &cfg)), (7.0, 7.0));
    // LogGP (L = 1000, o = 100, g = 200, G = 1 ns/B): the message leaves at o and arrives at
    // 100 + 1000 = 1100; the receiver's CPU is busy until 5000, takes it in then for
    // o + (s − 1)·G = 100 + 999: done at 6099. The eager send is done when its CPU is free,
    // at o = 100; the synchronous one at the match, 5000.
    let loggp = PredictConfig {
        model: Model::LogGp,
        ..PredictConfig::default()
    };
    assert_eq!(finish(&run(&late(send(1, 1000)), &loggp)), (0.1, 6.099));
    assert_eq!(finish(&run(&late(ssend), &loggp)), (5.0, 6.099));
}

#[test]
fn a_nonblocking_synchronous_send_holds_its_wait_until_the_receive_is_posted() {
    // Rank 0: issend 8 B, compute 1 µs, wait; rank 1 computes 5 µs, then receives.
    let ranks = |sync: bool| {
        let mut b = WorkloadBuilder::new(2);
        let mut p = SeqProgram::new();
        let q = p.nonblocking(if sync {
            OpKind::Ssend {
                to: 1,
                tag: 0,
                bytes: 8,
            }
        } else {
            send(1, 8)
        });
        p.calc(1000);
        p.wait(&[q]);
        b.add_program(0, &p).unwrap();
        let mut p = SeqProgram::new();
        p.calc(5000);
        p.blocking(recv(0, 8));
        b.add_program(1, &p).unwrap();
        Fixture::new(b.finish())
    };
    let loggp = PredictConfig {
        model: Model::LogGp,
        ..PredictConfig::default()
    };
    let rank0 = |f: Fixture| predict(&f.inputs(), &loggp).unwrap().prediction.ranks[0].finish_us;
    // isend: o = 100, then the compute to 1100, and the wait finds the send long done.
    assert_eq!(rank0(ranks(false)), 1.1);
    // issend: the wait lasts until the receive matches the message, at 5000.
    assert_eq!(rank0(ranks(true)), 5.0);
    // The contention model likewise: the transfer (Tcom(8) = 1008 ns) starts at 5000.
    let f = ranks(true);
    let p = predict(&f.inputs(), &PredictConfig::default())
        .unwrap()
        .prediction;
    assert_eq!((p.ranks[0].finish_us, p.ranks[1].finish_us), (6.008, 6.008));
}

#[test]
fn the_next_background_epoch_is_always_later() {
    // 43 × 0.1 = 4.3, but 4.3 / 0.1 rounds down to 42.99…: the epoch after 4.3 ns came out as
    // 4.3 ns again, and the run redrew at that instant forever (`--background-period 0.0001`).
    let now = 43.0 * 0.1;
    assert_eq!(((now / 0.1_f64).floor() + 1.0) * 0.1, now);
    assert_eq!(super::sim::next_epoch(now, 0.1), 44.0 * 0.1);
    assert_eq!(super::sim::next_epoch(1000.0, 100.0), 1100.0);
    assert_eq!(super::sim::next_epoch(1050.0, 100.0), 1100.0);
}
