//! End-to-end tests of `commperf predict` and `commperf gen-trace`: every example file written
//! by another project predicts, results are byte-identical for the same seed, the models and
//! topologies give the answers computed by hand, and bad input is refused with a clear message.

use commperf_testkit::{commperf, TempFile};
use serde_json::Value;
use std::path::Path;

fn data(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../predict/tests/data")
        .join(name)
        .display()
        .to_string()
}

fn json(args: &[&str]) -> Value {
    let mut a = args.to_vec();
    a.extend(["--format", "json"]);
    let o = commperf(&a);
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).expect("JSON")
}

/// `predict --model loggp` on the trace file `t` with L = 1000, o = 100, g = 200 ns, G = 1
/// ns/B, and `extra`.
fn loggp_on<'a>(t: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec!["predict", "--trace", t, "--model", "loggp"];
    v.extend(["--loggp", "L=1000,o=100,g=200,G=1,O=0"]);
    v.extend_from_slice(extra);
    v
}

/// Rank 0's finish (µs) of trace `t` under LogGP with L = 0, o = 100, g = 200 ns, G = 1 ns/B.
fn rank0_finish_without_l(t: &str, extra: &[&str]) -> f64 {
    let mut v = vec!["predict", "--trace", t, "--model", "loggp"];
    v.extend(["--loggp", "L=0,o=100,g=200,G=1,O=0"]);
    v.extend_from_slice(extra);
    json(&v)["ranks"][0]["finish_us"].as_f64().unwrap()
}

fn err(args: &[&str]) -> (i32, String) {
    let o = commperf(args);
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn every_example_file_predicts() {
    let files = [
        ("binary_tree_32.goal", "goal", 32, 31),
        ("actions_allreduce.txt", "simgrid", 3, 4),
        ("actions_alltoall.txt", "simgrid", 3, 6),
        ("actions_barrier.txt", "simgrid", 3, 7),
        ("actions_bcast.txt", "simgrid", 3, 6),
        ("actions_gather.txt", "simgrid", 4, 3),
        ("actions_waitall.txt", "simgrid", 3, 3),
        ("actions_with_isend.txt", "simgrid", 3, 3),
        // actions0.txt and actions1.txt are the two halves of one trace, read through an index.
        ("split_traces", "simgrid", 2, 3),
    ];
    for (f, format, ranks, messages) in files {
        for model in ["contention", "loggp"] {
            let p = json(&["predict", "--trace", &data(f), "--model", model]);
            assert_eq!(p["schema_version"], 1, "{f}");
            assert_eq!(p["trace_format"], format, "{f}");
            assert_eq!(p["ranks_count"], ranks, "{f}");
            assert_eq!(p["messages"], messages, "{f} {model}");
            let total = p["total_us"].as_f64().unwrap();
            assert!(total > 0.0, "{f}: {total}");
            let last = p["ranks"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r["finish_us"].as_f64().unwrap())
                .fold(0.0, f64::max);
            assert_eq!(last, total, "{f}");
        }
    }
}

#[test]
fn the_binomial_tree_costs_what_the_tree_says() {
    // Default Tcom: 5 µs + 0.8 ns/B. A hop pays its 5 µs of latency alone and only its byte is
    // shared: k sends posted at once by one parent take 5 µs + k × 0.8 ns. In the GOAL file rank
    // 0 posts its 5 sends at once (no dependencies): all 5 arrive at 5.004 µs (rank 16, a leaf,
    // finishes then). Rank 1 then sends 4 at once: it finishes at 5.004 + 5.0032. Rank 31 is the
    // last leaf: 0 → 1 → 3 → 7 → 15 → 31, each parent's sends sharing its uplink 5, 4, 3, 2 and
    // 1 at a time: 5 × 5 µs + 15 × 0.8 ns. (A model sharing the latency too gave 15 hops
    // of 5.0008 µs.)
    let p = json(&["predict", "--trace", &data("binary_tree_32.goal")]);
    let t = |r: usize| p["ranks"][r]["finish_us"].as_f64().unwrap();
    let hop = |k: f64| 5.0 + k * 0.0008;
    assert!((t(16) - hop(5.0)).abs() < 1e-9, "{}", t(16));
    assert!((t(1) - hop(5.0) - hop(4.0)).abs() < 1e-9, "{}", t(1));
    let last = 5.0 * 5.0 + 15.0 * 0.0008;
    assert!((t(31) - last).abs() < 1e-9, "{}", t(31));
    assert!((p["total_us"].as_f64().unwrap() - last).abs() < 1e-9);
    assert_eq!(p["bottlenecks"][0], "h0->s0");
}

#[test]
fn the_same_seed_gives_byte_identical_output() {
    let args = [
        "predict",
        "--trace",
        &data("actions_bcast.txt"),
        "--background",
        "exp:0.3",
        "--seed",
        "7",
        "--format",
        "json",
    ];
    let a = commperf(&args);
    let b = commperf(&args);
    assert!(a.status.success());
    assert_eq!(a.stdout, b.stdout);
    let mut other = args.to_vec();
    other[7] = "8";
    assert_ne!(commperf(&other).stdout, a.stdout);
}

#[test]
fn generated_patterns_predict_on_every_topology() {
    let trace = TempFile::new("a2a.txt");
    let t = trace.to_str().unwrap();
    let o = commperf(&[
        "gen-trace",
        "pairwise",
        "--ranks",
        "16",
        "--bytes",
        "1k",
        "-o",
        t,
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let dot = data("simplenet.dot");
    let mut totals = Vec::new();
    for topo in [
        "crossbar",
        "clos",
        "fattree:k=4",
        "torus:4x4",
        "torus:2x2x4",
    ] {
        let p = json(&["predict", "--trace", t, "--topology", topo]);
        assert_eq!(p["messages"], 16 * 15, "{topo}");
        totals.push(p["total_us"].as_f64().unwrap());
    }
    // The crossbar never contends in a pairwise exchange (each step is a permutation): 15 steps
    // of one 1 KiB message each.
    assert!(
        (totals[0] - 15.0 * (5.0 + 0.8 * 1.024)).abs() < 1e-6,
        "{totals:?}"
    );
    // Multi-hop networks share links: never faster than the crossbar.
    assert!(totals.iter().all(|&x| x >= totals[0] - 1e-9), "{totals:?}");
    // 11 ranks on the dot file's 11 hosts.
    let o = commperf(&[
        "gen-trace",
        "incast",
        "--ranks",
        "11",
        "--bytes",
        "1k",
        "-o",
        t,
    ]);
    assert!(o.status.success());
    let p = json(&["predict", "--trace", t, "--topology", &dot]);
    assert_eq!(p["bottlenecks"][0], "S1->H0");
    assert_eq!(
        p["links"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["max_contention"].as_u64().unwrap())
            .max(),
        Some(10)
    );
}

#[test]
fn bounds_and_timelines_are_written() {
    let tl = TempFile::new("tl.json");
    let svg = TempFile::new("tl.svg");
    let p = json(&[
        "predict",
        "--trace",
        &data("actions_waitall.txt"),
        "--background",
        "exp:0.2",
        "--bounds",
        "--bounds-runs",
        "4",
        "--timeline",
        tl.to_str().unwrap(),
        "--timeline-svg",
        svg.to_str().unwrap(),
    ]);
    let b = &p["bounds"];
    let (best, avg, worst) = (
        b["best_us"].as_f64().unwrap(),
        b["average_us"].as_f64().unwrap(),
        b["worst_us"].as_f64().unwrap(),
    );
    assert!(best <= avg && avg <= worst, "{b}");
    assert_eq!(b["runs"], 4);
    let chrome: Value =
        serde_json::from_str(&std::fs::read_to_string(&tl).unwrap()).expect("chrome JSON");
    let events = chrome["traceEvents"].as_array().unwrap();
    // One flow start per message.
    assert_eq!(events.iter().filter(|e| e["ph"] == "s").count(), 3);
    let s = std::fs::read_to_string(&svg).unwrap();
    assert!(
        s.starts_with("<svg") || s.starts_with("<?xml"),
        "{}",
        &s[..40.min(s.len())]
    );
}

#[test]
fn bad_input_is_refused_with_the_place() {
    let bad = TempFile::new("bad.goal");
    std::fs::write(&bad, "num_ranks 2\nrank 0 {\nl1: send 8b to 7 tag 0\n}\n").unwrap();
    let (code, e) = err(&["predict", "--trace", bad.to_str().unwrap()]);
    assert_eq!(code, 1, "{e}");
    assert!(e.contains("bad.goal:3:"), "{e}");
    // What only the prediction finds (a receive never matched) names the trace it came from.
    let dead = TempFile::new("dead.goal");
    std::fs::write(
        &dead,
        "num_ranks 2\nrank 1 {\nl1: recv 8b from 0 tag 0\n}\n",
    )
    .unwrap();
    let (code, e) = err(&["predict", "--trace", dead.to_str().unwrap()]);
    assert_eq!(code, 1, "{e}");
    assert!(
        e.starts_with(&format!(
            "commperf: prediction of {} failed: deadlock",
            dead.display()
        )),
        "{e}"
    );
    // One rank's half of a split SimGrid trace, given alone: named as such, not a deadlock.
    let (code, e) = err(&["predict", "--trace", &data("actions1.txt")]);
    assert_eq!(code, 1);
    assert!(
        e.contains("looks like one rank's file") && e.contains("index file"),
        "{e}"
    );
    let (code, e) = err(&[
        "predict",
        "--trace",
        &data("actions1.txt"),
        "--topology",
        "torus:3",
    ]);
    assert_eq!(code, 2);
    assert!(e.contains("--topology"), "{e}");
    let (code, e) = err(&[
        "predict",
        "--trace",
        &data("binary_tree_32.goal"),
        "--topology",
        "fattree:k=2",
    ]);
    assert_eq!(code, 1);
    assert!(e.contains("32 ranks") && e.contains("hosts"), "{e}");
    let (code, _) = err(&["predict", "--trace", "/nonexistent/x.goal"]);
    assert_eq!(code, 1);
    let (code, e) = err(&[
        "predict",
        "--trace",
        &data("binary_tree_32.goal"),
        "--background",
        "const:1.5",
    ]);
    assert_eq!(code, 2);
    assert!(e.contains("--background"), "{e}");
}

#[test]
fn loggp_parameters_given_as_loggopsim_takes_them() {
    // LogGOPSim's answer for this schedule (tests/data/loggopsim-reference): host 7 at 16 500 ns.
    let p = json(&[
        "predict",
        "--trace",
        &data("loggopsim-reference/binomialtreebcast_8_1.goal"),
        "--model",
        "loggp",
        "--loggp",
        "L=2500,o=1500,g=1000,G=6,O=0",
        "--eager",
        "65535",
    ]);
    assert_eq!(p["total_us"].as_f64().unwrap(), 16.5);
    // The summary says where the costs came from, not "default profile".
    assert_eq!(
        p["profile"],
        "LogGP given: L=2500 o_s=1500 o_r=1500 g=1000 ns, G=6 O=0 ns/B"
    );
    assert_eq!(p["ranks"][7]["finish_us"].as_f64().unwrap(), 16.5);
    assert_eq!(p["ranks"][0]["finish_us"].as_f64().unwrap(), 4.5);
    // A tree of 1-byte messages has no compute: overhead is communication.
    assert_eq!(p["ranks"][0]["compute_us"].as_f64().unwrap(), 0.0);
    assert_eq!(p["ranks"][0]["comm_us"].as_f64().unwrap(), 4.5);
    let goal = data("loggopsim-reference/binomialtreebcast_8_1.goal");
    for (arg, want) in [
        ("L=1,o=1,g=1", "G is missing"),
        ("L=1,o=1,g=1,G=1,o_s=2", "o_s is given twice"),
        ("L=1,o=1,g=1,G=1,x=2", "unknown LogGP parameter 'x'"),
        ("L=-1,o=1,g=1,G=1", "L=-1: not a non-negative number of ns"),
        ("L", "'L' is not NAME=NS"),
    ] {
        let (code, e) = err(&[
            "predict", "--trace", &goal, "--model", "loggp", "--loggp", arg,
        ]);
        assert_eq!(code, 2, "{arg}: {e}");
        assert!(e.contains(want), "{arg}: {e}");
    }
    // Parameters by size: the tree's 1 B messages take the set from 1 B on (L 1000: three
    // hops of o + L + o = 4 µs), and a set from 2 B on touches none of them.
    let by_size = |from: &str| {
        json(&[
            "predict",
            "--trace",
            &goal,
            "--model",
            "loggp",
            "--loggp",
            "L=2500,o=1500,g=1000,G=6,O=0",
            "--eager",
            "65535",
            "--loggp-from",
            from,
        ])
    };
    let p = by_size("1:L=1000,o=1500,g=1000,G=6");
    assert_eq!(p["total_us"].as_f64().unwrap(), 12.0);
    assert!(
        p["profile"]
            .as_str()
            .unwrap()
            .ends_with("; from 1 B: L=1000 o_s=1500 o_r=1500 g=1000 ns, G=6 O=0 ns/B"),
        "{}",
        p["profile"]
    );
    assert_eq!(by_size("2:L=1000,o=1500,g=1000,G=6")["total_us"], 16.5);
    for (arg, want) in [
        ("L=1,o=1,g=1,G=1", "is not SIZE:L="),
        ("1q:L=1,o=1,g=1,G=1", "1q"),
        ("1k:L=1,o=1,g=1", "G is missing"),
    ] {
        let (code, e) = err(&[
            "predict",
            "--trace",
            &goal,
            "--model",
            "loggp",
            "--loggp-from",
            arg,
        ]);
        assert_eq!(code, 2, "{arg}: {e}");
        assert!(e.contains(want), "{arg}: {e}");
    }
    let (code, e) = err(&[
        "predict",
        "--trace",
        &goal,
        "--loggp-from",
        "1:L=1,o=1,g=1,G=1",
    ]);
    assert_eq!(code, 1);
    assert!(e.contains("add --model loggp"), "{e}");
    let (code, e) = err(&["predict", "--trace", &goal, "--loggp", "L=1,o=1,g=1,G=1"]);
    assert_eq!(code, 1);
    assert!(e.contains("add --model loggp"), "{e}");
    let (code, e) = err(&["predict", "--trace", &goal, "--loggp-receive", "last-byte"]);
    assert_eq!(code, 1);
    assert!(e.contains("add --model loggp"), "{e}");
    // The receive rule: 1001 B arrive while rank 1 computes 3 µs. LogGOPSim takes them in
    // when the compute ends, holding the CPU o + 1000·G (4.1 µs); LogGP's last byte arrives
    // at o + L + 1000·G = 2.1 µs, during the compute, and costs the CPU o only (3.1 µs).
    let t = TempFile::new("receive-rule.trace");
    std::fs::write(
        &t,
        "ranks 2\nrank 0\n  send 1 1001B\nrank 1\n  irecv 0 1001B as q\n  compute 3000ns\n  wait q\n",
    )
    .unwrap();
    let t = t.to_str().unwrap();
    for (rule, model, finish) in [
        ("first-byte", "loggp", 4.1),
        ("last-byte", "loggp (last-byte)", 3.1),
    ] {
        let p = json(&[
            "predict",
            "--trace",
            t,
            "--model",
            "loggp",
            "--loggp",
            "L=1000,o=100,g=200,G=1,O=0",
            "--loggp-receive",
            rule,
        ]);
        assert_eq!(p["model"], model);
        assert_eq!(
            p["ranks"][1]["finish_us"].as_f64().unwrap(),
            finish,
            "{rule}"
        );
    }
    // A message to oneself (1001 B, rank 0): through the network 100 + 1000 + 100 + 1000·G
    // = 2.2 µs; local, the model's overheads 100 + 100 = 0.2 µs; local with overheads of its
    // own (o_s 30, o_r 40, O 0.01 ns/B): 30 + 10 to send, 40 + 10 to receive = 0.09 µs.
    let t = TempFile::new("self.trace");
    std::fs::write(
        &t,
        "ranks 2\nrank 0\n  send 0 1001B\n  recv 0 1001B\nrank 1\n",
    )
    .unwrap();
    let t = t.to_str().unwrap();
    let own = [
        "--local-self-messages",
        "--self-overheads",
        "o_s=30,o_r=40,O=0.01",
    ];
    for (extra, finish) in [(&[][..], 2.2), (&own[..1], 0.2), (&own[..], 0.09)] {
        let got = json(&loggp_on(t, extra))["ranks"][0]["finish_us"]
            .as_f64()
            .unwrap();
        assert!((got - finish).abs() < 1e-9, "{extra:?}: {got}");
    }
    for (arg, want) in [
        ("o=1,x=2", "unknown overhead 'x'"),
        ("o_s=1", "o_r is missing"),
        ("o=1,o_r=2", "o_r is given twice"),
    ] {
        let (code, e) = err(&loggp_on(t, &[own[0], own[1], arg]));
        assert_eq!(code, 2, "{arg}: {e}");
        assert!(e.contains(want), "{arg}: {e}");
    }
    // The overheads are those of --local-self-messages, which they need.
    let (code, e) = err(&loggp_on(t, &["--self-overheads", "o=1"]));
    assert_eq!(code, 2, "{e}");
    assert!(e.contains("--local-self-messages"), "{e}");
    // Two messages that have arrived while rank 0 computed 5 µs: LogGOPSim's receiving NIC
    // takes the second g = 200 ns after the first (5.3 µs), --no-receive-gap after the first's
    // o_r (5.2 µs).
    let t = TempFile::new("gap.trace");
    std::fs::write(
        &t,
        "ranks 2\nrank 0\n  compute 5000ns\n  recv 1 1B\n  recv 1 1B\nrank 1\n  send 0 1B\n  send 0 1B\n",
    )
    .unwrap();
    let t = t.to_str().unwrap();
    for (extra, finish) in [(&[][..], 5.3), (&["--no-receive-gap"][..], 5.2)] {
        let got = json(&loggp_on(t, extra))["ranks"][0]["finish_us"]
            .as_f64()
            .unwrap();
        assert_eq!(got, finish, "{extra:?}");
    }
    let (code, e) = err(&["predict", "--trace", t, "--no-receive-gap"]);
    assert_eq!(code, 1, "{e}");
    assert!(e.contains("add --model loggp"), "{e}");
    // An exchange of 1 B (L 0, o 100): LogGOPSim's o_s + o_r = 0.2 µs; an overlap of 80 sends
    // the message at 20, but the peer's CPU is in its own send until 100: 0.2 µs still; a
    // wait of 60 frees it at 40, so the receive runs 40–140: 0.14 µs. An exchange's excess of
    // 30 lengthens the receive, whose message crossed rank 0's own: 0.23 µs.
    let t = TempFile::new("exchange.trace");
    std::fs::write(
        &t,
        "ranks 2\nrank 0\n  isend 1 1B as a\n  irecv 1 1B as b\n  waitall a b\n\
         rank 1\n  isend 0 1B as a\n  irecv 0 1B as b\n  waitall a b\n",
    )
    .unwrap();
    let t = t.to_str().unwrap();
    for (extra, finish) in [
        (&[][..], 0.2),
        (&["--overlap", "overlap=80"][..], 0.2),
        (&["--overlap", "overlap=80,wait=60"][..], 0.14),
        (&["--overlap", "overlap=0,duplex=30"][..], 0.23),
    ] {
        let got = rank0_finish_without_l(t, extra);
        assert!((got - finish).abs() < 1e-9, "{extra:?}: {got}");
    }
    for (arg, want) in [
        ("wait=5", "overlap is missing"),
        ("overlap=1,x=2", "unknown figure 'x'"),
        ("overlap=1,duplex=2,duplex=3", "duplex is given twice"),
        ("overlap=-1", "not a non-negative number"),
    ] {
        let (code, e) = err(&loggp_on(t, &["--overlap", arg]));
        assert_eq!(code, 2, "{arg}: {e}");
        assert!(e.contains(want), "{arg}: {e}");
    }
    let (code, e) = err(&["predict", "--trace", t, "--overlap", "overlap=1"]);
    assert_eq!(code, 1, "{e}");
    assert!(e.contains("--overlap is a rule of --model loggp"), "{e}");
    // Rank 0's message reaches rank 1 while it computes. LogGOPSim (arrival) has rank 1 take
    // it in (1010–1110) before sending its own, which rank 0 receives 1210–1310; at its wait,
    // rank 1 sends first (1010–1110) and rank 0 is done at 1210.
    let t = TempFile::new("progress.trace");
    std::fs::write(
        &t,
        "ranks 2\nrank 0\n  isend 1 1B as a\n  irecv 1 1B as b\n  waitall a b\n\
         rank 1\n  compute 1000ns\n  compute 10ns\n  isend 0 1B as a\n  irecv 0 1B as b\n  waitall a b\n",
    )
    .unwrap();
    let t = t.to_str().unwrap();
    for (progress, finish) in [("arrival", 1.31), ("wait", 1.21)] {
        let got = rank0_finish_without_l(t, &["--progress", progress]);
        assert!((got - finish).abs() < 1e-9, "{progress}: {got}");
    }
    let (code, e) = err(&["predict", "--trace", t, "--progress", "wait"]);
    assert_eq!(code, 1, "{e}");
    assert!(e.contains("--progress is a rule of --model loggp"), "{e}");
}

#[test]
fn link_rates_read_b_as_bytes_and_small_b_as_bits() {
    // One 1,000,000-byte message between two hosts of the crossbar under the default profile
    // (10 Gbit/s = 1.25 B/ns, 5 µs): 5 + 1e6 / 1.25 ns = 805 µs. `--link host=1.25GB/s` is the
    // same bandwidth (1.25 gigabytes per second), so the same 805 µs; an older reading took it as
    // gigabits, 8× slower.
    let t = TempFile::new("one-message.trace");
    std::fs::write(
        &t,
        "ranks 2\nrank 0\n  send 1 1000000\nrank 1\n  recv 0 1000000\n",
    )
    .unwrap();
    let total = |extra: &[&str]| {
        let mut a = vec!["predict", "--trace", t.to_str().unwrap()];
        a.extend(extra);
        json(&a)["total_us"].as_f64().unwrap()
    };
    let plain = total(&[]);
    assert!((plain - 805.0).abs() < 1e-6, "{plain}");
    for rate in [
        "1.25GB/s",
        "10Gb/s",
        "10Gbit/s",
        "1.25GBps",
        "10000Mbps",
        "1250MBps",
    ] {
        let link = format!("host={rate}");
        let got = total(&["--link", &link]);
        assert!((got - 805.0).abs() < 1e-6, "--link {link}: {got} µs");
    }
    // Half the bandwidth, written in bytes or in bits, is one rate: slower, and the same.
    let bytes = total(&["--link", "host=625MB/s"]);
    let bits = total(&["--link", "host=5Gb/s"]);
    assert!(bytes > 1600.0 && bytes == bits, "{bytes} {bits}");
    // Ambiguous and unknown units are refused by name, as a usage error.
    let (code, e) = err(&[
        "predict",
        "--trace",
        t.to_str().unwrap(),
        "--link",
        "host=10mbps",
    ]);
    assert_eq!(code, 2, "{e}");
    assert!(e.contains("'mbps' is ambiguous"), "{e}");
    let (code, e) = err(&[
        "predict",
        "--trace",
        t.to_str().unwrap(),
        "--link",
        "host=10GB",
    ]);
    assert_eq!(code, 2, "{e}");
    assert!(
        e.contains("unknown unit '10GB'") || e.contains("unknown unit 'GB'"),
        "{e}"
    );
}

#[test]
fn hostile_inputs_are_refused_by_name_never_panicked_on_or_hung_on() {
    let t = TempFile::new("hostile.trace");
    std::fs::write(
        &t,
        "ranks 2\nrank 0\n  send 1 1000000\nrank 1\n  recv 0 1000000\n",
    )
    .unwrap();
    let t = t.to_str().unwrap();
    let one_line = |e: &str| {
        assert_eq!(e.trim_end().lines().count(), 1, "{e}");
        assert!(!e.contains("panicked"), "{e}");
    };
    // A SimGrid route through one link twice: the engine indexed past a route's hops.
    let plat = TempFile::new("dup.xml");
    std::fs::write(
        &plat,
        r#"<?xml version='1.0'?>
<platform version="4.1"><zone id="z" routing="Full">
  <host id="a" speed="1Gf"/><host id="b" speed="1Gf"/>
  <link id="l1" bandwidth="1GBps" latency="1us"/>
  <route src="a" dst="b"><link_ctn id="l1"/><link_ctn id="l1"/></route>
</zone></platform>
"#,
    )
    .unwrap();
    let (code, e) = err(&[
        "predict",
        "--trace",
        t,
        "--topology",
        plat.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{e}");
    one_line(&e);
    assert!(
        e.contains("dup.xml:5:45: route `a` -> `b` lists link `l1` twice"),
        "{e}"
    );
    // A redraw period under the 1 ns clock tick redrew forever at one instant.
    let (code, e) = err(&[
        "predict",
        "--trace",
        t,
        "--background",
        "exp:0.5",
        "--background-period",
        "0.0001",
    ]);
    assert_eq!(code, 2, "{e}");
    assert!(
        e.contains("--background-period") && e.contains("rounds to 0 ns"),
        "{e}"
    );
    // A LogGP parameter whose sums leave f64's range printed `-` and null, exit 0.
    let (code, e) = err(&[
        "predict",
        "--trace",
        t,
        "--model",
        "loggp",
        "--loggp",
        "L=1e308,o=1,g=1,G=1",
    ]);
    assert_eq!(code, 2, "{e}");
    assert!(
        e.contains("--loggp") && e.contains("L=1e308: more than 1e15 ns"),
        "{e}"
    );
    // A link slower than the engine's floor rate was silently sped up to 1.25 B/s.
    let (code, e) = err(&["predict", "--trace", t, "--link", "host=1B/s"]);
    assert_eq!(code, 1, "{e}");
    one_line(&e);
    assert!(
        e.contains("link class `host`: 1 B/s is slower than the engine models (1.25 B/s"),
        "{e}"
    );
}
