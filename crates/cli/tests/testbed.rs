//! `commperf testbed` for real: a small cluster of network namespaces with shaped links, patterns
//! measured over TCP and compared with their prediction; and the clean-up after a normal run,
//! after a rank dies and after Ctrl-C. Needs root, iproute2 and tc; elsewhere each test is
//! `ignored` with that reason (build-support/caps.rs).

mod mpi_apps;
use commperf_testkit::exe;
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Namespaces and root-namespace links a run with this pid left behind.
fn leftovers(pid: u32) -> Vec<String> {
    let prefix = format!("cpt{pid}-");
    let ns = Command::new("ip").args(["netns", "list"]).output().unwrap();
    let links = Command::new("ip").args(["-o", "link"]).output().unwrap();
    let mut v: Vec<String> = String::from_utf8_lossy(&ns.stdout)
        .lines()
        .chain(String::from_utf8_lossy(&links.stdout).lines())
        .filter(|l| l.contains(&prefix))
        .map(str::to_string)
        .collect();
    v.sort();
    v
}

/// Rank processes still running (the tests run one testbed at a time, see [`SERIAL`]).
fn rank_processes() -> usize {
    let out = Command::new("ps").args(["-eo", "args"]).output();
    out.map(|o| {
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .filter(|l| l.contains(exe()) && l.contains("__testbed-rank"))
            .count()
    })
    .unwrap_or(0)
}

/// One testbed at a time: they would share 2 cores and each other's timing.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// A small quick testbed: 4 hosts, 200 Mbit/s, 128 KiB messages, few repetitions.
///
/// Run at nice -10 (the tests run as root): the patterns measure a shaped network, and on a
/// machine busy with other work (a build, a CPU hog) rank processes that wait for a core
/// turned a 16.7 ms alltoall into 25 ms, which the prediction, calibrated on two ranks, cannot
/// know. The ranks sleep between messages (they never spin), so their priority takes nothing
/// from the rest of the machine beyond their own work.
fn small_run(iters: &str, extra: &[&str]) -> std::process::Child {
    use std::os::unix::process::CommandExt;
    let mut c = Command::new(exe());
    // SAFETY: only setpriority(2), async-signal-safe, runs between fork and exec; the ranks
    // the testbed starts inherit the niceness.
    unsafe {
        c.pre_exec(|| {
            if libc::setpriority(libc::PRIO_PROCESS, 0, -10) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    c.args([
        "testbed", "--hosts", "4", "--rate", "200mbit", "--bytes", "128K",
    ])
    // The default ladder (1 B .. 4 MiB), 3 round trips each: a short ladder of 7 sizes
    // was fitted with one straight line that missed the large sizes by 30 %.
    .args(["--iters", iters, "--ladder-reps", "3", "--format", "json"])
    .args(extra)
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap()
}

#[test]
#[cfg_attr(
    not(commperf_has_netns),
    ignore = "needs root and iproute2's ip and tc (network namespaces)"
)]
fn patterns_are_measured_plausibly_and_nothing_is_left_behind() {
    mpi_apps::need_netns("patterns_are_measured_plausibly_and_nothing_is_left_behind");
    let _one = serial();
    // The physical bounds hold on any machine; the prediction is a model of the network, and a
    // run that shares the machine with other work can still lose a whole iteration set to it
    // (a CI run missed once, its figures unrecorded): a miss is measured again once, and said,
    // and two misses in a row fail with every figure of both runs.
    let first = match one_patterns_run() {
        Ok(()) => return,
        Err(e) => e,
    };
    eprintln!("patterns: first run missed, measuring again: {first}");
    if let Err(second) = one_patterns_run() {
        panic!("two runs in a row missed:\nfirst: {first}\nsecond: {second}");
    }
}

/// One small testbed run judged: what cannot be (faster than the link, retransmission-slow) and
/// the prediction against the fastest iteration. Clean-up is asserted, never retried.
fn one_patterns_run() -> Result<(), String> {
    // 9 iterations: the prediction is judged against the least disturbed one (below).
    let child = small_run("9", &[]);
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(leftovers(pid), Vec::<String>::new(), "after a normal run");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["hosts"], 4);
    // The calibration's profile is there and usable.
    assert!(!v["profile"]["tcom"].as_array().unwrap().is_empty());
    let rate_bytes_per_us = 200e6 / 8.0 / 1e6;
    let pats = v["patterns"].as_array().unwrap();
    assert_eq!(pats.len(), 4);
    let mut misses = Vec::new();
    let mut figures = String::new();
    for p in pats {
        let name = p["pattern"].as_str().unwrap();
        let med = p["measured_median_us"].as_f64().unwrap();
        let min = p["measured_min_us"].as_f64().unwrap();
        let max_bytes = p["max_host_bytes"].as_f64().unwrap();
        let pred = p["predicted_us"].as_f64();
        figures += &format!(
            "{name}: fastest {min:.0} us, median {med:.0} us, link floor {:.0} us, predicted {pred:?} us; ",
            max_bytes / rate_bytes_per_us
        );
        if name == "incast" {
            assert_eq!(max_bytes, 3.0 * 131072.0);
        }
        // No iteration can beat the busiest host's bytes over the link rate (3 % slack: the
        // token bucket lets its first frame through at veth speed) ...
        if med < 0.97 * max_bytes / rate_bytes_per_us {
            misses.push(format!("{name} is faster than the rate allows"));
        }
        // ... nor should it take many times that (that would mean retransmission timeouts).
        if med > 3.0 * max_bytes / rate_bytes_per_us + 20_000.0 {
            misses.push(format!("{name} is implausibly slow"));
        }
        // Within 25 % on this tiny, short run: 128 KiB messages make the ring a 5 ms
        // iteration, where a rank thread waking 0.5 ms late on a busy 2-core machine is 10 %
        // (measured -1 % .. -11 % here); the 10 % goal is for the default run (1 MiB, 8 hosts,
        // measured -2 % .. -4 %). The prediction models the network, not other work on the
        // machine: it is compared with the fastest of the 9 iterations. Under a concurrent
        // build and a CPU hog the median of 3 missed by up to 61 % (ring: 5.6 ms predicted,
        // 9.1 ms measured), the median of 9 by up to 37 %, the fastest of 9 by -13 % .. +9 %;
        // idle, fastest and median are within 3 % of each other (-4 % .. +0.3 %, 2026-11-28).
        if let Some(pred) = pred {
            if (pred - min).abs() / min > 0.25 {
                misses.push(format!("{name} predicted more than 25 % off the fastest"));
            }
        }
    }
    if misses.is_empty() {
        Ok(())
    } else {
        Err(format!("{} ({figures})", misses.join(", ")))
    }
}

#[test]
#[cfg_attr(
    not(commperf_has_netns),
    ignore = "needs root and iproute2's ip and tc (network namespaces)"
)]
fn a_dead_rank_is_named_and_everything_is_removed() {
    mpi_apps::need_netns("a_dead_rank_is_named_and_everything_is_removed");
    let _one = serial();
    let child = small_run("3", &["--kill-rank", "2", "--patterns", "ring"]);
    let pid = child.id();
    let t0 = Instant::now();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("rank 2"), "{stderr}");
    assert!(
        t0.elapsed() < Duration::from_secs(60),
        "took {:?}",
        t0.elapsed()
    );
    assert_eq!(leftovers(pid), Vec::<String>::new(), "after a dead rank");
    assert_eq!(rank_processes(), 0);
}

#[test]
#[cfg_attr(
    not(commperf_has_netns),
    ignore = "needs root and iproute2's ip and tc (network namespaces)"
)]
fn ctrl_c_cleans_up() {
    mpi_apps::need_netns("ctrl_c_cleans_up");
    let _one = serial();
    let mut child = small_run("50", &["--patterns", "alltoall"]);
    let pid = child.id();
    // Wait until the patterns are running, then interrupt as a terminal would.
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    let mut seen = String::new();
    while err.read_line(&mut line).unwrap_or(0) > 0 {
        seen += &line;
        if line.contains("measuring") {
            break;
        }
        line.clear();
    }
    assert!(seen.contains("measuring"), "{seen}");
    // SAFETY: kill on our own child's pid.
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGINT) };
    let mut rest = String::new();
    let _ = std::io::Read::read_to_string(&mut err, &mut rest);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(1), "{seen}{rest}");
    assert!(rest.contains("interrupted"), "{rest}");
    assert_eq!(leftovers(pid), Vec::<String>::new(), "after Ctrl-C");
}

#[test]
fn without_root_the_error_says_so() {
    use std::os::unix::process::CommandExt;
    let mut c = Command::new(exe());
    c.arg("testbed");
    // As root, the run drops to nobody (65534) first: the message is provoked either way.
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        c.uid(65534).gid(65534);
    }
    let out = c.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("needs root"), "{err}");
}
