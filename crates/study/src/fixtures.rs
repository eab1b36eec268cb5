//! The tests' one home for a stack's LogGP parameters and its loop section, shared by the
//! tests of the rounds, the loop and the HTML page.

use crate::schema::{LoopStack, Params};

/// LogGP parameters in ns (G in ns per byte), one piece, nothing measured beyond them.
pub(crate) fn params(l: f64, o_s: f64, o_r: f64, g: f64, big_g: f64) -> Params {
    Params {
        L_ns: l,
        o_s_ns: o_s,
        o_r_ns: o_r,
        g_ns: g,
        G_ns_per_byte: big_g,
        O_ns_per_byte: 0.0,
        piece_from_bytes: None,
        piece_to_bytes: None,
        small_message_ns: o_s + l + o_r,
        overlap_ns: 0.0,
        send_wait_ns: 0.0,
        duplex_ns: 0.0,
    }
}

/// A stack of the loop with parameters `p`; without them, failed as a stack whose MPI has no
/// commperf.
pub(crate) fn stack(name: &str, p: Option<Params>) -> LoopStack {
    LoopStack {
        stack: name.into(),
        error: p.is_none().then(|| "no commperf linking MPICH".to_string()),
        notes: Vec::new(),
        file: None,
        params: p,
        pieces: Vec::new(),
        ladder_us: None,
        state_ns: None,
    }
}
