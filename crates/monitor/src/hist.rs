//! Liao et al.'s (1998) multi-dimensional histograms: per message, size × latency for each stage,
//! keyed by sender, receiver, message type and program tag.
//!
//! Both axes are log-linear (as HDR histograms are): values below `2^SUB_BITS` have a bin each,
//! above that every power of two is split into `2^SUB_BITS` equal bins, so the relative width of
//! a bin is at most `2^-SUB_BITS` whatever the magnitude and the number of bins is fixed: memory
//! is bounded by the number of keys, never by the run length. Beside the bins each (stage, size
//! bin) keeps the exact count and exact integer sums of nanoseconds and bytes, so means are exact
//! and bins only shape the distribution.
//!
//! Why not the `hdrhistogram` crate: it is one-dimensional (a 2-D histogram would be one of its
//! histograms per size bin, each allocating its full counts array up front, ≈ 10 KiB at the
//! precision used here even for a size seen once), it has no serde support (its own V2 encoding
//! instead, which would make the monitor file opaque), and its record path checks and resizes
//! where ours indexes a fixed row. The binning itself is the same idea and is a dozen lines.
//!
//! [`MsgRecord`] is the one per-message input, independent of any transport, so the MPI
//! interposer's records convert into it as commperf's own transports' do.

use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;

/// A log-linear binning of non-negative integers with `2^sub_bits` bins per power of two.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogLinear {
    sub_bits: u32,
    /// Values at or above `2^max_log2` share the last bin.
    max_log2: u32,
}

impl LogLinear {
    /// Number of bins.
    pub const fn bins(&self) -> usize {
        ((self.max_log2 - self.sub_bits + 1) << self.sub_bits) as usize
    }

    /// The bin of `v`.
    #[inline]
    pub fn index(&self, v: u64) -> usize {
        let lin = 1u64 << self.sub_bits;
        if v < lin {
            return v as usize;
        }
        let top = 63 - v.leading_zeros();
        if top >= self.max_log2 {
            return self.bins() - 1;
        }
        let shift = top - self.sub_bits;
        let sub = ((v >> shift) - lin) as usize;
        (((top - self.sub_bits + 1) as usize) << self.sub_bits) + sub
    }

    /// The smallest value of bin `i`.
    pub fn low(&self, i: usize) -> u64 {
        let lin = 1usize << self.sub_bits;
        if i < lin {
            return i as u64;
        }
        let octave = (i >> self.sub_bits) as u32 - 1;
        let sub = (i & (lin - 1)) as u64;
        ((1u64 << self.sub_bits) + sub) << octave
    }

    /// One past the largest value of bin `i` (`u64::MAX` for the last bin).
    pub fn high(&self, i: usize) -> u64 {
        if i + 1 >= self.bins() {
            u64::MAX
        } else {
            self.low(i + 1)
        }
    }
}

/// Message sizes: 4 bins per power of two (≤ 25 % wide), exact below 4 B, up to 2^48 B.
pub const SIZE_BINS: LogLinear = LogLinear {
    sub_bits: 2,
    max_log2: 48,
};
/// Latencies in ns: 8 bins per power of two (≤ 12.5 % wide), exact below 8 ns, up to 2^40 ns
/// (18 minutes).
pub const LAT_BINS: LogLinear = LogLinear {
    sub_bits: 3,
    max_log2: 40,
};

/// The stages of a message's latency that software can see (Liao et al. 1998, §2.3, Figure 4;
/// defined in the user guide, docs/src/reference/methods.md).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// Time inside the send call.
    Source,
    /// From the sender handing the message over to the receiver noticing its arrival, on the
    /// global clock.
    Net,
    /// From the arrival being noticed to the message being delivered to the caller.
    Destination,
    /// Time a receive waited before the message's send started (a late sender).
    LateSenderWait,
}

impl Stage {
    pub const ALL: [Stage; 4] = [
        Stage::Source,
        Stage::Net,
        Stage::Destination,
        Stage::LateSenderWait,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Source => "source",
            Stage::Net => "net",
            Stage::Destination => "destination",
            Stage::LateSenderWait => "late_sender_wait",
        }
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a message was carried.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Protocol {
    Eager,
    Rendezvous,
    Unknown,
}

/// Point-to-point, or part of a collective.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    P2p,
    Collective,
}

/// A message's type: protocol, scope and the call that sent it (`send`, `MPI_Isend`, …).
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct MsgKind {
    pub protocol: Protocol,
    pub scope: Scope,
    /// A `&'static str` on the recording path (no allocation); owned once read from a file.
    pub call: Cow<'static, str>,
}

impl MsgKind {
    pub const fn p2p(protocol: Protocol, call: &'static str) -> MsgKind {
        MsgKind {
            protocol,
            scope: Scope::P2p,
            call: Cow::Borrowed(call),
        }
    }
}

impl fmt::Display for MsgKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = match self.protocol {
            Protocol::Eager => "eager",
            Protocol::Rendezvous => "rendezvous",
            Protocol::Unknown => "?",
        };
        let s = match self.scope {
            Scope::P2p => "p2p",
            Scope::Collective => "coll",
        };
        write!(f, "{}/{p}/{s}", self.call)
    }
}

/// One message as the monitor saw it. A stage is `None` where this record's observer could not
/// see it (a sender does not see the receiving end; monitoring was off; no clock sync yet).
/// Latencies are signed: a net latency below zero is what clock error looks like, and is
/// counted as such rather than hidden.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MsgRecord {
    pub src: u32,
    pub dst: u32,
    pub bytes: u64,
    pub kind: MsgKind,
    /// Liao et al. (1998) §2.5: which program sent it, so programs monitored at once stay apart.
    pub program: u32,
    pub source_ns: Option<i64>,
    pub net_ns: Option<i64>,
    pub destination_ns: Option<i64>,
    pub late_sender_wait_ns: Option<i64>,
}

impl MsgRecord {
    /// The latency of `stage`, if known.
    pub fn stage(&self, stage: Stage) -> Option<i64> {
        match stage {
            Stage::Source => self.source_ns,
            Stage::Net => self.net_ns,
            Stage::Destination => self.destination_ns,
            Stage::LateSenderWait => self.late_sender_wait_ns,
        }
    }
}

/// What the histograms are keyed by.
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct Key {
    pub src: u32,
    pub dst: u32,
    pub kind: MsgKind,
    pub program: u32,
}

/// Exact totals of one stage over one size bin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Totals {
    pub count: u64,
    pub sum_ns: i64,
    pub sum_bytes: u64,
    pub min_ns: i64,
    pub max_ns: i64,
    /// Latencies below zero (clock error), binned as 0 but summed as they are.
    pub negative: u64,
}

impl Default for Totals {
    fn default() -> Self {
        Totals {
            count: 0,
            sum_ns: 0,
            sum_bytes: 0,
            min_ns: i64::MAX,
            max_ns: i64::MIN,
            negative: 0,
        }
    }
}

impl Totals {
    #[inline]
    fn add(&mut self, bytes: u64, ns: i64) {
        self.count += 1;
        self.sum_ns = self.sum_ns.saturating_add(ns);
        self.sum_bytes = self.sum_bytes.saturating_add(bytes);
        self.min_ns = self.min_ns.min(ns);
        self.max_ns = self.max_ns.max(ns);
        self.negative += (ns < 0) as u64;
    }

    fn merge(&mut self, o: &Totals) {
        self.count += o.count;
        self.sum_ns = self.sum_ns.saturating_add(o.sum_ns);
        self.sum_bytes = self.sum_bytes.saturating_add(o.sum_bytes);
        self.min_ns = self.min_ns.min(o.min_ns);
        self.max_ns = self.max_ns.max(o.max_ns);
        self.negative += o.negative;
    }

    /// Exact mean latency in ns.
    pub fn mean_ns(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum_ns as f64 / self.count as f64)
    }

    /// Exact mean size in bytes.
    pub fn mean_bytes(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum_bytes as f64 / self.count as f64)
    }
}

/// One size bin's row of a stage: exact totals and the latency bins.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Row {
    size_bin: u16,
    totals: Totals,
    lat: Box<[u64]>,
}

/// Size × latency for one stage. Rows are allocated the first time a size bin is seen (a
/// program uses a handful of sizes), then recording only indexes and adds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StageHist {
    /// Size bin → row index + 1 (0: no row yet).
    slot: Box<[u16]>,
    rows: Vec<Row>,
}

impl Default for StageHist {
    fn default() -> Self {
        StageHist {
            slot: vec![0u16; SIZE_BINS.bins()].into_boxed_slice(),
            rows: Vec::new(),
        }
    }
}

impl StageHist {
    fn row_mut(&mut self, size_bin: usize) -> &mut Row {
        let s = self.slot[size_bin];
        if s == 0 {
            self.rows.push(Row {
                size_bin: size_bin as u16,
                totals: Totals::default(),
                lat: vec![0u64; LAT_BINS.bins()].into_boxed_slice(),
            });
            self.slot[size_bin] = self.rows.len() as u16;
            return self.rows.last_mut().expect("just pushed");
        }
        &mut self.rows[s as usize - 1]
    }

    /// Adds one message of `bytes` that spent `ns` in this stage.
    #[inline]
    pub fn add(&mut self, bytes: u64, ns: i64) {
        self.add_in_bin(SIZE_BINS.index(bytes), bytes, ns)
    }

    /// [`StageHist::add`] with the size bin already computed (the caller adds several stages of
    /// one message and bins its size once).
    #[inline]
    fn add_in_bin(&mut self, size_bin: usize, bytes: u64, ns: i64) {
        let row = self.row_mut(size_bin);
        row.totals.add(bytes, ns);
        row.lat[LAT_BINS.index(ns.max(0) as u64)] += 1;
    }

    pub fn merge(&mut self, o: &StageHist) {
        for r in &o.rows {
            let row = self.row_mut(r.size_bin as usize);
            row.totals.merge(&r.totals);
            for (a, b) in row.lat.iter_mut().zip(r.lat.iter()) {
                *a += b;
            }
        }
    }

    /// Totals over every size.
    pub fn totals(&self) -> Totals {
        let mut t = Totals::default();
        for r in &self.rows {
            t.merge(&r.totals);
        }
        t
    }

    /// Per size bin, in size order: (size bin, totals).
    pub fn by_size(&self) -> Vec<(usize, Totals)> {
        let mut v: Vec<(usize, Totals)> = self
            .rows
            .iter()
            .map(|r| (r.size_bin as usize, r.totals))
            .collect();
        v.sort_by_key(|x| x.0);
        v
    }

    /// The `q`-quantile (0..=1) over every size, as the low edge of its bin (so within
    /// `2^-3` of the truth); `None` when empty.
    pub fn quantile(&self, q: f64) -> Option<u64> {
        let mut bins = vec![0u64; LAT_BINS.bins()];
        for r in &self.rows {
            for (a, b) in bins.iter_mut().zip(r.lat.iter()) {
                *a += b;
            }
        }
        let n: u64 = bins.iter().sum();
        if n == 0 {
            return None;
        }
        let want = ((q.clamp(0.0, 1.0) * n as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, c) in bins.iter().enumerate() {
            seen += c;
            if seen >= want {
                return Some(LAT_BINS.low(i));
            }
        }
        None
    }

    /// The latency bins of a size bin: (low ns, high ns, count) for every non-empty bin.
    pub fn latency_bins(&self, size_bin: usize) -> Vec<(u64, u64, u64)> {
        match self.slot.get(size_bin).copied().unwrap_or(0) {
            0 => Vec::new(),
            s => self.rows[s as usize - 1]
                .lat
                .iter()
                .enumerate()
                .filter(|(_, &c)| c > 0)
                .map(|(i, &c)| (LAT_BINS.low(i), LAT_BINS.high(i), c))
                .collect(),
        }
    }
}

/// The serialized form of a row: bins as sparse `[low_ns, count]` pairs.
#[derive(Serialize, Deserialize, schemars::JsonSchema)]
struct RowRepr {
    size_low_bytes: u64,
    #[serde(flatten)]
    totals: Totals,
    bins: Vec<(u64, u64)>,
}

/// The file form is the rows [`Serialize`] writes.
impl schemars::JsonSchema for StageHist {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "StageHist".into()
    }
    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        <Vec<RowRepr>>::json_schema(g)
    }
}

impl Serialize for StageHist {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let rows: Vec<RowRepr> = self
            .by_size()
            .into_iter()
            .map(|(b, totals)| RowRepr {
                size_low_bytes: SIZE_BINS.low(b),
                totals,
                bins: self
                    .latency_bins(b)
                    .into_iter()
                    .map(|(lo, _, c)| (lo, c))
                    .collect(),
            })
            .collect();
        rows.serialize(s)
    }
}

impl<'de> Deserialize<'de> for StageHist {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let rows = Vec::<RowRepr>::deserialize(d)?;
        let mut h = StageHist::default();
        for r in rows {
            let b = SIZE_BINS.index(r.size_low_bytes);
            if SIZE_BINS.low(b) != r.size_low_bytes || h.slot[b] != 0 {
                return Err(D::Error::custom(format!(
                    "size bin starting at {} B is not a bin boundary or appears twice",
                    r.size_low_bytes
                )));
            }
            let row = h.row_mut(b);
            row.totals = r.totals;
            let mut binned = 0u64;
            for (lo, c) in r.bins {
                let i = LAT_BINS.index(lo);
                if LAT_BINS.low(i) != lo {
                    return Err(D::Error::custom(format!(
                        "latency bin starting at {lo} ns is not a bin boundary"
                    )));
                }
                row.lat[i] += c;
                binned = binned.saturating_add(c);
            }
            if binned != row.totals.count {
                return Err(D::Error::custom(format!(
                    "size bin starting at {} B: bins hold {binned} messages, count says {}",
                    r.size_low_bytes, row.totals.count
                )));
            }
        }
        Ok(h)
    }
}

/// One key's histograms, one per stage.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Stages {
    pub source: StageHist,
    pub net: StageHist,
    pub destination: StageHist,
    pub late_sender_wait: StageHist,
}

impl Stages {
    pub fn get(&self, s: Stage) -> &StageHist {
        match s {
            Stage::Source => &self.source,
            Stage::Net => &self.net,
            Stage::Destination => &self.destination,
            Stage::LateSenderWait => &self.late_sender_wait,
        }
    }

    fn get_mut(&mut self, s: Stage) -> &mut StageHist {
        match s {
            Stage::Source => &mut self.source,
            Stage::Net => &mut self.net,
            Stage::Destination => &mut self.destination,
            Stage::LateSenderWait => &mut self.late_sender_wait,
        }
    }

    pub fn merge(&mut self, o: &Stages) {
        for s in Stage::ALL {
            self.get_mut(s).merge(o.get(s));
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
struct Entry {
    #[serde(flatten)]
    key: Key,
    stages: Stages,
}

/// Every key's histograms. Recording looks the key up by a hash of its fields (no allocation
/// for a known key: the message's call name is compared, never copied) and remembers the last
/// key used, which is the common case of a stream of like messages.
#[derive(Debug, Clone, Default)]
pub struct Histograms {
    entries: Vec<Entry>,
    /// Hash of the key fields → indexes of the entries with that hash.
    index: HashMap<u64, Vec<usize>>,
    last: usize,
}

fn key_hash(src: u32, dst: u32, program: u32, kind: &MsgKind) -> u64 {
    // FNV-1a over the fields: short keys, no hasher state to build per message.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |b: u8| {
        h ^= b as u64;
        h = h.wrapping_mul(0x100_0000_01b3);
    };
    for v in [src, dst, program, kind.protocol as u32, kind.scope as u32] {
        v.to_le_bytes().into_iter().for_each(&mut eat);
    }
    kind.call.bytes().for_each(eat);
    h
}

#[inline]
fn same(k: &Key, r: &MsgRecord) -> bool {
    k.src == r.src && k.dst == r.dst && k.program == r.program && k.kind == r.kind
}

impl Histograms {
    pub fn new() -> Self {
        Self::default()
    }

    fn slot(&mut self, r: &MsgRecord) -> usize {
        if let Some(e) = self.entries.get(self.last) {
            if same(&e.key, r) {
                return self.last;
            }
        }
        self.key_slot(r.src, r.dst, r.program, &r.kind)
    }

    /// The slot of a key (created empty if new), for [`Histograms::record_at`]. A recorder that
    /// sends many messages under a handful of keys looks each up once and keeps the slot, so
    /// the hot path neither hashes nor compares the key. Slots stay valid until this set is
    /// replaced (e.g. by `std::mem::take`).
    pub fn key_slot(&mut self, src: u32, dst: u32, program: u32, kind: &MsgKind) -> usize {
        let h = key_hash(src, dst, program, kind);
        let is = |k: &Key| k.src == src && k.dst == dst && k.program == program && k.kind == *kind;
        if let Some(ix) = self.index.get(&h) {
            if let Some(&i) = ix.iter().find(|&&i| is(&self.entries[i].key)) {
                self.last = i;
                return i;
            }
        }
        let i = self.entries.len();
        self.entries.push(Entry {
            key: Key {
                src,
                dst,
                kind: kind.clone(),
                program,
            },
            stages: Stages::default(),
        });
        self.index.entry(h).or_default().push(i);
        self.last = i;
        i
    }

    /// Adds every known stage of one message.
    #[inline]
    pub fn record(&mut self, r: &MsgRecord) {
        let i = self.slot(r);
        self.record_at(
            i,
            r.bytes,
            [
                r.source_ns,
                r.net_ns,
                r.destination_ns,
                r.late_sender_wait_ns,
            ],
        );
    }

    /// Adds one message of `bytes` to the key at `slot` (from [`Histograms::key_slot`]): each
    /// stage of [`Stage::ALL`] whose latency is known, in that order.
    ///
    /// # Panics
    /// If `slot` is not a slot of this set.
    #[inline]
    pub fn record_at(&mut self, slot: usize, bytes: u64, stages: [Option<i64>; 4]) {
        let st = &mut self.entries[slot].stages;
        let bin = SIZE_BINS.index(bytes);
        for (s, ns) in Stage::ALL.into_iter().zip(stages) {
            if let Some(ns) = ns {
                st.get_mut(s).add_in_bin(bin, bytes, ns);
            }
        }
    }

    /// Adds `other` into this set: the sender's and the receiver's halves of the same messages
    /// meet under one key.
    pub fn merge(&mut self, other: &Histograms) {
        for e in &other.entries {
            let probe = MsgRecord {
                src: e.key.src,
                dst: e.key.dst,
                bytes: 0,
                kind: e.key.kind.clone(),
                program: e.key.program,
                source_ns: None,
                net_ns: None,
                destination_ns: None,
                late_sender_wait_ns: None,
            };
            let i = self.slot(&probe);
            self.entries[i].stages.merge(&e.stages);
        }
    }

    /// Every key with its histograms, in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&Key, &Stages)> {
        let mut v: Vec<&Entry> = self.entries.iter().collect();
        v.sort_by(|a, b| a.key.cmp(&b.key));
        v.into_iter().map(|e| (&e.key, &e.stages))
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The stages of every key `keep` accepts, merged.
    pub fn collapse(&self, mut keep: impl FnMut(&Key) -> bool) -> Stages {
        let mut out = Stages::default();
        for e in self.entries.iter().filter(|e| keep(&e.key)) {
            out.merge(&e.stages);
        }
        out
    }

    /// A copy holding only the keys `keep` accepts.
    pub fn filter(&self, mut keep: impl FnMut(&Key) -> bool) -> Histograms {
        let mut out = Histograms::new();
        for e in self.entries.iter().filter(|e| keep(&e.key)) {
            let i = out.entries.len();
            out.index
                .entry(key_hash(e.key.src, e.key.dst, e.key.program, &e.key.kind))
                .or_default()
                .push(i);
            out.entries.push(e.clone());
        }
        out
    }

    /// Program tags present.
    pub fn programs(&self) -> Vec<u32> {
        let mut v: Vec<u32> = self.entries.iter().map(|e| e.key.program).collect();
        v.sort_unstable();
        v.dedup();
        v
    }
}

impl PartialEq for Histograms {
    fn eq(&self, o: &Histograms) -> bool {
        let a: Vec<_> = self.iter().collect();
        let b: Vec<_> = o.iter().collect();
        a == b
    }
}

/// The file form is the entries [`Serialize`] writes, sorted by key.
impl schemars::JsonSchema for Histograms {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Histograms".into()
    }
    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        <Vec<Entry>>::json_schema(g)
    }
}

impl Serialize for Histograms {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut v: Vec<&Entry> = self.entries.iter().collect();
        v.sort_by(|a, b| a.key.cmp(&b.key));
        v.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Histograms {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let entries = Vec::<Entry>::deserialize(d)?;
        let mut h = Histograms::default();
        for e in entries {
            let i = h.entries.len();
            let hash = key_hash(e.key.src, e.key.dst, e.key.program, &e.key.kind);
            if h.index
                .get(&hash)
                .is_some_and(|ix| ix.iter().any(|&j| h.entries[j].key == e.key))
            {
                return Err(serde::de::Error::custom(format!(
                    "histogram key {} → {} ({}, program {}) appears twice",
                    e.key.src, e.key.dst, e.key.kind, e.key.program
                )));
            }
            h.index.entry(hash).or_default().push(i);
            h.entries.push(e);
        }
        Ok(h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_cover_every_value_once_and_in_order() {
        for b in [SIZE_BINS, LAT_BINS] {
            let mut prev = 0;
            for i in 0..b.bins() {
                assert_eq!(b.index(b.low(i)), i, "low of bin {i}");
                if i + 1 < b.bins() {
                    assert_eq!(b.index(b.high(i) - 1), i, "top of bin {i}");
                    assert!(b.high(i) > b.low(i));
                }
                assert!(i == 0 || b.low(i) > prev);
                prev = b.low(i);
            }
        }
        // Known values: 5 ns exact; 100 ns in [96, 104); 4096 B starts a bin; 640 B in [640, 768).
        assert_eq!((LAT_BINS.low(LAT_BINS.index(5)), LAT_BINS.high(5)), (5, 6));
        let i = LAT_BINS.index(100);
        assert_eq!((LAT_BINS.low(i), LAT_BINS.high(i)), (96, 104));
        assert_eq!(SIZE_BINS.low(SIZE_BINS.index(4096)), 4096);
        let i = SIZE_BINS.index(700);
        assert_eq!((SIZE_BINS.low(i), SIZE_BINS.high(i)), (640, 768));
        assert_eq!(LAT_BINS.index(u64::MAX), LAT_BINS.bins() - 1);
    }

    fn rec(src: u32, bytes: u64, net: i64, call: &'static str, program: u32) -> MsgRecord {
        MsgRecord {
            src,
            dst: 1 - src,
            bytes,
            kind: MsgKind::p2p(Protocol::Eager, call),
            program,
            source_ns: Some(net / 2),
            net_ns: Some(net),
            destination_ns: None,
            late_sender_wait_ns: None,
        }
    }

    #[test]
    fn counts_and_means_are_exact_and_keys_stay_apart() {
        let mut h = Histograms::new();
        for i in 0..1000 {
            h.record(&rec(0, 64, 100 + i % 7, "send", 1));
        }
        for _ in 0..10 {
            h.record(&rec(0, 65536, -20, "send", 1));
            h.record(&rec(0, 64, 5000, "send", 2));
            h.record(&rec(0, 64, 5000, "sendrecv", 1));
        }
        let st = h.collapse(|k| k.program == 1 && k.kind.call == "send");
        let rows = st.net.by_size();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].1.count, 1000);
        // Σ (100 + i % 7) over i < 1000: 142 full cycles of 0..7 (21 each) plus 0..5 (15).
        assert_eq!(rows[0].1.sum_ns, 100 * 1000 + 142 * 21 + 15);
        assert_eq!(rows[0].1.sum_bytes, 64_000);
        assert_eq!(rows[1].1.count, 10);
        assert_eq!(rows[1].1.negative, 10);
        assert_eq!(rows[1].1.mean_ns(), Some(-20.0));
        assert_eq!(st.destination.totals().count, 0);
        assert_eq!(h.programs(), vec![1, 2]);
        assert_eq!(h.collapse(|k| k.program == 2).net.totals().count, 10);
        assert_eq!(h.collapse(|_| true).net.totals().count, 1030);
        // Bins hold the same counts as the totals.
        let bins = st.net.latency_bins(SIZE_BINS.index(64));
        assert_eq!(bins.iter().map(|b| b.2).sum::<u64>(), 1000);
        assert!(bins.iter().all(|b| b.0 >= 96 && b.1 <= 112), "{bins:?}");
    }

    #[test]
    fn merge_and_serde_round_trip() {
        let mut a = Histograms::new();
        let mut b = Histograms::new();
        for i in 0..50 {
            a.record(&rec(0, 100, 1000 + i, "send", 0));
            b.record(&rec(0, 100, 2000, "send", 0));
            b.record(&rec(1, 7, 3, "send", 0));
        }
        let mut m = a.clone();
        m.merge(&b);
        let t = m.collapse(|k| k.src == 0).net.totals();
        assert_eq!(t.count, 100);
        assert_eq!(t.sum_ns, (1000 * 50 + 49 * 50 / 2) + 2000 * 50);
        assert_eq!((t.min_ns, t.max_ns), (1000, 2000));
        let json = serde_json::to_string(&m).unwrap();
        let back: Histograms = serde_json::from_str(&json).unwrap();
        assert_eq!(back, m);
        assert_eq!(back.collapse(|k| k.src == 1).net.totals().count, 50);
    }

    #[test]
    fn inconsistent_files_are_refused() {
        let mut a = Histograms::new();
        a.record(&rec(0, 100, 1000, "send", 0));
        let json = serde_json::to_string(&a).unwrap();
        let bad = json.replace("\"count\":1", "\"count\":2");
        let e = serde_json::from_str::<Histograms>(&bad).unwrap_err();
        assert!(e.to_string().contains("bins hold 1 messages"), "{e}");
    }
}
