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
//!   them), and inside MPI_Ssend `ssend`; MpiIsend (inside MPI_Issend, or a persistent
//!   MPI_Ssend_init's start, [`crate::from_run::SYNC_START_REGION`]: `issend`) and
//!   MpiIrecvRequest … MpiIrecv become `isend`/`irecv` at the post (the
//!   receive's peer, tag and size come from its MpiIrecv), and the completions one MPI call
//!   made become one `wait`/`waitall` at that call's end; a cancelled receive is left out;
//! - peers on communicators other than MPI_COMM_WORLD are mapped to world ranks through the
//!   communicator's group, and their (communicator, tag) pairs get tags above every world tag,
//!   as the own trace of a monitored run does;
//! - MpiCollectiveEnd becomes the own format's collective of its family (the v-forms and
//!   MPI_Alltoallw as the plain one, MPI_Scan/Exscan as `scan`/`exscan`), with the size the
//!   format means: each rank's record taken back ([`crate::from_run::sizes`]: the root's bytes
//!   sent for bcast, the bytes received for scatter, the bytes sent otherwise; per pair for
//!   alltoall, one rank's block for reduce_scatter), averaged over the communicator's ranks;
//! - NonBlockingCollectiveRequest … NonBlockingCollectiveComplete becomes the collective's
//!   `i`-form at the request, named after it, and a `wait`/`waitall` at the end of the call
//!   that completed it, with the completions of point-to-point requests of that call;
//! - collectives on a communicator other than MPI_COMM_WORLD (the archive's first communicator
//!   over every rank in rank order) run `on` a `comm` definition of its group, world ranks in
//!   communicator rank order, named as in the archive when that is a name the own format takes
//!   (commperf's `c<id>`), else `otf2_comm<ref>`; roots are ranks of the communicator;
//!
//! - RmaPut, RmaGet and RmaAtomic become the own format's `put`, `get` and `fetch` (an
//!   RmaAtomic that only sends is a `put`, one that only receives a `get`) to the target's world
//!   rank (the window's communicator maps it), named `r<matching id>`, and
//!   RmaOpCompleteRemote joins them in the `wait`/`waitall` at the end of its call; other RMA
//!   records (synchronisation, local completion) carry no transfer and are ignored;
//!
//! and refused by name: MPI_Alltoallw-like operations predict has no collective for, a
//! collective on a communicator the archive does not define or whose group is not MPI ranks,
//! or by a rank that is no member of it, members that disagree on their collectives, a
//! nonblocking collective never completed, one-sided records, communication from a location
//! that is not an MPI rank's. Other records carry no communication and are ignored.

use crate::from_run::{family, rooted};
use crate::model::{op, Archive, Rec};
use commperf_predict::parse::is_name;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;

enum Slot {
    Line(String),
    /// An irecv posted (MpiIrecvRequest) whose peer, tag and size its MpiIrecv gives.
    Irecv,
    /// The rank's collective k (its index in the rank's collectives, in call order).
    Coll(usize),
    Empty,
}

#[derive(Clone)]
struct CollRec {
    family: &'static str,
    op: u8,
    /// The archive's communicator.
    comm: u32,
    /// Within the communicator.
    root: Option<u32>,
    /// The rank's bytes as the own format counts them.
    bytes: u64,
    /// Nonblocking: the request's name.
    request: Option<String>,
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
    // MPI_COMM_WORLD: the first communicator over every rank in rank order. Another one over
    // the same ranks (MPI_Comm_dup) is a communicator of its own, as MPI keeps it.
    let world_ref = a
        .comms
        .iter()
        .position(|c| c.members.iter().copied().eq(0..n));
    let world: Vec<bool> = (0..a.comms.len()).map(|i| Some(i) == world_ref).collect();
    let all_ranks: Vec<u32> = (0..n).collect();
    // A communicator's group (world ranks in its rank order), or why it cannot be one.
    let group = |r: u32, what: &str, t: u64, comm: u32| -> Result<&[u32], String> {
        let Some(c) = a.comms.get(comm as usize) else {
            return Err(format!(
                "rank {r}: {what} at t={t} on communicator #{comm}, which the archive does not \
                 define"
            ));
        };
        if world[comm as usize] {
            return Ok(&all_ranks);
        }
        let distinct: BTreeSet<u32> = c.members.iter().copied().collect();
        if c.members.is_empty()
            || distinct.len() != c.members.len()
            || c.members.iter().any(|&m| m >= n)
        {
            return Err(format!(
                "rank {r}: {what} at t={t} on communicator `{}`, whose group ({:?}) is not \
                 distinct MPI ranks below {n}",
                c.name, c.members
            ));
        }
        if !distinct.contains(&r) {
            return Err(format!(
                "rank {r}: {what} at t={t} on communicator `{}`, of which it is no member \
                 (members {:?})",
                c.name, c.members
            ));
        }
        Ok(&c.members)
    };
    // A collective record taken back: (op, comm, root, bytes sent, bytes received).
    let coll_rec = |r: u32,
                    t: u64,
                    (o, comm, root, sent, received): (u8, u32, Option<u32>, u64, u64),
                    request: Option<String>|
     -> Result<CollRec, String> {
        let name = op::name(o);
        let Some(f) = family(o) else {
            return Err(format!(
                "rank {r}: {name} at t={t}: predict has no such collective"
            ));
        };
        let members = group(r, &name, t, comm)?;
        let size = members.len() as u64;
        let root = if rooted(f) {
            match root {
                Some(x) if u64::from(x) < size => Some(x),
                _ => return Err(format!("rank {r}: {name} at t={t} without a valid root")),
            }
        } else {
            None
        };
        let is_root = root.is_some_and(|x| members[x as usize] == r);
        let raw = match o {
            op::BCAST if is_root => sent,
            op::BCAST | op::SCATTER | op::SCATTERV => received,
            _ => sent,
        };
        let bytes = match f {
            "alltoall" | "reducescatter" => raw / size,
            _ => raw,
        };
        Ok(CollRec {
            family: f,
            op: o,
            comm,
            root,
            bytes,
            request,
        })
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

    // The world rank of `peer` on RMA window `win`.
    let rma_peer = |r: u32, win: u32, peer: u32| -> Result<u32, String> {
        let comm = a
            .windows
            .get(win as usize)
            .and_then(|&c| a.comms.get(c as usize))
            .ok_or_else(|| {
                format!("rank {r}: one-sided transfer on window #{win}, which the archive does not define with a communicator")
            })?;
        comm.members.get(peer as usize).copied().ok_or_else(|| {
            format!(
                "rank {r}: one-sided transfer to rank {peer} of communicator `{}` of {} ranks",
                comm.name,
                comm.members.len()
            )
        })
    };

    let ns = |ticks: u64| -> u64 {
        if a.timer_resolution == 1_000_000_000 || a.timer_resolution == 0 {
            ticks
        } else {
            (u128::from(ticks) * 1_000_000_000 / u128::from(a.timer_resolution)) as u64
        }
    };

    let mut blocks: Vec<(u32, Vec<Slot>)> = Vec::new();
    // Per rank, its collectives in call order; None while a nonblocking one is incomplete.
    let mut colls: Vec<Vec<Option<CollRec>>> = Vec::new();
    for r in 0..n {
        let Some(l) = a.rank_location(r) else {
            continue;
        };
        let mut slots: Vec<Slot> = Vec::new();
        let mut mine: Vec<Option<CollRec>> = Vec::new();
        let mut pending_irecv: HashMap<u64, usize> = HashMap::new();
        // One-sided transfers started: a completion of another (a blocking one's, as some
        // tools write them) joins nothing.
        let mut rma_started: BTreeSet<u64> = BTreeSet::new();
        // Nonblocking collectives started: request -> (index in `mine`, time).
        let mut pending_nbc: HashMap<u64, (usize, u64)> = HashMap::new();
        let mut cursor: Option<u64> = None;
        let mut off = false;
        let mut depth = 0usize;
        let mut sendrecv = false;
        let mut sync = false;
        let mut completed: Vec<String> = Vec::new();
        let mut sr_names: Vec<String> = Vec::new();
        let mut sr_count = 0u64;
        // The end of one MPI call: its completions as one wait/waitall.
        let finish = |slots: &mut Vec<Slot>, completed: &mut Vec<String>, sr: &mut Vec<String>| {
            if !sr.is_empty() {
                slots.push(Slot::Line(format!("waitall {}", sr.join(" "))));
                sr.clear();
            }
            wait_before(slots, completed);
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
                        let name = a.regions[region as usize].name.as_str();
                        sendrecv = name.starts_with("MPI_Sendrecv");
                        // MPI_Ssend's and MPI_Issend's MpiSend/MpiIsend (and a persistent
                        // MPI_Ssend_init's start's): OTF2's record has no mode, the region
                        // says it.
                        sync = matches!(name, "MPI_Ssend" | "MPI_Issend")
                            || name == crate::from_run::SYNC_START_REGION;
                    }
                    depth += 1;
                }
                Rec::Leave { t, region } if is_mpi(a, region) => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        cursor = Some(cursor.map_or(t, |c| c.max(t)));
                        finish(&mut slots, &mut completed, &mut sr_names);
                        sendrecv = false;
                        sync = false;
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
                    // Completions recorded before it in the call come first (an epoch's
                    // transfers before MPI_Win_complete's message).
                    wait_before(&mut slots, &mut completed);
                    if sendrecv {
                        sr_count += 1;
                        let name = format!("sr{sr_count}");
                        let verb = if send { "isend" } else { "irecv" };
                        slots.push(Slot::Line(format!("{verb} {p} {bytes}B tag {t} as {name}")));
                        sr_names.push(name);
                    } else {
                        let verb = match (send, sync) {
                            (true, true) => "ssend",
                            (true, false) => "send",
                            (false, _) => "recv",
                        };
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
                    let verb = if sync { "issend" } else { "isend" };
                    slots.push(Slot::Line(format!("{verb} {p} {bytes}B tag {t} as q{req}")));
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
                    let c = coll_rec(r, t, (o, comm, root, sent, received), None)?;
                    // As above: a fence's transfers complete before its barrier.
                    wait_before(&mut slots, &mut completed);
                    slots.push(Slot::Coll(mine.len()));
                    mine.push(Some(c));
                }
                Rec::NbcRequest { t, req } => {
                    if pending_nbc.insert(req, (mine.len(), t)).is_some() {
                        return Err(format!(
                            "rank {r}: nonblocking collective request {req} started again at \
                             t={t} before it completed"
                        ));
                    }
                    slots.push(Slot::Coll(mine.len()));
                    mine.push(None);
                }
                Rec::NbcComplete {
                    t,
                    op: o,
                    comm,
                    root,
                    sent,
                    received,
                    req,
                } => {
                    let Some((k, _)) = pending_nbc.remove(&req) else {
                        return Err(format!(
                            "rank {r}: NonBlockingCollectiveComplete of request {req} at t={t} \
                             without its NonBlockingCollectiveRequest"
                        ));
                    };
                    // Named apart from point-to-point requests, whose ids may be the same.
                    let name = format!("n{req}");
                    let c = coll_rec(r, t, (o, comm, root, sent, received), Some(name.clone()))?;
                    mine[k] = Some(c);
                    completed.push(name);
                }
                Rec::RmaPut {
                    win,
                    peer,
                    bytes,
                    req,
                    ..
                }
                | Rec::RmaGet {
                    win,
                    peer,
                    bytes,
                    req,
                    ..
                } => {
                    let p = rma_peer(r, win, peer)?;
                    rma_started.insert(req);
                    let op = if matches!(rec, Rec::RmaPut { .. }) {
                        "put"
                    } else {
                        "get"
                    };
                    slots.push(Slot::Line(format!("{op} {p} {bytes}B as r{req}")));
                }
                Rec::RmaAtomic {
                    t,
                    win,
                    peer,
                    sent,
                    received,
                    req,
                } => {
                    let p = rma_peer(r, win, peer)?;
                    let line = match (sent, received) {
                        (s, 0) => format!("put {p} {s}B as r{req}"),
                        (0, g) => format!("get {p} {g}B as r{req}"),
                        (s, g) if s == g => format!("fetch {p} {s}B as r{req}"),
                        (s, g) => {
                            return Err(format!(
                                "rank {r}: RmaAtomic at t={t} sends {s} B and receives {g} B: \
                                 the own format's fetch carries one size each way"
                            ))
                        }
                    };
                    rma_started.insert(req);
                    slots.push(Slot::Line(line));
                }
                Rec::RmaComplete { req, .. } => {
                    if rma_started.remove(&req) {
                        completed.push(format!("r{req}"));
                    }
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
        if let Some((req, (_, t))) = pending_nbc.iter().min_by_key(|(_, (k, _))| *k) {
            return Err(format!(
                "rank {r}: nonblocking collective request {req} started at t={t} and never \
                 completed"
            ));
        }
        blocks.push((r, slots));
        colls.push(mine);
    }

    // Every member of a communicator must call its collectives alike, in the same order.
    // Per communicator: per rank with a block (position in `blocks`), its collectives there.
    let colls: Vec<Vec<CollRec>> = colls
        .into_iter()
        .map(|v| v.into_iter().flatten().collect())
        .collect();
    let mut per_comm: BTreeMap<u32, BTreeMap<usize, Vec<usize>>> = BTreeMap::new();
    for (b, mine) in colls.iter().enumerate() {
        for (k, c) in mine.iter().enumerate() {
            per_comm
                .entry(c.comm)
                .or_default()
                .entry(b)
                .or_default()
                .push(k);
        }
    }
    let comm_label = |c: u32| -> String {
        if world[c as usize] {
            "MPI_COMM_WORLD".into()
        } else {
            format!("communicator `{}`", a.comms[c as usize].name)
        }
    };
    // The own format's name of each communicator other than the world that collectives use.
    let mut names: BTreeMap<u32, String> = BTreeMap::new();
    for &c in per_comm.keys().filter(|&&c| !world[c as usize]) {
        let given = &a.comms[c as usize].name;
        let unique = a.comms.iter().filter(|x| &x.name == given).count() == 1;
        let name = if is_name(given) && unique {
            given.clone()
        } else {
            format!("otf2_comm{c}")
        };
        names.insert(c, name);
    }
    let mut texts: HashMap<(usize, usize), String> = HashMap::new();
    for (&comm, per_rank) in &per_comm {
        let members: Vec<usize> = if world[comm as usize] {
            (0..blocks.len()).collect()
        } else {
            // Members without a location call nothing: their block is missing anyway.
            a.comms[comm as usize]
                .members
                .iter()
                .filter_map(|&m| blocks.iter().position(|(r, _)| *r == m))
                .collect()
        };
        let empty = Vec::new();
        let seq = |b: usize| per_rank.get(&b).unwrap_or(&empty);
        let b0 = members[0];
        if let Some(&b) = members.iter().find(|&&b| seq(b).len() != seq(b0).len()) {
            return Err(format!(
                "rank {} calls {} collectives on {}, rank {} calls {}: every member must call \
                 the same ones",
                blocks[b].0,
                seq(b).len(),
                comm_label(comm),
                blocks[b0].0,
                seq(b0).len()
            ));
        }
        let on = names
            .get(&comm)
            .map_or(String::new(), |nm| format!(" on {nm}"));
        let describe = |c: &CollRec| {
            format!(
                "{}{}{}",
                if c.request.is_some() {
                    "nonblocking "
                } else {
                    ""
                },
                op::name(c.op),
                c.root.map_or(String::new(), |x| format!(" root {x}"))
            )
        };
        for j in 0..seq(b0).len() {
            let c0 = &colls[b0][seq(b0)[j]];
            for &b in &members {
                let c = &colls[b][seq(b)[j]];
                if (c.family, c.root, c.request.is_some())
                    != (c0.family, c0.root, c0.request.is_some())
                {
                    return Err(format!(
                        "collective number {} on {} differs: rank {} calls {}, rank {} calls {}",
                        j + 1,
                        comm_label(comm),
                        blocks[b0].0,
                        describe(c0),
                        blocks[b].0,
                        describe(c),
                    ));
                }
            }
            // Each rank's own size; the format has one per call, so the mean keeps the volume.
            let size = members
                .iter()
                .map(|&b| colls[b][seq(b)[j]].bytes)
                .sum::<u64>()
                / members.len() as u64;
            let i = if c0.request.is_some() { "i" } else { "" };
            let body = match (c0.family, c0.root) {
                ("barrier", _) => format!("{i}barrier{on}"),
                (f, Some(x)) => format!("{i}{f} root {x} {size}B{on}"),
                (f, None) => format!("{i}{f} {size}B{on}"),
            };
            for &b in &members {
                let k = seq(b)[j];
                let text = match &colls[b][k].request {
                    Some(q) => format!("{body} as {q}"),
                    None => body.clone(),
                };
                texts.insert((b, k), text);
            }
        }
    }

    let mut out = format!("# commperf trace read from an OTF2 archive\nranks {n}\n");
    for (&c, name) in &names {
        let list: Vec<String> = a.comms[c as usize]
            .members
            .iter()
            .map(u32::to_string)
            .collect();
        let _ = writeln!(out, "comm {name} {}", list.join(" "));
    }
    for (b, (r, slots)) in blocks.iter().enumerate() {
        let _ = writeln!(out, "\nrank {r}");
        for s in slots {
            match s {
                Slot::Line(l) => {
                    let _ = writeln!(out, "  {l}");
                }
                Slot::Coll(k) => {
                    let _ = writeln!(out, "  {}", texts[&(b, *k)]);
                }
                // A receive posted and never completed: never matched, so never replayed.
                Slot::Irecv | Slot::Empty => {}
            }
        }
    }
    Ok(out)
}

/// The completions recorded so far in a call, as a `wait`/`waitall` before what comes next in
/// it (record order is the call's order).
fn wait_before(slots: &mut Vec<Slot>, completed: &mut Vec<String>) {
    match completed.len() {
        0 => {}
        1 => slots.push(Slot::Line(format!("wait {}", completed[0]))),
        _ => slots.push(Slot::Line(format!("waitall {}", completed.join(" ")))),
    }
    completed.clear();
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
        Rec::NbcRequest { .. } => "NonBlockingCollectiveRequest",
        Rec::NbcComplete { .. } => "NonBlockingCollectiveComplete",
        Rec::Measurement { .. } => "MeasurementOnOff",
        Rec::RmaPut { .. } => "RmaPut",
        Rec::RmaGet { .. } => "RmaGet",
        Rec::RmaAtomic { .. } => "RmaAtomic",
        Rec::RmaComplete { .. } => "RmaOpCompleteRemote",
        Rec::Unmodelled { what, .. } => what,
    }
}
