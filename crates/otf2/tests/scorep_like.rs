//! An archive shaped as Score-P writes them, not as commperf does: location ids that are not the
//! ranks, user-function regions around and between MPI calls, an OpenMP thread's location, a
//! sub-communicator whose ranks are not the world's, a cancelled receive, measurement switched
//! off outside any MPI call. Its own-format text is checked line by line, then through libotf2
//! (written and read back) when the build has it.

use commperf_otf2::model::{op, Archive, Comm, Location, Rec, Region};

fn region(name: &str, mpi: bool) -> Region {
    Region {
        name: name.into(),
        role: 1,
        mpi,
    }
}

fn loc(id: u64, events: Vec<Rec>) -> Location {
    Location {
        id,
        name: format!("thread {id}"),
        host: "n".into(),
        clock_offsets: Vec::new(),
        events,
    }
}

const MAIN: u32 = 0;
const INIT: u32 = 1;
const SEND: u32 = 2;
const RECV: u32 = 3;
const FIN: u32 = 4;
const ALLRED: u32 = 5;
const IRECV: u32 = 6;
const WAITALL: u32 = 7;
const FOO: u32 = 8;
const ISEND: u32 = 9;

fn call(region: u32, t0: u64, t1: u64, inside: &[Rec]) -> Vec<Rec> {
    let mut v = vec![Rec::Enter { t: t0, region }];
    v.extend_from_slice(inside);
    v.push(Rec::Leave { t: t1, region });
    v
}

fn allreduce(t0: u64, t1: u64) -> Vec<Rec> {
    call(
        ALLRED,
        t0,
        t1,
        &[
            Rec::CollBegin { t: t0 },
            Rec::CollEnd {
                t: t1,
                op: op::ALLREDUCE,
                comm: 0,
                root: None,
                sent: 16,
                received: 16,
            },
        ],
    )
}

fn archive() -> Archive {
    // Rank 0: user regions around the calls; an Isend on the split communicator to its rank 1
    // (world rank 2); measurement off between 1100 and 2000, outside any call.
    let mut r0 = vec![Rec::Enter { t: 0, region: MAIN }];
    r0.extend(call(INIT, 10, 100, &[]));
    r0.extend(call(FOO, 150, 400, &[]));
    r0.extend(call(
        ISEND,
        500,
        510,
        &[Rec::Isend {
            t: 500,
            peer: 1,
            comm: 1,
            tag: 5,
            bytes: 64,
            req: 7,
        }],
    ));
    r0.extend(call(
        SEND,
        600,
        650,
        &[Rec::Send {
            t: 600,
            peer: 1,
            comm: 0,
            tag: 3,
            bytes: 8,
        }],
    ));
    r0.extend(call(
        WAITALL,
        700,
        800,
        &[Rec::IsendComplete { t: 800, req: 7 }],
    ));
    r0.extend(allreduce(900, 1000));
    r0.push(Rec::Measurement { t: 1100, on: false });
    r0.push(Rec::Measurement { t: 2000, on: true });
    r0.extend(call(FIN, 2500, 2600, &[]));
    r0.push(Rec::Leave {
        t: 2700,
        region: MAIN,
    });

    let mut r1 = call(INIT, 0, 50, &[]);
    r1.extend(call(
        RECV,
        300,
        700,
        &[Rec::Recv {
            t: 700,
            peer: 0,
            comm: 0,
            tag: 3,
            bytes: 8,
        }],
    ));
    r1.extend(allreduce(900, 1000));
    r1.extend(call(FIN, 1200, 1300, &[]));

    // Rank 2: two receives posted, one completed (from split rank 0 = world 0), one cancelled.
    let mut r2 = call(INIT, 0, 80, &[]);
    r2.extend(call(
        IRECV,
        100,
        110,
        &[Rec::IrecvRequest { t: 100, req: 7 }],
    ));
    r2.extend(call(
        IRECV,
        120,
        130,
        &[Rec::IrecvRequest { t: 120, req: 8 }],
    ));
    r2.extend(call(
        WAITALL,
        200,
        900,
        &[
            Rec::Irecv {
                t: 900,
                peer: 0,
                comm: 1,
                tag: 5,
                bytes: 64,
                req: 7,
            },
            Rec::RequestCancelled { t: 900, req: 8 },
        ],
    ));
    r2.extend(allreduce(950, 1000));
    r2.extend(call(FIN, 1200, 1300, &[]));

    Archive {
        timer_resolution: 1_000_000_000,
        regions: vec![
            region("main", false),
            region("MPI_Init", true),
            region("MPI_Send", true),
            region("MPI_Recv", true),
            region("MPI_Finalize", true),
            region("MPI_Allreduce", true),
            region("MPI_Irecv", true),
            region("MPI_Waitall", true),
            region("foo", false),
            region("MPI_Isend", true),
        ],
        comms: vec![
            Comm {
                name: "MPI_COMM_WORLD".into(),
                members: vec![0, 1, 2],
            },
            Comm {
                name: "MPI_COMM_WORLD.split".into(),
                members: vec![0, 2],
            },
        ],
        windows: Vec::new(),
        mpi_ranks: vec![10, 11, 12],
        locations: vec![
            loc(10, r0),
            loc(11, r1),
            loc(12, r2),
            // An OpenMP thread of rank 0: computation only.
            loc(
                99,
                vec![
                    Rec::Enter {
                        t: 200,
                        region: FOO,
                    },
                    Rec::Leave {
                        t: 300,
                        region: FOO,
                    },
                ],
            ),
        ],
    }
}

const WANT: &str = "ranks 3

rank 0
  compute 400ns
  isend 2 64B tag 4 as q7
  compute 90ns
  send 1 8B tag 3
  compute 50ns
  wait q7
  compute 100ns
  allreduce 16B
  compute 100ns
  compute 500ns

rank 1
  compute 250ns
  recv 0 8B tag 3
  compute 200ns
  allreduce 16B
  compute 200ns

rank 2
  compute 20ns
  irecv 0 64B tag 4 as q7
  compute 10ns
  compute 70ns
  wait q7
  compute 50ns
  allreduce 16B
  compute 200ns
";

fn body(t: &str) -> String {
    t.lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| format!("{l}\n"))
        .collect()
}

#[test]
fn a_score_p_shaped_archive_reads_as_its_program() {
    let text = commperf_otf2::to_own::own_text(&archive()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(body(&text), WANT, "{text}");
    // And it is a workload: the message on the split communicator pairs up across ranks.
    let w = commperf_predict::parse::parse_str(
        &text,
        "scorep",
        commperf_predict::parse::TraceFormat::Own,
        &Default::default(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(w.nranks(), 3);
}

#[test]
fn communication_the_reader_cannot_place_is_refused_by_name() {
    // The OpenMP thread sends.
    let mut a = archive();
    a.locations[3].events.insert(
        1,
        Rec::Send {
            t: 250,
            peer: 1,
            comm: 0,
            tag: 0,
            bytes: 8,
        },
    );
    let e = commperf_otf2::to_own::own_text(&a).unwrap_err();
    assert!(
        e.contains("location 99") && e.contains("MpiSend") && e.contains("not an MPI rank's"),
        "{e}"
    );
    // A communicator the archive does not define.
    let mut a = archive();
    if let Rec::Send { comm, .. } = &mut a.locations[0].events[9] {
        *comm = 9;
    } else {
        panic!("event 9 of rank 0 is its MpiSend");
    }
    let e = commperf_otf2::to_own::own_text(&a).unwrap_err();
    assert!(e.contains("rank 0: MpiSend on communicator #9"), "{e}");
    // A collective operation predict has none for (20: one of OpenSHMEM's, OTF2 3.0).
    let mut a = archive();
    for l in &mut a.locations {
        for r in &mut l.events {
            if let Rec::CollEnd { op: o, .. } = r {
                *o = 20;
            }
        }
    }
    let e = commperf_otf2::to_own::own_text(&a).unwrap_err();
    assert!(
        e.contains("rank 0: OTF2 collective operation 20") && e.contains("no such collective"),
        "{e}"
    );
}

#[test]
#[cfg_attr(
    not(commperf_has_otf2),
    ignore = "needs libotf2 and otf2-print (apt-get install libotf2-trace-dev otf2-tools)"
)]
fn written_by_libotf2_it_reads_the_same() {
    assert!(
        commperf_otf2::available(),
        "this build has no libotf2 (apt-get install libotf2-trace-dev otf2-tools, then rebuild)"
    );
    let dir = std::env::temp_dir().join(format!("commperf-otf2-scorep-{}", std::process::id()));
    let anchor =
        commperf_otf2::write_archive(&archive(), &dir, "scorep").unwrap_or_else(|e| panic!("{e}"));
    let back = commperf_otf2::read_archive(&anchor, false).unwrap_or_else(|e| panic!("{e}"));
    let text = commperf_otf2::to_own::own_text(&back).unwrap_or_else(|e| panic!("{e}"));
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(back.mpi_ranks, vec![10, 11, 12]);
    assert_eq!(body(&text), WANT, "{text}");
}
