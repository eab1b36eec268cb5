//! No orphans: whatever ends commperf — Ctrl-C at a sweep, `kill -9` of `monitor`, `emulate` or `app` —
//! nothing it started outlives it: not mpirun, not the ranks, not commperf's own helpers, and no
//! file of the run stays (emulate's run directory, MPI's session directory and shared-memory
//! segments). Each run carries a marker in its environment, which every process it starts
//! inherits (mpirun passes its environment to local ranks), so the test finds the run's
//! processes in /proc whoever their parent is now; TMPDIR and Open MPI's shared-memory
//! directory point into the test's scratch directory, so every file of the run is there.

mod mpi_apps;
use mpi_apps::{compile, exe, need, Scratch};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The environment variable that marks a run's processes.
const MARK: &str = "COMMPERF_ORPHAN_TEST";

/// The test's program, compiled into the scratch directory, and the run's temporary directory.
fn setup(test: &str) -> (Scratch, PathBuf, PathBuf) {
    need(test, &["mpicc.openmpi", "mpirun.openmpi"]);
    let s = Scratch::new("orphans", test);
    let prog = s.0.join("lingers");
    compile("mpicc.openmpi", "lingers.c", &prog);
    let tmp = s.0.join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    (s, prog, tmp)
}

/// `commperf ARGS -- mpirun.openmpi -np 2 PROG 30` marked `mark`, its files in `tmp`
/// (`app` is given the program alone: it launches it itself, `mpirun.openmpi -np 2 PROG 30`).
fn launch(args: &[&str], prog: &Path, tmp: &Path, mark: &str) -> Command {
    let mut c = Command::new(exe());
    c.args(args).arg("--");
    if args[0] != "app" {
        c.args(["mpirun.openmpi", "-np", "2", "--oversubscribe"]);
    }
    c.arg(prog)
        .arg("30")
        .env(MARK, mark)
        .env("TMPDIR", tmp)
        .env("OMPI_MCA_btl_vader_backing_directory", tmp)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .stdin(Stdio::null());
    c
}

/// The processes alive with `MARK=mark` in their environment: "pid name" each.
fn of_run(mark: &str) -> Vec<String> {
    let want = format!("{MARK}={mark}\0");
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        // A zombie's environment reads empty: it is gone but for its exit status.
        let Ok(env) = std::fs::read(e.path().join("environ")) else {
            continue;
        };
        if env.windows(want.len()).any(|w| w == want.as_bytes()) {
            let name = std::fs::read_to_string(e.path().join("comm")).unwrap_or_default();
            found.push(format!("{pid} {}", name.trim()));
        }
    }
    found
}

/// Every file and directory under `dir`.
fn files_in(dir: &Path) -> Vec<String> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        v.push(e.path().display().to_string());
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            v.extend(files_in(&e.path()));
        }
    }
    v
}

/// Waits up to `bound` for the run marked `mark` to have no process and no file in `tmp`;
/// returns what is left then.
fn left_after(bound: Duration, mark: &str, tmp: &Path) -> (Vec<String>, Vec<String>) {
    let until = Instant::now() + bound;
    loop {
        let (p, f) = (of_run(mark), files_in(tmp));
        if (p.is_empty() && f.is_empty()) || Instant::now() >= until {
            return (p, f);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// SIGKILL to `pid`, a child of this test, and its exit status collected.
fn kill9(child: &mut std::process::Child) {
    // SAFETY: kill(2) on the child this test started; no memory is involved.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGKILL) }, 0);
    let st = child.wait().unwrap();
    assert_eq!(std::os::unix::process::ExitStatusExt::signal(&st), Some(9));
}

/// `kill -9` of `commperf monitor -- mpirun …`, `commperf emulate -- mpirun …` and `commperf app
/// -- PROG` (which runs `mpirun` under the monitor) at points
/// from before MPI_Init to the steady state: within 5 s no process of the run is left (mpirun,
/// the ranks, emulate's reaper) and no file (emulate's run directory, MPI's session directory
/// and shared-memory segments); monitor's `-o` directory, the run's output, is outside `tmp`.
#[test]
#[cfg_attr(
    not(commperf_has_openmpi),
    ignore = "needs Open MPI (mpicc.openmpi, mpirun.openmpi: apt-get install libopenmpi-dev openmpi-bin)"
)]
fn a_killed_launcher_leaves_no_process_and_no_file() {
    let (s, prog, tmp) = setup("a_killed_launcher_leaves_no_process_and_no_file");
    let delays_ms = [200, 700, 1300, 2000];
    for (l, verb) in ["monitor", "emulate", "app"].iter().enumerate() {
        for (i, ms) in delays_ms.iter().enumerate() {
            let mark = format!("{}-{l}-{i}", std::process::id());
            let out = s.0.join(format!("out-{l}-{i}"));
            let out = out.to_str().unwrap();
            let args: Vec<&str> = match *verb {
                "monitor" => vec!["monitor", "-o", out],
                "emulate" => vec!["emulate", "--L", "20us"],
                _ => vec![
                    "app",
                    "--stacks",
                    "ompi-shm",
                    "--np",
                    "2",
                    "--no-bench",
                    "-o",
                    out,
                ],
            };
            let mut child = launch(&args, &prog, &tmp, &mark)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            std::thread::sleep(Duration::from_millis(*ms));
            let before = of_run(&mark);
            kill9(&mut child);
            let (procs, files) = left_after(Duration::from_secs(5), &mark, &tmp);
            assert!(
                procs.is_empty() && files.is_empty(),
                "commperf {verb} killed after {ms} ms (its run then: {before:?}) left \
                 processes {procs:?} and files {files:?}"
            );
        }
    }
}

/// An interrupt, to the sweep's process group as a terminal sends it or to its pid alone,
/// reaches the run in hand (its own process group, out of the terminal's reach): the sweep
/// ends (exit 130) once the run stopped and cleaned up, well within the 10 s grace, and when
/// it has ended nothing of the run is left: no process, no file. The cut run is neither a
/// time nor a failure: 0 runs finished.
#[test]
#[cfg_attr(
    not(commperf_has_openmpi),
    ignore = "needs Open MPI (mpicc.openmpi, mpirun.openmpi: apt-get install libopenmpi-dev openmpi-bin)"
)]
fn an_interrupted_sweep_stops_its_run_and_leaves_nothing() {
    let (s, prog, tmp) = setup("an_interrupted_sweep_stops_its_run_and_leaves_nothing");
    for (i, to_group) in [true, false].into_iter().enumerate() {
        let mark = format!("{}-sweep-{i}", std::process::id());
        let dir = s.0.join(format!("sweep-{i}"));
        let args = [
            "emulate",
            "sweep",
            "--knob",
            "L=0,50us",
            "--repeat",
            "1",
            "--format",
            "json",
            "--dir",
            dir.to_str().unwrap(),
        ];
        let mut cmd = launch(&args, &prog, &tmp, &mark);
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        let mut out = child.stdout.take().unwrap();
        let stdout = std::thread::spawn(move || {
            let mut v = Vec::new();
            out.read_to_end(&mut v).unwrap();
            v
        });
        let mut err = BufReader::new(child.stderr.take().unwrap());
        let mut seen = String::new();
        loop {
            let mut line = String::new();
            assert!(err.read_line(&mut line).unwrap() > 0, "ended early: {seen}");
            seen.push_str(&line);
            if line.starts_with("commperf: run 1/") {
                break;
            }
        }
        // The run's mpirun and both ranks are up.
        let until = Instant::now() + Duration::from_secs(30);
        while of_run(&mark)
            .iter()
            .filter(|p| p.ends_with(" lingers"))
            .count()
            < 2
        {
            assert!(Instant::now() < until, "the ranks never started: {seen}");
            std::thread::sleep(Duration::from_millis(50));
        }
        std::thread::sleep(Duration::from_millis(300));
        let target = if to_group { -pid } else { pid };
        let t0 = Instant::now();
        // SAFETY: kill(2) on the child (or its process group) this test started.
        assert_eq!(unsafe { libc::kill(target, libc::SIGINT) }, 0);
        err.read_to_string(&mut seen).unwrap();
        let status = child.wait().unwrap();
        let took = t0.elapsed();
        let (procs, files) = (of_run(&mark), files_in(&tmp));
        let what = if to_group { "group" } else { "pid" };
        assert_eq!(status.code(), Some(130), "SIGINT to the {what}: {seen}");
        assert!(
            took < Duration::from_secs(10),
            "SIGINT to the {what}: took {took:?}"
        );
        assert!(
            procs.is_empty() && files.is_empty(),
            "SIGINT to the {what}: the sweep ended and left processes {procs:?} and files \
             {files:?}\n{seen}"
        );
        assert!(
            seen.contains("commperf: interrupted: the 0 runs that finished were printed and saved"),
            "{seen}"
        );
        let j: serde_json::Value = serde_json::from_slice(&stdout.join().unwrap())
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {seen}"));
        assert_eq!(j["partial"], true, "{j}");
        let made: usize = j["settings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                s["runs_s"].as_array().unwrap().len() + s["failures"].as_array().unwrap().len()
            })
            .sum();
        assert_eq!(made, 0, "{j}");
    }
}

/// A run past the sweep's `--timeout` is stopped (SIGTERM, which `commperf emulate` passes on to
/// its mpirun) and counted as failed, saying so: the three runs of the sweep each fail with
/// "timed out after 2s; stopped", and when the sweep has ended nothing of them is left.
#[test]
#[cfg_attr(
    not(commperf_has_openmpi),
    ignore = "needs Open MPI (mpicc.openmpi, mpirun.openmpi: apt-get install libopenmpi-dev openmpi-bin)"
)]
fn a_sweep_run_past_its_timeout_is_stopped_and_leaves_nothing() {
    let (s, prog, tmp) = setup("a_sweep_run_past_its_timeout_is_stopped_and_leaves_nothing");
    let mark = format!("{}-timeout", std::process::id());
    let dir = s.0.join("sweep");
    let args = [
        "emulate",
        "sweep",
        "--knob",
        "L=0,50us",
        "--repeat",
        "1",
        "--timeout",
        "2",
        "--dir",
        dir.to_str().unwrap(),
    ];
    let o = launch(&args, &prog, &tmp, &mark).output().unwrap();
    let (procs, files) = (of_run(&mark), files_in(&tmp));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("every run failed"), "{err}");
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("sweep.json")).unwrap()).unwrap();
    let stopped = j["settings"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["failures"].as_array().unwrap())
        .filter(|f| f.as_str().unwrap().contains("timed out after 2s; stopped"))
        .count();
    assert_eq!(stopped, 3, "{j}");
    assert!(
        procs.is_empty() && files.is_empty(),
        "the sweep ended and left processes {procs:?} and files {files:?}"
    );
}
