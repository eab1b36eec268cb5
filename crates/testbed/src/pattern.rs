//! Communication patterns: per rank, the messages it sends and the messages it receives.
//!
//! A pattern is the one description both sides of the comparison use: the rank processes
//! replay it over real TCP connections, and [`crate::predict`] turns it into a workload for the
//! engine. Keeping it a plain list of (peer, bytes) per rank makes the two agree by
//! construction.

use serde::{Deserialize, Serialize};

/// One message as seen by one end: the other rank and the size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Msg {
    pub peer: u32,
    pub bytes: u64,
}

/// What one rank does in one iteration. Messages to (from) the same peer are sent (received)
/// in list order, over the one connection of that directed pair.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RankPart {
    pub sends: Vec<Msg>,
    pub recvs: Vec<Msg>,
}

impl RankPart {
    /// Distinct destinations, in first-use order.
    pub fn dsts(&self) -> Vec<u32> {
        distinct(self.sends.iter().map(|m| m.peer))
    }

    /// Distinct sources, in first-use order.
    pub fn srcs(&self) -> Vec<u32> {
        distinct(self.recvs.iter().map(|m| m.peer))
    }
}

fn distinct(it: impl Iterator<Item = u32>) -> Vec<u32> {
    let mut v: Vec<u32> = Vec::new();
    for p in it {
        if !v.contains(&p) {
            v.push(p);
        }
    }
    v
}

/// A named pattern over `ranks.len()` ranks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Pattern {
    pub name: String,
    pub ranks: Vec<RankPart>,
}

/// Why a pattern cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatternError {
    #[error("{pattern} needs at least {min} ranks, got {got}")]
    TooFewRanks {
        pattern: &'static str,
        min: u32,
        got: u32,
    },
    #[error("unknown pattern '{0}' (known: incast, alltoall, ring, halo)")]
    Unknown(String),
    #[error("halo needs a grid: {0} ranks cannot be arranged as X x Y with X, Y >= 2 (choose other --hosts, or leave halo out of --patterns)")]
    NoGrid(u32),
}

impl Pattern {
    fn empty(name: &str, n: u32) -> Pattern {
        Pattern {
            name: name.to_string(),
            ranks: vec![RankPart::default(); n as usize],
        }
    }

    fn add(&mut self, src: u32, dst: u32, bytes: u64) {
        self.ranks[src as usize]
            .sends
            .push(Msg { peer: dst, bytes });
        self.ranks[dst as usize]
            .recvs
            .push(Msg { peer: src, bytes });
    }

    pub fn nranks(&self) -> u32 {
        self.ranks.len() as u32
    }

    /// Every message as (src, dst, bytes), in rank order.
    pub fn messages(&self) -> Vec<(u32, u32, u64)> {
        let mut v = Vec::new();
        for (r, p) in self.ranks.iter().enumerate() {
            for m in &p.sends {
                v.push((r as u32, m.peer, m.bytes));
            }
        }
        v
    }

    /// Most bytes any one rank sends or receives in one iteration: the lower bound of the
    /// iteration time is this over the per-host link rate.
    pub fn max_host_bytes(&self) -> u64 {
        self.ranks
            .iter()
            .map(|p| {
                let s: u64 = p.sends.iter().map(|m| m.bytes).sum();
                let r: u64 = p.recvs.iter().map(|m| m.bytes).sum();
                s.max(r)
            })
            .max()
            .unwrap_or(0)
    }

    /// Incast: every rank but 0 sends `bytes` to rank 0.
    pub fn incast(n: u32, bytes: u64) -> Result<Pattern, PatternError> {
        check(n, 2, "incast")?;
        let mut p = Pattern::empty("incast", n);
        for s in 1..n {
            p.add(s, 0, bytes);
        }
        Ok(p)
    }

    /// All-to-all personalized exchange: every rank sends `bytes` to every other rank. Each
    /// rank sends in shifted order (r+1, r+2, …) so that no destination is everyone's first.
    pub fn all_to_all(n: u32, bytes: u64) -> Result<Pattern, PatternError> {
        check(n, 2, "alltoall")?;
        let mut p = Pattern::empty("alltoall", n);
        for s in 0..n {
            for k in 1..n {
                p.add(s, (s + k) % n, bytes);
            }
        }
        Ok(p)
    }

    /// Ring shift: rank r sends `bytes` to r+1 (mod n).
    pub fn ring_shift(n: u32, bytes: u64) -> Result<Pattern, PatternError> {
        check(n, 2, "ring")?;
        let mut p = Pattern::empty("ring", n);
        for s in 0..n {
            p.add(s, (s + 1) % n, bytes);
        }
        Ok(p)
    }

    /// 2-D halo exchange on a periodic x × y grid: every rank sends `bytes` to its four
    /// neighbours (west, east, north, south). With a side of 2 the two neighbours along it are
    /// the same rank, which then gets two messages, as a real periodic stencil code would send.
    pub fn halo2d(x: u32, y: u32, bytes: u64) -> Result<Pattern, PatternError> {
        if x < 2 || y < 2 {
            return Err(PatternError::NoGrid(x.saturating_mul(y)));
        }
        let n = x * y;
        let mut p = Pattern::empty("halo", n);
        for r in 0..n {
            let (i, j) = (r % x, r / x);
            let west = (i + x - 1) % x + j * x;
            let east = (i + 1) % x + j * x;
            let north = i + ((j + y - 1) % y) * x;
            let south = i + ((j + 1) % y) * x;
            for d in [west, east, north, south] {
                p.add(r, d, bytes);
            }
        }
        Ok(p)
    }

    /// The most square grid for `n` ranks (x ≥ y ≥ 2), if there is one.
    pub fn grid_for(n: u32) -> Option<(u32, u32)> {
        (2..=n)
            .take_while(|y| y * y <= n)
            .filter(|y| n % y == 0)
            .last()
            .map(|y| (n / y, y))
    }

    /// A pattern by name (`incast`, `alltoall`, `ring`, `halo`) over `n` ranks.
    pub fn by_name(name: &str, n: u32, bytes: u64) -> Result<Pattern, PatternError> {
        match name {
            "incast" => Pattern::incast(n, bytes),
            "alltoall" | "all-to-all" => Pattern::all_to_all(n, bytes),
            "ring" => Pattern::ring_shift(n, bytes),
            "halo" | "halo2d" => {
                let (x, y) = Pattern::grid_for(n).ok_or(PatternError::NoGrid(n))?;
                Pattern::halo2d(x, y, bytes)
            }
            other => Err(PatternError::Unknown(other.to_string())),
        }
    }
}

fn check(n: u32, min: u32, pattern: &'static str) -> Result<(), PatternError> {
    if n < min {
        Err(PatternError::TooFewRanks {
            pattern,
            min,
            got: n,
        })
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sends_and_receives_match() {
        for p in [
            Pattern::incast(5, 10).unwrap(),
            Pattern::all_to_all(4, 10).unwrap(),
            Pattern::ring_shift(3, 10).unwrap(),
            Pattern::halo2d(3, 2, 10).unwrap(),
        ] {
            let sent: usize = p.ranks.iter().map(|r| r.sends.len()).sum();
            let recvd: usize = p.ranks.iter().map(|r| r.recvs.len()).sum();
            assert_eq!(sent, recvd, "{}", p.name);
            for (s, d, b) in p.messages() {
                assert!(p.ranks[d as usize]
                    .recvs
                    .contains(&Msg { peer: s, bytes: b }));
            }
        }
    }

    #[test]
    fn shapes() {
        let p = Pattern::incast(4, 7).unwrap();
        assert_eq!(p.ranks[0].recvs.len(), 3);
        assert_eq!(p.max_host_bytes(), 21);
        let a = Pattern::all_to_all(4, 1).unwrap();
        assert_eq!(a.ranks[2].dsts(), vec![3, 0, 1]);
        let h = Pattern::halo2d(4, 2, 1).unwrap();
        // Rank 0 on a 4 x 2 torus: west 3, east 1, north and south both 4.
        assert_eq!(h.ranks[0].dsts(), vec![3, 1, 4]);
        assert_eq!(h.ranks[0].sends.len(), 4);
        assert_eq!(Pattern::grid_for(8), Some((4, 2)));
        assert_eq!(Pattern::grid_for(16), Some((4, 4)));
        assert_eq!(Pattern::grid_for(7), None);
        assert!(Pattern::by_name("bogus", 4, 1).is_err());
        assert!(Pattern::incast(1, 1).is_err());
    }
}
