//! The kept files' versions as the command line reads them (commperf-formats): an older study
//! that `app report` claims to read is read, and versions outside the range are refused by name.

use commperf_testkit::{commperf, ok, stderr, text, TempDir};

/// A version 1 study as `app --json` wrote it before the loop: no `loop`, `sensitivity` or
/// `disturbance`; one program on one stack.
const STUDY_V1: &str = r#"{
  "schema": "commperf-app-study", "schema_version": 1, "np": 4, "repeat": 1,
  "programs": ["halo"], "stacks": ["ompi-shm"], "wall_time_s": 2.5, "oversubscribed": null,
  "cells": [{"program": "halo", "stack": "ompi-shm", "error": null, "time_s": 0.0123,
             "time_source": "program", "times_s": [0.0123], "wall_s": 0.0123,
             "profile": null, "micro": null, "monitor_dirs": [], "notes": [],
             "run_states_ns": []}],
  "benches": [], "explanations": []
}"#;

#[test]
fn a_version_1_study_is_read_and_other_versions_are_refused() {
    let d = TempDir::new("formats-study");
    let file = d.arg("study.json");
    std::fs::write(&file, STUDY_V1).unwrap();
    let o = commperf(&["app", "report", &file]);
    let table = text(&ok(&o).stdout);
    assert!(
        table.contains("| 4 ranks | median of 1 run(s) |"),
        "{table}"
    );
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("halo") && l.contains("0.0123")),
        "{table}"
    );
    assert!(table.ends_with("study wall time 2.5 s\n"), "{table}");
    for found in ["0", "3", "\"2\""] {
        let v = STUDY_V1.replace(
            "\"schema_version\": 1",
            &format!("\"schema_version\": {found}"),
        );
        std::fs::write(&file, v).unwrap();
        let o = commperf(&["app", "report", &file]);
        assert_eq!(o.status.code(), Some(1), "{found}");
        assert!(
            stderr(&o).contains(&format!(
                "study.json: study schema_version {found}, this commperf reads 1 to 2"
            )),
            "{found}: {}",
            stderr(&o)
        );
    }
}
