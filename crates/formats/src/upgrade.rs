//! The steps that bring an older file to today's shape, or refuse it by name.

use crate::{check, Kind, VersionError};
use serde_json::Value;

/// Checks `doc`'s version (in [`Kind::version_field`]) by [`check`] and brings an older document
/// to the current shape in place, so that the current type reads it. Returns the version found
/// (the document keeps it: a reader can tell an upgraded file).
///
/// Refuses, by [`VersionError::Meaning`], a version whose content meant something else that the
/// file does not let us recompute: a result file of version 1 with loggp rows (their `L_us` was
/// Kutluğ's latency − o_s − o_r at that size, not LogGOPS's L).
pub fn upgrade(kind: Kind, doc: &mut Value) -> Result<u32, VersionError> {
    let found = check(kind, doc.get(kind.version_field()).and_then(Value::as_u64))?;
    match (kind, found) {
        (Kind::Result, 1) => result_v1(doc)?,
        // Version 2 only added the optional `pipeline` section: a version 1 profile is a
        // version 2 profile without one.
        (Kind::Profile, 1) => {}
        (Kind::Study, 1) => study_v1(doc),
        _ => {}
    }
    Ok(found)
}

/// Result 1 → 2: rows other than loggp's mean the same; a loggp row's `L_us` does not.
fn result_v1(doc: &Value) -> Result<(), VersionError> {
    let rows = doc.get("results").and_then(Value::as_array);
    let loggp = rows.is_some_and(|rows| {
        rows.iter()
            .any(|r| r.get("benchmark").and_then(Value::as_str) == Some("loggp"))
    });
    if loggp {
        return Err(VersionError::Meaning {
            kind: Kind::Result,
            found: 1,
            why: "its loggp rows' L_us is Kutluğ's latency − o_s − o_r at each size, not \
                  LogGOPS's L (version 2); run `commperf bench loggp` again",
        });
    }
    Ok(())
}

/// Study 1 → 2: version 1 had no loop; version 2 writes `"loop": null` without `--loop`.
fn study_v1(doc: &mut Value) {
    if let Some(o) = doc.as_object_mut() {
        o.entry("loop").or_insert(Value::Null);
    }
}
