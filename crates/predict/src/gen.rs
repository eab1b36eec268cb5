//! Generators that write trace text: GOAL schedules and commperf's own format.
//!
//! Benchmarks and the testbed need workloads of any size whose shape is known (a million-rank
//! broadcast, an incast, a halo exchange). Writing them as text rather than building
//! [`Workload`](crate::workload::Workload)s directly means the readers are exercised on the way
//! and the same files can be fed to the CLI or to other tools (LogGOPSim reads the GOAL ones).

use std::fmt;
use std::io::{self, Write};

/// Writes a LogGOPSim-style binomial-tree broadcast of `bytes` from rank 0 over `nranks` ranks:
/// every rank but the root receives from its parent (its rank with the highest set bit
/// cleared) and then sends to its children, each send requiring the receive — the layout of
/// LogGOPSim's `binary_tree_32.goal`. A million ranks give about 3.1 million operations; wrap
/// `out` in a `BufWriter`.
pub fn goal_binomial_bcast(nranks: u32, bytes: u64, out: &mut impl Write) -> io::Result<()> {
    writeln!(out, "num_ranks {nranks}")?;
    // One reusable line buffer and hand-formatted numbers: this writes ~100 MB for 2^20 ranks.
    let mut buf: Vec<u8> = Vec::with_capacity(256);
    let mut itoa = Itoa::default();
    for r in 0..nranks {
        buf.clear();
        buf.extend_from_slice(b"\nrank ");
        buf.extend_from_slice(itoa.fmt(r as u64));
        buf.extend_from_slice(b" {\n");
        let mut label = 1u64;
        // The parent clears the highest set bit; children set each higher bit in turn.
        let first_child_bit = if r == 0 {
            1u64
        } else {
            (r as u64).next_power_of_two()
        };
        let first_child_bit = if first_child_bit == r as u64 {
            first_child_bit << 1
        } else {
            first_child_bit
        };
        if r != 0 {
            let parent = r as u64 & !(1u64 << (63 - (r as u64).leading_zeros()));
            buf.extend_from_slice(b"l1: recv ");
            buf.extend_from_slice(itoa.fmt(bytes));
            buf.extend_from_slice(b"b from ");
            buf.extend_from_slice(itoa.fmt(parent));
            buf.extend_from_slice(b" tag 0\n");
            label = 2;
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
            if r != 0 {
                buf.push(b'l');
                buf.extend_from_slice(itoa.fmt(label));
                buf.extend_from_slice(b" requires l1\n");
            }
            label += 1;
            bit <<= 1;
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

/// Communication patterns written in commperf's own format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pattern {
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

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Pattern::Incast => f.write_str("incast"),
            Pattern::AllToAll => f.write_str("alltoall"),
            Pattern::RingShift => f.write_str("ring-shift"),
            Pattern::Halo2D { x, y } => write!(f, "halo2d-{x}x{y}"),
            Pattern::PairwiseAllToAll => f.write_str("pairwise-alltoall"),
        }
    }
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
    if let Pattern::Halo2D { x, y } = pattern {
        if x as u64 * y as u64 != nranks as u64 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "a {x}×{y} halo needs {} ranks, not {nranks}",
                    x as u64 * y as u64
                ),
            ));
        }
    }
    writeln!(
        out,
        "# {pattern}: {nranks} ranks, {bytes} B, {iters} iterations"
    )?;
    writeln!(out, "ranks {nranks}")?;
    let n = nranks;
    for r in 0..n {
        writeln!(out, "rank {r}")?;
        for _ in 0..iters {
            match pattern {
                Pattern::Incast => {
                    if r == 0 {
                        for s in 1..n {
                            writeln!(out, "irecv {s} {bytes}")?;
                        }
                        if n > 1 {
                            writeln!(out, "waitall")?;
                        }
                    } else {
                        writeln!(out, "send 0 {bytes}")?;
                    }
                }
                Pattern::AllToAll => {
                    for i in 1..n {
                        writeln!(out, "irecv {} {bytes}", (r + n - i) % n)?;
                    }
                    for i in 1..n {
                        writeln!(out, "isend {} {bytes}", (r + i) % n)?;
                    }
                    if n > 1 {
                        writeln!(out, "waitall")?;
                    }
                }
                Pattern::RingShift => {
                    writeln!(out, "irecv {} {bytes} as from_prev", (r + n - 1) % n)?;
                    writeln!(out, "isend {} {bytes} as to_next", (r + 1) % n)?;
                    writeln!(out, "waitall from_prev to_next")?;
                }
                Pattern::Halo2D { x, y } => {
                    let (cx, cy) = (r % x, r / x);
                    let at = |px: u32, py: u32| py * x + px;
                    // Tag = direction of travel, so a neighbour that is both left and right
                    // (x = 2) still gets each message matched to the right receive.
                    let nb = [
                        (at((cx + 1) % x, cy), 0, at((cx + x - 1) % x, cy)),
                        (at((cx + x - 1) % x, cy), 1, at((cx + 1) % x, cy)),
                        (at(cx, (cy + 1) % y), 2, at(cx, (cy + y - 1) % y)),
                        (at(cx, (cy + y - 1) % y), 3, at(cx, (cy + 1) % y)),
                    ];
                    for &(_, tag, from) in &nb {
                        writeln!(out, "irecv {from} {bytes} tag {tag}")?;
                    }
                    for &(to, tag, _) in &nb {
                        writeln!(out, "isend {to} {bytes} tag {tag}")?;
                    }
                    writeln!(out, "waitall")?;
                }
                Pattern::PairwiseAllToAll => writeln!(out, "alltoall {bytes}")?,
            }
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
