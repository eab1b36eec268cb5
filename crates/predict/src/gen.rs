//! Generators that write trace text: GOAL schedules and commperf's own format.
//!
//! Benchmarks and the testbed need workloads of any size whose shape is known (a million-rank
//! broadcast, an incast, a halo exchange). Writing them as text rather than building
//! [`Workload`](crate::workload::Workload)s directly means the readers are exercised on the way
//! and the same files can be fed to the CLI or to other tools (LogGOPSim reads the GOAL ones).

use crate::collectives::{Algorithms, Collective};
use crate::parse::{MAX_BYTES, MAX_OPS};
use crate::workload::{DepKind, OpKind, Request, SeqProgram, ANY};
use std::fmt;
use std::io::{self, Write};

/// Writes a LogGOPSim-style binomial-tree broadcast of `bytes` from rank 0 over `nranks` ranks:
/// every rank but the root receives from its parent (its rank with the highest set bit
/// cleared) and then sends to its children, each send requiring the receive — the layout of
/// LogGOPSim's `binary_tree_32.goal`. A million ranks give about 3.1 million operations; wrap
/// `out` in a `BufWriter`.
pub fn goal_binomial_bcast(nranks: u32, bytes: u64, out: &mut impl Write) -> io::Result<()> {
    goal_bcast(nranks, bytes, 1, out)
}

/// [`goal_binomial_bcast`] repeated `iters` times: a rank starts a repetition once everything
/// it did in the previous one has completed (its receive requires, or the root's sends
/// require, each operation of the repetition before).
pub fn goal_bcast(nranks: u32, bytes: u64, iters: u32, out: &mut impl Write) -> io::Result<()> {
    writeln!(out, "num_ranks {nranks}")?;
    // One reusable line buffer and hand-formatted numbers: this writes ~100 MB for 2^20 ranks.
    let mut buf: Vec<u8> = Vec::with_capacity(256);
    let mut itoa = Itoa::default();
    for r in 0..nranks {
        buf.clear();
        buf.extend_from_slice(b"\nrank ");
        buf.extend_from_slice(itoa.fmt(r as u64));
        buf.extend_from_slice(b" {\n");
        let (parent, first_child_bit) = binomial(r as u64);
        let mut label = 1u64;
        // Labels of the previous repetition's operations: `first..label`.
        let mut prev: Option<u64> = None;
        for _ in 0..iters {
            let first = label;
            let requires_prev = |buf: &mut Vec<u8>, itoa: &mut Itoa, me: u64| {
                if let Some(p) = prev {
                    for l in p..first {
                        buf.push(b'l');
                        buf.extend_from_slice(itoa.fmt(me));
                        buf.extend_from_slice(b" requires l");
                        buf.extend_from_slice(itoa.fmt(l));
                        buf.push(b'\n');
                    }
                }
            };
            if let Some(parent) = parent {
                buf.extend_from_slice(b"l");
                buf.extend_from_slice(itoa.fmt(label));
                buf.extend_from_slice(b": recv ");
                buf.extend_from_slice(itoa.fmt(bytes));
                buf.extend_from_slice(b"b from ");
                buf.extend_from_slice(itoa.fmt(parent));
                buf.extend_from_slice(b" tag 0\n");
                requires_prev(&mut buf, &mut itoa, label);
                label += 1;
            }
            let mut bit = first_child_bit;
            while r as u64 + bit < nranks as u64 {
                buf.push(b'l');
                buf.extend_from_slice(itoa.fmt(label));
                buf.extend_from_slice(b": send ");
                buf.extend_from_slice(itoa.fmt(bytes));
                buf.extend_from_slice(b"b to ");
                buf.extend_from_slice(itoa.fmt(r as u64 + bit));
                buf.extend_from_slice(b" tag 0\n");
                if parent.is_some() {
                    buf.push(b'l');
                    buf.extend_from_slice(itoa.fmt(label));
                    buf.extend_from_slice(b" requires l");
                    buf.extend_from_slice(itoa.fmt(first));
                    buf.push(b'\n');
                } else {
                    requires_prev(&mut buf, &mut itoa, label);
                }
                label += 1;
                bit <<= 1;
            }
            if label > first {
                prev = Some(first);
            }
            if buf.len() >= 1 << 16 {
                out.write_all(&buf)?;
                buf.clear();
            }
        }
        buf.extend_from_slice(b"}\n");
        out.write_all(&buf)?;
    }
    Ok(())
}

/// Decimal formatting without allocation.
#[derive(Default)]
struct Itoa {
    buf: [u8; 20],
}

impl Itoa {
    fn fmt(&mut self, mut v: u64) -> &[u8] {
        let mut i = self.buf.len();
        loop {
            i -= 1;
            self.buf[i] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        &self.buf[i..]
    }
}

/// The known patterns, written in commperf's own format or as GOAL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pattern {
    /// Binomial-tree broadcast from rank 0: each rank receives from its parent (its rank with
    /// the highest set bit cleared), then sends to its children.
    Bcast,
    /// Every rank but 0 sends to rank 0, which receives from all (non-blocking, one waitall).
    Incast,
    /// Every rank isends to and irecvs from every other, then waits for all.
    AllToAll,
    /// Send to r + 1 and receive from r − 1 (periodic), non-blocking, then waitall.
    RingShift,
    /// Exchange with the 4 neighbours on a periodic x × y grid (rank = row · x + column).
    Halo2D { x: u32, y: u32 },
    /// The `alltoall` collective (pairwise exchange by default).
    PairwiseAllToAll,
}

impl Pattern {
    /// The names `gen-trace` takes, as users type them.
    pub const NAMES: &'static [&'static str] = &[
        "bcast", "incast", "alltoall", "ring", "halo:XxY", "pairwise",
    ];

    /// A pattern by its `gen-trace` name; `halo:XxY` must describe `nranks` ranks.
    pub fn parse(s: &str, nranks: u32) -> Result<Pattern, String> {
        Ok(match s {
            "bcast" => Pattern::Bcast,
            "incast" => Pattern::Incast,
            "alltoall" => Pattern::AllToAll,
            "ring" => Pattern::RingShift,
            "pairwise" => Pattern::PairwiseAllToAll,
            _ => match s.strip_prefix("halo:").and_then(|d| d.split_once('x')) {
                Some((x, y)) => {
                    let (Ok(x), Ok(y)) = (x.parse::<u32>(), y.parse::<u32>()) else {
                        return Err(format!("'{s}': halo:XxY needs two whole numbers"));
                    };
                    if x as u64 * y as u64 != nranks as u64 {
                        return Err(format!(
                            "'{s}' is a grid of {} ranks: give --ranks {}",
                            x as u64 * y as u64,
                            x as u64 * y as u64
                        ));
                    }
                    Pattern::Halo2D { x, y }
                }
                None => {
                    return Err(format!(
                        "unknown pattern '{s}' (expected {})",
                        Pattern::NAMES.join(", ")
                    ))
                }
            },
        })
    }
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Pattern::Bcast => f.write_str("binomial-bcast"),
            Pattern::Incast => f.write_str("incast"),
            Pattern::AllToAll => f.write_str("alltoall"),
            Pattern::RingShift => f.write_str("ring-shift"),
            Pattern::Halo2D { x, y } => write!(f, "halo2d-{x}x{y}"),
            Pattern::PairwiseAllToAll => f.write_str("pairwise-alltoall"),
        }
    }
}

/// One call of a generated rank's program: one line of commperf's own format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Call {
    /// A point-to-point call: send or receive, blocking or not, with an explicit tag (written
    /// even when 0) and a request name.
    P2p {
        send: bool,
        blocking: bool,
        peer: u32,
        tag: Option<u32>,
        name: Option<&'static str>,
    },
    /// `waitall` with these names (none: every outstanding request).
    WaitAll(&'static [&'static str]),
    /// The `alltoall` collective.
    Alltoall,
}

/// The parent and the first child bit of rank `r` in the binomial tree rooted at 0: the parent
/// clears the highest set bit; children set each higher bit in turn.
fn binomial(r: u64) -> (Option<u64>, u64) {
    if r == 0 {
        return (None, 1);
    }
    let parent = r & !(1u64 << (63 - r.leading_zeros()));
    let first = r.next_power_of_two();
    (Some(parent), if first == r { first << 1 } else { first })
}

/// The calls of rank `r` in one repetition of `pattern` over `n` ranks.
fn calls(
    pattern: Pattern,
    n: u32,
    r: u32,
    f: &mut impl FnMut(Call) -> io::Result<()>,
) -> io::Result<()> {
    let p2p = |send, blocking, peer, tag, name| Call::P2p {
        send,
        blocking,
        peer,
        tag,
        name,
    };
    match pattern {
        Pattern::Bcast => {
            let (parent, mut bit) = binomial(r as u64);
            if let Some(p) = parent {
                f(p2p(false, true, p as u32, None, None))?;
            }
            let mut any = false;
            while r as u64 + bit < n as u64 {
                f(p2p(true, false, (r as u64 + bit) as u32, None, None))?;
                any = true;
                bit <<= 1;
            }
            if any {
                f(Call::WaitAll(&[]))?;
            }
        }
        Pattern::Incast => {
            if r == 0 {
                for s in 1..n {
                    f(p2p(false, false, s, None, None))?;
                }
                if n > 1 {
                    f(Call::WaitAll(&[]))?;
                }
            } else {
                f(p2p(true, true, 0, None, None))?;
            }
        }
        Pattern::AllToAll => {
            for i in 1..n {
                f(p2p(false, false, (r + n - i) % n, None, None))?;
            }
            for i in 1..n {
                f(p2p(true, false, (r + i) % n, None, None))?;
            }
            if n > 1 {
                f(Call::WaitAll(&[]))?;
            }
        }
        Pattern::RingShift => {
            f(p2p(false, false, (r + n - 1) % n, None, Some("from_prev")))?;
            f(p2p(true, false, (r + 1) % n, None, Some("to_next")))?;
            f(Call::WaitAll(&["from_prev", "to_next"]))?;
        }
        Pattern::Halo2D { x, y } => {
            let (cx, cy) = (r % x, r / x);
            let at = |px: u32, py: u32| py * x + px;
            // Tag = direction of travel, so a neighbour that is both left and right (x = 2)
            // still gets each message matched to the right receive.
            let nb = [
                (at((cx + 1) % x, cy), 0, at((cx + x - 1) % x, cy)),
                (at((cx + x - 1) % x, cy), 1, at((cx + 1) % x, cy)),
                (at(cx, (cy + 1) % y), 2, at(cx, (cy + y - 1) % y)),
                (at(cx, (cy + y - 1) % y), 3, at(cx, (cy + 1) % y)),
            ];
            for &(_, tag, from) in &nb {
                f(p2p(false, false, from, Some(tag), None))?;
            }
            for &(to, tag, _) in &nb {
                f(p2p(true, false, to, Some(tag), None))?;
            }
            f(Call::WaitAll(&[]))?;
        }
        Pattern::PairwiseAllToAll => f(Call::Alltoall)?,
    }
    Ok(())
}

impl Pattern {
    /// Messages one repetition of the pattern sends over `nranks` ranks.
    pub fn messages_per_iteration(self, nranks: u32) -> u64 {
        let n = nranks as u64;
        match self {
            Pattern::Bcast | Pattern::Incast => n.saturating_sub(1),
            Pattern::AllToAll | Pattern::PairwiseAllToAll => n * n.saturating_sub(1),
            Pattern::RingShift => n,
            Pattern::Halo2D { .. } => 4 * n,
        }
    }
}

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

/// Refuses, before a byte is written, a workload no reader would take back: a halo grid that is
/// not `nranks` ranks, messages above [`MAX_BYTES`], or possibly more than [`MAX_OPS`] operations
/// — which would also be gigabytes of text written for nothing. Every pattern costs at most
/// three operations a message (its send, its receive, and at most one wait), so what passes
/// here a reader takes back.
pub fn check(pattern: Pattern, nranks: u32, bytes: u64, iters: u32) -> io::Result<()> {
    if let Pattern::Halo2D { x, y } = pattern {
        if x as u64 * y as u64 != nranks as u64 {
            return Err(invalid(format!(
                "a {x}×{y} halo needs {} ranks, not {nranks}",
                x as u64 * y as u64
            )));
        }
    }
    if bytes > MAX_BYTES {
        return Err(invalid(format!(
            "{bytes} B messages: the trace readers take at most 2^48 = {MAX_BYTES} B"
        )));
    }
    let ops = pattern
        .messages_per_iteration(nranks)
        .saturating_mul(3)
        .saturating_mul(iters as u64);
    if ops > MAX_OPS {
        return Err(invalid(format!(
            "{pattern} over {nranks} ranks, {iters} iterations, is up to {ops} operations: the \
             trace readers take at most 2^26 = {MAX_OPS} (fewer ranks or iterations)"
        )));
    }
    Ok(())
}

/// Writes `iters` repetitions of `pattern` over `nranks` ranks with messages of `bytes`, in
/// commperf's own format. For [`Pattern::Halo2D`], `nranks` must be `x · y`.
pub fn own_pattern(
    pattern: Pattern,
    nranks: u32,
    bytes: u64,
    iters: u32,
    out: &mut impl Write,
) -> io::Result<()> {
    check(pattern, nranks, bytes, iters)?;
    writeln!(
        out,
        "# {pattern}: {nranks} ranks, {bytes} B, {iters} iterations"
    )?;
    writeln!(out, "ranks {nranks}")?;
    for r in 0..nranks {
        writeln!(out, "rank {r}")?;
        for _ in 0..iters {
            calls(pattern, nranks, r, &mut |c| match c {
                Call::P2p {
                    send,
                    blocking,
                    peer,
                    tag,
                    name,
                } => {
                    let verb = match (send, blocking) {
                        (true, true) => "send",
                        (true, false) => "isend",
                        (false, true) => "recv",
                        (false, false) => "irecv",
                    };
                    write!(out, "{verb} {peer} {bytes}")?;
                    if let Some(t) = tag {
                        write!(out, " tag {t}")?;
                    }
                    if let Some(n) = name {
                        write!(out, " as {n}")?;
                    }
                    writeln!(out)
                }
                Call::WaitAll([]) => writeln!(out, "waitall"),
                Call::WaitAll(names) => writeln!(out, "waitall {}", names.join(" ")),
                Call::Alltoall => writeln!(out, "alltoall {bytes}"),
            })?;
        }
    }
    Ok(())
}

/// [`own_pattern`] into a string (fails only for a [`Pattern::Halo2D`] grid that is not
/// `nranks` ranks).
pub fn own_pattern_string(
    pattern: Pattern,
    nranks: u32,
    bytes: u64,
    iters: u32,
) -> io::Result<String> {
    let mut v = Vec::new();
    own_pattern(pattern, nranks, bytes, iters, &mut v)?;
    String::from_utf8(v).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// Writes `iters` repetitions of `pattern` as a GOAL schedule that LogGOPSim and commperf's
/// GOAL reader take: the operations and dependencies commperf's own reader makes of
/// [`own_pattern`]'s text (each rank's program order as `requires` and `irequires`), so both
/// files predict the same. A collective's messages carry the call's number as their tag (the
/// own reader tags them from a reserved space above 2^31, which GOAL tools may not take).
/// [`Pattern::Bcast`] is written in LogGOPSim's layout instead ([`goal_bcast`]).
pub fn goal_pattern(
    pattern: Pattern,
    nranks: u32,
    bytes: u64,
    iters: u32,
    algorithms: &Algorithms,
    out: &mut impl Write,
) -> io::Result<()> {
    check(pattern, nranks, bytes, iters)?;
    if pattern == Pattern::Bcast {
        return goal_bcast(nranks, bytes, iters, out);
    }
    writeln!(out, "num_ranks {nranks}")?;
    let mut buf: Vec<u8> = Vec::with_capacity(4096);
    for r in 0..nranks {
        let mut prog = SeqProgram::new();
        let mut outstanding: Vec<(Request, Option<&'static str>)> = Vec::new();
        let mut colls = 0u32;
        for _ in 0..iters {
            calls(pattern, nranks, r, &mut |c| {
                match c {
                    Call::P2p {
                        send,
                        blocking,
                        peer,
                        tag,
                        name,
                    } => {
                        let op = OpKind::p2p(send, peer, tag.unwrap_or(0), bytes);
                        if blocking {
                            prog.blocking(op);
                        } else {
                            outstanding.push((prog.nonblocking(op), name));
                        }
                    }
                    Call::WaitAll(names) => {
                        let reqs: Vec<Request> = if names.is_empty() {
                            outstanding.drain(..).map(|(q, _)| q).collect()
                        } else {
                            let mut v = Vec::new();
                            outstanding.retain(|&(q, n)| {
                                let hit = n.is_some_and(|n| names.contains(&n));
                                if hit {
                                    v.push(q);
                                }
                                !hit
                            });
                            v
                        };
                        prog.wait(&reqs);
                    }
                    Call::Alltoall => {
                        algorithms.expand(
                            &mut prog,
                            r,
                            nranks,
                            colls,
                            &Collective::Alltoall { bytes },
                        );
                        colls += 1;
                    }
                }
                Ok(())
            })?;
        }
        buf.clear();
        write_goal_rank(r, &prog, &mut buf)?;
        out.write_all(&buf)?;
    }
    Ok(())
}

/// One rank of a GOAL schedule: operation i is labelled `l{i+1}`, each followed by what it
/// requires and irequires.
fn write_goal_rank(r: u32, prog: &SeqProgram, out: &mut Vec<u8>) -> io::Result<()> {
    writeln!(out, "\nrank {r} {{")?;
    let deps = prog.deps();
    let mut d = 0;
    for (i, op) in prog.ops().iter().enumerate() {
        match *op {
            OpKind::Calc { ns } => writeln!(out, "l{}: calc {ns}", i + 1)?,
            OpKind::Send { to, tag, bytes } => {
                writeln!(out, "l{}: send {bytes}b to {to} tag {tag}", i + 1)?
            }
            OpKind::Ssend { .. } => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "GOAL has no synchronous send",
                ))
            }
            OpKind::Recv { from, tag, bytes } => {
                if from == ANY || tag == ANY {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidInput,
                        "GOAL has no wildcard receive",
                    ));
                }
                writeln!(out, "l{}: recv {bytes}b from {from} tag {tag}", i + 1)?
            }
            OpKind::Rma { .. } => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "GOAL has no one-sided transfer",
                ))
            }
        }
        // SeqProgram adds an operation's dependencies when it adds the operation (a wait's
        // right after), so they come grouped and in order.
        while d < deps.len() && deps[d].0 as usize == i {
            let (op, on, kind) = deps[d];
            let word = match kind {
                DepKind::Requires => "requires",
                DepKind::IRequires => "irequires",
            };
            writeln!(out, "l{} {word} l{}", op + 1, on + 1)?;
            d += 1;
        }
    }
    debug_assert_eq!(d, deps.len(), "dependencies of operations not yet written");
    writeln!(out, "}}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binomial_goal_matches_loggopsim_layout() {
        let mut v = Vec::new();
        goal_binomial_bcast(4, 1, &mut v).unwrap();
        let s = String::from_utf8(v).unwrap();
        assert_eq!(
            s,
            "num_ranks 4\n\nrank 0 {\nl1: send 1b to 1 tag 0\nl2: send 1b to 2 tag 0\n}\n\n\
             rank 1 {\nl1: recv 1b from 0 tag 0\nl2: send 1b to 3 tag 0\nl2 requires l1\n}\n\n\
             rank 2 {\nl1: recv 1b from 0 tag 0\n}\n\nrank 3 {\nl1: recv 1b from 1 tag 0\n}\n"
        );
    }
}
