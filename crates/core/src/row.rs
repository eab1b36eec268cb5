//! One measured point, typed by its benchmark ([`Row`], [`Figures`]), and its flat shape in the
//! result file ([`FlatRow`]).
//!
//! The file keeps one flat object per row with every figure optional; in memory a row holds
//! exactly the figures its benchmark has (latency percentiles, stream rates, a cost over a
//! baseline, LogGOPS pieces, a pipeline's fragment), so a latency row with a bandwidth, or a
//! bandwidth row with a LogGP piece, cannot be built, and a file holding one is refused by the
//! field's name when it is read.

use crate::{Benchmark, BufferUse, Mode, TransportKind};
use serde::{Deserialize, Serialize};

/// One measured point as the result file writes it: every figure of every benchmark, flat,
/// in the file's field order. [`Row`] is read from and written as this; a reader that shows
/// every column (the CSV exporter, the tables) reads it through [`Row::flat`]. Building a
/// [`Row`] from it ([`Row::try_from`]) refuses a figure the row's benchmark cannot have.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(
    description = "One measured point. Which figures a row holds depends on its benchmark \
                   (docs/src/reference/formats.md); a figure its benchmark cannot have is refused."
)]
#[allow(non_snake_case)] // `L_us`: LogGP's L, which must not read as a lower-case l
pub struct FlatRow {
    pub benchmark: Benchmark,
    pub transport: TransportKind,
    pub mode: Mode,
    pub size_bytes: u64,
    /// Timed iterations (ping-pongs for latency, windows for bw/bibw/mr).
    pub iterations: u64,
    /// Untimed warm-up iterations run first.
    pub warmup: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<u32>,
    /// One-way latency percentiles (latency benchmark).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p50_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p90_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_us: Option<f64>,
    /// Standard uncertainty of `p50_us` (from the order statistics around the median): two of
    /// these either side is a ~95 % interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p50_noise_us: Option<f64>,
    /// Bandwidth, MB = 1e6 bytes (bw, bibw, mr).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mb_per_s: Option<f64>,
    /// Messages per second (bw, bibw, mr).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub msgs_per_s: Option<f64>,
    /// Fraction of the physical limit reached (shm only): `limit_us / p50_us` for latency,
    /// `mb_per_s / limit_mb_per_s` for bw and mr.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub efficiency: Option<f64>,
    /// The latency limit this row is judged against, measured just before it (the vCPUs of a
    /// VM move between cores, so a limit from the start of the run may not apply): one-way
    /// cache-line time between the two CPUs plus size ÷ memcpy bandwidth at this size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit_us: Option<f64>,
    /// The bandwidth limit this row is judged against: memcpy bandwidth at this size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit_mb_per_s: Option<f64>,
    /// Extended benchmarks: the standard (polling, reused-buffer) latency p50 measured in the
    /// same run, and this row's p50 minus it ("cost over standard latency").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline_p50_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_us: Option<f64>,
    /// The noise band of `cost_us` (twice the standard uncertainty of the difference, including
    /// the baseline's drift during the measurement): a cost within it is no measurable cost.
    /// Below zero within it a cost is given as 0; below zero beyond it it is re-measured, and
    /// left out with a note if it stays there (except where the variant can save time: then it
    /// is a saving).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_noise_us: Option<f64>,
    /// conns: endpoints the client held open and swept for completions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connections: Option<u32>,
    /// noncontig: the message was sent from this many scattered segments, gathered by the
    /// transport (`packed` false) or packed into one buffer first (`packed` true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub segments: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub packed: Option<bool>,
    /// bufmgmt: the variant's buffers (fresh per message, or registered memory used in place);
    /// its baseline is the standard latency, from one private buffer copied in and out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buffers: Option<BufferUse>,
    /// Blocking mode: checks spun before sleeping (0 = block at once; more = spin-then-block).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_spins: Option<u32>,
    /// LogGOPS (loggp benchmark). Per size: `o_s_us` and `o_r_us`, the CPU time of one send and
    /// one receive of this size, and `gap_us`, g + G·s measured at this size. Per protocol
    /// piece (`piece_from_bytes` ..= `piece_to_bytes`, the same on every row of the piece): the
    /// fixed overheads `o_s_fixed_us`, `o_r_fixed_us` and per-byte ones `O_s_us_per_byte`,
    /// `O_r_us_per_byte` (o + O·s per side), the gap `g_us` and `G_us_per_byte`, the
    /// size-independent network latency `L_us` and `overlap_us`, how far the one-way time falls
    /// below o_s + L + o_r + max(O_r, G)·s because the transport overlaps the two sides' work;
    /// `model_us` is LogGOPS's one-way time at this size with those parameters (`p50_us` holds
    /// the measured one). Where the layer can post a send and a receive at once (MPI),
    /// `exchange_us` is one exchange at this size, both sides sending and receiving together,
    /// and the piece's `send_wait_us` the part of the send call spent waiting for the receiver
    /// (the exchange is that much below o_s + o_r), or its `duplex_us`, how much the exchange
    /// takes beyond o_s + o_r where the two directions slow each other. A figure that is not
    /// identifiable at the measured sizes, or came out below zero beyond its noise, is absent and a
    /// note says why; none is ever negative.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub o_s_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub o_r_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gap_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub o_s_fixed_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub O_s_us_per_byte: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub o_r_fixed_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub O_r_us_per_byte: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub g_us: Option<f64>,
    #[serde(
        default,
        rename = "G_us_per_byte",
        skip_serializing_if = "Option::is_none"
    )]
    pub gap_per_byte_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub L_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overlap_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exchange_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_wait_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duplex_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub piece_from_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub piece_to_bytes: Option<u64>,
    /// pipeline: the fragment size the message was sent in (the largest, for a message the
    /// adaptive choice sends whole).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fragment_bytes: Option<u64>,
    /// pipeline: how the fragment size was chosen: `fixed`, or the adaptive rule that chose it
    /// (`adaptive: eq8`, `adaptive: recurrence`, `adaptive: whole`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fragment_rule: Option<String>,
    /// pipeline: Fröhlich et al.'s (2000) eq. 7 at this size and fragment (the approximation
    /// `model_us`, the exact recurrence, is compared with).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eq7_us: Option<f64>,
    /// Pairs of ranks that measured at once (OSU's multi-pair tests, under `--launcher mpi` or
    /// `--transport mpi` with more than two ranks): bandwidth and message rate are then sums
    /// over the pairs (osu_mbw_mr), latency figures the mean of each pair's figure
    /// (osu_multi_lat). Absent for one pair.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pairs: Option<u32>,
    /// Whether every payload byte was checked.
    pub validated: bool,
    /// Why a figure of this row is absent or was judged (within noise, re-measured, not
    /// identifiable), in words; empty for most rows.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// One measured point: who measured what (benchmark, transport, mode, size, counts), and the
/// figures of its benchmark.
///
/// Built by [`Row::new`], which gives the benchmark's kind of figures with every figure
/// absent, or read from a file (through [`FlatRow`], checked); the benchmark cannot change
/// afterwards, and a writer reaches only the figures its kind has ([`Row::percentiles_mut`],
/// [`Row::stream_mut`], [`Row::cost_mut`], [`Row::loggp_mut`], [`Row::pipeline_mut`],
/// [`Row::latency_mut`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "FlatRow", into = "FlatRow")]
pub struct Row {
    benchmark: Benchmark,
    pub transport: TransportKind,
    pub mode: Mode,
    pub size_bytes: u64,
    /// Timed iterations (ping-pongs for latency, windows for bw/bibw/mr).
    pub iterations: u64,
    /// Untimed warm-up iterations run first.
    pub warmup: u64,
    /// Pairs of ranks that measured at once ([`FlatRow::pairs`]); absent for one pair.
    pub pairs: Option<u32>,
    /// Whether every payload byte was checked.
    pub validated: bool,
    /// Why a figure of this row is absent or was judged, in words; empty for most rows.
    pub notes: Vec<String>,
    figures: Figures,
}

/// The file's form is the flat row [`Row`] is read from and written as.
impl schemars::JsonSchema for Row {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Row".into()
    }
    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        FlatRow::json_schema(g)
    }
}

/// The figures of a row, one kind per family of benchmarks.
#[derive(Debug, Clone, PartialEq)]
pub enum Figures {
    /// latency.
    Latency(LatencyFigures),
    /// bw, bibw, mr.
    Stream(StreamFigures),
    /// The extended benchmarks measured against a baseline latency: bufmgmt, blocking,
    /// noncontig, conns, cq.
    Cost(CostFigures),
    /// loggp.
    LogGp(LogGpFigures),
    /// pipeline.
    Pipeline(PipelineFigures),
}

/// One-way latency percentiles ([`FlatRow::p50_us`] …); absent when no sample was taken.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Percentiles {
    pub p50_us: Option<f64>,
    pub p90_us: Option<f64>,
    pub p99_us: Option<f64>,
    pub min_us: Option<f64>,
    pub max_us: Option<f64>,
    pub mean_us: Option<f64>,
    pub p50_noise_us: Option<f64>,
}

/// latency: the percentiles and, on shm, the physical limit they are judged against.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LatencyFigures {
    pub pct: Percentiles,
    pub limit_us: Option<f64>,
    pub efficiency: Option<f64>,
}

/// bw, bibw, mr: rates over windows of `window` messages.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct StreamFigures {
    pub window: Option<u32>,
    pub mb_per_s: Option<f64>,
    pub msgs_per_s: Option<f64>,
    pub limit_mb_per_s: Option<f64>,
    pub efficiency: Option<f64>,
}

/// An extended benchmark: its latency, the baseline's p50 and the cost over it, and the key
/// that tells the variant from the others of its benchmark.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CostFigures {
    pub pct: Percentiles,
    pub baseline_p50_us: Option<f64>,
    pub cost_us: Option<f64>,
    pub cost_noise_us: Option<f64>,
    /// Private: a variant of another benchmark cannot be set ([`Row::set_variant`]).
    variant: CostVariant,
}

impl CostFigures {
    pub fn variant(&self) -> CostVariant {
        self.variant
    }
}

/// The key of an extended benchmark's variant; which one is the row's benchmark.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum CostVariant {
    Bufmgmt {
        buffers: Option<BufferUse>,
    },
    Blocking {
        block_spins: Option<u32>,
    },
    Noncontig {
        segments: Option<u32>,
        packed: Option<bool>,
    },
    Conns {
        connections: Option<u32>,
    },
    Cq {
        connections: Option<u32>,
    },
}

/// loggp: the measured one-way time and LogGOPS's figures at this size and of its protocol
/// piece ([`FlatRow::o_s_us`] says what each is).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
#[allow(non_snake_case)] // `L_us`: LogGP's L, which must not read as a lower-case l
pub struct LogGpFigures {
    pub p50_us: Option<f64>,
    pub o_s_us: Option<f64>,
    pub o_r_us: Option<f64>,
    pub gap_us: Option<f64>,
    pub o_s_fixed_us: Option<f64>,
    pub O_s_us_per_byte: Option<f64>,
    pub o_r_fixed_us: Option<f64>,
    pub O_r_us_per_byte: Option<f64>,
    pub g_us: Option<f64>,
    pub gap_per_byte_us: Option<f64>,
    pub L_us: Option<f64>,
    pub overlap_us: Option<f64>,
    pub exchange_us: Option<f64>,
    pub send_wait_us: Option<f64>,
    pub duplex_us: Option<f64>,
    pub model_us: Option<f64>,
    pub piece_from_bytes: Option<u64>,
    pub piece_to_bytes: Option<u64>,
}

/// pipeline: a large message's latency in one fragment size, its bandwidth against the copy
/// limit, and the pipeline model's times.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PipelineFigures {
    pub pct: Percentiles,
    pub mb_per_s: Option<f64>,
    pub limit_mb_per_s: Option<f64>,
    pub efficiency: Option<f64>,
    pub fragment_bytes: Option<u64>,
    pub fragment_rule: Option<String>,
    pub model_us: Option<f64>,
    pub eq7_us: Option<f64>,
}

/// A file's row that no benchmark writes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RowError {
    #[error("a {benchmark} row cannot have `{field}`")]
    FigureNotOfBenchmark {
        benchmark: Benchmark,
        field: &'static str,
    },
    /// A variant key set on a row of another benchmark.
    #[error("a {benchmark} row cannot take a {variant} variant")]
    VariantNotOfBenchmark {
        benchmark: Benchmark,
        variant: Benchmark,
    },
}

impl CostVariant {
    /// The extended benchmark this variant is one of.
    pub fn benchmark(self) -> Benchmark {
        match self {
            CostVariant::Bufmgmt { .. } => Benchmark::Bufmgmt,
            CostVariant::Blocking { .. } => Benchmark::Blocking,
            CostVariant::Noncontig { .. } => Benchmark::Noncontig,
            CostVariant::Conns { .. } => Benchmark::Conns,
            CostVariant::Cq { .. } => Benchmark::Cq,
        }
    }

    /// blocking: checks spun before sleeping.
    pub fn block_spins(self) -> Option<u32> {
        match self {
            CostVariant::Blocking { block_spins } => block_spins,
            _ => None,
        }
    }

    /// noncontig: the scattered segments.
    pub fn segments(self) -> Option<u32> {
        match self {
            CostVariant::Noncontig { segments, .. } => segments,
            _ => None,
        }
    }

    /// noncontig: packed into one buffer first (or gathered by the transport).
    pub fn packed(self) -> Option<bool> {
        match self {
            CostVariant::Noncontig { packed, .. } => packed,
            _ => None,
        }
    }

    /// bufmgmt: what the messages were sent from.
    pub fn buffers(self) -> Option<BufferUse> {
        match self {
            CostVariant::Bufmgmt { buffers } => buffers,
            _ => None,
        }
    }

    /// conns and cq: the endpoints held open.
    pub fn connections(self) -> Option<u32> {
        match self {
            CostVariant::Conns { connections } | CostVariant::Cq { connections } => connections,
            _ => None,
        }
    }
}

impl Figures {
    /// The kind of figures `b` writes, every figure absent.
    pub fn empty(b: Benchmark) -> Figures {
        let cost = |variant| {
            Figures::Cost(CostFigures {
                pct: Percentiles::default(),
                baseline_p50_us: None,
                cost_us: None,
                cost_noise_us: None,
                variant,
            })
        };
        match b {
            Benchmark::Latency => Figures::Latency(LatencyFigures::default()),
            Benchmark::Bw | Benchmark::Bibw | Benchmark::Mr => {
                Figures::Stream(StreamFigures::default())
            }
            Benchmark::Loggp => Figures::LogGp(LogGpFigures::default()),
            Benchmark::Pipeline => Figures::Pipeline(PipelineFigures::default()),
            Benchmark::Bufmgmt => cost(CostVariant::Bufmgmt { buffers: None }),
            Benchmark::Blocking => cost(CostVariant::Blocking { block_spins: None }),
            Benchmark::Noncontig => cost(CostVariant::Noncontig {
                segments: None,
                packed: None,
            }),
            Benchmark::Conns => cost(CostVariant::Conns { connections: None }),
            Benchmark::Cq => cost(CostVariant::Cq { connections: None }),
        }
    }
}

impl Row {
    /// A row with identity fields set and every figure of its benchmark absent.
    pub fn new(
        benchmark: Benchmark,
        transport: TransportKind,
        mode: Mode,
        size_bytes: u64,
    ) -> Self {
        Row {
            benchmark,
            transport,
            mode,
            size_bytes,
            iterations: 0,
            warmup: 0,
            pairs: None,
            validated: false,
            notes: Vec::new(),
            figures: Figures::empty(benchmark),
        }
    }

    pub fn benchmark(&self) -> Benchmark {
        self.benchmark
    }

    pub fn figures(&self) -> &Figures {
        &self.figures
    }

    /// Every figure, flat, as the file has it (for readers that show every column).
    pub fn flat(&self) -> FlatRow {
        FlatRow::from(self.clone())
    }

    /// The latency percentiles of a latency, extended or pipeline row.
    pub fn percentiles(&self) -> Option<&Percentiles> {
        match &self.figures {
            Figures::Latency(f) => Some(&f.pct),
            Figures::Cost(f) => Some(&f.pct),
            Figures::Pipeline(f) => Some(&f.pct),
            Figures::Stream(_) | Figures::LogGp(_) => None,
        }
    }

    pub fn percentiles_mut(&mut self) -> Option<&mut Percentiles> {
        match &mut self.figures {
            Figures::Latency(f) => Some(&mut f.pct),
            Figures::Cost(f) => Some(&mut f.pct),
            Figures::Pipeline(f) => Some(&mut f.pct),
            Figures::Stream(_) | Figures::LogGp(_) => None,
        }
    }

    /// The one-way p50 of any row that measures one (a loggp row's measured one-way time).
    pub fn p50_us(&self) -> Option<f64> {
        match &self.figures {
            Figures::LogGp(f) => f.p50_us,
            _ => self.percentiles().and_then(|p| p.p50_us),
        }
    }

    /// The bandwidth of a stream or pipeline row.
    pub fn mb_per_s(&self) -> Option<f64> {
        match &self.figures {
            Figures::Stream(f) => f.mb_per_s,
            Figures::Pipeline(f) => f.mb_per_s,
            _ => None,
        }
    }

    /// The messages per second of a stream row.
    pub fn msgs_per_s(&self) -> Option<f64> {
        self.stream().and_then(|s| s.msgs_per_s)
    }

    /// The cost over its baseline of an extended row.
    pub fn cost_us(&self) -> Option<f64> {
        self.cost().and_then(|c| c.cost_us)
    }

    /// The key of an extended row's variant (what tells it from the others of its benchmark).
    pub fn variant(&self) -> Option<CostVariant> {
        self.cost().map(|c| c.variant)
    }

    pub fn latency(&self) -> Option<&LatencyFigures> {
        match &self.figures {
            Figures::Latency(f) => Some(f),
            _ => None,
        }
    }

    pub fn stream(&self) -> Option<&StreamFigures> {
        match &self.figures {
            Figures::Stream(f) => Some(f),
            _ => None,
        }
    }

    pub fn cost(&self) -> Option<&CostFigures> {
        match &self.figures {
            Figures::Cost(f) => Some(f),
            _ => None,
        }
    }

    pub fn loggp(&self) -> Option<&LogGpFigures> {
        match &self.figures {
            Figures::LogGp(f) => Some(f),
            _ => None,
        }
    }

    pub fn pipeline(&self) -> Option<&PipelineFigures> {
        match &self.figures {
            Figures::Pipeline(f) => Some(f),
            _ => None,
        }
    }

    /// The fraction of the physical limit reached, of the rows judged against one (latency,
    /// stream, pipeline).
    pub fn efficiency(&self) -> Option<f64> {
        match &self.figures {
            Figures::Latency(f) => f.efficiency,
            Figures::Stream(f) => f.efficiency,
            Figures::Pipeline(f) => f.efficiency,
            Figures::Cost(_) | Figures::LogGp(_) => None,
        }
    }

    pub fn efficiency_mut(&mut self) -> Option<&mut Option<f64>> {
        match &mut self.figures {
            Figures::Latency(f) => Some(&mut f.efficiency),
            Figures::Stream(f) => Some(&mut f.efficiency),
            Figures::Pipeline(f) => Some(&mut f.efficiency),
            Figures::Cost(_) | Figures::LogGp(_) => None,
        }
    }

    /// Sets the key of an extended row's variant; refuses a variant of another benchmark.
    pub fn set_variant(&mut self, v: CostVariant) -> Result<(), RowError> {
        let benchmark = self.benchmark;
        match self.cost_mut() {
            Some(c) if v.benchmark() == benchmark => {
                c.variant = v;
                Ok(())
            }
            _ => Err(RowError::VariantNotOfBenchmark {
                benchmark,
                variant: v.benchmark(),
            }),
        }
    }

    pub fn latency_mut(&mut self) -> Option<&mut LatencyFigures> {
        match &mut self.figures {
            Figures::Latency(f) => Some(f),
            _ => None,
        }
    }

    pub fn stream_mut(&mut self) -> Option<&mut StreamFigures> {
        match &mut self.figures {
            Figures::Stream(f) => Some(f),
            _ => None,
        }
    }

    pub fn cost_mut(&mut self) -> Option<&mut CostFigures> {
        match &mut self.figures {
            Figures::Cost(f) => Some(f),
            _ => None,
        }
    }

    pub fn loggp_mut(&mut self) -> Option<&mut LogGpFigures> {
        match &mut self.figures {
            Figures::LogGp(f) => Some(f),
            _ => None,
        }
    }

    pub fn pipeline_mut(&mut self) -> Option<&mut PipelineFigures> {
        match &mut self.figures {
            Figures::Pipeline(f) => Some(f),
            _ => None,
        }
    }
}

impl FlatRow {
    /// Each figure's name in the file, and whether this row has it.
    fn present(&self) -> [(&'static str, bool); 41] {
        [
            ("window", self.window.is_some()),
            ("p50_us", self.p50_us.is_some()),
            ("p90_us", self.p90_us.is_some()),
            ("p99_us", self.p99_us.is_some()),
            ("min_us", self.min_us.is_some()),
            ("max_us", self.max_us.is_some()),
            ("mean_us", self.mean_us.is_some()),
            ("p50_noise_us", self.p50_noise_us.is_some()),
            ("mb_per_s", self.mb_per_s.is_some()),
            ("msgs_per_s", self.msgs_per_s.is_some()),
            ("efficiency", self.efficiency.is_some()),
            ("limit_us", self.limit_us.is_some()),
            ("limit_mb_per_s", self.limit_mb_per_s.is_some()),
            ("baseline_p50_us", self.baseline_p50_us.is_some()),
            ("cost_us", self.cost_us.is_some()),
            ("cost_noise_us", self.cost_noise_us.is_some()),
            ("connections", self.connections.is_some()),
            ("segments", self.segments.is_some()),
            ("packed", self.packed.is_some()),
            ("buffers", self.buffers.is_some()),
            ("block_spins", self.block_spins.is_some()),
            ("o_s_us", self.o_s_us.is_some()),
            ("o_r_us", self.o_r_us.is_some()),
            ("gap_us", self.gap_us.is_some()),
            ("o_s_fixed_us", self.o_s_fixed_us.is_some()),
            ("O_s_us_per_byte", self.O_s_us_per_byte.is_some()),
            ("o_r_fixed_us", self.o_r_fixed_us.is_some()),
            ("O_r_us_per_byte", self.O_r_us_per_byte.is_some()),
            ("g_us", self.g_us.is_some()),
            ("G_us_per_byte", self.gap_per_byte_us.is_some()),
            ("L_us", self.L_us.is_some()),
            ("overlap_us", self.overlap_us.is_some()),
            ("exchange_us", self.exchange_us.is_some()),
            ("send_wait_us", self.send_wait_us.is_some()),
            ("duplex_us", self.duplex_us.is_some()),
            ("model_us", self.model_us.is_some()),
            ("piece_from_bytes", self.piece_from_bytes.is_some()),
            ("piece_to_bytes", self.piece_to_bytes.is_some()),
            ("fragment_bytes", self.fragment_bytes.is_some()),
            ("fragment_rule", self.fragment_rule.is_some()),
            ("eq7_us", self.eq7_us.is_some()),
        ]
    }

    fn percentiles(&self) -> Percentiles {
        Percentiles {
            p50_us: self.p50_us,
            p90_us: self.p90_us,
            p99_us: self.p99_us,
            min_us: self.min_us,
            max_us: self.max_us,
            mean_us: self.mean_us,
            p50_noise_us: self.p50_noise_us,
        }
    }

    fn set_percentiles(&mut self, p: Percentiles) {
        (self.p50_us, self.p90_us, self.p99_us) = (p.p50_us, p.p90_us, p.p99_us);
        (self.min_us, self.max_us, self.mean_us) = (p.min_us, p.max_us, p.mean_us);
        self.p50_noise_us = p.p50_noise_us;
    }
}

const PERCENTILES: &[&str] = &[
    "p50_us",
    "p90_us",
    "p99_us",
    "min_us",
    "max_us",
    "mean_us",
    "p50_noise_us",
];

/// The figures a row of `b` may have beyond the percentiles, by their names in the file (what
/// the writers in `bench` and `mpi` set); `true` with them when it has the percentiles.
fn allowed(b: Benchmark) -> (bool, &'static [&'static str]) {
    match b {
        Benchmark::Latency => (true, &["limit_us", "efficiency"]),
        Benchmark::Bw | Benchmark::Bibw | Benchmark::Mr => (
            false,
            &[
                "window",
                "mb_per_s",
                "msgs_per_s",
                "limit_mb_per_s",
                "efficiency",
            ],
        ),
        Benchmark::Bufmgmt => (
            true,
            &["baseline_p50_us", "cost_us", "cost_noise_us", "buffers"],
        ),
        Benchmark::Blocking => (
            true,
            &["baseline_p50_us", "cost_us", "cost_noise_us", "block_spins"],
        ),
        Benchmark::Noncontig => (
            true,
            &[
                "baseline_p50_us",
                "cost_us",
                "cost_noise_us",
                "segments",
                "packed",
            ],
        ),
        Benchmark::Conns | Benchmark::Cq => (
            true,
            &["baseline_p50_us", "cost_us", "cost_noise_us", "connections"],
        ),
        Benchmark::Loggp => (
            false,
            &[
                "p50_us",
                "o_s_us",
                "o_r_us",
                "gap_us",
                "o_s_fixed_us",
                "O_s_us_per_byte",
                "o_r_fixed_us",
                "O_r_us_per_byte",
                "g_us",
                "G_us_per_byte",
                "L_us",
                "overlap_us",
                "exchange_us",
                "send_wait_us",
                "duplex_us",
                "model_us",
                "piece_from_bytes",
                "piece_to_bytes",
            ],
        ),
        Benchmark::Pipeline => (
            true,
            &[
                "mb_per_s",
                "limit_mb_per_s",
                "efficiency",
                "fragment_bytes",
                "fragment_rule",
                "model_us",
                "eq7_us",
            ],
        ),
    }
}

impl TryFrom<FlatRow> for Row {
    type Error = RowError;

    /// Refuses, by its name, the first figure the row's benchmark cannot have.
    fn try_from(f: FlatRow) -> Result<Row, RowError> {
        let b = f.benchmark;
        let (pct, extra) = allowed(b);
        let refused = f.present().into_iter().find(|&(name, has)| {
            has && !extra.contains(&name) && !(pct && PERCENTILES.contains(&name))
        });
        if let Some((field, _)) = refused {
            return Err(RowError::FigureNotOfBenchmark {
                benchmark: b,
                field,
            });
        }
        let cost = |variant| {
            Figures::Cost(CostFigures {
                pct: f.percentiles(),
                baseline_p50_us: f.baseline_p50_us,
                cost_us: f.cost_us,
                cost_noise_us: f.cost_noise_us,
                variant,
            })
        };
        let figures = match b {
            Benchmark::Latency => Figures::Latency(LatencyFigures {
                pct: f.percentiles(),
                limit_us: f.limit_us,
                efficiency: f.efficiency,
            }),
            Benchmark::Bw | Benchmark::Bibw | Benchmark::Mr => Figures::Stream(StreamFigures {
                window: f.window,
                mb_per_s: f.mb_per_s,
                msgs_per_s: f.msgs_per_s,
                limit_mb_per_s: f.limit_mb_per_s,
                efficiency: f.efficiency,
            }),
            Benchmark::Bufmgmt => cost(CostVariant::Bufmgmt { buffers: f.buffers }),
            Benchmark::Blocking => cost(CostVariant::Blocking {
                block_spins: f.block_spins,
            }),
            Benchmark::Noncontig => cost(CostVariant::Noncontig {
                segments: f.segments,
                packed: f.packed,
            }),
            Benchmark::Conns => cost(CostVariant::Conns {
                connections: f.connections,
            }),
            Benchmark::Cq => cost(CostVariant::Cq {
                connections: f.connections,
            }),
            Benchmark::Loggp => Figures::LogGp(LogGpFigures {
                p50_us: f.p50_us,
                o_s_us: f.o_s_us,
                o_r_us: f.o_r_us,
                gap_us: f.gap_us,
                o_s_fixed_us: f.o_s_fixed_us,
                O_s_us_per_byte: f.O_s_us_per_byte,
                o_r_fixed_us: f.o_r_fixed_us,
                O_r_us_per_byte: f.O_r_us_per_byte,
                g_us: f.g_us,
                gap_per_byte_us: f.gap_per_byte_us,
                L_us: f.L_us,
                overlap_us: f.overlap_us,
                exchange_us: f.exchange_us,
                send_wait_us: f.send_wait_us,
                duplex_us: f.duplex_us,
                model_us: f.model_us,
                piece_from_bytes: f.piece_from_bytes,
                piece_to_bytes: f.piece_to_bytes,
            }),
            Benchmark::Pipeline => Figures::Pipeline(PipelineFigures {
                pct: f.percentiles(),
                mb_per_s: f.mb_per_s,
                limit_mb_per_s: f.limit_mb_per_s,
                efficiency: f.efficiency,
                fragment_bytes: f.fragment_bytes,
                fragment_rule: f.fragment_rule.clone(),
                model_us: f.model_us,
                eq7_us: f.eq7_us,
            }),
        };
        Ok(Row {
            benchmark: b,
            transport: f.transport,
            mode: f.mode,
            size_bytes: f.size_bytes,
            iterations: f.iterations,
            warmup: f.warmup,
            pairs: f.pairs,
            validated: f.validated,
            notes: f.notes,
            figures,
        })
    }
}

impl From<Row> for FlatRow {
    fn from(r: Row) -> FlatRow {
        let mut f = FlatRow::identity(&r);
        match r.figures {
            Figures::Latency(x) => {
                f.set_percentiles(x.pct);
                (f.limit_us, f.efficiency) = (x.limit_us, x.efficiency);
            }
            Figures::Stream(x) => {
                (f.window, f.mb_per_s, f.msgs_per_s) = (x.window, x.mb_per_s, x.msgs_per_s);
                (f.limit_mb_per_s, f.efficiency) = (x.limit_mb_per_s, x.efficiency);
            }
            Figures::Cost(x) => {
                f.set_percentiles(x.pct);
                f.baseline_p50_us = x.baseline_p50_us;
                (f.cost_us, f.cost_noise_us) = (x.cost_us, x.cost_noise_us);
                match x.variant {
                    CostVariant::Bufmgmt { buffers } => f.buffers = buffers,
                    CostVariant::Blocking { block_spins } => f.block_spins = block_spins,
                    CostVariant::Noncontig { segments, packed } => {
                        (f.segments, f.packed) = (segments, packed)
                    }
                    CostVariant::Conns { connections } | CostVariant::Cq { connections } => {
                        f.connections = connections
                    }
                }
            }
            Figures::LogGp(x) => {
                f.p50_us = x.p50_us;
                (f.o_s_us, f.o_r_us, f.gap_us) = (x.o_s_us, x.o_r_us, x.gap_us);
                (f.o_s_fixed_us, f.O_s_us_per_byte) = (x.o_s_fixed_us, x.O_s_us_per_byte);
                (f.o_r_fixed_us, f.O_r_us_per_byte) = (x.o_r_fixed_us, x.O_r_us_per_byte);
                (f.g_us, f.gap_per_byte_us, f.L_us) = (x.g_us, x.gap_per_byte_us, x.L_us);
                (f.overlap_us, f.exchange_us) = (x.overlap_us, x.exchange_us);
                (f.send_wait_us, f.duplex_us) = (x.send_wait_us, x.duplex_us);
                f.model_us = x.model_us;
                (f.piece_from_bytes, f.piece_to_bytes) = (x.piece_from_bytes, x.piece_to_bytes);
            }
            Figures::Pipeline(x) => {
                f.set_percentiles(x.pct);
                (f.mb_per_s, f.limit_mb_per_s) = (x.mb_per_s, x.limit_mb_per_s);
                f.efficiency = x.efficiency;
                (f.fragment_bytes, f.fragment_rule) = (x.fragment_bytes, x.fragment_rule);
                (f.model_us, f.eq7_us) = (x.model_us, x.eq7_us);
            }
        }
        f.notes = r.notes;
        f
    }
}

impl FlatRow {
    /// `r`'s identity, every figure absent.
    fn identity(r: &Row) -> FlatRow {
        FlatRow {
            iterations: r.iterations,
            warmup: r.warmup,
            pairs: r.pairs,
            validated: r.validated,
            ..FlatRow::new(r.benchmark, r.transport, r.mode, r.size_bytes)
        }
    }

    /// A flat row with identity fields set and every figure absent, to be filled and read as
    /// a [`Row`] ([`Row::try_from`], which refuses a figure of another benchmark): how a test
    /// or a converter states a row figure by figure.
    pub fn new(
        benchmark: Benchmark,
        transport: TransportKind,
        mode: Mode,
        size_bytes: u64,
    ) -> FlatRow {
        FlatRow {
            benchmark,
            transport,
            mode,
            size_bytes,
            iterations: 0,
            warmup: 0,
            window: None,
            p50_us: None,
            p90_us: None,
            p99_us: None,
            min_us: None,
            max_us: None,
            mean_us: None,
            p50_noise_us: None,
            mb_per_s: None,
            msgs_per_s: None,
            efficiency: None,
            limit_us: None,
            limit_mb_per_s: None,
            baseline_p50_us: None,
            cost_us: None,
            cost_noise_us: None,
            block_spins: None,
            connections: None,
            segments: None,
            packed: None,
            buffers: None,
            o_s_us: None,
            o_r_us: None,
            gap_us: None,
            o_s_fixed_us: None,
            O_s_us_per_byte: None,
            o_r_fixed_us: None,
            O_r_us_per_byte: None,
            g_us: None,
            gap_per_byte_us: None,
            L_us: None,
            overlap_us: None,
            exchange_us: None,
            send_wait_us: None,
            duplex_us: None,
            model_us: None,
            piece_from_bytes: None,
            piece_to_bytes: None,
            fragment_bytes: None,
            fragment_rule: None,
            eq7_us: None,
            pairs: None,
            validated: false,
            notes: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Report;

    /// Result files kept in the repository (written by earlier builds).
    const FILES: &[(&str, &str)] = &[
        (
            "bench-latency-shm-uds.json",
            include_str!("../../../fuzz/corpus/result_json/bench-latency-shm-uds.json"),
        ),
        (
            "bench-loggp-shm.json",
            include_str!("../../../fuzz/corpus/result_json/bench-loggp-shm.json"),
        ),
    ];

    #[test]
    fn a_figure_the_benchmark_cannot_have_is_refused_by_name() {
        let lat = r#"{"benchmark":"latency","transport":"shm","mode":"poll","size_bytes":8,
            "iterations":10,"warmup":1,"p50_us":0.5,"mb_per_s":16.0,"validated":false}"#;
        let e = serde_json::from_str::<Row>(lat).unwrap_err();
        assert_eq!(e.to_string(), "a latency row cannot have `mb_per_s`");
        let bw = r#"{"benchmark":"bw","transport":"tcp","mode":"poll","size_bytes":8,
            "iterations":10,"warmup":1,"mb_per_s":16.0,"G_us_per_byte":0.1,"validated":false}"#;
        let e = serde_json::from_str::<Row>(bw).unwrap_err();
        assert_eq!(e.to_string(), "a bw row cannot have `G_us_per_byte`");
        // A key of another extended benchmark: conns has endpoints, not segments.
        let conns = r#"{"benchmark":"conns","transport":"shm","mode":"poll","size_bytes":16,
            "iterations":10,"warmup":1,"p50_us":1.0,"segments":4,"validated":false}"#;
        let e = serde_json::from_str::<Row>(conns).unwrap_err();
        assert_eq!(e.to_string(), "a conns row cannot have `segments`");
        // A whole file with one such row is refused.
        let mut v: serde_json::Value = serde_json::from_str(FILES[1].1).unwrap();
        v["results"][0]["window"] = 64.into();
        let e = serde_json::from_value::<Report>(v).unwrap_err();
        assert_eq!(e.to_string(), "a loggp row cannot have `window`");
    }

    #[test]
    fn a_variant_of_another_benchmark_is_refused() {
        let mut r = Row::new(Benchmark::Blocking, TransportKind::Tcp, Mode::Block, 64);
        let e = r
            .set_variant(CostVariant::Conns {
                connections: Some(4),
            })
            .unwrap_err();
        assert_eq!(e.to_string(), "a blocking row cannot take a conns variant");
        r.set_variant(CostVariant::Blocking {
            block_spins: Some(100),
        })
        .unwrap();
        assert_eq!(r.variant().and_then(|v| v.block_spins()), Some(100));
        let mut lat = Row::new(Benchmark::Latency, TransportKind::Tcp, Mode::Poll, 64);
        let e = lat
            .set_variant(CostVariant::Cq { connections: None })
            .unwrap_err();
        assert_eq!(e.to_string(), "a latency row cannot take a cq variant");
    }

    #[test]
    fn every_kept_result_file_reads_and_writes_back_byte_identical() {
        for (name, text) in FILES {
            let report: Report = serde_json::from_str(text).unwrap();
            assert!(!report.results.is_empty(), "{name}");
            let flat: serde_json::Value = serde_json::from_str(text).unwrap();
            for (i, row) in report.results.iter().enumerate() {
                let wire = &flat["results"][i];
                // wire → Row → wire, as text, in the file's field order.
                let as_flat: FlatRow = serde_json::from_value(wire.clone()).unwrap();
                assert_eq!(
                    serde_json::to_string(row).unwrap(),
                    serde_json::to_string(&as_flat).unwrap(),
                    "{name} row {i}"
                );
                assert_eq!(&serde_json::to_value(row).unwrap(), wire, "{name} row {i}");
            }
            let again = serde_json::to_string_pretty(&report).unwrap();
            assert_eq!(again.trim_end(), text.trim_end(), "{name}");
        }
    }

    #[test]
    fn each_benchmark_writes_its_kind_and_reads_back() {
        for &b in Benchmark::ALL {
            let mut r = Row::new(b, TransportKind::Shm, Mode::Poll, 64);
            if let Some(p) = r.percentiles_mut() {
                p.p50_us = Some(1.5);
            }
            if let Some(s) = r.stream_mut() {
                (s.window, s.mb_per_s) = (Some(64), Some(2.5));
            }
            if let Some(l) = r.loggp_mut() {
                (l.p50_us, l.L_us) = (Some(1.5), Some(0.25));
            }
            if let Some(c) = r.cost_mut() {
                c.cost_us = Some(0.5);
            }
            let text = serde_json::to_string(&r).unwrap();
            let back: Row = serde_json::from_str(&text).unwrap();
            assert_eq!(back, r, "{b}");
            assert_eq!(back.benchmark(), b);
            let want = match b {
                Benchmark::Bw | Benchmark::Bibw | Benchmark::Mr => (None, Some(2.5)),
                _ => (Some(1.5), None),
            };
            assert_eq!((back.p50_us(), back.mb_per_s()), want, "{b}");
        }
    }
}
