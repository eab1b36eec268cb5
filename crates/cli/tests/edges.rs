//! Rough edges of the binary: a full or closed standard output,
//! where the two ends run and what the header says about it, messages that agree with what is
//! accepted, binary files given as text, GOAL for every generated pattern, and the progress
//! lines a long run writes to a log.

mod common;
use common::allowed_cpus;
use commperf_testkit::{commperf, exe, json_of, ok, text, Served, TempDir};
use serde_json::Value;
use std::os::fd::{FromRawFd, OwnedFd};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Small inputs for the commands that read files: a result file of a quick run over uds and
/// one over shm (the same suite), and a trace.
fn inputs(d: &TempDir) {
    for t in ["uds", "shm"] {
        ok(&commperf(&[
            "bench",
            "latency",
            "-t",
            t,
            "--sizes",
            "8,64",
            "--iters",
            "50",
            "-o",
            &d.arg(&format!("{t}.json")),
        ]));
    }
    ok(&commperf(&[
        "gen-trace",
        "ring",
        "--ranks",
        "4",
        "-o",
        &d.arg("ring.txt"),
    ]));
}

/// Every command that prints, with stdout on `/dev/full` (every write fails with ENOSPC).
fn printing_commands(d: &TempDir) -> Vec<Vec<String>> {
    let v = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    vec![
        v(&["limits"]),
        v(&["limits", "--format", "json"]),
        v(&["report", &d.arg("uds.json")]),
        v(&["report", &d.arg("uds.json"), "--format", "csv"]),
        // With -o the file is written and the table still goes to stdout.
        v(&["report", &d.arg("uds.json"), "-o", &d.arg("copy.json")]),
        v(&["compare", &d.arg("shm.json"), &d.arg("uds.json")]),
        v(&["predict", "--trace", &d.arg("ring.txt")]),
        v(&["predict", "--trace", &d.arg("ring.txt"), "--format", "json"]),
        v(&["gen-trace", "alltoall", "--ranks", "64"]),
        v(&[
            "gen-trace",
            "halo:4x4",
            "--ranks",
            "16",
            "--format-out",
            "goal",
        ]),
        v(&[
            "calibrate",
            "--tcom",
            "0-2020:10us+0.01us/B,2021-:25us+0.008us/B",
        ]),
        v(&[
            "calibrate",
            "-t",
            "uds",
            "--sizes",
            "8,1M",
            "--iters",
            "50",
            "--no-loggp",
        ]),
        v(&["bench", "latency", "--quick", "-t", "uds", "--sizes", "8"]),
        v(&[
            "bench", "latency", "bw", "-t", "shm", "--sizes", "64", "--iters", "50",
        ]),
        v(&["--help"]),
        v(&["bench", "--help"]),
    ]
}

#[test]
fn a_full_standard_output_is_one_line_and_exit_1_for_every_command() {
    let d = TempDir::new("full");
    inputs(&d);
    for args in printing_commands(&d) {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let o = Command::new(exe())
            .args(&args)
            .stdout(full)
            .output()
            .unwrap();
        let e = text(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {e}");
        assert!(!e.contains("panicked"), "{args:?}: {e}");
        // A run past two seconds (a loaded machine) may log its progress first.
        let lines: Vec<&str> = e.lines().filter(|l| progress_line(l).is_none()).collect();
        // A verb that measures or reads inputs checks its standard output before it starts;
        // the others (help, listings) meet the full device at their write.
        assert!(
            lines == ["commperf: standard output is /dev/full: every write to it fails"]
                || lines
                    == ["commperf: writing standard output: No space left on device (os error 28)"],
            "{args:?}: {lines:?}"
        );
    }
    // `report -o FILE` prints its table too: refused before it wrote anything, so no file of
    // a half-done command is left.
    assert!(!std::path::Path::new(&d.arg("copy.json")).exists());
}

/// A pipe whose read end is already closed: every write to it fails with EPIPE.
fn closed_pipe() -> Stdio {
    let mut fds = [0; 2];
    // SAFETY: pipe(2) fills two descriptors we then own.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: both descriptors are fresh and owned by nothing else.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    drop(read);
    Stdio::from(write)
}

#[test]
fn a_closed_pipe_ends_the_output_quietly_and_the_files_are_still_written() {
    let d = TempDir::new("pipe");
    inputs(&d);
    for args in printing_commands(&d) {
        let o = Command::new(exe())
            .args(&args)
            .stdout(closed_pipe())
            .output()
            .unwrap();
        let e = text(&o.stderr);
        assert!(!e.contains("panicked"), "{args:?}: {e}");
        assert!(!e.contains("Broken pipe"), "{args:?}: {e}");
        assert!(!e.contains("standard output"), "{args:?}: {e}");
        // The reader took what it wanted (`| head -1`): no failure.
        assert_eq!(o.status.code(), Some(0), "{args:?}: {e}");
    }
    // Files after the table are written all the same: predict's timeline comes after it.
    let o = Command::new(exe())
        .args(["predict", "--trace", &d.arg("ring.txt"), "--timeline"])
        .arg(d.arg("tl.json"))
        .stdout(closed_pipe())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let tl: Value = serde_json::from_str(&std::fs::read_to_string(d.arg("tl.json")).unwrap())
        .expect("the timeline is whole");
    assert!(tl.is_object() || tl.is_array());
    // A generator stops at the closed pipe instead of writing a huge trace into nothing.
    let start = Instant::now();
    let o = Command::new(exe())
        .args(["gen-trace", "alltoall", "--ranks", "4000"])
        .stdout(closed_pipe())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(
        start.elapsed() < Duration::from_secs(20),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn both_ends_on_one_cpu_are_warned_about_and_recorded() {
    let c = allowed_cpus()[0].to_string();
    let cpus = format!("{c},{c}");
    let o = commperf(&[
        "bench", "latency", "-t", "uds", "--sizes", "8", "--iters", "50", "--cpus", &cpus,
        "--format", "json",
    ]);
    let v = json_of(&o);
    let e = text(&o.stderr);
    // One warning line; a run the machine's load stretched past the two quiet seconds adds
    // progress lines after it, which say nothing about the placement.
    assert_eq!(
        e.lines().filter(|l| progress_line(l).is_none()).count(),
        1,
        "one warning line: {e}"
    );
    assert!(
        e.starts_with(&format!(
            "commperf: warning: --cpus {cpus} puts both ends on CPU {c}: they take turns on it"
        )),
        "{e}"
    );
    let p = &v["placement"];
    assert_eq!(p["local_cpu"].to_string(), c);
    assert_eq!(p["peer_cpu"].to_string(), c);
    assert_eq!(
        (&p["local_pinned"], &p["peer_pinned"]),
        (&true.into(), &true.into())
    );
    assert_eq!(
        p["warning"],
        format!("both ends on cpu {c}: they take turns, latency is the scheduler's").as_str()
    );
    // The table says it under the placement line.
    let o = commperf(&[
        "bench", "latency", "-t", "uds", "--sizes", "8", "--iters", "50", "--cpus", &cpus,
    ]);
    let t = text(&ok(&o).stdout);
    assert!(
        t.contains(&format!(
            "# placement: local cpu {c} (pinned), peer cpu {c} (pinned)\n# warning: both ends on cpu {c}"
        )),
        "{t}"
    );
    // Two CPUs: no warning, nothing on stderr.
    if let [a, b, ..] = allowed_cpus()[..] {
        let o = commperf(&[
            "bench",
            "latency",
            "-t",
            "uds",
            "--sizes",
            "8",
            "--iters",
            "50",
            "--cpus",
            &format!("{a},{b}"),
            "--format",
            "json",
        ]);
        let v = json_of(&o);
        assert!(v["placement"].get("warning").is_none(), "{v}");
        assert_eq!(text(&o.stderr), "");
    }
}

fn serve(token: &str) -> Served {
    Served::start(token, false, |_| {})
}

#[test]
fn a_peer_run_pins_this_end_and_says_the_peer_is_not_pinned() {
    let s = serve("edges-token");
    let first = allowed_cpus()[0];
    let run = |extra: &[&str]| {
        let mut a = vec![
            "bench",
            "latency",
            "-t",
            "tcp",
            "--sizes",
            "8",
            "--iters",
            "50",
            "--peer",
            &s.addr,
            "--token",
            "edges-token",
        ];
        a.extend(extra);
        commperf(&a)
    };
    let v = json_of(&run(&["--format", "json"]));
    let p = &v["placement"];
    assert_eq!(p["local_cpu"], first, "{p}");
    assert_eq!(p["local_pinned"], true, "{p}");
    assert_eq!(p["peer_pinned"], false, "{p}");
    assert_eq!(p["pinned"], false, "both ends were not pinned: {p}");
    assert!(p["peer_cpu"].is_u64(), "the peer says where it ran: {p}");
    let t = text(&ok(&run(&[])).stdout);
    let line = t.lines().find(|l| l.starts_with("# placement: ")).unwrap();
    assert!(
        line.starts_with(&format!(
            "# placement: local cpu {first} (pinned), peer cpu "
        )) && line.ends_with(" (not pinned)"),
        "{line}"
    );
    // --cpus names the peer's CPU too: both pinned.
    if let [a, b, ..] = allowed_cpus()[..] {
        let v = json_of(&run(&["--cpus", &format!("{a},{b}"), "--format", "json"]));
        let p = &v["placement"];
        assert_eq!(
            (p["local_cpu"].as_u64(), p["peer_cpu"].as_u64()),
            (Some(a as u64), Some(b as u64))
        );
        assert_eq!(
            (&p["local_pinned"], &p["peer_pinned"]),
            (&true.into(), &true.into())
        );
    }
}

/// `commperf: [k/n] BENCH over T (MODE) finished in S s, R to go`, parsed.
fn progress_line(l: &str) -> Option<(usize, usize, String, f64, usize)> {
    let rest = l.strip_prefix("commperf: [")?;
    let (k, rest) = rest.split_once('/')?;
    let (n, rest) = rest.split_once("] ")?;
    let (what, rest) = rest.split_once(" finished in ")?;
    let (secs, rest) = rest.split_once(" s, ")?;
    let left = rest.strip_suffix(" to go")?;
    Some((
        k.parse().ok()?,
        n.parse().ok()?,
        what.to_string(),
        secs.parse().ok()?,
        left.parse().ok()?,
    ))
}

#[test]
fn a_run_logged_to_a_file_says_which_benchmark_finished_and_how_many_remain() {
    let args = [
        "bench",
        "latency",
        "bw",
        "-t",
        "shm,uds",
        "--mode",
        "poll,block",
        "--sizes",
        "8,4K",
        "--iters",
        "50",
    ];
    // Reporting from the start (the test hook), stderr a pipe: a line per benchmark ×
    // transport × mode, in the order they ran.
    let start = Instant::now();
    let o = Command::new(exe())
        .args(args)
        .env("COMMPERF_PROGRESS_AFTER_MS", "0")
        .output()
        .unwrap();
    let wall = start.elapsed().as_secs_f64();
    ok(&o);
    let e = text(&o.stderr);
    let lines: Vec<_> = e
        .lines()
        .map(|l| progress_line(l).unwrap_or_else(|| panic!("{l}")))
        .collect();
    let mut want = Vec::new();
    for t in ["shm", "uds"] {
        for m in ["poll", "block"] {
            for b in ["latency", "bw"] {
                want.push(format!("{b} over {t} ({m})"));
            }
        }
    }
    assert_eq!(
        lines.iter().map(|l| l.2.clone()).collect::<Vec<_>>(),
        want,
        "{e}"
    );
    let mut sum = 0.0;
    for (i, (k, n, _, secs, left)) in lines.iter().enumerate() {
        assert_eq!((*k, *n, *left), (i + 1, 8, 8 - (i + 1)), "{e}");
        assert!(*secs >= 0.0);
        sum += secs;
    }
    // Each took its share of the run, no more: each figure is rounded to 0.1 s, so the sum may
    // exceed the run by half a tenth per line (CI saw 1.5 s printed for a 1.39 s run).
    let rounding = 0.05 * lines.len() as f64;
    assert!(
        sum <= wall + rounding + 0.01,
        "{sum} s of benchmarks in a {wall} s run: {e}"
    );
    // Without the hook a short run stays quiet: stderr holds at most progress lines (a loaded
    // machine may take past the two quiet seconds), and none when the run was quick.
    let start = Instant::now();
    let o = commperf(&args);
    let wall = start.elapsed();
    let e = text(&ok(&o).stderr);
    assert!(e.lines().all(|l| progress_line(l).is_some()), "{e}");
    if wall < Duration::from_millis(1500) {
        assert_eq!(e, "", "a {wall:?} run");
    }
}

#[test]
fn messages_agree_with_what_is_accepted() {
    let usage = |args: &[&str], needle: &str| {
        let o = commperf(args);
        let e = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
        assert_eq!(e.lines().count(), 1, "{args:?}: {e}");
        assert!(e.contains(needle), "{args:?}: {e}");
    };
    // The range the message states is the range accepted.
    usage(&["bench", "--timeout", "0"], "from 0.001 to 86400");
    usage(&["bench", "--timeout", "86400.5"], "from 0.001 to 86400");
    assert!(commperf(&["bench", "--timeout", "0.001", "--help"])
        .status
        .success());
    // gen-trace: a bad pattern or grid is a usage error.
    usage(
        &["gen-trace", "nope", "--ranks", "4"],
        "unknown pattern 'nope' (expected bcast,",
    );
    usage(&["gen-trace", "halo:3x3", "--ranks", "8"], "give --ranks 9");
    usage(
        &["gen-trace", "halo:3xy", "--ranks", "8"],
        "halo:XxY needs two whole numbers",
    );
    // … and so is a workload no reader would take back, refused before a byte is written: at
    // most 3 operations a message (send, receive, wait), so 4730 ranks all-to-all is
    // 4730·4729·3 = 67,104,510 operations (within 2^26), one more rank 67,132,890 (beyond it);
    // messages above 2^48 B.
    let d = TempDir::new("gen-bounds");
    let big = d.arg("big.txt");
    usage(
        &["gen-trace", "alltoall", "--ranks", "4731", "-o", &big],
        "alltoall over 4731 ranks, 1 iterations, is up to 67132890 operations: the trace \
         readers take at most 2^26 = 67108864",
    );
    usage(
        &[
            "gen-trace",
            "ring",
            "--ranks",
            "40",
            "--iters",
            "1000000",
            "--bytes",
            "1",
        ],
        "ring-shift over 40 ranks, 1000000 iterations, is up to 120000000 operations",
    );
    usage(
        &[
            "gen-trace",
            "ring",
            "--ranks",
            "4",
            "--bytes",
            "281474976710657",
        ],
        "281474976710657 B messages: the trace readers take at most 2^48 = 281474976710656 B",
    );
    assert!(!std::path::Path::new(&big).exists(), "nothing is written");
    let most = |args: &[&str]| ok(&commperf(args)).stdout.len();
    assert!(
        most(&[
            "gen-trace",
            "ring",
            "--ranks",
            "4",
            "--bytes",
            "281474976710656"
        ]) > 0
    );
    // predict --algo, as the user guide documents it.
    usage(
        &["predict", "--trace", "t", "--algo", "alltoall=fast"],
        "expected one of: pairwise, linear",
    );
    let d = TempDir::new("algo");
    ok(&commperf(&[
        "gen-trace",
        "pairwise",
        "--ranks",
        "8",
        "-o",
        &d.arg("a.txt"),
    ]));
    let trace = d.arg("a.txt");
    let ops = |extra: &[&str]| {
        let mut a = vec!["predict", "--trace", &trace, "--format", "json"];
        a.extend(extra);
        json_of(&commperf(&a))["operations"].as_u64().unwrap()
    };
    // Pairwise: per step a send, a receive and a wait; linear: all posted, one wait.
    assert_eq!(ops(&[]), 8 * 7 * 3);
    assert_eq!(ops(&["--algo", "alltoall=linear"]), 8 * (7 * 2 + 1));
    assert_eq!(
        ops(&["--algo", "bcast=linear", "--algo", "alltoall=linear"]),
        8 * (7 * 2 + 1)
    );
}

#[test]
fn binary_files_given_as_text_are_one_line_naming_file_and_position() {
    let d = TempDir::new("binary");
    let bin = d.arg("ls.dot");
    std::fs::copy("/bin/ls", &bin).unwrap();
    ok(&commperf(&[
        "gen-trace",
        "ring",
        "--ranks",
        "2",
        "-o",
        &d.arg("t.txt"),
    ]));
    let t = d.arg("t.txt");
    for args in [
        vec!["predict", "--trace", &bin],
        vec!["predict", "--trace", &bin, "--format-in", "goal"],
        vec!["predict", "--trace", &t, "--topology", &bin],
        vec!["predict", "--trace", &t, "--rank-map", &bin],
        vec!["predict", "--trace", &t, "--profile", &bin],
        vec!["report", &bin],
        vec!["compare", &bin, &bin],
        vec!["calibrate", "--from-netgauge", &bin],
    ] {
        let o = commperf(&args);
        let e = text(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {e}");
        assert_eq!(e.lines().count(), 1, "{args:?}: {e}");
        // ELF files start with 0x7f 'E' 'L' 'F' and soon have a byte that is not UTF-8.
        assert!(e.contains(&format!("{bin}:1:")), "{args:?}: {e}");
        assert!(e.contains("not a text file: byte 0x"), "{args:?}: {e}");
        assert_eq!(e.matches("UTF-8").count(), 1, "{args:?}: said once: {e}");
    }
}

#[test]
fn goal_of_every_pattern_predicts_what_the_own_format_predicts() {
    let d = TempDir::new("goal");
    for (p, n) in [
        ("bcast", "8"),
        ("incast", "5"),
        ("alltoall", "5"),
        ("ring", "5"),
        ("halo:3x2", "6"),
        ("pairwise", "6"),
    ] {
        let mut totals = Vec::new();
        for f in ["own", "goal"] {
            let file = d.arg(&format!("p.{f}"));
            ok(&commperf(&[
                "gen-trace",
                p,
                "--ranks",
                n,
                "--bytes",
                "100k",
                "--iters",
                "2",
                "--format-out",
                f,
                "-o",
                &file,
            ]));
            let v = json_of(&commperf(&[
                "predict", "--trace", &file, "--format", "json",
            ]));
            assert_eq!(v["trace_format"], f, "{p}");
            totals.push(v["total_us"].as_f64().unwrap());
        }
        assert!(totals[0] > 0.0 && totals[0] == totals[1], "{p}: {totals:?}");
    }
    // A cycle in a GOAL file's dependencies is named as the cycle.
    let g = d.arg("cycle.goal");
    std::fs::write(
        &g,
        "num_ranks 2\nrank 0 {\nl1: send 8b to 1\nl2: calc 5\nl1 requires l2\nl2 requires l1\n}\n\
         rank 1 { recv 8b from 0 }\n",
    )
    .unwrap();
    let o = commperf(&["predict", "--trace", &g]);
    let e = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert_eq!(
        e.trim_end(),
        format!(
            "commperf: reading trace {g}: {g}:5:1: dependency cycle in rank 0: l1 -> l2 -> l1 \
             (l1 requires l2 on line 5, l2 requires l1 on line 6): none of them can ever start"
        )
    );
}

/// The relaunch under mpirun (`bench --transport mpi` typed without mpirun): the ranks' output
/// passes through mpirun, which ignores write errors; commperf copies it and reports them.
#[test]
#[cfg_attr(
    not(all(commperf_mpi_feature, commperf_has_mpirun)),
    ignore = "needs a build with the mpi feature (--features commperf/mpi) and Open MPI's mpirun on the PATH"
)]
fn an_mpi_run_started_by_commperf_reports_a_full_stdout() {
    let why = if !cfg!(feature = "mpi") {
        Some("this build has no MPI (cargo test --features mpi)")
    } else if Command::new("mpirun").arg("--version").output().is_err() {
        Some("no mpirun in PATH")
    } else {
        None
    };
    // Ignored where the build found no MPI; here only when COMMPERF_REQUIRE_MPI forces it.
    if let Some(why) = why {
        panic!("{why}");
    }
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let o = Command::new("timeout")
        .args(["-k", "10", "240", exe()])
        .args([
            "bench",
            "latency",
            "--transport",
            "mpi",
            "--sizes",
            "8",
            "--iters",
            "50",
        ])
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .stdout(full)
        .output()
        .unwrap();
    let e = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(!e.contains("panicked"), "{e}");
    let errors: Vec<&str> = e
        .lines()
        .filter(|l| !l.starts_with("commperf: not started by mpirun") && progress_line(l).is_none())
        .collect();
    // Checked before mpirun is started, not found at the end of the run.
    assert_eq!(
        errors,
        ["commperf: standard output is /dev/full: every write to it fails"],
        "{e}"
    );
}
