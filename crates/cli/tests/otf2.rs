//! OTF2 out and in: `commperf monitor --trace -- mpirun …` also writes DIR/traces.otf2, which
//! `otf2-print` reads and `commperf predict --trace DIR/traces.otf2` replays to exactly the
//! prediction of DIR/trace.txt (same topology, same profile). Needs Open MPI and libotf2 with
//! otf2-tools; without them the tests are ignored with the reason, unless
//! `COMMPERF_REQUIRE_MPI=1` (CI) makes that a failure.

mod mpi_apps;
use mpi_apps::{compile, exe, need, ok, text, Scratch};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn monitor(cwd: &Path, dir: &Path, mpi: &str, prog: &[&str]) -> std::process::Output {
    let mut c = Command::new("timeout");
    c.args(["-k", "10", "300", exe(), "monitor", "--trace", "-o"])
        .arg(dir)
        .arg("--")
        .args([&format!("mpirun.{mpi}"), "-np", "4"]);
    if mpi == "openmpi" {
        c.arg("--oversubscribe");
    }
    c.args(prog)
        .current_dir(cwd)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    c.output().expect("run commperf monitor")
}

/// `commperf predict --format json --topology torus:2x2 --eager 4k --trace FILE [ARGS…]`.
fn predict(trace: &Path, args: &[&str]) -> Value {
    let mut all = vec!["--topology", "torus:2x2", "--eager", "4k"];
    all.extend_from_slice(args);
    mpi_apps::predict(trace, &all)
}

/// A prediction without the fields that name its input (file and format).
fn without_input(mut v: Value) -> Value {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(m) => {
                m.remove("trace");
                m.remove("trace_format");
                m.values_mut().for_each(strip);
            }
            Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    strip(&mut v);
    v
}

/// A program of the tests' apps (crates/pmpi/tests/apps), or of the NAS-pattern kit (apps/nas).
enum Src {
    TestApp(&'static str),
    Nas(&'static str),
}

fn build(mpi: &str, src: &Src, out: &Path) {
    match src {
        Src::TestApp(f) => compile(&format!("mpicc.{mpi}"), f, out),
        Src::Nas(name) => {
            let nas = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../apps/nas");
            let o = Command::new(format!("mpicc.{mpi}"))
                .args(["-O2", "-I"])
                .arg(&nas)
                .arg("-o")
                .arg(out)
                .arg(nas.join(format!("{name}.c")))
                .output()
                .expect("run mpicc");
            ok(&o);
        }
    }
}

/// Monitors `src` (args) under `mpi`, then predicts both traces and compares.
fn round_trip(test: &str, mpi: &str, src: Src, args: &[&str]) -> (Value, String) {
    need(
        test,
        &[
            &format!("mpicc.{mpi}"),
            &format!("mpirun.{mpi}"),
            "otf2-print",
        ],
    );
    let s = Scratch::new("otf2", test);
    let prog = s.0.join("prog");
    build(mpi, &src, &prog);
    let dir = s.0.join("mon");
    let mut cmd = vec![prog.to_str().expect("path")];
    cmd.extend_from_slice(args);
    let o = monitor(&s.0, &dir, mpi, &cmd);
    ok(&o);
    let anchor = dir.join("traces.otf2");
    assert!(
        text(&o.stderr).contains(&format!("wrote {}", anchor.display())),
        "{}",
        text(&o.stderr)
    );
    // otf2-print reads the archive, and finds as many messages as the own trace replays.
    let p = Command::new("otf2-print")
        .arg(&anchor)
        .output()
        .expect("otf2-print");
    ok(&p);
    assert!(text(&p.stderr).trim().is_empty(), "{}", text(&p.stderr));
    let printed = text(&p.stdout);
    let count = |k: &str| {
        printed
            .lines()
            .filter(|l| l.split_whitespace().next() == Some(k))
            .count() as u64
    };
    let stats: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("trace-stats.json")).expect("trace-stats.json"),
    )
    .expect("stats JSON");
    // The matched messages, and those the neighbourhood collectives are written as.
    let messages = stats["messages"].as_u64().expect("messages")
        + stats["neighbor_messages"]
            .as_u64()
            .expect("neighbor_messages");
    assert!(messages > 0);
    // Those, and the empty messages of one-sided post/start/complete/wait epochs.
    let epoch = stats["epoch_messages"].as_u64().expect("epoch_messages");
    assert_eq!(count("MPI_SEND") + count("MPI_ISEND"), messages + epoch);
    assert_eq!(count("MPI_RECV") + count("MPI_IRECV"), messages + epoch);
    // A record per one-sided transfer, and (every transfer of these programs is completed in
    // its epoch) a remote completion per transfer.
    let one_sided = stats["one_sided"].as_u64().expect("one_sided");
    assert_eq!(
        count("RMA_PUT") + count("RMA_GET") + count("RMA_ATOMIC"),
        one_sided
    );
    assert_eq!(count("RMA_OP_COMPLETE_REMOTE"), one_sided);
    // Every collective the own trace replays is one collective record per member: blocking
    // ones MpiCollectiveEnd, nonblocking ones NonBlockingCollectiveComplete.
    let field = |k: &str| {
        stats[k]
            .as_u64()
            .unwrap_or_else(|| panic!("{k} in {stats}"))
    };
    let nonblocking = field("nonblocking_collectives");
    assert_eq!(count("NON_BLOCKING_COLLECTIVE_COMPLETE"), nonblocking);
    assert_eq!(count("NON_BLOCKING_COLLECTIVE_REQUEST"), nonblocking);
    assert_eq!(
        count("MPI_COLLECTIVE_END") + nonblocking,
        4 * field("collectives") + field("subcomm_collectives")
    );

    let own = predict(&dir.join("trace.txt"), &[]);
    let otf2 = predict(&anchor, &[]);
    assert_eq!(otf2["trace_format"], "otf2", "{otf2}");
    assert_eq!(own["messages"], otf2["messages"]);
    assert_eq!(without_input(own.clone()), without_input(otf2));
    // --format-in otf2 says the same of the same file.
    let named = predict(&anchor, &["--format-in", "otf2"]);
    assert_eq!(without_input(own.clone()), without_input(named));
    (
        own,
        std::fs::read_to_string(dir.join("trace.txt")).expect("trace.txt"),
    )
}

#[test]
#[cfg_attr(
    not(all(commperf_has_openmpi, commperf_has_otf2)),
    ignore = "needs Open MPI and libotf2 with otf2-tools (apt-get install libopenmpi-dev openmpi-bin libotf2-trace-dev otf2-tools)"
)]
fn otf2_round_trip_point_to_point() {
    // counts.c: every point-to-point form, a split communicator, MPI_Pcontrol(0)..(1).
    let (own, trace) = round_trip(
        "otf2_round_trip_point_to_point",
        "openmpi",
        Src::TestApp("counts.c"),
        &[],
    );
    assert!(trace.contains("bcast root 0 800B"), "{trace}");
    assert!(own["messages"].as_u64().unwrap_or(0) > 0, "{own}");
}

#[test]
#[cfg_attr(
    not(all(commperf_has_openmpi, commperf_has_otf2)),
    ignore = "needs Open MPI and libotf2 with otf2-tools (apt-get install libopenmpi-dev openmpi-bin libotf2-trace-dev otf2-tools)"
)]
fn otf2_round_trip_collectives() {
    // colls.c: bcast, allreduce, alltoall, gather, reduce_scatter, with compute between; a
    // Scan and collectives on sub-communicators, which both traces replay.
    let (_, trace) = round_trip(
        "otf2_round_trip_collectives",
        "openmpi",
        Src::TestApp("colls.c"),
        &[],
    );
    assert!(trace.contains("alltoall 256B"), "{trace}");
}

#[test]
#[cfg_attr(
    not(all(commperf_has_mpich, commperf_has_otf2)),
    ignore = "needs MPICH and libotf2 with otf2-tools (apt-get install libmpich-dev mpich libotf2-trace-dev otf2-tools)"
)]
fn otf2_round_trip_missing_partners_mpich() {
    // colls.c asym: rank 0 stops monitoring while rank 1 sends to it and the others enter a
    // barrier; what the own trace leaves out, the archive carries no communication for.
    let (_, trace) = round_trip(
        "otf2_round_trip_missing_partners_mpich",
        "mpich",
        Src::TestApp("colls.c"),
        &["asym"],
    );
    assert!(
        trace.contains("3 point-to-point records without their partner"),
        "{trace}"
    );
}

#[test]
#[cfg_attr(
    not(all(commperf_has_openmpi, commperf_has_otf2)),
    ignore = "needs Open MPI and libotf2 with otf2-tools (apt-get install libopenmpi-dev openmpi-bin libotf2-trace-dev otf2-tools)"
)]
fn otf2_round_trip_nas_cg() {
    // The NAS CG skeleton: Isend/Irecv halos and 8-byte Allreduces, with compute between.
    let (own, trace) = round_trip(
        "otf2_round_trip_nas_cg",
        "openmpi",
        Src::Nas("cg"),
        &["m=2048", "iters=50"],
    );
    assert!(trace.contains("allreduce 8B"), "{trace}");
    assert!(own["messages"].as_u64().unwrap_or(0) >= 4 * 2 * 50, "{own}");
}

/// families.c on 4 ranks: nonblocking collectives (and, under MPI-4, persistent ones),
/// collectives on a split and on a duplicated communicator, neighbourhood collectives (as
/// their messages in both), synchronous sends (MpiSend/MpiIsend in MPI_Ssend/MPI_Issend
/// regions, and a persistent MPI_Ssend_init's starts in MPI_Start(MPI_Ssend_init) regions,
/// read back as such: the predictions of both are equal), one-sided transfers with their epochs (in both), matched probes:
/// the archive defines the communicators, and reads back to the own trace's prediction.
fn families_round_trip(mpi: &str) {
    let test = format!("otf2_round_trip_families_{mpi}");
    let (own, trace) = round_trip(&test, mpi, Src::TestApp("families.c"), &[]);
    // The split halves and the duplicate of the world, each defined and used.
    let comms: Vec<&str> = trace.lines().filter(|l| l.starts_with("comm ")).collect();
    assert_eq!(comms.len(), 3, "{trace}");
    assert!(trace.contains("ialltoall 16B as "), "{trace}");
    assert!(trace.contains("allreduce 8B on c"), "{trace}");
    assert!(trace.contains("\n  ssend "), "{trace}");
    // Per rank the MPI_Issend and the 3 starts of the MPI_Ssend_init.
    assert_eq!(trace.matches("\n  issend ").count(), 4 * 4, "{trace}");
    assert!(own["messages"].as_u64().unwrap_or(0) > 0, "{own}");
    // The one-sided transfers are in both (4 puts and a get per rank).
    let lines = |w: &str| trace.lines().filter(|l| l.trim().starts_with(w)).count();
    assert_eq!((lines("put "), lines("get ")), (16, 4), "{trace}");
}

#[test]
#[cfg_attr(
    not(all(commperf_has_openmpi, commperf_has_otf2)),
    ignore = "needs Open MPI and libotf2 with otf2-tools (apt-get install libopenmpi-dev openmpi-bin libotf2-trace-dev otf2-tools)"
)]
fn otf2_round_trip_families_openmpi() {
    families_round_trip("openmpi");
}

#[test]
#[cfg_attr(
    not(all(commperf_has_mpich, commperf_has_otf2)),
    ignore = "needs MPICH and libotf2 with otf2-tools (apt-get install libmpich-dev mpich libotf2-trace-dev otf2-tools)"
)]
fn otf2_round_trip_families_mpich() {
    families_round_trip("mpich");
}

#[test]
#[cfg_attr(
    not(commperf_has_otf2),
    ignore = "needs libotf2 with otf2-tools (apt-get install libotf2-trace-dev otf2-tools)"
)]
fn predict_names_an_otf2_file_that_is_not_an_archive() {
    let s = Scratch::new("otf2", "not_an_archive");
    let f = s.0.join("traces.otf2");
    std::fs::write(&f, "ranks 2\n").expect("write");
    let o = Command::new(exe())
        .args(["predict", "--trace"])
        .arg(&f)
        .output()
        .expect("run predict");
    assert!(!o.status.success());
    let err = text(&o.stderr);
    assert!(
        err.contains(&f.display().to_string()) && err.contains("OTF2"),
        "{err}"
    );
}
