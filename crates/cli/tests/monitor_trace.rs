//! `commperf monitor --trace -- mpirun …`: an MPI run written as a trace `commperf predict`
//! replays and as a Chrome timeline, under Open MPI and under MPICH. The point-to-point part must
//! replay exactly the messages the monitor matched (read from summary.json, not hard-coded),
//! compute gaps must fit in each rank's run, a run with missing partners must still replay (no
//! deadlock) and say what was cut. Each test needs its MPI installed; without it, it skips with
//! a message, unless `COMMPERF_REQUIRE_MPI=1` (set by CI) makes that a failure.

mod mpi_apps;
use mpi_apps::{compile, exe, need, ok, predict, text, Scratch};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::process::{Command, Output};
use std::time::Instant;

/// `commperf monitor -o DIR --trace -- mpirun.<mpi> -np 4 PROG ARGS…`, time-limited; also
/// returns the wall time of the whole command (an upper bound on every rank's run).
fn monitor(cwd: &Path, dir: &Path, mpi: &str, prog: &[&str]) -> (Output, f64) {
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
    let t = Instant::now();
    let o = c.output().expect("run commperf monitor");
    (o, t.elapsed().as_secs_f64() * 1e9)
}

fn json(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{p:?}: {e}")))
        .unwrap_or_else(|e| panic!("{p:?}: {e}"))
}

/// The own format's collective operations.
const COLLECTIVES: &[&str] = &[
    "barrier",
    "bcast",
    "reduce",
    "gather",
    "scatter",
    "allreduce",
    "allgather",
    "alltoall",
    "reducescatter",
    "scan",
    "exscan",
];

/// A collective operation, blocking or nonblocking (`iallreduce`).
fn is_collective(word: &str) -> bool {
    COLLECTIVES.contains(&word)
        || word
            .strip_prefix('i')
            .is_some_and(|w| COLLECTIVES.contains(&w))
}

fn first_word(l: &str) -> &str {
    l.split_whitespace().next().unwrap_or("")
}

/// Per rank: compute written (ns), and the trace's lines of each operation.
fn per_rank(trace: &str) -> BTreeMap<u32, (u64, HashMap<String, u64>)> {
    let mut m: BTreeMap<u32, (u64, HashMap<String, u64>)> = BTreeMap::new();
    let mut rank = None;
    for l in trace.lines() {
        let l = l.trim();
        if l.starts_with('#') || l.is_empty() || l.starts_with("ranks ") || l.starts_with("comm ") {
            continue;
        }
        if let Some(r) = l.strip_prefix("rank ") {
            rank = Some(r.trim().parse::<u32>().expect("rank number"));
            continue;
        }
        let e = m
            .entry(rank.expect("an operation before any rank line"))
            .or_default();
        *e.1.entry(first_word(l).to_string()).or_default() += 1;
        if let Some(d) = l.strip_prefix("compute ") {
            // Written in whole ns: a negative or fractional gap would not parse as u64.
            let ns: u64 = d
                .strip_suffix("ns")
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("compute gap {d:?} is not whole non-negative ns"));
            e.0 += ns;
        }
    }
    m
}

/// The trace without its collectives (whole calls on every rank, so it stays consistent).
fn point_to_point_only(trace: &str) -> String {
    // Request names of nonblocking collectives (`… as q12`): their waits go with them.
    let dropped: std::collections::HashSet<&str> = trace
        .lines()
        .filter(|l| is_collective(first_word(l)))
        .filter_map(|l| l.split_once(" as ").map(|(_, n)| n.trim()))
        .collect();
    let mut out = String::new();
    for l in trace.lines() {
        let w = first_word(l);
        if is_collective(w) || w == "comm" {
            continue;
        }
        if w == "wait" || w == "waitall" {
            let names: Vec<&str> = l
                .split_whitespace()
                .skip(1)
                .filter(|n| !dropped.contains(n))
                .collect();
            // A wait for collectives only goes; a bare `waitall` stays.
            if names.is_empty() && l.split_whitespace().count() > 1 {
                continue;
            }
            out += &format!("  {w} {}\n", names.join(" "));
            continue;
        }
        out += &format!("{l}\n");
    }
    out
}

/// A Chrome trace-event file as Perfetto loads it: an object with `traceEvents`, each event with
/// a name, a phase, pid and tid; complete events with ts and a non-negative dur; every flow
/// start with exactly one finish (same id) and vice versa; a named track per rank. Returns
/// (complete events, flows).
fn check_timeline(p: &Path, ranks: u64) -> (u64, u64) {
    let v = json(p);
    let ev = v["traceEvents"].as_array().expect("traceEvents array");
    let mut spans = 0;
    let mut flows: HashMap<u64, (u32, u32)> = HashMap::new();
    let mut named = std::collections::BTreeSet::new();
    for e in ev {
        assert!(e["name"].is_string(), "event without a name: {e}");
        assert!(e["pid"].is_u64() && e["tid"].is_u64(), "pid/tid: {e}");
        match e["ph"].as_str().expect("ph") {
            "M" => {
                if e["name"] == "thread_name" {
                    named.insert(e["tid"].as_u64().expect("tid"));
                }
            }
            "X" => {
                assert!(e["ts"].as_f64().is_some_and(|t| t >= 0.0), "ts: {e}");
                assert!(e["dur"].as_f64().is_some_and(|d| d >= 0.0), "dur: {e}");
                assert!(e["tid"].as_u64().expect("tid") < ranks, "tid: {e}");
                spans += 1;
            }
            "s" | "f" => {
                assert!(e["ts"].as_f64().is_some_and(|t| t >= 0.0), "ts: {e}");
                let id = e["id"].as_u64().expect("flow id");
                let f = flows.entry(id).or_default();
                if e["ph"] == "s" {
                    f.0 += 1;
                } else {
                    assert_eq!(e["bp"], "e", "flow finish binds to the enclosing slice");
                    f.1 += 1;
                }
            }
            ph => panic!("unexpected phase {ph}: {e}"),
        }
    }
    for (id, (s, f)) in &flows {
        assert_eq!((*s, *f), (1, 1), "flow {id}: {s} starts, {f} finishes");
    }
    assert_eq!(named.len() as u64, ranks, "a named track per rank");
    (spans, flows.len() as u64)
}

/// Common checks of a monitored run's trace; returns (trace text, stats, summary).
fn check_run(dir: &Path, wall_ns: f64) -> (String, Value, Value) {
    let summary = json(&dir.join("summary.json"));
    let stats = json(&dir.join("trace-stats.json"));
    let trace = std::fs::read_to_string(dir.join("trace.txt")).expect("trace.txt");
    let ranks = summary["ranks"].as_u64().expect("ranks");
    let matched = summary["matched_messages"].as_u64().expect("matched");
    assert_eq!(stats["messages"].as_u64(), Some(matched));

    // Compute gaps: non-negative (checked while parsing) and within each rank's run.
    let per = per_rank(&trace);
    for (r, (compute, _)) in &per {
        let run = stats["run_ns"][*r as usize].as_u64().expect("run_ns");
        assert!(
            *compute <= run,
            "rank {r}: {compute} ns of compute in a run of {run} ns"
        );
        assert!(
            (run as f64) <= wall_ns,
            "rank {r}: run {run} ns > wall {wall_ns} ns"
        );
        assert_eq!(stats["compute_ns"][*r as usize].as_u64(), Some(*compute));
    }

    // The point-to-point part replays exactly the matched messages, those the neighbourhood
    // collectives are written as, and the empty messages that synchronise one-sided
    // post/start/complete/wait epochs.
    let epoch = stats["epoch_messages"].as_u64().expect("epoch_messages");
    let p2p = dir.join("p2p.txt");
    std::fs::write(&p2p, point_to_point_only(&trace)).expect("write p2p.txt");
    let pp = predict(&p2p, &[]);
    let written = matched
        + stats["neighbor_messages"]
            .as_u64()
            .expect("neighbor_messages")
        + epoch;
    assert_eq!(pp["messages"].as_u64(), Some(written), "p2p replay");
    // Every one is a send on one rank and a receive on another.
    let sends: u64 = per
        .values()
        .map(|(_, ops)| {
            ["send", "isend", "ssend", "issend"]
                .iter()
                .map(|v| ops.get(*v).unwrap_or(&0))
                .sum::<u64>()
        })
        .sum();
    assert_eq!(sends, written);

    // The whole trace replays, collectives expanded on top.
    let full = predict(&dir.join("trace.txt"), &[]);
    assert_eq!(full["ranks_count"].as_u64(), Some(ranks));
    let expected_more = stats["collectives"].as_u64().unwrap_or(0) > 0;
    assert!(
        full["messages"].as_u64().unwrap_or(0) > matched || !expected_more,
        "collectives expand into messages"
    );

    let (spans, flows) = check_timeline(&dir.join("timeline.json"), ranks);
    assert_eq!(flows, matched, "a flow arrow per matched message");
    assert!(spans >= matched, "a span per MPI call");
    (trace, stats, summary)
}

fn counts(mpi: &str) {
    let test = format!("trace_counts_{mpi}");
    need(&test, &[&format!("mpicc.{mpi}"), &format!("mpirun.{mpi}")]);
    let s = Scratch::new("trace", &test);
    let prog = s.0.join("counts");
    compile(&format!("mpicc.{mpi}"), "counts.c", &prog);
    let dir = s.0.join("mon");
    let (o, wall) = monitor(&s.0, &dir, mpi, &[prog.to_str().expect("path")]);
    ok(&o);
    assert!(
        text(&o.stderr).contains("trace: 4 ranks"),
        "{}",
        text(&o.stderr)
    );
    let (trace, stats, _) = check_run(&dir, wall);
    // counts.c: 2 x 16 B per rank over a split communicator, replayed with world peers.
    assert_eq!(stats["subcomm_messages"].as_u64(), Some(8));
    // 2 barriers, 3 bcasts, 4 allreduces, all on MPI_COMM_WORLD.
    assert_eq!(stats["collectives"].as_u64(), Some(9));
    assert_eq!(stats["unmatched_left_out"].as_u64(), Some(0));
    // The 7 MPI_Sendrecv between MPI_Pcontrol(0) and (1) were not recorded: their time is
    // reported, not replayed.
    assert!(stats["stopped_ns"].as_u64().unwrap_or(0) > 0);
    assert!(trace.contains("bcast root 0 800B"), "{trace}");
}

fn collectives(mpi: &str) {
    let test = format!("trace_collectives_{mpi}");
    need(&test, &[&format!("mpicc.{mpi}"), &format!("mpirun.{mpi}")]);
    let s = Scratch::new("trace", &test);
    let prog = s.0.join("colls");
    compile(&format!("mpicc.{mpi}"), "colls.c", &prog);
    let dir = s.0.join("mon");
    let (o, wall) = monitor(&s.0, &dir, mpi, &[prog.to_str().expect("path")]);
    ok(&o);
    let (trace, stats, _) = check_run(&dir, wall);
    // 3 rounds of bcast, allreduce, alltoall, gather, reducescatter, then a scan.
    assert_eq!(stats["collectives"].as_u64(), Some(16));
    // 2 Allreduce per rank on the even and the odd half of a split: 2 communicators defined.
    assert_eq!(stats["subcomm_collectives"].as_u64(), Some(8));
    assert_eq!(stats["communicators"].as_u64(), Some(2));
    assert_eq!(stats["subcomm_collectives_left_out"].as_u64(), Some(0));
    assert_eq!(stats["unsupported_left_out"].as_u64(), Some(0));
    assert_eq!(trace.lines().filter(|l| l.trim() == "scan 8B").count(), 4);
    // The halves: world 0 and 2, world 1 and 3, each allreducing twice on its own.
    let defs: Vec<&str> = trace.lines().filter(|l| l.starts_with("comm ")).collect();
    assert_eq!(defs.len(), 2, "{trace}");
    for (d, members) in defs.iter().zip([" 0 2", " 1 3"]) {
        assert!(d.ends_with(members), "{d}");
        let name = d.split_whitespace().nth(1).expect("a name");
        let on = format!("allreduce 64B on {name}");
        assert_eq!(trace.lines().filter(|l| l.trim() == on).count(), 4, "{on}");
    }
    for want in [
        "bcast root 1 4096B",
        "allreduce 64B",
        "alltoall 256B",
        "gather root 0 64B",
        "reducescatter 32B",
    ] {
        assert_eq!(
            trace.lines().filter(|l| l.trim() == want).count(),
            12,
            "{want}: 3 per rank"
        );
    }
    // Each rank spins 3 x 2 ms between calls: at least that is compute.
    for (r, (compute, _)) in per_rank(&trace) {
        assert!(
            compute >= 6_000_000,
            "rank {r}: only {compute} ns of compute"
        );
    }
}

/// families.c: nonblocking collectives, collectives on a split and on a duplicated
/// communicator, neighbourhood collectives (as their messages), synchronous sends, one-sided
/// transfers with their epochs. Every one is written, and predict replays the trace.
fn families_trace(mpi: &str) {
    let test = format!("trace_families_{mpi}");
    need(&test, &[&format!("mpicc.{mpi}"), &format!("mpirun.{mpi}")]);
    let s = Scratch::new("trace", &test);
    let prog = s.0.join("families");
    compile(&format!("mpicc.{mpi}"), "families.c", &prog);
    let dir = s.0.join("mon");
    let (o, wall) = monitor(&s.0, &dir, mpi, &[prog.to_str().expect("path")]);
    ok(&o);
    let (trace, stats, _) = check_run(&dir, wall);
    // families.rs's convention: the MPICH here is MPI-4 (persistent collectives: 3 starts of
    // an MPI_Allreduce_init per rank, nonblocking calls all the same).
    let mpi4 = mpi == "mpich";
    let count = |want: &str| trace.lines().filter(|l| l.trim().starts_with(want)).count();
    assert_eq!(count("ialltoall 16B as "), 16, "{trace}");
    assert_eq!(count("iallreduce 8B as "), 8 + if mpi4 { 12 } else { 0 });
    assert_eq!(count("ibarrier as "), 4);
    assert_eq!(count("ibcast root 0 100B as "), 8);
    assert_eq!(
        stats["nonblocking_collectives"].as_u64(),
        Some(36 + if mpi4 { 12 } else { 0 })
    );
    // The split's halves (3 allreduces each) and the duplicate of MPI_COMM_WORLD (2 alltoalls),
    // whose group is the window's: its 3 MPI_Win_fence are barriers there.
    assert_eq!(stats["communicators"].as_u64(), Some(3));
    assert_eq!(stats["subcomm_collectives"].as_u64(), Some(12 + 8 + 12));
    assert_eq!(count("barrier on c"), 12);
    // One-sided, per rank as families.c calls them: MPI_Put 64 B and 8 B, MPI_Accumulate of 4
    // ints and MPI_Rput 16 B to the right neighbour, MPI_Get 32 B from the left one; every
    // one joined by the wait of the call that completes it (the fence, unlock, MPI_Wait,
    // complete); post/start and complete/wait as empty messages from each rank to the one
    // that puts into it, and back.
    let rank_of = |r: usize| -> Vec<String> {
        let head = format!("rank {r}");
        trace
            .lines()
            .skip_while(|l| l.trim() != head)
            .skip(1)
            .take_while(|l| !l.starts_with("rank "))
            .map(|l| l.trim().to_string())
            .collect()
    };
    for r in 0..4usize {
        let (right, left) = ((r + 1) % 4, (r + 3) % 4);
        let b = rank_of(r);
        let starts = |p: &str| b.iter().filter(|l| l.starts_with(p)).count();
        assert_eq!(starts(&format!("put {right} 64B as q")), 1, "{b:?}");
        assert_eq!(starts(&format!("put {right} 16B as q")), 2, "{b:?}");
        assert_eq!(starts(&format!("put {right} 8B as q")), 1, "{b:?}");
        assert_eq!(starts("put "), 4, "{b:?}");
        assert_eq!(starts(&format!("get {left} 32B as q")), 1, "{b:?}");
        assert_eq!(starts("get "), 1, "{b:?}");
        assert_eq!(starts("fetch "), 0, "{b:?}");
        // Every transfer's request is waited for.
        for l in b
            .iter()
            .filter(|l| l.starts_with("put ") || l.starts_with("get "))
        {
            let q = l.rsplit(' ').next().unwrap_or("");
            let waited = b.iter().any(|w| {
                (w.starts_with("wait ") || w.starts_with("waitall "))
                    && w.split_whitespace().any(|n| n == q)
            });
            assert!(waited, "rank {r}: {l} never waited: {b:?}");
        }
        assert_eq!(starts(&format!("send {left} 0B tag ")), 1, "{b:?}");
        assert_eq!(starts(&format!("recv {right} 0B tag ")), 1, "{b:?}");
        assert_eq!(starts(&format!("send {right} 0B tag ")), 1, "{b:?}");
        assert_eq!(starts(&format!("recv {left} 0B tag ")), 1, "{b:?}");
    }
    assert_eq!(stats["one_sided"].as_u64(), Some(4 * 5));
    assert_eq!(stats["one_sided_left_out"].as_u64(), Some(0));
    assert_eq!(stats["epoch_syncs_left_out"].as_u64(), Some(0));
    assert_eq!(stats["epoch_messages"].as_u64(), Some(4 * 2));
    assert_eq!(count("allreduce 8B on c"), 12);
    assert_eq!(count("alltoall 4B on c"), 8);
    assert_eq!(trace.lines().filter(|l| l.starts_with("comm c")).count(), 3);
    assert_eq!(stats["subcomm_collectives_left_out"].as_u64(), Some(0));
    assert_eq!(stats["intercomm_collectives_left_out"].as_u64(), Some(0));
    // 2 MPI_Neighbor_alltoall, 1 MPI_Ineighbor_allgather and the v/w all-to-alls (blocking
    // and nonblocking) per rank, written as messages to and from each of the ring's 2
    // neighbours.
    assert_eq!(stats["unsupported_left_out"].as_u64(), Some(0));
    assert_eq!(stats["neighbor_collectives"].as_u64(), Some(4 * 7));
    assert_eq!(stats["neighbor_messages"].as_u64(), Some(4 * 7 * 2));
    assert_eq!(stats["misaligned_collectives_left_out"].as_u64(), Some(0));
}

/// Rank 0 stops monitoring while rank 1 sends it 3 messages and while the others record a
/// barrier: sends without receives and a collective not called alike. The trace must leave them
/// out, say so, and still replay.
fn missing_partner(mpi: &str) {
    let test = format!("trace_missing_partner_{mpi}");
    need(&test, &[&format!("mpicc.{mpi}"), &format!("mpirun.{mpi}")]);
    let s = Scratch::new("trace", &test);
    let prog = s.0.join("colls");
    compile(&format!("mpicc.{mpi}"), "colls.c", &prog);
    let dir = s.0.join("mon");
    let (o, wall) = monitor(&s.0, &dir, mpi, &[prog.to_str().expect("path"), "asym"]);
    ok(&o);
    let (_, stats, summary) = check_run(&dir, wall);
    assert_eq!(summary["unmatched_sends"].as_u64(), Some(3));
    assert_eq!(stats["unmatched_left_out"].as_u64(), Some(3));
    // Ranks 1..3 recorded the barrier and the allreduce after it, rank 0 only the allreduce:
    // only the common prefix is kept (the 15 of the rounds and the scan).
    assert_eq!(stats["collectives"].as_u64(), Some(16));
    assert_eq!(stats["misaligned_collectives_left_out"].as_u64(), Some(7));
    let err = text(&o.stderr);
    assert!(
        err.contains("3 point-to-point records without their partner")
            && err.contains("7 collective calls not recorded alike on every rank"),
        "{err}"
    );
}

/// `monitor report DIR --trace FILE --timeline FILE` converts an existing directory; a
/// directory that is not an MPI run is refused by name.
fn report_converts(mpi: &str) {
    let test = format!("trace_report_{mpi}");
    need(&test, &[&format!("mpicc.{mpi}"), &format!("mpirun.{mpi}")]);
    let s = Scratch::new("trace", &test);
    let prog = s.0.join("colls");
    compile(&format!("mpicc.{mpi}"), "colls.c", &prog);
    let dir = s.0.join("mon");
    let (o, _) = monitor(&s.0, &dir, mpi, &[prog.to_str().expect("path")]);
    ok(&o);
    let (t, tl) = (s.0.join("again.txt"), s.0.join("again.json"));
    let o = Command::new(exe())
        .args(["monitor", "report"])
        .arg(&dir)
        .arg("--trace")
        .arg(&t)
        .arg("--timeline")
        .arg(&tl)
        .output()
        .expect("run report");
    ok(&o);
    // The same records give the same trace (the first line names the directory as given).
    let body = |p: &Path| {
        let t = std::fs::read_to_string(p).expect("trace");
        t.lines().skip(1).collect::<Vec<_>>().join("\n")
    };
    assert_eq!(body(&t), body(&dir.join("trace.txt")));
    check_timeline(&tl, 4);
    let not = s.0.join("empty");
    std::fs::create_dir_all(&not).expect("mkdir");
    let o = Command::new(exe())
        .args(["monitor", "report"])
        .arg(&not)
        .arg("--trace")
        .arg(&t)
        .output()
        .expect("run report");
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("is not one"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
#[cfg_attr(
    not(commperf_has_openmpi),
    ignore = "needs Open MPI (mpicc.openmpi, mpirun.openmpi: apt-get install libopenmpi-dev openmpi-bin)"
)]
fn trace_counts_openmpi() {
    counts("openmpi");
}
#[test]
#[cfg_attr(
    not(commperf_has_mpich),
    ignore = "needs MPICH (mpicc.mpich, mpirun.mpich: apt-get install libmpich-dev mpich)"
)]
fn trace_counts_mpich() {
    counts("mpich");
}
#[test]
#[cfg_attr(
    not(commperf_has_openmpi),
    ignore = "needs Open MPI (mpicc.openmpi, mpirun.openmpi: apt-get install libopenmpi-dev openmpi-bin)"
)]
fn trace_collectives_openmpi() {
    collectives("openmpi");
}
#[test]
#[cfg_attr(
    not(commperf_has_mpich),
    ignore = "needs MPICH (mpicc.mpich, mpirun.mpich: apt-get install libmpich-dev mpich)"
)]
fn trace_collectives_mpich() {
    collectives("mpich");
}
#[test]
#[cfg_attr(
    not(commperf_has_openmpi),
    ignore = "needs Open MPI (mpicc.openmpi, mpirun.openmpi: apt-get install libopenmpi-dev openmpi-bin)"
)]
fn trace_missing_partner_openmpi() {
    missing_partner("openmpi");
}
#[test]
#[cfg_attr(
    not(commperf_has_mpich),
    ignore = "needs MPICH (mpicc.mpich, mpirun.mpich: apt-get install libmpich-dev mpich)"
)]
fn trace_missing_partner_mpich() {
    missing_partner("mpich");
}
#[test]
#[cfg_attr(
    not(commperf_has_mpich),
    ignore = "needs MPICH (mpicc.mpich, mpirun.mpich: apt-get install libmpich-dev mpich)"
)]
fn trace_report_mpich() {
    report_converts("mpich");
}
#[test]
#[cfg_attr(
    not(commperf_has_openmpi),
    ignore = "needs Open MPI (mpicc.openmpi, mpirun.openmpi: apt-get install libopenmpi-dev openmpi-bin)"
)]
fn trace_families_openmpi() {
    families_trace("openmpi");
}
#[test]
#[cfg_attr(
    not(commperf_has_mpich),
    ignore = "needs MPICH (mpicc.mpich, mpirun.mpich: apt-get install libmpich-dev mpich)"
)]
fn trace_families_mpich() {
    families_trace("mpich");
}
