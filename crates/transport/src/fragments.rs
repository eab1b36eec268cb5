//! Fragment sizes per message length: the plan a sender follows when it splits a large message
//! into pieces (the shm ring's records).
//!
//! Why it is shaped so: the plan is computed once, outside the transport, from the pipeline
//! model fitted on this machine (`commperf-model`'s `pipeline`, Fröhlich et al. 2000, §3.2), and
//! the transport only looks it up: a compare for the short-message path (§3.3: a message up to
//! `whole_up_to` goes whole, in one record) and one table entry per octave of lengths above it.
//! A fixed fragment size is the plan with the same entry everywhere. The plan is plain `Copy`
//! data so that it travels in a [`crate::launch::DataSpec`] to the peer, and the receiving side
//! needs none of it: every record says how long its piece is.

use crate::bounds::BoundError;
use serde::{Deserialize, Serialize};

/// Octaves of message length the plan covers: `[2^k, 2^(k+1))` for `k < 31` (2 GiB).
pub const OCTAVES: usize = 31;

/// The fragment size a sender uses for a message of each length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FragmentPlan {
    /// Messages up to this length go whole (the short-message path).
    pub whole_up_to: u64,
    /// For a longer message of length in `[2^k, 2^(k+1))`: the fragment size, entry `k`.
    pub by_octave: [u32; OCTAVES],
}

impl FragmentPlan {
    /// Every message in fragments of `bytes` (one piece when it fits).
    pub fn fixed(bytes: usize) -> FragmentPlan {
        FragmentPlan {
            whole_up_to: bytes as u64,
            by_octave: [bytes.min(u32::MAX as usize) as u32; OCTAVES],
        }
    }

    /// The fragment size for a message of `len` bytes (`len` itself: one piece).
    #[inline]
    pub fn for_len(&self, len: usize) -> usize {
        if len as u64 <= self.whole_up_to {
            return len;
        }
        let k = (usize::BITS - 1 - len.leading_zeros()) as usize;
        self.by_octave[k.min(OCTAVES - 1)] as usize
    }

    /// Every entry within `min..=max`, or an error naming `field` and the first bad entry.
    pub fn check(&self, field: &str, min: usize, max: usize) -> Result<(), BoundError> {
        for (k, &f) in self.by_octave.iter().enumerate() {
            if (f as usize) < min || f as usize > max {
                return Err(BoundError::new(
                    format!("{field} (messages from {} B)", 1u64 << k),
                    f,
                    format!("between {min} and {max}"),
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_find_their_octave_and_the_short_path() {
        let mut p = FragmentPlan::fixed(4096);
        assert_eq!(p.for_len(4096), 4096);
        assert_eq!(p.for_len(4097), 4096);
        p.whole_up_to = 1000;
        p.by_octave[10] = 256; // 1024..2047
        p.by_octave[20] = 8192; // 1 MiB..2 MiB
        assert_eq!(p.for_len(1000), 1000);
        assert_eq!(p.for_len(1001), 4096);
        assert_eq!(p.for_len(1024), 256);
        assert_eq!(p.for_len(2047), 256);
        assert_eq!(p.for_len(2048), 4096);
        assert_eq!(p.for_len((1 << 21) - 1), 8192);
        let e = p.check("shm_fragments", 512, 65536).unwrap_err();
        assert_eq!(
            e.to_string(),
            "shm_fragments (messages from 1024 B) = 256 is out of bounds: between 512 and 65536"
        );
    }
}
