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
use crate::model::{op, Archive, Location, Rec};
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

/// The own-format text of an archive, or why it cannot be replayed: each MPI rank's records
/// converted ([`RankConv`]), the collectives of each communicator matched across its members
/// ([`Ctx::collective_texts`]), and the whole written out ([`render`]).
pub fn own_text(a: &Archive) -> Result<String, String> {
    let n = a.mpi_ranks.len() as u32;
    if n == 0 {
        return Err(
            "no MPI ranks: the archive defines no group of MPI locations (OTF2 group of type \
             COMM_LOCATIONS, paradigm MPI)"
                .into(),
        );
    }
    let world = world_flags(a, n);
    check_other_locations(a)?;
    let sub_tag = sub_tags(a, n, &world)?;
    let cx = Ctx {
        a,
        n,
        world,
        all_ranks: (0..n).collect(),
        sub_tag,
    };
    let mut blocks: Vec<Block> = Vec::new();
    // Per rank, its collectives in call order.
    let mut colls: Vec<Vec<CollRec>> = Vec::new();
    for r in 0..n {
        let Some(l) = a.rank_location(r) else {
            continue;
        };
        let (slots, mine) = RankConv::new(&cx, r).run(l)?;
        blocks.push((r, slots));
        colls.push(mine);
    }
    let per_comm = per_comm(&colls);
    let names = cx.comm_names(&per_comm);
    let mut texts: HashMap<(usize, usize), String> = HashMap::new();
    for (&comm, per_rank) in &per_comm {
        cx.collective_texts(comm, per_rank, (&blocks, &colls), &names, &mut texts)?;
    }
    Ok(render(&cx, &names, &blocks, &texts))
}

/// Per communicator, whether it is MPI_COMM_WORLD: the first communicator over every rank in
/// rank order. Another one over the same ranks (MPI_Comm_dup) is a communicator of its own, as
/// MPI keeps it.
fn world_flags(a: &Archive, n: u32) -> Vec<bool> {
    let world_ref = a
        .comms
        .iter()
        .position(|c| c.members.iter().copied().eq(0..n));
    (0..a.comms.len()).map(|i| Some(i) == world_ref).collect()
}

/// Communication from a location that is no MPI rank's (a second thread) is not modelled.
fn check_other_locations(a: &Archive) -> Result<(), String> {
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
    Ok(())
}

/// Tags of point-to-point on other communicators: above every world tag (trace.rs's rule), one
/// per (communicator, tag) in their order.
fn sub_tags(a: &Archive, n: u32, world: &[bool]) -> Result<HashMap<(u32, u32), i64>, String> {
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
    Ok(sub
        .iter()
        .enumerate()
        .map(|(i, &k)| (k, max_world_tag + 1 + i as i64))
        .collect())
}

/// Per communicator: per rank with a block (position in `blocks`), the indices of its
/// collectives there.
fn per_comm(colls: &[Vec<CollRec>]) -> BTreeMap<u32, BTreeMap<usize, Vec<usize>>> {
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
    per_comm
}

/// The text: the header, the `comm` definitions, and each rank's block.
fn render(
    cx: &Ctx<'_>,
    names: &BTreeMap<u32, String>,
    blocks: &[Block],
    texts: &HashMap<(usize, usize), String>,
) -> String {
    let mut out = format!(
        "# commperf trace read from an OTF2 archive\nranks {}\n",
        cx.n
    );
    for (&c, name) in names {
        let list: Vec<String> = cx.a.comms[c as usize]
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
    out
}

/// What converting any rank needs of the archive: its ranks, which communicator is the world,
/// and the tags of point-to-point on the others.
/// One rank's converted calls: its OTF2 location's rank and its slots.
type Block = (u32, Vec<Slot>);

struct Ctx<'a> {
    a: &'a Archive,
    n: u32,
    world: Vec<bool>,
    all_ranks: Vec<u32>,
    sub_tag: HashMap<(u32, u32), i64>,
}

impl Ctx<'_> {
    /// A communicator's group (world ranks in its rank order), or why it cannot be one.
    fn group(&self, r: u32, what: &str, t: u64, comm: u32) -> Result<&[u32], String> {
        let n = self.n;
        let Some(c) = self.a.comms.get(comm as usize) else {
            return Err(format!(
                "rank {r}: {what} at t={t} on communicator #{comm}, which the archive does not \
                 define"
            ));
        };
        if self.world[comm as usize] {
            return Ok(&self.all_ranks);
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
    }

    /// A collective record taken back: (op, comm, root, bytes sent, bytes received).
    fn coll_rec(
        &self,
        r: u32,
        t: u64,
        (o, comm, root, sent, received): (u8, u32, Option<u32>, u64, u64),
        request: Option<String>,
    ) -> Result<CollRec, String> {
        let name = op::name(o);
        let Some(f) = family(o) else {
            return Err(format!(
                "rank {r}: {name} at t={t}: predict has no such collective"
            ));
        };
        let members = self.group(r, &name, t, comm)?;
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
    }

    /// (world peer, tag) of a record's peer and tag on `comm`.
    fn peer_tag(&self, r: u32, comm: u32, peer: u32, tag: u32) -> Result<(u32, i64), String> {
        let c = &self.a.comms[comm as usize];
        let p = *c.members.get(peer as usize).ok_or_else(|| {
            format!(
                "rank {r}: peer {peer} on communicator `{}` of {} ranks",
                c.name,
                c.members.len()
            )
        })?;
        let t = if self.world[comm as usize] {
            i64::from(tag)
        } else {
            self.sub_tag[&(comm, tag)]
        };
        Ok((p, t))
    }

    /// The world rank of `peer` on RMA window `win`.
    fn rma_peer(&self, r: u32, win: u32, peer: u32) -> Result<u32, String> {
        let a = self.a;
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
    }

    /// Nanoseconds of `ticks` of the archive's timer.
    fn ns(&self, ticks: u64) -> u64 {
        let res = self.a.timer_resolution;
        if res == 1_000_000_000 || res == 0 {
            ticks
        } else {
            (u128::from(ticks) * 1_000_000_000 / u128::from(res)) as u64
        }
    }

    fn comm_label(&self, c: u32) -> String {
        if self.world[c as usize] {
            "MPI_COMM_WORLD".into()
        } else {
            format!("communicator `{}`", self.a.comms[c as usize].name)
        }
    }

    /// The own format's name of each communicator other than the world that collectives use.
    fn comm_names<V>(&self, per_comm: &BTreeMap<u32, V>) -> BTreeMap<u32, String> {
        let mut names: BTreeMap<u32, String> = BTreeMap::new();
        for &c in per_comm.keys().filter(|&&c| !self.world[c as usize]) {
            let given = &self.a.comms[c as usize].name;
            let unique = self.a.comms.iter().filter(|x| &x.name == given).count() == 1;
            let name = if is_name(given) && unique {
                given.clone()
            } else {
                format!("otf2_comm{c}")
            };
            names.insert(c, name);
        }
        names
    }

    /// The blocks (positions in `blocks`) of the members of `comm` that have one.
    fn member_blocks(&self, comm: u32, blocks: &[Block]) -> Vec<usize> {
        if self.world[comm as usize] {
            (0..blocks.len()).collect()
        } else {
            // Members without a location call nothing: their block is missing anyway.
            self.a.comms[comm as usize]
                .members
                .iter()
                .filter_map(|&m| blocks.iter().position(|(r, _)| *r == m))
                .collect()
        }
    }

    /// The text of each collective on `comm` into `texts` (by block and the collective's index
    /// in it), after checking that every member calls the same ones, in the same order.
    /// `per_rank`: per block, the indices of its collectives on `comm`.
    fn collective_texts(
        &self,
        comm: u32,
        per_rank: &BTreeMap<usize, Vec<usize>>,
        (blocks, colls): (&[Block], &[Vec<CollRec>]),
        names: &BTreeMap<u32, String>,
        texts: &mut HashMap<(usize, usize), String>,
    ) -> Result<(), String> {
        let members = self.member_blocks(comm, blocks);
        let empty = Vec::new();
        let seq = |b: usize| per_rank.get(&b).unwrap_or(&empty);
        let b0 = members[0];
        if let Some(&b) = members.iter().find(|&&b| seq(b).len() != seq(b0).len()) {
            return Err(format!(
                "rank {} calls {} collectives on {}, rank {} calls {}: every member must call \
                 the same ones",
                blocks[b].0,
                seq(b).len(),
                self.comm_label(comm),
                blocks[b0].0,
                seq(b0).len()
            ));
        }
        let on = names
            .get(&comm)
            .map_or(String::new(), |nm| format!(" on {nm}"));
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
                        self.comm_label(comm),
                        blocks[b0].0,
                        c0.describe(),
                        blocks[b].0,
                        c.describe(),
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
        Ok(())
    }
}

impl CollRec {
    /// As a refusal names it: `nonblocking MPI_Bcast root 0`.
    fn describe(&self) -> String {
        format!(
            "{}{}{}",
            if self.request.is_some() {
                "nonblocking "
            } else {
                ""
            },
            op::name(self.op),
            self.root.map_or(String::new(), |x| format!(" root {x}"))
        )
    }
}

/// One rank's records on their way to its block of the own format: the lines so far and the
/// state of the MPI call they are in.
struct RankConv<'c, 'a> {
    cx: &'c Ctx<'a>,
    r: u32,
    slots: Vec<Slot>,
    /// Its collectives in call order; None while a nonblocking one is incomplete.
    mine: Vec<Option<CollRec>>,
    pending_irecv: HashMap<u64, usize>,
    /// One-sided transfers started: a completion of another (a blocking one's, as some tools
    /// write them) joins nothing.
    rma_started: BTreeSet<u64>,
    /// Nonblocking collectives started: request -> (index in `mine`, time).
    pending_nbc: HashMap<u64, (usize, u64)>,
    cursor: Option<u64>,
    off: bool,
    depth: usize,
    sendrecv: bool,
    sync: bool,
    completed: Vec<String>,
    sr_names: Vec<String>,
    sr_count: u64,
}

impl<'c, 'a> RankConv<'c, 'a> {
    fn new(cx: &'c Ctx<'a>, r: u32) -> Self {
        RankConv {
            cx,
            r,
            slots: Vec::new(),
            mine: Vec::new(),
            pending_irecv: HashMap::new(),
            rma_started: BTreeSet::new(),
            pending_nbc: HashMap::new(),
            cursor: None,
            off: false,
            depth: 0,
            sendrecv: false,
            sync: false,
            completed: Vec::new(),
            sr_names: Vec::new(),
            sr_count: 0,
        }
    }

    /// The rank's block and its collectives, or why they cannot be converted.
    fn run(mut self, l: &Location) -> Result<(Vec<Slot>, Vec<CollRec>), String> {
        for rec in &l.events {
            self.record(rec)?;
            if self.depth == 0 && !matches!(rec, Rec::Leave { .. }) {
                // A communication record outside any MPI region is a call of its own.
                self.finish();
            }
        }
        if let Some((req, (_, t))) = self.pending_nbc.iter().min_by_key(|(_, (k, _))| *k) {
            return Err(format!(
                "rank {}: nonblocking collective request {req} started at t={t} and never \
                 completed",
                self.r
            ));
        }
        Ok((self.slots, self.mine.into_iter().flatten().collect()))
    }

    /// The end of one MPI call: its completions as one wait/waitall.
    fn finish(&mut self) {
        if !self.sr_names.is_empty() {
            let line = format!("waitall {}", self.sr_names.join(" "));
            self.slots.push(Slot::Line(line));
            self.sr_names.clear();
        }
        wait_before(&mut self.slots, &mut self.completed);
    }

    fn line(&mut self, l: String) {
        self.slots.push(Slot::Line(l));
    }

    fn record(&mut self, rec: &Rec) -> Result<(), String> {
        let r = self.r;
        match *rec {
            Rec::Enter { t, region } => self.enter(t, region),
            Rec::Leave { t, region } => self.leave(t, region),
            Rec::Measurement { t, on } => self.measurement(t, on),
            Rec::Send {
                peer,
                comm,
                tag,
                bytes,
                ..
            } => self.blocking(true, peer, comm, tag, bytes)?,
            Rec::Recv {
                peer,
                comm,
                tag,
                bytes,
                ..
            } => self.blocking(false, peer, comm, tag, bytes)?,
            Rec::Isend {
                peer,
                comm,
                tag,
                bytes,
                req,
                ..
            } => {
                let (p, t) = self.cx.peer_tag(r, comm, peer, tag)?;
                let verb = if self.sync { "issend" } else { "isend" };
                self.line(format!("{verb} {p} {bytes}B tag {t} as q{req}"));
            }
            Rec::IsendComplete { req, .. } => self.completed.push(format!("q{req}")),
            Rec::IrecvRequest { req, .. } => {
                self.pending_irecv.insert(req, self.slots.len());
                self.slots.push(Slot::Irecv);
            }
            Rec::Irecv {
                t,
                peer,
                comm,
                tag,
                bytes,
                req,
            } => self.irecv(t, (peer, comm, tag, bytes), req)?,
            Rec::RequestCancelled { t, req } => self.cancelled(t, req)?,
            Rec::CollBegin { .. } => {}
            Rec::CollEnd {
                t,
                op: o,
                comm,
                root,
                sent,
                received,
            } => self.coll_end(t, (o, comm, root, sent, received))?,
            Rec::NbcRequest { t, req } => self.nbc_request(t, req)?,
            Rec::NbcComplete {
                t,
                op: o,
                comm,
                root,
                sent,
                received,
                req,
            } => self.nbc_complete(t, (o, comm, root, sent, received), req)?,
            Rec::RmaPut {
                win,
                peer,
                bytes,
                req,
                ..
            } => self.rma("put", win, peer, bytes, req)?,
            Rec::RmaGet {
                win,
                peer,
                bytes,
                req,
                ..
            } => self.rma("get", win, peer, bytes, req)?,
            Rec::RmaAtomic {
                t,
                win,
                peer,
                sent,
                received,
                req,
            } => self.rma_atomic(t, (win, peer), (sent, received), req)?,
            Rec::RmaComplete { req, .. } => {
                if self.rma_started.remove(&req) {
                    self.completed.push(format!("r{req}"));
                }
            }
            Rec::Unmodelled { t, what } => {
                return Err(format!(
                    "rank {r}: {what} at t={t}: predict does not model it"
                ))
            }
        }
        Ok(())
    }

    /// An MPI region's Enter: the computation since the last call, and at the outermost
    /// region what kind of call it is.
    fn enter(&mut self, t: u64, region: u32) {
        let a = self.cx.a;
        if !is_mpi(a, region) {
            return;
        }
        if self.depth == 0 {
            if let Some(c) = self.cursor {
                if !self.off && t > c {
                    let line = format!("compute {}ns", self.cx.ns(t - c));
                    self.line(line);
                }
            }
            let name = a.regions[region as usize].name.as_str();
            self.sendrecv = name.starts_with("MPI_Sendrecv");
            // MPI_Ssend's and MPI_Issend's MpiSend/MpiIsend (and a persistent MPI_Ssend_init's
            // start's): OTF2's record has no mode, the region says it.
            self.sync = matches!(name, "MPI_Ssend" | "MPI_Issend")
                || name == crate::from_run::SYNC_START_REGION;
        }
        self.depth += 1;
    }

    /// An MPI region's Leave: at the outermost region, the end of the call.
    fn leave(&mut self, t: u64, region: u32) {
        if !is_mpi(self.cx.a, region) {
            return;
        }
        self.depth = self.depth.saturating_sub(1);
        if self.depth == 0 {
            self.cursor = Some(self.cursor.map_or(t, |c| c.max(t)));
            self.finish();
            self.sendrecv = false;
            self.sync = false;
        }
    }

    fn measurement(&mut self, t: u64, on: bool) {
        // Outside MPI calls (Score-P writes it there) the time up to the switch is computation,
        // and after it computation starts again from the switch on. commperf writes it inside
        // MPI_Pcontrol, whose Enter and Leave already bound the gaps.
        if let Some(c) = self.cursor {
            if self.depth == 0 && !self.off && !on && t > c {
                let line = format!("compute {}ns", self.cx.ns(t - c));
                self.line(line);
            }
            self.cursor = Some(c.max(t));
        }
        self.off = !on;
    }

    /// MpiSend or MpiRecv: `send`/`ssend`/`recv`, or inside MPI_Sendrecv an `isend`/`irecv`
    /// that the call's end waits for.
    fn blocking(
        &mut self,
        send: bool,
        peer: u32,
        comm: u32,
        tag: u32,
        bytes: u64,
    ) -> Result<(), String> {
        let (p, t) = self.cx.peer_tag(self.r, comm, peer, tag)?;
        // Completions recorded before it in the call come first (an epoch's transfers before
        // MPI_Win_complete's message).
        wait_before(&mut self.slots, &mut self.completed);
        if self.sendrecv {
            self.sr_count += 1;
            let name = format!("sr{}", self.sr_count);
            let verb = if send { "isend" } else { "irecv" };
            self.line(format!("{verb} {p} {bytes}B tag {t} as {name}"));
            self.sr_names.push(name);
        } else {
            let verb = match (send, self.sync) {
                (true, true) => "ssend",
                (true, false) => "send",
                (false, _) => "recv",
            };
            self.line(format!("{verb} {p} {bytes}B tag {t}"));
        }
        Ok(())
    }

    /// MpiIrecv: fills in the irecv its MpiIrecvRequest posted, and completes it.
    fn irecv(
        &mut self,
        at: u64,
        (peer, comm, tag, bytes): (u32, u32, u32, u64),
        req: u64,
    ) -> Result<(), String> {
        let r = self.r;
        let (p, t) = self.cx.peer_tag(r, comm, peer, tag)?;
        let Some(i) = self.pending_irecv.remove(&req) else {
            return Err(format!(
                "rank {r}: MpiIrecv of request {req} at t={at} without its MpiIrecvRequest"
            ));
        };
        self.slots[i] = Slot::Line(format!("irecv {p} {bytes}B tag {t} as q{req}"));
        self.completed.push(format!("q{req}"));
        Ok(())
    }

    fn cancelled(&mut self, t: u64, req: u64) -> Result<(), String> {
        match self.pending_irecv.remove(&req) {
            Some(i) => {
                self.slots[i] = Slot::Empty;
                Ok(())
            }
            None => Err(format!(
                "rank {}: request {req} cancelled at t={t} after it was sent: a cancelled send \
                 is not modelled",
                self.r
            )),
        }
    }

    fn coll_end(&mut self, t: u64, rec: (u8, u32, Option<u32>, u64, u64)) -> Result<(), String> {
        let c = self.cx.coll_rec(self.r, t, rec, None)?;
        // As above: a fence's transfers complete before its barrier.
        wait_before(&mut self.slots, &mut self.completed);
        self.slots.push(Slot::Coll(self.mine.len()));
        self.mine.push(Some(c));
        Ok(())
    }

    fn nbc_request(&mut self, t: u64, req: u64) -> Result<(), String> {
        if self.pending_nbc.insert(req, (self.mine.len(), t)).is_some() {
            return Err(format!(
                "rank {}: nonblocking collective request {req} started again at t={t} before \
                 it completed",
                self.r
            ));
        }
        self.slots.push(Slot::Coll(self.mine.len()));
        self.mine.push(None);
        Ok(())
    }

    fn nbc_complete(
        &mut self,
        t: u64,
        rec: (u8, u32, Option<u32>, u64, u64),
        req: u64,
    ) -> Result<(), String> {
        let Some((k, _)) = self.pending_nbc.remove(&req) else {
            return Err(format!(
                "rank {}: NonBlockingCollectiveComplete of request {req} at t={t} without its \
                 NonBlockingCollectiveRequest",
                self.r
            ));
        };
        // Named apart from point-to-point requests, whose ids may be the same.
        let name = format!("n{req}");
        let c = self.cx.coll_rec(self.r, t, rec, Some(name.clone()))?;
        self.mine[k] = Some(c);
        self.completed.push(name);
        Ok(())
    }

    /// RmaPut or RmaGet (`op`).
    fn rma(&mut self, op: &str, win: u32, peer: u32, bytes: u64, req: u64) -> Result<(), String> {
        let p = self.cx.rma_peer(self.r, win, peer)?;
        self.rma_started.insert(req);
        self.line(format!("{op} {p} {bytes}B as r{req}"));
        Ok(())
    }

    fn rma_atomic(
        &mut self,
        t: u64,
        (win, peer): (u32, u32),
        (sent, received): (u64, u64),
        req: u64,
    ) -> Result<(), String> {
        let r = self.r;
        let p = self.cx.rma_peer(r, win, peer)?;
        let line = match (sent, received) {
            (s, 0) => format!("put {p} {s}B as r{req}"),
            (0, g) => format!("get {p} {g}B as r{req}"),
            (s, g) if s == g => format!("fetch {p} {s}B as r{req}"),
            (s, g) => {
                return Err(format!(
                    "rank {r}: RmaAtomic at t={t} sends {s} B and receives {g} B: the own \
                     format's fetch carries one size each way"
                ))
            }
        };
        self.rma_started.insert(req);
        self.line(line);
        Ok(())
    }
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
