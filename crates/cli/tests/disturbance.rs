//! A measurement says when it was disturbed (commperf_core::disturbance): another `bench` at
//! the same time is named with its pid in the JSON and the table's header, a killed one's
//! registry entry neither counts nor stays, and a busy process on the measuring CPU shows as
//! involuntary context switches.
//!
//! Each test uses a registry directory of its own (`COMMPERF_REGISTRY`), so that measurements
//! of other tests running at the same time are not in its figures.

mod common;
use common::allowed_cpus;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

fn exe() -> &'static str {
    env!("CARGO_BIN_EXE_commperf")
}

/// A directory of this test's own, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let d =
            std::env::temp_dir().join(format!("commperf-disturb-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        TempDir(d)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A child killed (SIGKILL) and reaped when dropped, whatever the test did.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn bench(registry: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(exe());
    c.arg("bench")
        .args(args)
        .env("COMMPERF_REGISTRY", registry)
        .stdin(Stdio::null());
    c
}

fn ok(o: Output) -> Output {
    assert!(
        o.status.success(),
        "commperf failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

fn notes(v: &Value, kind: &str) -> Vec<String> {
    v["disturbance"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter(|f| f["kind"] == kind)
                .map(|f| f["note"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// The registry's entries: file names.
fn entries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_bench_during_another_names_it_and_a_killed_ones_entry_is_removed() {
    let dir = TempDir::new("two");
    let reg = dir.0.join("registry");
    let cpus = allowed_cpus();
    let pair = format!("{},{}", cpus[0], cpus.get(1).unwrap_or(&cpus[0]));
    // The first run measures far longer than the test lasts; it is killed (SIGKILL) at the end.
    let first = bench(
        &reg,
        &[
            "latency",
            "-t",
            "uds",
            "--sizes",
            "8",
            "--iters",
            "100000000",
            "--cpus",
            &pair,
            "--format",
            "json",
        ],
    )
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    let first_pid = first.id();
    let mut first = Killed(first);
    // Registered once its peer is placed.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !entries(&reg)
        .iter()
        .any(|e| e.starts_with(&format!("{first_pid}-")))
    {
        assert!(Instant::now() < deadline, "the first run never registered");
        assert!(first.0.try_wait().unwrap().is_none(), "the first run ended");
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = dir.0.join("second.json");
    let second = ok(bench(
        &reg,
        &[
            "latency",
            "-t",
            "uds",
            "--sizes",
            "8",
            "--iters",
            "1000",
            "--cpus",
            &pair,
            "--format",
            "json",
            "-o",
            out.to_str().unwrap(),
        ],
    )
    .output()
    .unwrap());
    drop(second);
    assert!(
        first.0.try_wait().unwrap().is_none(),
        "the first run was still measuring"
    );
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let expected = format!(
        "another commperf measurement ran at the same time: pid {first_pid} (bench, CPUs {pair})"
    );
    assert_eq!(
        notes(&v, "other_measurement"),
        std::slice::from_ref(&expected),
        "{v}"
    );
    // The table (re-rendered from the JSON) says it in its header, before any figure.
    let table = ok(Command::new(exe())
        .args(["report", out.to_str().unwrap()])
        .output()
        .unwrap());
    let t = String::from_utf8(table.stdout).unwrap();
    let header: Vec<&str> = t.lines().take_while(|l| !l.is_empty()).collect();
    assert!(
        header.contains(&format!("# disturbed: {expected}").as_str()),
        "{t}"
    );
    // Only the first run's entry is left (the second removed its own).
    assert_eq!(entries(&reg).len(), 1);

    // Killed: it cannot remove its entry, and the next run neither counts it nor keeps it.
    drop(first);
    assert_eq!(entries(&reg).len(), 1);
    let alone = ok(bench(
        &reg,
        &[
            "latency", "-t", "uds", "--sizes", "8", "--iters", "1000", "--cpus", &pair, "--format",
            "json",
        ],
    )
    .output()
    .unwrap());
    let v: Value = serde_json::from_slice(&alone.stdout).unwrap();
    assert_eq!(notes(&v, "other_measurement"), Vec::<String>::new(), "{v}");
    assert_eq!(entries(&reg), Vec::<String>::new());
}

#[test]
fn a_busy_process_on_the_measuring_cpu_shows_as_involuntary_switches() {
    let dir = TempDir::new("hog");
    let reg = dir.0.join("registry");
    let cpus = allowed_cpus();
    let (mine, theirs) = (cpus[0], *cpus.get(1).unwrap_or(&cpus[0]));
    // A busy loop pinned to the CPU the measuring end is pinned to (`--cpus mine,theirs`).
    let mut hog = Command::new("sh");
    hog.args(["-c", "while :; do :; done"]);
    // SAFETY: only sched_setaffinity, async-signal-safe, runs between fork and exec.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut hog, move || {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(mine, &mut set);
            if libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let _hog = Killed(hog.spawn().unwrap());
    // About a second of polling latency on the shared CPU: the scheduler preempts the
    // measuring thread at every time slice, a hundred times a second or so.
    let o = ok(bench(
        &reg,
        &[
            "latency",
            "-t",
            "uds",
            "--sizes",
            "8",
            "--iters",
            "20000",
            "--cpus",
            &format!("{mine},{theirs}"),
            "--format",
            "json",
        ],
    )
    .output()
    .unwrap());
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let switches = notes(&v, "involuntary_switches");
    assert_eq!(switches.len(), 1, "{v}");
    let n: u64 = switches[0].split(' ').next().unwrap().parse().unwrap();
    assert!(n >= 10, "{}", switches[0]);
    assert!(
        switches[0].contains(" involuntary context switches of the measuring processes in "),
        "{}",
        switches[0]
    );
    assert_eq!(entries(&reg), Vec::<String>::new());
}
