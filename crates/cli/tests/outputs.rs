//! Nothing measured is lost: every output path (and standard output) is checked before a verb
//! measures anything; an interrupted run prints and saves what finished, marked partial; `-o`
//! onto an existing file keeps what the user made of it; and a refused or failed `monitor` run
//! leaves nothing behind.

mod mpi_apps;

use commperf_testkit::{exe, TempDir};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn run(args: &[&str], cwd: &Path) -> Output {
    Command::new(exe())
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A bench whose output cannot be written is refused before it measures: nothing on stdout (the
/// table comes only after measuring), one line naming the option and the path, exit 1.
#[test]
fn bench_refuses_unwritable_outputs_before_measuring() {
    let d = TempDir::new("outputs-bench");
    let cases: [(&[&str], String); 4] = [
        (
            &["-o", "/nonexistent/x.json"],
            "commperf: -o /nonexistent/x.json: the directory /nonexistent does not exist"
                .to_string(),
        ),
        (
            &["-o", "."],
            "commperf: -o .: is a directory (give a file name)".to_string(),
        ),
        (
            &["--plot-loggp", "/nonexistent/l.svg"],
            "commperf: --plot-loggp /nonexistent/l.svg: the directory /nonexistent does not exist"
                .to_string(),
        ),
        (
            &["-o", "/dev/full"],
            "commperf: -o /dev/full: no space left on its file system".to_string(),
        ),
    ];
    for (extra, want) in cases {
        let mut args = vec![
            "bench", "loggp", "-t", "shm", "--sizes", "8,64", "--iters", "100",
        ];
        args.extend_from_slice(extra);
        let o = run(&args, &d);
        assert_eq!(o.status.code(), Some(1), "{extra:?}: {}", stderr(&o));
        assert_eq!(stderr(&o).trim_end(), want, "{extra:?}");
        assert!(o.stdout.is_empty(), "{extra:?}: measured anyway");
    }
    // Standard output that fails every write.
    let o = Command::new(exe())
        .args(["bench", "latency", "-t", "shm", "--sizes", "8"])
        .stdout(std::fs::File::create("/dev/full").unwrap())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o).trim_end(),
        "commperf: standard output is /dev/full: every write to it fails"
    );
    // The other verbs check theirs alike.
    let o = run(
        &[
            "emulate",
            "sweep",
            "--knob",
            "o=1us",
            "-o",
            "/nonexistent/s.json",
            "--",
            "true",
        ],
        &d,
    );
    assert!(
        stderr(&o).contains("-o /nonexistent/s.json: the directory /nonexistent does not exist"),
        "{}",
        stderr(&o)
    );
    assert!(!Path::new("/nonexistent").exists());
}

/// `-o` onto an existing file: its mode stays, a symbolic link stays a link (the file it names
/// is written), and no temporary file is left.
#[test]
fn an_existing_output_keeps_its_mode_and_links() {
    let d = TempDir::new("outputs-mode");
    let trace = d.join("t.txt");
    std::fs::write(
        &trace,
        "ranks 2\nrank 0\nsend 1 1024\nrank 1\nrecv 0 1024\n",
    )
    .unwrap();
    let out = d.join("p.json");
    std::fs::write(&out, "old").unwrap();
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::os::unix::fs::symlink("p.json", d.join("link.json")).unwrap();
    for target in ["p.json", "link.json"] {
        let o = run(
            &[
                "predict", "--trace", "t.txt", "--model", "loggp", "-o", target,
            ],
            &d,
        );
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let m = std::fs::metadata(&out).unwrap();
    assert_eq!(m.mode() & 0o7777, 0o600);
    assert!(std::fs::symlink_metadata(d.join("link.json"))
        .unwrap()
        .file_type()
        .is_symlink());
    let j: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert!(j.is_object(), "{j}");
    let mut names: Vec<String> = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["link.json", "p.json", "t.txt"]);
}

/// The pid of a `commperf __peer` whose parent is `parent`, if one runs.
fn peer_of(parent: u32) -> Option<u32> {
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: u32 = e.file_name().to_str()?.parse().ok()?;
        let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
        // pid (comm) state ppid …: the comm may hold spaces, so split after the last ')'.
        let ppid: u32 = stat
            .rsplit(')')
            .next()?
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()?;
        let cmd = std::fs::read(e.path().join("cmdline")).ok()?;
        (ppid == parent && String::from_utf8_lossy(&cmd).contains("__peer")).then_some(pid)
    })
}

/// Ctrl-C once a benchmark finished: the run stops at the next boundary between measurements,
/// prints and saves what finished with `"partial": true`, exits 130, and leaves no peer.
#[test]
fn an_interrupted_bench_saves_what_finished() {
    let d = TempDir::new("outputs-interrupt");
    let out = d.join("r.json");
    let mut child = Command::new(exe())
        .args([
            "bench",
            "latency",
            "bw",
            "-t",
            "shm,tcp",
            "--sizes",
            "8,64,4k,64k,1M",
            "--iters",
            "2000",
            "-o",
        ])
        .arg(&out)
        .env("COMMPERF_PROGRESS_AFTER_MS", "0")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    let mut peer = None;
    // The first benchmark (latency over shm, all five sizes) finishes; then the interrupt.
    loop {
        let mut line = String::new();
        assert!(err.read_line(&mut line).unwrap() > 0, "ended early: {seen}");
        peer = peer.or_else(|| peer_of(pid));
        seen.push_str(&line);
        if line.contains("[1/4] latency over shm (poll) finished") {
            break;
        }
    }
    let peer = peer.or_else(|| peer_of(pid)).expect("the peer process");
    // SAFETY: kill sends a signal to the child this test started.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGINT) }, 0);
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut err, &mut rest).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{seen}{rest}");
    assert!(
        rest.contains("commperf: interrupted: stopping after the current measurement"),
        "{rest}"
    );
    let j: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(j["partial"], true);
    let rows = j["results"].as_array().unwrap();
    let shm_latency: Vec<u64> = rows
        .iter()
        .filter(|r| r["benchmark"] == "latency" && r["transport"] == "shm")
        .map(|r| r["size_bytes"].as_u64().unwrap())
        .collect();
    assert_eq!(shm_latency, [8, 64, 4096, 65536, 1 << 20], "{j}");
    assert!(
        rows.len() < 20,
        "the run went on to the end: {} rows",
        rows.len()
    );
    assert!(
        rest.contains(&format!(
            "commperf: interrupted: the {} result rows that finished were printed and saved",
            rows.len()
        )),
        "{rest}"
    );
    // The peer ended with the session (it ignores the terminal's interrupt, and is reaped).
    let deadline = Instant::now() + Duration::from_secs(10);
    while Path::new(&format!("/proc/{peer}")).exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        !Path::new(&format!("/proc/{peer}")).exists(),
        "peer {peer} left running"
    );
}

/// A monitor run refused before it starts, or whose program records nothing, creates nothing:
/// not the `-o` directory, not the default `commperf-monitor-<time>`, not `/nonexistent`.
#[test]
fn a_refused_monitor_run_leaves_nothing() {
    let d = TempDir::new("outputs-monitor");
    // The interposer cache, outside the directory that must stay empty; made only by a run
    // that extracts an interposer into it.
    let cache_dir = TempDir::new("outputs-monitor-cache");
    let cache = cache_dir.join("cache");
    // Without MPI the launcher itself is what is missing, and said first.
    let mpirun_found = mpi_apps::have("mpirun");
    let cases: [(&[&str], &str); 4] = [
        (
            &["monitor", "-o", "m1", "--", "./no_such_program"],
            "commperf: ./no_such_program: no such file",
        ),
        (
            &["monitor", "--", "mpirun", "-np", "2", "./nope"],
            if mpirun_found {
                "commperf: ./nope: no such file (the program to run, in `mpirun -np 2 ./nope`)"
            } else {
                "commperf: mpirun: no such program on PATH"
            },
        ),
        (
            &[
                "monitor",
                "-o",
                "m2",
                "--interposer",
                "openmpi",
                "--",
                "true",
            ],
            "left no monitor data",
        ),
        (
            &[
                "monitor",
                "-o",
                "/nonexistent/dir",
                "--interposer",
                "openmpi",
                "--",
                "true",
            ],
            "commperf: -o /nonexistent/dir: the directory /nonexistent does not exist",
        ),
    ];
    for (args, want) in cases {
        let o = Command::new(exe())
            .args(args)
            .current_dir(&d)
            .env("COMMPERF_CACHE_DIR", &cache)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
        let e = stderr(&o);
        // An interposer this build lacks is refused first, by name, before any cache is made.
        let refused_first = e.contains("was built without the Open MPI interposer");
        assert!(refused_first || e.contains(want), "{args:?}: {e}");
        assert!(!refused_first || !cache.exists(), "{args:?} made the cache");
        let left: Vec<_> = std::fs::read_dir(&d).unwrap().flatten().collect();
        assert!(left.is_empty(), "{args:?} left {left:?}");
    }
    assert!(!Path::new("/nonexistent").exists());
}
