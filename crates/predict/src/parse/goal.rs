//! GOAL schedules (LogGOPSim's input, Hoefler, Siebert, Lumsdaine 2010) into a [`Workload`].
//!
//! ```text
//! num_ranks 2
//! rank 0 {
//!   l1: send 10b to 1 tag 0
//!   l2: calc 100 cpu 0        // `cpu 0` / `nic 0` only: one CPU and one NIC per rank
//!   l2 requires l1
//! }
//! rank 1 { recv 10b from 0 tag 0 }
//! ```
//!
//! GOAL is free-form (newlines are blanks), has `//`, `/* */` and `#` comments, per-rank
//! labels, `requires` (start after the other completed) and `irequires` (start after the other
//! started), ranks in any order (missing ranks have no operations) and sizes in bytes with an
//! optional `b`. `calc` is in nanoseconds. This is all of LogGOPSim's grammar (`txt2bin.re`):
//! `recv … from -1` is any source and `tag -1` any tag (also `tag 4294967295`, the same any tag
//! as Schedgen writes it), for receives; a send to `-1` or with any tag, and `cpu N`/`nic N`
//! other than 0 (several CPUs or NICs working side by side), are refused by name, since commperf
//! does not model them. Options may come in any order (LogGOPSim wants `tag`, `cpu`, `nic`).
//!
//! Speed matters: a million-rank broadcast schedule is about 100 MB and must parse well under
//! two seconds. So this is a hand-written scanner over bytes: no regex, no per-line strings, one
//! label map and one set of vectors reused for every rank, positions as byte offsets that become
//! line and column only when an error is reported.

use super::{error_at, ParseError, ParseOptions, MAX_BYTES, MAX_NS, MAX_RANKS};
use crate::workload::{DepKind, Local, OpKind, Workload, WorkloadBuilder, ANY};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// FxHash (rustc's hasher): labels are short and trusted not to be adversarial for speed's
/// sake — a crafted file can only slow its own parse down.
#[derive(Default)]
struct Fx(u64);

impl Hasher for Fx {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..chunk.len()].copy_from_slice(chunk);
            self.0 = (self.0.rotate_left(5) ^ u64::from_le_bytes(w))
                .wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }
    fn write_u8(&mut self, i: u8) {
        self.0 = (self.0.rotate_left(5) ^ i as u64).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_usize(&mut self, i: usize) {
        self.0 = (self.0.rotate_left(5) ^ i as u64).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn finish(&self) -> u64 {
        self.0.rotate_left(26)
    }
}

type LabelMap<'a> = HashMap<&'a [u8], Local, BuildHasherDefault<Fx>>;

/// A token: bytes `start..end` of the input.
#[derive(Clone, Copy)]
struct Tok {
    start: usize,
    end: usize,
}

struct Scanner<'a> {
    name: &'a str,
    text: &'a str,
    b: &'a [u8],
    pos: usize,
}

/// Bytes that end a word: blanks and GOAL's punctuation.
fn is_delim(c: u8) -> bool {
    matches!(
        c,
        b' ' | b'\t' | b'\n' | b'\r' | b'\x0b' | b'\x0c' | b'{' | b'}' | b':' | b'#'
    )
}

impl<'a> Scanner<'a> {
    fn err(&self, t: Tok, msg: impl Into<String>) -> ParseError {
        error_at(self.name, self.text, t.start, t.end, msg)
    }

    /// Skips blanks and comments.
    fn skip(&mut self) -> Result<(), ParseError> {
        let b = self.b;
        loop {
            while self.pos < b.len()
                && matches!(
                    b[self.pos],
                    b' ' | b'\t' | b'\n' | b'\r' | b'\x0b' | b'\x0c'
                )
            {
                self.pos += 1;
            }
            if self.pos >= b.len() {
                return Ok(());
            }
            match b[self.pos] {
                b'#' => self.skip_line(),
                b'/' if b.get(self.pos + 1) == Some(&b'/') => self.skip_line(),
                b'/' if b.get(self.pos + 1) == Some(&b'*') => {
                    let open = self.pos;
                    match b[self.pos + 2..].windows(2).position(|w| w == b"*/") {
                        Some(i) => self.pos += 2 + i + 2,
                        None => {
                            return Err(self.err(
                                Tok {
                                    start: open,
                                    end: open + 2,
                                },
                                "comment is never closed (missing `*/`)",
                            ))
                        }
                    }
                }
                _ => return Ok(()),
            }
        }
    }

    fn skip_line(&mut self) {
        match self.b[self.pos..].iter().position(|&c| c == b'\n') {
            Some(i) => self.pos += i + 1,
            None => self.pos = self.b.len(),
        }
    }

    /// The next byte after blanks and comments, not consumed.
    fn peek(&mut self) -> Result<Option<u8>, ParseError> {
        self.skip()?;
        Ok(self.b.get(self.pos).copied())
    }

    /// The next word (empty at end of input or before punctuation).
    fn word(&mut self) -> Result<Tok, ParseError> {
        self.skip()?;
        let start = self.pos;
        let b = self.b;
        while self.pos < b.len() && !is_delim(b[self.pos]) {
            // `//` and `/*` start comments even right after a word.
            if b[self.pos] == b'/' && matches!(b.get(self.pos + 1), Some(b'/' | b'*')) {
                break;
            }
            self.pos += 1;
        }
        if self.pos == start && self.pos < b.len() {
            // A punctuation byte where a word was expected: it is the token.
            self.pos += 1;
            return Ok(Tok {
                start,
                end: start + 1,
            });
        }
        Ok(Tok {
            start,
            end: self.pos,
        })
    }

    fn bytes(&self, t: Tok) -> &'a [u8] {
        &self.b[t.start..t.end]
    }

    fn expect_word(&mut self, want: &str) -> Result<(), ParseError> {
        let t = self.word()?;
        if self.bytes(t) != want.as_bytes() {
            return Err(self.unexpected(t, &format!("`{want}`")));
        }
        Ok(())
    }

    fn unexpected(&self, t: Tok, what: &str) -> ParseError {
        if t.start >= self.b.len() {
            self.err(t, format!("expected {what}, found end of input"))
        } else {
            self.err(t, format!("expected {what}"))
        }
    }

    /// An unsigned number ≤ `max` (`what` names it in errors).
    fn number(&mut self, what: &str, max: u64) -> Result<(u64, Tok), ParseError> {
        let t = self.word()?;
        match parse_u64(self.bytes(t)) {
            Some(v) if v <= max => Ok((v, t)),
            Some(_) => Err(self.err(t, format!("{what} is larger than {max}"))),
            None if t.start < t.end && self.bytes(t).iter().all(u8::is_ascii_digit) => {
                Err(self.err(t, format!("{what} is larger than {max}")))
            }
            None => Err(self.unexpected(t, what)),
        }
    }

    /// A size: digits with an optional `b`.
    fn size(&mut self) -> Result<u64, ParseError> {
        let t = self.word()?;
        let w = self.bytes(t);
        let digits = match w.last() {
            Some(b'b' | b'B') => &w[..w.len() - 1],
            _ => w,
        };
        match parse_u64(digits) {
            Some(v) if v <= MAX_BYTES => Ok(v),
            Some(_) => Err(self.err(t, format!("size is larger than {MAX_BYTES} bytes"))),
            None if !digits.is_empty() && digits.iter().all(u8::is_ascii_digit) => {
                Err(self.err(t, format!("size is larger than {MAX_BYTES} bytes")))
            }
            None => Err(self.unexpected(t, "a size in bytes (such as `8b`)")),
        }
    }

    /// Consumes the next word if it is one of `words` and returns its index. One scan for
    /// all the optional keywords after an operation (most often the next word is a label).
    fn accept_any(&mut self, words: &[&[u8]]) -> Result<Option<usize>, ParseError> {
        self.skip()?;
        let save = self.pos;
        let t = self.word()?;
        let w = self.bytes(t);
        match words.iter().position(|k| *k == w) {
            Some(i) => Ok(Some(i)),
            None => {
                self.pos = save;
                Ok(None)
            }
        }
    }
}

/// A tag after `tag`: a number below 2^32 − 1, or any tag, written `-1` (LogGOPSim's grammar)
/// or `4294967295` (what Schedgen writes for it: LogGOPSim stores any tag as that `uint32_t`).
fn any_or_tag(s: &mut Scanner<'_>, is_send: bool) -> Result<u32, ParseError> {
    let t = s.word()?;
    let w = s.bytes(t);
    if w == b"-1" || w == b"4294967295" {
        if is_send {
            // LogGOPSim matches such a send with a receive of any tag; commperf's matching has
            // wildcards on the receive side only, so the send would match nothing.
            return Err(s.err(
                t,
                "a send with any tag is not modelled (LogGOPSim matches it with every receive; \
                 commperf only matches wildcard receives)",
            ));
        }
        return Ok(ANY);
    }
    s.pos = t.start;
    Ok(s.number("a tag (or -1 for any tag)", u32::MAX as u64 - 1)?
        .0 as u32)
}

/// The number after `cpu` or `nic`: LogGOPSim runs operations of different CPUs (or NICs) of a
/// rank side by side; commperf models one of each, so only 0 (the default) is accepted.
fn one_unit(s: &mut Scanner<'_>, cpu: bool) -> Result<(), ParseError> {
    let what = if cpu { "cpu" } else { "nic" };
    let (n, t) = s.number(&format!("a {what} number"), u64::MAX)?;
    if n != 0 {
        return Err(s.err(
            t,
            format!(
                "`{what} {n}`: commperf models one CPU and one NIC per rank (LogGOPSim runs \
                 other {what}s side by side), so only `{what} 0` is accepted"
            ),
        ));
    }
    Ok(())
}

/// Digits only, no sign, no overflow.
pub(crate) fn parse_u64(w: &[u8]) -> Option<u64> {
    if w.is_empty() {
        return None;
    }
    let mut v: u64 = 0;
    for &c in w {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add((c - b'0') as u64)?;
    }
    Some(v)
}

fn is_label(w: &[u8]) -> bool {
    !w.is_empty()
        && w.iter()
            .all(|&c| c.is_ascii_alphanumeric() || c == b'_' || c == b'.')
}

/// A dependency whose labels were not both known when it was read (a forward reference).
struct Pending {
    op: Tok,
    on: Tok,
    kind: DepKind,
}

/// One rank's block as read: its operations and dependencies by label. Reused for every rank:
/// a million ranks must not mean a million allocations of each.
#[derive(Default)]
struct RankBlock<'a> {
    ops: Vec<OpKind>,
    deps: Vec<(Local, Local, DepKind)>,
    /// Where each dependency was written (its first label), for the cycle report.
    dep_at: Vec<Tok>,
    labels: LabelMap<'a>,
    pending: Vec<Pending>,
}

impl<'a> RankBlock<'a> {
    fn clear(&mut self) {
        self.ops.clear();
        self.deps.clear();
        self.dep_at.clear();
        self.labels.clear();
        self.pending.clear();
    }

    /// Adds `op`, labelled `label` when it has one.
    fn push(
        &mut self,
        s: &Scanner<'a>,
        op_tok: Tok,
        label: Option<Tok>,
        op: OpKind,
    ) -> Result<(), ParseError> {
        if self.ops.len() >= u32::MAX as usize / 2 {
            return Err(s.err(op_tok, "too many operations in one rank"));
        }
        let idx = self.ops.len() as Local;
        self.ops.push(op);
        if let Some(l) = label {
            if self.labels.insert(s.bytes(l), idx).is_some() {
                return Err(s.err(l, "label is defined twice in this rank"));
            }
        }
        Ok(())
    }

    /// `lA requires lB` / `lA irequires lB`, `op_tok` being `lA`: recorded now when both labels
    /// are known, else once the block is read ([`RankBlock::resolve_pending`]).
    fn dependency(&mut self, s: &mut Scanner<'a>, op_tok: Tok) -> Result<(), ParseError> {
        let ow = s.bytes(op_tok);
        if !is_label(ow) {
            return Err(s.unexpected(op_tok, "an operation, a dependency or `}`"));
        }
        let k = s.word()?;
        let kind = match s.bytes(k) {
            b"requires" => DepKind::Requires,
            b"irequires" => DepKind::IRequires,
            _ => return Err(s.unexpected(k, "`requires` or `irequires`")),
        };
        let on = s.word()?;
        if !is_label(s.bytes(on)) {
            return Err(s.unexpected(on, "a label"));
        }
        match (self.labels.get(ow), self.labels.get(s.bytes(on))) {
            (Some(&a), Some(&b)) => {
                if a == b {
                    return Err(s.err(on, "an operation cannot depend on itself"));
                }
                self.deps.push((a, b, kind));
                self.dep_at.push(op_tok);
            }
            _ => self.pending.push(Pending {
                op: op_tok,
                on,
                kind,
            }),
        }
        Ok(())
    }

    /// The dependencies written before their labels, now that the block is read.
    fn resolve_pending(&mut self, s: &Scanner<'a>) -> Result<(), ParseError> {
        for p in &self.pending {
            let a = *self
                .labels
                .get(s.bytes(p.op))
                .ok_or_else(|| s.err(p.op, "no operation has this label in this rank"))?;
            let b = *self
                .labels
                .get(s.bytes(p.on))
                .ok_or_else(|| s.err(p.on, "no operation has this label in this rank"))?;
            if a == b {
                return Err(s.err(p.on, "an operation cannot depend on itself"));
            }
            self.deps.push((a, b, p.kind));
            self.dep_at.push(p.op);
        }
        Ok(())
    }
}

pub(crate) fn parse(text: &str, name: &str, _opts: &ParseOptions) -> Result<Workload, ParseError> {
    let mut s = Scanner {
        name,
        text,
        b: text.as_bytes(),
        pos: 0,
    };
    s.expect_word("num_ranks")?;
    let (nranks, _) = s.number("a number of ranks", MAX_RANKS)?;
    let nranks = nranks as u32;
    let mut builder = WorkloadBuilder::new(nranks);
    let mut blk = RankBlock::default();
    loop {
        if s.peek()?.is_none() {
            break;
        }
        s.expect_word("rank")?;
        let (rank, rank_tok) = s.number("a rank", u64::MAX)?;
        if rank >= nranks as u64 {
            return Err(s.err(rank_tok, format!("rank {rank} is outside 0..{nranks}")));
        }
        let rank = rank as u32;
        if builder.is_defined(rank) {
            return Err(s.err(rank_tok, format!("rank {rank} is defined twice")));
        }
        let open = s.word()?;
        if s.bytes(open) != b"{" {
            return Err(s.unexpected(open, "`{`"));
        }
        blk.clear();
        rank_body(&mut s, nranks, &mut blk)?;
        blk.resolve_pending(&s)?;
        if let Some(cycle) = find_cycle(blk.ops.len(), &blk.deps) {
            return Err(cycle_error(
                &s,
                rank,
                &blk.labels,
                &blk.deps,
                &blk.dep_at,
                &cycle,
            ));
        }
        builder
            .add_rank(rank, &blk.ops, &blk.deps)
            .map_err(|e| s.err(rank_tok, e.to_string()))?;
    }
    Ok(builder.finish())
}

/// A rank's statements after its `{`, up to its `}`: `[label:] send|recv|calc …` and
/// dependencies.
fn rank_body<'a>(
    s: &mut Scanner<'a>,
    nranks: u32,
    blk: &mut RankBlock<'a>,
) -> Result<(), ParseError> {
    loop {
        let t = s.word()?;
        let w = s.bytes(t);
        if w == b"}" {
            return Ok(());
        }
        if t.start == t.end {
            return Err(s.unexpected(t, "an operation or `}`"));
        }
        // `label:` before an operation.
        let (op_tok, label) = if s.peek()? == Some(b':') {
            if !is_label(w) {
                return Err(s.err(t, "a label is letters, digits, `_` and `.`"));
            }
            s.pos += 1;
            (s.word()?, Some(t))
        } else {
            (t, None)
        };
        let op = match s.bytes(op_tok) {
            b"send" => p2p(s, true, nranks)?,
            b"recv" => p2p(s, false, nranks)?,
            b"calc" => {
                let (ns, _) = s.number("a time in nanoseconds", MAX_NS)?;
                while let Some(k) = s.accept_any(&[b"cpu", b"nic"])? {
                    one_unit(s, k == 0)?;
                }
                OpKind::Calc { ns }
            }
            _ if label.is_some() => {
                return Err(s.unexpected(op_tok, "`send`, `recv` or `calc`"));
            }
            _ => {
                blk.dependency(s, op_tok)?;
                continue;
            }
        };
        blk.push(s, op_tok, label, op)?;
    }
}

/// `send SIZE to RANK …` / `recv SIZE from RANK …` after its keyword.
fn p2p(s: &mut Scanner<'_>, is_send: bool, nranks: u32) -> Result<OpKind, ParseError> {
    let max_rank = (nranks as u64).saturating_sub(1);
    let bytes = s.size()?;
    s.expect_word(if is_send { "to" } else { "from" })?;
    // LogGOPSim's grammar: `from -1` is any source (receives only).
    let peer_tok = s.word()?;
    let peer = if s.bytes(peer_tok) == b"-1" {
        if is_send {
            return Err(s.err(
                peer_tok,
                "a send needs a destination rank (-1, any source, is for receives)",
            ));
        }
        ANY
    } else {
        s.pos = peer_tok.start;
        let (peer, peer_tok) = s.number("a rank", u64::MAX)?;
        if peer > max_rank || nranks == 0 {
            return Err(s.err(peer_tok, format!("rank {peer} is outside 0..{nranks}")));
        }
        peer as u32
    };
    let mut tag = 0u32;
    while let Some(k) = s.accept_any(&[b"tag", b"cpu", b"nic"])? {
        if k == 0 {
            tag = any_or_tag(s, is_send)?;
        } else {
            one_unit(s, k == 1)?;
        }
    }
    Ok(OpKind::p2p(is_send, peer, tag, bytes))
}

/// A dependency cycle among `n` operations, if there is one: the indices into `deps` of its
/// edges in order (edge k leads from `deps[k].0` to the operation it waits for, `deps[k].1`,
/// where the next edge starts; the last ends where the first starts).
fn find_cycle(n: usize, deps: &[(Local, Local, DepKind)]) -> Option<Vec<usize>> {
    // Programs in order (every dependency on an earlier operation) cannot have one: the common
    // case costs one pass.
    if deps.iter().all(|&(op, on, _)| on < op) {
        return None;
    }
    // Edges op → on in compressed rows, then an iterative depth-first search with colours.
    let mut start = vec![0u32; n + 1];
    for &(op, _, _) in deps {
        start[op as usize + 1] += 1;
    }
    for i in 0..n {
        start[i + 1] += start[i];
    }
    let mut fill = start.clone();
    let mut edges = vec![0u32; deps.len()];
    for (k, &(op, _, _)) in deps.iter().enumerate() {
        edges[fill[op as usize] as usize] = k as u32;
        fill[op as usize] += 1;
    }
    const WHITE: u8 = 0;
    const GREY: u8 = 1;
    const BLACK: u8 = 2;
    let mut colour = vec![WHITE; n];
    // (operation, next edge to follow, edge that led here).
    let mut stack: Vec<(usize, u32, usize)> = Vec::new();
    for root in 0..n {
        if colour[root] != WHITE {
            continue;
        }
        colour[root] = GREY;
        stack.push((root, start[root], usize::MAX));
        while let Some(top) = stack.last_mut() {
            let (v, next) = (top.0, top.1);
            if next == start[v + 1] {
                colour[v] = BLACK;
                stack.pop();
                continue;
            }
            top.1 += 1;
            let k = edges[next as usize] as usize;
            let w = deps[k].1 as usize;
            match colour[w] {
                WHITE => {
                    colour[w] = GREY;
                    stack.push((w, start[w], k));
                }
                GREY => {
                    // w is on the stack: the cycle is the path from w down to v, then k.
                    let from = stack.iter().position(|e| e.0 == w)?;
                    let mut cycle: Vec<usize> = stack[from + 1..].iter().map(|e| e.2).collect();
                    cycle.push(k);
                    return Some(cycle);
                }
                _ => {}
            }
        }
    }
    None
}

/// `file:line:column: dependency cycle in rank R: l1 -> l2 -> l1 (…)` at the first of the
/// cycle's dependencies in the file, naming every label and the line of every dependency.
fn cycle_error(
    s: &Scanner<'_>,
    rank: u32,
    labels: &LabelMap<'_>,
    deps: &[(Local, Local, DepKind)],
    dep_at: &[Tok],
    cycle: &[usize],
) -> ParseError {
    let mut names: HashMap<Local, &str> = HashMap::new();
    for (&l, &i) in labels {
        names.insert(i, std::str::from_utf8(l).unwrap_or("?"));
    }
    let name = |i: Local| names.get(&i).copied().unwrap_or("?");
    let line = |t: Tok| 1 + s.b[..t.start].iter().filter(|&&c| c == b'\n').count();
    let mut path: Vec<&str> = cycle.iter().map(|&k| name(deps[k].0)).collect();
    path.push(name(deps[cycle[0]].0));
    let each: Vec<String> = cycle
        .iter()
        .map(|&k| {
            let (op, on, kind) = deps[k];
            let word = match kind {
                DepKind::Requires => "requires",
                DepKind::IRequires => "irequires",
            };
            format!(
                "{} {word} {} on line {}",
                name(op),
                name(on),
                line(dep_at[k])
            )
        })
        .collect();
    let first = cycle
        .iter()
        .map(|&k| dep_at[k])
        .min_by_key(|t| t.start)
        .unwrap_or(Tok { start: 0, end: 0 });
    // No token quoted: the message names them all.
    error_at(
        s.name,
        s.text,
        first.start,
        first.start,
        format!(
            "dependency cycle in rank {rank}: {} ({}): none of them can ever start",
            path.join(" -> "),
            each.join(", ")
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(t: &str) -> Result<Workload, ParseError> {
        parse(t, "t.goal", &ParseOptions::default())
    }

    #[test]
    fn labels_comments_forward_references_and_cpu_nic_zero() {
        let w = p(
            "num_ranks 3 /* three */\n# hash\nrank 2 { l2 requires l1 // fwd\n\
                   l1: calc 100 cpu 0\nl2: send 8b to 0 tag 4 nic 0 cpu 0\n l3: recv 8 from 0\n\
                   l3 irequires l2 }\nrank 0 {recv 8b from 2 tag 4\nsend 8b to 2}",
        )
        .unwrap();
        assert_eq!(w.nranks(), 3);
        assert_eq!(w.rank_ops(0), 0..2);
        assert_eq!(w.rank_ops(1), 2..2);
        assert_eq!(w.op(2), OpKind::Calc { ns: 100 });
        assert_eq!(
            w.op(3),
            OpKind::Send {
                to: 0,
                tag: 4,
                bytes: 8
            }
        );
        assert_eq!(w.deps(3).collect::<Vec<_>>(), vec![(2, DepKind::Requires)]);
        assert_eq!(w.deps(4).collect::<Vec<_>>(), vec![(3, DepKind::IRequires)]);
    }

    #[test]
    fn errors_point_at_the_token() {
        let e = p("num_ranks 2\nrank 0 {\nl1: send 8b to 2 tag 0\n}").unwrap_err();
        assert_eq!(
            e.to_string(),
            "t.goal:3:16: rank 2 is outside 0..2 (at `2`)"
        );
        let e = p("num_ranks 2\nrank 0 {\nl1: calc 5\nl1: calc 6\n}").unwrap_err();
        assert_eq!((e.line, e.column, e.token.as_str()), (4, 1, "l1"));
        let e = p("num_ranks 2\nrank 0 {\nl1: calc 5\nl1 requires l9\n}").unwrap_err();
        assert_eq!((e.line, e.column, e.token.as_str()), (4, 13, "l9"));
        let e = p("num_ranks 2\nrank 0 {\nl1: calc 5").unwrap_err();
        assert_eq!(
            e.message,
            "expected an operation or `}`, found end of input"
        );
        let e = p("num_ranks 2 /* open").unwrap_err();
        assert_eq!((e.line, e.column, e.token.as_str()), (1, 13, "/*"));
    }

    #[test]
    fn a_dependency_cycle_is_reported_as_the_cycle() {
        // Two labels waiting for each other, written after both exist.
        let e = p(
            "num_ranks 2\nrank 1 {\nl1: send 8b to 0\nl2: calc 5\nl1 requires l2\n\
                   l2 requires l1\n}\nrank 0 { recv 8b from 1 }",
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "t.goal:5:1: dependency cycle in rank 1: l1 -> l2 -> l1 (l1 requires l2 on line 5, \
             l2 requires l1 on line 6): none of them can ever start"
        );
        // Three, through forward references and irequires, in a rank whose other
        // dependencies are fine: only the cycle is named.
        let e = p(
            "num_ranks 1\nrank 0 {\nb requires c\na: calc 1\nb: calc 2\nc: calc 3\n\
                   d: calc 4\nd requires a\nc irequires d\nd requires b\n}",
        )
        .unwrap_err();
        assert_eq!(
            e.message,
            "dependency cycle in rank 0: b -> c -> d -> b (b requires c on line 3, c irequires \
             d on line 9, d requires b on line 10): none of them can ever start"
        );
        assert_eq!((e.line, e.column, e.token.as_str()), (3, 1, ""));
        // Forward references without a cycle are fine.
        let w = p("num_ranks 1\nrank 0 {\na requires b\na: calc 1\nb: calc 2\n}").unwrap();
        assert_eq!(w.deps(0).collect::<Vec<_>>(), vec![(1, DepKind::Requires)]);
    }
}
