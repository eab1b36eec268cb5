//! The communication-pipeline model of Fröhlich et al. (2000) (EPOS, §3.2–3.3): a message of `L`
//! bytes is split into packets (fragments) of `P` bytes that move through stages, stage `i` costing
//! `β_i + P·τ_i` per packet; `T(L, P)` is the message's time through the pipeline and
//! `P_opt(L)` the packet size that minimizes it. The adaptive choice turns the model into a
//! fragment size per message length, which the transports use.
//!
//! Why it is shaped so:
//! - **Eq. 7 in its general form.** The paper's eq. 7,
//!   `2(2β1+β2) + 2(τ1+τ2)P + ⌈L/P⌉(β1+β2+β3+Pτ2)`, is a fill-and-drain part linear in `P`
//!   plus `⌈L/P⌉` passes of the bottleneck stage. [`Eq7`] keeps exactly that form
//!   (`fill_β + fill_τ·P + ⌈L/P⌉(per_β + per_τ·P)`); [`Eq7::epos`] builds the paper's own
//!   instance from its five stages, and [`PipelineModel::eq7_at`] builds this machine's: the
//!   bottleneck stage `b` (largest `β_i + P·τ_i`) makes the per-packet part, the other stages
//!   the fill and drain, which for equal packets and unbounded buffering is exact
//!   (`Σ_i T_i + (n−1)·T_b`). Eq. 8 follows: `P_opt = √(L·per_β / fill_τ)`.
//! - **The exact recurrence where the assumptions break.** The paper assumes `L` a multiple of
//!   `P`, a bottleneck that stays the bottleneck, and nothing bounding the packets in flight.
//!   A ring of a megabyte bounds them (a packet enters the ring only when the one `C` packets
//!   before it has been copied out), a tail packet is shorter, and which stage is slowest can
//!   change with `P`. [`PipelineModel::recurrence_us`] evaluates the pipeline's rules exactly
//!   (a packet enters stage `i` once it left stage `i−1` and its predecessor left stage `i`),
//!   with the tail and the bound. [`PipelineModel::choose`] uses eq. 8 (its `P_opt` evened out
//!   to a whole number of equal packets, as eq. 7 assumes) where that is within 1 % of the
//!   model's best time ([`PipelineModel::time_us`]: the recurrence, corrected as below) and says
//!   so (`Rule::Eq8`), else the model's minimum (`Rule::Recurrence`); a message best sent in one
//!   piece takes the short path (`Rule::Whole`, §3.3).
//! - **The running pipeline's own cost per packet.** Stages timed one packet at a time are not
//!   what they cost when both copies run at once: on the development machine the bookkeeping of
//!   one fragment partly hides behind the copy of the next (the recurrence 11–22 % pessimistic
//!   at 256 KiB … 4 MiB), and a message beyond the last-level cache copies at DRAM speed, which
//!   stages fitted on data in cache do not know (32–46 % optimistic from 16 MiB). Where the
//!   profile holds pipelined probes (a message sent in each fragment size of a ladder, at one or
//!   more message sizes), [`PipelineModel::time_us`] adds to the recurrence a start-up `S(P)`
//!   once per message and a steady-state difference `δ(L, P)` for every packet after the first,
//!   both measured against the recurrence: the shortest and the next probed message give `S`
//!   and the in-cache `δ` (their excesses are `S + (n−1)·δ` with the same two unknowns), each
//!   longer probe its own `δ` (interpolated in log P between the ladder's sizes and in log L
//!   between the probes' messages, held constant beyond them). One probed message gives `δ`
//!   alone. The fill and drain stay the stages'. Without probes it is the recurrence.

use commperf_core::{PipelineProfile, PipelineStage};

/// Why a pipeline profile cannot be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PipelineError {
    #[error(
        "pipeline profile version {found} is {} than this build reads ({supported})",
        if found > supported { "newer" } else { "older" }
    )]
    Version { found: u32, supported: u32 },
    #[error("the pipeline profile has no stages")]
    NoStages,
    #[error("pipeline stage {name}: {why}")]
    BadStage { name: String, why: &'static str },
    #[error("pipeline fragment bounds {min}..={max} are not a range of positive sizes")]
    Bounds { min: u64, max: u64 },
}

/// `fill_β + fill_τ·P + ⌈L/P⌉·(per_β + per_τ·P)`: Fröhlich et al.'s (2000) eq. 7 in general form
/// (µs, bytes).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Eq7 {
    pub fill_beta_us: f64,
    pub fill_tau_us_per_byte: f64,
    pub per_beta_us: f64,
    pub per_tau_us_per_byte: f64,
}

impl Eq7 {
    /// The paper's instance: stages 1 and 5 cost `β1 + Pτ1`, 2 and 4 `β2 + Pτ2`, stage 3
    /// `β3 + Pτ3`, and the bottleneck's delay is bounded by `β1 + β2 + β3 + Pτ2` (ineq. 3–5).
    pub fn epos(b1: f64, t1: f64, b2: f64, t2: f64, b3: f64) -> Eq7 {
        Eq7 {
            fill_beta_us: 2.0 * (2.0 * b1 + b2),
            fill_tau_us_per_byte: 2.0 * (t1 + t2),
            per_beta_us: b1 + b2 + b3,
            per_tau_us_per_byte: t2,
        }
    }

    /// `T(L, P)` in µs.
    pub fn time_us(&self, len: u64, packet: u64) -> f64 {
        let n = len.div_ceil(packet.max(1)) as f64;
        let p = packet as f64;
        self.fill_beta_us
            + self.fill_tau_us_per_byte * p
            + n * (self.per_beta_us + self.per_tau_us_per_byte * p)
    }

    /// Eq. 8: `√(L·per_β / fill_τ)` bytes (infinite when the fill costs nothing per byte).
    pub fn p_opt(&self, len: u64) -> f64 {
        if self.fill_tau_us_per_byte <= 0.0 {
            return f64::INFINITY;
        }
        (len as f64 * self.per_beta_us / self.fill_tau_us_per_byte).sqrt()
    }
}

/// One stage: `β + P·τ` µs for a packet of `P` bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stage {
    pub beta_us: f64,
    pub tau_us_per_byte: f64,
}

impl Stage {
    pub fn cost_us(&self, packet: u64) -> f64 {
        self.beta_us + packet as f64 * self.tau_us_per_byte
    }
}

/// How [`PipelineModel::choose`] arrived at a fragment size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// One piece (Fröhlich et al. 2000, §3.3's short-message path): no packet size beats it.
    Whole,
    /// Eq. 8's `P_opt`, within 1 % of the exact recurrence's best.
    Eq8,
    /// The exact recurrence's minimum: eq. 8's assumptions do not hold at this length.
    Recurrence,
}

impl Rule {
    pub fn as_str(self) -> &'static str {
        match self {
            Rule::Whole => "whole",
            Rule::Eq8 => "eq8",
            Rule::Recurrence => "recurrence",
        }
    }
}

/// The adaptive choice for one message length.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Choice {
    pub fragment_bytes: u64,
    pub rule: Rule,
    /// The model's `T(L, P)` at the chosen `P` ([`PipelineModel::time_us`]).
    pub predicted_us: f64,
    /// Eq. 8's unrounded, unclamped `P_opt` (infinite when it has none).
    pub eq8_bytes: f64,
}

/// Fragment sizes are whole cache lines: the ring's records and copies are line-aligned.
pub const FRAGMENT_ALIGN: u64 = 64;

/// Candidate packet sizes per octave in the recurrence's search.
const STEPS_PER_OCTAVE: f64 = 8.0;

/// The running pipeline against the recurrence at one probe: messages of `message_bytes` in
/// packets of `fragment_bytes` cost `delta_us` more (less, if negative) per packet after the
/// first than the stages timed one at a time say.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Running {
    pub message_bytes: u64,
    pub fragment_bytes: u64,
    pub delta_us: f64,
}

/// What starting a pipeline costs a message in packets of `fragment_bytes` beyond what the
/// stages timed one at a time say (µs, once per message): the first packets find the ring's
/// lines and the buffers in the other core's cache.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Startup {
    pub fragment_bytes: u64,
    pub start_us: f64,
}

/// The fitted stages of one transport and the bounds its fragments live in.
#[derive(Debug, Clone, PartialEq)]
pub struct PipelineModel {
    pub stages: Vec<Stage>,
    /// The pipelined probes' start-up costs, by fragment size (empty: none).
    pub startup: Vec<Startup>,
    /// The pipelined probes' steady-state corrections, sorted by message then fragment size
    /// (empty: the recurrence alone).
    pub running: Vec<Running>,
    /// Bytes of the buffer packets queue in (the shm ring); `None`: unbounded.
    pub capacity_bytes: Option<u64>,
    /// Bytes a packet occupies in that buffer beyond its payload.
    pub overhead_bytes: u64,
    pub min_fragment_bytes: u64,
    pub max_fragment_bytes: u64,
}

impl PipelineModel {
    /// From a profile's pipeline section (checked: finite, non-negative costs, sane bounds).
    pub fn from_profile(p: &PipelineProfile) -> Result<PipelineModel, PipelineError> {
        let kind = commperf_formats::Kind::Pipeline;
        if commperf_formats::check(kind, Some(u64::from(p.version))).is_err() {
            return Err(PipelineError::Version {
                found: p.version,
                supported: commperf_core::PIPELINE_SCHEMA_VERSION,
            });
        }
        if p.stages.is_empty() {
            return Err(PipelineError::NoStages);
        }
        let mut stages = Vec::with_capacity(p.stages.len());
        for s in &p.stages {
            stages.push(stage_of(s)?);
        }
        if p.min_fragment_bytes == 0 || p.min_fragment_bytes > p.max_fragment_bytes {
            return Err(PipelineError::Bounds {
                min: p.min_fragment_bytes,
                max: p.max_fragment_bytes,
            });
        }
        let mut m = PipelineModel {
            stages,
            startup: Vec::new(),
            running: Vec::new(),
            capacity_bytes: p.capacity_bytes,
            overhead_bytes: p.overhead_bytes,
            min_fragment_bytes: p.min_fragment_bytes,
            max_fragment_bytes: p.max_fragment_bytes,
        };
        // Each probe's excess over the recurrence, by message then fragment size.
        let mut probes: Vec<(u64, u64, u64, f64)> = Vec::new(); // (message, fragment, n, excess)
        for q in &p.pipelined {
            let n = q.message_bytes.div_ceil(q.fragment_bytes.max(1));
            // A probe of one packet is no pipeline; an unusable figure is no probe.
            if n < 2 || !q.one_way_us.is_finite() || q.one_way_us <= 0.0 {
                continue;
            }
            let rec = m.recurrence_us(q.message_bytes, q.fragment_bytes);
            probes.push((q.message_bytes, q.fragment_bytes, n, q.one_way_us - rec));
        }
        probes.sort_by_key(|q| (q.0, q.1));
        probes.dedup_by_key(|q| (q.0, q.1));
        let sizes: Vec<u64> = probes.chunk_by(|a, b| a.0 == b.0).map(|c| c[0].0).collect();
        // With two or more probed messages the shortest gives the start-up: per fragment size,
        // its excess and the next probe's are S + (n−1)·δ with the same S and δ.
        if sizes.len() >= 2 {
            let at = |msg: u64, f: u64| probes.iter().find(|q| q.0 == msg && q.1 == f).copied();
            for q in probes.iter().filter(|q| q.0 == sizes[0]) {
                // Two probes of as many packets (a hand-made profile) cannot separate S and δ.
                if let Some(r) = at(sizes[1], q.1).filter(|r| r.2 > q.2) {
                    let delta = (r.3 - q.3) / (r.2 - q.2) as f64;
                    m.startup.push(Startup {
                        fragment_bytes: q.1,
                        start_us: q.3 - (q.2 - 1) as f64 * delta,
                    });
                }
            }
        }
        for q in &probes {
            if !m.startup.is_empty() && q.0 == sizes[0] {
                continue;
            }
            let start = m.startup_us(q.1);
            m.running.push(Running {
                message_bytes: q.0,
                fragment_bytes: q.1,
                delta_us: (q.3 - start) / (q.2 - 1) as f64,
            });
        }
        Ok(m)
    }

    /// The running pipeline's correction per packet for messages of `len` in packets of
    /// `packet` (µs; 0 without probes): interpolated in log P within each probed message size,
    /// then in log L between them, constant beyond the ends.
    pub fn running_delta_us(&self, len: u64, packet: u64) -> f64 {
        let mut per_msg: Vec<(f64, f64)> = Vec::new();
        for chunk in self
            .running
            .chunk_by(|a, b| a.message_bytes == b.message_bytes)
        {
            let pts: Vec<(f64, f64)> = chunk
                .iter()
                .map(|r| ((r.fragment_bytes as f64).log2(), r.delta_us))
                .collect();
            per_msg.push((
                (chunk[0].message_bytes as f64).log2(),
                interpolate(&pts, (packet.max(1) as f64).log2()),
            ));
        }
        if per_msg.is_empty() {
            return 0.0;
        }
        interpolate(&per_msg, (len.max(1) as f64).log2())
    }

    /// The start-up cost of a pipeline of `packet`-byte packets (µs; 0 without it), in log P
    /// between the probed fragment sizes, constant beyond them.
    pub fn startup_us(&self, packet: u64) -> f64 {
        if self.startup.is_empty() {
            return 0.0;
        }
        let pts: Vec<(f64, f64)> = self
            .startup
            .iter()
            .map(|s| ((s.fragment_bytes as f64).log2(), s.start_us))
            .collect();
        interpolate(&pts, (packet.max(1) as f64).log2())
    }

    /// `T(L, P)` as the model predicts it: the recurrence, plus the pipeline's start-up and
    /// the running pipeline's correction for each packet after the first (module doc).
    pub fn time_us(&self, len: u64, packet: u64) -> f64 {
        let n = len.div_ceil(packet.max(1)).max(1);
        let t = self.recurrence_us(len, packet);
        if n < 2 || self.running.is_empty() {
            return t;
        }
        let t = t + self.startup_us(packet);
        // Never faster than the stages' own fill and drain of a single packet.
        (t + (n - 1) as f64 * self.running_delta_us(len, packet))
            .max(self.recurrence_us(packet, packet))
    }

    /// The stage with the largest cost at packet size `p` (the first of equals).
    pub fn bottleneck(&self, packet: u64) -> usize {
        let mut b = 0;
        for (i, s) in self.stages.iter().enumerate() {
            if s.cost_us(packet) > self.stages[b].cost_us(packet) {
                b = i;
            }
        }
        b
    }

    /// Eq. 7 for this machine at packet size `p`: the bottleneck at `p` per packet, the other
    /// stages as fill and drain.
    pub fn eq7_at(&self, packet: u64) -> Eq7 {
        self.eq7_with(self.bottleneck(packet))
    }

    fn eq7_with(&self, b: usize) -> Eq7 {
        let others = self.stages.iter().enumerate().filter(|(i, _)| *i != b);
        let (fb, ft) = others.fold((0.0, 0.0), |(fb, ft), (_, s)| {
            (fb + s.beta_us, ft + s.tau_us_per_byte)
        });
        Eq7 {
            fill_beta_us: fb,
            fill_tau_us_per_byte: ft,
            per_beta_us: self.stages[b].beta_us,
            per_tau_us_per_byte: self.stages[b].tau_us_per_byte,
        }
    }

    /// Eq. 8 for this machine: the `P_opt` of a bottleneck that is still the bottleneck at its
    /// own `P_opt` (the assumption eq. 7 rests on), the best of them if several are; `None` when
    /// no stage is.
    pub fn eq8_bytes(&self, len: u64) -> Option<f64> {
        let mut best: Option<(f64, f64)> = None;
        for b in 0..self.stages.len() {
            let e = self.eq7_with(b);
            let p = e.p_opt(len);
            if !p.is_finite() || p < 1.0 || self.bottleneck(p.round() as u64) != b {
                continue;
            }
            let t = e.time_us(len, p.round() as u64);
            if best.is_none_or(|(bt, _)| t < bt) {
                best = Some((t, p));
            }
        }
        best.map(|(_, p)| p)
    }

    /// Packets of `packet` bytes the buffer holds at once (`usize::MAX`: unbounded).
    pub fn in_flight(&self, packet: u64) -> usize {
        match self.capacity_bytes {
            None => usize::MAX,
            Some(c) => {
                let rec = (packet + self.overhead_bytes).div_ceil(FRAGMENT_ALIGN) * FRAGMENT_ALIGN;
                ((c / rec.max(1)) as usize).max(1)
            }
        }
    }

    /// `T(L, P)` by the pipeline's rules, exactly: packet `k` (of `⌈L/P⌉`, the last one the
    /// remainder) enters stage `i` once it has left stage `i−1` and packet `k−1` has left
    /// stage `i`; with a bounded buffer it enters the first stage only once packet `k−C` has
    /// left the last.
    pub fn recurrence_us(&self, len: u64, packet: u64) -> f64 {
        let packet = packet.max(1);
        let n = len.div_ceil(packet).max(1) as usize;
        let c = self.in_flight(packet);
        let mut prev = vec![0.0f64; self.stages.len()];
        let mut last_out: Vec<f64> = Vec::with_capacity(if c < n { n } else { 0 });
        for k in 0..n {
            let p = if k + 1 == n {
                len - packet * (n as u64 - 1)
            } else {
                packet
            };
            let mut ready = if c < n && k >= c {
                last_out[k - c]
            } else {
                0.0
            };
            for (i, s) in self.stages.iter().enumerate() {
                let start = ready.max(prev[i]);
                prev[i] = start + s.cost_us(p);
                ready = prev[i];
            }
            if c < n {
                last_out.push(ready);
            }
        }
        prev[self.stages.len() - 1]
    }

    /// The candidate packet sizes for a message of `len` bytes: line multiples from the
    /// smallest fragment (or `len / 65536`, beyond which packets only add overhead) to the
    /// largest, eight per octave, and `len` itself when it fits one piece.
    pub fn candidates(&self, len: u64) -> Vec<u64> {
        let lo = self.min_fragment_bytes.max(len / 65_536).max(1);
        let hi = self.max_fragment_bytes.min(len.max(1));
        let mut out = Vec::new();
        let mut x = lo as f64;
        while x <= hi as f64 {
            out.push(align(x.round() as u64, self.min_fragment_bytes, hi));
            x *= 2f64.powf(1.0 / STEPS_PER_OCTAVE);
        }
        out.push(hi);
        if len <= self.max_fragment_bytes {
            out.push(len.max(1));
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The fragment size for a message of `len` bytes, and the rule that chose it.
    pub fn choose(&self, len: u64) -> Choice {
        let len = len.max(1);
        let mut best = (f64::INFINITY, len);
        for p in self.candidates(len) {
            let t = self.time_us(len, p);
            if t < best.0 {
                best = (t, p);
            }
        }
        let eq8 = self.eq8_bytes(len);
        let eq8_bytes = eq8.unwrap_or(f64::INFINITY);
        if best.1 >= len {
            return Choice {
                fragment_bytes: len,
                rule: Rule::Whole,
                predicted_us: best.0,
                eq8_bytes,
            };
        }
        if let Some(p) = eq8 {
            let within = p >= self.min_fragment_bytes as f64 && p <= self.max_fragment_bytes as f64;
            // Eq. 7 takes L as a multiple of P: the nearest whole number of packets, evened out.
            let n = (len as f64 / p).round().max(1.0) as u64;
            let p = align(
                len.div_ceil(n),
                self.min_fragment_bytes,
                self.max_fragment_bytes,
            );
            let t = self.time_us(len, p);
            if within && p < len && t <= best.0 * 1.01 {
                return Choice {
                    fragment_bytes: p,
                    rule: Rule::Eq8,
                    predicted_us: t,
                    eq8_bytes,
                };
            }
        }
        Choice {
            fragment_bytes: best.1,
            rule: Rule::Recurrence,
            predicted_us: best.0,
            eq8_bytes,
        }
    }

    /// The adaptive plan: the largest length sent whole (the short path), and per octave
    /// `[2^k, 2^(k+1))` of lengths the fragment chosen at its geometric middle. Octaves are
    /// `0..31` (lengths up to 2 GiB).
    pub fn plan(&self) -> Plan {
        self.plan_up_to(1 << 30)
    }

    /// [`PipelineModel::plan`] for messages up to `max_len` bytes: the octaves above it repeat
    /// the last one computed (a plan for a 4 MiB run costs a fraction of a 1 GiB one).
    pub fn plan_up_to(&self, max_len: u64) -> Plan {
        let mut whole_up_to = 0u64;
        // The short path: lengths the model sends whole, found octave by octave, then refined
        // by bisection within the first octave where it stops.
        for k in 0..31u32 {
            let top = (1u64 << (k + 1)) - 1;
            if top <= self.max_fragment_bytes && self.choose(top).rule == Rule::Whole {
                whole_up_to = top;
                continue;
            }
            let (mut lo, mut hi) = (whole_up_to, top.min(self.max_fragment_bytes + 1));
            while hi - lo > 1 {
                let mid = lo + (hi - lo) / 2;
                if self.choose(mid).rule == Rule::Whole {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            whole_up_to = lo;
            break;
        }
        let mut by_octave = [Choice {
            fragment_bytes: self.max_fragment_bytes,
            rule: Rule::Whole,
            predicted_us: 0.0,
            eq8_bytes: f64::INFINITY,
        }; 31];
        let mut last = None;
        for (k, slot) in by_octave.iter_mut().enumerate() {
            let lo = 1u64 << k;
            let hi = (1u64 << (k + 1)) - 1;
            if hi <= whole_up_to {
                continue;
            }
            if lo > max_len.max(1) {
                if let Some(c) = last {
                    *slot = c;
                }
                continue;
            }
            let mid = ((lo as f64) * std::f64::consts::SQRT_2) as u64;
            let at = mid.clamp(lo.max(whole_up_to + 1), hi);
            *slot = self.choose(at);
            last = Some(*slot);
        }
        Plan {
            whole_up_to,
            by_octave,
        }
    }
}

/// The adaptive plan ([`PipelineModel::plan`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub whole_up_to: u64,
    pub by_octave: [Choice; 31],
}

impl Plan {
    /// The fragment size for a message of `len` bytes and its rule.
    pub fn for_len(&self, len: u64) -> (u64, Rule) {
        if len <= self.whole_up_to {
            return (len, Rule::Whole);
        }
        let k = (63 - len.max(1).leading_zeros()).min(30) as usize;
        let c = self.by_octave[k];
        (c.fragment_bytes, c.rule)
    }
}

/// Piecewise-linear through `pts` (x ascending), constant beyond the first and last.
fn interpolate(pts: &[(f64, f64)], x: f64) -> f64 {
    let (first, last) = (pts[0], pts[pts.len() - 1]);
    if x <= first.0 {
        return first.1;
    }
    if x >= last.0 {
        return last.1;
    }
    for w in pts.windows(2) {
        let ((x0, y0), (x1, y1)) = (w[0], w[1]);
        if x <= x1 {
            return if x1 > x0 {
                y0 + (y1 - y0) * (x - x0) / (x1 - x0)
            } else {
                y1
            };
        }
    }
    last.1
}

/// `p` rounded to a line multiple within `lo..=hi` (`hi` itself need not be a multiple).
fn align(p: u64, lo: u64, hi: u64) -> u64 {
    let r = (p.div_ceil(FRAGMENT_ALIGN) * FRAGMENT_ALIGN).max(lo);
    r.min(hi)
}

fn stage_of(s: &PipelineStage) -> Result<Stage, PipelineError> {
    let bad = |why| PipelineError::BadStage {
        name: s.name.clone(),
        why,
    };
    if !s.beta_us.is_finite() || !s.tau_us_per_byte.is_finite() {
        return Err(bad("β and τ must be finite"));
    }
    if s.beta_us < 0.0 || s.tau_us_per_byte < 0.0 {
        return Err(bad("β and τ must not be negative"));
    }
    Ok(Stage {
        beta_us: s.beta_us,
        tau_us_per_byte: s.tau_us_per_byte,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const KB: f64 = 1024.0;

    /// Fröhlich et al.'s (2000) Table 1 (β in µs, τ in µs/KB).
    fn epos() -> Eq7 {
        Eq7::epos(3.0, 5.9 / KB, 0.6, 7.6 / KB, 1.3)
    }

    #[test]
    fn eq7_and_eq8_reproduce_the_papers_figures() {
        let e = epos();
        // By hand: 2(2·3.0+0.6) = 13.2; 2(5.9+7.6)·4 = 108; 16·(3.0+0.6+1.3+4·7.6) = 564.8.
        assert!((e.time_us(64 << 10, 4 << 10) - 686.0).abs() < 1e-9);
        // "the calculated optimal packet length for a 64 KB message is 3490 bytes".
        let p = e.p_opt(64 << 10);
        assert!((p - 3489.8).abs() < 0.1, "{p}");
        // P_opt is the minimum of T over the multiples of P dividing L nearby.
        let t_opt = e.time_us(64 << 10, p.round() as u64);
        assert!(t_opt < e.time_us(64 << 10, 1 << 10));
        assert!(t_opt < e.time_us(64 << 10, 16 << 10));
    }

    fn three(capacity: Option<u64>) -> PipelineModel {
        PipelineModel {
            stages: vec![
                Stage {
                    beta_us: 1.0,
                    tau_us_per_byte: 0.01,
                },
                Stage {
                    beta_us: 2.0,
                    tau_us_per_byte: 0.0,
                },
                Stage {
                    beta_us: 1.0,
                    tau_us_per_byte: 0.02,
                },
            ],
            startup: Vec::new(),
            running: Vec::new(),
            capacity_bytes: capacity,
            overhead_bytes: 0,
            min_fragment_bytes: 1,
            max_fragment_bytes: 1 << 20,
        }
    }

    #[test]
    fn the_recurrence_matches_hand_computed_pipelines() {
        let m = three(None);
        // Packets cost [2, 2, 3]: finishing times 7, 10, 13 at the last stage.
        assert!((m.recurrence_us(300, 100) - 13.0).abs() < 1e-9);
        // With equal packets and no bound it is eq. 7's general form: Σ + (n−1)·max.
        assert!((m.eq7_at(100).time_us(300, 100) - 13.0).abs() < 1e-9);
        // A 50-byte tail costs [1.5, 2, 2]: it leaves the last stage at max(8, 10) + 2.
        assert!((m.recurrence_us(250, 100) - 12.0).abs() < 1e-9);
        // One packet in flight (a 100-byte buffer): three whole passes, 3 × 7.
        let bounded = three(Some(100));
        assert_eq!(bounded.in_flight(100), 1);
        assert!((bounded.recurrence_us(300, 100) - 21.0).abs() < 1e-9);
        // Two in flight (records are line multiples: 128 B each): packet 2 enters when packet 0
        // leaves (7), leaves stage 0 at 9 and stage 1 at 11, the last stage at max(11, 10) + 3.
        let two = three(Some(256));
        assert!((two.recurrence_us(300, 100) - 14.0).abs() < 1e-9);
    }

    #[test]
    fn the_bottleneck_and_eq8_follow_the_stages() {
        let m = three(None);
        // At 100 B: [2, 2, 3] → stage 2 (index 2); at 10 B: [1.1, 2, 1.2] → stage 1.
        assert_eq!(m.bottleneck(100), 2);
        assert_eq!(m.bottleneck(10), 1);
        // Bottleneck 2: √(L·1 / 0.01); at L = 10000: 1000 B, where stage 2 is slowest.
        let p = m.eq8_bytes(10_000).unwrap();
        assert!((p - 1000.0).abs() < 1e-6, "{p}");
    }

    #[test]
    fn the_choice_is_eq8_where_it_holds_and_the_recurrence_elsewhere() {
        // Equal per-byte costs, no bound: eq. 8 holds.
        let mut m = three(None);
        m.min_fragment_bytes = 64;
        let c = m.choose(1 << 20);
        assert_eq!(c.rule, Rule::Eq8);
        // √(2^20 · 1 / 0.01) = 10240, which divides 2^20 into 102.4 packets: 102 equal ones
        // of ⌈2^20 / 102⌉ = 10281 B, rounded up to a line multiple.
        assert_eq!(c.fragment_bytes, 10304);
        assert!((c.predicted_us - m.recurrence_us(1 << 20, 10304)).abs() < 1e-9);
        // Nothing beats the recurrence's minimum over the candidates.
        for p in m.candidates(1 << 20) {
            assert!(m.recurrence_us(1 << 20, p) >= c.predicted_us / 1.01);
        }
        // A small message goes whole: eq. 8's P (√(90/0.01) ≈ 95 B) is the message itself.
        assert_eq!(m.choose(90).rule, Rule::Whole);
        // A buffer that holds two 10 KiB packets: whichever rule decides, its choice is within
        // 1 % of every candidate the recurrence tried.
        let mut b = three(Some(20 << 10));
        b.min_fragment_bytes = 64;
        let cb = b.choose(1 << 20);
        for p in b.candidates(1 << 20) {
            assert!(cb.predicted_us <= b.recurrence_us(1 << 20, p) * 1.01, "{p}");
        }
    }

    #[test]
    fn the_plan_picks_p_opt_per_octave_and_the_short_path_below() {
        let mut m = three(None);
        m.min_fragment_bytes = 64;
        let plan = m.plan();
        // Whole below the threshold, fragmented above.
        assert!(plan.whole_up_to > 0);
        assert_eq!(
            plan.for_len(plan.whole_up_to),
            (plan.whole_up_to, Rule::Whole)
        );
        assert_ne!(plan.for_len(plan.whole_up_to + 64).1, Rule::Whole);
        // At 1 MiB, the octave's middle (2^20·√2) decides: eq. 8 there.
        let mid = ((1u64 << 20) as f64 * std::f64::consts::SQRT_2) as u64;
        let (p, rule) = plan.for_len(1 << 20);
        assert_eq!(rule, Rule::Eq8);
        assert_eq!(p, m.choose(mid).fragment_bytes);
        let want = (mid as f64 / 0.01).sqrt();
        let n = (mid as f64 / want).round();
        assert!(
            (p as f64 - mid as f64 / n).abs() <= 64.0,
            "{p} against {want}"
        );
    }

    #[test]
    fn the_running_probes_set_the_steady_state_and_are_interpolated() {
        let stage = |beta_us, tau_us_per_byte| PipelineStage {
            name: "s".into(),
            beta_us,
            tau_us_per_byte,
            r2: 1.0,
        };
        let point = |message_bytes, fragment_bytes, one_way_us| commperf_core::PipelinedPoint {
            fragment_bytes,
            message_bytes,
            one_way_us,
        };
        let mut p = PipelineProfile {
            version: 1,
            transport: "shm".into(),
            stages: vec![stage(0.2, 1e-4), stage(0.1, 0.0), stage(0.1, 5e-5)],
            capacity_bytes: None,
            overhead_bytes: 0,
            min_fragment_bytes: 4096,
            max_fragment_bytes: 65536,
            points: Vec::new(),
            pipelined: Vec::new(),
        };
        let bare = PipelineModel::from_profile(&p).unwrap();
        // No probe: the recurrence. Unbounded, equal packets: Σ stages + (n−1)·bottleneck.
        // 64 KiB in 16 KiB packets: 0.2+1.6384 + 0.1 + 0.1+0.8192 + 3 × 1.8384 = 8.3728 µs.
        assert!((bare.time_us(65536, 16384) - 8.3728).abs() < 1e-9);
        let rec = |l, f| bare.recurrence_us(l, f);
        let (k8, k16) = (8192u64, 16384u64);
        // Probes made from a known truth: a start-up S of 2 µs (8 KiB packets) and 1 µs (16
        // KiB), a steady state 0.3 and 0.2 µs a packet faster than the stages in cache, 0.5
        // slower beyond it.
        let truth = |l: u64, f: u64| {
            let (s, d) = match (l, f) {
                (_, 8192) if l <= 1 << 20 => (2.0, -0.3),
                (_, 8192) => (2.0, 0.5),
                (_, _) if l <= 1 << 20 => (1.0, -0.2),
                _ => (1.0, 0.5),
            };
            rec(l, f) + s + (l.div_ceil(f) - 1) as f64 * d
        };
        let (short, mid, big) = (64u64 << 10, 1u64 << 20, 16u64 << 20);
        let mut probes = Vec::new();
        for l in [short, mid, big] {
            for f in [k8, k16] {
                probes.push(point(l, f, truth(l, f)));
            }
        }
        // One packet: no pipeline, ignored.
        probes.push(point(k16, k16, 1.0));
        // One probed message only (profiles written before the others): its steady state,
        // no start-up.
        p.pipelined = probes[2..4].to_vec();
        let one = PipelineModel::from_profile(&p).unwrap();
        assert!(one.startup.is_empty());
        let t = one.time_us(mid, k16);
        assert!((t - truth(mid, k16)).abs() < 1e-9, "{t}");
        p.pipelined = probes.clone();
        let m = PipelineModel::from_profile(&p).unwrap();
        assert_eq!(m.running.len(), 4);
        // The start-up and the steady states recovered; at every probe what it measured.
        assert!((m.startup_us(k8) - 2.0).abs() < 1e-9);
        assert!((m.startup_us(k16) - 1.0).abs() < 1e-9);
        for q in &probes[..6] {
            let t = m.time_us(q.message_bytes, q.fragment_bytes);
            assert!((t - q.one_way_us).abs() < 1e-9, "{q:?}: {t}");
        }
        // Between probes: 11 585 B packets, halfway in log P, start 1.5; 4 MiB, halfway in
        // log L between 1 and 16 MiB: (−0.2 + 0.5) / 2 a packet.
        assert!((m.startup_us(11585) - 1.5).abs() < 1e-4);
        assert!((m.running_delta_us(4 << 20, k16) - 0.15).abs() < 1e-9);
        let t = m.time_us(4 << 20, k16);
        assert!((t - (rec(4 << 20, k16) + 1.0 + 255.0 * 0.15)).abs() < 1e-9);
        // Below the in-cache probe its steady state holds: 256 KiB in 16 KiB packets.
        let t = m.time_us(256 << 10, k16);
        assert!((t - (rec(256 << 10, k16) + 1.0 - 15.0 * 0.2)).abs() < 1e-9);
        // Beyond the probes: held at the ends.
        assert!((m.running_delta_us(64 << 20, 4096) - 0.5).abs() < 1e-12);
        // One packet: the stages alone.
        assert_eq!(m.time_us(8192, k16), bare.time_us(8192, k16));
    }

    #[test]
    fn bad_profiles_are_refused_by_name() {
        let mut p = PipelineProfile {
            version: 1,
            transport: "shm".into(),
            stages: vec![PipelineStage {
                name: "copy in".into(),
                beta_us: f64::NAN,
                tau_us_per_byte: 0.0,
                r2: 1.0,
            }],
            capacity_bytes: None,
            overhead_bytes: 0,
            min_fragment_bytes: 64,
            max_fragment_bytes: 1024,
            points: Vec::new(),
            pipelined: Vec::new(),
        };
        let e = PipelineModel::from_profile(&p).unwrap_err();
        assert_eq!(
            e.to_string(),
            "pipeline stage copy in: β and τ must be finite"
        );
        p.stages[0].beta_us = 1.0;
        p.version = 99;
        assert!(matches!(
            PipelineModel::from_profile(&p),
            Err(PipelineError::Version { found: 99, .. })
        ));
        // Version 0 never existed: refused too (it used to pass the `>` check).
        p.version = 0;
        let e = PipelineModel::from_profile(&p).unwrap_err();
        assert_eq!(
            e.to_string(),
            "pipeline profile version 0 is older than this build reads (1)"
        );
        p.version = 1;
        p.min_fragment_bytes = 2048;
        assert!(matches!(
            PipelineModel::from_profile(&p),
            Err(PipelineError::Bounds { .. })
        ));
    }
}
