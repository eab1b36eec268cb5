//! The start-up agreement of an MPI job and the pairs it measures in, apart from MPI itself so
//! that the verdicts are tested without an MPI library.

use crate::MpiError;
use serde::{Deserialize, Serialize};

/// Bytes of each rank's start-up record (fixed, so ranks of different commperf versions can
/// still read each other's and say what differs).
pub(crate) const HELLO_BYTES: usize = 1024;
pub(crate) const MAGIC: &str = "commperf-mpi/1";

/// What each rank tells every other at start-up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Hello {
    pub magic: String,
    pub version: String,
    pub host: String,
    /// The command line after the program name, so ranks started with different options
    /// are caught before they measure different things.
    pub args: String,
}

/// Which end of which pair this rank is. Pairs are formed as OSU's multi-pair tests form them:
/// rank i (the initiator, which times) with rank i + n/2.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pair {
    pub initiator: bool,
    pub peer: i32,
    /// 0-based pair number.
    pub index: usize,
    pub pairs: usize,
}

impl Pair {
    pub fn of(rank: i32, size: i32) -> Pair {
        let half = size / 2;
        let (initiator, peer) = if rank < half {
            (true, rank + half)
        } else {
            (false, rank - half)
        };
        Pair {
            initiator,
            peer,
            index: (rank % half.max(1)) as usize,
            pairs: half as usize,
        }
    }
}

/// The start-up verdict, the same on every rank.
pub(crate) fn agree(size: i32, hellos: &[Option<Hello>]) -> Result<(), MpiError> {
    if size < 2 {
        return Err(MpiError::Startup(
            "this MPI job has one rank, and a measurement needs two: start it with \
             `mpirun -np 2 commperf bench …` (or srun -n 2)"
                .into(),
        ));
    }
    if size % 2 == 1 {
        return Err(MpiError::Startup(format!(
            "this MPI job has {size} ranks: commperf pairs rank i with rank i + n/2 (as OSU's \
             multi-pair tests do), so it needs an even number"
        )));
    }
    let me = env!("CARGO_PKG_VERSION");
    let desc = |i: usize| match &hellos[i] {
        Some(h) => format!("rank {i} runs commperf {} on {}", h.version, h.host),
        None => format!(
            "rank {i} did not answer as commperf {me} does (another program, or an older commperf)"
        ),
    };
    let first = hellos[0].as_ref();
    if let Some(i) = (0..hellos.len()).find(|&i| {
        hellos[i].as_ref().map(|h| &h.version) != first.map(|h| &h.version) || hellos[i].is_none()
    }) {
        return Err(MpiError::Startup(format!(
            "commperf versions differ between ranks: {}, {}; install one version on every host",
            desc(0),
            desc(i)
        )));
    }
    if let Some(i) =
        (1..hellos.len()).find(|&i| hellos[i].as_ref().map(|h| &h.args) != first.map(|h| &h.args))
    {
        let args = |i: usize| {
            hellos[i]
                .as_ref()
                .map(|h| h.args.clone())
                .unwrap_or_default()
        };
        return Err(MpiError::Startup(format!(
            "ranks were started with different options: rank 0 `{}`, rank {i} `{}`",
            args(0),
            args(i)
        )));
    }
    Ok(())
}

/// The short name of an MPI library from its version string: the first line up to the first
/// comma, spaces collapsed (Open MPI's string goes on with package and repository details).
pub(crate) fn library_name(v: &str) -> String {
    let first = v.trim_end_matches('\0').lines().next().unwrap_or("");
    let head = first.split(',').next().unwrap_or("");
    head.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Shortens `s` to at most `n` bytes, at a character boundary.
pub(crate) fn clip(s: &mut String, n: usize) {
    let mut cut = n.min(s.len());
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    s.truncate(cut);
}

pub(crate) fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hello(v: &str, args: &str) -> Option<Hello> {
        Some(Hello {
            magic: MAGIC.into(),
            version: v.into(),
            host: "h".into(),
            args: args.into(),
        })
    }

    #[test]
    fn library_names_are_short() {
        assert_eq!(
            library_name("Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4, repo rev: v4.1.4, May 26, 2022\0"),
            "Open MPI v4.1.4"
        );
        assert_eq!(
            library_name("MPICH Version:\t4.0.2\nMPICH Release date:\tThu Apr  7 2022\n"),
            "MPICH Version: 4.0.2"
        );
    }

    #[test]
    fn clipping_keeps_whole_characters() {
        let mut s = "héllo".to_string();
        clip(&mut s, 2);
        assert_eq!(s, "h");
        let mut s = "abc".to_string();
        clip(&mut s, 10);
        assert_eq!(s, "abc");
    }

    #[test]
    fn pairs_are_formed_as_osu_multi_pair_tests_form_them() {
        assert_eq!(
            Pair::of(0, 2),
            Pair {
                initiator: true,
                peer: 1,
                index: 0,
                pairs: 1
            }
        );
        assert_eq!(Pair::of(1, 2).peer, 0);
        assert!(!Pair::of(1, 2).initiator);
        let p = Pair::of(5, 8);
        assert_eq!((p.initiator, p.peer, p.index, p.pairs), (false, 1, 1, 4));
        let p = Pair::of(2, 8);
        assert_eq!((p.initiator, p.peer, p.index), (true, 6, 2));
    }

    #[test]
    fn the_startup_verdict_names_what_differs() {
        let ok = [hello("0.1.0", "bench"), hello("0.1.0", "bench")];
        assert!(agree(2, &ok).is_ok());
        let e = agree(1, &ok[..1]).unwrap_err().to_string();
        assert!(e.contains("one rank") && e.contains("mpirun -np 2"), "{e}");
        let e = agree(3, &[ok[0].clone(), ok[0].clone(), ok[0].clone()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("3 ranks") && e.contains("even"), "{e}");
        let e = agree(2, &[hello("0.1.0", "bench"), hello("9.9.9", "bench")])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("rank 0 runs commperf 0.1.0") && e.contains("rank 1 runs commperf 9.9.9"),
            "{e}"
        );
        let e = agree(2, &[hello("0.1.0", "bench"), None])
            .unwrap_err()
            .to_string();
        assert!(e.contains("rank 1 did not answer"), "{e}");
        let e = agree(
            2,
            &[hello("0.1.0", "bench -t mpi"), hello("0.1.0", "bench")],
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("different options") && e.contains("`bench -t mpi`"),
            "{e}"
        );
    }
}
