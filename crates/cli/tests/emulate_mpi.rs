//! `commperf emulate [--o/--g/--G/--L] -- mpirun …`: the LogGP knobs inside the MPI interposer,
//! under Open MPI and under MPICH, on a C program (crates/pmpi/tests/apps/knobs.c) that measures
//! what each knob must move. Bounds are one-sided where the machine's load can only add time
//! (a spin of Δ adds at least Δ), and generous on the other side (the figures are minima over
//! repetitions, so one quiet moment of the shared 2-core machine suffices). Each test needs its
//! MPI installed; without it, it skips with a message, unless `COMMPERF_REQUIRE_MPI=1` (set by
//! CI) makes that a failure.

mod mpi_apps;
use commperf_predict::collectives::{Algorithms, BlockCounts, Collective};
use commperf_predict::workload::{OpKind, SeqProgram};
use mpi_apps::{compile, exe, need, ok, text, Scratch};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::Mutex;

/// One MPI job at a time: two 2-rank jobs spinning on a 2-core machine would measure each other.
static ONE_JOB: Mutex<()> = Mutex::new(());

/// `commperf emulate KNOBS --json -- mpirun.<mpi> -np 2 PROG ARGS…`, time-limited.
fn emulate(knobs: &[&str], mpi: &str, prog: &Path, args: &[&str]) -> Output {
    emulate_with(knobs, &["--json"], mpi, prog, args)
}

fn emulate_with(knobs: &[&str], extra: &[&str], mpi: &str, prog: &Path, args: &[&str]) -> Output {
    emulate_np(knobs, extra, mpi, 2, prog, args)
}

/// `commperf emulate KNOBS EXTRA -- mpirun.<mpi> -np NP PROG ARGS…`, time-limited.
fn emulate_np(
    knobs: &[&str],
    extra: &[&str],
    mpi: &str,
    np: u32,
    prog: &Path,
    args: &[&str],
) -> Output {
    let mut c = Command::new("timeout");
    c.args(["-k", "10", "300", exe(), "emulate"])
        .args(knobs)
        .args(extra)
        .arg("--")
        .args([format!("mpirun.{mpi}").as_str(), "-np", &np.to_string()]);
    if mpi == "openmpi" {
        c.arg("--oversubscribe");
    }
    c.arg(prog).args(args);
    c.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    c.output().expect("run commperf emulate")
}

/// The outcome (stdout: JSON only; the program's stdout went to stderr) and the program's
/// figure `key` (from its line `key value …`).
fn run(knobs: &[&str], mpi: &str, prog: &Path, args: &[&str], key: &str) -> (Value, f64) {
    let o = emulate(knobs, mpi, prog, args);
    ok(&o);
    let j: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", text(&o.stdout)));
    let err = text(&o.stderr);
    let v = err
        .split_whitespace()
        .skip_while(|w| *w != key)
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {key} in the program's output:\n{err}"));
    (j, v)
}

fn knobs_under(mpi: &str) {
    let test = format!("knobs_{mpi}");
    let _one = ONE_JOB.lock().unwrap_or_else(|e| e.into_inner());
    need(&test, &[&format!("mpicc.{mpi}"), &format!("mpirun.{mpi}")]);
    let s = Scratch::new("emulate", &test);
    let prog = s.0.join("knobs");
    compile(&format!("mpicc.{mpi}"), "knobs.c", &prog);
    let pp = ["pingpong", "8", "10", "30"];

    // Knobs at zero: the interposer passes every call through, and says so.
    let (j, base) = run(&[], mpi, &prog, &pp, "oneway_ns");
    assert_eq!(j["untouched"], Value::Null, "{j}");
    assert_eq!(j["exit_code"], 0);
    assert!(base > 0.0, "one-way {base} ns without knobs");
    // Upper bounds on measured times: generous (a few scheduler time slices: on a loaded 2-core
    // machine MPICH's ranks yield the CPU while they poll, and a 300 ns ping-pong becomes 5 ms).
    // The tight upper bounds are on what the interposer itself added (held_ns, paced_ns).
    let slack = 50_000_000.0 + 3.0 * base;

    // L: every message is held to its arrival + 200 µs: the one-way time is at least that.
    let (j, l) = run(&["--L", "200us"], mpi, &prog, &pp, "oneway_ns");
    assert!(l >= 200_000.0, "L=200us: one-way {l} ns");
    assert!(
        l < base + 200_000.0 + slack,
        "L=200us: one-way {l} ns, base {base}"
    );
    assert_eq!(j["L_ns"], 200_000.0);
    // Every received message found its sender's stamp, and was held at most ΔL (a hold ends at
    // arrival + ΔL and the arrival is never after the completion), and in a
    // ping-pong, where the receiver always waits, nearly ΔL.
    let u = &j["untouched"];
    assert_eq!(u["unstamped_receives"], 0, "{j}");
    let recvs = u["p2p_receives"].as_f64().unwrap();
    let held = u["held_ns"].as_f64().unwrap();
    // 2 ranks × (1 warm-up of 2 + 30 × 10) round trips, one receive each per round trip.
    assert_eq!(recvs, 2.0 * (2.0 + 30.0 * 10.0), "{j}");
    // The ping-pong's MPI_Barriers ran as messages (on 2 ranks one receive per rank and call),
    // held as well.
    let coll_recvs = u["collective_p2p_receives"].as_f64().unwrap();
    assert_eq!(coll_recvs, u["collective_calls"].as_f64().unwrap(), "{j}");
    let all = recvs + coll_recvs;
    assert!(
        held <= all * 200_000.0 + all,
        "held {held} ns for {all} receives"
    );
    assert!(
        held >= recvs * 150_000.0,
        "held {held} ns for {recvs} receives"
    );

    // A rank's messages to itself never leave the library (it copies them): ΔL = 200 µs, Δg
    // = 100 µs and Δo = 100 µs leave them alone, where any would add at least 100 µs to each
    // of the 200.
    let sf = ["self", "200", "64", "3"];
    let (_, self_l) = run(
        &["--L", "200us", "--g", "100us", "--o", "100us"],
        mpi,
        &prog,
        &sf,
        "self_ns",
    );
    assert!(
        self_l < 50_000.0,
        "a message to itself took {self_l} ns under L=200us g=100us o=100us"
    );

    // A Waitall completing 8 messages that arrived together holds them against its own return:
    // one ΔL in all, not 8 (each used to be held after the previous one's hold). The barrier
    // before each round is left native here, so that the holds are the waitall's alone.
    let o = emulate_with(
        &["--L", "200us"],
        &["--json", "--collectives", "native"],
        mpi,
        &prog,
        &["waitall", "8", "64", "5"],
    );
    ok(&o);
    let j: Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let held = j["untouched"]["held_ns"].as_f64().unwrap();
    // 6 rounds (a warm-up and 5) of 8 messages: about one ΔL per round (the first message's),
    // against 8 per round before.
    assert!(
        (0.5 * 6.0 * 200_000.0..=2.0 * 6.0 * 200_000.0).contains(&held),
        "held {held} ns over 6 waitalls of 8 messages: {j}"
    );

    // o: the sender spins Δo before the send, the receiver after the receive.
    let (_, o) = run(&["--o", "20us"], mpi, &prog, &pp, "oneway_ns");
    assert!(o >= 40_000.0, "o=20us: one-way {o} ns (2 × Δo expected)");
    assert!(
        o < base + 40_000.0 + slack,
        "o=20us: one-way {o} ns, base {base}"
    );
    let sr = ["send", "8", "20", "30"];
    let out = emulate(&["--o", "20us"], mpi, &prog, &sr);
    ok(&out);
    let err = text(&out.stderr);
    let fig = |k: &str| -> f64 {
        err.split_whitespace()
            .skip_while(|w| *w != k)
            .nth(1)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {k}:\n{err}"))
    };
    assert!(fig("send_ns") >= 20_000.0, "o on the sender: {err}");
    assert!(fig("recv_ns") >= 20_000.0, "o on the receiver: {err}");

    // g: a burst of 10 Isends is spaced by Δg: 9 gaps.
    let (j, b) = run(
        &["--g", "30us"],
        mpi,
        &prog,
        &["burst", "10", "8", "10"],
        "burst_ns",
    );
    assert!(b >= 9.0 * 30_000.0, "g=30us: burst {b} ns");
    assert!(b < 9.0 * 30_000.0 + slack, "g=30us: burst {b} ns");
    assert!(j["untouched"]["paced_ns"].as_f64().unwrap() > 0.0, "{j}");

    // g's slot starts where the injection ends, not where a call that also waited for its
    // partner returned: with the partner 300 µs late to each of 200 exchanges and Δg = 20 µs,
    // nothing needs pacing. Counted from the blocking call's return, every next exchange was
    // paced nearly Δg (the next call follows the return within a microsecond, load or not):
    // 200 × 20 µs = 4 ms (measured 3.98 ms; 0.01–0.02 ms after, idle). Under load the right
    // code paces too, legitimately: an exchange where rank 0 itself was preempted for more
    // than the partner's 300 µs finds the partner's message already there and paces its next
    // send up to Δg (measured 0.55 ms with 100 µs of lateness, 2 cores, two CPU hogs and a
    // build). The bar, half the wrong code's 4 ms, takes rank 0 preempted that long in half
    // of the exchanges to reach.
    for kind in ["sendrecv", "replace", "ssend"] {
        let o = emulate(&["--g", "20us"], mpi, &prog, &["late", kind, "200", "300"]);
        ok(&o);
        let j: Value = serde_json::from_slice(&o.stdout).expect("JSON");
        let paced = j["untouched"]["paced_ns"].as_f64().unwrap();
        assert!(
            paced < 0.5 * 200.0 * 20_000.0,
            "{kind}: paced {paced} ns with the partner always late by more than Δg: {j}"
        );
    }

    // G: a 4000-byte send occupies its sender 4000 × 10 ns longer.
    let (_, g) = run(
        &["--G", "10"],
        mpi,
        &prog,
        &["send", "4000", "20", "30"],
        "send_ns",
    );
    assert!(g >= 40_000.0, "G=10ns/B: send of 4000 B took {g} ns");
    assert!(g < 40_000.0 + slack, "G=10ns/B: send of 4000 B took {g} ns");

    // With --collectives native the collectives are not touched, and counted exactly: per rank 5
    // MPI_Allreduce of 8 B and the ping-pong's MPI_Barrier; 10 ping-pongs of 100 B each way.
    let o = emulate_with(
        &["--o", "1us"],
        &["--json", "--collectives", "native"],
        mpi,
        &prog,
        &["coll"],
    );
    ok(&o);
    let j: Value = serde_json::from_slice(&o.stdout).expect("JSON");
    assert_eq!(figure(&text(&o.stderr), "sum"), 1.0);
    assert_eq!(j["collectives"], "native", "{j}");
    let u = &j["untouched"];
    assert_eq!(u["collectives_native"], 12, "{j}");
    assert_eq!(u["collectives_emulated"], 0, "{j}");
    assert_eq!(u["collective_p2p_messages"], 0, "{j}");
    assert_eq!(u["ranks"], 2, "{j}");
    assert_eq!(u["collective_calls"], 12, "{j}");
    assert_eq!(u["collective_bytes"], 80, "{j}");
    assert_eq!(u["p2p_messages"], 20, "{j}");
    assert_eq!(u["p2p_bytes"], 2000, "{j}");
    assert_eq!(u["p2p_receives"], 20, "{j}");
    assert_eq!(u["untouched_calls_percent"], 37.5, "{j}");

    // Emulation and monitoring together: the monitor records every message of the emulated
    // run (10 ping-pongs of 100 B each way), and the collectives run as messages (the default)
    // only as the collective calls they are: none of their messages.
    let mon = s.0.join("mon");
    let o = emulate_with(
        &["--o", "1us"],
        &["--monitor", mon.to_str().unwrap()],
        mpi,
        &prog,
        &["coll"],
    );
    ok(&o);
    let sj: Value = serde_json::from_str(
        &std::fs::read_to_string(mon.join("summary.json")).expect("summary.json"),
    )
    .expect("JSON");
    assert_eq!(sj["matched_messages"], 20, "{}", text(&o.stdout));
    assert_eq!(sj["unmatched_sends"], 0);
    // Per rank: 10 sends, 5 MPI_Allreduce and 1 MPI_Barrier, each one event.
    let count = |call: &str| -> u64 {
        sj["calls"]
            .as_array()
            .expect("calls")
            .iter()
            .filter(|c| c["call"] == call)
            .map(|c| c["count"].as_u64().unwrap())
            .sum()
    };
    assert_eq!(count("MPI_Send"), 20, "{sj}");
    assert_eq!(count("MPI_Allreduce"), 10, "{sj}");
    assert_eq!(count("MPI_Barrier"), 2, "{sj}");

    // The program's exit status is the verb's; nothing is left behind.
    let o = emulate(&["--o", "1us"], mpi, &prog, &["bogus"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    let j: Value = serde_json::from_slice(&o.stdout).expect("JSON");
    assert_eq!(j["success"], false);
}

/// SIGTERM to `commperf emulate` reaches the MPI job: no rank and no run directory (with the L
/// side band) is left behind, and the verb still exits, with the job's failure.
fn terminated_under(mpi: &str) {
    let test = format!("term_{mpi}");
    let _one = ONE_JOB.lock().unwrap_or_else(|e| e.into_inner());
    need(&test, &[&format!("mpicc.{mpi}"), &format!("mpirun.{mpi}")]);
    let s = Scratch::new("emulate", &test);
    let prog = s.0.join("knobs-forever");
    compile(&format!("mpicc.{mpi}"), "knobs.c", &prog);
    let mut c = Command::new(exe());
    c.args([
        "emulate",
        "--L",
        "1us",
        "--",
        &format!("mpirun.{mpi}"),
        "-np",
        "2",
    ]);
    if mpi == "openmpi" {
        c.arg("--oversubscribe");
    }
    // Ping-pongs for hours: only the signal ends it.
    c.arg(&prog).args(["pingpong", "8", "2000000000", "1"]);
    c.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut child = c.spawn().expect("run commperf emulate");
    let pid = child.id();
    // The ranks are up once they have created the side band in the verb's run directory.
    let stamps = || {
        std::fs::read_dir(std::env::temp_dir())
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(&format!("commperf-emulate-{pid}-")))
            })
    };
    let t0 = std::time::Instant::now();
    let dir = loop {
        if let Some(d) = stamps().filter(|d| d.join("stamps").exists()) {
            break d;
        }
        assert!(t0.elapsed().as_secs() < 120, "the ranks never started");
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    // SAFETY: signalling the child we spawned and have not reaped.
    unsafe { libc::kill(pid as i32, libc::SIGTERM) };
    let st = child.wait().expect("wait");
    assert!(!st.success(), "{st}");
    assert!(!dir.exists(), "{} left behind", dir.display());
    // This test's ranks (by their path: another checkout's tests may run the same program),
    // given a moment to be reaped once the launcher is gone.
    let me = prog.to_string_lossy().into_owned();
    let running = || {
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
            .filter(|c| String::from_utf8_lossy(c).contains(&me))
            .count()
    };
    let t0 = std::time::Instant::now();
    while running() > 0 && t0.elapsed() < std::time::Duration::from_secs(10) {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(running(), 0, "ranks left running");
}

#[test]
#[cfg_attr(
    not(commperf_has_openmpi),
    ignore = "needs Open MPI (mpicc.openmpi, mpirun.openmpi: apt-get install libopenmpi-dev openmpi-bin)"
)]
fn sigterm_reaches_the_job_under_openmpi() {
    terminated_under("openmpi");
}

#[test]
#[cfg_attr(
    not(commperf_has_mpich),
    ignore = "needs MPICH (mpicc.mpich, mpirun.mpich: apt-get install libmpich-dev mpich)"
)]
fn sigterm_reaches_the_job_under_mpich() {
    terminated_under("mpich");
}

#[test]
#[cfg_attr(
    not(commperf_has_openmpi),
    ignore = "needs Open MPI (mpicc.openmpi, mpirun.openmpi: apt-get install libopenmpi-dev openmpi-bin)"
)]
fn knobs_under_openmpi() {
    knobs_under("openmpi");
}

#[test]
#[cfg_attr(
    not(commperf_has_mpich),
    ignore = "needs MPICH (mpicc.mpich, mpirun.mpich: apt-get install libmpich-dev mpich)"
)]
fn knobs_under_mpich() {
    knobs_under("mpich");
}

#[test]
fn bad_knob_values_exit_2_naming_the_knob() {
    for (args, knob, why) in [
        (["--L", "-5us"], "knob L", "between 0 and 1 s"),
        (["--o", "2s"], "knob o", "between 0 and 1 s"),
        (["--g", "fast"], "knob g", "cannot read"),
        (["--G", "-1"], "knob G", "between 0 and 1 s per byte"),
        (["--L", "5"], "knob L", "no unit"),
    ] {
        let o = Command::new(exe())
            .arg("emulate")
            .args(args)
            .args(["--", "mpirun", "-np", "2", "true"])
            .output()
            .expect("run commperf");
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(knob) && err.contains(why), "{args:?}: {err}");
    }
}

/// A Fortran program is emulated under both MPIs (Open MPI's Fortran bindings call PMPI_*
/// directly, so its Fortran entry points carry the knobs' hooks too; MPICH's reach the C
/// wrappers): every point-to-point message is touched exactly once, every receive finds its
/// sender's L stamp and is held, and the collectives are counted as untouched.
fn fortran_under(mpi: &str) {
    let test = format!("fortran_{mpi}");
    let _one = ONE_JOB.lock().unwrap_or_else(|e| e.into_inner());
    need(&test, &[&format!("mpif90.{mpi}"), &format!("mpirun.{mpi}")]);
    let s = Scratch::new("emulate", &test);
    let prog = s.0.join("fcounts");
    compile(&format!("mpif90.{mpi}"), "counts.f90", &prog);
    // g too: the blocking sends and MPI_SENDRECV then take their non-blocking paths (the
    // program aborts if a Sendrecv's data did not arrive).
    let o = emulate(
        &["--L", "100us", "--o", "1us", "--g", "1us"],
        mpi,
        &prog,
        &[],
    );
    ok(&o);
    let j: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", text(&o.stdout)));
    let u = &j["untouched"];
    assert_eq!(j["g_ns"], 1000.0, "{j}");
    // Per rank of 2 (right = left): 6 × 80 B Send/Recv, 4 × 400 B Isend/Irecv + Waitall,
    // 2 × 8 B Sendrecv, 2 × 16 B Isend/Irecv + Testsome/Testany, 3 × 24 B persistent;
    // collectives 3 Allreduce (8 B), 1 Barrier, 2 Bcast (40 B).
    assert_eq!(u["ranks"], 2, "{j}");
    assert_eq!(u["p2p_messages"], 2 * 17, "{j}");
    assert_eq!(
        u["p2p_bytes"],
        2 * (6 * 80 + 4 * 400 + 2 * 8 + 2 * 16 + 3 * 24),
        "{j}"
    );
    assert_eq!(u["p2p_receives"], 2 * 17, "{j}");
    assert_eq!(u["unstamped_receives"], 0, "{j}");
    assert_eq!(u["collective_calls"], 2 * 6, "{j}");
    // The collectives ran as messages (--collectives p2p, the default), on 2 ranks one message
    // each way per Allreduce and Barrier, one per Bcast: 3 × 2 + 2 + 2.
    assert_eq!(u["collectives_emulated"], 2 * 6, "{j}");
    assert_eq!(u["collective_p2p_messages"], 10, "{j}");
    assert_eq!(u["collective_p2p_receives"], 10, "{j}");
    // Held: at most ΔL per receive, and more than nothing (the first receive of each rank waits
    // for a message sent after it was posted: it is held nearly ΔL).
    let held = u["held_ns"].as_f64().unwrap();
    assert!(
        held > 50_000.0 && held <= 44.0 * 100_000.0 + 44.0,
        "held {held} ns: {j}"
    );
}

#[test]
#[cfg_attr(
    not(commperf_has_openmpi_fortran),
    ignore = "needs Open MPI's Fortran (mpif90.openmpi: apt-get install libopenmpi-dev gfortran)"
)]
fn fortran_under_openmpi() {
    fortran_under("openmpi");
}

#[test]
#[cfg_attr(
    not(commperf_has_mpich_fortran),
    ignore = "needs MPICH's Fortran (mpif90.mpich: apt-get install libmpich-dev gfortran)"
)]
fn fortran_under_mpich() {
    fortran_under("mpich");
}

/// What `commperf predict` expands a collective into with its default algorithms, summed over
/// the n ranks: (messages, bytes). The emulated collectives must send exactly these.
fn predicted(n: u32, colls: &[Collective]) -> (u64, u64) {
    let algos = Algorithms::default();
    let (mut m, mut b) = (0, 0);
    for c in colls {
        for r in 0..n {
            let mut p = SeqProgram::new();
            algos.expand(&mut p, r, n, 0, c);
            for op in p.ops() {
                if let OpKind::Send { bytes, .. } = op {
                    m += 1;
                    b += bytes;
                }
            }
        }
    }
    (m, b)
}

/// [`predicted`] for collectives whose arguments differ by rank (`colls[i](r)` is rank r's).
fn predicted_by_rank(n: u32, colls: &[Box<dyn Fn(u32) -> Collective>]) -> (u64, u64) {
    let algos = Algorithms::default();
    let (mut m, mut b) = (0, 0);
    for c in colls {
        for r in 0..n {
            let mut p = SeqProgram::new();
            algos.expand(&mut p, r, n, 0, &c(r));
            for op in p.ops() {
                if let OpKind::Send { bytes, .. } = op {
                    m += 1;
                    b += bytes;
                }
            }
        }
    }
    (m, b)
}

/// The blocking collectives vcoll.c's `check` runs as messages on n ranks (the two it leaves
/// to the library excluded), in bytes: rank j's block is j + 1 ints; its alltoallw sends j + 1
/// of rank j's type (a double for odd j, an int for even) to j.
fn vcoll_emulated(n: u32) -> Vec<Box<dyn Fn(u32) -> Collective>> {
    let blocks = move || (0..n).map(|j| 4 * u64::from(j + 1)).collect::<Vec<_>>();
    let wsize = |j: u32| if j % 2 == 1 { 8 } else { 4 };
    let mut v: Vec<Box<dyn Fn(u32) -> Collective>> = vec![Box::new(|_| Collective::Barrier)];
    for _ in 0..2 {
        v.push(Box::new(move |_| Collective::Allgatherv {
            counts: blocks(),
        }));
    }
    v.push(Box::new(move |r| Collective::Alltoallv {
        send: blocks(),
        recv: vec![4 * u64::from(r + 1); n as usize],
    }));
    v.push(Box::new(move |r| Collective::Alltoallv {
        send: (0..n).map(|j| u64::from(j + 1) * wsize(j)).collect(),
        recv: vec![u64::from(r + 1) * wsize(r); n as usize],
    }));
    for root in 0..n {
        for _ in 0..2 {
            v.push(Box::new(move |_| Collective::Gatherv {
                root,
                counts: blocks(),
            }));
        }
        for _ in 0..2 {
            v.push(Box::new(move |_| Collective::Scatterv {
                root,
                counts: blocks(),
            }));
        }
    }
    for _ in 0..2 {
        v.push(Box::new(move |_| Collective::ReduceScatter {
            counts: BlockCounts::PerRank(blocks()),
            compute_ns: 0,
        }));
    }
    v.push(Box::new(|_| Collective::ReduceScatter {
        counts: BlockCounts::Uniform(8),
        compute_ns: 0,
    }));
    for bytes in [12, 16, 12] {
        v.push(Box::new(move |_| Collective::Scan { bytes }));
    }
    for bytes in [12, 16] {
        v.push(Box::new(move |_| Collective::Exscan { bytes }));
    }
    v
}

/// The v and w forms, reduce-scatter and the scans under the knobs (vcoll.c checks every result
/// and exits 1 on a wrong one), on 4 ranks and on 3 (recursive doubling's fold):
/// - blocking, run as messages: exactly the messages and bytes `commperf predict` expands the
///   same calls into; left to the library exactly the non-commutative MPI_Reduce_scatter and
///   the MPI_Alltoallv in place;
/// - nonblocking and (MPI 4.0) persistent, charged each rank's part, on 4 ranks per rank
///   (sends, receives = rounds, wire bytes, gaps; blocks j + 1 ints: 4, 8, 12, 16 B):
///   Iallgatherv 2, 2, 40 − own, 1; Ialltoallv 3, 3, the larger of out and in (36, 32, 36,
///   48), 2; Ialltoallw 3, 3 (60, 48, 52, 96), 2; Igatherv to 0: the root 0 sends and
///   receives 2, 36 B, the others send 1 (rank 2 also receives rank 3's), their own block (a
///   rank other than the root knows no other); Iscatterv from 0 the same the other way (the
///   root 1 gap); Ireduce_scatter 3, 3, (36, 36, 32, 28), 2; Ireduce_scatter_block (8 B) 3,
///   3, 24, 2; Iscan and Iexscan (4 B) the chain: 3 sends and 3 receives over the ranks, 4 B
///   each rank;
/// - large-count (MPICH): an MPI_Allreduce_c (8 B), MPI_Iallgather_c (4 B) and MPI_Scan_c (4 B)
///   per rank, counted among the other calls;
/// - under ΔL = 2 ms on 4 ranks, an MPI_Alltoallv (pairwise, 3 rounds each waiting for the one
///   before) takes from the earliest entry to the earliest exit at least 3 ΔL, and an MPI_Scan
///   (the chain, 3 messages) from the earliest entry to the last rank's exit at least 3 ΔL
///   (CLOCK_MONOTONIC, one clock for the ranks of one host; 1 % below for the TSC's
///   calibration against it).
fn v_collectives_under(mpi: &str) {
    let test = format!("vcoll_{mpi}");
    let _one = ONE_JOB.lock().unwrap_or_else(|e| e.into_inner());
    need(&test, &[&format!("mpicc.{mpi}"), &format!("mpirun.{mpi}")]);
    let s = Scratch::new("emulate", &test);
    let prog = s.0.join("vcoll");
    compile(&format!("mpicc.{mpi}"), "vcoll.c", &prog);
    let mpi4 = mpi == "mpich";
    for n in [4u32, 3] {
        let o = emulate_np(
            &["--L", "20us", "--o", "1us", "--g", "1us"],
            &["--json"],
            mpi,
            n,
            &prog,
            &["check"],
        );
        ok(&o);
        let j: Value = serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", text(&o.stdout)));
        let err = text(&o.stderr);
        assert_eq!(figure(&err, "errors"), 0.0, "{err}");
        let n64 = u64::from(n);
        let calls = figure(&err, "calls") as u64;
        assert_eq!(calls, 15 + 4 * n64, "{err}");
        assert_eq!(figure(&err, "native"), 2.0, "{err}");
        let u = &j["untouched"];
        assert_eq!(u["collective_calls"], n64 * calls, "{j}");
        assert_eq!(u["collectives_native"], n64 * 2, "{j}");
        assert_eq!(u["collectives_emulated"], n64 * (calls - 2), "{j}");
        let want = vcoll_emulated(n);
        assert_eq!(want.len() as u64, calls - 2);
        let (msgs, bytes) = predicted_by_rank(n, &want);
        assert_eq!(u["collective_p2p_messages"], msgs, "n={n}: {j}");
        assert_eq!(u["collective_p2p_bytes"], bytes, "n={n}: {j}");
        assert_eq!(u["collective_p2p_receives"], msgs, "n={n}: {j}");
        assert_eq!(u["p2p_messages"], 0, "{j}");
        assert_eq!(u["unstamped_receives"], 0, "{j}");
        assert_eq!(u["untracked_requests"], 0, "{j}");
        let started = 9 * n64;
        assert_eq!(u["charged_nonblocking_collectives"], started, "{j}");
        assert_eq!(
            u["charged_persistent_collectives"],
            if mpi4 { started } else { 0 },
            "{j}"
        );
        let sets = if mpi4 { 2 } else { 1 };
        assert_eq!(u["charged_collective_completions"], sets * started, "{j}");
        assert_eq!(u["other_calls"], if mpi4 { 3 * n64 } else { 0 }, "{j}");
        assert_eq!(u["other_bytes"], if mpi4 { 16 * n64 } else { 0 }, "{j}");
        if n == 4 {
            // Iallgatherv, Ialltoallv, Ialltoallw, Igatherv, Iscatterv, Ireduce_scatter,
            // Ireduce_scatter_block, Iscan, Iexscan over the 4 ranks.
            let sends = 8 + 12 + 12 + 3 + 3 + 12 + 12 + 3 + 3;
            let wire = (36 + 32 + 28 + 24)
                + (36 + 32 + 36 + 48)
                + (60 + 48 + 52 + 96)
                + (36 + 8 + 12 + 16)
                + (36 + 8 + 12 + 16)
                + (36 + 36 + 32 + 28)
                + 4 * 24
                + 16
                + 16;
            let gaps = 4 + 8 + 8 + 1 + 8 + 8;
            assert_eq!(u["charged_collective_sends"], sets * sends, "{j}");
            assert_eq!(u["charged_collective_receives"], sets * sends, "{j}");
            assert_eq!(u["charged_collective_rounds"], sets * sends, "{j}");
            assert_eq!(u["charged_collective_wire_bytes"], sets * wire, "{j}");
            assert_eq!(u["charged_collective_gaps"], sets * gaps, "{j}");
        }
    }

    let l = 2_000_000.0;
    let o = emulate_np(&["--L", "2ms"], &["--json"], mpi, 4, &prog, &["time", "3"]);
    ok(&o);
    let err = text(&o.stderr);
    assert_eq!(figure(&err, "errors"), 0.0, "{err}");
    for key in ["alltoallv_path_ns", "scan_path_ns"] {
        let t = figure(&err, key);
        assert!(
            t >= 0.99 * 3.0 * l,
            "{key}: {t} ns under L=2ms, 3 rounds:\n{err}"
        );
    }
}

#[test]
#[cfg_attr(
    not(commperf_has_openmpi),
    ignore = "needs Open MPI (mpicc.openmpi, mpirun.openmpi: apt-get install libopenmpi-dev openmpi-bin)"
)]
fn v_collectives_under_openmpi() {
    v_collectives_under("openmpi");
}

#[test]
#[cfg_attr(
    not(commperf_has_mpich),
    ignore = "needs MPICH (mpicc.mpich, mpirun.mpich: apt-get install libmpich-dev mpich)"
)]
fn v_collectives_under_mpich() {
    v_collectives_under("mpich");
}

/// The collectives collemu.c's `check` runs as messages on n ranks (those it leaves native
/// excluded), in bytes: see the program.
fn collemu_emulated(n: u32) -> Vec<Collective> {
    let mut v = vec![Collective::Barrier];
    for root in 0..n {
        for bytes in [20, 24, 16] {
            v.push(Collective::Bcast { root, bytes });
        }
        for bytes in [16, 24, 8] {
            v.push(Collective::Reduce {
                root,
                bytes,
                compute_ns: 0,
            });
        }
        if root == 0 {
            // The non-commutative op: emulated for root 0 only.
            v.push(Collective::Reduce {
                root,
                bytes: 16,
                compute_ns: 0,
            });
        }
        v.push(Collective::Gather { root, bytes: 8 });
        v.push(Collective::Gather { root, bytes: 8 });
        v.push(Collective::Scatter { root, bytes: 8 });
        v.push(Collective::Scatter { root, bytes: 8 });
    }
    // MPI_INT×7, MPI_DOUBLE×2, MPI_UNSIGNED, MPI_DOUBLE_INT, in place MPI_INT×3, a 2×2 matrix.
    for bytes in [28, 16, 4, 12, 12, 16] {
        v.push(Collective::Allreduce {
            bytes,
            compute_ns: 0,
        });
    }
    for _ in 0..3 {
        v.push(Collective::Allgather { bytes: 8 });
    }
    v.push(Collective::Alltoall { bytes: 12 });
    v.push(Collective::Alltoall { bytes: 8 });
    // The reversed communicator: a matrix Allreduce and a 4-byte Bcast.
    v.push(Collective::Allreduce {
        bytes: 16,
        compute_ns: 0,
    });
    v.push(Collective::Bcast { root: 0, bytes: 4 });
    v
}

/// The longest chain of messages, each waiting for the one before, in one recursive-doubling
/// allreduce on n ranks: log2 of the largest power of two ≤ n, plus the fold's one extra when
/// n is not a power of two (a folded rank's data reaches its partner in one message, which then
/// joins the doubling, and the result returns in one; the first doubling round of the other
/// ranks overlaps the fold, so the chain is one longer, not two).
fn rd_rounds(n: u32) -> u32 {
    let pof2 = if n.is_power_of_two() {
        n
    } else {
        n.next_power_of_two() / 2
    };
    pof2.trailing_zeros() + u32::from(pof2 != n)
}

fn figure(err: &str, key: &str) -> f64 {
    err.split_whitespace()
        .skip_while(|w| *w != key)
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {key} in the program's output:\n{err}"))
}

/// The collectives run as messages under the knobs (crates/pmpi/csrc/coll.c): every result is
/// the native collective's (collemu.c checks each and exits 1 on a wrong one), on 2 ranks and on
/// 3 (the fold of recursive doubling); the counts of emulated and native collectives are exact;
/// the messages are exactly those `commperf predict` expands the same calls into; L moves a
/// timed MPI_Allreduce by the chain of messages times ΔL, and with `--collectives native` not
/// at all.
fn collectives_under(mpi: &str) {
    let test = format!("coll_{mpi}");
    let _one = ONE_JOB.lock().unwrap_or_else(|e| e.into_inner());
    need(&test, &[&format!("mpicc.{mpi}"), &format!("mpirun.{mpi}")]);
    let s = Scratch::new("emulate", &test);
    let prog = s.0.join("collemu");
    compile(&format!("mpicc.{mpi}"), "collemu.c", &prog);
    for n in [2u32, 3] {
        // Results and counts, with three knobs set (L exercises the side band's stamps, g
        // the exchanges' non-blocking path, cpmpi_emu_paced_sendrecv).
        let o = emulate_np(
            &["--L", "20us", "--o", "1us", "--g", "1us"],
            &["--json"],
            mpi,
            n,
            &prog,
            &["check"],
        );
        ok(&o);
        let j: Value = serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", text(&o.stdout)));
        let err = text(&o.stderr);
        let calls = figure(&err, "calls") as u64;
        let native = figure(&err, "native") as u64;
        assert_eq!(figure(&err, "errors"), 0.0, "{err}");
        let n64 = u64::from(n);
        assert_eq!(calls, 15 + 11 * n64, "{err}");
        assert_eq!(native, n64, "{err}");
        let u = &j["untouched"];
        assert_eq!(j["collectives"], "p2p", "{j}");
        assert_eq!(u["ranks"], n, "{j}");
        assert_eq!(u["collective_calls"], n64 * calls, "{j}");
        assert_eq!(u["collectives_native"], n64 * native, "{j}");
        assert_eq!(u["collectives_emulated"], n64 * (calls - native), "{j}");
        let want = collemu_emulated(n);
        assert_eq!(want.len() as u64, calls - native);
        let (msgs, bytes) = predicted(n, &want);
        assert_eq!(u["collective_p2p_messages"], msgs, "n={n}: {j}");
        assert_eq!(u["collective_p2p_bytes"], bytes, "n={n}: {j}");
        assert_eq!(u["collective_p2p_receives"], msgs, "n={n}: {j}");
        assert_eq!(u["p2p_messages"], 0, "{j}");
        assert_eq!(u["unstamped_receives"], 0, "{j}");

        // L = 100 µs on 5 batches of 10 MPI_Allreduce of 8 B: the least batch mean per call is
        // at least the chain of messages × ΔL (each waits for the one before and is held ΔL;
        // 1 % below for the TSC's calibration against the program's CLOCK_MONOTONIC).
        let l = 100_000.0;
        let rounds = f64::from(rd_rounds(n));
        let time = ["time", "5", "10"];
        let o = emulate_np(&["--L", "100us"], &["--json"], mpi, n, &prog, &time);
        ok(&o);
        let j: Value = serde_json::from_slice(&o.stdout).expect("JSON");
        let t = figure(&text(&o.stderr), "allreduce_ns");
        assert!(
            t >= 0.99 * rounds * l,
            "n={n}: allreduce {t} ns under L=100us, {rounds} rounds"
        );
        // One Barrier and 50 Allreduce per rank, all emulated.
        assert_eq!(j["untouched"]["collectives_emulated"], 51 * n64, "{j}");
        let (msgs, _) = predicted(
            n,
            &std::iter::once(Collective::Barrier)
                .chain(std::iter::repeat_n(
                    Collective::Allreduce {
                        bytes: 8,
                        compute_ns: 0,
                    },
                    50,
                ))
                .collect::<Vec<_>>(),
        );
        assert_eq!(j["untouched"]["collective_p2p_messages"], msgs, "{j}");

        // Native: untouched, counted so, and (on 2 ranks, where no rank waits for a core) far
        // below one ΔL per call; 20 batches, so that one falls in a quiet moment of the machine.
        let native = || {
            let o = emulate_np(
                &["--L", "100us"],
                &["--json", "--collectives", "native"],
                mpi,
                n,
                &prog,
                &["time", "20", "10"],
            );
            ok(&o);
            o
        };
        let o = native();
        let j: Value = serde_json::from_slice(&o.stdout).expect("JSON");
        let u = &j["untouched"];
        assert_eq!(u["collectives_native"], 201 * n64, "{j}");
        assert_eq!(u["collectives_emulated"], 0, "{j}");
        assert_eq!(u["collective_p2p_messages"], 0, "{j}");
        assert_eq!(u["untouched_calls_percent"], 100.0, "{j}");
        if n == 2 {
            // A loaded machine (MPICH's ranks poll, and another job may hold a core) can make
            // every batch of a run slow: up to two more runs, the fastest counts.
            let mut t = figure(&text(&o.stderr), "allreduce_ns");
            for _ in 0..2 {
                if t < 0.5 * rounds * l {
                    break;
                }
                t = t.min(figure(&text(&native().stderr), "allreduce_ns"));
            }
            assert!(
                t < 0.5 * rounds * l,
                "native allreduce {t} ns under L=100us (fastest of three runs)"
            );
        }
    }
}

#[test]
#[cfg_attr(
    not(commperf_has_openmpi),
    ignore = "needs Open MPI (mpicc.openmpi, mpirun.openmpi: apt-get install libopenmpi-dev openmpi-bin)"
)]
fn collectives_as_messages_under_openmpi() {
    collectives_under("openmpi");
}

#[test]
#[cfg_attr(
    not(commperf_has_mpich),
    ignore = "needs MPICH (mpicc.mpich, mpirun.mpich: apt-get install libmpich-dev mpich)"
)]
fn collectives_as_messages_under_mpich() {
    collectives_under("mpich");
}

/// Fortran collectives run as messages too (Open MPI's Fortran entry points, MPICH's C ones),
/// MPI_IN_PLACE included: collemu.f90 checks every result, on 3 ranks.
fn fortran_collectives_under(mpi: &str) {
    let test = format!("fcoll_{mpi}");
    let _one = ONE_JOB.lock().unwrap_or_else(|e| e.into_inner());
    need(&test, &[&format!("mpif90.{mpi}"), &format!("mpirun.{mpi}")]);
    let s = Scratch::new("emulate", &test);
    let prog = s.0.join("fcollemu");
    compile(&format!("mpif90.{mpi}"), "collemu.f90", &prog);
    // g too: the collectives' blocking sends and exchanges then take their non-blocking paths.
    let o = emulate_np(
        &["--L", "10us", "--g", "1us"],
        &["--json"],
        mpi,
        3,
        &prog,
        &[],
    );
    ok(&o);
    let j: Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let err = text(&o.stderr);
    assert_eq!(figure(&err, "fcalls"), 17.0, "{err}");
    assert_eq!(figure(&err, "errors"), 0.0, "{err}");
    let u = &j["untouched"];
    assert_eq!(u["collective_calls"], 3 * 17, "{j}");
    assert_eq!(u["collectives_emulated"], 3 * 17, "{j}");
    assert_eq!(u["unstamped_receives"], 0, "{j}");
    let mut want = vec![
        Collective::Barrier,
        Collective::Allreduce {
            bytes: 24,
            compute_ns: 0,
        },
        Collective::Allreduce {
            bytes: 24,
            compute_ns: 0,
        },
        Collective::Allgather { bytes: 8 },
        Collective::Alltoall { bytes: 4 },
    ];
    for root in 0..3 {
        want.push(Collective::Bcast { root, bytes: 16 });
        want.push(Collective::Reduce {
            root,
            bytes: 16,
            compute_ns: 0,
        });
        want.push(Collective::Gather { root, bytes: 8 });
        want.push(Collective::Scatter { root, bytes: 8 });
    }
    let (msgs, bytes) = predicted(3, &want);
    assert_eq!(u["collective_p2p_messages"], msgs, "{j}");
    assert_eq!(u["collective_p2p_bytes"], bytes, "{j}");
}

#[test]
#[cfg_attr(
    not(commperf_has_openmpi_fortran),
    ignore = "needs Open MPI's Fortran (mpif90.openmpi: apt-get install libopenmpi-dev gfortran)"
)]
fn fortran_collectives_as_messages_under_openmpi() {
    fortran_collectives_under("openmpi");
}

#[test]
#[cfg_attr(
    not(commperf_has_mpich_fortran),
    ignore = "needs MPICH's Fortran (mpif90.mpich: apt-get install libmpich-dev gfortran)"
)]
fn fortran_collectives_as_messages_under_mpich() {
    fortran_collectives_under("mpich");
}

/// Persistent requests are under the knobs: each MPI_Start of a send is one message touched,
/// each started receive finds its sender's L stamp.
fn persistent_under(mpi: &str) {
    let test = format!("persistent_{mpi}");
    let _one = ONE_JOB.lock().unwrap_or_else(|e| e.into_inner());
    need(&test, &[&format!("mpicc.{mpi}"), &format!("mpirun.{mpi}")]);
    let s = Scratch::new("emulate", &test);
    let prog = s.0.join("persist");
    compile(&format!("mpicc.{mpi}"), "persist.c", &prog);
    let o = emulate(&["--L", "100us", "--o", "1us"], mpi, &prog, &[]);
    ok(&o);
    let j: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", text(&o.stdout)));
    let u = &j["untouched"];
    // 2 ranks × (10 × 24 B + 5 × 8 B).
    assert_eq!(u["p2p_messages"], 2 * 15, "{j}");
    assert_eq!(u["p2p_bytes"], 2 * (10 * 24 + 5 * 8), "{j}");
    assert_eq!(u["p2p_receives"], 2 * 15, "{j}");
    assert_eq!(u["unstamped_receives"], 0, "{j}");
    let held = u["held_ns"].as_f64().unwrap();
    assert!(
        held > 50_000.0 && held <= 30.0 * 100_000.0 + 30.0,
        "held {held} ns: {j}"
    );
}

#[test]
#[cfg_attr(
    not(commperf_has_openmpi),
    ignore = "needs Open MPI (mpicc.openmpi, mpirun.openmpi: apt-get install libopenmpi-dev openmpi-bin)"
)]
fn persistent_under_openmpi() {
    persistent_under("openmpi");
}

#[test]
#[cfg_attr(
    not(commperf_has_mpich),
    ignore = "needs MPICH (mpicc.mpich, mpirun.mpich: apt-get install libmpich-dev mpich)"
)]
fn persistent_under_mpich() {
    persistent_under("mpich");
}

/// The families the library runs and the knobs charge (emulate.md, "Collectives the library
/// runs, and one-sided transfers"), timed on rank 0 of 2 (famknobs.c, 5 repetitions, the least
/// of each) without knobs, under ΔL = 2 ms (the counts exact), Δo = 500 µs and ΔG = 20 µs/B. Each figure under L is at
/// least the model's hold from a point the program's clock read precedes: one ΔL for a round
/// in which the rank receives (Ialltoall, Iallreduce, a persistent Allreduce on 2 ranks) or for
/// a put completed by its synchronisation, two for a get (the data's round trip) and for the
/// Isendrecv answered by rank 1 (its message held ΔL at rank 1, the answer ΔL at rank 0). The
/// bare operations take microseconds (the run without knobs shows them); no bar is put on
/// them, nor any upper bound: on the loaded 2-core machine a fence took from 6 µs to 20 ms,
/// knobs or none.
fn charged_families_under(mpi: &str) {
    let test = format!("charged_{mpi}");
    let _one = ONE_JOB.lock().unwrap_or_else(|e| e.into_inner());
    need(&test, &[&format!("mpicc.{mpi}"), &format!("mpirun.{mpi}")]);
    let s = Scratch::new("emulate", &test);
    let prog = s.0.join("famknobs");
    compile(&format!("mpicc.{mpi}"), "famknobs.c", &prog);
    let mpi4 = mpi == "mpich";
    let l = 2_000_000.0;
    // (figure, ΔL's on its path)
    let mut holds = vec![
        ("ialltoall_ns", 1.0),
        ("iallreduce_ns", 1.0),
        ("put_fence_ns", 1.0),
        ("get_fence_ns", 2.0),
        ("put_unlock_ns", 1.0),
        ("rget_wait_ns", 2.0),
    ];
    if mpi4 {
        holds.extend([("pcoll_ns", 1.0), ("isendrecv_ns", 2.0)]);
    }
    let o = emulate(&[], mpi, &prog, &[]);
    ok(&o);
    let j: Value = serde_json::from_slice(&o.stdout).expect("JSON");
    assert_eq!(j["untouched"], Value::Null, "{j}");
    for (key, _) in &holds {
        assert!(figure(&text(&o.stderr), key) > 0.0, "{key} without knobs");
    }
    let o = emulate(&["--L", "2ms"], mpi, &prog, &[]);
    ok(&o);
    let j: Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let err = text(&o.stderr);
    for (key, k) in &holds {
        let with = figure(&err, key);
        assert!(
            with >= k * l,
            "{key}: {with} ns under L=2ms, below {k} ΔL:\n{err}"
        );
    }
    // o and G, each alone: (figure, Δo's on its path, bytes ΔG holds it for). Δo per message
    // the rank sends and receives at a collective's start (one each on 2 ranks), one at the
    // origin's one-sided call, four along the Isendrecv's exchange (rank 0's send, rank 1's
    // receive and answer, rank 0's receive). ΔG per wire byte: a collective's 8 B, a transfer's
    // bytes, and the exchange's 40 B each way. A spin is exact on average, its own cost taken
    // off (emulate.c): 10 % of slack below.
    let mut paths = vec![
        ("ialltoall_ns", 2.0, 8.0),
        ("iallreduce_ns", 2.0, 8.0),
        ("put_fence_ns", 1.0, 64.0),
        ("get_fence_ns", 1.0, 32.0),
        ("put_unlock_ns", 1.0, 16.0),
        ("rget_wait_ns", 1.0, 8.0),
    ];
    if mpi4 {
        paths.extend([("pcoll_ns", 2.0, 8.0), ("isendrecv_ns", 4.0, 80.0)]);
    }
    let (o_ns, g_ns) = (500_000.0, 20_000.0);
    let o_run = emulate(&["--o", "500us"], mpi, &prog, &[]);
    ok(&o_run);
    let g_run = emulate(&["--G", "20000"], mpi, &prog, &[]);
    ok(&g_run);
    let (o_err, g_err) = (text(&o_run.stderr), text(&g_run.stderr));
    for (key, k_o, bytes) in &paths {
        let (with_o, with_g) = (figure(&o_err, key), figure(&g_err, key));
        assert!(
            with_o >= 0.9 * k_o * o_ns,
            "{key}: {with_o} ns under o=500us, below {k_o} Δo:\n{o_err}"
        );
        assert!(
            with_g >= 0.9 * bytes * g_ns,
            "{key}: {with_g} ns under G=20000ns/B, below {bytes} B × ΔG:\n{g_err}"
        );
    }

    let u = &j["untouched"];
    let reps = 5;
    // Per rank and repetition: an Ialltoall and an Iallreduce (on 2 ranks each one send, one
    // receive, one round, 8 B on the wire), and under MPI 4.0 a persistent Allreduce started.
    let nb = 2 * 2 * reps;
    let pc = if mpi4 { 2 * reps } else { 0 };
    assert_eq!(u["charged_nonblocking_collectives"], nb, "{j}");
    assert_eq!(u["charged_persistent_collectives"], pc, "{j}");
    assert_eq!(u["charged_collective_sends"], nb + pc, "{j}");
    assert_eq!(u["charged_collective_receives"], nb + pc, "{j}");
    assert_eq!(u["charged_collective_rounds"], nb + pc, "{j}");
    assert_eq!(u["charged_collective_wire_bytes"], 8 * (nb + pc), "{j}");
    assert_eq!(u["charged_collective_gaps"], 0, "{j}");
    assert_eq!(u["charged_collective_completions"], nb + pc, "{j}");
    // Per rank and repetition: Put 64 B, Get 32 B, Put 16 B, Rget 8 B; completed by two fences,
    // an unlock and (the Rget, after its request) the unlock_all.
    assert_eq!(u["one_sided_transfers"], 2 * 4 * reps, "{j}");
    assert_eq!(u["one_sided_bytes"], 2 * 120 * reps, "{j}");
    assert_eq!(u["one_sided_round_trips"], 2 * 2 * reps, "{j}");
    assert_eq!(u["one_sided_synchronisations"], 2 * 4 * reps, "{j}");
    assert_eq!(u["one_sided_request_completions"], 2 * reps, "{j}");
    // Under MPI 4.0 rank 0's Isendrecv and rank 1's answer are point-to-point messages, each
    // received under the knobs with its sender's stamp.
    let isr = if mpi4 { reps } else { 0 };
    assert_eq!(u["isendrecv_calls"], isr, "{j}");
    assert_eq!(u["p2p_messages"], 2 * isr, "{j}");
    assert_eq!(u["p2p_receives"], 2 * isr, "{j}");
    assert_eq!(u["unstamped_receives"], 0, "{j}");
    assert_eq!(u["other_calls"], 0, "{j}");
    assert_eq!(u["untracked_requests"], 0, "{j}");
    let held = u["charged_held_ns"].as_f64().unwrap();
    assert!(held > 0.0, "{j}");

    // `--collectives native` leaves every collective untouched: the nonblocking and persistent
    // ones are counted among the other calls, the one-sided transfers still charged.
    let o = emulate_with(
        &["--o", "1us"],
        &["--json", "--collectives", "native"],
        mpi,
        &prog,
        &[],
    );
    ok(&o);
    let j: Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let u = &j["untouched"];
    assert_eq!(u["charged_nonblocking_collectives"], 0, "{j}");
    assert_eq!(u["charged_persistent_collectives"], 0, "{j}");
    assert_eq!(u["charged_collective_sends"], 0, "{j}");
    assert_eq!(u["other_calls"], nb + pc, "{j}");
    assert_eq!(u["one_sided_transfers"], 2 * 4 * reps, "{j}");
}

#[test]
#[cfg_attr(
    not(commperf_has_openmpi),
    ignore = "needs Open MPI (mpicc.openmpi, mpirun.openmpi: apt-get install libopenmpi-dev openmpi-bin)"
)]
fn charged_families_under_openmpi() {
    charged_families_under("openmpi");
}

#[test]
#[cfg_attr(
    not(commperf_has_mpich),
    ignore = "needs MPICH (mpicc.mpich, mpirun.mpich: apt-get install libmpich-dev mpich)"
)]
fn charged_families_under_mpich() {
    charged_families_under("mpich");
}
