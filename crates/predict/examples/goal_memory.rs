//! Time and peak memory of each phase of a GOAL prediction in LogGP mode (the goal: a
//! 1,048,576-rank binomial broadcast parsed and simulated in < 5 s and < 700 MB).
//!
//! `commperf gen-trace bcast --ranks 1048576 --bytes 1k -o /tmp/bcast.goal`
//! `cargo run --release -p commperf-predict --example goal_memory -- /tmp/bcast.goal`

use commperf_predict::engine::{predict, Inputs, Model, PredictConfig};
use commperf_predict::parse::{read_trace, ParseOptions};
use commperf_predict::tcom::Tcom;
use commperf_predict::topology::{Crossbar, RankMap};
use std::time::Instant;

fn peak_mb() -> f64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|k| k.parse::<f64>().ok())
        .map_or(0.0, |k| k / 1024.0)
}

fn main() {
    let path = std::env::args()
        .nth(1)
        .expect("usage: goal_memory FILE.goal");
    let t0 = Instant::now();
    let w = read_trace(path.as_ref(), None, &ParseOptions::default()).expect("trace");
    println!(
        "parsed {} ops of {} ranks in {:.3} s, peak {:.0} MB",
        w.len(),
        w.nranks(),
        t0.elapsed().as_secs_f64(),
        peak_mb()
    );
    let net = Crossbar::new(w.nranks());
    let map = RankMap::identity(w.nranks(), &net).expect("map");
    let tcom = Tcom::line(1000.0, 0.1);
    let inputs = Inputs {
        workload: &w,
        network: &net,
        rank_map: &map,
        tcom: &tcom,
        loggp: None,
        trace_name: &path,
        trace_format: "goal",
        profile_name: "line",
    };
    let cfg = PredictConfig {
        model: Model::LogGp,
        ..PredictConfig::default()
    };
    let t1 = Instant::now();
    let o = predict(&inputs, &cfg).expect("predict");
    println!(
        "simulated {} events in {:.3} s ({:.2} M events/s), total {:.3} µs; peak {:.0} MB; whole run {:.3} s",
        o.prediction.events,
        t1.elapsed().as_secs_f64(),
        o.prediction.events as f64 / t1.elapsed().as_secs_f64() / 1e6,
        o.prediction.total_us,
        peak_mb(),
        t0.elapsed().as_secs_f64()
    );
}
