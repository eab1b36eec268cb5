//! The software global clock (Liao et al. 1998, §2.2): rank 0's clock is global time. Rank 0 asks
//! each peer for its time several times and keeps the sample with the smallest round trip
//! (Cristian: the reply was read somewhere inside that round trip, so the offset is known to
//! ± RTT/2, the bound every result carries). It then sends each peer the offset table. Global
//! re-synchronizations are rare (default every 5 minutes); between them each rank converts with
//! the drift measured across its last two synchronizations, as Shrimp did.
//!
//! Clocks are behind [`LocalClock`] so that a test can skew and drift one side by a known amount
//! ([`Skewed`]) and check that the correction recovers exactly what was injected, and so that the
//! model transport's virtual time can stand in for the TSC.

use crate::MonitorError;
use commperf_transport::clock::{Clock, Timer};
use commperf_transport::{Endpoint, Tag};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// A local clock in nanoseconds since an arbitrary origin. Read on every monitored message.
pub trait LocalClock {
    fn now_ns(&self) -> f64;
}

/// The calibrated TSC (or CLOCK_MONOTONIC where there is none).
#[derive(Debug, Clone, Copy)]
pub struct TscClock {
    pub clock: Clock,
    ns_per_tick: f64,
}

impl TscClock {
    pub fn calibrate() -> Self {
        Self::from_clock(Clock::calibrate())
    }

    pub fn from_clock(clock: Clock) -> Self {
        TscClock {
            clock,
            ns_per_tick: clock.ticks_to_ns(1),
        }
    }

    /// Nanoseconds per tick.
    pub fn scale(&self) -> f64 {
        self.ns_per_tick
    }

    /// The same counter converted with another process's calibration. Two processes on one
    /// host read the same TSC but calibrate its frequency independently, a few ppm apart; times
    /// since boot (10^13 ns) then disagree by milliseconds and drift apart at that rate. A local
    /// peer takes the launcher's scale, so only real clock differences are left to the sync.
    pub fn with_scale(mut self, ns_per_tick: f64) -> Self {
        if matches!(
            self.clock.source(),
            commperf_transport::clock::ClockSource::Tsc { .. }
        ) {
            self.ns_per_tick = ns_per_tick;
        }
        self
    }
}

impl LocalClock for TscClock {
    #[inline(always)]
    fn now_ns(&self) -> f64 {
        self.clock.now() as f64 * self.ns_per_tick
    }
}

/// Any [`Timer`] (the model transport's virtual clock) as a local clock.
#[derive(Debug, Clone)]
pub struct TimerClock<T>(pub T);

impl<T: Timer> LocalClock for TimerClock<T> {
    #[inline]
    fn now_ns(&self) -> f64 {
        self.0.now_ns()
    }
}

/// Test hook: a clock that reads `inner · (1 + drift) + offset_ns`: skewed by a fixed offset and
/// running fast (drift > 0) or slow by a fixed rate.
#[derive(Debug, Clone)]
pub struct Skewed<C> {
    pub inner: C,
    pub offset_ns: f64,
    /// Relative rate error, e.g. 50e-6 for 50 ppm fast.
    pub drift: f64,
}

impl<C: LocalClock> LocalClock for Skewed<C> {
    #[inline]
    fn now_ns(&self) -> f64 {
        self.inner.now_ns() * (1.0 + self.drift) + self.offset_ns
    }
}

impl<C: LocalClock + ?Sized> LocalClock for &C {
    #[inline]
    fn now_ns(&self) -> f64 {
        (**self).now_ns()
    }
}

/// Converts one rank's local time to global time: `global = local − offset − drift·(local −
/// ref_local)`. Rank 0's is the identity.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Correction {
    /// Local minus global at `ref_local_ns` (the last synchronization).
    pub offset_ns: f64,
    pub ref_local_ns: f64,
    /// Measured drift of this clock against the global one (dimensionless; 1e-6 = 1 ppm).
    pub drift: f64,
    /// Half the round trip of the kept sample: the offset is known to ± this much.
    pub error_bound_ns: f64,
    /// How much the drift estimate may be off (from both syncs' bounds over their distance).
    pub drift_error: f64,
    /// Synchronizations so far (0: never synchronized, the identity).
    pub syncs: u32,
}

impl Default for Correction {
    fn default() -> Self {
        Correction {
            offset_ns: 0.0,
            ref_local_ns: 0.0,
            drift: 0.0,
            error_bound_ns: 0.0,
            drift_error: 0.0,
            syncs: 0,
        }
    }
}

impl Correction {
    /// Global time of the local time `local_ns`.
    #[inline(always)]
    pub fn to_global(&self, local_ns: f64) -> f64 {
        local_ns - self.offset_ns - self.drift * (local_ns - self.ref_local_ns)
    }

    /// The error bound at local time `local_ns`: the offset's, plus the drift's uncertainty
    /// over the time since the last synchronization.
    pub fn error_bound_at(&self, local_ns: f64) -> f64 {
        self.error_bound_ns + self.drift_error * (local_ns - self.ref_local_ns).abs()
    }
}

/// How often and how carefully to synchronize.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SyncPolicy {
    /// Queries per peer per synchronization; the one with the smallest round trip is kept.
    pub samples: u32,
    /// Time between global re-synchronizations.
    pub interval: Duration,
}

impl Default for SyncPolicy {
    fn default() -> Self {
        SyncPolicy {
            samples: 50,
            interval: Duration::from_secs(300),
        }
    }
}

/// One row of the offset table rank 0 distributes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct OffsetSample {
    pub rank: u32,
    /// Peer local minus global, at global time `at_global_ns`.
    pub offset_ns: f64,
    pub at_global_ns: f64,
    /// RTT/2 of the kept sample.
    pub error_bound_ns: f64,
    /// The kept (smallest) round trip and the largest seen, for the report.
    pub min_rtt_ns: f64,
    pub max_rtt_ns: f64,
}

/// Tags of the clock protocol, above any tag the workloads use. They travel on the inner
/// endpoint, unmonitored.
pub const SYNC_QUERY: Tag = u32::MAX - 10;
pub const SYNC_REPLY: Tag = u32::MAX - 11;
pub const SYNC_TABLE: Tag = u32::MAX - 12;

fn protocol(what: &str) -> MonitorError {
    MonitorError::Clock(what.to_string())
}

/// Rank 0's side, for one peer: `samples` Cristian queries, keeping the smallest round trip.
pub fn query_peer<E: Endpoint, C: LocalClock>(
    ep: &mut E,
    clock: &C,
    rank: u32,
    samples: u32,
) -> Result<OffsetSample, MonitorError> {
    let mut best: Option<OffsetSample> = None;
    let mut max_rtt: f64 = 0.0;
    let mut buf = [0u8; 8];
    for _ in 0..samples.max(1) {
        let t0 = clock.now_ns();
        // As long as the reply, so that both directions cost the same (Cristian's assumption).
        ep.send(SYNC_QUERY, &[0u8; 8])?;
        let info = ep.recv(&mut buf)?;
        let t1 = clock.now_ns();
        if info.tag != SYNC_REPLY || info.len != 8 {
            return Err(protocol("expected a clock reply"));
        }
        let peer = f64::from_le_bytes(buf);
        let rtt = t1 - t0;
        max_rtt = max_rtt.max(rtt);
        let mid = (t0 + t1) / 2.0;
        if best.is_none_or(|b| rtt < 2.0 * b.error_bound_ns) {
            best = Some(OffsetSample {
                rank,
                offset_ns: peer - mid,
                at_global_ns: mid,
                error_bound_ns: rtt / 2.0,
                min_rtt_ns: rtt,
                max_rtt_ns: 0.0,
            });
        }
    }
    let mut b = best.expect("at least one sample");
    b.max_rtt_ns = max_rtt;
    Ok(b)
}

fn encode_table(table: &[OffsetSample]) -> Vec<u8> {
    let mut v = Vec::with_capacity(table.len() * 44);
    for s in table {
        v.extend_from_slice(&s.rank.to_le_bytes());
        for x in [
            s.offset_ns,
            s.at_global_ns,
            s.error_bound_ns,
            s.min_rtt_ns,
            s.max_rtt_ns,
        ] {
            v.extend_from_slice(&x.to_le_bytes());
        }
    }
    v
}

fn decode_table(b: &[u8]) -> Result<Vec<OffsetSample>, MonitorError> {
    if b.len() % 44 != 0 {
        return Err(protocol(
            "offset table of a length that is not a whole number of rows",
        ));
    }
    Ok(b.chunks_exact(44)
        .map(|c| {
            let f = |i: usize| f64::from_le_bytes(c[4 + 8 * i..12 + 8 * i].try_into().unwrap());
            OffsetSample {
                rank: u32::from_le_bytes(c[..4].try_into().unwrap()),
                offset_ns: f(0),
                at_global_ns: f(1),
                error_bound_ns: f(2),
                min_rtt_ns: f(3),
                max_rtt_ns: f(4),
            }
        })
        .collect())
}

/// Rank 0: queries every peer (`eps[i]` leads to rank `ranks[i]`), then sends each the whole
/// table. Returns the table.
pub fn sync_master<E: Endpoint, C: LocalClock>(
    eps: &mut [&mut E],
    ranks: &[u32],
    clock: &C,
    policy: &SyncPolicy,
) -> Result<Vec<OffsetSample>, MonitorError> {
    let mut table = Vec::with_capacity(eps.len());
    for (ep, &r) in eps.iter_mut().zip(ranks) {
        table.push(query_peer(*ep, clock, r, policy.samples)?);
    }
    let bytes = encode_table(&table);
    for ep in eps.iter_mut() {
        ep.send(SYNC_TABLE, &bytes)?;
    }
    Ok(table)
}

/// A peer: answers rank 0's queries until the table arrives, then updates `corr` with its own
/// row (the offset, and the drift since the previous synchronization).
pub fn sync_follower<E: Endpoint, C: LocalClock>(
    ep: &mut E,
    clock: &C,
    rank: u32,
    corr: &mut Correction,
) -> Result<OffsetSample, MonitorError> {
    let mut buf = vec![0u8; 44 * 4096];
    loop {
        let info = ep.recv(&mut buf)?;
        match info.tag {
            SYNC_QUERY => {
                let now = clock.now_ns();
                ep.send(SYNC_REPLY, &now.to_le_bytes())?;
            }
            SYNC_TABLE => {
                let table = decode_table(&buf[..info.len])?;
                let me = table
                    .into_iter()
                    .find(|s| s.rank == rank)
                    .ok_or_else(|| protocol("the offset table has no row for this rank"))?;
                apply(corr, &me);
                return Ok(me);
            }
            t => {
                return Err(protocol(&format!(
                    "unexpected tag {t:#x} during clock sync"
                )))
            }
        }
    }
}

/// Updates a correction with a new table row: the drift from the previous row, if any.
pub fn apply(corr: &mut Correction, s: &OffsetSample) {
    let local = s.at_global_ns + s.offset_ns;
    if corr.syncs > 0 {
        // The previous sync's offset and where it was taken, in global time.
        let prev_global = corr.ref_local_ns - corr.offset_ns;
        let dt = s.at_global_ns - prev_global;
        if dt > 0.0 {
            // Offsets grow by drift per unit of global time; the correction is in local time,
            // whose unit is (1 + drift) global units: d_local = d / (1 + d).
            let d = (s.offset_ns - corr.offset_ns) / dt;
            let err = (s.error_bound_ns + corr.error_bound_ns) / dt;
            // A drift below its own uncertainty is indistinguishable from none: extrapolating
            // it would add its noise (±1 ppm from two syncs 0.3 s apart is ±1 µs after a
            // second) to every later stamp. Clocks on one host share the TSC and do not drift.
            corr.drift = if d.abs() > err { d / (1.0 + d) } else { 0.0 };
            corr.drift_error = err;
        }
    }
    corr.offset_ns = s.offset_ns;
    corr.ref_local_ns = local;
    corr.error_bound_ns = s.error_bound_ns;
    corr.syncs += 1;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn correction_undoes_offset_and_drift() {
        // A peer clock 1 ms ahead and 50 ppm fast; two exact samples 10 s apart.
        let (off, d) = (1e6, 50e-6);
        let local = |g: f64| g * (1.0 + d) + off;
        let mut c = Correction::default();
        for g in [1e9, 11e9] {
            apply(
                &mut c,
                &OffsetSample {
                    rank: 1,
                    offset_ns: local(g) - g,
                    at_global_ns: g,
                    error_bound_ns: 0.0,
                    min_rtt_ns: 0.0,
                    max_rtt_ns: 0.0,
                },
            );
        }
        for g in [11e9, 20e9, 311e9] {
            let back = c.to_global(local(g));
            assert!((back - g).abs() < 1e-3, "at {g}: {back}");
        }
        assert!((c.drift - d / (1.0 + d)).abs() < 1e-15);
    }

    #[test]
    fn table_round_trips() {
        let t = vec![OffsetSample {
            rank: 7,
            offset_ns: -3.5,
            at_global_ns: 1e12,
            error_bound_ns: 40.0,
            min_rtt_ns: 80.0,
            max_rtt_ns: 900.0,
        }];
        assert_eq!(decode_table(&encode_table(&t)).unwrap(), t);
        assert!(decode_table(&[0u8; 43]).is_err());
    }
}
