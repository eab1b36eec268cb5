//! `commperf monitor -- mpirun …` on real MPI programs, under Open MPI and under MPICH: a C and a
//! Fortran program compiled here with known message counts (every count must be exact: this
//! proves the Fortran entry points are wrapped where Open MPI needs them and not where MPICH would
//! count twice), Debian's hpcc and lammps (programs nobody here wrote), a crash mid-run, a
//! mismatched MPI, damaged files. Each test needs its MPI installed (mpicc.openmpi/mpirun.openmpi,
//! mpicc.mpich/mpirun.mpich, hpcc, lmp); without it, it skips with a message, unless
//! `COMMPERF_REQUIRE_MPI=1` (set by CI) makes that a failure.

mod mpi_apps;
use mpi_apps::{apps, compile, exe, ok, ready, text, Scratch};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

fn launcher(mpi: &str) -> Vec<String> {
    let mut v = vec![format!("mpirun.{mpi}"), "-np".into(), "4".into()];
    if mpi == "openmpi" {
        v.push("--oversubscribe".into());
    }
    v
}

/// `commperf monitor -o DIR [extra] -- mpirun.<mpi> -np 4 PROG ARGS…` in `cwd`, time-limited.
fn monitor(cwd: &Path, dir: &Path, extra: &[&str], mpi: &str, prog: &[&str]) -> Output {
    let mut c = Command::new("timeout");
    c.args(["-k", "10", "300", exe(), "monitor", "-o"])
        .arg(dir)
        .args(extra)
        .arg("--");
    c.args(launcher(mpi)).args(prog).current_dir(cwd);
    c.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    c.output().expect("run commperf monitor")
}

fn summary(dir: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).expect("summary.json"))
        .expect("JSON")
}

/// Count of `call` made by `rank` (0 when none).
fn calls(s: &Value, rank: u64, call: &str) -> (u64, u64) {
    s["calls"]
        .as_array()
        .expect("calls")
        .iter()
        .find(|c| c["rank"].as_u64() == Some(rank) && c["call"] == call)
        .map(|c| {
            (
                c["count"].as_u64().unwrap_or(0),
                c["bytes"].as_u64().unwrap_or(0),
            )
        })
        .unwrap_or((0, 0))
}

/// Matched messages from src to dst of size bin `bin`, summed over calls.
fn pair(s: &Value, src: u64, dst: u64, bin: u64) -> u64 {
    s["pairs"]
        .as_array()
        .expect("pairs")
        .iter()
        .filter(|p| {
            p["src"].as_u64() == Some(src)
                && p["dst"].as_u64() == Some(dst)
                && p["size_bin"].as_u64() == Some(bin)
        })
        .map(|p| p["count"].as_u64().unwrap_or(0))
        .sum()
}

fn c_counts(mpi: &str) {
    let test = format!("c_counts_{mpi}");
    if !ready(&test, &[&format!("mpicc.{mpi}"), &format!("mpirun.{mpi}")]) {
        return;
    }
    let s = Scratch::new("pmpi", &test);
    let prog = s.0.join("counts");
    compile(&format!("mpicc.{mpi}"), "counts.c", &prog);
    let dir = s.0.join("mon");
    let o = monitor(
        &s.0,
        &dir,
        &["--tag", "counts"],
        mpi,
        &[prog.to_str().unwrap()],
    );
    ok(&o);
    let j = summary(&dir);
    assert_eq!(j["cut_short"], false, "{j}");
    assert_eq!(j["matched_messages"], 100, "{}", text(&o.stdout));
    assert_eq!(j["unmatched_sends"], 0);
    assert_eq!(j["unmatched_recvs"], 0);
    assert_eq!(j["drops"], 0);
    assert_eq!(j["program_tags"][0], "counts");
    for r in 0..4u64 {
        let right = (r + 1) % 4;
        assert_eq!(
            calls(&j, r, "MPI_Isend"),
            (16, 10 * 100 + 4 * 8 + 2 * 16),
            "rank {r}"
        );
        assert_eq!(calls(&j, r, "MPI_Send"), (6, 5 * 1000 + 64), "rank {r}");
        assert_eq!(calls(&j, r, "MPI_Recv").0, 13, "rank {r}");
        assert_eq!(calls(&j, r, "MPI_Irecv"), (9, 5 * 1000 + 4 * 8), "rank {r}");
        assert_eq!(
            calls(&j, r, "MPI_Sendrecv(send)"),
            (3, 150_000),
            "rank {r}: the Pcontrol(0) part must not count"
        );
        assert_eq!(calls(&j, r, "MPI_Sendrecv(recv)"), (3, 150_000), "rank {r}");
        assert_eq!(calls(&j, r, "MPI_Probe"), (1, 64), "rank {r}");
        assert_eq!(calls(&j, r, "MPI_Barrier").0, 2, "rank {r}");
        assert_eq!(calls(&j, r, "MPI_Bcast"), (3, 2400), "rank {r}");
        assert_eq!(calls(&j, r, "MPI_Allreduce"), (4, 32), "rank {r}");
        assert_eq!(calls(&j, r, "MPI_Pcontrol").0, 2, "rank {r}");
        assert_eq!(pair(&j, r, right, 128), 10, "rank {r} -> {right}, 100 B");
        assert_eq!(pair(&j, r, right, 1024), 5);
        assert_eq!(pair(&j, r, right, 65536), 3);
        assert_eq!(pair(&j, r, right, 8), 4);
        assert_eq!(pair(&j, r, right, 64), 1);
        // Over the split communicator: world ranks, not communicator ranks.
        assert_eq!(
            pair(&j, r, (r + 2) % 4, 16),
            2,
            "rank {r} over the sub-communicator"
        );
    }
    // Stages are sane: nonnegative, and the clock's bound is measured.
    for p in j["pairs"].as_array().unwrap() {
        for k in [
            "mean_source_ns",
            "mean_net_ns",
            "mean_destination_ns",
            "mean_late_sender_ns",
        ] {
            assert!(p[k].as_f64().unwrap() >= 0.0, "{k} in {p}");
        }
    }
    assert!(j["clock_error_ns"].as_i64().unwrap() > 0);
    // The files re-read alone give the same summary.
    let o2 = Command::new(exe())
        .args(["monitor", "report"])
        .arg(&dir)
        .output()
        .unwrap();
    ok(&o2);
    assert!(
        text(&o2.stdout).contains("matched messages 100"),
        "{}",
        text(&o2.stdout)
    );
    // The same messages fill the monitor's stage histograms: the signature counts every one,
    // by call as the interposer counted the calls.
    let o3 = Command::new(exe())
        .args(["monitor", "report", "--format", "json"])
        .arg(&dir)
        .output()
        .unwrap();
    ok(&o3);
    let sig: serde_json::Value = serde_json::from_slice(&o3.stdout).unwrap();
    assert_eq!(sig["messages"], 100, "{sig}");
    let by_type = sig["by_type"].as_array().unwrap();
    let group = |name: &str| {
        by_type
            .iter()
            .find(|g| {
                g["group"]
                    .as_str()
                    .unwrap()
                    .starts_with(&format!("{name}/"))
            })
            .map_or(0, |g| g["messages"].as_u64().unwrap())
    };
    let isends: u64 = (0..4).map(|r| calls(&j, r, "MPI_Isend").0).sum();
    assert_eq!(group("MPI_Isend"), isends, "{sig}");
    let total: u64 = by_type
        .iter()
        .map(|g| g["messages"].as_u64().unwrap())
        .sum();
    assert_eq!(total, 100);
    for stage in sig["by_size"][0]["stages"].as_array().unwrap() {
        assert_eq!(stage["messages"], sig["by_size"][0]["messages"], "{stage}");
    }
    assert!(dir.join("run.json").is_file());
}

#[test]
fn c_counts_openmpi() {
    c_counts("openmpi");
}

#[test]
fn c_counts_mpich() {
    c_counts("mpich");
}

fn fortran_counts(mpi: &str) {
    let test = format!("fortran_counts_{mpi}");
    if !ready(&test, &[&format!("mpif90.{mpi}"), &format!("mpirun.{mpi}")]) {
        return;
    }
    let s = Scratch::new("pmpi", &test);
    let prog = s.0.join("fcounts");
    compile(&format!("mpif90.{mpi}"), "counts.f90", &prog);
    let dir = s.0.join("mon");
    let o = monitor(&s.0, &dir, &[], mpi, &[prog.to_str().unwrap()]);
    ok(&o);
    let j = summary(&dir);
    assert_eq!(j["matched_messages"], 48, "{}", text(&o.stdout));
    assert_eq!(j["unmatched_sends"], 0);
    assert_eq!(j["unmatched_recvs"], 0);
    for r in 0..4u64 {
        // Exact: nothing missed (Open MPI) and nothing counted twice (MPICH).
        assert_eq!(calls(&j, r, "MPI_Send"), (6, 480), "rank {r}");
        assert_eq!(calls(&j, r, "MPI_Recv"), (6, 480), "rank {r}");
        assert_eq!(calls(&j, r, "MPI_Isend"), (4, 1600), "rank {r}");
        assert_eq!(calls(&j, r, "MPI_Irecv"), (4, 1600), "rank {r}");
        assert_eq!(calls(&j, r, "MPI_Sendrecv(send)"), (2, 16), "rank {r}");
        assert_eq!(calls(&j, r, "MPI_Allreduce"), (3, 24), "rank {r}");
        assert_eq!(calls(&j, r, "MPI_Barrier").0, 1, "rank {r}");
        assert_eq!(calls(&j, r, "MPI_Bcast"), (2, 80), "rank {r}");
        assert_eq!(pair(&j, r, (r + 1) % 4, 128), 6);
        assert_eq!(pair(&j, r, (r + 1) % 4, 512), 4);
        assert_eq!(pair(&j, r, (r + 1) % 4, 8), 2);
    }
}

#[test]
fn fortran_counts_openmpi() {
    fortran_counts("openmpi");
}

#[test]
fn fortran_counts_mpich() {
    fortran_counts("mpich");
}

#[test]
fn start_disabled_records_only_after_pcontrol_1() {
    if !ready("start_disabled", &["mpicc.openmpi", "mpirun.openmpi"]) {
        return;
    }
    let s = Scratch::new("pmpi", "start_disabled");
    let prog = s.0.join("counts");
    compile("mpicc.openmpi", "counts.c", &prog);
    let dir = s.0.join("mon");
    ok(&monitor(
        &s.0,
        &dir,
        &["--start-disabled"],
        "openmpi",
        &[prog.to_str().unwrap()],
    ));
    let j = summary(&dir);
    // The program turns monitoring on only at its very end (MPI_Pcontrol(1) before MPI_Finalize).
    assert_eq!(j["matched_messages"], 0, "{j}");
    assert_eq!(calls(&j, 0, "MPI_Send").0, 0);
    assert_eq!(calls(&j, 0, "MPI_Pcontrol").0, 2);
}

/// MPI_THREAD_MULTIPLE: requests posted on one thread and completed on another are recorded
/// once each, every send matched, none left pending (the interposer's per-thread request tables
/// hand such a request over to the completing thread).
fn threads(mpi: &str) {
    let test = format!("threads_{mpi}");
    if !ready(&test, &[&format!("mpicc.{mpi}"), &format!("mpirun.{mpi}")]) {
        return;
    }
    let s = Scratch::new("pmpi", &test);
    let prog = s.0.join("threads");
    compile(&format!("mpicc.{mpi}"), "threads.c", &prog);
    let dir = s.0.join("mon");
    let o = monitor(&s.0, &dir, &[], mpi, &[prog.to_str().unwrap()]);
    ok(&o);
    let j = summary(&dir);
    // threads.c: 100 Isend and 100 Irecv per rank, 4 ranks.
    let (ranks, per_rank) = (4u64, 100u64);
    assert_eq!(j["matched_messages"], ranks * per_rank, "{j}");
    assert_eq!(j["unmatched_sends"], 0, "{j}");
    assert_eq!(j["unmatched_recvs"], 0, "{j}");
    assert_eq!(j["pending_requests"], 0, "{j}");
    assert_eq!(j["drops"], 0, "{j}");
    for r in 0..ranks {
        assert_eq!(calls(&j, r, "MPI_Isend").0, per_rank, "rank {r}");
        assert_eq!(calls(&j, r, "MPI_Irecv").0, per_rank, "rank {r}");
    }
}

#[test]
fn threads_openmpi() {
    threads("openmpi");
}

#[test]
fn threads_mpich() {
    threads("mpich");
}

#[test]
fn crash_mid_run_leaves_readable_data_and_is_marked_cut_short() {
    if !ready("crash", &["mpicc.openmpi", "mpirun.openmpi"]) {
        return;
    }
    let s = Scratch::new("pmpi", "crash");
    let prog = s.0.join("counts");
    compile("mpicc.openmpi", "counts.c", &prog);
    let dir = s.0.join("mon");
    let o = monitor(
        &s.0,
        &dir,
        &[],
        "openmpi",
        &[prog.to_str().unwrap(), "crash"],
    );
    assert!(
        !o.status.success(),
        "the program aborts, so monitor must fail"
    );
    let out = text(&o.stdout);
    assert!(out.contains("run cut short"), "{out}\n{}", text(&o.stderr));
    let j = summary(&dir);
    assert_eq!(j["cut_short"], true);
    assert!(
        j["unfinished_ranks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r == 1),
        "{j}"
    );
    // Rank 1 flushed its first phase before abort(): all 10 sends and receives are there.
    assert_eq!(calls(&j, 1, "MPI_Isend"), (10, 1000), "{j}");
    assert_eq!(calls(&j, 1, "MPI_Recv").0, 10);
}

#[test]
fn mismatched_mpi_is_refused_by_name() {
    if !ready(
        "mismatch",
        &["mpicc.mpich", "mpirun.mpich", "mpirun.openmpi"],
    ) {
        return;
    }
    let s = Scratch::new("pmpi", "mismatch");
    let prog = s.0.join("counts_mpich");
    compile("mpicc.mpich", "counts.c", &prog);
    // The launcher is Open MPI's, the program MPICH's: refused before anything runs.
    let o = monitor(
        &s.0,
        &s.0.join("m1"),
        &[],
        "openmpi",
        &[prog.to_str().unwrap()],
    );
    assert!(!o.status.success());
    let e = text(&o.stderr);
    assert!(e.contains("Open MPI") && e.contains("MPICH"), "{e}");
    // Forcing the Open MPI interposer into the MPICH program: the interposer refuses it itself.
    let o = monitor(
        &s.0,
        &s.0.join("m2"),
        &["--interposer", "openmpi"],
        "mpich",
        &[prog.to_str().unwrap()],
    );
    assert!(!o.status.success());
    let e = text(&o.stderr);
    assert!(
        e.contains("built for Open MPI, but the program links MPICH"),
        "{e}"
    );
}

#[test]
fn bad_directories_and_files_are_named() {
    if !ready("bad_files", &["mpicc.openmpi", "mpirun.openmpi"]) {
        return;
    }
    let s = Scratch::new("pmpi", "bad_files");
    // Unwritable output: refused at start (the program never runs).
    let marker = s.0.join("ran");
    let o = Command::new(exe())
        .args(["monitor", "-o", "/proc/commperf-nope", "--", "touch"])
        .arg(&marker)
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("/proc/commperf-nope"),
        "{}",
        text(&o.stderr)
    );
    assert!(
        !marker.exists(),
        "the program ran although the output was unwritable"
    );

    let prog = s.0.join("counts");
    compile("mpicc.openmpi", "counts.c", &prog);
    let dir = s.0.join("mon");
    ok(&monitor(
        &s.0,
        &dir,
        &[],
        "openmpi",
        &[prog.to_str().unwrap()],
    ));
    let f = dir.join("rank-2.cpmpi");
    let mut b = std::fs::read(&f).unwrap();
    // Truncated: the last frame cut in half.
    std::fs::write(&f, &b[..b.len() - 20]).unwrap();
    let o = Command::new(exe())
        .args(["monitor", "report"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(!o.status.success());
    let e = text(&o.stderr);
    assert!(e.contains("rank-2.cpmpi") && e.contains("truncated"), "{e}");
    // Corrupt: a flipped byte inside a frame.
    let at = b.len() / 2;
    b[at] ^= 0x55;
    std::fs::write(&f, &b).unwrap();
    let o = Command::new(exe())
        .args(["monitor", "report"])
        .arg(&dir)
        .output()
        .unwrap();
    let e = text(&o.stderr);
    assert!(
        !o.status.success() && e.contains("rank-2.cpmpi") && e.contains("corrupt"),
        "{e}"
    );
}

#[test]
fn hpcc_under_the_preload() {
    if !ready("hpcc", &["hpcc", "mpirun.openmpi"]) {
        return;
    }
    // Debian's hpcc links Open MPI only: there is no MPICH build of it to run.
    let s = Scratch::new("pmpi", "hpcc");
    std::fs::copy(apps().join("hpccinf.txt"), s.0.join("hpccinf.txt")).unwrap();
    let dir = s.0.join("mon");
    let o = monitor(&s.0, &dir, &[], "openmpi", &["hpcc"]);
    ok(&o);
    let out = std::fs::read_to_string(s.0.join("hpccoutf.txt")).unwrap();
    assert!(
        out.contains("HPL_Tflops=") && out.contains("End of MPIRandomAccess section"),
        "hpcc did not complete"
    );
    let j = summary(&dir);
    assert!(j["matched_messages"].as_u64().unwrap() > 1000, "{j}");
    assert_eq!(j["unmatched_sends"], 0);
    assert_eq!(j["unmatched_recvs"], 0);
    for call in [
        "MPI_Isend",
        "MPI_Irecv",
        "MPI_Send",
        "MPI_Recv",
        "MPI_Sendrecv(send)",
        "MPI_Allreduce",
        "MPI_Bcast",
        "MPI_Alltoall",
    ] {
        assert!(calls(&j, 0, call).0 > 0, "no {call} on rank 0");
    }
}

#[test]
fn lammps_under_the_preload() {
    if !ready("lammps", &["lmp", "mpirun.openmpi"]) {
        return;
    }
    // Debian's lammps links Open MPI only.
    let s = Scratch::new("pmpi", "lammps");
    let dir = s.0.join("mon");
    let input = apps().join("in.lj");
    let o = monitor(
        &s.0,
        &dir,
        &[],
        "openmpi",
        &["lmp", "-in", input.to_str().unwrap(), "-log", "none"],
    );
    ok(&o);
    assert!(
        text(&o.stdout).contains("Loop time"),
        "lammps did not finish its run"
    );
    let j = summary(&dir);
    assert!(j["matched_messages"].as_u64().unwrap() > 1000, "{j}");
    assert_eq!(j["unmatched_sends"], 0);
    assert_eq!(j["unmatched_recvs"], 0);
    for call in ["MPI_Send", "MPI_Irecv", "MPI_Allreduce", "MPI_Bcast"] {
        assert!(calls(&j, 0, call).0 > 0, "no {call} on rank 0");
    }
}
