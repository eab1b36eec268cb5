//! Shared vocabulary of commperf: units, the names of benchmarks, transports and modes, and the
//! one result schema every exporter, later verb and saved file agrees on.
//!
//! It is a leaf crate on purpose: `predict` and `report` must be usable without pulling in any
//! transport, so everything a result file needs to be read back lives here and nothing else does.

pub mod disturbance;
pub mod file;
pub mod kinds;
pub mod profile;
pub mod rate;
pub mod result;
pub mod row;
pub mod text;
pub mod units;

pub use disturbance::{Disturbance, Finding, FindingKind, ProcessId, Watch};
pub use kinds::{Benchmark, BufferUse, Mode, TransportKind, UnknownName};
pub use profile::{
    LogGpPoint, PipelineProfile, PipelineStage, PipelinedPoint, Profile, StagePoint, TcomPiece,
    TcomPoint, PIPELINE_SCHEMA_VERSION, PROFILE_SCHEMA_OLDEST, PROFILE_SCHEMA_VERSION,
};
pub use rate::{parse_rate, Rate, RateError};
pub use result::{Limits, Machine, Options, Placement, Report, TimerInfo, SCHEMA_VERSION};
pub use row::{
    CostFigures, CostVariant, Figures, FlatRow, LatencyFigures, LogGpFigures, Percentiles,
    PipelineFigures, Row, RowError, StreamFigures,
};
pub use text::{read_text, TextError};
pub use units::{
    format_size, parse_duration_ns, parse_size, parse_sizes, time_unit_ns, DurationError, SizeError,
};
