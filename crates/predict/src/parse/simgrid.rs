//! SimGrid time-independent traces (SMPI replay) into a [`Workload`].
//!
//! A trace is either one file whose lines are `<rank> <action> <args…>` for every rank, or an
//! index file listing one trace file per line (paths relative to the index's directory). The
//! actions and their argument orders follow SimGrid's replay
//! (`src/smpi/internals/smpi_replay.cpp`, SimGrid 3.27–3.28, 2021; the parsers `SendRecvParser`,
//! `WaitTestParser`, `BcastArgParser`, `ReduceArgParser`, `AllToAllArgParser`, `GatherArgParser`,
//! `GatherVArgParser`, `ScatterArgParser`, `ScatterVArgParser`, `ReduceScatterArgParser`,
//! `AllToAllVArgParser`):
//!
//! | action | arguments |
//! |---|---|
//! | `init` | `[x]` — any argument makes the default datatype MPI_DOUBLE (MPE traces), none MPI_BYTE (TAU) |
//! | `send` `isend` `recv` `irecv` | `partner tag count [datatype]` (a recv count ≤ 0 means unknown: 0 bytes here) |
//! | `wait` `test` | `src dst tag` — the request of that key; `test` is a no-op here |
//! | `waitall` | every outstanding request |
//! | `compute` | `flops` (ns = flops / host speed · 1e9) |
//! | `sleep` | `seconds` |
//! | `barrier` | |
//! | `bcast` | `count [root [datatype]]` |
//! | `reduce` | `comm comp [root [datatype]]` (comp flops computed after the collective) |
//! | `allreduce` | `comm comp [datatype]` |
//! | `alltoall` | `send recv [dt1 [dt2]]` (per pair) |
//! | `alltoallv` | `sendbuf sendcounts×n recvbuf recvcounts×n [dt1 dt2]` |
//! | `gather` | `send recv [root [dt1 [dt2]]]`; `allgather`: `send recv [dt1 [dt2]]` |
//! | `gatherv` | `send recvcounts×n [root [dt1 [dt2]]]`; `allgatherv`: `send recvcounts×n [dt1 [dt2]] \| disps×n \| dt1 dt2 disps×n` |
//! | `scatter` | `send recv [root [dt1 [dt2]]]`; `scatterv`: `sendcounts×n recv [root [dt1 [dt2]]]` |
//! | `reducescatter` | `recvcounts×n comp [datatype]` |
//! | `finalize` `comm_size` `comm_split` `comm_dup` `location` | ignored |
//!
//! The layouts and a lone trailing datatype (the send one; the receive one stays the default)
//! are SimGrid 3.32's, as its replay re-traces them. The root's counts of a gatherv and a
//! scatterv are written on the root's line only (zeros elsewhere): each rank's block is taken
//! from its own line, checked against the root's (see [`v_counts`]).
//!
//! Counts are in datatypes; datatype ids are SimGrid's whole table ([`DATATYPES`]: 0
//! MPI_DOUBLE … 6 MPI_BYTE, … 26 MPI_C_DOUBLE_COMPLEX, … 59 MPI_COUNT); an id outside it is an
//! error. Numbers may be written `1e6`. The number of ranks is one more than the largest rank
//! that starts a line or is a point-to-point partner; a file whose lines are all one rank's, in
//! a trace of more ranks, is refused as one rank's file of a split trace (give the index).

use super::own::{coll_signature, mix};
use super::{
    error_at, ParseError, ParseOptions, TraceError, MAX_BYTES, MAX_NS, MAX_OPS, MAX_RANKS,
};
use crate::collectives::{coll_tag, BlockCounts, Collective, COLL_TAG_BASE};
use crate::workload::{OpKind, Rank, Request, SeqProgram, Workload, WorkloadBuilder, ANY};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::Path;

#[derive(Clone, Copy)]
struct Tok {
    start: usize,
    end: usize,
}

/// One input file.
struct Source<'a> {
    name: &'a str,
    text: &'a str,
}

#[derive(Default)]
struct RankState {
    prog: SeqProgram,
    /// Bytes of the default datatype (set by `init`).
    dt: u64,
    /// Outstanding requests by SimGrid's key (src, dst, tag), oldest first.
    reqs: HashMap<(i64, i64, i64), VecDeque<Request>>,
    colls: u64,
    coll_hash: u64,
    /// Where the rank first appears, for errors about the rank as a whole.
    first: (usize, usize, usize),
}

/// SimGrid's datatype ids (what `Datatype::encode` writes and `Datatype::decode` reads), with
/// their names and sizes in bytes on x86-64, as SimGrid 3.32 itself reports them: a program
/// sending one element of every predefined datatype, traced with `smpirun -trace-ti`, and
/// `MPI_Type_size` of each (ids 0–6 are the classic ones SimGrid's own examples use). Ids 55 and
/// 56 are MPI_UB and MPI_LB, markers of size 0 that carry no data and can never be traced; 58 is
/// SimGrid's internal MPI_PTR (a pointer). An id outside this table is refused, never guessed:
/// a wrong size is a silently wrong prediction.
const DATATYPES: [(&str, u64); 60] = [
    ("MPI_DOUBLE", 8),
    ("MPI_INT", 4),
    ("MPI_CHAR", 1),
    ("MPI_SHORT", 2),
    ("MPI_LONG", 8),
    ("MPI_FLOAT", 4),
    ("MPI_BYTE", 1),
    ("MPI_LONG_LONG", 8),
    ("MPI_SIGNED_CHAR", 1),
    ("MPI_UNSIGNED_CHAR", 1),
    ("MPI_UNSIGNED_SHORT", 2),
    ("MPI_UNSIGNED", 4),
    ("MPI_UNSIGNED_LONG", 8),
    ("MPI_UNSIGNED_LONG_LONG", 8),
    ("MPI_LONG_DOUBLE", 16),
    ("MPI_WCHAR", 4),
    ("MPI_C_BOOL", 1),
    ("MPI_INT8_T", 1),
    ("MPI_INT16_T", 2),
    ("MPI_INT32_T", 4),
    ("MPI_INT64_T", 8),
    ("MPI_UINT8_T", 1),
    ("MPI_UINT16_T", 2),
    ("MPI_UINT32_T", 4),
    ("MPI_UINT64_T", 8),
    ("MPI_C_FLOAT_COMPLEX", 8),
    ("MPI_C_DOUBLE_COMPLEX", 16),
    ("MPI_C_LONG_DOUBLE_COMPLEX", 32),
    ("MPI_AINT", 8),
    ("MPI_OFFSET", 8),
    ("MPI_FLOAT_INT", 8),
    ("MPI_LONG_INT", 16),
    ("MPI_DOUBLE_INT", 16),
    ("MPI_SHORT_INT", 8),
    ("MPI_2INT", 8),
    ("MPI_2FLOAT", 8),
    ("MPI_2DOUBLE", 16),
    ("MPI_2LONG", 16),
    ("MPI_REAL", 4),
    ("MPI_REAL4", 4),
    ("MPI_REAL8", 8),
    ("MPI_REAL16", 16),
    ("MPI_COMPLEX8", 8),
    ("MPI_COMPLEX16", 16),
    ("MPI_COMPLEX32", 16),
    ("MPI_INTEGER1", 4),
    ("MPI_INTEGER2", 2),
    ("MPI_INTEGER4", 4),
    ("MPI_INTEGER8", 8),
    ("MPI_INTEGER16", 16),
    ("MPI_LONG_DOUBLE_INT", 32),
    ("MPI_CXX_BOOL", 1),
    ("MPI_CXX_FLOAT_COMPLEX", 8),
    ("MPI_CXX_DOUBLE_COMPLEX", 16),
    ("MPI_CXX_LONG_DOUBLE_COMPLEX", 32),
    ("MPI_UB", 0),
    ("MPI_LB", 0),
    ("MPI_PACKED", 1),
    ("MPI_PTR", 8),
    ("MPI_COUNT", 8),
];

/// The name and size of SimGrid datatype `id`, if SimGrid has one.
fn simgrid_datatype(id: i64) -> Option<(&'static str, u64)> {
    usize::try_from(id)
        .ok()
        .and_then(|i| DATATYPES.get(i).copied())
}

fn tokens(text: &str, line: (usize, usize), out: &mut Vec<Tok>) {
    out.clear();
    let b = text.as_bytes();
    let mut i = line.0;
    while i < line.1 {
        if b[i].is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let s = i;
        while i < line.1 && !b[i].is_ascii_whitespace() {
            i += 1;
        }
        out.push(Tok { start: s, end: i });
    }
}

/// Byte ranges of the lines of `text`.
fn lines(text: &str) -> impl Iterator<Item = (usize, usize)> + '_ {
    let b = text.as_bytes();
    let mut start = 0;
    std::iter::from_fn(move || {
        if start > b.len() {
            return None;
        }
        let end = b[start..]
            .iter()
            .position(|&c| c == b'\n')
            .map_or(b.len(), |i| start + i);
        let r = (start, end);
        start = end + 1;
        Some(r)
    })
}

struct Ctx<'a, 'b> {
    src: &'b Source<'a>,
    toks: &'b [Tok],
    line_end: usize,
    opts: &'b ParseOptions,
    nranks: u32,
}

impl Ctx<'_, '_> {
    fn word(&self, t: Tok) -> &str {
        self.src.text.get(t.start..t.end).unwrap_or("")
    }

    fn err(&self, t: Tok, msg: impl Into<String>) -> ParseError {
        error_at(self.src.name, self.src.text, t.start, t.end, msg)
    }

    /// Argument `i` (0 = the first after the action), or an error naming what is missing.
    fn arg(&self, i: usize, what: &str) -> Result<Tok, ParseError> {
        match self.toks.get(i + 2) {
            Some(&t) => Ok(t),
            None => {
                let at = self.toks.last().map_or(self.line_end, |t| t.end);
                Err(error_at(
                    self.src.name,
                    self.src.text,
                    at,
                    at,
                    format!("`{}` needs {what} here", self.word(self.toks[1])),
                ))
            }
        }
    }

    fn nargs(&self) -> usize {
        self.toks.len().saturating_sub(2)
    }

    fn at_most(&self, n: usize) -> Result<(), ParseError> {
        match self.toks.get(n + 2) {
            Some(&t) => Err(self.err(
                t,
                format!("too many arguments for `{}`", self.word(self.toks[1])),
            )),
            None => Ok(()),
        }
    }

    /// An integer (SimGrid's `stoi` fields), optionally allowing -1.
    fn int(&self, t: Tok, what: &str, min: i64, max: i64) -> Result<i64, ParseError> {
        let w = self.word(t);
        let digits = w.strip_prefix('-').unwrap_or(w);
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(self.err(t, format!("expected {what} (an integer)")));
        }
        match w.parse::<i64>() {
            Ok(v) if (min..=max).contains(&v) => Ok(v),
            _ => Err(self.err(t, format!("{what} must be in {min}..={max}"))),
        }
    }

    fn rank(&self, t: Tok, allow_any: bool) -> Result<Rank, ParseError> {
        let min = if allow_any { -1 } else { 0 };
        let v = self.int(t, "a rank", min, self.nranks as i64 - 1)?;
        Ok(if v < 0 { ANY } else { v as Rank })
    }

    /// A real number (SimGrid's `parse_double` fields): finite and ≥ 0 unless `allow_neg`.
    fn real(&self, t: Tok, what: &str, allow_neg: bool) -> Result<f64, ParseError> {
        let w = self.word(t);
        // Rust also reads `inf`, `nan` and `infinity`: only digits, signs, points and exponents.
        let plain = !w.is_empty()
            && w.bytes()
                .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'));
        match w.parse::<f64>() {
            Ok(v) if plain && v.is_finite() && (allow_neg || v >= 0.0) => Ok(v),
            Ok(_) if plain => Err(self.err(t, format!("{what} must be a finite number ≥ 0"))),
            _ => Err(self.err(t, format!("expected {what} (a number such as 1e6)"))),
        }
    }

    /// `count` datatypes of `dt` bytes, as bytes.
    fn bytes(&self, t: Tok, count: f64, dt: u64) -> Result<u64, ParseError> {
        let b = (count * dt as f64).round();
        if b > MAX_BYTES as f64 {
            return Err(self.err(
                t,
                format!("message is larger than 2^48 = {MAX_BYTES} bytes"),
            ));
        }
        Ok(b.max(0.0) as u64)
    }

    fn size(&self, i: usize, what: &str, dt: u64) -> Result<u64, ParseError> {
        let t = self.arg(i, what)?;
        let c = self.real(t, what, false)?;
        self.bytes(t, c, dt)
    }

    fn flops_ns(&self, t: Tok) -> Result<u64, ParseError> {
        let flops = self.real(t, "a number of flops", false)?;
        let speed = self.opts.host_speed_flops;
        if !(speed.is_finite() && speed > 0.0) {
            return Err(self.err(
                t,
                format!("host speed {speed} flop/s is not a positive number"),
            ));
        }
        self.ns(t, flops / speed * 1e9)
    }

    fn ns(&self, t: Tok, ns: f64) -> Result<u64, ParseError> {
        let ns = ns.round();
        if !(ns.is_finite() && ns <= MAX_NS as f64) {
            return Err(self.err(t, "duration is too long"));
        }
        Ok(ns.max(0.0) as u64)
    }

    /// An optional datatype at argument `i`: its size, or `default`.
    fn datatype(&self, i: usize, default: u64) -> Result<u64, ParseError> {
        let Some(&t) = self.toks.get(i + 2) else {
            return Ok(default);
        };
        let id = self.int(t, "a datatype id", i64::MIN + 1, i64::MAX)?;
        match simgrid_datatype(id) {
            Some((name, 0)) => Err(self.err(
                t,
                format!("datatype {id} is {name}, a marker that carries no data"),
            )),
            Some((_, bytes)) => Ok(bytes),
            None => Err(self.err(
                t,
                format!(
                    "datatype {id} is not one of SimGrid's (0 MPI_DOUBLE … 26 \
                     MPI_C_DOUBLE_COMPLEX … 59 MPI_COUNT): its size is unknown"
                ),
            )),
        }
    }

    /// `n` counts starting at argument `i`, in datatypes of `dt` bytes.
    fn counts(&self, i: usize, dt: u64) -> Result<Vec<u64>, ParseError> {
        (0..self.nranks as usize)
            .map(|k| {
                let t = self.arg(i + k, &format!("{} counts (one per rank)", self.nranks))?;
                let c = self.int(t, "a count", 0, i64::MAX)?;
                self.bytes(t, c as f64, dt)
            })
            .collect()
    }
}

/// Largest rank mentioned: line ranks and point-to-point partners. Out-of-range numbers are
/// reported by the main pass.
fn max_rank(src: &Source<'_>, toks: &mut Vec<Tok>) -> Result<Option<u64>, ParseError> {
    let mut max: Option<u64> = None;
    for line in lines(src.text) {
        tokens(src.text, line, toks);
        let Some(&t0) = toks.first() else { continue };
        let w0 = &src.text[t0.start..t0.end];
        if w0.starts_with('#') {
            continue;
        }
        let mut seen = |t: Tok| -> Result<(), ParseError> {
            if let Ok(r) = src.text[t.start..t.end].parse::<u64>() {
                if r >= MAX_RANKS {
                    return Err(error_at(
                        src.name,
                        src.text,
                        t.start,
                        t.end,
                        format!("rank {r} is beyond the limit of 2^24 ranks"),
                    ));
                }
                max = Some(max.map_or(r, |m| m.max(r)));
            }
            Ok(())
        };
        seen(t0)?;
        if let (Some(a), Some(&p)) = (toks.get(1), toks.get(2)) {
            if matches!(
                &src.text[a.start..a.end],
                "send" | "isend" | "recv" | "irecv"
            ) {
                seen(p)?;
            }
        }
    }
    Ok(max)
}

fn parse_sources(srcs: &[Source<'_>], opts: &ParseOptions) -> Result<Workload, ParseError> {
    let mut toks = Vec::new();
    let mut max: Option<u64> = None;
    for s in srcs {
        if let Some(m) = max_rank(s, &mut toks)? {
            max = Some(max.map_or(m, |x| x.max(m)));
        }
    }
    let nranks = max.map_or(0, |m| m + 1) as u32;
    let vcalls = v_counts(srcs, opts, nranks);
    let mut ranks: BTreeMap<Rank, RankState> = BTreeMap::new();
    let mut total_ops: u64 = 0;
    for (si, src) in srcs.iter().enumerate() {
        for line in lines(src.text) {
            tokens(src.text, line, &mut toks);
            let Some(&t0) = toks.first() else { continue };
            if src.text[t0.start..t0.end].starts_with('#') {
                continue;
            }
            let c = Ctx {
                src,
                toks: &toks,
                line_end: line.1,
                opts,
                nranks,
            };
            let r = c.rank(t0, false)?;
            if toks.len() < 2 {
                return Err(error_at(
                    src.name,
                    src.text,
                    t0.end,
                    t0.end,
                    "expected an action after the rank",
                ));
            }
            let st = ranks.entry(r).or_insert_with(|| RankState {
                dt: 1,
                first: (si, t0.start, t0.end),
                ..RankState::default()
            });
            let before = st.prog.len() as u64;
            action(&c, r, st, total_ops, srcs, &vcalls)?;
            total_ops += st.prog.len() as u64 - before;
        }
    }
    // Every rank must call the same collectives in the same order.
    let mut reference: Option<(Rank, u64, u64)> = None;
    for (&r, st) in &ranks {
        match reference {
            None => reference = Some((r, st.colls, st.coll_hash)),
            Some((r0, n0, h0)) if n0 != st.colls || h0 != st.coll_hash => {
                let (si, a, b) = st.first;
                let src = &srcs[si];
                return Err(error_at(
                    src.name,
                    src.text,
                    a,
                    b,
                    format!(
                        "rank {r} calls collectives differently from rank {r0} ({} calls against \
                         {n0}, or other kinds or roots); every rank must call the same \
                         collectives in the same order",
                        st.colls
                    ),
                ));
            }
            Some(_) => {}
        }
    }
    if let Some((r0, n0, _)) = reference {
        if n0 > 0 {
            if let Some(missing) = (0..nranks).find(|q| !ranks.contains_key(q)) {
                let src = &srcs[srcs.len() - 1];
                let end = src.text.len();
                return Err(error_at(
                    src.name,
                    src.text,
                    end,
                    end,
                    format!(
                        "rank {missing} has no actions, but rank {r0} calls {n0} collectives; \
                         every rank must call the same collectives"
                    ),
                ));
            }
        }
    }
    let mut b = WorkloadBuilder::new(nranks);
    for (&r, st) in &ranks {
        if let Err(e) = b.add_program(r, &st.prog) {
            let (si, a, z) = st.first;
            return Err(error_at(srcs[si].name, srcs[si].text, a, z, e.to_string()));
        }
    }
    Ok(b.finish())
}

/// Where a token is: its source (an index into the sources) and the token.
#[derive(Clone, Copy)]
struct Loc {
    src: usize,
    tok: Tok,
}

/// Every rank's own count in one gatherv or scatterv call, by rank (`None` where that rank's
/// call of this index is something else, or unreadable: the main pass reports those).
struct VCall {
    own: Vec<Option<(u64, Loc)>>,
}

/// The gatherv and scatterv calls, by their index among each rank's collectives.
type VCalls = HashMap<u64, VCall>;

/// Actions that are not collectives (and so take no collective call index).
const NOT_COLLECTIVES: [&str; 15] = [
    "init",
    "finalize",
    "comm_size",
    "comm_split",
    "comm_dup",
    "location",
    "send",
    "isend",
    "recv",
    "irecv",
    "wait",
    "test",
    "waitall",
    "compute",
    "sleep",
];

/// The first of the two passes: every rank's own count in every gatherv and scatterv. SimGrid's
/// tracer writes a gatherv's receive counts and a scatterv's send counts on the root's line
/// only (MPI reads them there only), zeros on the others' lines, while our tree algorithms
/// forward other ranks' blocks through non-roots: every rank must expand the call with the
/// same, whole, vector, which only the other ranks' lines can give it. Unreadable lines are
/// skipped here; the main pass reports them where they are.
fn v_counts(srcs: &[Source<'_>], opts: &ParseOptions, nranks: u32) -> VCalls {
    let mut toks = Vec::new();
    let mut state: HashMap<Rank, (u64, u64)> = HashMap::new(); // (default datatype, calls)
    let mut calls = VCalls::new();
    for (si, src) in srcs.iter().enumerate() {
        for line in lines(src.text) {
            tokens(src.text, line, &mut toks);
            let (Some(&t0), Some(&t1)) = (toks.first(), toks.get(1)) else {
                continue;
            };
            let c = Ctx {
                src,
                toks: &toks,
                line_end: line.1,
                opts,
                nranks,
            };
            let Ok(me) = c.rank(t0, false) else { continue };
            let (dt, colls) = state.entry(me).or_insert((1, 0));
            let name = c.word(t1);
            if name == "init" {
                *dt = if c.nargs() > 0 { 8 } else { 1 };
                continue;
            }
            if NOT_COLLECTIVES.contains(&name) {
                continue;
            }
            let k = *colls;
            *colls += 1;
            if let Ok((Collective::Gatherv { .. } | Collective::Scatterv { .. }, Some(own))) =
                collective(&c, *dt)
            {
                let call = calls.entry(k).or_insert_with(|| VCall {
                    own: vec![None; nranks as usize],
                });
                if let Some(slot) = call.own.get_mut(me as usize) {
                    *slot = Some((
                        own.bytes,
                        Loc {
                            src: si,
                            tok: own.tok,
                        },
                    ));
                }
            }
        }
    }
    calls
}

/// `file:line:column` of a token.
fn place(srcs: &[Source<'_>], at: Loc) -> String {
    let Some(src) = srcs.get(at.src) else {
        return String::new();
    };
    let e = error_at(src.name, src.text, at.tok.start, at.tok.end, "");
    format!("{}:{}:{}", e.file, e.line, e.column)
}

/// Makes the v-collective `coll`, call `k` of rank `me`, the same on every rank: a gatherv's
/// and a scatterv's counts become every rank's own (checked against the root's: MPI requires
/// them equal, and SimGrid's replay aborts on a difference), and an allgatherv's own send must
/// be its block.
fn merge_counts(
    c: &Ctx<'_, '_>,
    srcs: &[Source<'_>],
    me: Rank,
    k: u64,
    own: Option<Own>,
    coll: &mut Collective,
    vcalls: &VCalls,
) -> Result<(), ParseError> {
    let (root, counts, first, verb) = match coll {
        Collective::Gatherv { root, counts } => (*root, counts, 1, "sends"),
        Collective::Scatterv { root, counts } => (*root, counts, 0, "receives"),
        Collective::Allgatherv { counts } => {
            if let (Some(o), Some(&block)) = (own, counts.get(me as usize)) {
                if o.bytes != block {
                    return Err(c.err(
                        o.tok,
                        format!(
                            "allgatherv: rank {me} sends {} bytes, but its own block in the \
                             receive counts is {block} bytes (counts times the receive datatype); \
                             MPI requires them equal",
                            o.bytes
                        ),
                    ));
                }
            }
            return Ok(());
        }
        _ => return Ok(()),
    };
    let Some(call) = vcalls.get(&k) else {
        return Ok(());
    };
    let name = c.word(c.toks[1]).to_string();
    for (i, slot) in call.own.iter().enumerate() {
        let (Some((bytes, at)), Some(cnt)) = (slot, counts.get_mut(i)) else {
            continue;
        };
        if me == root && *cnt != *bytes {
            let t = c.arg(first + i, "counts")?;
            return Err(c.err(
                t,
                format!(
                    "{name}: the root, rank {root}, gives {cnt} bytes here for rank {i}, but \
                     rank {i} {verb} {bytes} bytes (at {}); MPI requires them equal",
                    place(srcs, *at)
                ),
            ));
        }
        *cnt = *bytes;
    }
    Ok(())
}

fn action(
    c: &Ctx<'_, '_>,
    me: Rank,
    st: &mut RankState,
    total_ops: u64,
    srcs: &[Source<'_>],
    vcalls: &VCalls,
) -> Result<(), ParseError> {
    let at = c.toks[1];
    let name = c.word(at);
    let dt = st.dt;
    let coll = match name {
        "init" => {
            c.at_most(1)?;
            // SimGrid: an argument means an MPE trace, counted in MPI_DOUBLEs.
            st.dt = if c.nargs() > 0 { 8 } else { 1 };
            return Ok(());
        }
        "finalize" | "comm_size" | "comm_split" | "comm_dup" | "location" => return Ok(()),
        "send" | "isend" | "recv" | "irecv" => return p2p(c, me, st, name),
        "wait" | "test" => return wait(c, st, name),
        "waitall" => {
            c.at_most(0)?;
            let mut all: Vec<Request> = st.reqs.drain().flat_map(|(_, q)| q).collect();
            if !all.is_empty() {
                all.sort_unstable();
                st.prog.wait(&all);
            }
            return Ok(());
        }
        "compute" => {
            c.at_most(1)?;
            let ns = c.flops_ns(c.arg(0, "a number of flops")?)?;
            st.prog.calc(ns);
            return Ok(());
        }
        "sleep" => {
            c.at_most(1)?;
            let t = c.arg(0, "a number of seconds")?;
            let s = c.real(t, "a number of seconds", false)?;
            let ns = c.ns(t, s * 1e9)?;
            st.prog.calc(ns);
            return Ok(());
        }
        _ => {
            let (mut coll, own) = collective(c, dt)?;
            merge_counts(c, srcs, me, st.colls, own, &mut coll, vcalls)?;
            coll
        }
    };
    if total_ops + c.opts.algorithms.ops_bound(&coll, c.nranks) > MAX_OPS {
        return Err(c.err(
            at,
            format!("the trace expands into more than {MAX_OPS} operations"),
        ));
    }
    let tag = coll_tag(st.colls);
    c.opts
        .algorithms
        .expand(&mut st.prog, me, c.nranks, tag, &coll);
    st.colls += 1;
    st.coll_hash = mix(st.coll_hash, coll_signature(&coll));
    Ok(())
}

/// `send`, `isend`, `recv`, `irecv`: `PARTNER TAG COUNT [DATATYPE]`; a nonblocking one's request is
/// kept under (sender, receiver, tag) for its `wait`.
fn p2p(c: &Ctx<'_, '_>, me: Rank, st: &mut RankState, name: &str) -> Result<(), ParseError> {
    let dt = st.dt;
    c.at_most(4)?;
    let is_send = name.ends_with("send");
    let pt = c.arg(0, "a partner rank")?;
    let peer = c.rank(pt, !is_send)?;
    let tt = c.arg(1, "a tag")?;
    let tag = c.int(
        tt,
        "a tag",
        if is_send { 0 } else { -1 },
        COLL_TAG_BASE as i64 - 1,
    )?;
    let st_t = c.arg(2, "a count")?;
    let count = c.real(st_t, "a count", !is_send)?;
    let bytes = c.bytes(st_t, count, c.datatype(3, dt)?)?;
    let tag32 = if tag < 0 { ANY } else { tag as u32 };
    let op = if is_send {
        OpKind::Send {
            to: peer,
            tag: tag32,
            bytes,
        }
    } else {
        OpKind::Recv {
            from: peer,
            tag: tag32,
            bytes,
        }
    };
    if name.starts_with('i') {
        let req = st.prog.nonblocking(op);
        let peer_key = if peer == ANY { -1 } else { peer as i64 };
        let key = if is_send {
            (me as i64, peer_key, tag)
        } else {
            (peer_key, me as i64, tag)
        };
        st.reqs.entry(key).or_default().push_back(req);
    } else {
        st.prog.blocking(op);
    }
    Ok(())
}

/// `wait SRC DST TAG` (and `test`, which completes nothing): the oldest request of that key.
fn wait(c: &Ctx<'_, '_>, st: &mut RankState, name: &str) -> Result<(), ParseError> {
    c.at_most(3)?;
    let mut key = [0i64; 3];
    for (i, k) in key.iter_mut().enumerate() {
        let t = c.arg(i, "src, dst and tag")?;
        *k = c.int(t, "a rank or tag", -1, i64::from(u32::MAX))?;
    }
    if name == "wait" {
        let key = (key[0], key[1], key[2]);
        // SimGrid: a wait without a request was satisfied by an earlier test.
        if let Some(q) = st.reqs.get_mut(&key) {
            if let Some(req) = q.pop_front() {
                st.prog.wait(&[req]);
            }
            if q.is_empty() {
                st.reqs.remove(&key);
            }
        }
    }
    Ok(())
}

/// A rank's own count in a v-collective whose other counts SimGrid writes on the root only:
/// a gatherv's send count, a scatterv's receive count, in bytes, with its token.
#[derive(Clone, Copy)]
struct Own {
    bytes: u64,
    tok: Tok,
}

/// The collective of the line `c`, with the rank's own count for a gatherv, allgatherv or
/// scatterv (each read by a function of its own).
fn collective(c: &Ctx<'_, '_>, dt: u64) -> Result<(Collective, Option<Own>), ParseError> {
    let at = c.toks[1];
    let name = c.word(at);
    let coll = match name {
        "barrier" => {
            c.at_most(0)?;
            Collective::Barrier
        }
        "bcast" => {
            c.at_most(3)?;
            let root = opt_root(c, 1)?;
            Collective::Bcast {
                root,
                bytes: c.size(0, "a count", c.datatype(2, dt)?)?,
            }
        }
        "reduce" | "allreduce" => {
            let rooted = name == "reduce";
            c.at_most(if rooted { 4 } else { 3 })?;
            let dt1 = c.datatype(if rooted { 3 } else { 2 }, dt)?;
            let bytes = c.size(0, "a count to communicate", dt1)?;
            let compute_ns = c.flops_ns(c.arg(1, "a number of flops to compute")?)?;
            if rooted {
                Collective::Reduce {
                    root: opt_root(c, 2)?,
                    bytes,
                    compute_ns,
                }
            } else {
                Collective::Allreduce { bytes, compute_ns }
            }
        }
        "alltoall" => {
            c.at_most(4)?;
            let dt1 = c.datatype(2, dt)?;
            let bytes = c.size(0, "a send count", dt1)?;
            c.size(1, "a receive count", c.datatype(3, dt)?)?;
            Collective::Alltoall { bytes }
        }
        "alltoallv" => {
            let n = c.nranks as usize;
            c.at_most(2 * n + 4)?;
            c.size(0, "a send buffer size", 1)?;
            c.size(n + 1, "a receive buffer size", 1)?;
            let (dt1, dt2) = if c.nargs() > 2 * n + 2 {
                (c.datatype(2 * n + 2, dt)?, c.datatype(2 * n + 3, dt)?)
            } else {
                (dt, dt)
            };
            Collective::Alltoallv {
                send: c.counts(1, dt1)?,
                recv: c.counts(n + 2, dt2)?,
            }
        }
        "gather" | "allgather" | "scatter" => {
            let rooted = name != "allgather";
            let d = usize::from(rooted);
            c.at_most(4 + d)?;
            let dt1 = c.datatype(2 + d, dt)?;
            let bytes = c.size(0, "a send count", dt1)?;
            let rbytes = c.size(1, "a receive count", c.datatype(3 + d, dt)?)?;
            match name {
                "gather" => Collective::Gather {
                    root: opt_root(c, 2)?,
                    bytes,
                },
                "scatter" => Collective::Scatter {
                    root: opt_root(c, 2)?,
                    bytes: rbytes,
                },
                _ => Collective::Allgather { bytes },
            }
        }
        "gatherv" => return gatherv(c, dt),
        "allgatherv" => return allgatherv(c, dt),
        "scatterv" => return scatterv(c, dt),
        "reducescatter" => {
            let n = c.nranks as usize;
            c.at_most(n + 2)?;
            let dt1 = c.datatype(n + 1, dt)?;
            let compute_ns = c.flops_ns(c.arg(n, "a number of flops to compute")?)?;
            Collective::ReduceScatter {
                counts: BlockCounts::PerRank(c.counts(0, dt1)?),
                compute_ns,
            }
        }
        _ => {
            return Err(c.err(
                at,
                "unknown action (SimGrid replay actions: init, finalize, comm_size, \
                 comm_split, comm_dup, send, isend, recv, irecv, test, wait, waitall, barrier, \
                 bcast, reduce, allreduce, alltoall, alltoallv, gather, scatter, gatherv, \
                 scatterv, allgather, allgatherv, reducescatter, compute, sleep, location)",
            ))
        }
    };
    // The v-forms whose own count SimGrid writes apart returned above.
    Ok((coll, None))
}

/// `gatherv`: the collective and the rank's own count.
fn gatherv(c: &Ctx<'_, '_>, dt: u64) -> Result<(Collective, Option<Own>), ParseError> {
    let n = c.nranks as usize;
    c.at_most(n + 4)?;
    let t = c.arg(0, "a send count")?;
    let own = Own {
        bytes: c.size(0, "a send count", c.datatype(n + 2, dt)?)?,
        tok: t,
    };
    Ok((
        Collective::Gatherv {
            root: opt_root(c, n + 1)?,
            counts: c.counts(1, c.datatype(n + 3, dt)?)?,
        },
        Some(own),
    ))
}

/// `allgatherv`: the collective and the rank's own count.
fn allgatherv(c: &Ctx<'_, '_>, dt: u64) -> Result<(Collective, Option<Own>), ParseError> {
    let n = c.nranks as usize;
    c.at_most(2 * n + 3)?;
    // After the counts, SimGrid 3.32's GatherVArgParser decides by the number of words
    // left (what its replay re-traces with `-trace-ti` shows, for 2 and 4 ranks): more
    // than n, the send and receive datatypes then n displacements; more than 2 (and
    // so n), displacements alone; 2, the two datatypes; 1, the send datatype alone,
    // the receive one staying the default. Any other number fails SimGrid's assertion
    // `disp_index + comm_size <= action.size()`. Displacements move no bytes.
    let rest = c.nargs().saturating_sub(n + 1);
    let shape_err = || {
        c.err(
            c.toks[c.toks.len() - 1],
            format!(
                "allgatherv takes, after its {n} counts, a send datatype, send and \
                 receive datatypes, {n} displacements, or both datatypes then {n} \
                 displacements (as SimGrid 3.32 reads it); found {rest} words"
            ),
        )
    };
    let (dt1, dt2, disps) = if rest > n {
        if rest != n + 2 {
            return Err(shape_err());
        }
        (c.datatype(n + 1, dt)?, c.datatype(n + 2, dt)?, Some(n + 3))
    } else if rest > 2 {
        if rest != n {
            return Err(shape_err());
        }
        (dt, dt, Some(n + 1))
    } else {
        (c.datatype(n + 1, dt)?, c.datatype(n + 2, dt)?, None)
    };
    if let Some(d) = disps {
        for k in 0..n {
            let t = c.arg(d + k, "a displacement")?;
            c.int(t, "a displacement", 0, i64::MAX)?;
        }
    }
    let t = c.arg(0, "a send count")?;
    let own = Own {
        bytes: c.size(0, "a send count", dt1)?,
        tok: t,
    };
    Ok((
        Collective::Allgatherv {
            counts: c.counts(1, dt2)?,
        },
        Some(own),
    ))
}

/// `scatterv`: the collective and the rank's own count.
fn scatterv(c: &Ctx<'_, '_>, dt: u64) -> Result<(Collective, Option<Own>), ParseError> {
    let n = c.nranks as usize;
    c.at_most(n + 4)?;
    // SimGrid 3.32 reads a lone trailing datatype as the send datatype (its replay
    // re-traces `… 26` as `… 26 6`), as for gatherv and alltoallv.
    let dt1 = c.datatype(n + 2, dt)?;
    let t = c.arg(n, "a receive count")?;
    let own = Own {
        bytes: c.size(n, "a receive count", c.datatype(n + 3, dt)?)?,
        tok: t,
    };
    Ok((
        Collective::Scatterv {
            root: opt_root(c, n + 1)?,
            counts: c.counts(0, dt1)?,
        },
        Some(own),
    ))
}

fn opt_root(c: &Ctx<'_, '_>, i: usize) -> Result<Rank, ParseError> {
    match c.toks.get(i + 2) {
        Some(&t) => c.rank(t, false),
        None => Ok(0),
    }
}

pub(crate) fn parse_single(
    text: &str,
    name: &str,
    opts: &ParseOptions,
) -> Result<Workload, ParseError> {
    let src = Source { name, text };
    let parsed = parse_sources(std::slice::from_ref(&src), opts);
    // A split trace's per-rank file read alone names its peers but has none of their lines:
    // it can only deadlock (or, when its v-collectives count the ranks it cannot see, be
    // misread), so say what it is instead. A rank-0 file with an error keeps its error: it may
    // be a whole trace written wrong.
    if let Some((rank, t)) = only_rank(&src) {
        let nranks = match &parsed {
            Ok(w) => w.nranks(),
            Err(_) if rank > 0 => rank + 1,
            Err(_) => 1,
        };
        if rank > 0 || nranks > 1 {
            return Err(error_at(
                name,
                text,
                t.start,
                t.end,
                format!(
                    "every line is rank {rank}'s, in a trace of at least {} ranks: this looks like one \
                     rank's file of a split SimGrid trace; give the index file instead, the one \
                     listing every rank's file, one path per line relative to the index (as \
                     `smpirun -trace-ti` writes it)",
                    nranks.max(rank + 1)
                ),
            ));
        }
    }
    parsed
}

/// The rank every action line of `src` starts with, with the first line's rank token, if they
/// are all one rank's.
fn only_rank(src: &Source<'_>) -> Option<(Rank, Tok)> {
    let mut toks = Vec::new();
    let mut first: Option<(&str, Tok)> = None;
    for line in lines(src.text) {
        tokens(src.text, line, &mut toks);
        let Some(&t0) = toks.first() else { continue };
        let w = &src.text[t0.start..t0.end];
        if w.starts_with('#') {
            continue;
        }
        match first {
            None => first = Some((w, t0)),
            Some((f, _)) if f != w => return None,
            Some(_) => {}
        }
    }
    let (w, t) = first?;
    Some((w.parse().ok()?, t))
}

/// An index file: every non-empty line is a path, none starts like a trace line (a number).
fn is_index(text: &str) -> bool {
    let mut any = false;
    for l in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if l.starts_with(|c: char| c.is_ascii_digit() || c == '#') {
            return false;
        }
        any = true;
    }
    any
}

/// An index file whose every listed file exists (relative to the index's directory).
pub(crate) fn is_existing_index(path: &Path, text: &str) -> bool {
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    is_index(text)
        && text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .all(|l| dir.join(l).is_file())
}

pub(crate) fn parse_file(
    path: &Path,
    text: &str,
    opts: &ParseOptions,
) -> Result<Workload, TraceError> {
    let name = path.display().to_string();
    if !is_index(text) {
        return Ok(parse_single(text, &name, opts)?);
    }
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    let mut files: Vec<(String, String)> = Vec::new();
    for (start, end) in lines(text) {
        let raw = &text[start..end];
        let l = raw.trim();
        if l.is_empty() {
            continue;
        }
        let p = dir.join(l);
        let body = commperf_core::read_text(&p).map_err(|e| {
            let lead = raw.len() - raw.trim_start().len();
            error_at(
                &name,
                text,
                start + lead,
                start + lead + l.len(),
                format!("cannot read the listed trace file {}: {e}", p.display()),
            )
        })?;
        files.push((p.display().to_string(), body));
    }
    let srcs: Vec<Source<'_>> = files
        .iter()
        .map(|(n, t)| Source { name: n, text: t })
        .collect();
    Ok(parse_sources(&srcs, opts)?)
}
