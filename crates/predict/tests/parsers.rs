//! The trace readers on real files (LogGOPSim's and SimGrid's examples, copied into
//! `tests/data` with their origins), the collective algorithms checked by a small matcher and a
//! small executor, the generators read back, and error positions on malformed inputs.

use commperf_predict::collectives::{
    coll_tag, group_coll_tag, Algorithms, AllgatherAlgo, AllreduceAlgo, AlltoallAlgo, BarrierAlgo,
    BcastAlgo, BlockCounts, Collective, GatherAlgo, ReduceAlgo, ReduceScatterAlgo, ScatterAlgo,
};
use commperf_predict::gen::{goal_binomial_bcast, own_pattern_string, Pattern};
use commperf_predict::parse::{parse_str, read_trace, ParseOptions, TraceFormat};
use commperf_predict::workload::{DepKind, OpKind, SeqProgram, Workload, WorkloadBuilder, ANY};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

fn read(name: &str) -> String {
    std::fs::read_to_string(data(name)).unwrap()
}

fn opts() -> ParseOptions {
    ParseOptions::default()
}

fn own(text: &str) -> Workload {
    parse_str(text, "t.trace", TraceFormat::Own, &opts()).unwrap_or_else(|e| panic!("{e}"))
}

fn own_err(text: &str) -> String {
    parse_str(text, "t.trace", TraceFormat::Own, &opts())
        .unwrap_err()
        .to_string()
}

fn sg(text: &str) -> Workload {
    parse_str(text, "t.txt", TraceFormat::SimGrid, &opts()).unwrap_or_else(|e| panic!("{e}"))
}

fn sg_err(text: &str) -> String {
    parse_str(text, "t.txt", TraceFormat::SimGrid, &opts())
        .unwrap_err()
        .to_string()
}

fn goal_err(text: &str) -> String {
    parse_str(text, "t.goal", TraceFormat::Goal, &opts())
        .unwrap_err()
        .to_string()
}

/// Every send paired one-to-one with a receive of the same (src, dst, tag, bytes); receives
/// from ANY are not used by the collectives and are refused here.
fn assert_matched(w: &Workload) {
    let mut bal: HashMap<(u32, u32, u32, u64), i64> = HashMap::new();
    for r in 0..w.nranks() {
        for i in w.rank_ops(r) {
            match w.op(i) {
                OpKind::Send { to, tag, bytes } | OpKind::Ssend { to, tag, bytes } => {
                    *bal.entry((r, to, tag, bytes)).or_default() += 1
                }
                OpKind::Recv { from, tag, bytes } => {
                    assert!(from != ANY && tag != ANY);
                    *bal.entry((from, r, tag, bytes)).or_default() -= 1
                }
                OpKind::Calc { .. } | OpKind::Rma { .. } => {}
            }
        }
    }
    let bad: Vec<_> = bal.iter().filter(|(_, &v)| v != 0).collect();
    assert!(bad.is_empty(), "unmatched (src, dst, tag, bytes): {bad:?}");
}

/// Runs the workload in zero time: sends complete at once (`eager`) or when their receive has
/// started (rendezvous); a receive completes once its send started. Messages of one (src, dst,
/// tag) match in order. True when every operation completes (no deadlock).
fn runs_to_completion(w: &Workload, eager: bool) -> bool {
    let n = w.len();
    let mut started = vec![false; n];
    let mut done = vec![false; n];
    // k-th send/recv of each key, by global index.
    let mut nth = vec![0usize; n];
    let mut sends: HashMap<(u32, u32, u32), Vec<usize>> = HashMap::new();
    let mut recvs: HashMap<(u32, u32, u32), Vec<usize>> = HashMap::new();
    for r in 0..w.nranks() {
        for i in w.rank_ops(r) {
            match w.op(i) {
                OpKind::Send { to, tag, .. } | OpKind::Ssend { to, tag, .. } => {
                    let v = sends.entry((r, to, tag)).or_default();
                    nth[i] = v.len();
                    v.push(i);
                }
                OpKind::Recv { from, tag, .. } => {
                    let v = recvs.entry((from, r, tag)).or_default();
                    nth[i] = v.len();
                    v.push(i);
                }
                OpKind::Calc { .. } | OpKind::Rma { .. } => {}
            }
        }
    }
    loop {
        let mut progress = false;
        for r in 0..w.nranks() {
            for i in w.rank_ops(r) {
                if !started[i]
                    && w.deps(i).all(|(d, k)| match k {
                        DepKind::Requires => done[d],
                        DepKind::IRequires => started[d],
                    })
                {
                    started[i] = true;
                    progress = true;
                }
                if started[i] && !done[i] {
                    let ok = match w.op(i) {
                        OpKind::Calc { .. } | OpKind::Rma { .. } => true,
                        OpKind::Send { to, tag, .. } | OpKind::Ssend { to, tag, .. } => {
                            (eager && matches!(w.op(i), OpKind::Send { .. }))
                                || recvs
                                    .get(&(r, to, tag))
                                    .and_then(|v| v.get(nth[i]))
                                    .is_some_and(|&j| started[j])
                        }
                        OpKind::Recv { from, tag, .. } => sends
                            .get(&(from, r, tag))
                            .and_then(|v| v.get(nth[i]))
                            .is_some_and(|&j| started[j]),
                    };
                    if ok {
                        done[i] = true;
                        progress = true;
                    }
                }
            }
        }
        if !progress {
            return done.iter().all(|&d| d);
        }
    }
}

fn expand_all(a: &Algorithms, n: u32, coll: &Collective) -> Workload {
    let mut b = WorkloadBuilder::new(n);
    for r in 0..n {
        let mut p = SeqProgram::new();
        a.expand(&mut p, r, n, coll_tag(0), coll);
        b.add_program(r, &p).unwrap();
    }
    b.finish()
}

fn check(w: &Workload) {
    assert_matched(w);
    assert!(runs_to_completion(w, true), "deadlock with eager sends");
    assert!(
        runs_to_completion(w, false),
        "deadlock with rendezvous sends"
    );
}

fn msgs(w: &Workload) -> usize {
    w.counts().0
}

fn recvs_per_rank(w: &Workload) -> Vec<usize> {
    (0..w.nranks())
        .map(|r| {
            w.rank_ops(r)
                .filter(|&i| matches!(w.op(i), OpKind::Recv { .. }))
                .count()
        })
        .collect()
}

fn log2_ceil(n: u32) -> usize {
    (n as u64).next_power_of_two().trailing_zeros() as usize
}

const SIZES: [u32; 9] = [1, 2, 3, 4, 5, 6, 7, 8, 9];

// ---------------------------------------------------------------- real files

#[test]
fn every_example_file_parses() {
    let mut n = 0;
    for e in std::fs::read_dir(data("")).unwrap() {
        let p = e.unwrap().path();
        // The two halves of a split trace are not traces on their own (see
        // `a_split_traces_per_rank_file_alone_is_named_as_such`).
        if p.file_name()
            .is_some_and(|f| f == "actions0.txt" || f == "actions1.txt")
        {
            continue;
        }
        let fmt = match p.extension().and_then(|x| x.to_str()) {
            Some("goal") => TraceFormat::Goal,
            Some("txt") => TraceFormat::SimGrid,
            _ => continue,
        };
        let text = std::fs::read_to_string(&p).unwrap();
        let w = parse_str(&text, &p.display().to_string(), fmt, &opts())
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(!w.is_empty(), "{}", p.display());
        // Detection agrees with the extension.
        let w2 = read_trace(&p, None, &opts()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(w, w2);
        n += 1;
    }
    assert_eq!(n, 8);
}

#[test]
fn binary_tree_32_has_the_exact_operations_and_dependencies() {
    let w = parse_str(
        &read("binary_tree_32.goal"),
        "b",
        TraceFormat::Goal,
        &opts(),
    )
    .unwrap();
    assert_eq!(w.nranks(), 32);
    assert_eq!(w.counts(), (31, 31, 0));
    assert_eq!(w.len(), 62);
    // Every send of a non-root rank requires that rank's receive (its l1); the root's five sends
    // have no dependencies: 31 − 5 = 26 dependencies in all.
    let mut ndeps = 0;
    for r in 0..32 {
        let ops = w.rank_ops(r);
        for i in ops.clone() {
            let d: Vec<_> = w.deps(i).collect();
            ndeps += d.len();
            if matches!(w.op(i), OpKind::Send { .. }) && r != 0 {
                assert_eq!(d, vec![(ops.start, DepKind::Requires)]);
            } else {
                assert!(d.is_empty());
            }
        }
    }
    assert_eq!(ndeps, 26);
    assert_eq!(recvs_per_rank(&w)[1..], [1; 31]);
    assert_eq!(
        w.op(w.rank_ops(31).start),
        OpKind::Recv {
            from: 15,
            tag: 0,
            bytes: 1
        }
    );
    check(&w);
}

#[test]
fn generated_binomial_goal_is_loggopsim_file() {
    let mut v = Vec::new();
    goal_binomial_bcast(32, 1, &mut v).unwrap();
    assert_eq!(String::from_utf8(v).unwrap(), read("binary_tree_32.goal"));
}

#[test]
fn generated_binomial_goal_of_1024_ranks_runs() {
    let mut v = Vec::new();
    goal_binomial_bcast(1024, 64, &mut v).unwrap();
    let w = parse_str(
        std::str::from_utf8(&v).unwrap(),
        "g",
        TraceFormat::Goal,
        &opts(),
    )
    .unwrap();
    assert_eq!(w.counts(), (1023, 1023, 0));
    check(&w);
}

#[test]
fn simgrid_point_to_point_examples() {
    // rank 1 (its half of the split trace): recv, compute 1e9 flops = 1 s at 1 Gflop/s, isend,
    // irecv, wait for the irecv.
    let w = read_trace(&data("split_traces"), None, &opts()).unwrap();
    assert_eq!(w.nranks(), 2);
    let ops: Vec<_> = w.rank_ops(1).map(|i| w.op(i)).collect();
    let at = w.rank_ops(1).start;
    assert_eq!(
        ops,
        vec![
            OpKind::Recv {
                from: 0,
                tag: 0,
                bytes: 1_000_000
            },
            OpKind::Calc { ns: 1_000_000_000 },
            OpKind::Send {
                to: 0,
                tag: 1,
                bytes: 1_000_000
            },
            OpKind::Recv {
                from: 0,
                tag: 2,
                bytes: 1_000_000
            },
            OpKind::Calc { ns: 0 },
        ]
    );
    // `wait 0 1 2` waits for the irecv (src 0, dst 1, tag 2) only.
    let wait: Vec<_> = w.deps(at + 4).collect();
    assert!(wait.contains(&(at + 3, DepKind::Requires)));
    assert!(!wait.contains(&(at + 2, DepKind::Requires)));

    // The split trace through its index file reads as the two halves together.
    let idx = read_trace(&data("split_traces"), None, &opts()).unwrap();
    assert_eq!(idx.nranks(), 2);
    assert_eq!(idx.counts(), (3, 3, 2));
    check(&idx);

    let w = sg(&read("actions_with_isend.txt"));
    assert_eq!(w.counts().0, 3);
    check(&w);
    let w = sg(&read("actions_waitall.txt"));
    assert_eq!(w.counts(), (3, 3, 3));
    check(&w);
    // Host speed scales compute.
    let fast = ParseOptions {
        host_speed_flops: 2e9,
        ..ParseOptions::default()
    };
    let w = read_trace(&data("split_traces"), None, &fast).unwrap();
    assert_eq!(
        w.op(w.rank_ops(1).start + 1),
        OpKind::Calc { ns: 500_000_000 }
    );
}

#[test]
fn simgrid_collective_examples() {
    // 3 ranks, recursive doubling allreduce: 2·rem + pof2·log2(pof2) = 2 + 2 = 4 messages,
    // then the 5e8 flops of the allreduce and the explicit compute.
    let w = sg(&read("actions_allreduce.txt"));
    assert_eq!(w.counts(), (4, 4, w.counts().2));
    assert!(w.ops().contains(&OpKind::Calc { ns: 500_000_000 }));
    check(&w);
    // Pairwise alltoall of 500 B: n(n − 1) = 6.
    let w = sg(&read("actions_alltoall.txt"));
    assert_eq!(w.counts().0, 6);
    assert!(w.ops().iter().all(|o| match o {
        OpKind::Send { bytes, .. } => *bytes == 500,
        _ => true,
    }));
    check(&w);
    // Dissemination barrier over 3 ranks: 3 · ⌈log2 3⌉ = 6 zero-byte messages, plus 1 send.
    let w = sg(&read("actions_barrier.txt"));
    assert_eq!(w.counts().0, 7);
    check(&w);
    // Two binomial broadcasts (2 messages each) and a binomial reduce (2).
    let w = sg(&read("actions_bcast.txt"));
    assert_eq!(w.counts().0, 6);
    check(&w);
    // gather 68 68 0 0 0: root 0, datatype 0 = MPI_DOUBLE, so 68 · 8 bytes per rank, 3 blocks
    // reaching the root over a binomial tree of 4.
    let w = sg(&read("actions_gather.txt"));
    let into_root: u64 = w
        .rank_ops(0)
        .map(|i| match w.op(i) {
            OpKind::Recv { bytes, .. } => bytes,
            _ => 0,
        })
        .sum();
    assert_eq!(into_root, 3 * 68 * 8);
    check(&w);
}

#[test]
fn simgrid_init_argument_switches_to_doubles_and_datatypes_scale_counts() {
    let w =
        sg("0 init 1\n1 init 1\n0 send 1 0 10\n1 recv 0 0 10\n0 send 1 1 10 1\n1 recv 0 1 10 1\n");
    assert_eq!(
        w.op(0),
        OpKind::Send {
            to: 1,
            tag: 0,
            bytes: 80
        }
    );
    assert_eq!(
        w.op(1),
        OpKind::Send {
            to: 1,
            tag: 1,
            bytes: 40
        }
    );
    let w = sg("0 init\n0 bcast 10 1 5\n1 init\n1 bcast 10 1 5\n0 sleep 0.25\n");
    assert_eq!(
        w.op(w.rank_ops(1).start),
        OpKind::Send {
            to: 0,
            tag: coll_tag(0),
            bytes: 40
        }
    );
    assert_eq!(
        w.op(w.rank_ops(0).end - 1),
        OpKind::Calc { ns: 250_000_000 }
    );
    // v-collectives take one count per rank.
    let w = sg("0 alltoallv 10 0 1 10 0 2\n1 alltoallv 10 2 0 10 1 0\n\
                0 reducescatter 3 4 1e3\n1 reducescatter 3 4 1e3\n\
                0 gatherv 3 3 4 1\n1 gatherv 4 3 4 1\n0 allgatherv 3 3 4\n1 allgatherv 4 3 4 6\n\
                0 scatterv 3 4 3 1\n1 scatterv 3 4 4 1");
    check(&w);
}

#[test]
fn simgrid_errors_name_file_line_column_and_token() {
    assert_eq!(
        sg_err("0 init\n0 send 1 0 1e400\n"),
        "t.txt:2:12: a count must be a finite number ≥ 0 (at `1e400`)"
    );
    assert_eq!(
        sg_err("0 init\n0 send 1 -3 10\n"),
        "t.txt:2:10: a tag must be in 0..=2147483647 (at `-3`)"
    );
    assert_eq!(
        sg_err("0 init\n0 frobnicate 3\n"),
        "t.txt:2:3: unknown action (SimGrid replay actions: init, finalize, comm_size, \
         comm_split, comm_dup, send, isend, recv, irecv, test, wait, waitall, barrier, bcast, \
         reduce, allreduce, alltoall, alltoallv, gather, scatter, gatherv, scatterv, allgather, \
         allgatherv, reducescatter, compute, sleep, location) (at `frobnicate`)"
    );
    assert_eq!(
        sg_err("0 compute nan"),
        "t.txt:1:11: expected a number of flops (a number such as 1e6) (at `nan`)"
    );
    assert_eq!(
        sg_err("0 send 1 0"),
        "t.txt:1:11: `send` needs a count here"
    );
    assert_eq!(
        sg_err("0 barrier\n1 compute 5\n"),
        "t.txt:2:1: rank 1 calls collectives differently from rank 0 (0 calls against 1, or \
         other kinds or roots); every rank must call the same collectives in the same order \
         (at `1`)"
    );
}

/// Bytes of every send of `w`.
fn sent_bytes(w: &Workload) -> u64 {
    w.ops()
        .iter()
        .map(|o| match o {
            OpKind::Send { bytes, .. } => *bytes,
            _ => 0,
        })
        .sum()
}

#[test]
fn simgrids_own_trace_of_v_collectives_with_two_datatypes_reads() {
    // Written by SimGrid 3.32 itself (`smpirun -trace-ti`, see SOURCES.md): every collective of
    // 4 ranks on MPI_C_DOUBLE_COMPLEX (id 26, 16 bytes), with its two datatypes, and a bcast of
    // MPI_LONG_DOUBLE (id 14, 16 bytes).
    let w = read_trace(&data("vcoll.trace"), None, &opts()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(w.nranks(), 4);
    assert!(runs_to_completion(&w, true) && runs_to_completion(&w, false));
    // bcast 64 3 14: the root, rank 3, sends 64 · 16 bytes.
    assert!(w
        .rank_ops(3)
        .any(|i| matches!(w.op(i), OpKind::Send { bytes: 1024, .. })));

    // allgatherv of 100, 200, 300, 400 double complexes: every rank receives the others'
    // blocks once, (4 − 1) · 1000 · 16 bytes in all, whichever way the datatypes are written.
    let counts = ["100", "200", "300", "400"];
    let allgatherv = |tail: &str| {
        let text: String = (0..4)
            .map(|r| format!("{r} allgatherv {} 100 200 300 400 {tail}\n", counts[r]))
            .collect();
        sg(&text)
    };
    for tail in ["26 26", "26 26 0 100 300 600"] {
        let w = allgatherv(tail);
        check(&w);
        assert_eq!(sent_bytes(&w), 3 * 1000 * 16, "allgatherv … {tail}");
    }
    // Displacements alone: the default datatype (MPI_BYTE without `init` arguments).
    assert_eq!(sent_bytes(&allgatherv("0 100 300 600")), 3 * 1000);
    assert_eq!(sent_bytes(&allgatherv("")), 3 * 1000);
    // SimGrid 3.32 reads a lone datatype as the send datatype only (its replay re-traces
    // `26` as `26 6`): 100 double complexes sent into a block of 100 bytes, which it aborts
    // on (MPI_ERR_TRUNCATE); and one datatype then displacements fails its assertion.
    let e = sg_err(
        &(0..4)
            .map(|r| format!("{r} allgatherv {} 100 200 300 400 26\n", counts[r]))
            .collect::<String>(),
    );
    assert!(e.contains("allgatherv: rank 0 sends 1600 bytes, but its own block in the receive counts is 100 bytes"), "{e}");
    for tail in ["0 100 300", "26 0 100 300 600"] {
        let e = sg_err(
            &(0..4)
                .map(|r| format!("{r} allgatherv {} 100 200 300 400 {tail}\n", counts[r]))
                .collect::<String>(),
        );
        assert!(e.contains("allgatherv takes, after its 4 counts, a send datatype, send and receive datatypes, 4 displacements, or both datatypes then 4 displacements (as SimGrid 3.32 reads it); found"), "{tail}: {e}");
    }
}

/// Bytes rank `r` receives in collective call `seq` of `w`.
fn received_in(w: &Workload, r: u32, seq: u64) -> u64 {
    w.rank_ops(r)
        .map(|i| match w.op(i) {
            OpKind::Recv { tag, bytes, .. } if tag == coll_tag(seq) => bytes,
            _ => 0,
        })
        .sum()
}

#[test]
fn simgrid_v_collectives_take_the_counts_every_rank_writes() {
    // SimGrid's tracer writes a gatherv's receive counts and a scatterv's send counts on the
    // root's line only (vcoll.trace: gatherv to rank 1, scatterv from rank 2, zeros on the
    // others' lines). Every rank must expand the call with the whole vector, each rank's
    // block taken from its own line, or the tree algorithms' forwarded blocks disagree
    // between sender and receiver.
    for (gather, scatter) in [
        (GatherAlgo::Linear, ScatterAlgo::Linear),
        (GatherAlgo::Binomial, ScatterAlgo::Binomial),
    ] {
        let o = ParseOptions {
            algorithms: Algorithms {
                gather,
                scatter,
                ..Algorithms::default()
            },
            ..opts()
        };
        let w = read_trace(&data("vcoll.trace"), None, &o).unwrap_or_else(|e| panic!("{e}"));
        assert_matched(&w);
        assert!(runs_to_completion(&w, true) && runs_to_completion(&w, false));
        // gatherv (call 1) of 100, 200, 300, 400 double complexes to rank 1: it receives
        // everything but its own 200.
        assert_eq!(
            received_in(&w, 1, 1),
            (1000 - 200) * 16,
            "{gather:?} gatherv"
        );
        // scatterv (call 2) from rank 2: every block but its own leaves the root once,
        // whichever the tree; linearly, each rank receives exactly its own.
        let root_sent: u64 = w
            .rank_ops(2)
            .map(|i| match w.op(i) {
                OpKind::Send { tag, bytes, .. } if tag == coll_tag(2) => bytes,
                _ => 0,
            })
            .sum();
        assert_eq!(root_sent, (1000 - 300) * 16, "{scatter:?} scatterv");
        if scatter == ScatterAlgo::Linear {
            for (r, own) in [(0, 100), (1, 200), (3, 400)] {
                assert_eq!(received_in(&w, r, 2), own * 16, "scatterv to {r}");
            }
        }
    }
}

#[test]
fn simgrid_v_collective_counts_that_disagree_are_refused_by_place() {
    // The root's receive counts against each rank's send count: rank 2 says 30, the root 20.
    let gv = "0 gatherv 10 0 0 0 1\n1 gatherv 20 10 20 30 1\n2 gatherv 30 0 0 0 1\n";
    assert_eq!(
        sg_err(gv.replace("10 20 30", "10 20 20").as_str()),
        "t.txt:2:20: gatherv: the root, rank 1, gives 20 bytes here for rank 2, but rank 2 \
         sends 30 bytes (at t.txt:3:11); MPI requires them equal (at `20`)"
    );
    assert_matched(&sg(gv));
    // Scatterv: the root's send counts against each rank's receive count.
    let sv = "0 scatterv 0 0 0 10 2\n1 scatterv 0 0 0 20 2\n2 scatterv 10 20 30 30 2\n";
    assert_matched(&sg(sv));
    assert_eq!(
        sg_err(sv.replace("0 20 2", "0 25 2").as_str()),
        "t.txt:3:15: scatterv: the root, rank 2, gives 20 bytes here for rank 1, but rank 1 \
         receives 25 bytes (at t.txt:2:18); MPI requires them equal (at `20`)"
    );
    // A lone trailing datatype is the send datatype, the receive one staying the default
    // (SimGrid 3.32's replay re-traces `… 26` as `… 26 6`): 10 double complexes sent, 10
    // bytes received, which SimGrid aborts on (MPI_ERR_TRUNCATE) and we refuse.
    let e = sg_err("0 scatterv 10 10 10 0 26\n1 scatterv 0 0 10 0 26\n");
    assert!(e.contains("scatterv: the root, rank 0, gives 160 bytes here for rank 0, but rank 0 receives 10 bytes"), "{e}");
    let w = sg("0 scatterv 10 10 10 0 26 26\n1 scatterv 0 0 10 0 26 26\n");
    assert_eq!(sent_bytes(&w), 160);
    let e = sg_err("0 gatherv 10 10 10 0 26\n1 gatherv 10 0 0 0 26\n");
    assert!(
        e.contains(
            "gatherv: the root, rank 0, gives 10 bytes here for rank 0, but rank 0 sends 160 bytes"
        ),
        "{e}"
    );
}

#[test]
fn simgrid_datatypes_are_simgrids_table_and_unknown_ids_are_refused() {
    // 26 is MPI_C_DOUBLE_COMPLEX, 16 bytes: 10 of them are 160 bytes, not 10.
    let w = sg("0 send 1 0 10 26\n1 recv 0 0 10 26\n");
    assert_eq!(
        w.op(0),
        OpKind::Send {
            to: 1,
            tag: 0,
            bytes: 160
        }
    );
    for (id, bytes) in [
        (7, 8),
        (14, 16),
        (27, 32),
        (35, 8),
        (50, 32),
        (57, 1),
        (59, 8),
    ] {
        let w = sg(&format!("0 send 1 0 3 {id}\n1 recv 0 0 3 {id}\n"));
        assert_eq!(
            w.op(0),
            OpKind::Send {
                to: 1,
                tag: 0,
                bytes: 3 * bytes
            },
            "datatype {id}"
        );
    }
    assert_eq!(
        sg_err("0 send 1 0 10 60\n1 recv 0 0 10 26\n"),
        "t.txt:1:15: datatype 60 is not one of SimGrid's (0 MPI_DOUBLE … 26 MPI_C_DOUBLE_COMPLEX \
         … 59 MPI_COUNT): its size is unknown (at `60`)"
    );
    assert_eq!(
        sg_err("0 bcast 10 0 55\n1 bcast 10 0 55\n"),
        "t.txt:1:14: datatype 55 is MPI_UB, a marker that carries no data (at `55`)"
    );
    assert!(sg_err("0 alltoall 1 1 6 -2\n1 alltoall 1 1 6 6\n").contains("datatype -2 is not one"));
}

#[test]
fn a_split_traces_per_rank_file_alone_is_named_as_such() {
    for f in [
        "actions1.txt",
        "actions0.txt",
        "vcoll.trace_files/rank-2.txt",
    ] {
        let e = read_trace(&data(f), None, &opts()).unwrap_err().to_string();
        assert!(
            e.contains(":1:1: every line is rank ")
                && e.contains("looks like one rank's file of a split SimGrid trace")
                && e.contains("give the index file instead"),
            "{f}: {e}"
        );
    }
    // A one-rank trace of rank 0 that names no other rank is a trace.
    assert_eq!(sg("0 init\n0 compute 1e3\n").nranks(), 1);
}

#[test]
fn goal_any_source_and_any_tag_receives_read_as_wildcards() {
    // LogGOPSim's grammar: `from -1`, `tag -1`; Schedgen writes any tag as 4294967295.
    let text = "num_ranks 3\nrank 0 {\nl1: recv 8b from -1 tag -1\nl2: send 8b to 2 tag 5\n\
                l3: recv 8b from 2 tag 4294967295 cpu 0 nic 0\nl4: recv 4b from -1 tag 7\n\
                l2 requires l1\nl3 requires l2\nl4 requires l3\n}\n\
                rank 1 { send 8b to 0 tag 3 }\n\
                rank 2 { a: recv 8b from -1 tag -1\nb: send 8b to 0 tag 9\n\
                c: send 4b to 0 tag 7 nic 0\nb requires a\nc requires b }\n";
    let w = parse_str(text, "t.goal", TraceFormat::Goal, &opts()).unwrap_or_else(|e| panic!("{e}"));
    let ops: Vec<_> = w.rank_ops(0).map(|i| w.op(i)).collect();
    assert_eq!(
        ops,
        vec![
            OpKind::Recv {
                from: ANY,
                tag: ANY,
                bytes: 8
            },
            OpKind::Send {
                to: 2,
                tag: 5,
                bytes: 8
            },
            OpKind::Recv {
                from: 2,
                tag: ANY,
                bytes: 8
            },
            OpKind::Recv {
                from: ANY,
                tag: 7,
                bytes: 4
            },
        ]
    );
    // And it runs to the end in both models (the wildcards match).
    let [contention, loggp] = predicted_us(&w);
    assert!(contention > 0.0 && loggp > 0.0);
}

#[test]
fn goal_refuses_what_it_cannot_model_by_name() {
    assert_eq!(
        goal_err("num_ranks 2\nrank 0 {\nsend 8b to -1\n}\nrank 1 {}\n"),
        "t.goal:3:12: a send needs a destination rank (-1, any source, is for receives) (at `-1`)"
    );
    assert_eq!(
        goal_err("num_ranks 2\nrank 0 {\nsend 8b to 1 tag 4294967295\n}\n"),
        "t.goal:3:18: a send with any tag is not modelled (LogGOPSim matches it with every \
         receive; commperf only matches wildcard receives) (at `4294967295`)"
    );
    assert_eq!(
        goal_err("num_ranks 1\nrank 0 {\nl1: calc 5 cpu 1\n}\n"),
        "t.goal:3:16: `cpu 1`: commperf models one CPU and one NIC per rank (LogGOPSim runs other \
         cpus side by side), so only `cpu 0` is accepted (at `1`)"
    );
    assert!(goal_err("num_ranks 2\nrank 0 {\nrecv 8b from 1 nic 2\n}\n")
        .starts_with("t.goal:3:20: `nic 2`"));
    assert!(
        goal_err("num_ranks 2\nrank 0 {\nrecv 8b from 1 tag -2\n}\n")
            .starts_with("t.goal:3:20: expected a tag (or -1 for any tag)")
    );
    assert!(goal_err("num_ranks 2\nrank 0 {\nrecv 8b from -2\n}\n")
        .starts_with("t.goal:3:14: expected a rank"));
}

// ---------------------------------------------------------------- collectives

#[test]
fn bcast_reaches_every_rank_exactly_once() {
    for algo in [BcastAlgo::Binomial, BcastAlgo::Linear] {
        let a = Algorithms {
            bcast: algo,
            ..Algorithms::default()
        };
        for n in SIZES {
            for root in [0, n / 2, n - 1] {
                let w = expand_all(&a, n, &Collective::Bcast { root, bytes: 100 });
                check(&w);
                assert_eq!(msgs(&w), n as usize - 1, "{algo} n={n}");
                for (r, c) in recvs_per_rank(&w).into_iter().enumerate() {
                    assert_eq!(c, usize::from(r as u32 != root), "{algo} n={n} root={root}");
                }
            }
        }
    }
}

#[test]
fn reduce_gather_scatter_move_the_textbook_volume() {
    for n in SIZES {
        for root in [0, n - 1] {
            for algo in [ReduceAlgo::Binomial, ReduceAlgo::Linear] {
                let a = Algorithms {
                    reduce: algo,
                    reduce_step_ns: 5,
                    ..Algorithms::default()
                };
                let w = expand_all(
                    &a,
                    n,
                    &Collective::Reduce {
                        root,
                        bytes: 8,
                        compute_ns: 0,
                    },
                );
                check(&w);
                assert_eq!(msgs(&w), n as usize - 1);
                // One combine step per received contribution.
                assert_eq!(w.counts().2, n as usize - 1);
            }
            for (g, s) in [
                (GatherAlgo::Binomial, ScatterAlgo::Binomial),
                (GatherAlgo::Linear, ScatterAlgo::Linear),
            ] {
                let a = Algorithms {
                    gather: g,
                    scatter: s,
                    ..Algorithms::default()
                };
                for coll in [
                    Collective::Gather { root, bytes: 10 },
                    Collective::Scatter { root, bytes: 10 },
                    Collective::Gatherv {
                        root,
                        counts: (0..n as u64).collect(),
                    },
                    Collective::Scatterv {
                        root,
                        counts: (0..n as u64).map(|j| j * 3).collect(),
                    },
                ] {
                    let w = expand_all(&a, n, &coll);
                    check(&w);
                    // The root receives (gather) or sends (scatter) everyone else's blocks.
                    let total: u64 = match &coll {
                        Collective::Gather { .. } | Collective::Scatter { .. } => {
                            10 * (n as u64 - 1)
                        }
                        Collective::Gatherv { counts, .. }
                        | Collective::Scatterv { counts, .. } => {
                            counts.iter().sum::<u64>() - counts[root as usize]
                        }
                        _ => unreachable!(),
                    };
                    let at_root: u64 = w
                        .rank_ops(root)
                        .map(|i| match w.op(i) {
                            OpKind::Recv { bytes, .. } | OpKind::Send { bytes, .. } => bytes,
                            _ => 0,
                        })
                        .sum();
                    assert_eq!(at_root, total, "{coll:?} n={n}");
                }
            }
        }
    }
}

#[test]
fn allreduce_message_counts_are_the_textbook_ones() {
    for n in SIZES {
        let pof2 = if n.is_power_of_two() {
            n
        } else {
            n.next_power_of_two() / 2
        };
        let rem = (n - pof2) as usize;
        let rd = 2 * rem + pof2 as usize * pof2.trailing_zeros() as usize;
        let ring = if n > 1 {
            2 * n as usize * (n as usize - 1)
        } else {
            0
        };
        let rb = 2 * (n as usize - 1);
        for (algo, want) in [
            (AllreduceAlgo::RecursiveDoubling, rd),
            (AllreduceAlgo::Ring, ring),
            (AllreduceAlgo::ReduceBcast, rb),
        ] {
            let a = Algorithms {
                allreduce: algo,
                ..Algorithms::default()
            };
            let w = expand_all(
                &a,
                n,
                &Collective::Allreduce {
                    bytes: 1000,
                    compute_ns: 7,
                },
            );
            check(&w);
            assert_eq!(msgs(&w), want, "{algo} n={n}");
            // Every rank ends with the reduced data: it receives at least once (n > 1).
            if n > 1 {
                assert!(recvs_per_rank(&w).iter().all(|&c| c > 0));
            }
        }
    }
    // Spot values from the brief: n = 2, 3, 4, 5, 7, 8 → 2, 4, 8, 10, 14, 24 messages.
    let a = Algorithms::default();
    let got: Vec<_> = [2, 3, 4, 5, 7, 8]
        .iter()
        .map(|&n| {
            msgs(&expand_all(
                &a,
                n,
                &Collective::Allreduce {
                    bytes: 8,
                    compute_ns: 0,
                },
            ))
        })
        .collect();
    assert_eq!(got, vec![2, 4, 8, 10, 14, 24]);
}

#[test]
fn ring_allreduce_moves_2_n_minus_1_over_n_of_the_data_per_rank() {
    let a = Algorithms::parse_list("allreduce=ring").unwrap();
    let n = 5;
    let w = expand_all(
        &a,
        n,
        &Collective::Allreduce {
            bytes: 1003,
            compute_ns: 0,
        },
    );
    let total: u64 = w
        .ops()
        .iter()
        .map(|o| match o {
            OpKind::Send { bytes, .. } => *bytes,
            _ => 0,
        })
        .sum();
    // Every rank sends every chunk but one, twice.
    assert_eq!(total, 2 * (n as u64 - 1) * 1003);
}

#[test]
fn allgather_alltoall_barrier_reducescatter_counts() {
    for n in SIZES {
        let nn = n as usize;
        let pof2 = if n.is_power_of_two() {
            n
        } else {
            n.next_power_of_two() / 2
        };
        let rd = 2 * (n - pof2) as usize + pof2 as usize * pof2.trailing_zeros() as usize;
        for (algo, want) in [
            (AllgatherAlgo::RecursiveDoubling, rd),
            (AllgatherAlgo::Ring, nn * (nn - 1)),
        ] {
            let a = Algorithms {
                allgather: algo,
                ..Algorithms::default()
            };
            for coll in [
                Collective::Allgather { bytes: 16 },
                Collective::Allgatherv {
                    counts: (1..=n as u64).collect(),
                },
            ] {
                let w = expand_all(&a, n, &coll);
                check(&w);
                assert_eq!(msgs(&w), want, "{algo} n={n}");
                // Every rank receives everyone else's blocks.
                let per_rank: Vec<u64> = (0..n)
                    .map(|r| {
                        w.rank_ops(r)
                            .map(|i| match w.op(i) {
                                OpKind::Recv { bytes, .. } => bytes,
                                _ => 0,
                            })
                            .sum()
                    })
                    .collect();
                if algo == AllgatherAlgo::Ring {
                    for (r, got) in per_rank.iter().enumerate() {
                        let want = match &coll {
                            Collective::Allgather { bytes } => bytes * (n as u64 - 1),
                            Collective::Allgatherv { counts } => {
                                counts.iter().sum::<u64>() - counts[r]
                            }
                            _ => unreachable!(),
                        };
                        assert_eq!(*got, want);
                    }
                }
            }
        }
        for algo in [AlltoallAlgo::Pairwise, AlltoallAlgo::Linear] {
            let a = Algorithms {
                alltoall: algo,
                ..Algorithms::default()
            };
            let w = expand_all(&a, n, &Collective::Alltoall { bytes: 3 });
            check(&w);
            assert_eq!(msgs(&w), nn * (nn - 1), "{algo} n={n}");
            assert!(recvs_per_rank(&w).iter().all(|&c| c == nn - 1));
        }
        let w = expand_all(&Algorithms::default(), n, &Collective::Barrier);
        check(&w);
        assert_eq!(msgs(&w), nn * log2_ceil(n));
        let _ = BarrierAlgo::Dissemination;
        for algo in [ReduceScatterAlgo::Ring, ReduceScatterAlgo::Pairwise] {
            let a = Algorithms {
                reducescatter: algo,
                ..Algorithms::default()
            };
            let w = expand_all(
                &a,
                n,
                &Collective::ReduceScatter {
                    counts: BlockCounts::PerRank((1..=n as u64).collect()),
                    compute_ns: 0,
                },
            );
            check(&w);
            assert_eq!(msgs(&w), nn * (nn - 1), "{algo} n={n}");
        }
    }
}

#[test]
fn pairwise_alltoall_step_i_pairs_r_plus_i_and_r_minus_i() {
    let w = expand_all(
        &Algorithms::default(),
        4,
        &Collective::Alltoall { bytes: 1 },
    );
    let rank1: Vec<_> = w.rank_ops(1).map(|i| w.op(i)).collect();
    let t = coll_tag(0);
    let step = |to, from| {
        [
            OpKind::Send {
                to,
                tag: t,
                bytes: 1,
            },
            OpKind::Recv {
                from,
                tag: t,
                bytes: 1,
            },
            OpKind::Calc { ns: 0 },
        ]
    };
    let want: Vec<_> = [step(2, 0), step(3, 3), step(0, 2)].concat();
    assert_eq!(rank1, want);
}

// ---------------------------------------------------------------- own format

#[test]
fn own_format_example_reads_as_written() {
    let w = own(
        "# two ranks\nranks 2\n\nrank 0\n  compute 1.5us   # work\n  isend 1 1KiB tag 3 as a\n\
         irecv 1 64B as b\n  wait a\n  waitall b\n  barrier\n\
         rank 1:\n  recv 0 1KiB tag 3\n  send 0 64\n  barrier\n",
    );
    assert_eq!(w.nranks(), 2);
    let r0: Vec<_> = w.rank_ops(0).map(|i| w.op(i)).collect();
    assert_eq!(r0[0], OpKind::Calc { ns: 1500 });
    assert_eq!(
        r0[1],
        OpKind::Send {
            to: 1,
            tag: 3,
            bytes: 1024
        }
    );
    assert_eq!(
        r0[2],
        OpKind::Recv {
            from: 1,
            tag: 0,
            bytes: 64
        }
    );
    // `wait a` joins the isend only; `waitall b` the irecv.
    assert!(w.deps(3).any(|d| d == (1, DepKind::Requires)));
    assert!(!w.deps(3).any(|d| d == (2, DepKind::Requires)));
    assert!(w.deps(4).any(|d| d == (2, DepKind::Requires)));
    check(&w);
}

#[test]
fn own_format_collectives_and_any() {
    let text = "ranks 3\nrank 0\nbcast root 2 1MiB\nallreduce 1KB\nalltoall 8\nallgather 8\n\
                gather root 1 8\nscatter root 0 8\nreduce root 0 8\nreducescatter 8\nbarrier\n\
                recv any 1 tag any\n";
    let mut all = String::from(text);
    for r in 1..3 {
        all.push_str(&format!(
            "rank {r}\nbcast root 2 1MiB\nallreduce 1KB\nalltoall 8\nallgather 8\n\
             gather root 1 8\nscatter root 0 8\nreduce root 0 8\nreducescatter 8\nbarrier\n\
             send 0 1 tag {r}\n"
        ));
    }
    let w = own(&all);
    let anys = w
        .ops()
        .iter()
        .filter(|o| {
            matches!(
                o,
                OpKind::Recv {
                    from: ANY,
                    tag: ANY,
                    ..
                }
            )
        })
        .count();
    assert_eq!(anys, 1);
    // Collective messages carry reserved tags numbered per call.
    assert!(w
        .ops()
        .iter()
        .any(|o| matches!(o, OpKind::Send { tag, .. } if *tag == coll_tag(8))));
}

#[test]
fn own_format_errors_name_line_column_and_token() {
    let cases: &[(&str, &str)] = &[
        ("compute 1us\n", "t.trace:1:1: a trace starts with `ranks N` (at `compute`)"),
        ("ranks 2\nrank 0\nsend 2 8\n", "t.trace:3:6: rank 2 is outside 0..2 (at `2`)"),
        (
            "ranks 2\nrank 0\nsend 1 9223372036854775808\n",
            "t.trace:3:8: size is larger than 2^48 = 281474976710656 bytes (at \
             `9223372036854775808`)",
        ),
        (
            "ranks 2\nrank 0\n  isend 1 8 tag 2147483648\n",
            "t.trace:3:17: tags must be below 2^31 (higher tags are reserved for collectives) \
             (at `2147483648`)",
        ),
        (
            "ranks 2\nrank 0\ncompute 5 us\n",
            "t.trace:3:11: unexpected word after `compute`'s arguments (at `us`)",
        ),
        (
            "ranks 2\nrank 0\ncompute 5\n",
            "t.trace:3:9: expected a duration: a number with a unit ns, us, ms or s (at `5`)",
        ),
        ("ranks 2\nrank 0\nsend 1\n", "t.trace:3:7: expected a size at the end of the line"),
        (
            "ranks 2\nrank 0\nwait r1\n",
            "t.trace:3:6: no outstanding request has this name (at `r1`)",
        ),
        (
            "ranks 2\nrank 0\nisend 1 8 as r\nisend 1 8 as r\n",
            "t.trace:4:14: a request of this name is still outstanding (wait for it first) (at `r`)",
        ),
        ("ranks 2\nsend 1 8\n", "t.trace:2:1: operation outside a rank block (start one with `rank R`) (at `send`)"),
        (
            "ranks 2\nrank 0\nbarrier\nrank 1\n",
            "t.trace:4:6: rank 1 calls collectives differently from rank 0 (0 calls against 1, \
             or other kinds, roots or sizes); every rank must call the same collectives in the \
             same order (at `1`)",
        ),
        (
            "ranks 2\nrank 0\nbarrier\n",
            "t.trace:4:1: rank 1 has no block, but rank 0 calls 1 collectives; every rank must \
             call the same collectives",
        ),
        ("ranks 2\nrank 0\nrank 0\n", "t.trace:3:6: rank 0 is defined twice (at `0`)"),
        (
            "ranks 2\nrank 0\nbcast 0 8\n",
            "t.trace:3:7: expected `root R` (as in `bcast root 0 1KiB`) (at `0`)",
        ),
        ("ranks 99999999999\n", "t.trace:1:7: the number of ranks must be 1 to 2^24 = 16777216 (at `99999999999`)"),
        ("ranks 2\nrank 0\n  sned 1 8\n", "t.trace:3:3: unknown operation (expected compute, send, recv, isend, irecv, wait, waitall, comm, barrier, bcast, reduce, allreduce, alltoall, allgather, gather, scatter, reducescatter, scan, exscan, or a collective's nonblocking form such as iallreduce) (at `sned`)"),
        // Columns count characters, not bytes.
        ("ranks 2\nrank 0 # é\ncompute 1µs\n", "t.trace:3:9: expected a duration: a number with a unit ns, us, ms or s (at `1µs`)"),
    ];
    for (text, want) in cases {
        assert_eq!(&own_err(text), want, "input: {text:?}");
    }
    let e = parse_str("ranks 2\nrank 0\nsé 1 8", "t", TraceFormat::Own, &opts()).unwrap_err();
    assert_eq!((e.line, e.column, e.token.as_str()), (3, 1, "sé"));
}

// ------------------------------------------- own format: communicators, nonblocking collectives

/// Every operation of rank `r`, in order.
fn ops_of(w: &Workload, r: u32) -> Vec<OpKind> {
    w.rank_ops(r).map(|i| w.op(i)).collect()
}

/// The same program on every rank of `n`, with `{r}` replaced by the rank.
fn same_everywhere(n: u32, head: &str, body: &str) -> String {
    let mut t = format!("ranks {n}\n{head}");
    for r in 0..n {
        t += &format!("rank {r}\n{}", body.replace("{r}", &r.to_string()));
    }
    t
}

const EVERY_COLLECTIVE: &str = "allreduce 1KiB{on}\nbcast root 1 64KiB{on}\nreduce root 2 8{on}\n\
     gather root 3 16{on}\nscatter root 0 16{on}\nallgather 24{on}\nalltoall 40{on}\n\
     reducescatter 8{on}\nbarrier{on}\nscan 96{on}\nexscan 32{on}\n";

#[test]
fn a_group_of_every_rank_in_another_order_gives_the_worlds_messages_permuted() {
    // Group rank i is world rank perm[i]: the group's expansion must be the world's with every
    // rank renamed i -> perm[i] and the world's tags replaced by the group's, op for op.
    let perm = [2u32, 0, 3, 1, 4];
    for algos in [
        "",
        "allreduce=ring,bcast=linear,reduce=linear,gather=linear,scatter=linear,allgather=ring,\
         alltoall=linear,reducescatter=pairwise",
    ] {
        let o = ParseOptions {
            algorithms: Algorithms::parse_list(algos).unwrap(),
            ..ParseOptions::default()
        };
        let world = parse_str(
            &same_everywhere(5, "", &EVERY_COLLECTIVE.replace("{on}", "")),
            "w",
            TraceFormat::Own,
            &o,
        )
        .unwrap();
        let group = parse_str(
            &same_everywhere(
                5,
                "comm p 2 0 3 1 4\n",
                &EVERY_COLLECTIVE.replace("{on}", " on p"),
            ),
            "g",
            TraceFormat::Own,
            &o,
        )
        .unwrap();
        check(&group);
        let retag = |t: u32| group_coll_tag(0, u64::from(t - coll_tag(0)));
        let mut total = 0;
        for (i, &r) in perm.iter().enumerate() {
            let want: Vec<OpKind> = ops_of(&world, i as u32)
                .into_iter()
                .map(|op| match op {
                    OpKind::Send { to, tag, bytes } => OpKind::Send {
                        to: perm[to as usize],
                        tag: retag(tag),
                        bytes,
                    },
                    OpKind::Recv { from, tag, bytes } => OpKind::Recv {
                        from: perm[from as usize],
                        tag: retag(tag),
                        bytes,
                    },
                    c => c,
                })
                .collect();
            let got = ops_of(&group, r);
            assert_eq!(got, want, "{algos}: world rank {r} (group rank {i})");
            // The dependencies are the same too (local indices, so unchanged).
            let d = |w: &Workload, q: u32| -> Vec<Vec<(usize, DepKind)>> {
                let base = w.rank_ops(q).start;
                w.rank_ops(q)
                    .map(|k| w.deps(k).map(|(j, kind)| (j - base, kind)).collect())
                    .collect()
            };
            assert_eq!(d(&group, r), d(&world, i as u32), "{algos}: rank {r}");
            total += got.len();
        }
        assert_eq!(total, world.len());
        assert!(msgs(&group) > 40, "{algos}: {} messages", msgs(&group));
    }
}

#[test]
fn an_even_odd_split_of_four_ranks_gives_exactly_the_expected_messages() {
    let text = same_everywhere(
        4,
        "comm even 0 2\ncomm odd 1 3\n",
        "allreduce 8B on {g}\nbarrier\nbcast root 1 64B on {g}\n",
    );
    let text = text
        .split("rank ")
        .enumerate()
        .map(|(i, part)| {
            // Ranks 0 and 2 use `even`, 1 and 3 `odd`.
            let g = if i == 0 || (i - 1) % 2 == 0 {
                "even"
            } else {
                "odd"
            };
            part.replace("{g}", g)
        })
        .collect::<Vec<_>>()
        .join("rank ");
    let w = own(&text);
    check(&w);
    let (e0, e1) = (group_coll_tag(0, 0), group_coll_tag(0, 1));
    let (o0, o1) = (group_coll_tag(1, 0), group_coll_tag(1, 1));
    let b = coll_tag(0);
    let sends = |r: u32| -> Vec<(u32, u32, u64)> {
        ops_of(&w, r)
            .into_iter()
            .filter_map(|op| match op {
                OpKind::Send { to, tag, bytes } => Some((to, tag, bytes)),
                _ => None,
            })
            .collect()
    };
    let recvs = |r: u32| -> Vec<(u32, u32, u64)> {
        ops_of(&w, r)
            .into_iter()
            .filter_map(|op| match op {
                OpKind::Recv { from, tag, bytes } => Some((from, tag, bytes)),
                _ => None,
            })
            .collect()
    };
    // A 2-rank recursive-doubling allreduce is one exchange; the world barrier of 4 ranks is
    // 2 dissemination rounds (to r+1, r+2); the broadcast's root is group rank 1 (world 2 in
    // `even`, 3 in `odd`), sending to group rank 0.
    assert_eq!(sends(0), vec![(2, e0, 8), (1, b, 0), (2, b, 0)]);
    assert_eq!(
        recvs(0),
        vec![(2, e0, 8), (3, b, 0), (2, b, 0), (2, e1, 64)]
    );
    assert_eq!(sends(1), vec![(3, o0, 8), (2, b, 0), (3, b, 0)]);
    assert_eq!(
        recvs(1),
        vec![(3, o0, 8), (0, b, 0), (3, b, 0), (3, o1, 64)]
    );
    assert_eq!(
        sends(2),
        vec![(0, e0, 8), (3, b, 0), (0, b, 0), (0, e1, 64)]
    );
    assert_eq!(recvs(2), vec![(0, e0, 8), (1, b, 0), (0, b, 0)]);
    assert_eq!(
        sends(3),
        vec![(1, o0, 8), (0, b, 0), (1, b, 0), (1, o1, 64)]
    );
    assert_eq!(recvs(3), vec![(1, o0, 8), (2, b, 0), (1, b, 0)]);
    assert_eq!(msgs(&w), 4 + 8 + 2);
}

#[test]
fn groups_defined_after_a_block_and_single_rank_groups() {
    // `solo` is defined after rank 0's block: rank 0 is its only member and calls nothing on
    // it, rank 1 is no member. A group of one rank expands into no messages.
    let w = own(
        "ranks 2\ncomm pair 1 0\nrank 0\nallreduce 8 on pair\ncomm solo 0\n\
         rank 1\nallreduce 8 on pair\n",
    );
    check(&w);
    assert_eq!(msgs(&w), 2);
    let w = own("ranks 3\ncomm me 1\nrank 1\nbarrier on me\nscan 8 on me\niallreduce 8 on me as x\nwait x\n");
    assert_eq!(msgs(&w), 0);
    // Only the wait's join point: no work.
    assert!(ops_of(&w, 1).iter().all(|o| *o == OpKind::Calc { ns: 0 }));
}

#[test]
fn scan_and_exscan_on_a_group_chain_through_its_members_in_rank_order() {
    let w = own(&same_everywhere(
        4,
        "comm rev 3 2 1 0\n",
        "scan 1KiB on rev\nexscan 8 on rev\nscan 16\n",
    ));
    check(&w);
    let t = |k| group_coll_tag(0, k);
    // Group rank i is world 3 - i: the chain runs 3 -> 2 -> 1 -> 0; the world scan 0 -> 1 -> 2 -> 3.
    assert_eq!(
        ops_of(&w, 3),
        vec![
            OpKind::Send {
                to: 2,
                tag: t(0),
                bytes: 1024
            },
            OpKind::Send {
                to: 2,
                tag: t(1),
                bytes: 8
            },
            OpKind::Recv {
                from: 2,
                tag: coll_tag(0),
                bytes: 16
            },
        ]
    );
    assert_eq!(
        ops_of(&w, 1),
        vec![
            OpKind::Recv {
                from: 2,
                tag: t(0),
                bytes: 1024
            },
            OpKind::Send {
                to: 0,
                tag: t(0),
                bytes: 1024
            },
            OpKind::Recv {
                from: 2,
                tag: t(1),
                bytes: 8
            },
            OpKind::Send {
                to: 0,
                tag: t(1),
                bytes: 8
            },
            OpKind::Recv {
                from: 0,
                tag: coll_tag(0),
                bytes: 16
            },
            OpKind::Send {
                to: 2,
                tag: coll_tag(0),
                bytes: 16
            },
        ]
    );
    assert_eq!(msgs(&w), 9);
}

#[test]
fn a_nonblocking_collective_starts_at_its_call_and_is_joined_by_its_wait() {
    let w = own(
        "ranks 2\nrank 0\niallreduce 8B as r\ncompute 10us\nwait r\nbarrier\n\
         rank 1\niallreduce 8B as r\nwait r\nbarrier\n",
    );
    check(&w);
    let t = coll_tag(0);
    let s = |to, tag, bytes| OpKind::Send { to, tag, bytes };
    let r = |from, tag, bytes| OpKind::Recv { from, tag, bytes };
    let z = OpKind::Calc { ns: 0 };
    assert_eq!(
        ops_of(&w, 0),
        vec![
            s(1, t, 8),
            r(1, t, 8),
            z,
            OpKind::Calc { ns: 10_000 },
            z,
            s(1, coll_tag(1), 0),
            r(1, coll_tag(1), 0),
            z,
        ]
    );
    let deps = |i: usize| {
        let mut d: Vec<_> = w.deps(i).collect();
        d.sort_by_key(|x| x.0);
        d
    };
    // The compute needs only the call to have started (the allreduce's send), not its end.
    assert_eq!(deps(3), vec![(0, DepKind::IRequires)]);
    // The wait joins the compute and the allreduce's own join point.
    assert_eq!(
        deps(4),
        vec![(2, DepKind::Requires), (3, DepKind::Requires)]
    );
    // The barrier after it waits for the wait.
    assert_eq!(deps(5), vec![(4, DepKind::Requires)]);
    // The overlap shows in the prediction: a blocking allreduce then the compute takes the
    // allreduce's time longer than the nonblocking one, which hides it behind the compute.
    let blocking = own(
        "ranks 2\nrank 0\nallreduce 8B\ncompute 10us\nbarrier\nrank 1\nallreduce 8B\nbarrier\n",
    );
    let alone = own("ranks 2\nrank 0\ncompute 10us\nbarrier\nrank 1\nbarrier\n");
    let (tb, tn, ta) = (
        predicted_us(&blocking),
        predicted_us(&w),
        predicted_us(&alone),
    );
    eprintln!("blocking {tb:?} nonblocking {tn:?} compute alone {ta:?}");
    for m in 0..2 {
        assert!(
            tb[m] > tn[m],
            "model {m}: blocking {tb:?} nonblocking {tn:?}"
        );
    }
    // The contention model's exchange hides entirely behind the 10 us; LogGP charges the
    // send and receive overheads on the CPU, which the compute occupies (LogGOPSim's rule).
    assert!(
        (tn[0] - ta[0]).abs() < 1e-6,
        "the 8-byte exchange hides behind 10 us: {tn:?} against {ta:?}"
    );
}

#[test]
fn every_nonblocking_form_on_a_group_expands_like_its_blocking_form() {
    // The same messages as the blocking forms (tags per group and call), each call joined by a
    // waitall at the end; the calls overlap one another, and still complete.
    let blocking = own(&same_everywhere(
        4,
        "comm g 3 1 0 2\n",
        &EVERY_COLLECTIVE.replace("{on}", " on g"),
    ));
    let i_forms: String = EVERY_COLLECTIVE
        .lines()
        .enumerate()
        .map(|(k, l)| format!("i{} as c{k}\n", l.replace("{on}", " on g")))
        .collect::<String>()
        + "waitall\n";
    let nb = own(&same_everywhere(4, "comm g 3 1 0 2\n", &i_forms));
    check(&nb);
    let sr = |w: &Workload| {
        let s = shape(w);
        messages(&s)
    };
    assert_eq!(sr(&nb), sr(&blocking));
    assert_eq!(msgs(&nb), msgs(&blocking));
    // Named waits in another order than the calls work as well.
    let named: String = (0..11).rev().map(|k| format!("wait c{k}\n")).collect();
    let nb2 = own(&same_everywhere(
        4,
        "comm g 3 1 0 2\n",
        &i_forms.replace("waitall\n", &named),
    ));
    check(&nb2);
    assert_eq!(sr(&nb2), sr(&blocking));
}

#[test]
fn group_and_nonblocking_errors_name_line_column_and_token() {
    let cases: &[(&str, &str)] = &[
        (
            "ranks 4\ncomm row 0 4\n",
            "t.trace:2:12: rank 4 is outside 0..4 (at `4`)",
        ),
        (
            "ranks 4\ncomm row 0 2 1 2\n",
            "t.trace:2:16: rank 2 is listed twice in communicator `row` (at `2`)",
        ),
        (
            "ranks 4\ncomm row 0 1\ncomm row 2 3\n",
            "t.trace:3:6: communicator `row` is defined twice (at `row`)",
        ),
        (
            "ranks 4\ncomm 1row 0 1\n",
            "t.trace:2:6: a communicator name is letters, digits and `_`, not starting with a \
             digit (at `1row`)",
        ),
        (
            "ranks 4\ncomm row\n",
            "t.trace:2:9: expected the communicator's world ranks at the end of the line",
        ),
        (
            "ranks 4\nrank 0\nallreduce 8 on row\ncomm row 0 1\n",
            "t.trace:3:16: no communicator has this name (define it with `comm NAME RANK…` \
             before its first use) (at `row`)",
        ),
        (
            "ranks 4\ncomm row 0 1\nrank 2\nallreduce 8 on row\n",
            "t.trace:4:16: rank 2 is not a member of communicator `row` (at `row`)",
        ),
        (
            "ranks 4\ncomm row 0 1\nrank 0\nbcast root 2 8 on row\n",
            "t.trace:4:12: root is outside communicator `row`'s ranks 0..2 (at `2`)",
        ),
        (
            "ranks 4\ncomm row 0 1\nrank 0\nallreduce 8 on\n",
            "t.trace:4:15: expected a communicator name at the end of the line",
        ),
        (
            "ranks 4\ncomm row 0 1\nrank 0\nallreduce 8 on row on row\n",
            "t.trace:4:20: `on` is given twice (at `on`)",
        ),
        (
            "ranks 4\ncomm row 0 1\nrank 0\nallreduce 8 on row as r\n",
            "t.trace:4:20: unexpected word after `allreduce`'s arguments (at `as`)",
        ),
        (
            "ranks 2\nrank 0\niallreduce 8 as r\niallreduce 8 as r\n",
            "t.trace:4:17: a request of this name is still outstanding (wait for it first) (at `r`)",
        ),
        (
            "ranks 2\nrank 0\nibarrier as 9r\n",
            "t.trace:3:13: a request name is letters, digits and `_`, not starting with a digit \
             (at `9r`)",
        ),
        (
            "ranks 4\ncomm row 0 1\nrank 0\nallreduce 8 on row\nrank 1\nallreduce 16 on row\n",
            "t.trace:5:6: rank 1 calls collectives on `row` differently from rank 0 (1 calls \
             against 1, or other kinds, roots or sizes); every member of a communicator must \
             call its collectives in the same order (at `1`)",
        ),
        (
            // A nonblocking call does not match a blocking one.
            "ranks 2\ncomm all 0 1\nrank 0\nallreduce 8 on all\nrank 1\niallreduce 8 on all\n",
            "t.trace:5:6: rank 1 calls collectives on `all` differently from rank 0 (1 calls \
             against 1, or other kinds, roots or sizes); every member of a communicator must \
             call its collectives in the same order (at `1`)",
        ),
        (
            // Rank 0 finished before `row` was defined: it called nothing on it.
            "ranks 4\nrank 0\ncomm row 0 1\nrank 1\nbarrier on row\nrank 2\nrank 3\n",
            "t.trace:4:6: rank 1 calls collectives on `row` differently from rank 0 (1 calls \
             against 0, or other kinds, roots or sizes); every member of a communicator must \
             call its collectives in the same order (at `1`)",
        ),
        (
            "ranks 4\ncomm row 2 3\nrank 3\nbarrier on row\n",
            "t.trace:5:1: rank 2 has no block, but rank 3 calls 1 collectives on `row`; every \
             member of a communicator must call its collectives",
        ),
        (
            "ranks 2\nrank 0\niscan\n",
            "t.trace:3:6: expected a size at the end of the line",
        ),
    ];
    for (text, want) in cases {
        assert_eq!(&own_err(text), want, "input: {text:?}");
    }
    let many: String = (0..=16384).map(|k| format!("comm c{k} 0\n")).collect();
    assert_eq!(
        own_err(&format!("ranks 1\n{many}")),
        "t.trace:16386:6: more than 16384 communicators (each needs its own tags) (at `c16384`)"
    );
    // Groups do not disturb the world's check: rank 1 lacks the world barrier.
    assert_eq!(
        own_err("ranks 2\ncomm a 0 1\nrank 0\nbarrier\nbarrier on a\nrank 1\nbarrier on a\n"),
        "t.trace:6:6: rank 1 calls collectives differently from rank 0 (0 calls against 1, or \
         other kinds, roots or sizes); every rank must call the same collectives in the same \
         order (at `1`)"
    );
}

#[test]
fn goal_errors_name_line_column_and_token() {
    assert_eq!(
        goal_err("num_ranks 2\nrank 0 {\n  l1: send 18446744073709551616b to 1\n}\n"),
        "t.goal:3:12: size is larger than 281474976710656 bytes (at `18446744073709551616b`)"
    );
    assert_eq!(
        goal_err("num_ranks 2\nrank 0 {\n  l1: send 8b to 1 tag -1\n}\n"),
        "t.goal:3:24: a send with any tag is not modelled (LogGOPSim matches it with every \
         receive; commperf only matches wildcard receives) (at `-1`)"
    );
    assert_eq!(
        goal_err("num_ranks 2\nrank 0 {\n  l1: sned 8b to 1\n}\n"),
        "t.goal:3:7: expected `send`, `recv` or `calc` (at `sned`)"
    );
    assert_eq!(
        goal_err("num_ranks 2\nrank 1 {\n}\nrank 1 { }"),
        "t.goal:4:6: rank 1 is defined twice (at `1`)"
    );
    assert_eq!(
        goal_err("rank 0 {}"),
        "t.goal:1:1: expected `num_ranks` (at `rank`)"
    );
    assert_eq!(
        goal_err("num_ranks 2\nrank 0 {\n  l1: calc 5\n  l1 requires l1\n}"),
        "t.goal:4:15: an operation cannot depend on itself (at `l1`)"
    );
    assert_eq!(
        goal_err("num_ranks 2\nrank 0 {\n  l1: calc 5\n  l1 needs l1\n}"),
        "t.goal:4:6: expected `requires` or `irequires` (at `needs`)"
    );
}

// ---------------------------------------------------------------- generators

#[test]
fn generated_patterns_parse_back_and_run() {
    let cases: &[(Pattern, u32, usize)] = &[
        (Pattern::Incast, 5, 4),
        (Pattern::AllToAll, 5, 20),
        (Pattern::RingShift, 5, 5),
        (Pattern::Halo2D { x: 3, y: 2 }, 6, 24),
        (Pattern::Halo2D { x: 2, y: 2 }, 4, 16),
        (Pattern::PairwiseAllToAll, 5, 20),
    ];
    for &(p, n, per_iter) in cases {
        let text = own_pattern_string(p, n, 4096, 3).unwrap();
        let w = parse_str(&text, &p.to_string(), TraceFormat::Own, &opts())
            .unwrap_or_else(|e| panic!("{p}: {e}\n{text}"));
        assert_eq!(w.nranks(), n);
        assert_eq!(w.counts().0, 3 * per_iter, "{p}");
        assert_eq!(w.counts().1, 3 * per_iter, "{p}");
        check(&w);
    }
    assert!(own_pattern_string(Pattern::Halo2D { x: 3, y: 3 }, 8, 1, 1).is_err());
}

/// A workload as comparable data: per operation its rank, kind (collective tags reduced to the
/// call number, as GOAL writes them) and dependencies.
type Shape = Vec<(u32, OpKind, Vec<(usize, DepKind)>)>;

fn shape(w: &Workload) -> Shape {
    let untag = |t: u32| t & !commperf_predict::collectives::COLL_TAG_BASE;
    (0..w.nranks())
        .flat_map(|r| w.rank_ops(r).map(move |i| (r, i)))
        .map(|(r, i)| {
            let op = match w.op(i) {
                OpKind::Send { to, tag, bytes } => OpKind::Send {
                    to,
                    tag: untag(tag),
                    bytes,
                },
                OpKind::Recv { from, tag, bytes } => OpKind::Recv {
                    from,
                    tag: untag(tag),
                    bytes,
                },
                c => c,
            };
            (r, op, w.deps(i).collect())
        })
        .collect()
}

/// (rank, peer, tag, bytes) of a send or receive.
type Msg = (u32, u32, u32, u64);

/// Sends and receives as sorted lists.
fn messages(s: &Shape) -> (Vec<Msg>, Vec<Msg>) {
    let (mut sends, mut recvs) = (Vec::new(), Vec::new());
    for &(r, op, _) in s {
        match op {
            OpKind::Send { to, tag, bytes } | OpKind::Ssend { to, tag, bytes } => {
                sends.push((r, to, tag, bytes))
            }
            OpKind::Recv { from, tag, bytes } => recvs.push((r, from, tag, bytes)),
            OpKind::Calc { .. } | OpKind::Rma { .. } => {}
        }
    }
    sends.sort_unstable();
    recvs.sort_unstable();
    (sends, recvs)
}

/// Predicted total time on a crossbar with the default network, by both models.
fn predicted_us(w: &Workload) -> [f64; 2] {
    use commperf_predict::engine::{predict, Inputs, LogGp, Model, PredictConfig};
    use commperf_predict::tcom::Tcom;
    use commperf_predict::topology::{self, RankMap};
    let net = topology::build(&"crossbar".parse().unwrap(), w.nranks(), 1).unwrap();
    let map = RankMap::identity(w.nranks(), &*net).unwrap();
    let tcom = Tcom::default_ethernet();
    let loggp = LogGp::from_profile(None, &tcom);
    let inputs = Inputs {
        workload: w,
        network: &*net,
        rank_map: &map,
        tcom: &tcom,
        loggp: Some(&loggp),
        trace_name: "t",
        trace_format: "t",
        profile_name: "t",
    };
    [Model::Contention, Model::LogGp].map(|model| {
        let cfg = PredictConfig {
            model,
            ..PredictConfig::default()
        };
        predict(&inputs, &cfg).unwrap().prediction.total_us
    })
}

#[test]
fn every_pattern_written_as_goal_predicts_what_its_own_format_trace_predicts() {
    use commperf_predict::gen::goal_pattern;
    let patterns = [
        (Pattern::Bcast, vec![2, 5, 8, 13]),
        (Pattern::Incast, vec![2, 5]),
        (Pattern::AllToAll, vec![2, 5]),
        (Pattern::RingShift, vec![2, 5]),
        (Pattern::Halo2D { x: 3, y: 2 }, vec![6]),
        (Pattern::Halo2D { x: 2, y: 2 }, vec![4]),
        (Pattern::PairwiseAllToAll, vec![2, 5, 6]),
    ];
    // Eager and rendezvous messages (the default threshold is 64 KiB), one and three
    // repetitions.
    for (p, ranks) in patterns {
        for n in ranks {
            for (bytes, iters) in [(64, 1), (64, 3), (1 << 20, 1), (1 << 20, 3)] {
                let what = format!("{p}, {n} ranks, {bytes} B, {iters} iterations");
                let own_text = own_pattern_string(p, n, bytes, iters).unwrap();
                let mut v = Vec::new();
                goal_pattern(p, n, bytes, iters, &Algorithms::default(), &mut v).unwrap();
                let goal_text = String::from_utf8(v).unwrap();
                let own_w = own(&own_text);
                let goal_w = parse_str(&goal_text, "g.goal", TraceFormat::Goal, &opts())
                    .unwrap_or_else(|e| panic!("{what}: {e}\n{goal_text}"));
                check(&goal_w);
                let (a, b) = (shape(&own_w), shape(&goal_w));
                assert_eq!(messages(&a), messages(&b), "{what}: the same messages");
                if p == Pattern::Bcast {
                    // LogGOPSim's layout: the children's sends require only the receive, and
                    // no zero-time join ends a repetition.
                    assert!(n < 4 || goal_text.contains("l2 requires l1\n"), "{what}");
                    assert!(!goal_text.contains("calc"), "{what}");
                } else {
                    assert_eq!(a, b, "{what}: the same operations and dependencies");
                }
                let (tp, tg) = (predicted_us(&own_w), predicted_us(&goal_w));
                assert!(tp[0] > 0.0 && tp[1] > 0.0, "{what}: {tp:?}");
                assert_eq!(tp, tg, "{what}: contention and LogGP predictions");
            }
        }
    }
}

#[test]
fn own_and_simgrid_refuse_traces_that_expand_beyond_the_operation_limit() {
    assert_eq!(
        own_err("ranks 16777216\nrank 0\nalltoall 8\n"),
        "t.trace:3:1: the trace expands into more than 67108864 operations (at `alltoall`)"
    );
    assert_eq!(
        sg_err("0 send 16777215 0 8\n0 alltoall 8 8\n"),
        "t.txt:2:3: the trace expands into more than 67108864 operations (at `alltoall`)"
    );
}

/// The performance goal's input: a 2^20-rank binomial broadcast in GOAL (~3.1 M operations).
/// A timing, not a check: run with
/// `cargo test --release -p commperf-predict --test parsers -- --ignored --nocapture million`.
#[test]
#[ignore = "a timing, not a check: run by hand (`-- --ignored --nocapture million`)"]
fn million_rank_goal_broadcast_parse_time() {
    use std::time::Instant;
    let n = 1 << 20;
    let t = Instant::now();
    let mut v = Vec::with_capacity(110 << 20);
    goal_binomial_bcast(n, 1, &mut v).unwrap();
    let gen = t.elapsed();
    let text = String::from_utf8(v).unwrap();
    let t = Instant::now();
    let w = parse_str(&text, "bcast-1M.goal", TraceFormat::Goal, &opts()).unwrap();
    let parse = t.elapsed();
    let (s, r, c) = w.counts();
    eprintln!(
        "1M-rank GOAL broadcast: {} MB written in {:.3} s, parsed in {:.3} s: {} ops \
         ({s} sends, {r} recvs, {c} calcs)",
        text.len() / 1_000_000,
        gen.as_secs_f64(),
        parse.as_secs_f64(),
        w.len()
    );
    assert_eq!((s, r), (n as usize - 1, n as usize - 1));
}

#[test]
fn the_documented_example_parses() {
    // The grammar lives in the user guide's reference chapter on trace formats.
    let doc = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/src/reference/traces.md"),
    )
    .unwrap();
    let own_format = doc.find("## commperf's own format").unwrap();
    let start = own_format + doc[own_format..].find("```text\n").unwrap() + "```text\n".len();
    let end = start + doc[start..].find("```").unwrap();
    let w = own(&doc[start..end]);
    assert_eq!(w.nranks(), 3);
    // Two user messages and the 4 of a 3-rank recursive-doubling allreduce (the matcher and
    // executor here do not handle `any`).
    assert_eq!(w.counts().0, 6);
    assert_eq!(w.counts().1, 6);
    // The second example: communicators of a 2 x 2 grid, a nonblocking broadcast per column
    // (one message each) and an allreduce per row (one exchange each).
    let start = end + doc[end..].find("```text\n").unwrap() + "```text\n".len();
    let end = start + doc[start..].find("```").unwrap();
    assert!(doc[start..end].contains("comm row0"));
    let w = own(&doc[start..end]);
    check(&w);
    assert_eq!(msgs(&w), 2 + 4);
    let sends_of = |r: u32| {
        ops_of(&w, r)
            .into_iter()
            .filter(|o| matches!(o, OpKind::Send { .. }))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        sends_of(2),
        vec![
            OpKind::Send {
                to: 0,
                tag: group_coll_tag(2, 0),
                bytes: 4096
            },
            OpKind::Send {
                to: 3,
                tag: group_coll_tag(1, 0),
                bytes: 8
            },
        ]
    );
}

#[test]
fn the_documented_one_sided_example_parses_and_errors_name_the_word() {
    let doc = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/src/reference/traces.md"),
    )
    .unwrap();
    let at = doc.find("Example — one-sided").unwrap();
    let start = at + doc[at..].find("```text\n").unwrap() + "```text\n".len();
    let end = start + doc[start..].find("```").unwrap();
    let w = own(&doc[start..end]);
    check(&w);
    let rma = |target, out, back| OpKind::Rma { target, out, back };
    let r0: Vec<OpKind> = ops_of(&w, 0)
        .into_iter()
        .filter(|o| matches!(o, OpKind::Rma { .. }))
        .collect();
    assert_eq!(r0, [rma(1, 64, 0), rma(1, 0, 32), rma(1, 8, 8)]);
    // The target has no operation for them: its block is its compute and the barrier.
    assert!(ops_of(&w, 1)
        .iter()
        .all(|o| !matches!(o, OpKind::Rma { .. })));
    for (line, msg) in [
        ("put 1", "expected a size at the end of the line"),
        (
            "get 1 8B as",
            "expected a request name at the end of the line",
        ),
        ("fetch 1 8B tag 3", "unexpected word (expected `as NAME`)"),
        ("put 2 8B", "rank 2 is outside 0..2"),
        ("put 1 8B as 9x", "a request name is letters"),
    ] {
        let e = own_err(&format!("ranks 2\nrank 0\n  {line}\n"));
        assert!(e.contains(msg), "{line}: {e}");
    }
    let e = own_err("ranks 2\nrank 0\n  put 1 8B as p\n  get 1 8B as p\n");
    assert!(e.contains("still outstanding"), "{e}");
}

#[test]
fn own_format_synchronous_sends_are_read_as_such() {
    let w = own(
        "ranks 2\nrank 0\n  ssend 1 8B tag 3\n  issend 1 16B as q\n  send 1 4B\n  wait q\n\
         rank 1\n  recv 0 8B tag 3\n  recv 0 16B\n  recv 0 4B\n",
    );
    check(&w);
    let sends: Vec<OpKind> = ops_of(&w, 0)
        .into_iter()
        .filter(|o| !matches!(o, OpKind::Calc { .. }))
        .collect();
    assert_eq!(
        sends,
        [
            OpKind::Ssend {
                to: 1,
                tag: 3,
                bytes: 8
            },
            OpKind::Ssend {
                to: 1,
                tag: 0,
                bytes: 16
            },
            OpKind::Send {
                to: 1,
                tag: 0,
                bytes: 4
            },
        ]
    );
    // issend takes a request name; ssend, like send, does not.
    assert!(own_err("ranks 2\nrank 0\n  ssend 1 8B as q\n").contains("expected `tag T`"));
}
