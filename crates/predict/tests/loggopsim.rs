//! `predict --model loggp` against LogGOPSim's own answers: every host's finishing time on every
//! schedule of `tests/data/loggopsim-reference` (written by LogGOPSim's schedule generator,
//! simulated by LogGOPSim v1 with its default parameters), to the nanosecond.

use commperf_predict::engine::{predict, Inputs, LogGp, Model, PredictConfig};
use commperf_predict::parse::{read_trace, ParseOptions};
use commperf_predict::tcom::Tcom;
use commperf_predict::topology::{Crossbar, RankMap};
use std::path::Path;

/// LogGOPSim's defaults: L = 2500, o = 1500, g = 1000 ns, G = 6 ns/B, O = 0, S = 65535.
const PARAMS: LogGp = LogGp {
    L_ns: 2500.0,
    o_s_ns: 1500.0,
    o_r_ns: 1500.0,
    g_ns: 1000.0,
    G_ns_per_byte: 6.0,
    O_ns_per_byte: 0.0,
};

fn finish_ns(goal: &Path, params: &LogGp) -> Vec<f64> {
    let w = read_trace(goal, None, &ParseOptions::default())
        .unwrap_or_else(|e| panic!("{}: {e}", goal.display()));
    let net = Crossbar::new(w.nranks());
    let map = RankMap::identity(w.nranks(), &net).unwrap();
    let tcom = Tcom::line(1000.0, 1.0);
    let inputs = Inputs {
        workload: &w,
        network: &net,
        rank_map: &map,
        tcom: &tcom,
        loggp: Some(params),
        trace_name: "reference",
        trace_format: "goal",
        profile_name: "LogGOPSim defaults",
    };
    let cfg = PredictConfig {
        model: Model::LogGp,
        eager_threshold_bytes: 65535,
        ..PredictConfig::default()
    };
    let p = predict(&inputs, &cfg).unwrap().prediction;
    p.ranks.iter().map(|r| r.finish_us * 1e3).collect()
}

fn reference(path: &Path) -> Vec<f64> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .enumerate()
        .map(|(i, l)| {
            let mut f = l.split_whitespace();
            assert_eq!(f.next().unwrap().parse::<usize>().unwrap(), i);
            f.next().unwrap().parse::<f64>().unwrap()
        })
        .collect()
}

fn schedules() -> Vec<std::path::PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/loggopsim-reference");
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "goal"))
        .collect();
    v.sort();
    v
}

#[test]
fn every_host_finishes_when_loggopsim_says_to_the_nanosecond() {
    let all = schedules();
    assert_eq!(all.len(), 22, "the reference set has 22 schedules");
    let mut wrong = Vec::new();
    for goal in &all {
        let want = reference(&goal.with_extension("finish_ns"));
        let got = finish_ns(goal, &PARAMS);
        assert_eq!(got.len(), want.len(), "{}", goal.display());
        for (h, (g, w)) in got.iter().zip(&want).enumerate() {
            // f64 holds these integers exactly; µs → ns may leave a rounding residue only.
            if (g - w).abs() > 1e-6 {
                wrong.push(format!(
                    "{} host {h}: {g} ns, LogGOPSim {w} ns",
                    goal.file_name().unwrap().to_string_lossy()
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The oracle can tell: with G charged on s bytes instead of s − 1 (the old engine's rule) a
/// tree broadcast of 1 KiB is off by 6 ns per hop, which the comparison above would catch.
#[test]
fn the_oracle_notices_one_byte_of_gap() {
    let goal = schedules()
        .into_iter()
        .find(|p| p.ends_with("binomialtreebcast_8_1024.goal"))
        .unwrap();
    let want = reference(&goal.with_extension("finish_ns"));
    let mut p = PARAMS;
    p.G_ns_per_byte = 6.0 * 1024.0 / 1023.0;
    let got = finish_ns(&goal, &p);
    assert!(got.iter().zip(&want).any(|(g, w)| (g - w).abs() >= 5.0));
}

/// compute + comm + wait is every rank's finishing time, in both models, on patterns with
/// concurrent messages, rendezvous sizes and (own format) compute between iterations: time
/// is attributed once (the user guide's predict chapter).
#[test]
fn per_rank_time_adds_up_to_the_finish_in_both_models() {
    use commperf_predict::gen::{own_pattern_string, Pattern};
    use commperf_predict::parse::{parse_str, TraceFormat};
    let patterns = [
        Pattern::Bcast,
        Pattern::Incast,
        Pattern::AllToAll,
        Pattern::RingShift,
        Pattern::Halo2D { x: 4, y: 4 },
        Pattern::PairwiseAllToAll,
    ];
    let (mut checked, mut computes) = (0, 0);
    for pattern in patterns {
        for bytes in [1u64, 4096, 200_000] {
            let text = own_pattern_string(pattern, 16, bytes, 3).unwrap();
            // Compute before every send: the CPU and the network overlap.
            let text: String = text
                .lines()
                .flat_map(|l| {
                    let op = l.split_whitespace().next().unwrap_or("");
                    let extra = (op == "send" || op == "isend").then(|| "compute 3us".to_string());
                    extra.into_iter().chain(std::iter::once(l.to_string()))
                })
                .map(|l| l + "\n")
                .collect();
            let w = parse_str(
                &text,
                "gen.trace",
                TraceFormat::Own,
                &ParseOptions::default(),
            )
            .unwrap_or_else(|e| panic!("{e}\n{text}"));
            let net = Crossbar::new(w.nranks());
            let map = RankMap::identity(w.nranks(), &net).unwrap();
            let tcom = Tcom::line(1000.0, 0.1);
            for model in [Model::Contention, Model::LogGp] {
                let inputs = Inputs {
                    workload: &w,
                    network: &net,
                    rank_map: &map,
                    tcom: &tcom,
                    loggp: Some(&PARAMS),
                    trace_name: "gen",
                    trace_format: "own",
                    profile_name: "line",
                };
                let cfg = PredictConfig {
                    model,
                    ..PredictConfig::default()
                };
                let p = predict(&inputs, &cfg).unwrap().prediction;
                for r in &p.ranks {
                    let sum = r.compute_us + r.comm_us + r.wait_us;
                    assert!(
                        (sum - r.finish_us).abs() < 1e-9 * r.finish_us.max(1.0)
                            && r.compute_us >= 0.0
                            && r.comm_us >= 0.0
                            && r.wait_us >= 0.0,
                        "{pattern:?} {bytes} B {model:?} rank {}: {r:?}",
                        r.rank
                    );
                    checked += 1;
                }
                if model == Model::LogGp {
                    // 3 µs before each send; LogGP overhead is never counted as compute.
                    let sends: usize = text.lines().filter(|l| l.contains("compute")).count();
                    computes += sends;
                    let compute: f64 = p.ranks.iter().map(|r| r.compute_us).sum();
                    assert!((compute - 3.0 * sends as f64).abs() < 1e-6, "{compute}");
                }
            }
        }
    }
    assert_eq!(checked, 6 * 3 * 2 * 16);
    assert!(computes > 100, "{computes} compute operations");
}
