//! End-to-end tests of `commperf calibrate`: a real (short) measurement over shared memory, the
//! Netgauge conversion of a real file, and hand-given Tcom.

use commperf_testkit::{commperf, stderr, TempFile};
use serde_json::Value;

fn f(v: &Value, k: &str) -> f64 {
    v[k].as_f64()
        .unwrap_or_else(|| panic!("{k} missing in {v}"))
}

/// Pieces start at 0, follow each other without gap and are ordered; the last is open-ended.
fn check_pieces(p: &Value) -> Vec<(u64, u64, f64, f64)> {
    let pieces: Vec<(u64, u64, f64, f64)> = p["tcom"]
        .as_array()
        .expect("tcom")
        .iter()
        .map(|t| {
            (
                t["from_bytes"].as_u64().unwrap(),
                t["to_bytes"].as_u64().unwrap(),
                f(t, "intercept_us"),
                f(t, "slope_us_per_byte"),
            )
        })
        .collect();
    assert!(!pieces.is_empty());
    assert_eq!(pieces[0].0, 0);
    for w in pieces.windows(2) {
        assert!(w[0].0 <= w[0].1, "{pieces:?}");
        assert_eq!(w[1].0, w[0].1 + 1, "contiguous: {pieces:?}");
    }
    assert_eq!(pieces.last().unwrap().1, u64::MAX);
    pieces
}

fn tcom_at(pieces: &[(u64, u64, f64, f64)], size: u64) -> f64 {
    let p = pieces
        .iter()
        .find(|p| p.0 <= size && size <= p.1)
        .expect("a piece holds every size");
    p.2 + p.3 * size as f64
}

#[test]
fn calibrate_measures_shm_into_a_profile() {
    let out = TempFile::new("shm.json");
    let o = commperf(&[
        "calibrate",
        "--transport",
        "shm",
        "--sizes",
        "8,64,1KiB,64KiB,1MiB",
        "--iters",
        "50",
        "-o",
        out.to_str().unwrap(),
    ]);
    // A busy machine can preempt a ping-pong for milliseconds at any size; calibrate measures
    // again, and after three disturbed measurements refuses, naming them, and writes nothing.
    // That refusal is right, and all this test can check on such a machine.
    let e = stderr(&o);
    if !o.status.success() && e.contains("the measurement was disturbed") {
        assert_eq!(o.status.code(), Some(1), "{e}");
        assert_eq!(e.matches("measuring again (attempt").count(), 2, "{e}");
        assert!(
            !out.exists(),
            "a refused calibration wrote {}",
            out.display()
        );
        eprintln!(
            "calibrate_measures_shm_into_a_profile: the machine is too busy to calibrate on: {e}"
        );
        return;
    }
    assert!(o.status.success(), "{e}");
    let text = std::fs::read_to_string(&out).expect("profile written");
    let p: Value = serde_json::from_str(&text).expect("profile is JSON");
    assert_eq!(p["schema_version"], 2);
    assert_eq!(p["source"], "commperf calibrate --transport shm");
    assert_eq!(p["transport"], "shm");
    // The pipeline stages (Fröhlich et al. 2000, §3.2), and the fragment cap from the pipelined
    // probe: the largest fragment within 3 % of the fastest.
    let pl = &p["pipeline"];
    let names: Vec<&str> = (pl["stages"].as_array().unwrap().iter())
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "copy into the ring",
            "hand-over between the cores",
            "copy out of the ring"
        ]
    );
    for s in pl["stages"].as_array().unwrap() {
        assert!(
            f(s, "beta_us") >= 0.0 && f(s, "tau_us_per_byte") >= 0.0,
            "{s}"
        );
    }
    assert!(
        f(&pl["stages"][0], "tau_us_per_byte") > 0.0,
        "copying costs per byte"
    );
    assert!(
        f(&pl["stages"][2], "tau_us_per_byte") > 0.0,
        "copying costs per byte"
    );
    // The probes: a 64 KiB message in the fragments below it, 1, 4, 16 and 64 MiB in all; the
    // cap from the 4 MiB one.
    let all = pl["pipelined"].as_array().unwrap();
    let ladder = [4096u64, 8192, 16384, 32768, 65536, 131072, 262080];
    let mut want: Vec<(u64, u64)> = ladder[..4].iter().map(|&f| (64 << 10, f)).collect();
    for m in [1u64 << 20, 4 << 20, 16 << 20, 64 << 20] {
        want.extend(ladder.iter().map(|&f| (m, f)));
    }
    let got: Vec<(u64, u64)> = (all.iter())
        .map(|q| {
            let n = |k: &str| q[k].as_u64().unwrap();
            (n("message_bytes"), n("fragment_bytes"))
        })
        .collect();
    assert_eq!(got, want);
    let probe: Vec<&Value> = (all.iter())
        .filter(|q| q["message_bytes"] == 4 << 20)
        .collect();
    let best = (probe.iter())
        .map(|q| f(q, "one_way_us"))
        .fold(f64::INFINITY, f64::min);
    let cap = (probe.iter())
        .filter(|q| f(q, "one_way_us") <= best * 1.03)
        .map(|q| q["fragment_bytes"].as_u64().unwrap())
        .max()
        .unwrap();
    assert_eq!(pl["max_fragment_bytes"], cap);
    assert_eq!(pl["min_fragment_bytes"], 4096);
    assert!(p["machine"]["cpu_model"].is_string());
    let pieces = check_pieces(&p);
    let points = p["points"].as_array().unwrap();
    assert_eq!(points.len(), 5);
    let measured = points
        .iter()
        .find(|q| q["size_bytes"] == 1 << 20)
        .map(|q| f(q, "time_us"))
        .unwrap();
    let fitted = tcom_at(&pieces, 1 << 20);
    assert!(
        fitted < 2.0 * measured && measured < 2.0 * fitted,
        "Tcom(1 MiB) = {fitted} µs against {measured} µs measured"
    );
    // LogGP rows by default, one per size (a size whose overheads came out below zero beyond
    // noise is no point: on a loaded machine one or two may be left out).
    let loggp = p["loggp"].as_array().unwrap();
    assert!((3..=5).contains(&loggp.len()), "{loggp:?}");
    for l in loggp {
        for k in ["L_us", "o_s_us", "o_r_us", "g_us", "G_us_per_byte"] {
            assert!(l[k].is_number(), "{k} in {l}");
        }
    }
    // The summary on stderr names the pieces.
    let e = stderr(&o);
    assert!(e.contains("Tcom in"), "{e}");
}

#[test]
fn calibrate_converts_a_netgauge_file() {
    let file = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../predict/tests/data/ng-mpi-tukey.dat"
    );
    let o = commperf(&["calibrate", "--from-netgauge", file]);
    assert!(o.status.success(), "{}", stderr(&o));
    let p: Value = serde_json::from_slice(&o.stdout).expect("profile on stdout");
    let pieces = check_pieces(&p);
    assert!(
        pieces.windows(2).any(|w| (8192..16384).contains(&w[0].1)),
        "the protocol change lies between 8 and 16 KiB: {pieces:?}"
    );
    assert_eq!(p["loggp"].as_array().unwrap().len(), 27);
    assert!(
        stderr(&o).contains("breakpoints: 8K|8193"),
        "{}",
        stderr(&o)
    );

    let o = commperf(&["calibrate", "--from-netgauge", "/nonexistent/ng.dat"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("/nonexistent/ng.dat"), "{}", stderr(&o));
}

#[test]
fn calibrate_takes_tcom_by_hand_and_refuses_bad_specs() {
    let o = commperf(&[
        "calibrate",
        "--tcom",
        "0-2020:10us+0.01us/B,2021-:25us+0.008us/B",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let p: Value = serde_json::from_slice(&o.stdout).unwrap();
    let pieces = check_pieces(&p);
    assert_eq!(
        pieces,
        [(0, 2020, 10.0, 0.01), (2021, u64::MAX, 25.0, 0.008)]
    );
    assert!(p["source"].as_str().unwrap().starts_with("hand --tcom"));

    for (spec, needle) in [
        (
            "0-2020:10us+0.01us/B,2000-:25us+0.008us/B",
            "piece 2 '2000-:25us+0.008us/B': must start at 2021 B",
        ),
        ("0-2020:10us+0.01us/B", "the last piece must be open-ended"),
        ("0-:10+0.01us/B", "'10' has no time unit"),
        ("0-:10us+0.01us", "must end in /B"),
        ("0-:10us", "positive slope"),
        ("banana", "no time unit"),
    ] {
        let o = commperf(&["calibrate", "--tcom", spec]);
        assert_eq!(o.status.code(), Some(2), "{spec}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(
            e.starts_with("commperf: ") && e.contains(needle),
            "{spec}: {e}"
        );
        assert_eq!(e.lines().count(), 1, "{e}");
        assert!(o.stdout.is_empty());
    }
}
