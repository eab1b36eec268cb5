//! An OTF2 archive ([`Archive`]) as a workload: converted into commperf's own trace text, which
//! predict's own-format reader turns into the [`Workload`], so that an OTF2 trace means exactly
//! what the own format means (one reader of that meaning, not two).
//!
//! Per MPI rank (the locations of the archive's MPI location group, rank r = member r):
//!
//! - the time between MPI regions (paradigm MPI, or a name starting `MPI_`; the outermost one
//!   when they nest) is `compute`, from the first MPI region's Leave on (MPI_Init's, in a
//!   Score-P trace); not while measurement was off (MeasurementOnOff: the gap up to the switch
//!   off counts, and counting starts again at the switch on); regions of other paradigms (user
//!   functions) are computation;
//! - MpiSend/MpiRecv become `send`/`recv`, except inside MPI_Sendrecv(_replace), whose two
//!   halves become `isend` + `irecv` + `waitall` (as the own trace of a monitored run writes
//!   them); MpiIsend and MpiIrecvRequest … MpiIrecv become `isend`/`irecv` at the post (the
//!   receive's peer, tag and size come from its MpiIrecv), and the completions one MPI call
//!   made become one `wait`/`waitall` at that call's end; a cancelled receive is left out;
//! - peers on communicators other than MPI_COMM_WORLD are mapped to world ranks through the
//!   communicator's group, and their (communicator, tag) pairs get tags above every world tag,
//!   as the own trace of a monitored run does;
//! - MpiCollectiveEnd on MPI_COMM_WORLD becomes the own format's collective of its family (the
//!   v-forms as the plain one), with the size the format means: each rank's record taken back
//!   ([`crate::from_run::sizes`]: the root's bytes sent for bcast, the bytes received for
//!   scatter, the bytes sent otherwise; per pair for alltoall, one rank's block for
//!   reduce_scatter), averaged over the ranks;
//!
//! and refused by name: a collective on another communicator, MPI_Scan/Exscan/Alltoallw,
//! ranks that disagree on their collectives, one-sided and nonblocking-collective records,
//! communication from a location that is not an MPI rank's. Other records carry no
//! communication and are ignored.

use crate::from_run::{family, rooted};
use crate::model::{op, Archive, Rec};
use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;

enum Slot {
    Line(String),
    /// An irecv posted (MpiIrecvRequest) whose peer, tag and size its MpiIrecv gives.
    Irecv,
    /// Collective number j of the rank.
    Coll(usize),
    Empty,
}

struct CollRec {
    family: &'static str,
    op: u8,
    root: Option<u32>,
    /// The rank's bytes as the own format counts them.
    bytes: u64,
}

/// Whether region `id` is MPI time.
fn is_mpi(a: &Archive, id: u32) -> bool {
    a.regions
        .get(id as usize)
        .is_some_and(|r| r.mpi || r.name.starts_with("MPI_"))
}

/// The own-format text of an archive, or why it cannot be replayed.
pub fn own_text(a: &Archive) -> Result<String, String> {
    let n = a.mpi_ranks.len() as u32;
    if n == 0 {
        return Err(
            "no MPI ranks: the archive defines no group of MPI locations (OTF2 group of type \
             COMM_LOCATIONS, paradigm MPI)"
                .into(),
        );
    }
    let world: Vec<bool> = a
        .comms
        .iter()
        .map(|c| c.members.iter().copied().eq(0..n))
        .collect();
    let comm_name = |c: u32| {
        a.comms
            .get(c as usize)
            .map_or_else(|| format!("#{c}"), |c| c.name.clone())
    };
    // Communication from a location that is no MPI rank's (a second thread) is not modelled.
    let ranks: BTreeSet<u64> = a.mpi_ranks.iter().copied().collect();
    for l in &a.locations {
        if !ranks.contains(&l.id) {
            if let Some(r) = l.events.iter().find(|r| {
                !matches!(
                    r,
                    Rec::Enter { .. } | Rec::Leave { .. } | Rec::Measurement { .. }
                )
            }) {
                return Err(format!(
                    "location {} ({}) is not an MPI rank's but records {} at t={}: \
                     communication from other threads is not modelled",
                    l.id,
                    l.name,
                    kind(r),
                    r.time()
                ));
            }
        }
    }

    // Tags of point-to-point on other communicators: above every world tag (trace.rs's rule).
    let mut max_world_tag: i64 = -1;
    let mut sub: BTreeSet<(u32, u32)> = BTreeSet::new();
    for r in 0..n {
        let Some(l) = a.rank_location(r) else {
            continue;
        };
        for rec in &l.events {
            if let Rec::Send { comm, tag, .. }
            | Rec::Isend { comm, tag, .. }
            | Rec::Recv { comm, tag, .. }
            | Rec::Irecv { comm, tag, .. } = *rec
            {
                match world.get(comm as usize) {
                    Some(true) => max_world_tag = max_world_tag.max(i64::from(tag)),
                    Some(false) => {
                        sub.insert((comm, tag));
                    }
                    None => {
                        return Err(format!(
                        "rank {r}: {} on communicator #{comm}, which the archive does not define",
                        kind(rec)
                    ))
                    }
                }
            }
        }
    }
    let sub_tag: HashMap<(u32, u32), i64> = sub
        .iter()
        .enumerate()
        .map(|(i, &k)| (k, max_world_tag + 1 + i as i64))
        .collect();
    // (world peer, tag) of a record's peer and tag on `comm`.
    let peer_tag = |r: u32, comm: u32, peer: u32, tag: u32| -> Result<(u32, i64), String> {
        let c = &a.comms[comm as usize];
        let p = *c.members.get(peer as usize).ok_or_else(|| {
            format!(
                "rank {r}: peer {peer} on communicator `{}` of {} ranks",
                c.name,
                c.members.len()
            )
        })?;
        let t = if world[comm as usize] {
            i64::from(tag)
        } else {
            sub_tag[&(comm, tag)]
        };
        Ok((p, t))
    };

    let ns = |ticks: u64| -> u64 {
        if a.timer_resolution == 1_000_000_000 || a.timer_resolution == 0 {
            ticks
        } else {
            (u128::from(ticks) * 1_000_000_000 / u128::from(a.timer_resolution)) as u64
        }
    };

    let mut blocks: Vec<(u32, Vec<Slot>)> = Vec::new();
    let mut colls: Vec<Vec<CollRec>> = Vec::new();
    for r in 0..n {
        let Some(l) = a.rank_location(r) else {
            continue;
        };
        let mut slots: Vec<Slot> = Vec::new();
        let mut mine: Vec<CollRec> = Vec::new();
        let mut pending_irecv: HashMap<u64, usize> = HashMap::new();
        let mut cursor: Option<u64> = None;
        let mut off = false;
        let mut depth = 0usize;
        let mut sendrecv = false;
        let mut completed: Vec<String> = Vec::new();
        let mut sr_names: Vec<String> = Vec::new();
        let mut sr_count = 0u64;
        // The end of one MPI call: its completions as one wait/waitall.
        let finish = |slots: &mut Vec<Slot>, completed: &mut Vec<String>, sr: &mut Vec<String>| {
            if !sr.is_empty() {
                slots.push(Slot::Line(format!("waitall {}", sr.join(" "))));
                sr.clear();
            }
            match completed.len() {
                0 => {}
                1 => slots.push(Slot::Line(format!("wait {}", completed[0]))),
                _ => slots.push(Slot::Line(format!("waitall {}", completed.join(" ")))),
            }
            completed.clear();
        };
        for rec in &l.events {
            match *rec {
                Rec::Enter { t, region } if is_mpi(a, region) => {
                    if depth == 0 {
                        if let Some(c) = cursor {
                            if !off && t > c {
                                slots.push(Slot::Line(format!("compute {}ns", ns(t - c))));
                            }
                        }
                        sendrecv = a.regions[region as usize].name.starts_with("MPI_Sendrecv");
                    }
                    depth += 1;
                }
                Rec::Leave { t, region } if is_mpi(a, region) => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        cursor = Some(cursor.map_or(t, |c| c.max(t)));
                        finish(&mut slots, &mut completed, &mut sr_names);
                        sendrecv = false;
                    }
                }
                Rec::Enter { .. } | Rec::Leave { .. } => {}
                Rec::Measurement { t, on } => {
                    // Outside MPI calls (Score-P writes it there) the time up to the switch is
                    // computation, and after it computation starts again from the switch on.
                    // commperf writes it inside MPI_Pcontrol, whose Enter and Leave already
                    // bound the gaps.
                    if let Some(c) = cursor {
                        if depth == 0 && !off && !on && t > c {
                            slots.push(Slot::Line(format!("compute {}ns", ns(t - c))));
                        }
                        cursor = Some(c.max(t));
                    }
                    off = !on;
                }
                Rec::Send {
                    peer,
                    comm,
                    tag,
                    bytes,
                    ..
                }
                | Rec::Recv {
                    peer,
                    comm,
                    tag,
                    bytes,
                    ..
                } => {
                    let (p, t) = peer_tag(r, comm, peer, tag)?;
                    let send = matches!(rec, Rec::Send { .. });
                    if sendrecv {
                        sr_count += 1;
                        let name = format!("sr{sr_count}");
                        let verb = if send { "isend" } else { "irecv" };
                        slots.push(Slot::Line(format!("{verb} {p} {bytes}B tag {t} as {name}")));
                        sr_names.push(name);
                    } else {
                        let verb = if send { "send" } else { "recv" };
                        slots.push(Slot::Line(format!("{verb} {p} {bytes}B tag {t}")));
                    }
                }
                Rec::Isend {
                    peer,
                    comm,
                    tag,
                    bytes,
                    req,
                    ..
                } => {
                    let (p, t) = peer_tag(r, comm, peer, tag)?;
                    slots.push(Slot::Line(format!("isend {p} {bytes}B tag {t} as q{req}")));
                }
                Rec::IsendComplete { req, .. } => completed.push(format!("q{req}")),
                Rec::IrecvRequest { req, .. } => {
                    pending_irecv.insert(req, slots.len());
                    slots.push(Slot::Irecv);
                }
                Rec::Irecv {
                    t: at,
                    peer,
                    comm,
                    tag,
                    bytes,
                    req,
                } => {
                    let (p, t) = peer_tag(r, comm, peer, tag)?;
                    let Some(i) = pending_irecv.remove(&req) else {
                        return Err(format!(
                            "rank {r}: MpiIrecv of request {req} at t={at} without its \
                             MpiIrecvRequest"
                        ));
                    };
                    slots[i] = Slot::Line(format!("irecv {p} {bytes}B tag {t} as q{req}"));
                    completed.push(format!("q{req}"));
                }
                Rec::RequestCancelled { t, req } => match pending_irecv.remove(&req) {
                    Some(i) => slots[i] = Slot::Empty,
                    None => {
                        return Err(format!(
                            "rank {r}: request {req} cancelled at t={t} after it was sent: a \
                             cancelled send is not modelled"
                        ))
                    }
                },
                Rec::CollBegin { .. } => {}
                Rec::CollEnd {
                    t,
                    op: o,
                    comm,
                    root,
                    sent,
                    received,
                } => {
                    let name = op::name(o);
                    let Some(f) = family(o) else {
                        return Err(format!(
                            "rank {r}: {name} at t={t}: predict has no such collective"
                        ));
                    };
                    match world.get(comm as usize) {
                        Some(true) => {}
                        _ => {
                            return Err(format!(
                                "rank {r}: {name} at t={t} on communicator `{}`: predict's \
                                 collectives are over MPI_COMM_WORLD only",
                                comm_name(comm)
                            ))
                        }
                    }
                    let root = if rooted(f) {
                        match root {
                            Some(x) if x < n => Some(x),
                            _ => {
                                return Err(format!(
                                    "rank {r}: {name} at t={t} without a valid root"
                                ))
                            }
                        }
                    } else {
                        None
                    };
                    let raw = match o {
                        op::BCAST if root == Some(r) => sent,
                        op::BCAST | op::SCATTER | op::SCATTERV => received,
                        _ => sent,
                    };
                    let bytes = match f {
                        "alltoall" | "reducescatter" => raw / u64::from(n),
                        _ => raw,
                    };
                    slots.push(Slot::Coll(mine.len()));
                    mine.push(CollRec {
                        family: f,
                        op: o,
                        root,
                        bytes,
                    });
                }
                Rec::Unmodelled { t, what } => {
                    return Err(format!(
                        "rank {r}: {what} at t={t}: predict does not model it"
                    ))
                }
            }
            if depth == 0 && !matches!(rec, Rec::Leave { .. }) {
                // A communication record outside any MPI region is a call of its own.
                finish(&mut slots, &mut completed, &mut sr_names);
            }
        }
        blocks.push((r, slots));
        colls.push(mine);
    }

    // Every rank must call the same collectives in the same order.
    let counts: Vec<usize> = colls.iter().map(Vec::len).collect();
    if let (Some(&c0), Some(k)) = (counts.first(), counts.iter().position(|&c| c != counts[0])) {
        return Err(format!(
            "rank {} calls {} collectives on MPI_COMM_WORLD, rank {} calls {c0}: every rank \
             must call the same ones",
            blocks[k].0, counts[k], blocks[0].0
        ));
    }
    let mut texts: Vec<String> = Vec::new();
    for j in 0..counts.first().copied().unwrap_or(0) {
        let c0 = &colls[0][j];
        for (k, c) in colls.iter().enumerate() {
            let c = &c[j];
            if (c.family, c.root) != (c0.family, c0.root) {
                return Err(format!(
                    "collective number {} differs: rank {} calls {}{}, rank {} calls {}{}",
                    j + 1,
                    blocks[0].0,
                    op::name(c0.op),
                    c0.root.map_or(String::new(), |x| format!(" root {x}")),
                    blocks[k].0,
                    op::name(c.op),
                    c.root.map_or(String::new(), |x| format!(" root {x}")),
                ));
            }
        }
        // Each rank's own size; the format has one per call, so the mean keeps the volume.
        let size = colls.iter().map(|c| c[j].bytes).sum::<u64>() / colls.len() as u64;
        texts.push(match (c0.family, c0.root) {
            ("barrier", _) => "barrier".into(),
            (f, Some(x)) => format!("{f} root {x} {size}B"),
            (f, None) => format!("{f} {size}B"),
        });
    }

    let mut out = format!("# commperf trace read from an OTF2 archive\nranks {n}\n");
    for (r, slots) in &blocks {
        let _ = writeln!(out, "\nrank {r}");
        for s in slots {
            match s {
                Slot::Line(l) => {
                    let _ = writeln!(out, "  {l}");
                }
                Slot::Coll(j) => {
                    let _ = writeln!(out, "  {}", texts[*j]);
                }
                // A receive posted and never completed: never matched, so never replayed.
                Slot::Irecv | Slot::Empty => {}
            }
        }
    }
    Ok(out)
}

fn kind(r: &Rec) -> &'static str {
    match r {
        Rec::Enter { .. } => "Enter",
        Rec::Leave { .. } => "Leave",
        Rec::Send { .. } => "MpiSend",
        Rec::Isend { .. } => "MpiIsend",
        Rec::IsendComplete { .. } => "MpiIsendComplete",
        Rec::IrecvRequest { .. } => "MpiIrecvRequest",
        Rec::Irecv { .. } => "MpiIrecv",
        Rec::Recv { .. } => "MpiRecv",
        Rec::RequestCancelled { .. } => "MpiRequestCancelled",
        Rec::CollBegin { .. } => "MpiCollectiveBegin",
        Rec::CollEnd { .. } => "MpiCollectiveEnd",
        Rec::Measurement { .. } => "MeasurementOnOff",
        Rec::Unmodelled { what, .. } => what,
    }
}
