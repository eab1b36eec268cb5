//! No archive makes the reader panic: seeded random archives (random records, nonblocking
//! collectives among them, communicators whose groups may be anything, references that may be
//! undefined, times that may go back) are converted, and what converts is parsed.

use commperf_otf2::model::{Archive, Comm, Location, Rec, Region};

/// SplitMix64: a small seeded generator, so a failure repeats.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    /// Mostly small values, sometimes anything.
    fn small(&mut self, n: u64) -> u64 {
        if self.below(20) == 0 {
            self.next()
        } else {
            self.below(n)
        }
    }
}

fn random_archive(g: &mut Rng) -> Archive {
    let n = 1 + g.below(4) as u32;
    let regions = (0..g.below(6))
        .map(|i| Region {
            name: if g.below(2) == 0 {
                format!("MPI_R{i}")
            } else {
                format!("user{i}")
            },
            role: 1,
            mpi: g.below(2) == 0,
        })
        .collect();
    // Mostly a world communicator first and ranks that are locations 0..n, as real archives
    // have, so that conversions get past the definitions; sometimes anything.
    let mut comms: Vec<Comm> = Vec::new();
    if g.below(10) > 0 {
        comms.push(Comm {
            name: "MPI_COMM_WORLD".into(),
            members: (0..n).collect(),
        });
    }
    comms.extend((0..g.below(3)).map(|_| {
        Comm {
            name: "c".into(),
            members: (0..g.below(u64::from(n) + 2))
                .map(|_| g.small(u64::from(n) + 1) as u32)
                .collect(),
        }
    }));
    let mpi_ranks: Vec<u64> = if g.below(10) > 0 {
        (0..u64::from(n)).collect()
    } else {
        (0..n).map(|_| g.small(u64::from(n) + 1)).collect()
    };
    // Sometimes a location that is no rank's (a thread), which must not communicate.
    let extra = u32::from(g.below(10) == 0);
    let locations = (0..n + extra)
        .map(|id| {
            let mut t = 0u64;
            let events = (0..g.below(30))
                .map(|_| {
                    t = if g.below(10) == 0 {
                        g.small(1000)
                    } else {
                        t + g.below(100)
                    };
                    let (peer, comm, tag, bytes, req) = (
                        g.small(u64::from(n)) as u32,
                        if g.below(5) > 0 { 0 } else { g.small(3) as u32 },
                        g.small(4) as u32,
                        g.small(100),
                        g.small(4),
                    );
                    match g.below(60) {
                        0..=9 => Rec::Enter {
                            t,
                            region: g.small(7) as u32,
                        },
                        10..=19 => Rec::Leave {
                            t,
                            region: g.small(7) as u32,
                        },
                        20..=22 => Rec::Send {
                            t,
                            peer,
                            comm,
                            tag,
                            bytes,
                        },
                        23..=25 => Rec::Recv {
                            t,
                            peer,
                            comm,
                            tag,
                            bytes,
                        },
                        26..=28 => Rec::Isend {
                            t,
                            peer,
                            comm,
                            tag,
                            bytes,
                            req,
                        },
                        29 if g.below(3) == 0 => Rec::Irecv {
                            t,
                            peer,
                            comm,
                            tag,
                            bytes,
                            req,
                        },
                        30..=32 => Rec::IrecvRequest { t, req },
                        33..=34 => Rec::IsendComplete { t, req },
                        35 if g.below(3) == 0 => Rec::RequestCancelled { t, req },
                        36 if g.below(3) == 0 => Rec::CollEnd {
                            t,
                            op: g.small(18) as u8,
                            comm,
                            root: (g.below(3) > 0).then(|| g.small(u64::from(n) + 1) as u32),
                            sent: bytes,
                            received: g.small(100),
                        },
                        37 => Rec::Measurement {
                            t,
                            on: g.below(2) == 0,
                        },
                        38 => Rec::CollBegin { t },
                        39..=40 => Rec::NbcRequest { t, req },
                        41..=42 => Rec::NbcComplete {
                            t,
                            op: g.small(18) as u8,
                            comm,
                            root: (g.below(3) > 0).then(|| g.small(u64::from(n) + 1) as u32),
                            sent: bytes,
                            received: g.small(100),
                            req,
                        },
                        _ => Rec::Enter { t, region: 0 },
                    }
                })
                .collect();
            Location {
                id: u64::from(id),
                name: String::new(),
                host: String::new(),
                clock_offsets: Vec::new(),
                events,
            }
        })
        .collect();
    let mut a = Archive {
        timer_resolution: [0, 1_000_000_000, 1_000, 3_000_000_000][g.below(4) as usize],
        regions,
        comms,
        windows: Vec::new(),
        mpi_ranks,
        locations,
    };
    if g.below(2) == 0 {
        aligned_collectives(g, &mut a);
    }
    a
}

/// Appends to every location the same collectives (random operation, communicator, root,
/// blocking or not), as ranks that agree record them, so that conversions get past the
/// alignment checks; then sometimes breaks one record.
fn aligned_collectives(g: &mut Rng, a: &mut Archive) {
    // Often a communicator over every rank in another order (a reordered duplicate), whose
    // name may or may not be one the own format takes.
    let n = a.mpi_ranks.len() as u64;
    let mut sub = None;
    if g.below(2) == 0 {
        let mut members: Vec<u32> = (0..n as u32).collect();
        for i in (1..members.len()).rev() {
            members.swap(i, g.below(i as u64 + 1) as usize);
        }
        let name = ["sub", "MPI_COMM_WORLD.dup", "c"][g.below(3) as usize];
        a.comms.push(Comm {
            name: name.into(),
            members,
        });
        sub = Some(a.comms.len() as u32 - 1);
    }
    let calls: Vec<(u8, u32, Option<u32>, bool)> = (0..1 + g.below(4))
        .map(|_| {
            (
                g.small(18) as u8,
                match sub {
                    Some(c) if g.below(2) == 0 => c,
                    _ => g.small(a.comms.len() as u64 + 1) as u32,
                },
                (g.below(3) > 0).then(|| g.small(3) as u32),
                g.below(2) == 0,
            )
        })
        .collect();
    for l in &mut a.locations {
        let mut t = l.events.iter().map(|e| e.time()).max().unwrap_or(0);
        let mut open = Vec::new();
        for (k, &(op, comm, root, nonblocking)) in calls.iter().enumerate() {
            t += 1 + g.below(50);
            let (sent, received) = (g.small(100), g.small(100));
            if nonblocking {
                let req = 1000 + k as u64;
                l.events.push(Rec::NbcRequest { t, req });
                open.push(Rec::NbcComplete {
                    t: 0,
                    op,
                    comm,
                    root,
                    sent,
                    received,
                    req,
                });
            } else {
                l.events.push(Rec::CollBegin { t });
                l.events.push(Rec::CollEnd {
                    t: t + 1,
                    op,
                    comm,
                    root,
                    sent,
                    received,
                });
            }
        }
        // Completed in any order, some in one call.
        while !open.is_empty() {
            let mut c = open.swap_remove(g.below(open.len() as u64) as usize);
            t += 1 + g.below(50);
            *c.time_mut() = t;
            l.events.push(c);
        }
    }
    if g.below(3) == 0 {
        let l = g.below(a.locations.len() as u64) as usize;
        let ev = &mut a.locations[l].events;
        if !ev.is_empty() {
            ev.remove(g.below(ev.len() as u64) as usize);
        }
    }
}

#[test]
fn random_archives_convert_or_are_refused_never_panic() {
    let mut g = Rng(29);
    let (mut converted, mut parsed, mut nonblocking, mut on_comm) = (0, 0, 0, 0);
    for _ in 0..20_000 {
        let a = random_archive(&mut g);
        if let Ok(text) = commperf_otf2::to_own::own_text(&a) {
            converted += 1;
            nonblocking += usize::from(text.contains(" as n"));
            on_comm += usize::from(text.contains("\ncomm "));
            if commperf_predict::parse::parse_str(
                &text,
                "fuzz",
                commperf_predict::parse::TraceFormat::Own,
                &Default::default(),
            )
            .is_ok()
            {
                parsed += 1;
            }
        }
    }
    // Both paths were exercised, not only the refusals, and the conversions include
    // nonblocking collectives and collectives on communicators of their own.
    assert!(
        converted > 500 && parsed > 300 && nonblocking > 40 && on_comm > 40,
        "{converted} converted, {parsed} parsed, {nonblocking} with nonblocking collectives, \
         {on_comm} with communicators"
    );
}
