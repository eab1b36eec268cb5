//! `commperf schema KIND`: the JSON Schema of a kept file (commperf-formats' kinds), generated
//! from the file's type by `schemars`. This crate sees every type, so the generator lives here;
//! the committed schemas in `docs/src/reference/schemas/` are checked against it by a test.

use anyhow::Result;
use commperf_formats::Kind;
use schemars::{schema_for, Schema};

#[derive(Debug, clap::Args)]
pub struct SchemaArgs {
    /// The kind of file: result, profile, pipeline, comparison, monitor-run, signature,
    /// prediction, sweep, emulated-run, study, testbed
    #[arg(value_parser = kind)]
    pub kind: Kind,
}

fn kind(s: &str) -> Result<Kind, String> {
    Kind::from_name(s).ok_or_else(|| {
        let names: Vec<&str> = Kind::ALL.iter().map(|k| k.name()).collect();
        format!("not a kind of file; one of {}", names.join(", "))
    })
}

/// The schema of `kind`'s type, with the kind's name and the version it describes, as the
/// committed `<kind>.schema.json` holds it (pretty JSON, final newline).
pub fn schema(kind: Kind) -> String {
    let mut s: Schema = match kind {
        Kind::Result => schema_for!(commperf_core::Report),
        Kind::Profile => schema_for!(commperf_core::Profile),
        Kind::Pipeline => schema_for!(commperf_core::PipelineProfile),
        Kind::Comparison => schema_for!(commperf_report::Comparison),
        Kind::MonitorRun => schema_for!(commperf_monitor::MonitorRun),
        Kind::Signature => schema_for!(commperf_monitor::Signature),
        Kind::Prediction => schema_for!(commperf_predict::output::Prediction),
        Kind::Sweep => schema_for!(commperf_emulate::sweep::SweepResult),
        Kind::EmulatedRun => schema_for!(commperf_emulate::mpi::RunOutcome),
        Kind::Study => schema_for!(commperf_study::schema::Study),
        Kind::Testbed => schema_for!(commperf_testbed::run::TestbedReport),
    };
    s.insert("x-commperf-kind".into(), kind.name().into());
    s.insert(
        format!("x-commperf-{}", kind.version_field().replace('_', "-")),
        kind.current().into(),
    );
    let mut text = serde_json::to_string_pretty(&s).expect("a schema serializes");
    text.push('\n');
    text
}

/// Runs `commperf schema KIND`.
pub fn run(a: &SchemaArgs) -> Result<()> {
    print!("{}", schema(a.kind));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn dir() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/src/reference/schemas")
    }

    /// A type whose file form changed without its committed schema fails here;
    /// `UPDATE_SCHEMAS=1` rewrites the files (then review the diff, and bump the kind's version
    /// in commperf-formats if a field changed meaning or disappeared).
    #[test]
    fn committed_schemas_match_the_types() {
        let update = std::env::var_os("UPDATE_SCHEMAS").is_some_and(|v| v == "1");
        let mut stale = Vec::new();
        for k in Kind::ALL {
            let path = dir().join(format!("{}.schema.json", k.name()));
            let now = schema(k);
            if update {
                std::fs::write(&path, &now).unwrap();
            } else if std::fs::read_to_string(&path).ok().as_deref() != Some(now.as_str()) {
                stale.push(path.display().to_string());
            }
        }
        assert!(
            stale.is_empty(),
            "schemas differ from the types (UPDATE_SCHEMAS=1 rewrites them): {stale:?}"
        );
        // Exactly one schema file per kind, no leftovers.
        let mut files: Vec<String> = std::fs::read_dir(dir())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        files.sort();
        let mut want: Vec<String> = Kind::ALL
            .iter()
            .map(|k| format!("{}.schema.json", k.name()))
            .collect();
        want.sort();
        assert_eq!(files, want);
    }

    #[test]
    fn a_schema_names_its_kind_version_and_fields() {
        let v: serde_json::Value = serde_json::from_str(&schema(Kind::Study)).unwrap();
        assert_eq!(v["x-commperf-kind"], "study");
        assert_eq!(v["x-commperf-schema-version"], 2);
        assert_eq!(v["title"], "Study");
        assert!(v["required"]
            .as_array()
            .unwrap()
            .contains(&"schema_version".into()));
        let p: serde_json::Value = serde_json::from_str(&schema(Kind::Pipeline)).unwrap();
        assert_eq!(p["x-commperf-version"], 1);
        // Doc comments are descriptions; units stay in the names.
        let r: serde_json::Value = serde_json::from_str(&schema(Kind::Result)).unwrap();
        assert_eq!(
            r["properties"]["started_unix_s"]["description"],
            "Seconds since the Unix epoch when the run started."
        );
        assert_eq!(
            kind("results").unwrap_err().split(';').next(),
            Some("not a kind of file")
        );
    }
}
