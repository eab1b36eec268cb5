use crate::{check, upgrade, version, Kind, VersionError};
use serde_json::json;

#[test]
fn check_accepts_exactly_the_claimed_range() {
    for k in Kind::ALL {
        for v in k.oldest()..=k.current() {
            assert_eq!(check(k, Some(u64::from(v))), Ok(v), "{k} {v}");
        }
        let out = |found| VersionError::Unsupported {
            kind: k,
            found,
            oldest: k.oldest(),
            current: k.current(),
        };
        assert_eq!(check(k, Some(0)), Err(out(0)), "{k}");
        let next = u64::from(k.current()) + 1;
        assert_eq!(check(k, Some(next)), Err(out(next)), "{k}");
        assert_eq!(check(k, Some(u64::MAX)), Err(out(u64::MAX)), "{k}");
        assert_eq!(check(k, None), Err(VersionError::Missing { kind: k }));
    }
}

#[test]
fn the_ranges_are_the_ones_claimed() {
    let ranges: Vec<(&str, u32, u32)> = Kind::ALL
        .iter()
        .map(|k| (k.name(), k.oldest(), k.current()))
        .collect();
    assert_eq!(
        ranges,
        [
            ("result", 1, 2),
            ("profile", 1, 2),
            ("pipeline", 1, 1),
            ("comparison", 1, 1),
            ("monitor-run", 1, 1),
            ("signature", 1, 1),
            ("prediction", 1, 1),
            ("sweep", 3, 3),
            ("emulated-run", 4, 4),
            ("study", 1, 2),
            ("testbed", 1, 1),
        ]
    );
    assert_eq!(version::RESULT, 2);
    assert_eq!(version::EMULATED_RUN, 4);
}

#[test]
fn messages_name_the_kind_the_version_and_the_range() {
    let e = check(Kind::Profile, Some(3)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "profile file: schema_version 3, this commperf reads 1 to 2"
    );
    let e = check(Kind::MonitorRun, Some(2)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "monitor-run file: schema_version 2, this commperf reads version 1"
    );
    assert_eq!(
        check(Kind::Sweep, None).unwrap_err().to_string(),
        "sweep file: no schema_version"
    );
}

#[test]
fn every_history_runs_from_1_to_the_current_version() {
    for k in Kind::ALL {
        let versions: Vec<u32> = k.history().iter().map(|c| c.version).collect();
        let expected: Vec<u32> = (1..=k.current()).collect();
        assert_eq!(versions, expected, "{k}");
        assert!(k.history().iter().all(|c| !c.what.is_empty()));
    }
}

#[test]
fn names_are_unique_and_read_back() {
    for k in Kind::ALL {
        assert_eq!(Kind::from_name(k.name()), Some(k));
    }
    assert_eq!(Kind::from_name("results"), None);
    let mut names: Vec<&str> = Kind::ALL.iter().map(|k| k.name()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), 11);
}

#[test]
fn result_v1_without_loggp_rows_reads_unchanged() {
    let mut doc =
        json!({"schema_version": 1, "results": [{"benchmark": "pingpong", "p50_us": 3.5}]});
    let before = doc.clone();
    assert_eq!(upgrade(Kind::Result, &mut doc), Ok(1));
    assert_eq!(doc, before);
}

#[test]
fn result_v1_with_loggp_rows_is_refused_by_name() {
    let mut doc = json!({"schema_version": 1, "results": [
        {"benchmark": "pingpong"}, {"benchmark": "loggp", "L_us": -0.4}
    ]});
    let e = upgrade(Kind::Result, &mut doc).unwrap_err();
    assert!(matches!(
        e,
        VersionError::Meaning {
            kind: Kind::Result,
            found: 1,
            ..
        }
    ));
    assert!(e.to_string().starts_with(
        "result file: schema_version 1 is not read: its loggp rows' L_us is Kutluğ's"
    ));
    // Version 2 loggp rows are today's.
    doc["schema_version"] = json!(2);
    assert_eq!(upgrade(Kind::Result, &mut doc), Ok(2));
}

#[test]
fn study_v1_gains_a_null_loop_and_keeps_its_version() {
    let mut doc = json!({"schema": "commperf-app-study", "schema_version": 1, "cells": []});
    assert_eq!(upgrade(Kind::Study, &mut doc), Ok(1));
    assert_eq!(
        doc,
        json!({"schema": "commperf-app-study", "schema_version": 1, "cells": [], "loop": null})
    );
    // A loop already there is left alone.
    let mut doc = json!({"schema_version": 2, "loop": {"x": 1}});
    assert_eq!(upgrade(Kind::Study, &mut doc), Ok(2));
    assert_eq!(doc["loop"], json!({"x": 1}));
}

#[test]
fn profile_v1_reads_as_is_and_pipeline_uses_its_own_field() {
    let mut doc = json!({"schema_version": 1, "source": "hand", "tcom": []});
    let before = doc.clone();
    assert_eq!(upgrade(Kind::Profile, &mut doc), Ok(1));
    assert_eq!(doc, before);
    let mut pipe = json!({"version": 1, "schema_version": 7});
    assert_eq!(upgrade(Kind::Pipeline, &mut pipe), Ok(1));
    let mut pipe = json!({"schema_version": 1});
    assert_eq!(
        upgrade(Kind::Pipeline, &mut pipe),
        Err(VersionError::Missing {
            kind: Kind::Pipeline
        })
    );
}

#[test]
fn a_document_that_is_not_an_object_is_refused_not_panicked_on() {
    for mut doc in [json!(null), json!([1, 2]), json!("x"), json!(2)] {
        assert_eq!(
            upgrade(Kind::Study, &mut doc),
            Err(VersionError::Missing { kind: Kind::Study })
        );
    }
}
