//! A small synthetic monitored run (3 ranks: every point-to-point form the interposer records, a
//! sub-communicator with collectives on it, a nonblocking collective completed with a message
//! by one Waitall, MPI_Scan, MPI_Pcontrol, collectives kept and left out, an unmatched send,
//! clocks with offsets and drift) written to OTF2 and read back: the workload must be exactly the one
//! its own-format trace gives, with and without libotf2 in between; `otf2-print` must read the
//! archive and count the records written.

use commperf_otf2::model::{op, Rec};
use commperf_pmpi::format::{ClockSync, CommDef, Footer, Header, FORMAT_NAME};
use commperf_pmpi::{Call, Event, RankData, Run};
use commperf_predict::parse::{parse_str, ParseOptions, TraceFormat};
use commperf_testkit::TempDir;
use std::path::PathBuf;

const N: u32 = 3;

/// One rank's records, built in call order on its own clock.
struct B {
    evs: Vec<Event>,
    t: u64,
    r: u32,
}

impl B {
    fn ev(call: Call, peer: i32, tag: i32, comm: u32, bytes: u64, t: [u64; 4]) -> Event {
        Event {
            call,
            fortran: false,
            any_source: false,
            persistent: false,
            partitioned: false,
            synchronous: false,
            peer,
            tag,
            comm,
            bytes,
            post_enter: t[0],
            post_exit: t[1],
            done_enter: t[2],
            done_exit: t[3],
            thread: 0,
        }
    }
    /// Computes a while (a different amount per rank and step), then the call takes `d` ns.
    fn gap(&mut self) {
        self.t += 1_000 + 137 * u64::from(self.r) + (self.evs.len() as u64 * 53) % 700;
    }
    fn blocking(&mut self, call: Call, peer: i32, tag: i32, comm: u32, bytes: u64) {
        self.gap();
        let (a, b) = (self.t, self.t + 400);
        self.evs
            .push(Self::ev(call, peer, tag, comm, bytes, [a, b, a, b]));
        self.t = b;
    }
    /// A nonblocking post; its completion times are set by `complete`.
    fn post(&mut self, call: Call, peer: i32, tag: i32, comm: u32, bytes: u64) -> usize {
        self.gap();
        let (a, b) = (self.t, self.t + 50);
        self.evs
            .push(Self::ev(call, peer, tag, comm, bytes, [a, b, 0, 0]));
        self.t = b;
        self.evs.len() - 1
    }
    fn complete(&mut self, idx: &[usize]) {
        self.gap();
        let (a, b) = (self.t, self.t + 900);
        for &i in idx {
            self.evs[i].done_enter = a;
            self.evs[i].done_exit = b;
        }
        self.t = b;
    }
    fn sendrecv(&mut self, to: i32, from: i32, tag: i32, bytes: u64) {
        self.gap();
        let (a, b) = (self.t, self.t + 3_000);
        self.evs.push(Self::ev(
            Call::SendrecvSend,
            to,
            tag,
            0,
            bytes,
            [a, b, a, b],
        ));
        self.evs.push(Self::ev(
            Call::SendrecvRecv,
            from,
            tag,
            0,
            bytes,
            [a, b, a, b],
        ));
        self.t = b;
    }
}

/// The run; rank r's clock reads `r * 1_000_000 + 7` behind rank 0's at MPI_Init, and 30 ns
/// more at MPI_Finalize (drift).
fn run() -> Run {
    let ranks = (0..N)
        .map(|r| {
            let start = 5_000_000 + u64::from(r) * 333;
            let mut b = B {
                evs: Vec::new(),
                t: start + 2_000,
                r,
            };
            let right = ((r + 1) % N) as i32;
            let left = ((r + N - 1) % N) as i32;
            // Isend / Recv / Wait.
            let s = b.post(Call::Isend, right, 1, 0, 100);
            b.blocking(Call::Recv, left, 1, 0, 100);
            b.complete(&[s]);
            // Irecv / Send / Waitall of two (an Issend too).
            let q = b.post(Call::Irecv, left, 2, 0, 1000);
            let q2 = b.post(Call::Issend, right, 6, 0, 10);
            b.blocking(Call::Send, right, 2, 0, 1000);
            b.complete(&[q, q2]);
            // The peer's Issend is received by a blocking receive.
            b.blocking(Call::Recv, left, 6, 0, 10);
            // A persistent MPI_Ssend_init's start and a persistent receive's, one Waitall.
            let pr = b.post(Call::StartRecv, left, 7, 0, 12);
            let ps = b.post(Call::StartSend, right, 7, 0, 12);
            b.evs[ps].synchronous = true;
            b.complete(&[pr, ps]);
            // Sendrecv.
            b.sendrecv(right, left, 3, 50_000);
            // A sub-communicator (id 5), world peers recorded.
            let s = b.post(Call::Isend, right, 0, 5, 16);
            b.blocking(Call::Recv, left, 0, 5, 16);
            b.complete(&[s]);
            // A probe before a receive.
            b.blocking(Call::Probe, left, 4, 0, 0);
            let s = b.post(Call::Isend, right, 4, 0, 64);
            b.blocking(Call::Recv, left, 4, 0, 64);
            b.complete(&[s]);
            // Monitoring stopped, then started again: the time between is not compute.
            b.blocking(Call::Pcontrol, -1, 0, 0, 0);
            b.t += 1_000_000;
            b.blocking(Call::Pcontrol, -1, 1, 0, 0);
            // Collectives, MPI_Scan and an Allreduce on the sub-communicator among them.
            b.blocking(Call::Bcast, 1, 0, 0, 800);
            b.blocking(Call::Allreduce, -1, 0, 0, 8);
            b.blocking(Call::Scan, -1, 0, 0, 8);
            b.blocking(Call::Alltoall, -1, 0, 0, 64 * u64::from(N));
            b.blocking(Call::Allreduce, -1, 0, 5, 8);
            // An Ibcast from world rank 1 on the sub-communicator (whose rank 2 that is), and
            // a message, both completed by one Waitall.
            let q = b.post(Call::Ibcast, 1, 0, 5, 24);
            let s = b.post(Call::Isend, right, 7, 0, 32);
            b.blocking(Call::Recv, left, 7, 0, 32);
            b.complete(&[q, s]);
            // A barrier on a communicator the run does not know: left out.
            b.blocking(Call::Barrier, -1, 0, 6, 0);
            b.blocking(Call::Gather, 0, 0, 0, 64 + u64::from(r));
            b.blocking(Call::ReduceScatter, -1, 0, 0, 32 * u64::from(N));
            b.blocking(Call::Scatterv, 2, 0, 0, 40);
            b.blocking(Call::Barrier, -1, 0, 0, 0);
            // Rank 0 sends once more to rank 1, which never receives it: left out.
            if r == 0 {
                b.blocking(Call::Send, 1, 9, 0, 8);
            }
            b.gap();
            let end = b.t + 10_000;
            let off0 = -(i64::from(r) * 1_000_000 + 7);
            RankData {
                path: PathBuf::from(format!("rank-{r}.cpmpi")),
                header: Header {
                    format: FORMAT_NAME.into(),
                    version: 2,
                    rank: r,
                    size: N,
                    pid: 100 + r,
                    host: if r < 2 { "node-a" } else { "node-b" }.into(),
                    mpi_flavour: "openmpi".into(),
                    mpi_library: "synthetic".into(),
                    program_tag: String::new(),
                    clock: "test".into(),
                    start_ns: start,
                    empty_wrappers: false,
                },
                clocks: vec![
                    ClockSync {
                        phase: 0,
                        local_ns: start + 1_500,
                        offset_ns: off0,
                        err_ns: 20,
                        rtt_ns: 40,
                    },
                    ClockSync {
                        phase: 1,
                        local_ns: end - 5_000,
                        offset_ns: off0 - 30 * i64::from(r),
                        err_ns: 20,
                        rtt_ns: 40,
                    },
                ],
                events: b.evs,
                drops: 0,
                // Communicator 5: world ranks 2, 0, 1 in its rank order.
                comms: vec![CommDef {
                    id: 5,
                    inter: false,
                    world: vec![2, 0, 1],
                }],
                functions: Vec::new(),
                sites: Default::default(),
                neighbors: Vec::new(),
                neighbor_counts: Vec::new(),
                footer: Some(Footer {
                    events: 0,
                    drops: 0,
                    pending_requests: 0,
                    end_ns: end,
                }),
            }
        })
        .collect();
    Run::new(PathBuf::from("synthetic"), ranks)
}

fn own_workload(run: &Run) -> commperf_predict::workload::Workload {
    let text = commperf_pmpi::to_trace(run).text;
    parse_str(&text, "own", TraceFormat::Own, &ParseOptions::default())
        .unwrap_or_else(|e| panic!("{e}\n{text}"))
}

#[test]
fn the_archive_model_reads_as_the_own_trace_without_libotf2() {
    let run = run();
    let own = commperf_pmpi::to_trace(&run);
    // What the own trace left out, so that the test covers each rule.
    assert_eq!(own.stats.unmatched_left_out, 1);
    assert_eq!(own.stats.unsupported_left_out, 0);
    // The persistent synchronous start is an `issend` (and reads back as one from OTF2: the
    // lines are compared one for one below).
    assert_eq!(
        own.text.matches("issend ").count(),
        2 * N as usize,
        "{}",
        own.text
    );
    assert_eq!(own.text.matches(" 12B tag 7 as q").count(), 2 * N as usize);
    assert_eq!(own.stats.subcomm_collectives_left_out, u64::from(N));
    assert_eq!(own.stats.subcomm_messages, u64::from(N));
    assert_eq!(own.stats.collectives, 8);
    assert_eq!(own.stats.subcomm_collectives, 2 * u64::from(N));
    assert_eq!(own.stats.communicators, 1);
    assert_eq!(own.stats.nonblocking_collectives, u64::from(N));
    assert!(own.stats.stopped_ns >= u64::from(N) * 1_000_000);
    assert!(
        own.text.contains("\ncomm c5 2 0 1\n") && own.text.contains("ibcast root 2 24B on c5 as q"),
        "{}",
        own.text
    );

    let (a, stats) = commperf_otf2::archive_of(&run);
    assert_eq!(stats.replay, own.stats);
    // The sub-communicator is OTF2 comm 1, over world ranks in its rank order.
    assert_eq!(a.comms.len(), 2);
    assert_eq!(
        (a.comms[1].name.as_str(), &a.comms[1].members[..]),
        ("c5", &[2, 0, 1][..])
    );
    // Rank 1 is the Ibcast's root (comm rank 2): it sends its 24 B and receives none.
    let nbc: Vec<Rec> = a.locations[1]
        .events
        .iter()
        .filter(|e| matches!(e, Rec::NbcRequest { .. } | Rec::NbcComplete { .. }))
        .copied()
        .collect();
    assert!(
        matches!(
            nbc[..],
            [
                Rec::NbcRequest { req: q, .. },
                Rec::NbcComplete {
                    op: op::BCAST,
                    comm: 1,
                    root: Some(2),
                    sent: 24,
                    received: 0,
                    req,
                    ..
                }
            ] if q == req
        ),
        "{nbc:?}"
    );
    // The sizes written: alltoall's whole send (3 x 64), a scatterv root's n blocks.
    let ends: Vec<Rec> = a.locations[2]
        .events
        .iter()
        .filter(|e| matches!(e, Rec::CollEnd { .. }))
        .copied()
        .collect();
    // 8 on the world, the Allreduce on comm 1.
    assert_eq!(ends.len(), 9);
    assert!(ends.iter().any(|e| matches!(
        e,
        Rec::CollEnd {
            op: op::ALLREDUCE,
            comm: 1,
            ..
        }
    )));
    assert!(ends.iter().any(|e| matches!(
        e,
        Rec::CollEnd {
            op: op::ALLTOALL,
            sent: 192,
            received: 192,
            root: None,
            ..
        }
    )));
    assert!(ends.iter().any(|e| matches!(
        e,
        Rec::CollEnd {
            op: op::SCATTERV,
            sent: 120,
            received: 40,
            root: Some(2),
            ..
        }
    )));
    let text = commperf_otf2::to_own::own_text(&a).unwrap_or_else(|e| panic!("{e}"));
    // Per-rank sizes averaged as the own trace does: gather blocks 64, 65, 66.
    assert!(text.contains("gather root 0 65B"), "{text}");
    assert!(text.contains("alltoall 64B"), "{text}");
    assert!(text.contains("reducescatter 32B"), "{text}");
    assert!(text.contains("scan 8B"), "{text}");
    assert!(text.contains("\ncomm c5 2 0 1\n"), "{text}");
    assert!(text.contains("allreduce 8B on c5"), "{text}");
    assert!(text.contains("ibcast root 2 24B on c5 as n"), "{text}");
    let back = parse_str(&text, "otf2", TraceFormat::Own, &ParseOptions::default())
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(
        back,
        own_workload(&run),
        "OTF2 text:\n{text}\nown:\n{}",
        own.text
    );
    // The own trace's lines, compute included, come back one for one (comments aside).
    let body = |t: &str| -> Vec<String> {
        t.lines()
            .map(str::trim)
            .filter(|l| !l.starts_with('#') && !l.is_empty())
            .map(|l| {
                // Sendrecv requests are named by record in the own trace, by count here;
                // nonblocking collectives' `n<request>` apart from point-to-point's.
                l.split_whitespace()
                    .map(|w| {
                        if w.starts_with('q') || w.starts_with("sr") || w.starts_with('n') {
                            "R"
                        } else {
                            w
                        }
                    })
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect()
    };
    assert_eq!(body(&text), body(&own.text));
}

#[test]
fn refusals_name_what_cannot_be_modelled() {
    let run = run();
    let (mut a, _) = commperf_otf2::archive_of(&run);
    // A collective on a communicator that is not the world.
    a.comms.push(commperf_otf2::model::Comm {
        name: "row comm".into(),
        members: vec![0, 1],
    });
    let sub = a.comms.len() as u32 - 1;
    for l in &mut a.locations {
        for e in &mut l.events {
            if let Rec::CollEnd {
                op: op::BCAST,
                comm,
                ..
            } = e
            {
                *comm = sub;
            }
        }
    }
    let e = commperf_otf2::to_own::own_text(&a).unwrap_err();
    assert!(
        e.contains("rank 2: MPI_Bcast") && e.contains("`row comm`, of which it is no member"),
        "{e}"
    );
    // A nonblocking collective never completed.
    let (mut a, _) = commperf_otf2::archive_of(&run);
    a.locations[1]
        .events
        .retain(|e| !matches!(e, Rec::NbcComplete { .. }));
    let e = commperf_otf2::to_own::own_text(&a).unwrap_err();
    assert!(
        e.contains("rank 1: nonblocking collective request") && e.contains("never completed"),
        "{e}"
    );
    // Members of the sub-communicator disagreeing on a collective's being nonblocking.
    let (mut a, _) = commperf_otf2::archive_of(&run);
    let ev = &mut a.locations[0].events;
    let req = ev
        .iter()
        .position(|e| matches!(e, Rec::NbcRequest { .. }))
        .unwrap();
    let done = ev
        .iter()
        .position(|e| matches!(e, Rec::NbcComplete { .. }))
        .unwrap();
    if let Rec::NbcComplete {
        t,
        op,
        comm,
        root,
        sent,
        received,
        ..
    } = ev[done]
    {
        ev.remove(done);
        ev[req] = Rec::CollEnd {
            t,
            op,
            comm,
            root,
            sent,
            received,
        };
    }
    let e = commperf_otf2::to_own::own_text(&a).unwrap_err();
    assert!(
        e.contains("collective number 2 on communicator `c5` differs")
            && e.contains("MPI_Bcast root 2")
            && e.contains("nonblocking MPI_Bcast root 2"),
        "{e}"
    );
    // A one-sided transfer on a window the archive does not define.
    let (mut a, _) = commperf_otf2::archive_of(&run);
    a.locations[1].events.insert(
        3,
        Rec::RmaPut {
            t: 1,
            win: 5,
            peer: 0,
            bytes: 8,
            req: 1,
        },
    );
    let e = commperf_otf2::to_own::own_text(&a).unwrap_err();
    assert!(
        e.contains("rank 1: one-sided transfer on window #5, which the archive does not define"),
        "{e}"
    );
    // Ranks disagreeing on a collective.
    let (mut a, _) = commperf_otf2::archive_of(&run);
    for e in &mut a.locations[2].events {
        if let Rec::CollEnd {
            root,
            op: op::BCAST,
            ..
        } = e
        {
            *root = Some(0);
        }
    }
    let e = commperf_otf2::to_own::own_text(&a).unwrap_err();
    assert!(
        e.contains("collective number 1 on MPI_COMM_WORLD differs")
            && e.contains("rank 0 calls MPI_Bcast root 1")
            && e.contains("rank 2 calls MPI_Bcast root 0"),
        "{e}"
    );
}

/// Fails naming the package when this build has no libotf2 (only reached when the build
/// found otf2-config and otf2-print, or under COMMPERF_REQUIRE_MPI).
fn need_libotf2(test: &str) {
    assert!(
        commperf_otf2::available(),
        "{test}: this build has no libotf2 (apt-get install libotf2-trace-dev otf2-tools, then \
         rebuild)"
    );
}

#[test]
#[cfg_attr(
    not(commperf_has_otf2),
    ignore = "needs libotf2 and otf2-print (apt-get install libotf2-trace-dev otf2-tools)"
)]
fn written_and_read_back_through_libotf2_the_workload_is_the_same() {
    need_libotf2("written_and_read_back_through_libotf2_the_workload_is_the_same");
    let run = run();
    let dir = TempDir::new("otf2-roundtrip");
    let (anchor, stats) = commperf_otf2::write_run(&run, &dir).expect("write");
    assert_eq!(anchor, dir.join("traces.otf2"));
    // Written twice: the second replaces the first.
    commperf_otf2::write_run(&run, &dir).expect("write again");
    let (a, _) = commperf_otf2::archive_of(&run);
    let back = commperf_otf2::read_archive(&anchor, false).expect("read");
    assert_eq!(back.mpi_ranks, a.mpi_ranks);
    assert_eq!(back.comms, a.comms);
    assert_eq!(back.regions, a.regions);
    assert_eq!(back.timer_resolution, 1_000_000_000);
    for (x, y) in back.locations.iter().zip(&a.locations) {
        assert_eq!((x.id, &x.name), (y.id, &y.name));
        assert_eq!(x.events, y.events, "location {}", x.id);
    }
    assert_eq!(
        back.locations
            .iter()
            .map(|l| l.events.len() as u64)
            .sum::<u64>(),
        stats.events
    );
    let w = commperf_otf2::read_workload(&anchor, &ParseOptions::default()).expect("workload");
    assert_eq!(w, own_workload(&run));

    // With the clock offsets applied, libotf2 gives rank 0's clock, as RankData::to_global.
    let global = commperf_otf2::read_archive(&anchor, true).expect("read, offsets applied");
    for (l, rd) in global.locations.iter().zip(&run.ranks) {
        let local = &a.locations[l.id as usize].events;
        for (g, e) in l.events.iter().zip(local) {
            let want = rd.to_global(e.time());
            assert!(
                (g.time() as f64 - want).abs() <= 1.0,
                "rank {}: {} on the global clock, want {want}",
                l.id,
                g.time()
            );
        }
        if l.id == 2 {
            // Rank 2's clock is 2 ms behind: its global times are 2 ms less than its own.
            assert!(local[0].time() - l.events[0].time() >= 2_000_000);
        }
    }
}

#[test]
#[cfg_attr(
    not(commperf_has_otf2),
    ignore = "needs libotf2 and otf2-print (apt-get install libotf2-trace-dev otf2-tools)"
)]
fn otf2_print_reads_the_archive() {
    need_libotf2("otf2_print_reads_the_archive");
    let run = run();
    let dir = TempDir::new("otf2-print");
    let (anchor, _) = commperf_otf2::write_run(&run, &dir).expect("write");
    let o = std::process::Command::new("otf2-print")
        .arg(&anchor)
        .output()
        .expect("run otf2-print");
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "otf2-print failed: {err}\n{out}");
    assert!(err.trim().is_empty(), "otf2-print complained: {err}");
    let (a, _) = commperf_otf2::archive_of(&run);
    let count = |kind: &str| {
        out.lines()
            .filter(|l| l.split_whitespace().next() == Some(kind))
            .count()
    };
    let want = |f: fn(&Rec) -> bool| {
        a.locations
            .iter()
            .flat_map(|l| &l.events)
            .filter(|e| f(e))
            .count()
    };
    assert_eq!(count("ENTER"), want(|e| matches!(e, Rec::Enter { .. })));
    assert_eq!(count("LEAVE"), want(|e| matches!(e, Rec::Leave { .. })));
    // Per rank: 2 MPI_Send (the ring's and the Sendrecv half) on every rank and rank 0's
    // unmatched one left out; Isend 6 per rank (4 + the Issend + the persistent start),
    // Irecv 2 (1 + the persistent start).
    assert_eq!(count("MPI_SEND"), 2 * N as usize);
    assert_eq!(count("MPI_ISEND"), 6 * N as usize);
    assert_eq!(count("MPI_ISEND_COMPLETE"), 6 * N as usize);
    assert_eq!(count("MPI_IRECV_REQUEST"), 2 * N as usize);
    assert_eq!(count("MPI_IRECV"), 2 * N as usize);
    // Recv: the ring's 100 B, the Issend's, the Sendrecv half, the sub-communicator's, the
    // probed one, the one beside the Ibcast.
    assert_eq!(count("MPI_RECV"), 6 * N as usize);
    // 8 on the world and 1 on the sub-communicator; the one on an unknown one is left out.
    assert_eq!(count("MPI_COLLECTIVE_BEGIN"), 9 * N as usize);
    assert_eq!(count("MPI_COLLECTIVE_END"), 9 * N as usize);
    assert_eq!(count("NON_BLOCKING_COLLECTIVE_REQUEST"), N as usize);
    assert_eq!(count("NON_BLOCKING_COLLECTIVE_COMPLETE"), N as usize);
    assert_eq!(count("MEASUREMENT_ON_OFF"), 2 * N as usize);
    // The definitions name the regions and the world communicator.
    let defs = std::process::Command::new("otf2-print")
        .arg("-G")
        .arg(&anchor)
        .output()
        .expect("run otf2-print -G");
    let d = String::from_utf8_lossy(&defs.stdout);
    assert!(
        defs.status.success(),
        "{}",
        String::from_utf8_lossy(&defs.stderr)
    );
    for want in [
        "MPI_Sendrecv",
        "MPI_Alltoall",
        "MPI_Ibcast",
        "MPI_COMM_WORLD",
        "\"c5\"",
        "node-b",
    ] {
        assert!(d.contains(want), "{want} not in the definitions:\n{d}");
    }
}
