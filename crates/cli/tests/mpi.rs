//! The MPI layer end to end: real mpirun, real ranks. These tests need a build with
//! `--features mpi` and an MPI launcher; without them they are `ignored` with the reason in
//! libtest's summary (build-support/caps.rs), unless `COMMPERF_REQUIRE_MPI=1` (set by CI) makes
//! a missing MPI a failure.

use commperf_testkit::{exe, ok, text, TempDir};
use serde_json::Value;
use std::process::{Command, Output};

mod common;

/// Held by the tests that use shm between ranks: one of them checks that no segment is left
/// behind, which another one running at the same time would make fail.
static SHM: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A build with the `mpi` feature and an `mpirun` on the PATH, or the test fails saying which
/// is missing. Each test here is `ignored` with that reason where the build found either absent
/// (build-support/caps.rs); it runs without them only when `COMMPERF_REQUIRE_MPI=1` (CI) forces
/// it, and then fails.
fn need_mpi(test: &str) {
    let why = if !cfg!(feature = "mpi") {
        Some("this build has no MPI (cargo test --features commperf/mpi)".to_string())
    } else if Command::new("mpirun").arg("--version").output().is_err() {
        Some("no mpirun in PATH (apt-get install openmpi-bin libopenmpi-dev)".to_string())
    } else {
        None
    };
    if let Some(why) = why {
        let forced = if std::env::var_os("COMMPERF_REQUIRE_MPI").is_some() {
            "COMMPERF_REQUIRE_MPI is set, but "
        } else {
            ""
        };
        panic!("{test}: {forced}{why}");
    }
}

/// `mpirun -np N` with what running as root and on few cores needs, under a time limit: a
/// hang is a failure, not a stuck test run.
fn mpirun(np: u32, args: &[&str]) -> Output {
    let mut c = Command::new("timeout");
    c.args([
        "-k",
        "10",
        "240",
        "mpirun",
        "-np",
        &np.to_string(),
        "--oversubscribe",
    ]);
    c.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .arg(exe())
        .args(args);
    c.output().expect("run mpirun")
}

fn f(v: &Value, k: &str) -> f64 {
    v[k].as_f64()
        .unwrap_or_else(|| panic!("{k} missing in {v}"))
}

/// Shared-memory segments of commperf in /dev/shm.
fn shm_segments() -> std::collections::BTreeSet<String> {
    std::fs::read_dir("/dev/shm")
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("commperf-"))
        .collect()
}

/// Segments in /dev/shm now that were not in `before` and whose creator (the pid in the name)
/// is gone: what a finished run left behind. Segments of other runs on the machine (present
/// before, or whose creator still runs and will remove them) are not this run's.
fn leaked_since(before: &std::collections::BTreeSet<String>) -> Vec<String> {
    shm_segments()
        .into_iter()
        .filter(|n| !before.contains(n))
        .filter(|n| {
            let pid = n["commperf-".len()..].split('-').next().unwrap_or("");
            !std::path::Path::new("/proc").join(pid).exists()
        })
        .collect()
}

/// A JSON file the run wrote; a missing or malformed one fails the test naming it.
fn read_json(p: &std::path::Path) -> Value {
    let bytes = std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn rows<'a>(v: &'a Value, bench: &str) -> Vec<&'a Value> {
    v["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["benchmark"] == bench)
        .collect()
}

#[test]
#[cfg_attr(
    not(all(commperf_mpi_feature, commperf_has_mpirun)),
    ignore = "needs a build with the mpi feature (--features commperf/mpi) and Open MPI's mpirun on the PATH"
)]
fn the_mpi_layer_measures_latency_and_bandwidth_and_rank_0_writes_the_results() {
    need_mpi("mpi latency/bw");
    let dir = TempDir::new("mpi-test-latency-bw");
    let out = dir.join("lat.json");
    let o = mpirun(
        2,
        &[
            "bench",
            "latency",
            "bw",
            "bibw",
            "--transport",
            "mpi",
            "--sizes",
            "8,256K",
            "--iters",
            "200",
            "-o",
            out.to_str().unwrap(),
        ],
    );
    ok(&o);
    // Rank 0 alone prints the table (and says it wrote the file).
    let stdout = text(&o.stdout);
    assert_eq!(
        stdout.matches("# commperf latency | transport mpi").count(),
        1,
        "{stdout}"
    );
    assert_eq!(text(&o.stderr).matches("wrote").count(), 1);
    let v = read_json(&out);
    assert_eq!(v["schema_version"], 2);
    assert_eq!(v["options"]["launcher"], "mpi");
    let lib = v["options"]["mpi_library"].as_str().unwrap();
    assert!(lib.contains("Open MPI") || lib.contains("MPICH"), "{lib}");
    let lat = rows(&v, "latency");
    assert_eq!(lat.len(), 2);
    assert!(lat
        .iter()
        .all(|r| r["transport"] == "mpi" && r["iterations"] == 200));
    // 256 KiB take longer than 8 B, and both take some time but not seconds.
    let (small, big) = (f(lat[0], "p50_us"), f(lat[1], "p50_us"));
    assert!(small > 0.0 && small < big && big < 1e5, "{small} {big}");
    let bw = rows(&v, "bw");
    assert_eq!(bw.len(), 2);
    for r in bw.iter().chain(rows(&v, "bibw").iter()) {
        let size = r["size_bytes"].as_f64().unwrap();
        let want = f(r, "msgs_per_s") * size / 1e6;
        assert!((f(r, "mb_per_s") - want).abs() <= 1e-6 * want, "{r}");
        assert_eq!(r["window"], 64);
    }
    assert!(f(bw[1], "mb_per_s") > f(bw[0], "mb_per_s"));
}

#[test]
#[cfg_attr(
    not(all(commperf_mpi_feature, commperf_has_mpirun)),
    ignore = "needs a build with the mpi feature (--features commperf/mpi) and Open MPI's mpirun on the PATH"
)]
fn the_whole_suite_runs_at_the_mpi_layer_and_validates_every_byte() {
    need_mpi("mpi suite");
    let dir = TempDir::new("mpi-test-suite");
    let out = dir.join("all.json");
    let o = mpirun(
        2,
        &[
            "bench",
            "all",
            "--transport",
            "mpi",
            "--sizes",
            "8,4K",
            "--iters",
            "40",
            "--validate",
            "--window",
            "4",
            "-o",
            out.to_str().unwrap(),
        ],
    );
    ok(&o);
    let v = read_json(&out);
    let all = v["results"].as_array().unwrap();
    // Every row but loggp's (the PRTT rounds time, they do not check bytes, at every layer).
    assert!(
        all.iter()
            .all(|r| r["validated"] == true || r["benchmark"] == "loggp"),
        "every row validated"
    );
    for b in ["latency", "bw", "bibw", "mr", "loggp", "bufmgmt"] {
        assert_eq!(rows(&v, b).len(), 2, "{b}: one row per size");
    }
    // Extended tests: their cost is their p50 minus the baseline measured with them, judged
    // against the noise of both.
    for b in ["bufmgmt", "blocking", "noncontig", "cq", "conns"] {
        for r in rows(&v, b) {
            common::assert_cost_judged(r);
        }
    }
    // blocking: MPI_Wait (block) and an MPI_Test loop (poll) per size.
    let modes: Vec<&str> = rows(&v, "blocking")
        .iter()
        .map(|r| r["mode"].as_str().unwrap())
        .collect();
    assert_eq!(modes, ["block", "poll", "block", "poll"]);
    // noncontig: segment counts 1..8 at 8 B and 1..64 at 4 KiB, datatype and packed each.
    let nc = rows(&v, "noncontig");
    assert_eq!(nc.len(), 2 * (4 + 7));
    assert_eq!(nc.iter().filter(|r| r["packed"] == true).count(), 4 + 7);
    // cq and conns measure 16-byte messages once.
    assert_eq!(rows(&v, "cq").len(), 1);
    assert_eq!(rows(&v, "cq")[0]["size_bytes"], 16);
    assert_eq!(rows(&v, "conns")[0]["connections"], 1);
    // loggp: the PRTT figures give an o_s and o_r per size and LogGOPS per piece; none is
    // ever negative (what came out below zero beyond noise is absent, with a note).
    for r in rows(&v, "loggp") {
        for k in [
            "o_s_us",
            "o_r_us",
            "g_us",
            "G_us_per_byte",
            "L_us",
            "overlap_us",
        ] {
            assert!(r[k].as_f64().is_none_or(|x| x >= 0.0), "{k} in {r}");
        }
        let one_way = r["p50_us"].as_f64().unwrap_or(0.0);
        assert!(one_way > 0.0, "{r}");
        // The exchange, both ranks sending and receiving at once, per size: about a one-way
        // trip (its receive's message has to arrive; it took 1.1–1.5 of one here). Timed in
        // batches of 8: a batch taken for one exchange, or one divided by 64, is far out. The
        // bounds leave room for this VM's slow spells (every figure ×4) between the two.
        let x = r["exchange_us"]
            .as_f64()
            .expect("an exchange at every size");
        assert!(
            (0.25 * one_way..=16.0 * one_way).contains(&x),
            "exchange {x} µs against one-way {one_way} µs: {r}"
        );
    }
    // A piece's send wait lies within the largest o_s(s) of its sizes (each size's share is at
    // most its own o_s(s); here 8 B and 4 KiB share one piece, and Open MPI's shared memory
    // sends the second by rendezvous).
    let loggp = rows(&v, "loggp");
    for r in &loggp {
        let Some(w) = r["send_wait_us"].as_f64() else {
            continue;
        };
        let most = loggp
            .iter()
            .filter(|q| q["piece_from_bytes"] == r["piece_from_bytes"])
            .filter_map(|q| q["o_s_us"].as_f64())
            .fold(0.0, f64::max);
        assert!(
            (0.0..=most + 1e-9).contains(&w),
            "wait {w} against o_s(s) ≤ {most}: {r}"
        );
        // The duplex figure, the exchange's excess over o_s(s) + o_r(s), is one of its sizes'
        // (the median) and excludes a wait.
        let d = r["duplex_us"]
            .as_f64()
            .expect("a duplex figure beside the wait");
        let excess = loggp
            .iter()
            .filter(|q| q["piece_from_bytes"] == r["piece_from_bytes"])
            .filter_map(|q| {
                Some(q["exchange_us"].as_f64()? - q["o_s_us"].as_f64()? - q["o_r_us"].as_f64()?)
            })
            .fold(0.0, f64::max);
        assert!(
            (0.0..=excess + 1e-5).contains(&d) && (d == 0.0 || w == 0.0),
            "duplex {d} against an excess ≤ {excess}, wait {w}: {r}"
        );
    }
}

#[test]
#[cfg_attr(
    not(all(commperf_mpi_feature, commperf_has_mpirun)),
    ignore = "needs a build with the mpi feature (--features commperf/mpi) and Open MPI's mpirun on the PATH"
)]
fn transports_run_between_ranks_that_mpirun_placed() {
    need_mpi("--launcher mpi");
    let _shm = SHM.lock().unwrap_or_else(|e| e.into_inner());
    let dir = TempDir::new("mpi-test-launched");
    let out = dir.join("launched.json");
    let before = shm_segments();
    let o = mpirun(
        2,
        &[
            "bench",
            "latency",
            "bw",
            "--launcher",
            "mpi",
            "-t",
            "tcp,shm",
            "--sizes",
            "8,64K",
            "--iters",
            "200",
            "-o",
            out.to_str().unwrap(),
        ],
    );
    ok(&o);
    let v = read_json(&out);
    assert_eq!(v["options"]["launcher"], "mpi");
    assert!(v["options"]["peer"]
        .as_str()
        .unwrap()
        .starts_with("rank 1 on "));
    let ts: Vec<&str> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["transport"].as_str().unwrap())
        .collect();
    assert_eq!(ts.iter().filter(|&&t| t == "tcp").count(), 4);
    assert_eq!(ts.iter().filter(|&&t| t == "shm").count(), 4);
    let leftovers = leaked_since(&before);
    assert!(leftovers.is_empty(), "shm segments left: {leftovers:?}");
}

#[test]
#[cfg_attr(
    not(all(commperf_mpi_feature, commperf_has_mpirun)),
    ignore = "needs a build with the mpi feature (--features commperf/mpi) and Open MPI's mpirun on the PATH"
)]
fn four_ranks_measure_as_two_pairs_and_rates_add_up() {
    need_mpi("multi-pair");
    for args in [
        &["--transport", "mpi"][..],
        &["--launcher", "mpi", "-t", "uds"][..],
    ] {
        let dir = TempDir::new("mpi-test-pairs");
        let out = dir.join("pairs.json");
        let mut a = vec![
            "bench", "latency", "mr", "--sizes", "8", "--iters", "30", "-o",
        ];
        a.push(out.to_str().unwrap());
        a.extend(args);
        let o = mpirun(4, &a);
        ok(&o);
        let v = read_json(&out);
        assert!(
            v["options"]["peer"]
                .as_str()
                .unwrap()
                .ends_with("(2 pairs)"),
            "{v}"
        );
        let all = v["results"].as_array().unwrap();
        assert_eq!(all.len(), 2);
        assert!(all.iter().all(|r| r["pairs"] == 2), "{args:?}: {all:?}");
    }
}

#[test]
#[cfg_attr(
    not(all(commperf_mpi_feature, commperf_has_mpirun)),
    ignore = "needs a build with the mpi feature (--features commperf/mpi) and Open MPI's mpirun on the PATH"
)]
fn one_rank_or_an_odd_count_is_a_clear_error_and_an_mpi_abort() {
    need_mpi("bad rank counts");
    // Open MPI's own "MPI_ABORT was invoked" report travels from the aborting rank to mpirun
    // and can be lost when the rank is torn down first: on a loaded machine mpirun printed
    // "ORTE_ERROR_LOG: Out of resource in file ../orte/util/show_help.c" instead (1 run in 6).
    // commperf's message is required every time, Open MPI's report in one of three runs.
    let mut without = Vec::new();
    let reported = (0..3).any(|_| {
        let o = mpirun(1, &["bench", "latency", "--launcher", "mpi", "-t", "tcp"]);
        assert!(!o.status.success());
        let e = text(&o.stderr);
        assert!(
            e.contains("commperf: rank 0: this MPI job has one rank"),
            "{e}"
        );
        let aborted = e.contains("MPI_ABORT");
        without.push(e);
        aborted
    });
    assert!(reported, "no MPI_ABORT report in 3 runs: {without:#?}");
    let o = mpirun(3, &["bench", "latency", "--transport", "mpi"]);
    assert!(!o.status.success());
    let e = text(&o.stderr);
    for r in 0..3 {
        assert!(
            e.contains(&format!("commperf: rank {r}: this MPI job has 3 ranks")),
            "{e}"
        );
    }
}

#[test]
#[cfg_attr(
    not(all(commperf_mpi_feature, commperf_has_mpirun)),
    ignore = "needs a build with the mpi feature (--features commperf/mpi) and Open MPI's mpirun on the PATH"
)]
fn differing_commperf_versions_are_named_on_every_rank() {
    need_mpi("version check");
    let o = Command::new("timeout")
        .args([
            "-k",
            "10",
            "120",
            "mpirun",
            "--oversubscribe",
            "-np",
            "1",
            exe(),
        ])
        .args([
            "bench",
            "latency",
            "--transport",
            "mpi",
            ":",
            "-np",
            "1",
            exe(),
        ])
        .args([
            "bench",
            "latency",
            "--transport",
            "mpi",
            "--claim-version",
            "9.9.9",
        ])
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .output()
        .unwrap();
    assert!(!o.status.success());
    let e = text(&o.stderr);
    let want = "commperf versions differ between ranks: rank 0 runs commperf";
    for r in 0..2 {
        assert!(e.contains(&format!("commperf: rank {r}: {want}")), "{e}");
    }
    assert!(e.contains("rank 1 runs commperf 9.9.9"), "{e}");
    assert!(
        !text(&o.stdout).contains("# commperf latency"),
        "nothing measured"
    );
}

#[test]
#[cfg_attr(
    not(all(commperf_mpi_feature, commperf_has_mpirun)),
    ignore = "needs a build with the mpi feature (--features commperf/mpi) and Open MPI's mpirun on the PATH"
)]
fn outside_mpirun_commperf_starts_two_ranks_itself() {
    need_mpi("mpirun relaunch");
    let o = Command::new("timeout")
        .args(["-k", "10", "240", exe()])
        .args([
            "bench",
            "latency",
            "--transport",
            "mpi",
            "--sizes",
            "8",
            "--iters",
            "100",
        ])
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .output()
        .unwrap();
    ok(&o);
    let e = text(&o.stderr);
    assert!(e.contains("not started by mpirun; running 2 ranks"), "{e}");
    assert_eq!(
        text(&o.stdout)
            .matches("# commperf latency | transport mpi")
            .count(),
        1
    );
}

#[test]
fn mpi_options_are_checked_before_anything_starts() {
    for (args, needle) in [
        (&["bench", "-t", "shm,mpi"][..], "mpi runs alone"),
        (
            &["bench", "-t", "mpi", "--mode", "block"][..],
            "--mode poll",
        ),
        (
            &["bench", "--layers", "mpi,shm"][..],
            "lower layer comes first",
        ),
        (&["bench", "--layers", "shm"][..], "two different layers"),
        (
            &["bench", "-t", "shm", "--mpi-calls", "nonblocking"][..],
            "--mpi-calls applies to the mpi transport",
        ),
        (
            &["bench", "--launcher", "mpi", "--cpus", "0,1"][..],
            "mpirun places and binds",
        ),
    ] {
        let o = Command::new(exe()).args(args).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let e = text(&o.stderr);
        assert!(e.contains(needle), "{args:?}: {e}");
    }
    if !cfg!(feature = "mpi") {
        let o = Command::new(exe())
            .args(["bench", "-t", "mpi"])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(1));
        assert!(text(&o.stderr).contains("built without MPI support"));
    }
}

#[test]
#[cfg_attr(
    not(all(commperf_mpi_feature, commperf_has_mpirun)),
    ignore = "needs a build with the mpi feature (--features commperf/mpi) and Open MPI's mpirun on the PATH"
)]
fn layers_runs_both_layers_between_the_same_ranks_and_compares_them() {
    need_mpi("--layers");
    let _shm = SHM.lock().unwrap_or_else(|e| e.into_inner());
    let dir = TempDir::new("mpi-test-layers");
    let out = dir.join("layers.json");
    let before = shm_segments();
    let o = mpirun(
        2,
        &[
            "bench",
            "latency",
            "bw",
            "--layers",
            "shm,mpi",
            "--sizes",
            "8,64K",
            "--iters",
            "200",
            "-o",
            out.to_str().unwrap(),
        ],
    );
    ok(&o);
    let leftovers = leaked_since(&before);
    assert!(leftovers.is_empty(), "shm segments left: {leftovers:?}");
    let shm = read_json(&out.with_file_name("layers.shm.json"));
    let mpi = read_json(&out.with_file_name("layers.mpi.json"));
    let cmp = read_json(&out);
    assert_eq!(shm["options"]["transports"][0], "shm");
    assert_eq!(mpi["options"]["transports"][0], "mpi");
    assert_eq!(cmp["schema_version"], 1);
    let lat = cmp["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["benchmark"] == "latency")
        .unwrap();
    // The comparison is computed from the two reports written beside it.
    for (i, p) in lat["points"].as_array().unwrap().iter().enumerate() {
        let (l, u) = (
            f(&shm["results"][i], "p50_us"),
            f(&mpi["results"][i], "p50_us"),
        );
        assert_eq!(f(p, "lower_p50_us"), l);
        assert_eq!(f(p, "upper_p50_us"), u);
        assert!((f(p, "added_us") - (u - l)).abs() < 1e-12);
    }
    assert!(
        lat["verdict"].as_str().unwrap().starts_with("mpi "),
        "{lat}"
    );
    let stdout = text(&o.stdout);
    assert!(stdout.contains("# commperf compare latency"), "{stdout}");
    assert_eq!(stdout.matches("# verdict: ").count(), 2, "{stdout}");
}

#[test]
#[cfg_attr(
    not(all(commperf_mpi_feature, commperf_has_mpirun)),
    ignore = "needs a build with the mpi feature (--features commperf/mpi) and Open MPI's mpirun on the PATH"
)]
fn mpi_calls_nonblocking_sends_and_receives_with_requests() {
    need_mpi("mpi --mpi-calls");
    // The interposer counts the calls the bench makes: with `--mpi-calls nonblocking` loggp's
    // PRTT rounds are MPI_Isend / MPI_Irecv (each then MPI_Wait), with the default MPI_Send /
    // MPI_Recv; what is left of the other kind is the session's few control messages, and
    // with either the exchange after each size's rounds, (warm-up + repetitions) batches of 8
    // MPI_Isend a rank.
    let dir = TempDir::new("mpi-test-mpi-calls");
    let calls = |how: &str| -> (u64, u64, Value) {
        let mon = dir.join(format!("mon-{how}"));
        let out = dir.join(format!("loggp-{how}.json"));
        let o = Command::new("timeout")
            .args(["-k", "10", "240", exe(), "monitor", "-o"])
            .arg(&mon)
            .args(["--", "mpirun", "-np", "2", "--oversubscribe", exe()])
            .args(["bench", "loggp", "-t", "mpi", "--launcher", "mpi"])
            .args(["--sizes", "8,1k", "--iters", "50", "--mpi-calls", how, "-o"])
            .arg(&out)
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .output()
            .unwrap();
        ok(&o);
        let summary = read_json(&mon.join("summary.json"));
        let count = |call: &str| -> u64 {
            summary["calls"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|c| c["rank"] == 0 && c["call"] == call)
                .map(|c| c["count"].as_u64().unwrap())
                .sum()
        };
        (count("MPI_Isend"), count("MPI_Send"), read_json(&out))
    };
    let (isend, send, v) = calls("nonblocking");
    assert_eq!(v["options"]["mpi_calls"], "nonblocking");
    // 2 sizes × 4 PRTT figures × (warm-up + 50) rounds of up to 10 messages: thousands.
    assert!(
        isend > 1000 && send < 50,
        "MPI_Isend {isend}, MPI_Send {send}"
    );
    assert_eq!(rows(&v, "loggp").len(), 2);
    let (isend, send, v) = calls("blocking");
    assert_eq!(v["options"]["mpi_calls"], "blocking");
    let exchanges: u64 = rows(&v, "loggp")
        .iter()
        .map(|r| 8 * (r["warmup"].as_u64().unwrap() + r["iterations"].as_u64().unwrap()))
        .sum();
    assert!(
        isend == exchanges && send > 1000,
        "MPI_Isend {isend} (exchanges {exchanges}), MPI_Send {send}"
    );
}
