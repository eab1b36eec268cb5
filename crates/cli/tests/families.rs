//! Every call family beyond plain point to point, monitored in real programs: the family
//! program (crates/pmpi/tests/apps/families.c: matched probes, nonblocking and persistent
//! collectives, collectives on split and duplicated communicators, neighbourhood collectives,
//! one-sided with each synchronisation, MPI-4's Isendrecv and partitioned communication) under
//! Open MPI and MPICH with every count and byte exact, and the same families from Fortran; and
//! Debian's NWChem (one-sided MPI
//! through its ARMCI, a program nobody here wrote) with every function's count equal, call by
//! call, to what ltrace counted in the same run.

mod mpi_apps;
use mpi_apps::{calls, compile, exe, need, ok, predict, text, Scratch};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

fn monitor(cwd: &Path, dir: &Path, mpi: &str, np: u32, prog: &[&str]) -> Output {
    let mut c = Command::new("timeout");
    // A hang guard, not a timing claim: the family program takes about a second.
    c.args(["-k", "10", "600", exe(), "monitor", "--trace", "-o"])
        .arg(dir)
        .arg("--")
        .arg(format!("mpirun.{mpi}"))
        .args(["-np", &np.to_string()]);
    if mpi == "openmpi" {
        c.arg("--oversubscribe");
    }
    c.args(prog)
        .current_dir(cwd)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    c.output().expect("run commperf monitor")
}

fn summary(dir: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).expect("summary.json"))
        .expect("JSON")
}

/// (count, sent bytes, received bytes) of MPI function `call` on `rank` (0s when not called).
fn function(j: &Value, rank: u64, call: &str) -> (u64, u64, u64) {
    j["functions"]
        .as_array()
        .expect("functions")
        .iter()
        .find(|f| f["rank"].as_u64() == Some(rank) && f["call"] == call)
        .map_or((0, 0, 0), |f| {
            (
                f["count"].as_u64().unwrap(),
                f["sent_bytes"].as_u64().unwrap(),
                f["received_bytes"].as_u64().unwrap(),
            )
        })
}

fn families(mpi: &str) {
    let test = format!("families_{mpi}");
    need(&test, &[&format!("mpicc.{mpi}"), &format!("mpirun.{mpi}")]);
    let s = Scratch::new("families", &test);
    let prog = s.0.join("families");
    compile(&format!("mpicc.{mpi}"), "families.c", &prog);
    let dir = s.0.join("mon");
    let o = monitor(&s.0, &dir, mpi, 4, &[prog.to_str().unwrap()]);
    ok(&o);
    let j = summary(&dir);
    // MPICH 4.0 implements MPI 4.0: the program's MPI-4 part runs there only.
    let mpi4 = mpi == "mpich";
    assert_eq!(j["cut_short"], false, "{j}");
    assert_eq!(j["drops"], 0);
    assert_eq!(j["unmatched_sends"], 0, "{}", text(&o.stdout));
    assert_eq!(j["unmatched_recvs"], 0, "{}", text(&o.stdout));
    // Per rank: 5 Mrecv + 3 Imrecv, 2 Ssend + 1 Issend, 3 starts of a persistent Ssend_init,
    // and under MPI-4 2 Isendrecv and 2 partitioned messages.
    let per_rank = 8 + 3 + 3 + if mpi4 { 4 } else { 0 };
    assert_eq!(j["matched_messages"], 4 * per_rank, "{}", text(&o.stdout));
    for r in 0..4u64 {
        let c = |call: &str| calls(&j, r, call);
        assert_eq!(c("MPI_Mprobe"), (5, 1000), "rank {r}");
        assert_eq!(c("MPI_Mrecv"), (5, 1000), "rank {r}");
        assert_eq!(
            c("MPI_Improbe"),
            (3, 900),
            "rank {r}: only the probes that found one"
        );
        assert_eq!(c("MPI_Imrecv"), (3, 900), "rank {r}");
        assert_eq!(c("MPI_Ssend"), (2, 128), "rank {r}");
        assert_eq!(c("MPI_Issend"), (1, 32), "rank {r}");
        assert_eq!(c("MPI_Recv"), (3, 160), "rank {r}");
        // Collectives: the event's bytes are the rank's send buffer (Ialltoall: 2 doubles to
        // each of 4 ranks).
        assert_eq!(c("MPI_Ialltoall"), (4, 4 * 64), "rank {r}");
        assert_eq!(c("MPI_Iallreduce"), (2, 16), "rank {r}");
        assert_eq!(c("MPI_Ibarrier"), (1, 0), "rank {r}");
        assert_eq!(c("MPI_Ibcast"), (2, 200), "rank {r}");
        assert_eq!(
            c("MPI_Allreduce"),
            (3, 24),
            "rank {r}: on the split communicator"
        );
        assert_eq!(
            c("MPI_Alltoall"),
            (2, 2 * 16),
            "rank {r}: on the duplicate of world"
        );
        // A periodic ring: 2 neighbours, one int to each; the v-forms 2 and 3 ints, the
        // w-forms 5 ints and 3 doubles.
        assert_eq!(c("MPI_Neighbor_alltoall"), (2, 16), "rank {r}");
        assert_eq!(c("MPI_Ineighbor_allgather"), (1, 8), "rank {r}");
        assert_eq!(c("MPI_Neighbor_alltoallv"), (1, 20), "rank {r}");
        assert_eq!(c("MPI_Ineighbor_alltoallv"), (1, 20), "rank {r}");
        assert_eq!(c("MPI_Neighbor_alltoallw"), (1, 44), "rank {r}");
        assert_eq!(c("MPI_Ineighbor_alltoallw"), (1, 44), "rank {r}");
        assert_eq!(c("MPI_Put"), (2, 72), "rank {r}");
        assert_eq!(c("MPI_Get"), (1, 32), "rank {r}");
        assert_eq!(c("MPI_Accumulate"), (1, 16), "rank {r}");
        assert_eq!(c("MPI_Rput"), (1, 16), "rank {r}");
        for (sync, n) in [
            ("MPI_Win_fence", 3),
            ("MPI_Win_lock", 1),
            ("MPI_Win_unlock", 1),
            ("MPI_Win_lock_all", 1),
            ("MPI_Win_unlock_all", 1),
            ("MPI_Win_flush_all", 1),
            ("MPI_Win_post", 1),
            ("MPI_Win_start", 1),
            ("MPI_Win_complete", 1),
            ("MPI_Win_wait", 1),
        ] {
            assert_eq!(c(sync).0, n, "rank {r} {sync}");
        }
        // The persistent Ssend_init's 3 starts of 24 B (+ MPI-4: 2 partitioned starts of 4
        // partitions x 10 ints).
        let starts = if mpi4 { (5, 72 + 320) } else { (3, 72) };
        assert_eq!(c("MPI_Start(send)"), starts, "rank {r}");
        assert_eq!(c("MPI_Start(recv)"), starts, "rank {r}");
        if mpi4 {
            assert_eq!(c("MPI_Isendrecv(send)"), (2, 80), "rank {r}");
            assert_eq!(c("MPI_Isendrecv(recv)"), (2, 80), "rank {r}");
            assert_eq!(c("MPI_Start(MPI_Allreduce_init)"), (3, 24), "rank {r}");
        }
        // Every function, counted and timed, bytes by the buffer arguments.
        let f = |call: &str| function(&j, r, call);
        assert_eq!(f("MPI_Comm_rank").0, 8, "rank {r}");
        assert_eq!(f("MPI_Wtime").0, 5, "rank {r}");
        assert_eq!(f("MPI_Init").0, 1, "rank {r}");
        assert_eq!(f("MPI_Finalize").0, 1, "rank {r}");
        assert_eq!(f("MPI_Comm_split").0, 1, "rank {r}");
        assert_eq!(f("MPI_Comm_dup").0, 1, "rank {r}");
        assert_eq!(f("MPI_Cart_create").0, 1, "rank {r}");
        assert_eq!(f("MPI_Win_allocate").0, 1, "rank {r}");
        assert_eq!(f("MPI_Mrecv"), (5, 0, 1000), "rank {r}");
        assert_eq!(
            f("MPI_Mprobe"),
            (5, 0, 0),
            "rank {r}: a probe receives nothing"
        );
        assert_eq!(f("MPI_Ialltoall"), (4, 256, 256), "rank {r}");
        assert_eq!(f("MPI_Alltoall"), (2, 32, 32), "rank {r}");
        assert_eq!(
            f("MPI_Ibcast"),
            (
                2,
                if r == 0 { 200 } else { 0 },
                if r == 0 { 0 } else { 200 }
            ),
            "rank {r}: the root sends its buffer, the others receive it"
        );
        assert_eq!(f("MPI_Get"), (1, 0, 32), "rank {r}");
        assert_eq!(f("MPI_Put"), (2, 72, 0), "rank {r}");
        assert_eq!(f("MPI_Neighbor_alltoallv"), (1, 20, 20), "rank {r}");
        assert_eq!(f("MPI_Neighbor_alltoallw"), (1, 44, 44), "rank {r}");
        // The Waits: Mprobe's 5 Isends, 3 Imrecv, 1 Issend, 4 Ialltoall, 2 Ibcast,
        // 3 Ineighbor, 1 Rput (+ MPI-4: 2 Isendrecv, 3 persistent allreduce, 2 x 2
        // partitioned); the Imrecv (and Isendrecv, partitioned) receives counted where they
        // completed.
        let (waits, wait_recv) = if mpi4 {
            (19 + 9, 900 + 80 + 320)
        } else {
            (19, 900)
        };
        assert_eq!(f("MPI_Wait"), (waits, 0, wait_recv), "rank {r}");
        // The Iallreduce pair and the 3 rounds of persistent starts (their receives, 3 x 24 B).
        assert_eq!(f("MPI_Waitall"), (4, 0, 72), "rank {r}");
        // Time in the call: the mean lies between the shortest and the longest.
        for fs in j["functions"].as_array().unwrap() {
            let (min, mean, max) = (
                fs["min_ns"].as_u64().unwrap() as f64,
                fs["mean_ns"].as_f64().unwrap(),
                fs["max_ns"].as_u64().unwrap() as f64,
            );
            assert!(min <= mean + 1e-9 && mean <= max + 1e-9, "{fs}");
        }
    }
    // Each communicator's members are known: split by parity, and the duplicate of world.
    let t = text(&o.stdout);
    assert!(t.contains("MPI functions"), "{t}");
    families_trace(&dir, mpi4);
}

/// The trace of the family program (DIR/trace.txt): the synchronous sends as `ssend`/`issend`
/// (a persistent MPI_Ssend_init's starts too), the neighbourhood collectives as the messages
/// to and from each ring neighbour (the v/w forms' each with its own size), and
/// `commperf predict` replays it.
fn families_trace(dir: &Path, mpi4: bool) {
    let trace = std::fs::read_to_string(dir.join("trace.txt")).expect("trace.txt");
    let stats: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("trace-stats.json")).expect("trace-stats.json"),
    )
    .expect("JSON");
    // The neighbourhood messages' tag: one above the program's highest, the partitioned
    // messages' 21 under MPI-4, else the persistent Ssend_init's 14.
    let nbr_tag = if mpi4 { 22 } else { 15 };
    for r in 0..4u32 {
        let (left, right) = ((r + 3) % 4, (r + 1) % 4);
        let block: Vec<&str> = trace
            .lines()
            .skip_while(|l| l.trim() != format!("rank {r}"))
            .skip(1)
            .take_while(|l| !l.starts_with("rank "))
            .map(str::trim)
            .collect();
        let count = |want: &str| block.iter().filter(|l| l.starts_with(want)).count();
        assert_eq!(
            count(&format!("ssend {right} 64B tag 12")),
            2,
            "rank {r}: {trace}"
        );
        assert_eq!(
            count(&format!("issend {right} 32B tag 13 as q")),
            1,
            "rank {r}"
        );
        assert_eq!(count(&format!("recv {left} 64B tag 12")), 2, "rank {r}");
        // Each start of the persistent Ssend_init: an issend, whatever its size.
        assert_eq!(
            count(&format!("issend {right} 24B tag 14 as q")),
            3,
            "rank {r}: {trace}"
        );
        assert_eq!(
            count(&format!("irecv {left} 24B tag 14 as q")),
            3,
            "rank {r}"
        );
        assert_eq!(count("issend "), 4, "rank {r}");
        // 2 MPI_Neighbor_alltoall and 1 MPI_Ineighbor_allgather of one int per neighbour:
        // per call an irecv from and an isend to each of the two.
        for p in [left, right] {
            let tag = format!(" {p} 4B tag {nbr_tag} as q");
            assert_eq!(count(&format!("isend{tag}")), 3, "rank {r} to {p}: {trace}");
            assert_eq!(count(&format!("irecv{tag}")), 3, "rank {r} from {p}");
        }
        // The v/w forms, blocking and nonblocking, each neighbour its own size: rank r sends
        // 2 ints (v) and 5 ints (w) left, 3 ints and 3 doubles right, and receives what its
        // neighbours send it (the left one's right slots, the right one's left slots).
        for (p, v_out, w_out, v_in, w_in) in [(left, 8, 20, 12, 24), (right, 12, 24, 8, 20)] {
            let msg = |verb: &str, b: u32| format!("{verb} {p} {b}B tag {nbr_tag} as q");
            assert_eq!(count(&msg("isend", v_out)), 2, "rank {r} to {p}: {trace}");
            assert_eq!(count(&msg("isend", w_out)), 2, "rank {r} to {p}");
            assert_eq!(count(&msg("irecv", v_in)), 2, "rank {r} from {p}");
            assert_eq!(count(&msg("irecv", w_in)), 2, "rank {r} from {p}");
        }
        // And Mprobe's 5 Isends (+ MPI-4: 2 Isendrecv halves, 2 partitioned starts).
        let isends = 3 * 2 + 4 * 2 + 5 + if mpi4 { 4 } else { 0 };
        assert_eq!(count("isend "), isends, "rank {r}");
    }
    // 3 + 4 neighbourhood calls per rank, 2 messages each; none left out.
    assert_eq!(stats["neighbor_collectives"], 4 * 7, "{stats}");
    assert_eq!(stats["neighbor_messages"], 4 * 7 * 2, "{stats}");
    assert_eq!(stats["neighbor_lists_left_out"], 0, "{stats}");
    assert_eq!(stats["unsupported_left_out"], 0, "{stats}");
    let p = predict(&dir.join("trace.txt"), &[]);
    // Every message the trace writes is among the predicted ones: the matched ones, the
    // neighbourhood collectives' and the one-sided epochs' empty ones (the collectives, and
    // the fences' barriers, add theirs).
    let epoch = stats["epoch_messages"].as_u64().unwrap();
    assert_eq!(epoch, 4 * 2, "{stats}");
    let written = stats["messages"].as_u64().unwrap() + 4 * 7 * 2 + epoch;
    assert!(p["messages"].as_u64().unwrap() >= written, "{p}");
}

#[test]
#[cfg_attr(
    not(commperf_has_openmpi),
    ignore = "needs Open MPI (mpicc.openmpi, mpirun.openmpi: apt-get install libopenmpi-dev openmpi-bin)"
)]
fn families_openmpi() {
    families("openmpi");
}

#[test]
#[cfg_attr(
    not(commperf_has_mpich),
    ignore = "needs MPICH (mpicc.mpich, mpirun.mpich: apt-get install libmpich-dev mpich)"
)]
fn families_mpich() {
    families("mpich");
}

/// Call sites: built with debug information, the program's calls are named by source line
/// (addr2line), each site's count exact: the 5 MPI_Mprobe of families.c come from one line,
/// on every rank.
#[test]
#[cfg_attr(
    not(commperf_has_openmpi),
    ignore = "needs Open MPI (mpicc.openmpi, mpirun.openmpi: apt-get install libopenmpi-dev openmpi-bin)"
)]
fn call_sites_name_the_source_line() {
    need(
        "call_sites",
        &["mpicc.openmpi", "mpirun.openmpi", "addr2line"],
    );
    let s = Scratch::new("families", "sites");
    let src = mpi_apps::apps().join("families.c");
    let prog = s.0.join("families-g");
    let o = Command::new("mpicc.openmpi")
        .args(["-g", "-O0", "-w", "-o"])
        .arg(&prog)
        .arg(&src)
        .output()
        .unwrap();
    ok(&o);
    let dir = s.0.join("mon");
    let o = monitor(&s.0, &dir, "openmpi", 4, &[prog.to_str().unwrap()]);
    ok(&o);
    let j = summary(&dir);
    // The line of the program that calls MPI_Mprobe, and of MPI_Cart_create.
    let text_src = std::fs::read_to_string(&src).unwrap();
    let line_of = |needle: &str| {
        1 + text_src
            .lines()
            .position(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("{needle} in families.c"))
    };
    let sites = j["sites"].as_array().expect("sites");
    let site = |call: &str| {
        sites
            .iter()
            .find(|x| x["call"] == call)
            .unwrap_or_else(|| panic!("no site of {call}: {sites:?}"))
    };
    let mprobe = site("MPI_Mprobe");
    assert_eq!(
        mprobe["location"],
        format!("main at {}:{}", src.display(), line_of("MPI_Mprobe(left")),
        "{mprobe}"
    );
    assert_eq!(
        (mprobe["ranks"].as_u64(), mprobe["count"].as_u64()),
        (Some(4), Some(20))
    );
    let cart = site("MPI_Cart_create");
    assert_eq!(
        cart["location"],
        format!("main at {}:{}", src.display(), line_of("MPI_Cart_create("))
    );
    assert_eq!(cart["count"], 4);
    assert!(text(&o.stdout).contains("call sites with the most time in MPI"));
}

/// The families under the LogGP knobs (`commperf emulate --L 50us`): the matched receives
/// (Mrecv, and Imrecv at its Wait), MPI-4's partitioned messages and Isendrecv's receive halves
/// are held like any receive, each finding its sender's stamp; the nonblocking and persistent
/// collectives and the one-sided transfers are charged (emulate.md), each family's charges
/// counted exactly from the rank's part of coll.c's algorithm (the nonblocking neighbourhood
/// collectives one message to and from each neighbour); the blocking neighbourhood collectives
/// run as messages (none left native, none left uncharged).
/// `commperf emulate --L 50us --json -- mpirun.<mpi> -np 4 PROG`, time-limited, succeeded.
fn emulate_l50(cwd: &Path, mpi: &str, prog: &Path) -> Output {
    let mut c = Command::new("timeout");
    c.args([
        "-k",
        "10",
        "600",
        exe(),
        "emulate",
        "--L",
        "50us",
        "--json",
        "--",
    ])
    .arg(format!("mpirun.{mpi}"))
    .args(["-np", "4"]);
    if mpi == "openmpi" {
        c.arg("--oversubscribe");
    }
    let o = c
        .arg(prog)
        .current_dir(cwd)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .output()
        .expect("run commperf emulate");
    ok(&o);
    o
}

fn families_under_knobs(mpi: &str) {
    let test = format!("families_knobs_{mpi}");
    need(&test, &[&format!("mpicc.{mpi}"), &format!("mpirun.{mpi}")]);
    let s = Scratch::new("families", &test);
    let prog = s.0.join("families");
    compile(&format!("mpicc.{mpi}"), "families.c", &prog);
    let o = emulate_l50(&s.0, mpi, &prog);
    let j: Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let u = &j["untouched"];
    let mpi4 = mpi == "mpich";
    // Per rank: 5 Mrecv + 3 Imrecv + 3 Recv (of 2 Ssend and 1 Issend) + 3 persistent
    // receives (of the Ssend_init's starts) (+ 2 partitioned receives and 2 Isendrecv under
    // MPI 4.0), and as many sends: 5 Isend + 3 Send + 2 Ssend + 1 Issend + 3 starts (+ 2
    // partitioned, 2 Isendrecv).
    let recvs = 4 * (14 + if mpi4 { 4 } else { 0 });
    assert_eq!(u["p2p_receives"], recvs, "{j}");
    assert_eq!(u["p2p_messages"], recvs, "{j}");
    assert_eq!(u["unstamped_receives"], 0, "{j}");
    assert_eq!(u["isendrecv_calls"], if mpi4 { 8 } else { 0 }, "{j}");
    // The collectives the library runs, each rank's part of coll.c's algorithm on 4 ranks
    // (sends, receives, rounds in which it receives, wire bytes, gaps between its sends):
    // - 4 Ialltoall of 16 B blocks, pairwise: every rank 3, 3, 3, 48 B, 2;
    // - 2 Iallreduce of 8 B, recursive doubling: every rank 2, 2, 2, 16 B, 1;
    // - 1 Ibarrier, dissemination: every rank 2, 2, 2, 0, 1;
    // - 2 Ibcast of 100 B from 0, binomial: rank 0 sends to 2 and 1 (2, 0, 0, 200 B, 1), rank 2
    //   receives and sends to 3 (1, 1, 1, 100 B, 0), ranks 1 and 3 receive (0, 1, 1, 100 B, 0);
    // - under MPI 4.0, 3 starts of a persistent Allreduce of 8 B: as the Iallreduce;
    // - 3 nonblocking neighbourhood collectives on the ring (Ineighbor_allgather of an int,
    //   Ineighbor_alltoallv of 2 + 3 ints, Ineighbor_alltoallw of 5 ints + 3 doubles): every
    //   rank sends to and receives from its 2 neighbours, in 1 round, wire bytes the larger of
    //   what it sends and receives (8, 20, 44 B: both alike on the ring), 1 gap.
    let per = |a2a: u64, ared: u64, bar: u64, bcast: u64, pall: u64, nbr: u64| {
        4 * 4 * a2a
            + 2 * 4 * ared
            + 4 * bar
            + 2 * bcast
            + if mpi4 { 3 * 4 * pall } else { 0 }
            + 4 * nbr
    };
    assert_eq!(u["charged_nonblocking_collectives"], 4 * 12, "{j}");
    assert_eq!(
        u["charged_persistent_collectives"],
        if mpi4 { 12 } else { 0 },
        "{j}"
    );
    assert_eq!(
        u["charged_collective_sends"],
        per(3, 2, 2, 3, 2, 3 * 2),
        "{j}"
    );
    assert_eq!(
        u["charged_collective_receives"],
        per(3, 2, 2, 3, 2, 3 * 2),
        "{j}"
    );
    assert_eq!(u["charged_collective_rounds"], per(3, 2, 2, 3, 2, 3), "{j}");
    assert_eq!(
        u["charged_collective_wire_bytes"],
        per(48, 16, 0, 500, 16, 8 + 20 + 44),
        "{j}"
    );
    assert_eq!(u["charged_collective_gaps"], per(2, 1, 1, 1, 1, 3), "{j}");
    assert_eq!(
        u["charged_collective_completions"],
        4 * 12 + if mpi4 { 12 } else { 0 },
        "{j}"
    );
    // One-sided, per rank: Put 64 B, Get 32 B (a round trip), Accumulate 16 B, Rput 16 B, Put
    // 8 B; completed by the second and third fence, the unlock, the flush_all (the Rput, whose
    // request completed at its Wait) and the Win_complete.
    assert_eq!(u["one_sided_transfers"], 4 * 5, "{j}");
    assert_eq!(u["one_sided_bytes"], 4 * 136, "{j}");
    assert_eq!(u["one_sided_round_trips"], 4, "{j}");
    assert_eq!(u["one_sided_synchronisations"], 4 * 5, "{j}");
    assert_eq!(u["one_sided_request_completions"], 4, "{j}");
    assert_eq!(u["untracked_requests"], 0, "{j}");
    // Nothing left: the nonblocking neighbourhood collectives are charged (above).
    assert_eq!(u["other_calls"], 0, "{j}");
    assert_eq!(u["other_bytes"], 0, "{j}");
    // The blocking neighbourhood collectives run as messages like every other blocking
    // collective: per rank 2 Neighbor_alltoall, 1 Neighbor_alltoallv and 1 Neighbor_alltoallw,
    // each one message to and from each of the 2 neighbours (the program checks the data).
    assert_eq!(u["collectives_native"], 0, "{j}");
    // Every blocking collective run as messages, per rank: 2 Barrier (dissemination, 2 sends
    // of 0 B each), 3 Allreduce of 8 B on the split's pairs (1 send each), 2 Alltoall of an int
    // per pair on the duplicate (3 sends each), and the 4 neighbourhood ones (2 sends each:
    // Neighbor_alltoall 4 + 4 B twice, Neighbor_alltoallv 8 + 12 B, Neighbor_alltoallw
    // 20 + 24 B).
    assert_eq!(u["collectives_emulated"], 4 * (2 + 3 + 2 + 4), "{j}");
    assert_eq!(
        u["collective_p2p_messages"],
        4 * (2 * 2 + 3 + 2 * 3 + 4 * 2),
        "{j}"
    );
    assert_eq!(
        u["collective_p2p_bytes"],
        4 * (3 * 8 + 2 * 3 * 4 + 2 * 8 + 20 + 44),
        "{j}"
    );
    let err = text(&o.stderr);
    assert!(err.contains("and 0 other communication calls"), "{err}");
}

#[test]
#[cfg_attr(
    not(commperf_has_openmpi),
    ignore = "needs Open MPI (mpicc.openmpi, mpirun.openmpi: apt-get install libopenmpi-dev openmpi-bin)"
)]
fn families_under_knobs_openmpi() {
    families_under_knobs("openmpi");
}

#[test]
#[cfg_attr(
    not(commperf_has_mpich),
    ignore = "needs MPICH (mpicc.mpich, mpirun.mpich: apt-get install libmpich-dev mpich)"
)]
fn families_under_knobs_mpich() {
    families_under_knobs("mpich");
}

/// The families from Fortran (families.f90): under MPICH the Fortran binding calls the C
/// wrappers; under Open MPI the interposer's Fortran wrappers forward these families to them.
/// Either way every call is recorded, every message matched, and the calls the interposer only
/// counts (one with a CHARACTER argument among them) are counted exactly.
fn fortran_families(mpi: &str) {
    let test = format!("fortran_families_{mpi}");
    need(&test, &[&format!("mpif90.{mpi}"), &format!("mpirun.{mpi}")]);
    let s = Scratch::new("families", &test);
    let prog = s.0.join("ffamilies");
    compile(&format!("mpif90.{mpi}"), "families.f90", &prog);
    let dir = s.0.join("mon");
    let o = monitor(&s.0, &dir, mpi, 4, &[prog.to_str().unwrap()]);
    ok(&o);
    let j = summary(&dir);
    assert_eq!(j["cut_short"], false, "{j}");
    assert_eq!(j["matched_messages"], 16, "{}", text(&o.stdout));
    assert_eq!(j["unmatched_sends"], 0, "{}", text(&o.stdout));
    assert_eq!(j["unmatched_recvs"], 0);
    for r in 0..4u64 {
        let c = |call: &str| calls(&j, r, call);
        assert_eq!(c("MPI_Isend"), (4, 320), "rank {r}");
        assert_eq!(c("MPI_Mprobe"), (4, 320), "rank {r}");
        assert_eq!(c("MPI_Mrecv"), (4, 320), "rank {r}");
        assert_eq!(c("MPI_Ialltoall"), (3, 3 * 32), "rank {r}");
        assert_eq!(
            c("MPI_Allreduce"),
            (2, 16),
            "rank {r}: on the split communicator"
        );
        assert_eq!(c("MPI_Put"), (1, 40), "rank {r}");
        assert_eq!(c("MPI_Win_fence").0, 2, "rank {r}");
        let f = |call: &str| function(&j, r, call);
        assert_eq!(f("MPI_Comm_rank").0, 7, "rank {r}");
        assert_eq!(f("MPI_Comm_set_name").0, 2, "rank {r}");
        assert_eq!(f("MPI_Mrecv"), (4, 0, 320), "rank {r}");
        assert_eq!(f("MPI_Wait").0, 7, "rank {r}");
        assert_eq!(f("MPI_Win_create").0, 1, "rank {r}");
    }
}

#[test]
#[cfg_attr(
    not(commperf_has_openmpi_fortran),
    ignore = "needs Open MPI's Fortran (mpif90.openmpi: apt-get install libopenmpi-dev gfortran)"
)]
fn fortran_families_openmpi() {
    fortran_families("openmpi");
}

#[test]
#[cfg_attr(
    not(commperf_has_mpich_fortran),
    ignore = "needs MPICH's Fortran (mpif90.mpich: apt-get install libmpich-dev gfortran)"
)]
fn fortran_families_mpich() {
    fortran_families("mpich");
}

/// The Fortran families (families.f90) under the knobs: the interposer's Fortran entry points
/// reach the same charges as C. Per rank of 4: 3 MPI_Ialltoall (pairwise: 3 sends, 3 receives,
/// 3 rounds, 3 blocks of 8 B each), 1 MPI_Put of 40 B completed by the closing fence; the 4
/// Mrecv each held and stamped.
fn fortran_families_under_knobs(mpi: &str) {
    let test = format!("fortran_families_knobs_{mpi}");
    need(&test, &[&format!("mpif90.{mpi}"), &format!("mpirun.{mpi}")]);
    let s = Scratch::new("families", &test);
    let prog = s.0.join("ffamilies");
    compile(&format!("mpif90.{mpi}"), "families.f90", &prog);
    let o = emulate_l50(&s.0, mpi, &prog);
    let j: Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let u = &j["untouched"];
    assert_eq!(u["p2p_receives"], 16, "{j}");
    assert_eq!(u["unstamped_receives"], 0, "{j}");
    assert_eq!(u["charged_nonblocking_collectives"], 12, "{j}");
    assert_eq!(u["charged_collective_sends"], 36, "{j}");
    assert_eq!(u["charged_collective_receives"], 36, "{j}");
    assert_eq!(u["charged_collective_rounds"], 36, "{j}");
    assert_eq!(u["charged_collective_wire_bytes"], 12 * 24, "{j}");
    assert_eq!(u["charged_collective_completions"], 12, "{j}");
    assert_eq!(u["one_sided_transfers"], 4, "{j}");
    assert_eq!(u["one_sided_bytes"], 4 * 40, "{j}");
    assert_eq!(u["one_sided_synchronisations"], 4, "{j}");
    assert_eq!(u["other_calls"], 0, "{j}");
    assert_eq!(u["untracked_requests"], 0, "{j}");
}

#[test]
#[cfg_attr(
    not(commperf_has_openmpi_fortran),
    ignore = "needs Open MPI's Fortran (mpif90.openmpi: apt-get install libopenmpi-dev gfortran)"
)]
fn fortran_families_under_knobs_openmpi() {
    fortran_families_under_knobs("openmpi");
}

#[test]
#[cfg_attr(
    not(commperf_has_mpich_fortran),
    ignore = "needs MPICH's Fortran (mpif90.mpich: apt-get install libmpich-dev gfortran)"
)]
fn fortran_families_under_knobs_mpich() {
    fortran_families_under_knobs("mpich");
}

/// `ltrace -c`'s table: function → calls.
fn ltrace_counts(path: &Path) -> BTreeMap<String, u64> {
    let t = std::fs::read_to_string(path).expect("ltrace output");
    t.lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            (w.len() == 5).then(|| Some((w[4].to_string(), w[3].parse().ok()?)))?
        })
        .collect()
}

/// NWChem's SCF on water over 2 ranks, under ltrace and the monitor at once: every MPI function
/// the monitor counted, ltrace counted as often (its calls from Fortran, `mpi_x_`, folded into
/// `MPI_X` as the monitor counts them), and the one-sided traffic is recorded.
#[test]
#[cfg_attr(
    not(commperf_has_nwchem),
    ignore = "needs Debian's NWChem and ltrace (apt-get install nwchem-openmpi ltrace)"
)]
fn nwchem_counts_equal_ltrace_call_by_call() {
    need("nwchem", &["nwchem.openmpi", "mpirun.openmpi", "ltrace"]);
    let s = Scratch::new("families", "nwchem");
    std::fs::write(
        s.0.join("h2o.nw"),
        "start h2o\ngeometry units angstrom\n  O 0.000 0.000 0.000\n  H 0.000 0.757 0.587\n  \
         H 0.000 -0.757 0.587\nend\nbasis\n  * library sto-3g\nend\ntask scf energy\n",
    )
    .unwrap();
    let dir = s.0.join("mon");
    // ltrace counts the calls the program makes through its PLT (C and Fortran symbols); the
    // monitor's wrappers are what those calls reach.
    let o = monitor(
        &s.0,
        &dir,
        "openmpi",
        2,
        &[
            "sh",
            "-c",
            "exec ltrace -c -o lt.$OMPI_COMM_WORLD_RANK.txt -e 'MPI_*+mpi_*' nwchem.openmpi h2o.nw",
        ],
    );
    ok(&o);
    assert!(
        text(&o.stdout).contains("Total SCF energy =    -74.96306"),
        "{}",
        text(&o.stdout)
    );
    let j = summary(&dir);
    assert_eq!(j["cut_short"], false);
    assert_eq!(j["unmatched_sends"], 0);
    for r in 0..2u64 {
        let mut lt: BTreeMap<String, u64> = BTreeMap::new();
        for (name, n) in ltrace_counts(&s.0.join(format!("lt.{r}.txt"))) {
            let c = match name.strip_suffix('_') {
                // Fortran's mpi_wtime_ is MPI_Wtime: the standard's C name, capitalized.
                Some(f) => {
                    let c = f.strip_prefix("mpi_").unwrap_or(f);
                    let mut ch = c.chars();
                    let first = ch.next().map(|x| x.to_ascii_uppercase()).unwrap_or('_');
                    format!("MPI_{first}{}", ch.as_str())
                }
                None => name,
            };
            *lt.entry(c).or_default() += n;
        }
        let ours: BTreeMap<String, u64> = j["functions"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["rank"].as_u64() == Some(r))
            .map(|f| {
                (
                    f["call"].as_str().unwrap().to_string(),
                    f["count"].as_u64().unwrap(),
                )
            })
            .collect();
        // Calls before MPI_Init are outside the monitored run (MPI_Initialized may be asked
        // then); everything else is equal.
        let mut differ = Vec::new();
        for k in ours.keys().chain(lt.keys()) {
            let (a, b) = (
                ours.get(k).copied().unwrap_or(0),
                lt.get(k).copied().unwrap_or(0),
            );
            let before_init = k == "MPI_Initialized" && b == a + 1;
            if a != b && !before_init && !differ.iter().any(|(x, _, _)| x == k) {
                differ.push((k.clone(), a, b));
            }
        }
        assert!(
            differ.is_empty(),
            "rank {r}: (function, monitor, ltrace): {differ:?}"
        );
        assert!(
            ours.get("MPI_Accumulate").copied().unwrap_or(0) > 100,
            "{ours:?}"
        );
        // The one-sided transfers are recorded, as many as were called.
        for call in [
            "MPI_Accumulate",
            "MPI_Get_accumulate",
            "MPI_Fetch_and_op",
            "MPI_Win_flush_all",
        ] {
            assert_eq!(calls(&j, r, call).0, ours[call], "rank {r} {call}");
        }
    }
}

/// The rest of the families from Fortran (families_more.f90): v-forms, scans, reduce-scatters,
/// nonblocking v-forms, neighbourhood collectives (with the w-forms' converted datatypes),
/// request-based one-sided, atomics and every synchronisation. Under Open MPI each would go
/// to PMPI_* unseen but for the interposer's Fortran forwarding; under MPICH the binding calls
/// the C wrappers. Every call recorded, every byte by the convention (sent = send-buffer
/// arguments, received = receive-buffer arguments).
fn fortran_families_more(mpi: &str) {
    let test = format!("fortran_families_more_{mpi}");
    need(&test, &[&format!("mpif90.{mpi}"), &format!("mpirun.{mpi}")]);
    let s = Scratch::new("families", &test);
    let prog = s.0.join("ffamilies_more");
    compile(&format!("mpif90.{mpi}"), "families_more.f90", &prog);
    let dir = s.0.join("mon");
    let o = monitor(&s.0, &dir, mpi, 4, &[prog.to_str().unwrap()]);
    ok(&o);
    let j = summary(&dir);
    assert_eq!(j["cut_short"], false, "{j}");
    assert_eq!(j["drops"], 0);
    assert_eq!(j["matched_messages"], 0, "{}", text(&o.stdout));
    let d = 8u64; // a double
                  // The v-forms' counts: rank i contributes i + 1 doubles; the root (0) takes them all.
    let all = (1..=4).sum::<u64>() * d;
    for r in 0..4u64 {
        let mine = (r + 1) * d;
        let root = |b: u64| if r == 0 { b } else { 0 };
        let f = |call: &str| function(&j, r, call);
        let c = |call: &str| calls(&j, r, call);
        // (function: count, sent, received), and the recorded call's bytes.
        for (call, stats, recorded) in [
            ("MPI_Gatherv", (1, mine, root(all)), mine),
            ("MPI_Scatterv", (1, root(all), mine), mine),
            ("MPI_Allgatherv", (1, mine, all), mine),
            ("MPI_Alltoallv", (1, 4 * d, 4 * d), 4 * d),
            ("MPI_Alltoallw", (1, 4 * d, 4 * d), 4 * d),
            ("MPI_Scan", (1, d, d), d),
            ("MPI_Exscan", (1, d, d), d),
            ("MPI_Reduce_scatter_block", (1, 4 * d, d), 4 * d),
            ("MPI_Reduce_scatter", (1, 4 * d, d), 4 * d),
            ("MPI_Iallgatherv", (1, mine, all), mine),
            ("MPI_Iscan", (1, d, d), d),
            // Open MPI's Fortran w-forms with their converted datatypes, kept until the Wait.
            ("MPI_Ialltoallw", (1, 4 * d, 4 * d), 4 * d),
            // The ring's two neighbours, a double to and from each.
            ("MPI_Neighbor_allgather", (1, 2 * d, 2 * d), 2 * d),
            ("MPI_Neighbor_alltoallv", (1, 2 * d, 2 * d), 2 * d),
            ("MPI_Neighbor_alltoallw", (1, 2 * d, 2 * d), 2 * d),
            ("MPI_Ineighbor_alltoall", (1, 2 * d, 2 * d), 2 * d),
            ("MPI_Ineighbor_alltoallw", (1, 2 * d, 2 * d), 2 * d),
            // One-sided: a transfer's record holds the bytes both ways.
            ("MPI_Rput", (1, 3 * d, 0), 3 * d),
            ("MPI_Rget", (1, 0, 2 * d), 2 * d),
            ("MPI_Fetch_and_op", (1, d, d), 2 * d),
            ("MPI_Get_accumulate", (1, d, d), 2 * d),
            ("MPI_Put", (1, 4 * d, 0), 4 * d),
        ] {
            assert_eq!(f(call), stats, "rank {r} {call}");
            assert_eq!(c(call), (1, recorded), "rank {r} {call}");
        }
        for sync in [
            "MPI_Win_lock",
            "MPI_Win_unlock",
            "MPI_Win_lock_all",
            "MPI_Win_unlock_all",
            "MPI_Win_flush_local",
            "MPI_Win_flush_local_all",
            "MPI_Win_sync",
            "MPI_Win_post",
            "MPI_Win_start",
            "MPI_Win_complete",
        ] {
            assert_eq!(c(sync), (1, 0), "rank {r} {sync}");
            assert_eq!(f(sync).0, 1, "rank {r} {sync}");
        }
        // MPI_Win_test polls until the epoch is done: every poll counted, the one that
        // completed it recorded.
        assert!(f("MPI_Win_test").0 >= 1, "rank {r}");
        assert_eq!(c("MPI_Win_test"), (1, 0), "rank {r}");
        // Iallgatherv, Iscan, Ialltoallw, Ineighbor_alltoall, Ineighbor_alltoallw, Rput, Rget.
        assert_eq!(f("MPI_Wait").0, 7, "rank {r}");
        assert_eq!(f("MPI_Cart_create").0, 1, "rank {r}");
        assert_eq!(f("MPI_Group_incl").0, 2, "rank {r}");
    }
    // Traced like C's: the Ialltoallw as the format's ialltoall (a double per pair), and the
    // 5 neighbourhood calls each as a message of a double to and from each ring neighbour.
    let trace = std::fs::read_to_string(dir.join("trace.txt")).expect("trace.txt");
    let stats: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("trace-stats.json")).expect("trace-stats.json"),
    )
    .expect("JSON");
    assert_eq!(trace.matches("ialltoall 8B as q").count(), 4, "{trace}");
    assert_eq!(stats["neighbor_collectives"], 4 * 5, "{stats}");
    assert_eq!(stats["neighbor_messages"], 4 * 5 * 2, "{stats}");
    assert_eq!(stats["unsupported_left_out"], 0, "{stats}");
    assert_eq!(
        trace
            .lines()
            .filter(|l| l.trim().starts_with("isend "))
            .count(),
        4 * 5 * 2
    );
}

#[test]
#[cfg_attr(
    not(commperf_has_openmpi_fortran),
    ignore = "needs Open MPI's Fortran (mpif90.openmpi: apt-get install libopenmpi-dev gfortran)"
)]
fn fortran_families_more_openmpi() {
    fortran_families_more("openmpi");
}

#[test]
#[cfg_attr(
    not(commperf_has_mpich_fortran),
    ignore = "needs MPICH's Fortran (mpif90.mpich: apt-get install libmpich-dev gfortran)"
)]
fn fortran_families_more_mpich() {
    fortran_families_more("mpich");
}

/// The rest of the Fortran families (families_more.f90, which checks its collectives' results
/// and stops with status 1 on a wrong one) under the knobs: the v-forms, scans and
/// reduce-scatters reach the C collectives run as messages from Fortran too (Open MPI's Fortran
/// wrappers forward to them, MPICH's binding calls them). Per run of 4 ranks (doubles of 8 B,
/// rank i's block i + 1 of them):
/// - run as messages, 11 calls per rank (9 and 2 MPI_BARRIERs), as `commperf predict` expands
///   them: GATHERV to 0 and SCATTERV from 0, binomial, 3 messages of 16, 32 and 56 B each;
///   ALLGATHERV, recursive doubling, 4 messages (80 B) then 4 (160 B); ALLTOALLV and ALLTOALLW,
///   pairwise, 12 messages of 8 B each; SCAN and EXSCAN, a chain, 3 of 8 B each;
///   REDUCE_SCATTER(_BLOCK), a ring, 12 of 8 B each; the barriers 8 empty messages each; and
///   the three blocking neighbourhood collectives per rank (NEIGHBOR_ALLGATHER,
///   NEIGHBOR_ALLTOALLV, NEIGHBOR_ALLTOALLW), a double to each of the 2 ring neighbours: 24
///   messages of 8 B; 108 messages, 1072 B;
/// - charged: IALLGATHERV (2 sends and receives per rank, every other block on the wire: 240 B
///   over the ranks), ISCAN (a chain: 3 sends and receives, 8 B per rank), IALLTOALLW
///   (pairwise: 3 sends and receives per rank, 24 B each way), and the INEIGHBOR_ALLTOALL and
///   INEIGHBOR_ALLTOALLW (2 sends and receives per rank, 16 B each way);
/// - left: nothing.
fn fortran_families_more_under_knobs(mpi: &str) {
    let test = format!("fortran_families_more_knobs_{mpi}");
    need(&test, &[&format!("mpif90.{mpi}"), &format!("mpirun.{mpi}")]);
    let s = Scratch::new("families", &test);
    let prog = s.0.join("ffamilies_more");
    compile(&format!("mpif90.{mpi}"), "families_more.f90", &prog);
    let o = emulate_l50(&s.0, mpi, &prog);
    let j: Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let u = &j["untouched"];
    assert_eq!(u["collective_calls"], 4 * 14, "{j}");
    assert_eq!(u["collectives_emulated"], 4 * 14, "{j}");
    assert_eq!(u["collectives_native"], 0, "{j}");
    assert_eq!(u["collective_p2p_messages"], 84 + 24, "{j}");
    assert_eq!(u["collective_p2p_bytes"], 880 + 24 * 8, "{j}");
    assert_eq!(u["collective_p2p_receives"], 84 + 24, "{j}");
    assert_eq!(u["unstamped_receives"], 0, "{j}");
    assert_eq!(u["charged_nonblocking_collectives"], 4 * 5, "{j}");
    assert_eq!(
        u["charged_collective_sends"],
        8 + 3 + 4 * 3 + 4 * 2 * 2,
        "{j}"
    );
    assert_eq!(
        u["charged_collective_receives"],
        8 + 3 + 4 * 3 + 4 * 2 * 2,
        "{j}"
    );
    assert_eq!(
        u["charged_collective_wire_bytes"],
        240 + 32 + 4 * 24 + 4 * 2 * 16,
        "{j}"
    );
    assert_eq!(u["other_calls"], 0, "{j}");
    assert_eq!(u["other_bytes"], 0, "{j}");
}

#[test]
#[cfg_attr(
    not(commperf_has_openmpi_fortran),
    ignore = "needs Open MPI's Fortran (mpif90.openmpi: apt-get install libopenmpi-dev gfortran)"
)]
fn fortran_families_more_under_knobs_openmpi() {
    fortran_families_more_under_knobs("openmpi");
}

#[test]
#[cfg_attr(
    not(commperf_has_mpich_fortran),
    ignore = "needs MPICH's Fortran (mpif90.mpich: apt-get install libmpich-dev gfortran)"
)]
fn fortran_families_more_under_knobs_mpich() {
    fortran_families_more_under_knobs("mpich");
}
