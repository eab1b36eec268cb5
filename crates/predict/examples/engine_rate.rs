//! Messages per second through an engine, the workload built in memory so that only the
//! simulation is timed (goal: ≥ 1 M messages/s, one core).
//!
//! `cargo run --release -p commperf-predict --example engine_rate -- [RANKS] [TOPOLOGY]
//! [PATTERN] [SEGMENTS] [MODEL]`
//!
//! PATTERN: `pairwise` (default; the alltoall collective, one exchange step after another),
//! `alltoall` (linear: every rank irecvs from and isends to every other, then waits — as
//! `commperf gen-trace alltoall`), or `pring` (LogGOPSim schedgen's pipelinedring: rank 0
//! sends SEGMENTS segments of 1 B, every other rank forwards each as it arrives). MODEL:
//! `contention` (default) or `loggp`.

use commperf_predict::engine::{predict, Inputs, Model, PredictConfig};
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
    let pattern = args.next().unwrap_or_else(|| "pairwise".into());
    let segments: u32 = args
        .next()
        .map_or(100_000, |s| s.parse().expect("segments"));
    let model = match args.next().as_deref() {
        None | Some("contention") => Model::Contention,
        Some("loggp") => Model::LogGp,
        Some(m) => panic!("unknown model {m}"),
    };
    let t0 = Instant::now();
    let mut b = WorkloadBuilder::new(n);
    for r in 0..n {
        let mut p = SeqProgram::new();
        match pattern.as_str() {
            "pairwise" => {
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
            }
            "alltoall" => {
                let mut reqs = Vec::new();
                for i in 1..n {
                    reqs.push(p.nonblocking(OpKind::Recv {
                        from: (r + n - i) % n,
                        tag: 0,
                        bytes: 1024,
                    }));
                }
                for i in 1..n {
                    reqs.push(p.nonblocking(OpKind::Send {
                        to: (r + i) % n,
                        tag: 0,
                        bytes: 1024,
                    }));
                }
                p.wait(&reqs);
            }
            "pring" => {
                let mut reqs = Vec::new();
                for _ in 0..segments {
                    if r > 0 {
                        p.blocking(OpKind::Recv {
                            from: r - 1,
                            tag: 0,
                            bytes: 1,
                        });
                    }
                    if r + 1 < n {
                        reqs.push(p.nonblocking(OpKind::Send {
                            to: r + 1,
                            tag: 0,
                            bytes: 1,
                        }));
                    }
                }
                p.wait(&reqs);
            }
            other => panic!("unknown pattern {other}"),
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
        trace_name: &pattern,
        trace_format: "generated",
        profile_name: "line",
    };
    let t1 = Instant::now();
    let cfg = PredictConfig {
        model,
        ..PredictConfig::default()
    };
    let o = predict(&inputs, &cfg).expect("predict");
    let sim = t1.elapsed().as_secs_f64();
    let p = &o.prediction;
    println!(
        "{} {} ranks on {} ({:?}): {} messages, {} events, predicted {:.1} µs; built in {:.3} s, simulated in {:.3} s = {:.2} M messages/s",
        pattern,
        n,
        p.topology,
        model,
        p.messages,
        p.events,
        p.total_us,
        build.as_secs_f64(),
        sim,
        p.messages as f64 / sim / 1e6
    );
}
