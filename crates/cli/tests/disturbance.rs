//! A measurement says when it was disturbed (commperf_core::disturbance): another `bench` at
//! the same time is named with its pid in the JSON and the table's header, a killed one's
//! registry entry neither counts nor stays, and a busy process on the measuring CPU shows as
//! involuntary context switches.
//!
//! Each test uses a registry directory of its own (`COMMPERF_REGISTRY`), so that measurements
//! of other tests running at the same time are not in its figures.

mod common;
use common::allowed_cpus;
use commperf_testkit::{exe, Killed, Lines, Served, TempDir};
use serde_json::Value;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// `cmd` started with its output dropped, once it has registered in `registry`: the run,
/// killed when dropped, and its pid.
fn registered(registry: &Path, cmd: &mut Command) -> (Killed, u32) {
    let mut run = Killed(
        cmd.stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let pid = run.0.id();
    wait_registered(registry, pid, &mut run.0);
    (run, pid)
}

/// `bench latency` over `transport` at `sizes`, `iters` iterations each, pinned to `cpus`,
/// JSON out, registering in `registry`: every run of these tests is this one, longer or
/// shorter, local or against a server (the caller adds `-o`, `--peer`).
fn latency(registry: &Path, transport: &str, sizes: &str, iters: u64, cpus: &str) -> Command {
    let mut c = Command::new(exe());
    c.args(["bench", "latency", "-t", transport, "--sizes", sizes])
        .args([
            "--iters",
            &iters.to_string(),
            "--cpus",
            cpus,
            "--format",
            "json",
        ])
        .env("COMMPERF_REGISTRY", registry)
        .stdin(Stdio::null());
    c
}

/// Sizes enough for a run that lasts until it is interrupted: 300 short measurements, with a
/// look for other measurements after each.
fn many_sizes() -> String {
    (1..=300)
        .map(|s| s.to_string())
        .collect::<Vec<_>>()
        .join(",")
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

/// Waits (up to 30 s) until process `pid` has an entry in `registry` (a bench registers once
/// its peer is placed), failing if `child`, the process that should write it, ends first.
fn wait_registered(registry: &Path, pid: u32, child: &mut Child) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !entries(registry)
        .iter()
        .any(|e| e.starts_with(&format!("{pid}-")))
    {
        assert!(Instant::now() < deadline, "pid {pid} never registered");
        assert!(child.try_wait().unwrap().is_none(), "pid {pid} ended");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_bench_during_another_names_it_and_a_killed_ones_entry_is_removed() {
    let dir = TempDir::new("two");
    let reg = dir.join("registry");
    let cpus = allowed_cpus();
    let pair = format!("{},{}", cpus[0], cpus.get(1).unwrap_or(&cpus[0]));
    // The first run measures far longer than the test lasts; it is killed (SIGKILL) at the end.
    let first = latency(&reg, "uds", "8", 100_000_000, &pair)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let first_pid = first.id();
    let mut first = Killed(first);
    wait_registered(&reg, first_pid, &mut first.0);
    let out = dir.join("second.json");
    let second = ok(latency(&reg, "uds", "8", 1000, &pair)
        .args(["-o", out.to_str().unwrap()])
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
    let alone = ok(latency(&reg, "uds", "8", 1000, &pair).output().unwrap());
    let v: Value = serde_json::from_slice(&alone.stdout).unwrap();
    assert_eq!(notes(&v, "other_measurement"), Vec::<String>::new(), "{v}");
    assert_eq!(entries(&reg), Vec::<String>::new());
}

#[test]
fn a_busy_process_on_the_measuring_cpu_shows_as_involuntary_switches() {
    let dir = TempDir::new("hog");
    let reg = dir.join("registry");
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
    let o = ok(
        latency(&reg, "uds", "8", 20000, &format!("{mine},{theirs}"))
            .output()
            .unwrap(),
    );
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

const TOKEN: &str = "disturbance-test-token";

/// A `commperf serve` on loopback registering in `registry`, its log read line by line and
/// each run it answers announced there (`--announce-runs`); killed when dropped.
struct Serve(Served);

impl Serve {
    fn start(registry: &Path) -> Serve {
        Serve(Served::start(TOKEN, true, |c| {
            c.arg("--announce-runs").env("COMMPERF_REGISTRY", registry);
        }))
    }

    fn pid(&self) -> u32 {
        self.0.pid()
    }

    /// `bench latency` against this server (client pinned to `mine`, server to `theirs`).
    fn client(&self, registry: &Path, sizes: &str, iters: u64, cpus: &str) -> Command {
        let mut c = latency(registry, "tcp", sizes, iters, cpus);
        c.args(["--peer", &self.0.addr, "--token", TOKEN]);
        c
    }

    /// Reads the log until a line containing `what` has come `n` times in all (up to 60 s).
    fn wait_lines(&mut self, what: &str, n: usize) {
        self.0.log().wait_count(what, n, Duration::from_secs(60));
    }

    /// Reads the lines logged so far.
    fn drain(&mut self) -> &mut Self {
        self.0.log().drain();
        self
    }

    /// Log lines that contain `what`.
    fn lines(&self, what: &str) -> Vec<String> {
        self.log().matching(what)
    }

    /// Every log line read so far.
    fn seen(&self) -> &[String] {
        &self.log().seen
    }

    fn log(&self) -> &Lines {
        self.0.log.as_ref().expect("started with its log followed")
    }
}

fn sigint(c: &Child) {
    // SAFETY: kill(2) on our own child, not yet reaped; no memory is involved.
    assert_eq!(unsafe { libc::kill(c.id() as i32, libc::SIGINT) }, 0);
}

fn another(pid: u32, what: &str) -> String {
    format!("another commperf measurement ran at the same time: pid {pid} ({what})")
}

/// The two CPUs the tests pin to: the first two allowed (the same one twice on one CPU).
fn two_cpus() -> (usize, usize) {
    let cpus = allowed_cpus();
    (cpus[0], *cpus.get(1).unwrap_or(&cpus[0]))
}

#[test]
fn a_peer_run_alone_reports_no_other_measurement_on_either_end() {
    let dir = TempDir::new("peer-alone");
    let reg = dir.join("registry");
    let (a, b) = two_cpus();
    let mut serve = Serve::start(&reg);
    let o = ok(serve
        .client(&reg, "8,64", 2000, &format!("{a},{b}"))
        .output()
        .unwrap());
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    // The server, a separate process on this machine (no parent of the client, no child), is
    // the client's partner, and the client is the server's: neither names the other.
    assert_eq!(notes(&v, "other_measurement"), Vec::<String>::new(), "{v}");
    serve.wait_lines("session with client", 2);
    serve.wait_lines("finished", 1);
    assert_eq!(
        serve.lines("another commperf measurement"),
        Vec::<String>::new()
    );
    // Both entries are gone: the server's ended with the session.
    assert_eq!(entries(&reg), Vec::<String>::new());
}

#[test]
fn a_peer_run_and_an_independent_bench_name_each_other() {
    let dir = TempDir::new("peer-other");
    let reg = dir.join("registry");
    let (a, b) = two_cpus();
    let mut serve = Serve::start(&reg);
    let serve_pid = serve.pid();
    let peer_out = dir.join("peer.json");
    let many = many_sizes();
    // The peer session: runs until interrupted, looking for others after each measurement.
    let (mut peer, peer_pid) = registered(
        &reg,
        serve
            .client(&reg, &many, 2000, &format!("{a},{b}"))
            .args(["-o", peer_out.to_str().unwrap()]),
    );
    // The server registers when the client has placed it (its entry says its CPU).
    wait_registered(&reg, serve_pid, &mut serve.0.child.0);
    // An independent bench on the same CPUs, started while the session runs.
    let other_out = dir.join("other.json");
    let (mut other, other_pid) = registered(
        &reg,
        latency(&reg, "uds", &many, 2000, &format!("{a},{b}"))
            .args(["-o", other_out.to_str().unwrap()]),
    );
    // Runs of the session announced from here on: between two of them, both of its ends have
    // looked again with the independent bench registered (a third, for a line that was on
    // its way while it registered).
    let runs = serve.drain().lines("commperf peer ").len();
    serve.wait_lines("commperf peer ", runs + 3);
    // Interrupted, each stops at the next boundary and writes what finished (exit 130).
    for c in [&mut other, &mut peer] {
        sigint(&c.0);
        assert_eq!(c.0.wait().unwrap().code(), Some(130));
    }
    let peer_v: Value = serde_json::from_str(&std::fs::read_to_string(&peer_out).unwrap()).unwrap();
    let other_v: Value =
        serde_json::from_str(&std::fs::read_to_string(&other_out).unwrap()).unwrap();
    // The session names the independent bench once: its client and its server both saw it on
    // one machine (the server's finding, sent to the client, is the same and not repeated).
    let independent = another(other_pid, &format!("bench, CPUs {a},{b}"));
    assert_eq!(
        notes(&peer_v, "other_measurement"),
        std::slice::from_ref(&independent),
        "{peer_v}"
    );
    // The independent bench names both ends of the session, by their pids and CPUs.
    let mut named = notes(&other_v, "other_measurement");
    named.sort();
    let mut want = vec![
        another(peer_pid, &format!("bench, CPUs {a}")),
        another(serve_pid, &format!("serve, CPUs {b}")),
    ];
    want.sort();
    assert_eq!(named, want, "{other_v}");
    // The server's log says it too, one line per finding.
    serve.wait_lines("finished", 1);
    let started = &serve.lines(" started")[0];
    let client = started
        .strip_prefix("commperf serve: session with client ")
        .and_then(|r| r.strip_suffix(" started"))
        .unwrap();
    assert_eq!(
        serve.lines(" disturbed: another commperf measurement"),
        [format!(
            "commperf serve: session with client {client} disturbed: {independent}"
        )],
        "{:#?}",
        serve.seen()
    );
    assert_eq!(entries(&reg), Vec::<String>::new());
}

#[test]
#[cfg_attr(
    not(all(commperf_mpi_feature, commperf_has_openmpi)),
    ignore = "needs a build with the mpi feature (--features commperf/mpi) and Open MPI's mpirun.openmpi"
)]
fn mpi_benches_name_a_bench_running_beside_them_and_no_rank_of_their_own() {
    let dir = TempDir::new("mpi");
    let reg = dir.join("registry");
    let (a, b) = two_cpus();
    let pair = format!("{a},{b}");
    // Measures far longer than the test lasts; killed at the end.
    let (mut other, other_pid) =
        registered(&reg, &mut latency(&reg, "uds", "8", 100_000_000, &pair));
    let expected = another(other_pid, &format!("bench, CPUs {pair}"));
    // The MPI suite on two ranks; the transport layer between four ranks placed by mpirun,
    // two pairs, each a session whose ends both watch.
    for (np, how) in [
        ("2", &["-t", "mpi"][..]),
        ("4", &["-t", "tcp", "--launcher", "mpi"]),
    ] {
        let out = dir.join(format!("mpi-{np}.json"));
        // Real mpirun: the ranks are siblings under it, not parent and child.
        let o = ok(Command::new("timeout")
            .args([
                "-k",
                "10",
                "240",
                "mpirun.openmpi",
                "-np",
                np,
                "--oversubscribe",
            ])
            .arg(exe())
            .args(["bench", "latency", "--sizes", "8", "--iters", "200"])
            .args(how)
            .args(["-o", out.to_str().unwrap()])
            .env("COMMPERF_REGISTRY", &reg)
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .stdin(Stdio::null())
            .output()
            .unwrap());
        assert!(
            other.0.try_wait().unwrap().is_none(),
            "the other bench was still measuring"
        );
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
        // Named once: every rank saw it on this machine; no rank names another of the job.
        assert_eq!(
            notes(&v, "other_measurement"),
            std::slice::from_ref(&expected),
            "{how:?}: {v}"
        );
        // Rank 0's table says it in its header, as the other transports' do.
        let table = String::from_utf8(o.stdout).unwrap();
        assert!(
            table
                .lines()
                .any(|l| l == format!("# disturbed: {expected}")),
            "{table}"
        );
        // The ranks' entries are gone; the other bench's is left until it is killed.
        assert_eq!(entries(&reg).len(), 1);
    }
}
