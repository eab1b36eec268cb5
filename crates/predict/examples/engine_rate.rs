//! Messages per second through the contention engine on a pairwise all-to-all (the issue's
//! performance goal: ≥ 1 M messages/s on 1,024 ranks over a k = 16 fat tree, one core).
//!
//! `cargo run --release -p commperf-predict --example engine_rate -- [RANKS] [TOPOLOGY]`

use commperf_predict::engine::{predict, Inputs, PredictConfig};
use commperf_predict::tcom::Tcom;
use commperf_predict::topology::{self, RankMap, TopologySpec};
use commperf_predict::workload::{OpKind, SeqProgram, WorkloadBuilder};
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let n: u32 = args.next().map_or(1024, |s| s.parse().expect("ranks"));
    let spec: TopologySpec = args
        .next()
        .unwrap_or_else(|| "fattree:k=16".into())
        .parse()
        .expect("topology");
    let t0 = Instant::now();
    let mut b = WorkloadBuilder::new(n);
    for r in 0..n {
        let mut p = SeqProgram::new();
        for i in 1..n {
            let to = (r + i) % n;
            let from = (r + n - i) % n;
            let a = p.nonblocking(OpKind::Recv {
                from,
                tag: i,
                bytes: 4096,
            });
            let c = p.nonblocking(OpKind::Send {
                to,
                tag: i,
                bytes: 4096,
            });
            p.wait(&[a, c]);
        }
        b.add_program(r, &p).expect("program");
    }
    let w = b.finish();
    let build = t0.elapsed();
    let net = topology::build(&spec, n, 1).expect("topology");
    let map = RankMap::identity(n, &*net).expect("map");
    let tcom = Tcom::line(2000.0, 0.1);
    let inputs = Inputs {
        workload: &w,
        network: &*net,
        rank_map: &map,
        tcom: &tcom,
        loggp: None,
        trace_name: "pairwise all-to-all",
        trace_format: "generated",
        profile_name: "line",
    };
    let t1 = Instant::now();
    let o = predict(&inputs, &PredictConfig::default()).expect("predict");
    let sim = t1.elapsed().as_secs_f64();
    let p = &o.prediction;
    println!(
        "{} ranks on {}: {} messages, {} events, predicted {:.1} µs; built in {:.3} s, simulated in {:.3} s = {:.2} M messages/s",
        n,
        p.topology,
        p.messages,
        p.events,
        p.total_us,
        build.as_secs_f64(),
        sim,
        p.messages as f64 / sim / 1e6
    );
}
