//! Collectives expanded into point-to-point operations by named, selectable algorithms.
//!
//! TODO(helper): algorithms.

/// Algorithm choices, one per collective family.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Algorithms {}
