//! `commperf monitor run` and `report` end to end: real processes over shm, exact message
//! counts in the saved run, every report format, and the errors for bad files and directories.

use commperf_testkit::{command, TempFile};
use std::path::Path;
use std::process::Command;

/// `commperf monitor run -t shm ARGS -o DIR`, which must succeed; its stdout.
fn monitor_run(dir: &Path, args: &[&str]) -> String {
    let out = command()
        .args(["monitor", "run", "-t", "shm"])
        .args(args)
        .arg("-o")
        .arg(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `commperf monitor report PATH`.
fn report(path: &Path) -> std::process::Output {
    command()
        .args(["monitor", "report"])
        .arg(path)
        .output()
        .unwrap()
}

/// `commperf monitor report PATH` fails, and its message has every one of `needles`.
fn assert_refused(path: &Path, needles: &[&str]) {
    let o = report(path);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(needles.iter().all(|n| err.contains(n)), "{err}");
}

/// Every stage of every key in DIR/run.json has `rows` size rows of exactly `count` messages.
fn assert_counts(dir: &Path, rows: usize, count: u64) {
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
    for e in run["histograms"].as_array().unwrap() {
        for stage in ["source", "net", "destination", "late_sender_wait"] {
            let r = e["stages"][stage].as_array().unwrap();
            assert_eq!(r.len(), rows, "{stage}");
            for row in r {
                assert_eq!(row["count"], count, "{stage} {row}");
            }
        }
    }
}

#[test]
fn run_saves_exact_counts_and_report_renders_every_format() {
    let dir = TempFile::new("monitor");
    let table = monitor_run(
        &dir,
        &[
            "--sizes", "64,4k", "--iters", "1000", "--rounds", "2", "--trace", "100000",
        ],
    );
    assert!(table.contains("# verdict:"), "{table}");
    // 1000 monitored messages per size each way; every stage of every key counts them all.
    assert_counts(&dir, 2, 1000);
    let trace = std::fs::read_to_string(dir.join("trace.txt")).unwrap();
    assert_eq!(
        trace.lines().filter(|l| l.starts_with("send ")).count(),
        4000
    );
    // The timeline: every call a complete event on its rank's track, every message an arrow
    // from its send (on the sender's track) to its receive (on the receiver's).
    let tl: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("timeline.json")).unwrap()).unwrap();
    let ev = tl["traceEvents"].as_array().unwrap();
    let count = |ph: &str, name: &str| {
        ev.iter()
            .filter(|e| e["ph"] == ph && e["name"] == name)
            .count()
    };
    assert_eq!(count("X", "send"), 4000);
    assert_eq!(count("X", "recv"), 4000);
    assert_eq!(count("s", "message"), 4000);
    assert_eq!(count("f", "message"), 4000);
    for e in ev.iter().filter(|e| e["ph"] == "s").take(10) {
        let id = &e["id"];
        let f = ev
            .iter()
            .find(|x| x["ph"] == "f" && &x["id"] == id)
            .unwrap();
        assert_ne!(e["tid"], f["tid"], "an arrow crosses to the other rank");
        assert!(f["ts"].as_f64().unwrap() >= 0.0);
    }
    for (fmt, want) in [
        ("table", "# commperf monitor signature"),
        ("md", "## Performance signature"),
        ("csv", "Size,msgs"),
        ("json", "\"schema_version\": 1"),
        ("svg", "<svg"),
    ] {
        let o = command()
            .args(["monitor", "report", "--format", fmt])
            .arg(&*dir)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{fmt}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(String::from_utf8_lossy(&o.stdout).contains(want), "{fmt}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_files_and_directories_are_named() {
    let f = std::env::temp_dir().join(format!("commperf-trunc-{}.json", std::process::id()));
    std::fs::write(
        &f,
        r#"{"schema_version":1,"kind":"commperf-monitor-run","histo"#,
    )
    .unwrap();
    assert_refused(&f, &[&f.display().to_string(), "truncated"]);
    std::fs::write(&f, r#"{"schema_version":1,"rows":[]}"#).unwrap();
    let o = report(&f);
    assert!(String::from_utf8_lossy(&o.stderr).contains("not a monitor run"));
    let _ = std::fs::remove_file(&f);
    let o = command()
        .args(["monitor", "run", "--iters", "10", "-o", "/proc/commperf-no"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("-o /proc/commperf-no: cannot write there"),
        "{err}"
    );
    assert!(!std::path::Path::new("/proc/commperf-no").exists());
}

/// `--parts`: every kind of block runs the same number of messages, the table names each against
/// the anchor, and only the `all` blocks' records are saved (exact counts; four rounds, so an
/// `all` block is followed by other kinds, with its last receive still to be recorded).
#[test]
fn parts_are_measured_one_at_a_time_and_only_all_is_recorded() {
    let dir = TempFile::new("parts");
    let table = monitor_run(
        &dir,
        &[
            "--sizes",
            "64",
            "--iters",
            "600",
            "--rounds",
            "4",
            "--parts",
            "send,recv,clock,off,all",
        ],
    );
    for p in ["none", "send", "recv", "clock", "off", "all"] {
        assert_eq!(
            table
                .lines()
                .filter(|l| l.starts_with("#      64  ") && l.contains(&format!("  {p:<5}  ")))
                .count(),
            1,
            "{p}: {table}"
        );
    }
    assert_counts(&dir, 1, 600);
    let parts: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("parts.json")).unwrap()).unwrap();
    let names: Vec<&str> = parts
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["parts"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["none", "send", "recv", "clock", "off", "all"]);
    let o = report(&dir);
    assert!(String::from_utf8_lossy(&o.stdout)
        .contains("# monitor parts (after Liao, Martonosi and Clark 1998"));
    // A damaged parts file is named.
    std::fs::write(dir.join("parts.json"), "[{\"parts\": \"no").unwrap();
    assert_refused(&dir, &["parts.json", "truncated or corrupt"]);
    let o = command()
        .args(["monitor", "run", "--parts", "send", "--trace", "10", "-o"])
        .arg(&*dir)
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("--trace"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A run whose peer is killed mid-run (after the first size was saved: the event the test
/// waits for) fails naming what it kept; `monitor report` then reads the saved part, exits 0
/// and says the run was cut short, with exact counts for the sizes it has.
#[test]
fn a_run_whose_peer_dies_is_saved_cut_short() {
    use std::time::{Duration, Instant};
    let dir = TempFile::new("cut");
    let mut child = command()
        .args(["monitor", "run", "-t", "shm", "--sizes", "64,4k,64k"])
        .args(["--iters", "200000", "--rounds", "2", "-o"])
        .arg(&*dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let saved = std::fs::read_to_string(dir.join("run.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .is_some_and(|v| {
                v["reference_one_way_us"]
                    .as_array()
                    .is_some_and(|a| !a.is_empty())
            });
        if saved {
            break;
        }
        assert!(child.try_wait().unwrap().is_none(), "the run ended early");
        assert!(Instant::now() < deadline, "no size saved in 300 s");
        std::thread::sleep(Duration::from_millis(2));
    }
    let me = child.id();
    let kids = std::fs::read_to_string(format!("/proc/{me}/task/{me}/children")).unwrap();
    let peer = kids.split_whitespace().next().expect("the peer process");
    assert!(Command::new("kill")
        .args(["-9", peer])
        .status()
        .unwrap()
        .success());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("marked cut short"), "{err}");
    let o = report(&dir);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(
        table.contains("# this run was cut short after 1 of 3 sizes (measured: 64)")
            || table.contains("# this run was cut short after 2 of 3 sizes (measured: 64, 4K)"),
        "{table}"
    );
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
    assert_eq!(run["complete"], false);
    let done = run["reference_one_way_us"].as_array().unwrap().len();
    assert_counts(&dir, done, 200_000);
    // A damaged run file is named.
    let t = std::fs::read_to_string(dir.join("run.json")).unwrap();
    std::fs::write(dir.join("run.json"), &t[..t.len() / 2]).unwrap();
    assert_refused(
        &dir,
        &[&dir.join("run.json").display().to_string(), "truncated"],
    );
    let _ = std::fs::remove_dir_all(&dir);
}
