//! The verdict on real programs' output: Debian's hpcc (`hpccoutf.txt` of `mpirun -np 2 hpcc`,
//! N = 120, P × Q = 1 × 2) and lammps (the study's Lennard-Jones melt, 4 cells a side, 40
//! steps, on 2 ranks), a NAS CG run's report in NPB 3.4's format, the kit's report line and the
//! launchers' words for a rank killed by a signal.

use commperf_study::verdict::{
    At, Builtin, Failed, Failure, Judge, Output, Pattern, PatternError, Rules, Status, Text,
    TimePattern,
};

const NAS: &str = include_str!("data/nas-cg-mpi.out");
const HPCC: &str = include_str!("data/hpccoutf.txt");
const LAMMPS: &str = include_str!("data/lammps-lj.out");
const OK: Option<Status> = Some(Status::Exited(0));

/// The 1-based number of the only line of `text` containing `needle`.
fn line_of(text: &str, needle: &str) -> usize {
    let v: Vec<usize> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| l.contains(needle))
        .map(|(i, _)| i + 1)
        .collect();
    assert_eq!(v.len(), 1, "{needle:?} on lines {v:?}");
    v[0]
}

fn failures(r: Result<commperf_study::verdict::Passed, Failed>) -> Vec<Failure> {
    r.expect_err("the run must fail").failures
}

#[test]
fn a_nas_program_is_recognised_and_timed_by_its_own_report() {
    let out = Output::new(NAS, "", OK);
    assert_eq!(Builtin::recognise(&out), Some(Builtin::Nas));
    let p = Judge::recognise()
        .judge(&out)
        .expect("a verified run passes");
    assert_eq!(p.builtin, Some(Builtin::Nas));
    let t = p.time.expect("NAS prints its time");
    assert_eq!(t.seconds, 0.70);
    assert_eq!(
        t.at,
        At {
            source: "stdout".into(),
            line: line_of(NAS, "Time in seconds"),
            text: " Time in seconds =                     0.70".into()
        }
    );
    assert!(t.pattern.ends_with("(NAS)"), "{}", t.pattern);
}

#[test]
fn nas_unsuccessful_verification_fails_although_the_exit_is_zero() {
    let bad = NAS
        .replace(" VERIFICATION SUCCESSFUL", " VERIFICATION FAILED")
        .replace(
            " Verification    =               SUCCESSFUL",
            " Verification    =             UNSUCCESSFUL",
        );
    let f = failures(Judge::recognise().judge(&Output::new(&bad, "", OK)));
    assert_eq!(f.len(), 1, "{f:?}");
    let Failure::FailurePattern { pattern, at } = &f[0] else {
        panic!("{f:?}")
    };
    assert_eq!(
        pattern, r"`^\s*Verification\s*=\s*UNSUCCESSFUL` (NAS)",
        "the pattern is named with its origin"
    );
    assert_eq!(at.line, line_of(&bad, "UNSUCCESSFUL"));
    assert_eq!(
        f[0].to_string(),
        format!(
            r#"failure pattern `^\s*Verification\s*=\s*UNSUCCESSFUL` (NAS) matched stdout line {}: " Verification    =             UNSUCCESSFUL""#,
            at.line
        )
    );
}

#[test]
fn a_nas_run_cut_short_names_the_missing_success_and_time() {
    let cut = &NAS[..NAS.find(" CG Benchmark Completed.").unwrap()];
    let f = failures(Judge::recognise().judge(&Output::new(cut, "", OK)));
    assert_eq!(
        f,
        [
            Failure::MissingSuccess {
                pattern: r"`^\s*Verification\s*=\s*SUCCESSFUL\s*$` (NAS)".into()
            },
            Failure::MissingTime {
                pattern: r"`^\s*Time in seconds\s*=\s*(\S+)` (NAS)".into()
            },
        ]
    );
}

fn hpcc_output(text: &str) -> Output<'_> {
    let mut o = Output::new("", "", OK);
    o.files.push(Text {
        name: "hpccoutf.txt",
        text,
    });
    o
}

#[test]
fn hpcc_is_timed_by_hpls_solve_in_its_summary() {
    let p = Judge::builtin(Builtin::Hpcc)
        .judge(&hpcc_output(HPCC))
        .expect("a passed hpcc run");
    let t = p.time.unwrap();
    assert_eq!(t.seconds, 0.000962734);
    assert_eq!(t.at.source, "hpccoutf.txt");
    assert_eq!(t.at.line, line_of(HPCC, "HPL_time="));
    // hpcc writes nothing telling to its standard output: not recognised there.
    assert_eq!(Builtin::recognise(&Output::new("", "", OK)), None);
}

#[test]
fn hpcc_failed_checks_are_each_named() {
    let bad = HPCC
        .replace("Success=1", "Success=0")
        .replace("...... PASSED", "...... FAILED")
        .replacen(" PASSED ", " FAILED ", 1)
        .replacen("locations (passed)", "locations (failed)", 1);
    let f = failures(Judge::builtin(Builtin::Hpcc).judge(&hpcc_output(&bad)));
    let lines: Vec<(usize, &str)> = f
        .iter()
        .map(|x| match x {
            Failure::FailurePattern { at, .. } => (at.line, at.text.as_str()),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(lines.len(), 4, "{f:?}");
    assert_eq!(lines[0], (line_of(&bad, "Success=0"), "Success=0"));
    assert!(lines[1].1.ends_with("...... FAILED"), "{lines:?}");
    assert_eq!(
        lines[2].1,
        "WALL    60    60  40  40   1   2     0.00 FAILED    0.641  0.00"
    );
    assert_eq!(lines[3].1, "Found 0 errors in 8192 locations (failed).");
    // Without its summary (hpcc stopped early): no Success=1 and no HPL_time.
    let cut = &HPCC[..HPCC.find("Begin of Summary section.").unwrap()];
    let f = failures(Judge::builtin(Builtin::Hpcc).judge(&hpcc_output(cut)));
    assert!(
        matches!(&f[..], [Failure::MissingSuccess { pattern }, Failure::MissingTime { .. }] if pattern == "`^Success=1$` (hpcc)"),
        "{f:?}"
    );
}

#[test]
fn lammps_is_timed_by_its_loop_and_fails_on_error_lines() {
    let out = Output::new(LAMMPS, "", OK);
    assert_eq!(Builtin::recognise(&out), Some(Builtin::Lammps));
    let p = Judge::builtin(Builtin::Lammps).judge(&out).unwrap();
    let t = p.time.unwrap();
    assert_eq!(t.seconds, 0.00827154);
    assert_eq!(t.at.line, line_of(LAMMPS, "Loop time of"));
    // A bad input command: LAMMPS says ERROR and mpirun exits 1.
    let bad = LAMMPS.replace(
        "Total wall time: 0:00:00",
        "ERROR: Unknown command: bogus_command 1 (src/input.cpp:274)",
    );
    let f = failures(Judge::recognise().judge(&Output::new(
        &bad,
        "Primary job  terminated normally, but 1 process returned\na non-zero exit code.\n",
        Some(Status::Exited(1)),
    )));
    assert_eq!(f.len(), 2, "{f:?}");
    assert!(
        matches!(&f[0], Failure::FailurePattern { at, .. } if at.text.starts_with("ERROR: Unknown command"))
    );
    // The ERROR line says why: the launcher's last words are not repeated.
    assert_eq!(f[1].to_string(), "exit status 1");
}

#[test]
fn the_kit_report_line() {
    let ok = "cg: ranks 4 m 1 hw 1 iters 2 dots 2 message 8 B time 0.012500 s checksum 0 expected 0 errors 0 OK\n";
    let p = Judge::builtin(Builtin::Kit)
        .judge(&Output::new(ok, "", OK))
        .unwrap();
    assert_eq!(p.time.unwrap().seconds, 0.0125);
    // A kit binary run as a command is known by its report line.
    assert_eq!(
        Builtin::recognise(&Output::new(ok, "", OK)),
        Some(Builtin::Kit)
    );
    let wrong = ok.replace(" OK", " WRONG");
    let f = failures(Judge::builtin(Builtin::Kit).judge(&Output::new(
        &wrong,
        "",
        Some(Status::Exited(1)),
    )));
    assert!(
        matches!(&f[0], Failure::FailurePattern { pattern, at } if pattern == "` WRONG$` (kit)" && at.line == 1)
    );
    assert!(matches!(&f[1], Failure::ExitStatus { code: 1, .. }));
}

#[test]
fn signals_are_named_from_the_status_and_from_the_launchers() {
    let f = failures(Judge::none().judge(&Output::new("", "", Some(Status::Signaled(9)))));
    assert_eq!(f, [Failure::Signal { signal: 9 }]);
    assert_eq!(f[0].to_string(), "killed by signal 9 (SIGKILL)");
    let ompi = "-----\nmpirun.openmpi noticed that process rank 1 with PID 0 on node vm exited on signal 11 (Segmentation fault).\n-----\n";
    let f = failures(Judge::none().judge(&Output::new("", ompi, Some(Status::Exited(139)))));
    assert!(
        matches!(&f[0], Failure::RankSignal { rank: Some(1), signal: 11, at } if at.source == "stderr" && at.line == 2),
        "{f:?}"
    );
    assert!(
        f[0].to_string()
            .starts_with("rank 1 died by signal 11 (SIGSEGV), says the launcher on stderr line 2"),
        "{}",
        f[0]
    );
    assert!(matches!(&f[1], Failure::ExitStatus { code: 139, .. }));
    let hydra = "=   EXIT CODE: 11\nYOUR APPLICATION TERMINATED WITH THE EXIT STRING: Segmentation fault (signal 11)\n";
    let f = failures(Judge::none().judge(&Output::new("", hydra, Some(Status::Exited(11)))));
    assert!(
        matches!(
            &f[0],
            Failure::RankSignal {
                rank: None,
                signal: 11,
                ..
            }
        ),
        "{f:?}"
    );
}

#[test]
fn without_patterns_only_the_exit_counts_and_there_is_no_program_time() {
    let p = Judge::none()
        .judge(&Output::new("Verification = whatever\n", "", OK))
        .unwrap();
    assert_eq!(p.time, None);
    assert_eq!(p.builtin, None);
    let f = failures(Judge::none().judge(&Output::new(
        "",
        "Primary job  terminated normally, but 1 process returned\na non-zero exit code.\n\n",
        Some(Status::Exited(3)),
    )));
    assert_eq!(
        f[0].to_string(),
        "exit status 3 (stderr ends: Primary job  terminated normally, but 1 process returned | \
         a non-zero exit code.)"
    );
    // Stopped by the caller after its results (None): not a failure by itself.
    assert!(Judge::none().judge(&Output::new("", "", None)).is_ok());
}

#[test]
fn user_patterns_replace_the_time_and_success_and_add_failures() {
    let user = Rules {
        time: Some(TimePattern::new(r"^\s*Mop/s total\s*=\s*(\S+)", "--time-pattern").unwrap()),
        success: vec![],
        failure: vec![Pattern::new(r"Compile date", "--failure-pattern").unwrap()],
    };
    let f = failures(
        Judge::recognise()
            .with_user(user.clone())
            .judge(&Output::new(NAS, "", OK)),
    );
    assert_eq!(f.len(), 1, "{f:?}");
    assert!(f[0]
        .to_string()
        .starts_with("failure pattern `Compile date` (--failure-pattern) matched stdout line "));
    let user = Rules {
        failure: vec![],
        ..user
    };
    let p = Judge::recognise()
        .with_user(user)
        .judge(&Output::new(NAS, "", OK))
        .unwrap();
    assert_eq!(p.time.unwrap().seconds, 95.26);
    // Named unit groups are added up: `time`'s `real 1m2.500s`.
    let tp = TimePattern::new(r"^real\s+(?P<min>\d+)m(?P<s>[\d.]+)s$", "--time-pattern").unwrap();
    let j = Judge::none().with_user(Rules {
        time: Some(tp),
        ..Rules::default()
    });
    let p = j
        .judge(&Output::new("", "real\t1m2.500s\nuser\t0m0.1s\n", OK))
        .unwrap();
    assert_eq!(p.time.unwrap().seconds, 62.5);
    let tp = TimePattern::new(r"took (?P<ms>\S+) ms", "--time-pattern").unwrap();
    let j = Judge::none().with_user(Rules {
        time: Some(tp),
        ..Rules::default()
    });
    let p = j.judge(&Output::new("took 250 ms\n", "", OK)).unwrap();
    assert_eq!(p.time.unwrap().seconds, 0.25);
    let f = failures(j.judge(&Output::new("took NaN ms\n", "", OK)));
    assert!(
        matches!(&f[..], [Failure::BadTime { value, .. }] if value == "NaN"),
        "{f:?}"
    );
}

#[test]
fn unusable_patterns_are_refused() {
    assert!(matches!(
        TimePattern::new("(", "x"),
        Err(PatternError::Regex(_))
    ));
    assert!(matches!(
        Pattern::new("a[", "x"),
        Err(PatternError::Regex(_))
    ));
    for (re, groups) in [("no group", 0), (r"(\d+) and (\d+)", 2)] {
        let e = TimePattern::new(re, "--time-pattern").unwrap_err();
        assert!(
            matches!(e, PatternError::TimeGroups { groups: g } if g == groups),
            "{re}: {e}"
        );
    }
    // One named group that is not a unit is the seconds group.
    assert!(TimePattern::new(r"t=(?P<t>\S+)", "x").is_ok());
}

#[test]
fn failures_serialize_with_their_kind() {
    let f = Failure::FailurePattern {
        pattern: "` WRONG$` (kit)".into(),
        at: At {
            source: "stdout".into(),
            line: 3,
            text: "ep: … WRONG".into(),
        },
    };
    let j = serde_json::to_value(&f).unwrap();
    assert_eq!(j["kind"], "failure_pattern");
    assert_eq!(j["at"]["line"], 3);
    let back: Failure = serde_json::from_value(j).unwrap();
    assert_eq!(back, f);
}
