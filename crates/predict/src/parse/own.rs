//! commperf's own trace format: one MPI-like program per rank, in plain text.
//!
//! Line-oriented and written for people as much as for generators: `ranks N` first, then one
//! `rank R` block per rank whose lines are that rank's calls in program order (blocking and
//! non-blocking point-to-point with named requests, compute with units, the usual collectives).
//! The grammar is in the user guide (docs/src/reference/traces.md, checked against this reader
//! by the parsers tests); keep the two in step.
//!
//! Collectives are expanded by [`Algorithms`](crate::collectives::Algorithms) into
//! point-to-point messages tagged from a reserved space, so user tags must be below 2^31.
//! Every rank must call the same collectives in the same order: each rank keeps a running hash
//! of its calls and all ranks are compared with the first, in constant memory.
//!
//! `comm NAME RANK…` defines a communicator group (world ranks in communicator rank order) and
//! `… on NAME` runs a collective over it; the same-order rule then holds per group, among its
//! members, with a running hash per (rank, group). A group's collectives are tagged apart from
//! the world's and from every other group's ([`group_coll_tag`]). The `i`-forms of the
//! collectives (`iallreduce 8B as r`) expand into a program of their own that starts at the
//! call and is joined by the `wait` that names it.

use super::{error_at, ParseError, ParseOptions, MAX_BYTES, MAX_NS, MAX_OPS, MAX_RANKS};
use crate::collectives::{
    coll_tag, group_coll_tag, BlockCounts, Collective, COLL_TAG_BASE, MAX_GROUPS,
};
use crate::workload::{Local, OpKind, Rank, Request, SeqProgram, Workload, WorkloadBuilder, ANY};
use commperf_core::units::{self, DurationError};
use std::collections::HashMap;

#[derive(Clone, Copy)]
struct Tok {
    start: usize,
    end: usize,
}

/// A request of the program being read: a point-to-point operation, or a nonblocking
/// collective (an index into its block's `coll_sinks`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Req {
    Op(Request),
    Coll(usize),
}

/// One rank's block while it is being read.
struct Block<'a> {
    rank: Rank,
    rank_tok: Tok,
    prog: SeqProgram,
    /// Named requests not yet waited for.
    named: HashMap<&'a str, Req>,
    /// Every request not yet waited for, with its name if any (for a bare `waitall`).
    outstanding: Vec<(Req, Option<&'a str>)>,
    /// Per nonblocking collective of this block, the operations its wait joins.
    coll_sinks: Vec<Vec<Local>>,
    colls: u64,
    coll_hash: u64,
    /// Per communicator group this rank called collectives on: (calls, running hash).
    group_colls: HashMap<u32, (u64, u64)>,
}

/// The collectives the first finished rank called: every other rank must match.
struct CollRef {
    rank: Rank,
    count: u64,
    hash: u64,
}

/// A communicator group (`comm NAME RANK…`).
struct Group<'a> {
    name: &'a str,
    /// World ranks in communicator rank order.
    members: Vec<Rank>,
    /// (world rank, communicator rank), sorted: membership by binary search.
    by_rank: Vec<(Rank, u32)>,
    /// The collectives on this group of its first finished member.
    reference: Option<CollRef>,
}

impl Group<'_> {
    fn position(&self, r: Rank) -> Option<u32> {
        self.by_rank
            .binary_search_by_key(&r, |&(w, _)| w)
            .ok()
            .map(|i| self.by_rank[i].1)
    }
}

/// The collective names, each also callable nonblocking with an `i` in front.
const COLLECTIVES: &[&str] = &[
    "barrier",
    "bcast",
    "reduce",
    "allreduce",
    "gather",
    "scatter",
    "allgather",
    "alltoall",
    "reducescatter",
    "scan",
    "exscan",
];

/// One collective statement, read.
struct CollCall {
    coll: Collective,
    nonblocking: bool,
    /// The group it runs on (index into `Parser::groups`), or None for every rank.
    group: Option<u32>,
    /// `as NAME` of a nonblocking one.
    name: Option<Tok>,
}

struct Parser<'a> {
    name: &'a str,
    text: &'a str,
    opts: &'a ParseOptions,
    nranks: u32,
    builder: Option<WorkloadBuilder>,
    block: Option<Block<'a>>,
    coll_ref: Option<CollRef>,
    /// Operations of the ranks already finished.
    total_ops: u64,
    groups: Vec<Group<'a>>,
    group_names: HashMap<&'a str, u32>,
    /// Per world rank that is a member of any group, those groups in definition order.
    member_of: HashMap<Rank, Vec<u32>>,
}

/// Units of sizes: binary (KiB) and decimal (KB = 1000 B, as everywhere in commperf).
const SIZE_UNITS: &[(&str, u64)] = &[
    ("B", 1),
    ("KiB", 1 << 10),
    ("MiB", 1 << 20),
    ("GiB", 1 << 30),
    ("KB", 1_000),
    ("MB", 1_000_000),
    ("GB", 1_000_000_000),
];

/// Whether `w` is a name in the own format (variables, request and communicator names): letters,
/// digits and `_`, not starting with a digit.
pub fn is_name(w: &str) -> bool {
    let mut c = w.chars();
    matches!(c.next(), Some(ch) if ch.is_ascii_alphabetic() || ch == '_')
        && c.all(|ch| ch.is_ascii_alphanumeric() || ch == '_')
}

/// Parses a size with an optional unit; `None` when malformed, `Some(Err)` when too large.
pub(crate) fn parse_size_unit(w: &str) -> Option<Result<u64, ()>> {
    let split = w.find(|c: char| !c.is_ascii_digit()).unwrap_or(w.len());
    let (digits, unit) = w.split_at(split);
    if digits.is_empty() {
        return None;
    }
    let mult = if unit.is_empty() {
        1
    } else {
        SIZE_UNITS.iter().find(|(u, _)| *u == unit)?.1
    };
    let v = match digits.parse::<u64>() {
        Ok(v) => v,
        Err(_) => return Some(Err(())),
    };
    Some(match v.checked_mul(mult) {
        Some(b) if b <= MAX_BYTES => Ok(b),
        _ => Err(()),
    })
}

/// Parses `12.5us` into nanoseconds (rounded); `None` when malformed, `Some(Err)` when too long.
/// The trace grammar's DURATION is stricter than a duration on the command line: digits with
/// at most one point and an ASCII unit right after them (no sign, exponent, space or `µs`); the
/// reading itself is [`units::parse_duration_ns`]'s, as everywhere.
pub(crate) fn parse_duration(w: &str) -> Option<Result<u64, ()>> {
    let split = w
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(w.len());
    let unit = &w[split..];
    if !unit.is_ascii() {
        return None;
    }
    units::time_unit_ns(unit)?;
    let ns = match units::parse_duration_ns(w, None) {
        Ok(ns) => ns.round(),
        Err(DurationError::NotFinite) => return Some(Err(())),
        Err(_) => return None,
    };
    Some(if ns.is_finite() && ns <= MAX_NS as f64 {
        Ok(ns as u64)
    } else {
        Err(())
    })
}

pub(crate) fn mix(h: u64, v: u64) -> u64 {
    crate::rng::mix(h ^ v.wrapping_mul(0x9e37_79b9_7f4a_7c15))
}

/// A signature of one collective call (kind, root, sizes), so ranks can be compared.
pub(crate) fn coll_signature(c: &Collective) -> u64 {
    let kind = c.name().bytes().fold(0u64, |h, b| mix(h, b as u64));
    let mut h = mix(kind, c.root().map_or(u64::MAX, u64::from));
    match c {
        Collective::Bcast { bytes, .. }
        | Collective::Reduce { bytes, .. }
        | Collective::Allreduce { bytes, .. }
        | Collective::Allgather { bytes }
        | Collective::Alltoall { bytes }
        | Collective::Gather { bytes, .. }
        | Collective::Scatter { bytes, .. }
        | Collective::Scan { bytes }
        | Collective::Exscan { bytes }
        | Collective::ReduceScatter {
            counts: BlockCounts::Uniform(bytes),
            ..
        } => h = mix(h, *bytes),
        _ => {}
    }
    h
}

impl<'a> Parser<'a> {
    fn err(&self, t: Tok, msg: impl Into<String>) -> ParseError {
        error_at(self.name, self.text, t.start, t.end, msg)
    }

    fn word(&self, t: Tok) -> &'a str {
        self.text.get(t.start..t.end).unwrap_or("")
    }

    /// The error for a missing token at the end of the line `toks` came from.
    fn missing(&self, toks: &[Tok], line_end: usize, what: &str) -> ParseError {
        let at = toks.last().map_or(line_end, |t| t.end);
        error_at(
            self.name,
            self.text,
            at,
            at,
            format!("expected {what} at the end of the line"),
        )
    }

    fn rank_arg(&self, t: Tok, allow_any: bool) -> Result<Rank, ParseError> {
        let w = self.word(t);
        if allow_any && w == "any" {
            return Ok(ANY);
        }
        match w.parse::<u64>() {
            Ok(r) if r < self.nranks as u64 => Ok(r as Rank),
            Ok(r) => Err(self.err(t, format!("rank {r} is outside 0..{}", self.nranks))),
            Err(_) if !w.is_empty() && w.bytes().all(|b| b.is_ascii_digit()) => {
                Err(self.err(t, format!("rank is outside 0..{}", self.nranks)))
            }
            Err(_) => Err(self.err(
                t,
                if allow_any {
                    "expected a rank or `any`"
                } else {
                    "expected a rank"
                },
            )),
        }
    }

    fn size_arg(&self, t: Tok) -> Result<u64, ParseError> {
        match parse_size_unit(self.word(t)) {
            Some(Ok(b)) => Ok(b),
            Some(Err(())) => {
                Err(self.err(t, format!("size is larger than 2^48 = {MAX_BYTES} bytes")))
            }
            None => Err(self.err(
                t,
                "expected a size (digits with an optional unit B, KiB, MiB, GiB, KB, MB or GB)",
            )),
        }
    }

    fn tag_arg(&self, t: Tok, allow_any: bool) -> Result<u32, ParseError> {
        let w = self.word(t);
        if allow_any && w == "any" {
            return Ok(ANY);
        }
        match w.parse::<u64>() {
            Ok(v) if v < COLL_TAG_BASE as u64 => Ok(v as u32),
            Ok(_) => Err(self.err(
                t,
                "tags must be below 2^31 (higher tags are reserved for collectives)",
            )),
            Err(_) if !w.is_empty() && w.bytes().all(|b| b.is_ascii_digit()) => Err(self.err(
                t,
                "tags must be below 2^31 (higher tags are reserved for collectives)",
            )),
            Err(_) => Err(self.err(
                t,
                if allow_any {
                    "expected a tag or `any`"
                } else {
                    "expected a tag"
                },
            )),
        }
    }

    fn block(&mut self, t: Tok) -> Result<&mut Block<'a>, ParseError> {
        let msg = "operation outside a rank block (start one with `rank R`)";
        match self.block.as_mut() {
            Some(b) => Ok(b),
            None => Err(error_at(self.name, self.text, t.start, t.end, msg)),
        }
    }

    fn finish_block(&mut self) -> Result<(), ParseError> {
        let Some(b) = self.block.take() else {
            return Ok(());
        };
        match &self.coll_ref {
            None => {
                self.coll_ref = Some(CollRef {
                    rank: b.rank,
                    count: b.colls,
                    hash: b.coll_hash,
                })
            }
            Some(r) if r.count != b.colls || r.hash != b.coll_hash => {
                return Err(self.err(
                    b.rank_tok,
                    format!(
                        "rank {} calls collectives differently from rank {} ({} calls against \
                         {}, or other kinds, roots or sizes); every rank must call the same \
                         collectives in the same order",
                        b.rank, r.rank, b.colls, r.count
                    ),
                ))
            }
            Some(_) => {}
        }
        // Per group this rank is a member of, in definition order (so the first error is the
        // same on every run): its calls there against the group's first finished member's.
        let mine = self.member_of.get(&b.rank).map_or(&[][..], Vec::as_slice);
        for &g in mine {
            let (count, hash) = b.group_colls.get(&g).copied().unwrap_or((0, 0));
            let Some(group) = self.groups.get_mut(g as usize) else {
                continue;
            };
            match &group.reference {
                None => {
                    group.reference = Some(CollRef {
                        rank: b.rank,
                        count,
                        hash,
                    })
                }
                Some(r) if r.count != count || r.hash != hash => {
                    let msg = format!(
                        "rank {} calls collectives on `{}` differently from rank {} ({} calls \
                         against {}, or other kinds, roots or sizes); every member of a \
                         communicator must call its collectives in the same order",
                        b.rank, group.name, r.rank, count, r.count
                    );
                    return Err(self.err(b.rank_tok, msg));
                }
                Some(_) => {}
            }
        }
        self.total_ops += b.prog.len() as u64;
        if let Some(builder) = self.builder.as_mut() {
            builder.add_program(b.rank, &b.prog).map_err(|e| {
                error_at(
                    self.name,
                    self.text,
                    b.rank_tok.start,
                    b.rank_tok.end,
                    e.to_string(),
                )
            })?;
        }
        Ok(())
    }

    /// Reads `[tag T] [as NAME]` after a point-to-point call's fixed arguments.
    fn p2p_options(
        &self,
        rest: &[Tok],
        allow_any: bool,
        allow_name: bool,
        line_end: usize,
        all: &[Tok],
    ) -> Result<(u32, Option<Tok>), ParseError> {
        let mut tag = 0u32;
        let mut name = None;
        let mut i = 0;
        while i < rest.len() {
            let kw = self.word(rest[i]);
            let Some(&val) = rest.get(i + 1) else {
                return match kw {
                    "tag" | "as" => Err(self.missing(
                        all,
                        line_end,
                        if kw == "tag" {
                            "a tag"
                        } else {
                            "a request name"
                        },
                    )),
                    _ => Err(self.err(rest[i], "unexpected word (expected `tag T` or `as NAME`)")),
                };
            };
            match kw {
                "tag" => tag = self.tag_arg(val, allow_any)?,
                "as" if allow_name => {
                    if !is_name(self.word(val)) {
                        return Err(self.err(
                            val,
                            "a request name is letters, digits and `_`, not starting with a digit",
                        ));
                    }
                    name = Some(val);
                }
                _ => {
                    let expect = if allow_name {
                        "`tag T` or `as NAME`"
                    } else {
                        "`tag T`"
                    };
                    return Err(self.err(rest[i], format!("unexpected word (expected {expect})")));
                }
            }
            i += 2;
        }
        Ok((tag, name))
    }

    /// Checks that statement `toks` has exactly `n` arguments (`what` names them when missing).
    fn exact(&self, toks: &[Tok], line_end: usize, n: usize, what: &str) -> Result<(), ParseError> {
        let args = &toks[1..];
        if args.len() < n {
            Err(self.missing(toks, line_end, what))
        } else if args.len() > n {
            let kw = self.word(toks[0]);
            Err(self.err(args[n], format!("unexpected word after `{kw}`'s arguments")))
        } else {
            Ok(())
        }
    }

    /// One statement (a line's words): the header first, then per keyword its own reader.
    fn statement(&mut self, toks: &[Tok], line_end: usize) -> Result<(), ParseError> {
        let head = toks[0];
        let kw = self.word(head);
        if self.builder.is_none() {
            return self.header(toks, line_end);
        }
        match kw {
            "ranks" => Err(self.err(head, "`ranks` is given twice")),
            "rank" => self.rank_block(toks, line_end),
            "compute" | "sleep" => {
                let args = &toks[1..];
                self.exact(toks, line_end, 1, "a duration (such as `12.5us`)")?;
                let ns = match parse_duration(self.word(args[0])) {
                    Some(Ok(ns)) => ns,
                    Some(Err(())) => return Err(self.err(args[0], "duration is too long")),
                    None => {
                        return Err(self.err(
                            args[0],
                            "expected a duration: a number with a unit ns, us, ms or s",
                        ))
                    }
                };
                self.block(head)?.prog.calc(ns);
                Ok(())
            }
            "send" | "recv" | "isend" | "irecv" | "ssend" | "issend" => self.p2p(toks, line_end),
            "comm" => self.comm(toks, line_end),
            "put" | "get" | "fetch" => self.rma(toks, line_end),
            "wait" | "waitall" => self.wait(toks, line_end),
            _ => self.collective_call(toks, line_end),
        }
    }

    /// `ranks N`, the first statement: starts the workload.
    fn header(&mut self, toks: &[Tok], line_end: usize) -> Result<(), ParseError> {
        let (head, args) = (toks[0], &toks[1..]);
        if self.word(head) != "ranks" {
            return Err(self.err(head, "a trace starts with `ranks N`"));
        }
        self.exact(toks, line_end, 1, "a number of ranks")?;
        let w = self.word(args[0]);
        match w.parse::<u64>() {
            Ok(n) if (1..=MAX_RANKS).contains(&n) => {
                self.nranks = n as u32;
                self.builder = Some(WorkloadBuilder::new(n as u32));
                Ok(())
            }
            _ if !w.is_empty() && w.bytes().all(|b| b.is_ascii_digit()) => Err(self.err(
                args[0],
                format!("the number of ranks must be 1 to 2^24 = {MAX_RANKS}"),
            )),
            _ => Err(self.err(args[0], "expected a number of ranks")),
        }
    }

    /// `rank R` or `rank R:`: ends the block before and starts R's.
    fn rank_block(&mut self, toks: &[Tok], line_end: usize) -> Result<(), ParseError> {
        let args = &toks[1..];
        let Some(&rt) = args.first() else {
            return Err(self.missing(toks, line_end, "a rank"));
        };
        let w = self.word(rt);
        let rtok = if w.len() > 1 && w.ends_with(':') {
            Tok {
                start: rt.start,
                end: rt.end - 1,
            }
        } else {
            rt
        };
        let extra = match args.get(1) {
            Some(t) if self.word(*t) == ":" && rtok.end == rt.end => args.get(2),
            other => other,
        };
        if let Some(t) = extra {
            return Err(self.err(*t, "unexpected word after `rank R`"));
        }
        let r = self.rank_arg(rtok, false)?;
        self.finish_block()?;
        if self.builder.as_ref().is_some_and(|b| b.is_defined(r)) {
            return Err(self.err(rtok, format!("rank {r} is defined twice")));
        }
        self.block = Some(Block {
            rank: r,
            rank_tok: rtok,
            prog: SeqProgram::new(),
            named: HashMap::new(),
            outstanding: Vec::new(),
            coll_sinks: Vec::new(),
            colls: 0,
            coll_hash: 0,
            group_colls: HashMap::new(),
        });
        Ok(())
    }

    /// Refuses request name `name` while a request of that name is outstanding.
    fn check_name_free(&self, name: Option<Tok>) -> Result<(), ParseError> {
        if let (Some(t), Some(b)) = (name, self.block.as_ref()) {
            if b.named.contains_key(self.word(t)) {
                return Err(self.err(
                    t,
                    "a request of this name is still outstanding (wait for it first)",
                ));
            }
        }
        Ok(())
    }

    /// `send`, `recv`, `isend`, `irecv`, `ssend`, `issend`: `PEER SIZE [tag T] [as NAME]`.
    fn p2p(&mut self, toks: &[Tok], line_end: usize) -> Result<(), ParseError> {
        let (head, args) = (toks[0], &toks[1..]);
        let kw = self.word(head);
        let is_send = kw.ends_with("send");
        let nonblocking = kw.starts_with('i');
        if args.len() < 2 {
            return Err(self.missing(
                toks,
                line_end,
                if args.is_empty() { "a rank" } else { "a size" },
            ));
        }
        let peer = self.rank_arg(args[0], !is_send)?;
        let bytes = self.size_arg(args[1])?;
        let (tag, name) = self.p2p_options(&args[2..], !is_send, nonblocking, line_end, toks)?;
        let op = match OpKind::p2p(is_send, peer, tag, bytes) {
            // MPI_Ssend / MPI_Issend: complete only once the receive has started.
            OpKind::Send { to, tag, bytes } if kw.ends_with("ssend") => {
                OpKind::Ssend { to, tag, bytes }
            }
            op => op,
        };
        let name_str = name.map(|t| self.word(t));
        self.check_name_free(name)?;
        let b = self.block(head)?;
        if !nonblocking {
            b.prog.blocking(op);
            return Ok(());
        }
        let req = Req::Op(b.prog.nonblocking(op));
        b.outstanding.push((req, name_str));
        if let Some(n) = name_str {
            b.named.insert(n, req);
        }
        Ok(())
    }

    /// `wait NAME`, `waitall [NAME…]` (no name: every outstanding request).
    fn wait(&mut self, toks: &[Tok], line_end: usize) -> Result<(), ParseError> {
        let (head, args) = (toks[0], &toks[1..]);
        if self.word(head) == "wait" {
            self.exact(toks, line_end, 1, "a request name")?;
        }
        let mut reqs = Vec::with_capacity(args.len());
        for &t in args {
            let n = self.word(t);
            let b = self.block(head)?;
            let Some(r) = b.named.remove(n) else {
                // Built only when needed: an error finds its line by scanning the
                // text before it, so building one per name made parsing quadratic.
                return Err(self.err(t, "no outstanding request has this name"));
            };
            b.outstanding.retain(|&(q, _)| q != r);
            reqs.push(r);
        }
        let b = self.block(head)?;
        if args.is_empty() {
            reqs.extend(b.outstanding.drain(..).map(|(r, _)| r));
            b.named.clear();
        }
        let mut ops: Vec<Local> = Vec::with_capacity(reqs.len());
        for r in reqs {
            match r {
                Req::Op(i) => ops.push(i),
                Req::Coll(c) => ops.extend(
                    b.coll_sinks
                        .get_mut(c)
                        .map(std::mem::take)
                        .unwrap_or_default(),
                ),
            }
        }
        b.prog.wait(&ops);
        Ok(())
    }

    /// A collective (any other keyword, which [`Parser::collective`] reads or refuses),
    /// expanded into the rank's program by the algorithm chosen for it.
    fn collective_call(&mut self, toks: &[Tok], line_end: usize) -> Result<(), ParseError> {
        let (head, args) = (toks[0], &toks[1..]);
        let kw = self.word(head);
        let call = self.collective(kw, head, args, toks, line_end)?;
        self.block(head)?;
        self.check_name_free(call.name)?;
        let name_str = call.name.map(|t| self.word(t));
        let algos = &self.opts.algorithms;
        let nranks = self.nranks;
        let total = self.total_ops;
        let group = call.group.and_then(|g| self.groups.get(g as usize));
        let Some(b) = self.block.as_mut() else {
            return Ok(());
        };
        // The members (world ranks) and this rank's place among them; the reader
        // checked membership when it read `on NAME`.
        let (members, pos): (Option<&[Rank]>, Rank) = match group {
            Some(g) => (Some(&g.members), g.position(b.rank).unwrap_or(0)),
            None => (None, b.rank),
        };
        let size = members.map_or(nranks, |m| m.len() as u32);
        // The error is built only when needed: it counts the lines before it, and
        // building it for every collective made parsing quadratic in the trace's length.
        if total + b.prog.len() as u64 + algos.ops_bound(&call.coll, size) > MAX_OPS {
            return Err(error_at(
                self.name,
                self.text,
                head.start,
                head.end,
                format!("the trace expands into more than {MAX_OPS} operations"),
            ));
        }
        // The call's number: per group, or among the world-wide collectives (whose
        // tags are unchanged by groups' existence).
        let sig = mix(coll_signature(&call.coll), u64::from(call.nonblocking));
        let tag = match call.group {
            Some(g) => {
                let e = b.group_colls.entry(g).or_insert((0, 0));
                let tag = group_coll_tag(g, e.0);
                e.0 += 1;
                e.1 = mix(e.1, sig);
                tag
            }
            None => {
                let tag = coll_tag(b.colls);
                b.colls += 1;
                b.coll_hash = mix(b.coll_hash, sig);
                tag
            }
        };
        let expand = |p: &mut SeqProgram| match members {
            Some(m) => algos.expand_on(p, m, pos, tag, &call.coll),
            None => algos.expand(p, pos, nranks, tag, &call.coll),
        };
        if !call.nonblocking {
            expand(&mut b.prog);
            return Ok(());
        }
        let mut own = SeqProgram::new();
        expand(&mut own);
        let sinks = b.prog.nonblocking_program(&own);
        let req = Req::Coll(b.coll_sinks.len());
        b.coll_sinks.push(sinks);
        b.outstanding.push((req, name_str));
        if let Some(n) = name_str {
            b.named.insert(n, req);
        }
        Ok(())
    }

    /// `put RANK SIZE [as NAME]`, `get …`, `fetch …`: a one-sided transfer with RANK (the
    /// target), [`OpKind::Rma`]. A put sends SIZE and gets an empty acknowledgement back, a get
    /// sends an empty request and gets SIZE back, a fetch (read-modify-write) both. Without a
    /// name it is blocking: the next call waits for its completion at the origin.
    fn rma(&mut self, toks: &[Tok], line_end: usize) -> Result<(), ParseError> {
        let (head, args) = (toks[0], &toks[1..]);
        if args.len() < 2 {
            let what = if args.is_empty() { "a rank" } else { "a size" };
            return Err(self.missing(toks, line_end, what));
        }
        let target = self.rank_arg(args[0], false)?;
        let bytes = self.size_arg(args[1])?;
        let name = match &args[2..] {
            [] => None,
            [kw, n] if self.word(*kw) == "as" => {
                if !is_name(self.word(*n)) {
                    return Err(self.err(
                        *n,
                        "a request name is letters, digits and `_`, not starting with a digit",
                    ));
                }
                Some(self.word(*n))
            }
            [kw] if self.word(*kw) == "as" => {
                return Err(self.missing(toks, line_end, "a request name"))
            }
            [w, ..] => return Err(self.err(*w, "unexpected word (expected `as NAME`)")),
        };
        let (out, back) = match self.word(head) {
            "put" => (bytes, 0),
            "get" => (0, bytes),
            _ => (bytes, bytes),
        };
        let op = OpKind::Rma { target, out, back };
        let b = self.block(head)?;
        let Some(n) = name else {
            b.prog.blocking(op);
            return Ok(());
        };
        if b.named.contains_key(n) {
            return Err(self.err(
                args[3],
                "a request of this name is still outstanding (wait for it first)",
            ));
        }
        let req = Req::Op(b.prog.nonblocking(op));
        b.outstanding.push((req, Some(n)));
        b.named.insert(n, req);
        Ok(())
    }

    /// `comm NAME RANK…`: a communicator group, world ranks in communicator rank order.
    fn comm(&mut self, toks: &[Tok], line_end: usize) -> Result<(), ParseError> {
        let args = &toks[1..];
        let Some(&nt) = args.first() else {
            return Err(self.missing(toks, line_end, "a communicator name"));
        };
        let name = self.word(nt);
        if !is_name(name) {
            return Err(self.err(
                nt,
                "a communicator name is letters, digits and `_`, not starting with a digit",
            ));
        }
        if self.group_names.contains_key(name) {
            return Err(self.err(nt, format!("communicator `{name}` is defined twice")));
        }
        if args.len() < 2 {
            return Err(self.missing(toks, line_end, "the communicator's world ranks"));
        }
        if self.groups.len() as u32 >= MAX_GROUPS {
            return Err(self.err(
                nt,
                format!("more than {MAX_GROUPS} communicators (each needs its own tags)"),
            ));
        }
        let mut members = Vec::with_capacity(args.len() - 1);
        for &t in &args[1..] {
            members.push(self.rank_arg(t, false)?);
        }
        let mut by_rank: Vec<(Rank, u32)> = members
            .iter()
            .enumerate()
            .map(|(i, &r)| (r, i as u32))
            .collect();
        by_rank.sort_unstable();
        if let Some(w) = by_rank.windows(2).find(|w| w[0].0 == w[1].0) {
            // The second listing is the one to point at.
            let t = args[1 + w[0].1.max(w[1].1) as usize];
            return Err(self.err(
                t,
                format!("rank {} is listed twice in communicator `{name}`", w[0].0),
            ));
        }
        let g = self.groups.len() as u32;
        // Members whose blocks are finished called nothing on it (a group is defined before
        // its first use): they are its reference, so a later member calling on it differs.
        let reference = members
            .iter()
            .find(|&&r| self.builder.as_ref().is_some_and(|b| b.is_defined(r)))
            .map(|&r| CollRef {
                rank: r,
                count: 0,
                hash: 0,
            });
        for &r in &members {
            self.member_of.entry(r).or_default().push(g);
        }
        self.groups.push(Group {
            name,
            members,
            by_rank,
            reference,
        });
        self.group_names.insert(name, g);
        Ok(())
    }

    fn collective(
        &self,
        kw: &str,
        head: Tok,
        args: &[Tok],
        toks: &[Tok],
        line_end: usize,
    ) -> Result<CollCall, ParseError> {
        let (base, nonblocking) = match kw.strip_prefix('i') {
            Some(b) if COLLECTIVES.contains(&b) => (b, true),
            _ => (kw, false),
        };
        if !COLLECTIVES.contains(&base) {
            return Err(self.err(
                head,
                "unknown operation (expected compute, send, recv, isend, irecv, wait, waitall, \
                 comm, barrier, bcast, reduce, allreduce, alltoall, allgather, gather, scatter, \
                 reducescatter, scan, exscan, or a collective's nonblocking form such as \
                 iallreduce)",
            ));
        }
        let rooted = matches!(base, "bcast" | "reduce" | "gather" | "scatter");
        let sized = base != "barrier";
        // `root` first, so `bcast 0 8` is told what is wrong rather than that a size is missing.
        if let (true, Some(&t)) = (rooted, args.first()) {
            if self.word(t) != "root" {
                return Err(self.err(t, format!("expected `root R` (as in `{kw} root 0 1KiB`)")));
            }
        }
        let want = if rooted {
            3
        } else if sized {
            1
        } else {
            0
        };
        if args.len() < want {
            let what = if rooted && args.is_empty() {
                "`root R`"
            } else if rooted && args.len() == 1 {
                "a root rank"
            } else {
                "a size"
            };
            return Err(self.missing(toks, line_end, what));
        }
        let (group, name) = self.coll_options(kw, &args[want..], nonblocking, toks, line_end)?;
        let root = match (rooted, group.and_then(|g| self.groups.get(g as usize))) {
            (false, _) => 0,
            (true, None) => self.rank_arg(args[1], false)?,
            (true, Some(g)) => self.group_root(args[1], g)?,
        };
        let bytes = if sized {
            self.size_arg(args[want - 1])?
        } else {
            0
        };
        let coll = match base {
            "barrier" => Collective::Barrier,
            "bcast" => Collective::Bcast { root, bytes },
            "reduce" => Collective::Reduce {
                root,
                bytes,
                compute_ns: 0,
            },
            "allreduce" => Collective::Allreduce {
                bytes,
                compute_ns: 0,
            },
            "alltoall" => Collective::Alltoall { bytes },
            "allgather" => Collective::Allgather { bytes },
            "gather" => Collective::Gather { root, bytes },
            "scatter" => Collective::Scatter { root, bytes },
            "scan" => Collective::Scan { bytes },
            "exscan" => Collective::Exscan { bytes },
            _ => Collective::ReduceScatter {
                counts: BlockCounts::Uniform(bytes),
                compute_ns: 0,
            },
        };
        Ok(CollCall {
            coll,
            nonblocking,
            group,
            name,
        })
    }
    /// A collective's `on NAME` (a communicator group) and, for the nonblocking forms,
    /// `as NAME`, in `args` (the words after its arguments): the group's index and the name.
    fn coll_options(
        &self,
        kw: &str,
        args: &[Tok],
        nonblocking: bool,
        toks: &[Tok],
        line_end: usize,
    ) -> Result<(Option<u32>, Option<Tok>), ParseError> {
        let mut group: Option<u32> = None;
        let mut name: Option<Tok> = None;
        let mut i = 0;
        while let Some(&kt) = args.get(i) {
            let k = self.word(kt);
            if !(k == "on" || (k == "as" && nonblocking)) {
                return Err(self.err(kt, format!("unexpected word after `{kw}`'s arguments")));
            }
            let Some(&val) = args.get(i + 1) else {
                let what = if k == "on" {
                    "a communicator name"
                } else {
                    "a request name"
                };
                return Err(self.missing(toks, line_end, what));
            };
            if (k == "on" && group.is_some()) || (k == "as" && name.is_some()) {
                return Err(self.err(kt, format!("`{k}` is given twice")));
            }
            let v = self.word(val);
            if k == "as" {
                if !is_name(v) {
                    return Err(self.err(
                        val,
                        "a request name is letters, digits and `_`, not starting with a digit",
                    ));
                }
                name = Some(val);
            } else {
                let Some(&g) = self.group_names.get(v) else {
                    return Err(self.err(
                        val,
                        "no communicator has this name (define it with `comm NAME RANK…` \
                     before its first use)",
                    ));
                };
                if let (Some(b), Some(grp)) = (self.block.as_ref(), self.groups.get(g as usize)) {
                    if grp.position(b.rank).is_none() {
                        return Err(self.err(
                            val,
                            format!("rank {} is not a member of communicator `{v}`", b.rank),
                        ));
                    }
                }
                group = Some(g);
            }
            i += 2;
        }
        Ok((group, name))
    }

    /// Root token `t` of a collective on group `g`: a communicator rank, as in MPI.
    fn group_root(&self, t: Tok, g: &Group<'_>) -> Result<Rank, ParseError> {
        let w = self.word(t);
        let n = g.members.len() as u64;
        match w.parse::<u64>() {
            Ok(r) if r < n => Ok(r as Rank),
            _ if !w.is_empty() && w.bytes().all(|b| b.is_ascii_digit()) => Err(self.err(
                t,
                format!("root is outside communicator `{}`'s ranks 0..{n}", g.name),
            )),
            _ => Err(self.err(t, "expected a rank")),
        }
    }
}

pub(crate) fn parse(text: &str, name: &str, opts: &ParseOptions) -> Result<Workload, ParseError> {
    let mut p = Parser {
        name,
        text,
        opts,
        nranks: 0,
        builder: None,
        block: None,
        coll_ref: None,
        total_ops: 0,
        groups: Vec::new(),
        group_names: HashMap::new(),
        member_of: HashMap::new(),
    };
    let bytes = text.as_bytes();
    let mut toks: Vec<Tok> = Vec::new();
    let mut line_start = 0;
    while line_start <= bytes.len() {
        let line_end = bytes[line_start..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(bytes.len(), |i| line_start + i);
        // Tokens: runs of non-blank bytes, up to a `#` comment.
        toks.clear();
        let mut i = line_start;
        while i < line_end {
            let c = bytes[i];
            if c == b'#' {
                break;
            }
            if c.is_ascii_whitespace() {
                i += 1;
                continue;
            }
            let s = i;
            while i < line_end && !bytes[i].is_ascii_whitespace() && bytes[i] != b'#' {
                i += 1;
            }
            toks.push(Tok { start: s, end: i });
        }
        if !toks.is_empty() {
            p.statement(&toks, line_end)?;
        }
        line_start = line_end + 1;
    }
    if p.builder.is_none() {
        return Err(error_at(
            name,
            text,
            text.len(),
            text.len(),
            "expected `ranks N`, found end of input",
        ));
    }
    p.finish_block()?;
    let builder = p.builder.take().unwrap_or_else(|| WorkloadBuilder::new(0));
    // Ranks without a block call no collectives: wrong when the others do.
    if let Some(r) = &p.coll_ref {
        if r.count > 0 {
            if let Some(missing) = (0..p.nranks).find(|&q| !builder.is_defined(q)) {
                return Err(error_at(
                    name,
                    text,
                    text.len(),
                    text.len(),
                    format!(
                        "rank {missing} has no block, but rank {} calls {} collectives; every \
                         rank must call the same collectives",
                        r.rank, r.count
                    ),
                ));
            }
        }
    }
    // Likewise the members of a group without a block, when other members call on it.
    for g in &p.groups {
        let Some(r) = g.reference.as_ref().filter(|r| r.count > 0) else {
            continue;
        };
        if let Some(missing) = g.members.iter().find(|&&q| !builder.is_defined(q)) {
            return Err(error_at(
                name,
                text,
                text.len(),
                text.len(),
                format!(
                    "rank {missing} has no block, but rank {} calls {} collectives on `{}`; \
                     every member of a communicator must call its collectives",
                    r.rank, r.count, g.name
                ),
            ));
        }
    }
    Ok(builder.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_durations() {
        assert_eq!(parse_size_unit("1KiB"), Some(Ok(1024)));
        assert_eq!(parse_size_unit("3MB"), Some(Ok(3_000_000)));
        assert_eq!(parse_size_unit("64"), Some(Ok(64)));
        assert_eq!(parse_size_unit("64B"), Some(Ok(64)));
        assert_eq!(parse_size_unit("9223372036854775808"), Some(Err(())));
        assert_eq!(parse_size_unit("99999999999999999999999"), Some(Err(())));
        assert_eq!(parse_size_unit("1Kib"), None);
        assert_eq!(parse_size_unit("-1"), None);
        assert_eq!(parse_duration("12.5us"), Some(Ok(12_500)));
        assert_eq!(parse_duration("3s"), Some(Ok(3_000_000_000)));
        assert_eq!(parse_duration(".5ms"), Some(Ok(500_000)));
        assert_eq!(parse_duration("1.2.3ns"), None);
        assert_eq!(parse_duration("5"), None);
        assert_eq!(parse_duration("1e3us"), None);
        assert_eq!(parse_duration("99999999999999999999999999s"), Some(Err(())));
        // None of the command line's leniency: µs, sign, space.
        assert_eq!(parse_duration("2µs"), None);
        assert_eq!(parse_duration("-1us"), None);
        assert_eq!(parse_duration("+1us"), None);
        assert_eq!(parse_duration("1 us"), None);
        // Digits that overflow f64 are too long, not malformed.
        assert_eq!(
            parse_duration(&format!("{}s", "9".repeat(400))),
            Some(Err(()))
        );
    }
}
