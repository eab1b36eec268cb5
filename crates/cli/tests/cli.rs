//! End-to-end tests of the `commperf` binary: real processes, real shared memory and sockets.

use commperf_testkit::{
    commperf, exe, json_of, shm_segments_of, stderr, wait_until, Lines, Served, TempDir,
};
use serde_json::Value;
use std::io::{BufReader, Read, Write};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn f(v: &Value, k: &str) -> f64 {
    v[k].as_f64()
        .unwrap_or_else(|| panic!("{k} missing in {v}"))
}

#[test]
fn bench_writes_the_documented_json_schema() {
    let o = commperf(&[
        "bench", "latency", "bw", "bibw", "mr", "-t", "shm,uds", "--sizes", "1,4K", "--iters",
        "300", "--window", "8", "--format", "json",
    ]);
    let v = json_of(&o);
    assert_eq!(v["schema_version"], 2);
    assert!(v["machine"]["cpu_model"].is_string());
    assert!(v["machine"]["cores"].as_u64().unwrap() >= 1);
    assert!(f(&v["machine"]["timer"], "cost_ns") > 0.0);
    let rows = v["results"].as_array().unwrap();
    assert_eq!(rows.len(), 4 * 2 * 2, "benchmarks × transports × sizes");
    for r in rows {
        assert_eq!(r["iterations"], 300);
        assert!(["shm", "uds"].contains(&r["transport"].as_str().unwrap()));
        let size = r["size_bytes"].as_u64().unwrap();
        match r["benchmark"].as_str().unwrap() {
            "latency" => {
                let (min, p50, p90, p99, max, mean) = (
                    f(r, "min_us"),
                    f(r, "p50_us"),
                    f(r, "p90_us"),
                    f(r, "p99_us"),
                    f(r, "max_us"),
                    f(r, "mean_us"),
                );
                assert!(
                    min > 0.0 && min <= p50 && p50 <= p90 && p90 <= p99 && p99 <= max,
                    "{r}"
                );
                assert!(min <= mean && mean <= max, "{r}");
                assert!(r.get("mb_per_s").is_none());
            }
            "bw" | "mr" | "bibw" => {
                assert_eq!(r["window"], 8);
                let (mb, msgs) = (f(r, "mb_per_s"), f(r, "msgs_per_s"));
                // The two figures describe the same transfer: MB/s = msgs/s × size / 1e6.
                let want = msgs * size as f64 / 1e6;
                assert!((mb - want).abs() <= 1e-9 * want.max(1.0), "{mb} vs {want}");
                assert!(r.get("p50_us").is_none());
            }
            other => panic!("unexpected benchmark {other}"),
        }
    }
    // Local runs pin both ends to different CPUs when there are two, and say so.
    if std::thread::available_parallelism().unwrap().get() >= 2 {
        assert_eq!(v["placement"]["pinned"], true);
        assert_ne!(v["placement"]["local_cpu"], v["placement"]["peer_cpu"]);
        let lim = &v["limits"];
        assert!(f(lim, "cacheline_one_way_us") > 0.0);
        assert!(f(lim, "cacheline_one_way_us") > 0.0);
        assert!(f(lim, "memcpy_two_cpus_out_of_cache_mb_per_s") > 0.0);
        // Each shm row carries the limit it was judged against, measured just before it, and
        // its efficiency follows from it exactly; never above 100 %: within the row's noise of
        // it, 100 % with a note; beyond it, left out with a note.
        for r in rows.iter().filter(|r| r["transport"] == "shm") {
            let ratio = match r["benchmark"].as_str().unwrap() {
                "latency" => {
                    let (limit, p50) = (f(r, "limit_us"), f(r, "p50_us"));
                    assert!(limit > 0.0 && limit < 100.0, "{r}");
                    limit / p50
                }
                "bw" | "mr" => {
                    let limit = f(r, "limit_mb_per_s");
                    assert!(limit > 0.0, "{r}");
                    f(r, "mb_per_s") / limit
                }
                _ => {
                    assert!(r.get("efficiency").is_none(), "{r}");
                    continue;
                }
            };
            let note = |k: &str| {
                r["notes"]
                    .as_array()
                    .is_some_and(|n| n.iter().any(|n| n.as_str().unwrap().contains(k)))
            };
            match r["efficiency"].as_f64() {
                Some(e) if e < 1.0 => assert!((e - ratio).abs() < 1e-12, "{r}"),
                Some(e) => assert!(e == 1.0 && ratio >= 1.0 && note("within the noise"), "{r}"),
                None => assert!(ratio > 1.0 && note("the limit did not hold"), "{r}"),
            }
        }
        // Only shm rows of latency, bw and mr carry an efficiency (or a note why not).
        for r in rows {
            let expect = r["transport"] == "shm" && r["benchmark"] != "bibw";
            assert_eq!(
                r.get("efficiency").is_some() || r.get("notes").is_some(),
                expect,
                "{r}"
            );
        }
    }
}

#[test]
fn bad_option_values_exit_2_with_one_line_naming_the_option() {
    for (args, needles) in [
        (
            vec!["bench", "-t", "rdma"],
            vec!["--transport", "allowed: shm, tcp, uds"],
        ),
        (
            vec!["bench", "--sizes", "9223372036854775808"],
            vec!["--sizes", "too large"],
        ),
        (
            vec!["bench", "--sizes", "2G"],
            vec!["--sizes", "exceeds the largest supported"],
        ),
        (vec!["bench", "--window", "0"], vec!["--window"]),
        (
            vec!["bench", "--iters", "9223372036854775807"],
            vec!["--iters", "between 1 and"],
        ),
        (
            vec!["bench", "--warmup", "18446744073709551615"],
            vec!["--warmup"],
        ),
        (
            vec!["bench", "--mode", "spin"],
            vec!["--mode", "allowed: poll block"],
        ),
        (vec!["bench", "--cpus", "0,9999"], vec!["--cpus", "9999"]),
        (vec!["serve", "--listen", "nowhere"], vec!["--listen"]),
        (vec!["bench", "--timeout", "-1"], vec!["--timeout"]),
    ] {
        let o = commperf(&args);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
        assert_eq!(
            e.trim_end().lines().count(),
            1,
            "{args:?}: one line, got {e:?}"
        );
        for n in needles {
            assert!(e.contains(n), "{args:?}: {e:?} should mention {n}");
        }
    }
}

/// Every option that sizes memory (a buffer, a sample vector, a trace ring) has a bound, and
/// 2^40 and 2^62 are refused at parse time, before any allocation: exit 2, one line naming the
/// option and the bound (not "memory allocation of … bytes failed" and a backtrace in both
/// processes, as `monitor run --trace 1000000000` did).
#[test]
fn options_that_size_memory_are_bounded_and_refused_at_parse_time() {
    for v in ["1099511627776", "4611686018427387904"] {
        for (args, option, bound) in [
            (
                &["monitor", "run", "-t", "shm", "--trace"][..],
                "--trace",
                "0..=10000000",
            ),
            (
                &["monitor", "run", "-t", "shm", "--rounds"][..],
                "--rounds",
                "1..=1000",
            ),
            (
                &["monitor", "run", "-t", "shm", "--iters"][..],
                "--iters",
                "100000000",
            ),
            (
                &["monitor", "run", "-t", "shm", "--window"][..],
                "--window",
                "1..=65536",
            ),
            (
                &["monitor", "run", "-t", "shm", "--sizes"][..],
                "--sizes",
                "1073741824 bytes (1G)",
            ),
            (
                &["emulate", "calibrate", "-t", "shm", "--iters"][..],
                "--iters",
                "100000000",
            ),
            (
                &["emulate", "calibrate", "-t", "shm", "--cost-iters"][..],
                "--cost-iters",
                "0..=100000000",
            ),
            (
                &["emulate", "calibrate", "-t", "shm", "--sizes"][..],
                "--sizes",
                "1073741824 bytes (1G)",
            ),
            (
                &["bench", "-t", "shm", "--iters"][..],
                "--iters",
                "100000000",
            ),
            (
                &["bench", "-t", "shm", "--warmup"][..],
                "--warmup",
                "100000000",
            ),
            (
                &["calibrate", "-t", "shm", "--iters"][..],
                "--iters",
                "100000000",
            ),
        ] {
            let mut all = args.to_vec();
            all.push(v);
            let o = commperf(&all);
            let e = stderr(&o);
            assert_eq!(o.status.code(), Some(2), "{all:?}: {e}");
            assert_eq!(
                e.trim_end().lines().count(),
                1,
                "{all:?}: one line, got {e:?}"
            );
            assert!(
                e.contains(option) && e.contains(bound) && e.contains(v),
                "{all:?}: {e:?} should name {option}, {v} and the bound {bound}"
            );
        }
    }
}

#[test]
fn validate_reports_where_a_byte_was_corrupted() {
    let o = Command::new(exe())
        .args([
            "bench",
            "latency",
            "-t",
            "uds",
            "--sizes",
            "64",
            "--iters",
            "20",
            "--validate",
            "--inject-corruption",
            "5:3",
        ])
        .output()
        .unwrap();
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(e.contains("message 5, byte 3"), "{e}");
    assert!(e.contains("latency 64 B over uds"), "{e}");
    // Without corruption the same run validates cleanly.
    let o = commperf(&[
        "bench",
        "latency",
        "bibw",
        "-t",
        "shm",
        "--sizes",
        "1,100000",
        "--iters",
        "20",
        "--validate",
        "--format",
        "json",
    ]);
    let v = json_of(&o);
    assert!(v["results"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["validated"] == true));
}

#[test]
fn noncontig_validates_its_scattered_messages() {
    // The corruption is limited to noncontig runs: the latency baseline each noncontig size measures
    // first stays clean, so only the check of the scattered messages can find this byte.
    for t in ["uds", "shm"] {
        let o = Command::new(exe())
            .args([
                "bench",
                "noncontig",
                "-t",
                t,
                "--sizes",
                "64",
                "--iters",
                "20",
                "--validate",
                "--inject-corruption",
                "5:37:noncontig",
            ])
            .output()
            .unwrap();
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{t}: {e}");
        assert!(e.contains("message 5, byte 37"), "{t}: {e}");
        assert!(
            e.contains(&format!(
                "noncontig 64 B over {t} (poll), 1 segment, vectored"
            )),
            "{t}: {e}"
        );
        assert!(e.contains("found by the client"), "{t}: {e}");
    }
    // Clean: every row, baseline-compared variants for each k, vectored and packed, validated.
    let o = commperf(&[
        "bench",
        "noncontig",
        "-t",
        "uds,shm",
        "--sizes",
        "4,3000",
        "--iters",
        "20",
        "--validate",
        "--format",
        "json",
    ]);
    let v = json_of(&o);
    let rows = v["results"].as_array().unwrap();
    // 4 B: k = 1, 2, 4; 3000 B: k = 1 … 64; each vectored and packed; over two transports.
    assert_eq!(rows.len(), 2 * 2 * (3 + 7), "{rows:?}");
    assert!(rows.iter().all(|r| r["validated"] == true), "{rows:?}");
}

fn children_of(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for t in std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
    {
        if let Ok(s) = std::fs::read_to_string(t.path().join("children")) {
            out.extend(s.split_whitespace().filter_map(|x| x.parse::<u32>().ok()));
        }
    }
    out
}

fn alive(pid: u32) -> bool {
    // A zombie counts as gone.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            !s.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
        .unwrap_or(false)
}

/// What the peer prints on stderr, with `--announce-runs`, as it enters a measurement's loop:
/// `commperf peer PID runs BENCHMARK SIZE B`.
const HOOK: &str = "commperf peer ";

/// A `commperf` run whose stderr lines arrive on a channel as they are written, so a test can
/// wait for the state it needs (the peer in its timed loop) instead of sleeping. Killed and
/// reaped when dropped: a failing test leaves no run behind (its peer dies with it).
struct Watched {
    child: Child,
    lines: Lines,
}

impl Watched {
    fn bench(args: &[&str]) -> Watched {
        let mut child = Command::new(exe())
            .arg("bench")
            .args(args)
            .arg("--announce-runs")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let lines = Lines::follow(child.stderr.take().unwrap());
        Watched { child, lines }
    }

    /// Waits (up to a minute: set-up includes the limits measurement, slow on a loaded machine)
    /// until the peer announces the run `what` (e.g. "latency 262144 B"); returns its pid.
    fn peer_running(&mut self, what: &str) -> u32 {
        let pid = (self.lines)
            .wait_for(Duration::from_secs(60), |l| {
                l.strip_prefix(HOOK)
                    .and_then(|r| r.split_once(" runs "))
                    .filter(|(_, run)| *run == what)
                    .and_then(|(pid, _)| pid.parse::<u32>().ok())
            })
            .unwrap_or_else(|e| panic!("the peer did not start {what} within 60 s: {e}"));
        assert!(
            children_of(self.child.id()).contains(&pid),
            "the announced peer {pid} is not a child of commperf"
        );
        pid
    }

    /// Waits up to `limit` for the run to exit; None if it is still running then.
    fn exit_within(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let mut status = None;
        wait_until(limit, Duration::from_millis(5), || {
            status = self.child.try_wait().unwrap();
            status.is_some()
        });
        status
    }

    /// After exit: everything it wrote on stderr except the announcements.
    fn stderr_without_hook(&mut self) -> String {
        // The reader ends at EOF, once the run and its peer (which shares the pipe) are gone.
        (self.lines.to_end(Duration::from_secs(10)).seen.iter())
            .filter(|l| !l.starts_with(HOOK))
            .map(|l| format!("{l}\n"))
            .collect()
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn killed_peer(transport: &str, mode: &str) {
    let mut c = Watched::bench(&[
        "latency",
        "-t",
        transport,
        "--mode",
        mode,
        "--sizes",
        "256K",
        "--iters",
        "100000000",
    ]);
    // Killed only once it is in the timed loop: a kill during set-up is another test.
    let peer = c.peer_running("latency 262144 B");
    // SAFETY: kill(2) with the pid of our child's child, which cannot have been reaped (and
    // its pid reused) while commperf is still running the measurement with it.
    unsafe { libc::kill(peer as i32, libc::SIGKILL) };
    let status = c.exit_within(Duration::from_secs(5)).unwrap_or_else(|| {
        panic!("{transport}/{mode}: commperf still running 5 s after its peer died")
    });
    let e = c.stderr_without_hook();
    assert_eq!(status.code(), Some(1), "{e}");
    assert!(
        e.contains(&format!("latency 262144 B over {transport} ({mode})")),
        "phase named: {e}"
    );
    assert!(
        e.contains(&peer.to_string()) || e.contains("peer"),
        "peer named: {e}"
    );
    assert_eq!(e.trim_end().lines().count(), 1, "one error line: {e}");
    assert!(!alive(peer), "peer process left behind");
    assert!(
        shm_segments_of(c.child.id()).is_empty(),
        "shared-memory segment left behind"
    );
}

#[test]
fn killed_peer_is_reported_within_5_s_shm_poll() {
    killed_peer("shm", "poll");
}

#[test]
fn killed_peer_is_reported_within_5_s_shm_block() {
    killed_peer("shm", "block");
}

#[test]
fn killed_peer_is_reported_within_5_s_tcp() {
    killed_peer("tcp", "poll");
}

#[test]
fn killed_client_takes_its_peer_along() {
    let mut c = Watched::bench(&[
        "latency",
        "-t",
        "shm",
        "--sizes",
        "8",
        "--iters",
        "100000000",
    ]);
    let peer = c.peer_running("latency 8 B");
    c.child.kill().unwrap();
    c.child.wait().unwrap();
    let start = Instant::now();
    while alive(peer) {
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "orphaned peer {peer} still running"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(shm_segments_of(c.child.id()).is_empty());
}

fn serve(token: &str) -> Served {
    Served::start(token, false, |_| {})
}

#[test]
fn serve_refuses_a_wrong_token_and_keeps_serving() {
    let s = serve("right-token");
    let o = commperf(&[
        "bench", "latency", "-t", "tcp", "--sizes", "8", "--iters", "50", "--peer", &s.addr,
        "--token", "wrong",
    ]);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(
        e.contains("refused the session: wrong session token"),
        "{e}"
    );
    // A client speaking another protocol version is refused with a message, too.
    let mut raw = std::net::TcpStream::connect(&s.addr).unwrap();
    let hello = br#"{"type":"hello","magic":"commperf","protocol":99,"version":"9.9","token":"right-token"}"#;
    raw.write_all(&(hello.len() as u32).to_le_bytes()).unwrap();
    raw.write_all(hello).unwrap();
    let mut len = [0u8; 4];
    raw.read_exact(&mut len).unwrap();
    let mut body = vec![0u8; u32::from_le_bytes(len) as usize];
    raw.read_exact(&mut body).unwrap();
    let reply: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(reply["type"], "refused");
    assert!(
        reply["reason"]
            .as_str()
            .unwrap()
            .contains("protocol version 99"),
        "{reply}"
    );
    drop(raw);
    // A frame announcing 4 GiB is refused without allocating it; the server lives on.
    let mut raw = std::net::TcpStream::connect(&s.addr).unwrap();
    raw.write_all(&u32::MAX.to_le_bytes()).unwrap();
    drop(raw);
    // And the right token still gets a full run, over both tcp and uds.
    let o = commperf(&[
        "bench",
        "latency",
        "bw",
        "-t",
        "tcp,uds",
        "--sizes",
        "8,64K",
        "--iters",
        "50",
        "--peer",
        &s.addr,
        "--token",
        "right-token",
        "--format",
        "json",
    ]);
    let v = json_of(&o);
    assert_eq!(v["results"].as_array().unwrap().len(), 8);
    assert_eq!(v["options"]["launcher"], "peer");
    assert_eq!(v["options"]["peer"], s.addr.as_str());
}

#[test]
fn output_files_and_report_rerendering() {
    let dir = TempDir::new("cli-test");
    let json = dir.join("run.json");
    let o = commperf(&[
        "bench",
        "latency",
        "-t",
        "uds",
        "--sizes",
        "1,2,4",
        "--iters",
        "100",
        "-o",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let table = String::from_utf8(o.stdout).unwrap();
    assert!(
        table.contains("# commperf latency | transport uds | mode poll"),
        "{table}"
    );
    let csv = commperf(&["report", json.to_str().unwrap(), "--format", "csv"]);
    assert!(csv.status.success(), "{}", stderr(&csv));
    let text = String::from_utf8(csv.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with("benchmark,transport,mode,size_bytes"),
        "{text}"
    );
    assert_eq!(lines.len(), 1 + 3, "header and three sizes");
    // An unwritable output is an error naming the file, and leaves nothing behind.
    let bad = dir.join("no-such-dir").join("x.json");
    let o = commperf(&[
        "bench",
        "latency",
        "-t",
        "uds",
        "--sizes",
        "1",
        "--iters",
        "10",
        "-o",
        bad.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains(&bad.display().to_string()),
        "{}",
        stderr(&o)
    );
    // A full disk (/dev/full answers every write with ENOSPC): refused before anything is
    // rendered, naming the file, and the device is still a device afterwards (never replaced
    // by a renamed temporary file).
    let o = commperf(&[
        "report",
        json.to_str().unwrap(),
        "-o",
        "/dev/full",
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(
        e.trim_end() == "commperf: -o /dev/full: no space left on its file system",
        "{e}"
    );
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::metadata("/dev/full")
        .unwrap()
        .file_type()
        .is_char_device());
    // A malformed result file names the file and the position.
    std::fs::write(dir.join("bad.json"), "{\"schema_version\": 1,\n  oops").unwrap();
    let o = commperf(&["report", dir.join("bad.json").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("bad.json") && stderr(&o).contains("2:"),
        "{}",
        stderr(&o)
    );
}

/// Checks that `text` is a well-formed SVG document (an XML declaration, then one `svg` root
/// with the SVG namespace; every tag closed in order; attribute quotes balanced; no stray `<`
/// or `>` in text) and returns the start tags in document order, each as written between `<`
/// and `>`.
fn svg_tags(text: &str) -> Vec<String> {
    let mut rest = text
        .strip_prefix("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n")
        .expect("an XML declaration first");
    let (mut open, mut tags) = (Vec::<String>::new(), Vec::new());
    while let Some(i) = rest.find('<') {
        assert!(
            !rest[..i].contains('>'),
            "stray '>' before {:?}",
            &rest[i..]
        );
        let j = i + rest[i..].find('>').expect("unterminated tag");
        let tag = &rest[i + 1..j];
        assert!(!tag.contains('<'), "'<' inside tag {tag:?}");
        assert_eq!(
            tag.matches('"').count() % 2,
            0,
            "unbalanced quotes in {tag:?}"
        );
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(
                open.pop().as_deref(),
                Some(name),
                "</{name}> closes nothing open"
            );
        } else {
            let name = tag
                .split(|c: char| c.is_whitespace() || c == '/')
                .next()
                .unwrap()
                .to_string();
            assert!(!name.is_empty(), "nameless tag {tag:?}");
            if tags.is_empty() {
                assert_eq!(name, "svg", "the root is svg");
                assert!(
                    tag.contains(r#"xmlns="http://www.w3.org/2000/svg""#),
                    "{tag}"
                );
            } else {
                assert!(!open.is_empty(), "{tag:?} after the root closed");
            }
            if !tag.ends_with('/') {
                open.push(name);
            }
            tags.push(tag.to_string());
        }
        rest = &rest[j + 1..];
    }
    assert!(open.is_empty(), "unclosed: {open:?}");
    assert!(rest.trim().is_empty(), "text after the root: {rest:?}");
    tags
}

/// The (transport, mode, parameter) of each series group, and its polyline's point count.
fn svg_series(tags: &[String]) -> Vec<(String, usize)> {
    let attr = |tag: &str, name: &str| -> String {
        let from = tag
            .find(&format!(" {name}=\""))
            .unwrap_or_else(|| panic!("no {name} in {tag}"))
            + name.len()
            + 3;
        tag[from..from + tag[from..].find('"').unwrap()].to_string()
    };
    let mut out = Vec::new();
    for (i, t) in tags.iter().enumerate() {
        if t.starts_with("g class=\"series\"") {
            let poly = &tags[i + 1];
            assert!(poly.starts_with("polyline "), "{poly}");
            let points = attr(poly, "points");
            for xy in points.split(' ') {
                let (x, y) = xy.split_once(',').unwrap();
                let (x, y): (f64, f64) = (x.parse().unwrap(), y.parse().unwrap());
                assert!(
                    (0.0..=760.0).contains(&x) && (0.0..=440.0).contains(&y),
                    "{xy}"
                );
            }
            let key = format!(
                "{} {} {}",
                attr(t, "data-transport"),
                attr(t, "data-mode"),
                attr(t, "data-parameter")
            );
            out.push((key, points.split(' ').count()));
        }
    }
    out
}

#[test]
fn plot_loggp_writes_seed_004_figure_3_6_as_svg() {
    let dir = TempDir::new("plot-test");
    let (json, bench_svg, report_svg) = (
        dir.join("loggp.json"),
        dir.join("bench.svg"),
        dir.join("report.svg"),
    );
    let p = |x: &std::path::Path| x.to_str().unwrap().to_string();
    let o = commperf(&[
        "bench",
        "loggp",
        "-t",
        "uds,shm",
        "--sizes",
        "4,64,1K",
        // 200 rounds a figure: with 20, a scheduler quantum (0.9 ms) landing on half of one
        // figure's rounds while the other tests' processes share the two CPUs made a PRTT(1)
        // of milliseconds, and the overheads of that size below zero, left out (a CI run).
        "--iters",
        "200",
        "-o",
        &p(&json),
        "--plot-loggp",
        &p(&bench_svg),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains(&format!("wrote {} (svg)", bench_svg.display())));
    let table = String::from_utf8(o.stdout).unwrap();
    for t in ["uds", "shm"] {
        assert!(
            table.contains(&format!(
                "# commperf o_s and o_r against size (after Kutluğ 2000, Figure 3.6) | transport {t} | mode poll"
            )),
            "{table}"
        );
    }
    let o = commperf(&["report", &p(&json), "--plot-loggp", &p(&report_svg)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let svg = std::fs::read_to_string(&report_svg).unwrap();
    let series = svg_series(&svg_tags(&svg));
    assert_eq!(
        series,
        [
            ("uds poll o_s".to_string(), 3),
            ("uds poll o_r".to_string(), 3),
            ("shm poll o_s".to_string(), 3),
            ("shm poll o_r".to_string(), 3),
        ],
        "one polyline per transport, mode and parameter, a point per size"
    );
    assert_eq!(svg.matches("<polyline ").count(), 4);
    for label in [">4</text>", ">64</text>", ">1K</text>"] {
        assert!(svg.contains(label), "size label {label} missing");
    }
    // Re-rendered from the saved file, the same figure to the byte.
    assert_eq!(std::fs::read_to_string(&bench_svg).unwrap(), svg);

    // Results without loggp rows: an error naming both files, printed before any table, and
    // no figure written.
    let lat = dir.join("latency.json");
    let o = commperf(&[
        "bench",
        "latency",
        "-t",
        "uds",
        "--sizes",
        "8",
        "--iters",
        "10",
        "-o",
        &p(&lat),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let none = dir.join("none.svg");
    let o = commperf(&["report", &p(&lat), "--plot-loggp", &p(&none)]);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert_eq!(
        e.trim_end(),
        format!(
            "commperf: --plot-loggp {}: {}: no loggp results to plot (they come from `commperf \
             bench loggp`)",
            none.display(),
            lat.display()
        )
    );
    assert!(o.stdout.is_empty());
    assert!(!none.exists());
    // And a bench that will have none is refused before it runs.
    let o = commperf(&["bench", "latency", "--plot-loggp", &p(&none)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--plot-loggp"), "{}", stderr(&o));
    assert!(!none.exists());
}

#[test]
fn serve_keeps_serving_after_its_stdout_is_closed() {
    let mut s = serve("tok");
    // The script that started the server read the address and went away.
    drop(std::mem::replace(
        &mut s.banner,
        BufReader::new(
            Command::new("true")
                .stdout(Stdio::piped())
                .spawn()
                .unwrap()
                .stdout
                .take()
                .unwrap(),
        ),
    ));
    let o = commperf(&[
        "bench", "latency", "-t", "tcp", "--sizes", "8", "--iters", "50", "--peer", &s.addr,
        "--token", "tok",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        s.child.0.try_wait().unwrap().is_none(),
        "server still running"
    );
}

#[test]
fn loggp_over_real_transports_reports_every_parameter_per_size() {
    let o = commperf(&[
        "bench", "loggp", "-t", "shm,uds", "--sizes", "4,1K,64K", "--format", "json",
    ]);
    let v = json_of(&o);
    let rows = v["results"].as_array().unwrap();
    assert_eq!(rows.len(), 2 * 3);
    let num = |r: &Value, k: &str| r[k].as_f64();
    for r in rows {
        assert_eq!(r["benchmark"], "loggp");
        assert!(f(r, "p50_us") > 0.0, "{r}");
        // No figure is ever negative: what came out below zero beyond noise is absent, with a
        // note on the block saying why.
        let figures = [
            "o_s_us",
            "o_r_us",
            "gap_us",
            "o_s_fixed_us",
            "O_s_us_per_byte",
            "o_r_fixed_us",
            "O_r_us_per_byte",
            "g_us",
            "G_us_per_byte",
            "L_us",
            "overlap_us",
            "model_us",
        ];
        for k in figures {
            assert!(num(r, k).is_none_or(|v| v >= 0.0), "{k} in {r}");
        }
        // L and the overlap are never both above zero.
        assert!(
            !(num(r, "L_us").unwrap_or(0.0) > 0.0 && num(r, "overlap_us").unwrap_or(0.0) > 0.0),
            "{r}"
        );
        // LogGOPS's one-way time is the piece's parameters at this size.
        if let Some(model) = num(r, "model_us") {
            let s = f(r, "size_bytes");
            let per_byte = num(r, "O_r_us_per_byte")
                .unwrap_or(0.0)
                .max(num(r, "G_us_per_byte").unwrap_or(0.0));
            let want = f(r, "o_s_fixed_us") + f(r, "L_us") + f(r, "o_r_fixed_us") + per_byte * s
                - f(r, "overlap_us");
            assert!((model - want).abs() <= 1e-9 * want.max(1.0), "{r}");
        }
    }
    for t in ["shm", "uds"] {
        let block: Vec<&Value> = rows.iter().filter(|r| r["transport"] == t).collect();
        // L is size-independent: one value per protocol piece.
        for a in &block {
            for b in &block {
                if a["piece_from_bytes"] == b["piece_from_bytes"] {
                    assert_eq!(a["L_us"], b["L_us"], "{a} {b}");
                }
            }
        }
        // The smallest size's piece has its fixed costs (4 B shows no per-byte cost to hide
        // them), and every absent figure is explained.
        assert!(
            num(block[0], "L_us").is_some() && num(block[0], "g_us").is_some(),
            "{block:?}"
        );
        let notes: usize = block
            .iter()
            .map(|r| r["notes"].as_array().map_or(0, Vec::len))
            .sum();
        let absent = block
            .iter()
            .filter(|r| {
                ["o_s_us", "o_r_us", "L_us", "g_us"]
                    .iter()
                    .any(|k| r[*k].is_null())
            })
            .count();
        assert!(absent == 0 || notes > 0, "{block:?}");
    }
    let o2 = commperf(&[
        "bench", "loggp", "-t", "uds", "--sizes", "8", "--format", "json",
    ]);
    assert_eq!(o2.status.code(), Some(2), "one size cannot give g and G");
    assert!(stderr(&o2).contains("--sizes: loggp fits g and G over message sizes"));
    // The model is for tests only: refused with a reason, and never offered.
    let o3 = commperf(&["bench", "-t", "model"]);
    assert_eq!(o3.status.code(), Some(2));
    let e = stderr(&o3);
    assert!(e.contains("'model' is the in-process LogGP model"), "{e}");
    let allowed = e.split("(allowed: ").nth(1).unwrap_or_default();
    assert!(
        allowed.starts_with("shm, tcp") && !allowed.contains("model"),
        "{e}"
    );
    let e = stderr(&commperf(&["bench", "-t", "foo"]));
    let allowed = e.split("(allowed: ").nth(1).unwrap_or_default();
    assert!(
        allowed.starts_with("shm, tcp") && !allowed.contains("model"),
        "{e}"
    );
}

#[test]
fn all_quick_runs_every_benchmark_with_a_tenth_of_the_iterations() {
    let o = commperf(&["bench", "all", "--quick", "-t", "uds", "--format", "json"]);
    let v = json_of(&o);
    let rows = v["results"].as_array().unwrap();
    let names: std::collections::BTreeSet<&str> = rows
        .iter()
        .map(|r| r["benchmark"].as_str().unwrap())
        .collect();
    let want = [
        "bibw",
        "blocking",
        "bufmgmt",
        "bw",
        "conns",
        "cq",
        "latency",
        "loggp",
        "mr",
        "noncontig",
    ];
    assert_eq!(names.into_iter().collect::<Vec<_>>(), want);
    let lat4 = rows
        .iter()
        .find(|r| r["benchmark"] == "latency" && r["size_bytes"] == 4)
        .unwrap();
    assert_eq!(
        (lat4["iterations"].as_u64(), lat4["warmup"].as_u64()),
        (Some(1000), Some(100))
    );
    // Every benchmark but conns and cq (16-byte messages by definition) runs the quick ladder.
    let sizes: std::collections::BTreeSet<u64> = rows
        .iter()
        .filter(|r| r["benchmark"] != "conns" && r["benchmark"] != "cq")
        .map(|r| r["size_bytes"].as_u64().unwrap())
        .collect();
    assert_eq!(
        sizes.into_iter().collect::<Vec<_>>(),
        vec![4, 64, 4096, 65536, 1 << 20]
    );
    // The table ends with Kutluğ's (2000) Table 3.1 layout at 4 B.
    let t = commperf(&["bench", "loggp", "--quick", "-t", "uds"]);
    let text = String::from_utf8(t.stdout).unwrap();
    assert!(
        text.contains(
            "# commperf loggp summary at 4 B (after Kutluğ 2000, Table 3.1 and Figure 3.5)"
        ),
        "{text}"
    );
}

#[test]
fn conns_beyond_the_descriptor_limit_is_refused_with_the_limit() {
    let o = Command::new("sh")
        .args([
            "-c",
            &format!(
                "ulimit -n 256 && exec {} bench conns --conns-max 1024",
                exe()
            ),
        ])
        .output()
        .unwrap();
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(
        e.contains("--conns-max: 1024 endpoints need about 1215 file descriptors"),
        "{e}"
    );
    assert!(
        e.contains("may open 256") && e.contains("ulimit -n 1215"),
        "{e}"
    );
    // An option for a transport the run does not use is refused up front, naming both.
    let o = commperf(&["bench", "latency", "-t", "uds,shm", "--uring-sqpoll"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--uring-sqpoll applies to the io_uring transports"),
        "{}",
        stderr(&o)
    );
    let o = commperf(&["bench", "conns", "--mode", "block"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--mode: conns sweeps its endpoints by polling"));
}
