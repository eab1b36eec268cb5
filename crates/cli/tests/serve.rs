//! `commperf serve` against hostile and slow clients: real server processes, real sockets and
//! shared memory. A hostile client here holds the right token and speaks the control protocol
//! by hand, so nothing on its side checks what it asks for.

use commperf_testkit::{exe, shm_segments_of};
use commperf_transport::bounds::{self, MAX_PENDING};
use commperf_transport::launch::{self, Control, DataSpec};
use commperf_transport::{Mode, TransportKind};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The tests that time a handshake or flood a server take turns: on a 2-core machine they
/// would otherwise measure each other.
static HEAVY: Mutex<()> = Mutex::new(());

fn heavy() -> std::sync::MutexGuard<'static, ()> {
    HEAVY.lock().unwrap_or_else(|p| p.into_inner())
}

const TOKEN: &str = "0123456789abcdef";

/// A running `commperf serve`, killed and reaped on drop.
struct Server {
    child: Child,
    addr: String,
    /// The server's stderr, line by line.
    log: Receiver<String>,
    /// Everything read from `log` so far, for failure messages.
    seen: Vec<String>,
    /// Kept open: the server's stdout stays a live pipe for as long as it runs.
    _banner: BufReader<std::process::ChildStdout>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    /// Starts a server (with the further options `extra`) and waits for its banner, the line
    /// that says it accepts clients.
    fn start(extra: &[&str]) -> Server {
        let mut cmd = Command::new(exe());
        cmd.args(["serve", "--listen", "127.0.0.1:0", "--token", TOKEN])
            .args(extra);
        Self::start_with(cmd)
    }

    /// Starts `cmd` (which execs `commperf serve`) and waits for its banner.
    fn start_with(mut cmd: Command) -> Server {
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let err = child.stderr.take().unwrap();
        let (tx, log) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut first = String::new();
        let mut banner = BufReader::new(child.stdout.take().unwrap());
        banner.read_line(&mut first).unwrap();
        let addr = first.trim().rsplit(' ').next().unwrap().to_string();
        assert!(addr.starts_with("127.0.0.1:"), "banner: {first:?}");
        Server {
            child,
            addr,
            log,
            seen: Vec::new(),
            _banner: banner,
        }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits (up to `within`) for a line of the server's log that contains `what`.
    fn wait_log(&mut self, what: &str, within: Duration) -> String {
        let end = Instant::now() + within;
        loop {
            let left = end.saturating_duration_since(Instant::now());
            match self.log.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if line.contains(what) {
                        return line;
                    }
                }
                Err(_) => panic!(
                    "no log line with {what:?} within {within:?}; the server said:\n{}",
                    self.seen.join("\n")
                ),
            }
        }
    }

    fn still_running(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    /// Descriptors the server holds: (all, sockets).
    fn fds(&self) -> (usize, usize) {
        let mut all = 0;
        let mut sockets = 0;
        for e in std::fs::read_dir(format!("/proc/{}/fd", self.pid()))
            .unwrap()
            .flatten()
        {
            all += 1;
            if std::fs::read_link(e.path())
                .map(|t| t.to_string_lossy().starts_with("socket:"))
                .unwrap_or(false)
            {
                sockets += 1;
            }
        }
        (all, sockets)
    }

    fn threads(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/task", self.pid()))
            .unwrap()
            .count()
    }

    /// Waits until `ok(self)` holds, up to `within`.
    fn wait_until(&self, within: Duration, what: &str, ok: impl Fn(&Server) -> bool) {
        let end = Instant::now() + within;
        while !ok(self) {
            assert!(
                Instant::now() < end,
                "{what}: not reached within {within:?} (fds {:?}, threads {})",
                self.fds(),
                self.threads()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// A short real benchmark against this server.
    fn bench(&self) -> Output {
        Command::new(exe())
            .args([
                "bench", "latency", "-t", "tcp", "--sizes", "8", "--iters", "20", "--peer",
                &self.addr, "--token", TOKEN,
            ])
            .output()
            .unwrap()
    }

    /// A short benchmark succeeds: the server is still serving.
    fn assert_serves(&mut self) {
        assert!(self.still_running(), "server died");
        let o = self.bench();
        assert!(
            o.status.success(),
            "a correct client was not served: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

/// A client that speaks the control protocol by hand.
fn raw_hello(addr: &str) -> Control {
    let s = TcpStream::connect(addr).unwrap();
    let mut c = Control::new(Box::new(s), "server".into());
    c.set_timeout(Duration::from_secs(30)).unwrap();
    c.send(&json!({
        "type": "hello", "magic": "commperf", "protocol": launch::PROTOCOL_VERSION,
        "version": "hostile", "token": TOKEN
    }))
    .unwrap();
    let w: Value = c.recv().unwrap();
    assert_eq!(w["type"], "welcome", "{w}");
    c
}

fn data_request(overrides: Value) -> Value {
    let mut v = json!({
        "type": "data", "transport": "shm", "mode": "poll", "max_message": 4096,
        "idle_timeout_ms": 60000, "shm_ring_bytes": 1 << 20, "shm_frag_bytes": 64 << 10,
        "shm_single_copy_from": null, "extra": false, "uring_sqpoll": false
    });
    for (k, x) in overrides.as_object().unwrap() {
        v[k] = x.clone();
    }
    v
}

fn run_request(overrides: Value) -> Value {
    let mut v = json!({
        "type": "run", "benchmark": "latency", "size": 8, "iterations": 10, "warmup": 1,
        "window": 1, "validate": false, "block_spins": 0, "segments": 0, "packed": false,
        "in_place": false
    });
    for (k, x) in overrides.as_object().unwrap() {
        v[k] = x.clone();
    }
    v
}

/// The server's answer to `request`, which must be a refusal naming `expect`; the session
/// then ends (the server closes the connection).
fn refused(c: &mut Control, request: &Value, expect: &str) -> String {
    c.send(request).unwrap();
    let r: Value = c.recv().unwrap();
    assert_eq!(r["type"], "error", "{request} was not refused: {r}");
    let m = r["message"].as_str().unwrap().to_string();
    assert!(m.contains(expect), "{m:?} does not name {expect:?}");
    assert!(!m.contains('\n'), "one line: {m:?}");
    assert!(
        c.recv::<Value>().is_err(),
        "the session goes on after a refusal"
    );
    m
}

/// A tcp data channel carrying up to `max_message` bytes, set up as a correct client does.
fn with_data_channel(addr: &str, max_message: usize) -> (Control, launch::AnyEndpoint) {
    let mut c = raw_hello(addr);
    let spec = DataSpec::new(TransportKind::Tcp, Mode::Poll, max_message);
    let ep = launch::connect_data(&mut c, &spec, TOKEN).unwrap();
    (c, ep)
}

#[test]
fn every_data_channel_size_beyond_its_bound_is_refused_and_the_server_serves_on() {
    let mut s = Server::start(&[]);
    let frag_max = bounds::max_shm_frag_bytes(1 << 20);
    let cases = [
        (
            json!({"shm_ring_bytes": bounds::MAX_SHM_RING_BYTES + 1}),
            format!(
                "shm_ring_bytes = {} is out of bounds: at most {}",
                bounds::MAX_SHM_RING_BYTES + 1,
                bounds::MAX_SHM_RING_BYTES
            ),
        ),
        (
            json!({"shm_frag_bytes": frag_max + 1}),
            format!(
                "shm_frag_bytes = {} is out of bounds: between 64 and {frag_max}",
                frag_max + 1
            ),
        ),
        (
            json!({"shm_single_copy_from": bounds::MAX_SIZE + 1}),
            format!(
                "shm_single_copy_from = {} is out of bounds: at most {}",
                bounds::MAX_SIZE + 1,
                bounds::MAX_SIZE
            ),
        ),
        (
            json!({"transport": "tcp", "max_message": bounds::MAX_SIZE + 1}),
            format!(
                "max_message = {} is out of bounds: at most {}",
                bounds::MAX_SIZE + 1,
                bounds::MAX_SIZE
            ),
        ),
        (
            json!({"transport": "uds", "idle_timeout_ms": bounds::MAX_IDLE_TIMEOUT_MS + 1}),
            format!(
                "idle_timeout_ms = {} is out of bounds: between 1 and {}",
                bounds::MAX_IDLE_TIMEOUT_MS + 1,
                bounds::MAX_IDLE_TIMEOUT_MS
            ),
        ),
        (
            json!({"extra": true, "shm_ring_bytes": bounds::MAX_EXTRA_SHM_RING_BYTES + 1}),
            format!(
                "shm_ring_bytes (held-open channel) = {} is out of bounds: at most {}",
                bounds::MAX_EXTRA_SHM_RING_BYTES + 1,
                bounds::MAX_EXTRA_SHM_RING_BYTES
            ),
        ),
    ];
    for (over, expect) in cases {
        let mut c = raw_hello(&s.addr);
        refused(&mut c, &data_request(over), &expect);
        let line = s.wait_log("failed", Duration::from_secs(10));
        assert!(
            line.contains(&expect),
            "the server's log names it too: {line}"
        );
    }
    assert!(
        shm_segments_of(s.pid()).is_empty(),
        "nothing was created for a refused request"
    );
    s.assert_serves();
}

#[test]
fn every_run_parameter_beyond_its_bound_is_refused_and_the_server_serves_on() {
    let mut s = Server::start(&[]);
    let idle_ns = 60_000u64 * 1_000_000;
    let prtt = |n: u64, c: f64, d: f64| json!({"benchmark": "loggp", "prtt": {"n": n, "client_delay_ns": c, "server_delay_ns": d}});
    let cases = [
        (
            json!({"window": bounds::MAX_WINDOW + 1}),
            format!("window = {} is out of bounds", bounds::MAX_WINDOW + 1),
        ),
        (
            json!({"iterations": bounds::MAX_ITERS + 1}),
            format!(
                "iterations = {} is out of bounds: at most {}",
                bounds::MAX_ITERS + 1,
                bounds::MAX_ITERS
            ),
        ),
        (
            json!({"warmup": bounds::MAX_ITERS + 1}),
            format!("warmup = {} is out of bounds", bounds::MAX_ITERS + 1),
        ),
        (
            json!({"size": 4097}),
            "size = 4097 is out of bounds: at most 4096".to_string(),
        ),
        (
            json!({"benchmark": "blocking", "mode": "block", "block_spins": bounds::MAX_BLOCK_SPINS + 1}),
            format!(
                "block_spins = {} is out of bounds: at most {}",
                bounds::MAX_BLOCK_SPINS + 1,
                bounds::MAX_BLOCK_SPINS
            ),
        ),
        (
            json!({"benchmark": "noncontig", "size": 4096, "segments": bounds::MAX_SEGMENTS + 1}),
            format!(
                "segments = {} is out of bounds: at most {}",
                bounds::MAX_SEGMENTS + 1,
                bounds::MAX_SEGMENTS
            ),
        ),
        (
            prtt(bounds::MAX_PRTT_N as u64 + 1, 0.0, 0.0),
            format!(
                "prtt.n = {} is out of bounds: between 1 and {}",
                bounds::MAX_PRTT_N + 1,
                bounds::MAX_PRTT_N
            ),
        ),
        (
            prtt(10, idle_ns as f64 + 1.0, 0.0),
            format!(
                "prtt.client_delay_ns = {} is out of bounds: between 0 and {idle_ns}",
                idle_ns + 1
            ),
        ),
        // The issue's hang: a busy-wait that would never end.
        (
            prtt(10, 0.0, 1e300),
            "prtt.server_delay_ns = 1e300 is out of bounds".to_string(),
        ),
    ];
    for (over, expect) in cases {
        let (mut c, _ep) = with_data_channel(&s.addr, 4096);
        refused(&mut c, &run_request(over), &expect);
        s.wait_log("failed", Duration::from_secs(10));
    }
    s.assert_serves();
}

#[test]
fn a_session_may_not_hold_more_memory_than_its_bound() {
    let mut s = Server::start(&[]);
    // 1 GiB message buffers are within bounds; bufmgmt's two pools of fresh 1 GiB buffers on
    // top of them are not.
    let (mut c, _ep) = with_data_channel(&s.addr, bounds::MAX_SIZE as usize);
    let m = refused(
        &mut c,
        &run_request(json!({"benchmark": "bufmgmt", "size": bounds::MAX_SIZE})),
        "session memory = ",
    );
    assert!(
        m.contains(&format!("at most {}", bounds::MAX_SESSION_BYTES)),
        "{m}"
    );
    let total: u64 = m
        .split("session memory = ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap();
    assert!(total > bounds::MAX_SESSION_BYTES, "{m}");
    s.assert_serves();
}

#[test]
fn the_number_of_held_open_channels_is_bounded_by_the_servers_descriptors() {
    // A server that may open 300 descriptors keeps 2 × MAX_PENDING + 64 for its own use; each
    // tcp channel takes one.
    let limit = 300u64;
    let bound = (limit - (2 * MAX_PENDING as u64 + 64)) as usize;
    let mut sh = Command::new("sh");
    sh.args([
        "-c",
        &format!(
            "ulimit -n {limit} && exec {} serve --listen 127.0.0.1:0 --token {TOKEN}",
            exe()
        ),
    ]);
    let mut s = Server::start_with(sh);
    let (mut c, _ep) = with_data_channel(&s.addr, 4096);
    let extra = DataSpec::new(TransportKind::Tcp, Mode::Poll, 4096).held_open();
    let mut extras = Vec::new();
    for _ in 0..bound {
        extras.push(launch::connect_data(&mut c, &extra, TOKEN).unwrap());
    }
    let request = json!(launch::SetupMsg::Data(extra));
    refused(
        &mut c,
        &request,
        &format!(
            "extra data channels = {} is out of bounds: at most {bound} (this process may open \
             {limit} descriptors",
            bound + 1
        ),
    );
    drop(extras);
    s.assert_serves();
}

#[test]
fn a_2_tib_ring_is_refused_without_mapping_anything() {
    let mut s = Server::start(&[]);
    let mut c = raw_hello(&s.addr);
    let t = Instant::now();
    refused(
        &mut c,
        &data_request(json!({"shm_ring_bytes": 1u64 << 40})),
        "shm_ring_bytes = 1099511627776 is out of bounds: at most 67108864 (64 MiB)",
    );
    let took = t.elapsed();
    let status = std::fs::read_to_string(format!("/proc/{}/status", s.pid())).unwrap();
    let kib = |key: &str| -> u64 {
        status
            .lines()
            .find(|l| l.starts_with(key))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap()
    };
    // A mapping of 2 TiB, even one never touched, would show in the peak of the address space.
    let (peak, rss) = (kib("VmPeak:"), kib("VmHWM:"));
    eprintln!("2 TiB ring refused in {took:?}; server VmPeak {peak} KiB, VmHWM {rss} KiB");
    assert!(
        peak < 64 << 20,
        "the server's address space peaked at {peak} KiB"
    );
    assert!(
        rss < 1 << 20,
        "the server's resident set peaked at {rss} KiB"
    );
    assert!(shm_segments_of(s.pid()).is_empty());
    s.assert_serves();
}

/// The server's shm segment the client would be offered, created with the test hook
/// (`--pause-shm-create`) stopping at `point`; returns once the hook says it is there.
fn server_paused_in_shm_create(point: &str) -> (Server, Control) {
    let mut s = Server::start(&["--pause-shm-create", point]);
    let mut c = raw_hello(&s.addr);
    // The largest ring a client may ask for: a segment of 128 MiB, pre-faulted.
    c.send(&data_request(
        json!({"shm_ring_bytes": bounds::MAX_SHM_RING_BYTES}),
    ))
    .unwrap();
    let line = s.wait_log(
        &format!(" bytes {point} in process"),
        Duration::from_secs(30),
    );
    let bytes: usize = line
        .split("shm segment of ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap();
    assert!(bytes > 2 * bounds::MAX_SHM_RING_BYTES, "{line}");
    (s, c)
}

#[test]
fn a_server_killed_while_filling_a_segment_leaves_nothing_in_dev_shm() {
    let (mut s, _c) = server_paused_in_shm_create("filled");
    let pid = s.pid();
    // The segment exists, sized and pre-faulted, but has no name yet.
    let unnamed = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read_link(e.path()).ok())
        .filter(|t| t.to_string_lossy().starts_with("/dev/shm/#"))
        .count();
    assert_eq!(unnamed, 1, "one unnamed segment is being filled");
    assert!(
        shm_segments_of(pid).is_empty(),
        "{:?}",
        shm_segments_of(pid)
    );
    s.child.kill().unwrap(); // SIGKILL
    s.child.wait().unwrap();
    assert!(
        shm_segments_of(pid).is_empty(),
        "a killed creator left {:?}",
        shm_segments_of(pid)
    );
}

#[test]
fn a_segment_named_before_its_peer_attached_is_removed_when_the_next_server_starts() {
    let (mut s, _c) = server_paused_in_shm_create("named");
    let pid = s.pid();
    let left = shm_segments_of(pid);
    assert_eq!(left.len(), 1, "the name the client would be offered");
    s.child.kill().unwrap(); // SIGKILL
    s.child.wait().unwrap();
    // Its creator is dead: the next server removes it before it says it is listening (and
    // logs it, unless a server of a test running beside this one got there first).
    let _next = Server::start(&[]);
    assert!(
        shm_segments_of(pid).is_empty(),
        "{:?}",
        shm_segments_of(pid)
    );
}

/// Sends a valid hello one byte per second until told to stop or the server closes.
fn trickle(addr: &str) -> (TcpStream, Arc<std::sync::atomic::AtomicBool>) {
    use std::sync::atomic::{AtomicBool, Ordering};
    let s = TcpStream::connect(addr).unwrap();
    let mut w = s.try_clone().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let stop2 = stop.clone();
    std::thread::spawn(move || {
        let body = json!({
            "type": "hello", "magic": "commperf", "protocol": launch::PROTOCOL_VERSION,
            "version": "slow", "token": TOKEN
        })
        .to_string();
        let mut frame = (body.len() as u32).to_le_bytes().to_vec();
        frame.extend_from_slice(body.as_bytes());
        for b in frame {
            if stop2.load(Ordering::Relaxed) || w.write_all(&[b]).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_secs(1));
        }
    });
    (s, stop)
}

#[test]
fn a_correct_client_is_served_within_1_s_beside_50_idle_and_5_trickling_connections() {
    let _turn = heavy();
    let mut s = Server::start(&[]);
    let (_, base_sockets) = s.fds();
    let strangers_came = Instant::now();
    let idle: Vec<TcpStream> = (0..50)
        .map(|_| TcpStream::connect(&s.addr).unwrap())
        .collect();
    let tricklers: Vec<_> = (0..5).map(|_| trickle(&s.addr)).collect();
    // All 55 are being authenticated (two descriptors each) before the correct client asks.
    s.wait_until(Duration::from_secs(20), "55 pending handshakes", |s| {
        s.fds().1 >= base_sockets + 2 * 55
    });
    let t = Instant::now();
    let c = raw_hello(&s.addr);
    let served = t.elapsed();
    eprintln!("handshake completed {served:?} after asking, beside 50 idle and 5 trickling");
    assert!(
        strangers_came.elapsed() < bounds::HANDSHAKE_DEADLINE,
        "too slow to test anything: the strangers' deadline passed before the client asked"
    );
    assert!(
        served < Duration::from_secs(1),
        "a correct client waited {served:?}"
    );
    // That session ends with its client; then a real benchmark, with the strangers still there.
    drop(c);
    s.wait_log("failed", Duration::from_secs(10));
    let t = Instant::now();
    let o = s.bench();
    let took = t.elapsed();
    eprintln!("a whole `bench latency` (process, calibration, run) took {took:?}");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // One connection at a time with 10 s each (the old server) would take 550 s.
    assert!(took < Duration::from_secs(10), "bench took {took:?}");
    for (_, stop) in &tricklers {
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
    drop(idle);
}

#[test]
fn a_trickling_client_is_cut_off_at_the_handshake_deadline() {
    let mut s = Server::start(&[]);
    let t = Instant::now();
    let (mut r, _stop) = trickle(&s.addr);
    r.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    // The server's last word, then the end of the stream.
    let mut got = Vec::new();
    let _ = r.read_to_end(&mut got);
    let cut = t.elapsed();
    eprintln!("trickling client cut off after {cut:?}");
    let deadline = bounds::HANDSHAKE_DEADLINE;
    assert!(
        cut >= deadline - Duration::from_millis(500),
        "cut off early: {cut:?}"
    );
    assert!(
        cut < deadline + Duration::from_secs(4),
        "cut off late: {cut:?}"
    );
    let reply: Value = serde_json::from_slice(&got[4..]).unwrap();
    assert_eq!(reply["type"], "refused");
    assert!(
        reply["reason"]
            .as_str()
            .unwrap()
            .contains("handshake not completed within its 5 s deadline"),
        "{reply}"
    );
    s.wait_log("5 s deadline", Duration::from_secs(5));
    s.assert_serves();
}

#[test]
fn a_second_client_is_told_the_server_is_busy_and_served_once_the_session_ends() {
    let mut s = Server::start(&[]);
    let holder = raw_hello(&s.addr);
    let line = s.wait_log("session with", Duration::from_secs(10));
    let who = line
        .split("session with client ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .unwrap()
        .to_string();
    let t = Instant::now();
    let o = s.bench();
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(
        e.contains(&format!(
            "refused the session: busy: a session with client {who} is running"
        )),
        "{e}"
    );
    assert_eq!(e.lines().count(), 1, "one line: {e}");
    assert!(
        t.elapsed() < Duration::from_secs(10),
        "told at once, not queued"
    );
    drop(holder);
    s.wait_log(
        &format!("session with client {who} failed"),
        Duration::from_secs(10),
    );
    s.assert_serves();
}

/// Lets this process hold `n` descriptors (and the servers it starts, which inherit it).
fn raise_fd_limit(n: u64) -> u64 {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit on a struct we own.
    unsafe {
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut r);
        if r.rlim_cur < n {
            r.rlim_cur = n.min(r.rlim_max);
            libc::setrlimit(libc::RLIMIT_NOFILE, &r);
        }
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut r);
    }
    r.rlim_cur
}

#[test]
fn a_flood_of_1000_idle_connections_holds_only_the_capped_number() {
    let _turn = heavy();
    let flood = 1000;
    let limit = raise_fd_limit(flood as u64 + 200);
    assert!(
        limit >= flood as u64 + 100,
        "this test needs {flood} descriptors; the hard limit is {limit}"
    );
    let mut s = Server::start(&[]);
    let (base_fds, _) = s.fds();
    let base_threads = s.threads();
    let conns: Vec<TcpStream> = (0..flood)
        .map(|_| TcpStream::connect(&s.addr).unwrap())
        .collect();
    // The server accepted them all, keeping the newest MAX_PENDING: the older are closed. The
    // last one closed goes when the last one arrives.
    let mut b = [0u8; 1];
    for i in [0, flood - MAX_PENDING - 1] {
        let mut c = &conns[i];
        c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        assert_eq!(c.read(&mut b).unwrap_or(0), 0, "connection {i} is closed");
    }
    let last = conns.last().unwrap();
    last.set_nonblocking(true).unwrap();
    let still_open = matches!(
        (&*last).read(&mut b),
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock
    );
    assert!(still_open, "the newest connection is still waiting");
    // What the server holds settles at the cap's worth (the closed connections' threads leave
    // as soon as they run).
    let held = |s: &Server| {
        s.fds().0 <= base_fds + 2 * MAX_PENDING + 2 && s.threads() <= base_threads + MAX_PENDING
    };
    s.wait_until(Duration::from_secs(4), "at most the cap held", held);
    let (fds, threads) = (s.fds().0, s.threads());
    eprintln!(
        "after {flood} idle connections the server holds {fds} descriptors ({base_fds} before) \
         and {threads} threads ({base_threads} before)"
    );
    s.wait_log(
        "the one that waited longest makes room",
        Duration::from_secs(5),
    );
    // A correct client still gets in at once.
    let t = Instant::now();
    let c = raw_hello(&s.addr);
    let served = t.elapsed();
    eprintln!("handshake completed {served:?} after asking, beside {MAX_PENDING} pending");
    assert!(served < Duration::from_secs(1), "waited {served:?}");
    drop(c);
    drop(conns);
    // Nothing leaks: every handshake thread and descriptor goes with its connection.
    s.wait_until(Duration::from_secs(30), "back to the start", |s| {
        s.fds().0 <= base_fds && s.threads() <= base_threads
    });
    s.assert_serves();
}

#[test]
fn the_client_refuses_what_a_server_would_refuse_before_connecting() {
    // No server listens there: each refusal comes from the client's own check.
    let nowhere = "127.0.0.1:9";
    let cases: [(&[&str], &str); 4] = [
        (
            &["--spin", "1000001"],
            "--spin: must be at most 1000000 (got 1000001)",
        ),
        (
            &["--shm-single-copy", "2G"],
            "--shm-single-copy: must be at most 1073741824",
        ),
        (&["bufmgmt", "--sizes", "1G"], "--sizes: session memory = "),
        (
            &["--timeout", "0.0001"],
            "'0.0001' is not a number of seconds from 0.001 to 86400",
        ),
    ];
    for (args, expect) in cases {
        let o = Command::new(exe())
            .arg("bench")
            .args(args)
            .args(["--peer", nowhere, "--token", TOKEN])
            .output()
            .unwrap();
        let e = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
        assert!(e.contains(expect), "{args:?}: {e}");
    }
}

#[test]
fn serve_refuses_a_token_its_data_channels_cannot_carry() {
    let long = "x".repeat(bounds::MAX_TOKEN + 1);
    let o = Command::new(exe())
        .args(["serve", "--listen", "127.0.0.1:0", "--token", &long])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("--token: must be 1 to 64 bytes long (got 65)")
    );
}

/// A hand-made hello with these fields; returns the connection, its own address and the
/// server's answer.
fn hello_with(addr: &str, magic: &str, protocol: u32, version: &str) -> (Control, String, Value) {
    let s = TcpStream::connect(addr).unwrap();
    let me = s.local_addr().unwrap().to_string();
    let mut c = Control::new(Box::new(s), "server".into());
    c.set_timeout(Duration::from_secs(30)).unwrap();
    c.send(&json!({
        "type": "hello", "magic": magic, "protocol": protocol, "version": version, "token": TOKEN
    }))
    .unwrap();
    let r: Value = c.recv().unwrap();
    (c, me, r)
}

/// The log lines the server writes until `within` passes with nothing new.
fn lines_until_quiet(s: &mut Server, within: Duration) -> Vec<String> {
    let mut got = Vec::new();
    while let Ok(l) = s.log.recv_timeout(within) {
        s.seen.push(l.clone());
        got.push(l);
    }
    got
}

#[test]
fn a_forged_log_line_in_a_magic_or_version_is_printed_escaped_on_its_one_line() {
    let mut s = Server::start(&[]);
    let forged = "x\n commperf serve: session with client 6.6.6.6:1 started\x1b[2K";
    let escaped = r"x\n commperf serve: session with client 6.6.6.6:1 started\u{1b}[2K";
    // A wrong magic, then a right magic with the forged version and a protocol from the future.
    let (_c1, me1, r1) = hello_with(&s.addr, forged, launch::PROTOCOL_VERSION, "1");
    assert_eq!(r1["type"], "refused");
    assert_eq!(
        r1["reason"],
        format!("not a commperf client (magic '{escaped}')")
    );
    let (_c2, me2, r2) = hello_with(&s.addr, "commperf", 999, forged);
    assert_eq!(r2["type"], "refused");
    let reason2 = format!(
        "protocol version 999 (commperf {escaped}) is not supported; this server speaks {} \
         (commperf {})",
        launch::PROTOCOL_VERSION,
        env!("CARGO_PKG_VERSION")
    );
    assert_eq!(r2["reason"], reason2);
    // Handshakes run concurrently: the two lines come in either order.
    let mut lines = lines_until_quiet(&mut s, Duration::from_secs(2));
    lines.sort();
    let mut want = [
        format!(
            "commperf serve: turned away client {me1}: not a commperf client (magic \
             '{escaped}')"
        ),
        format!("commperf serve: turned away client {me2}: {reason2}"),
    ];
    want.sort();
    assert_eq!(
        lines, want,
        "exactly one line per connection, the forged text escaped in it"
    );
    // And a real session after them is logged as before.
    s.assert_serves();
    // A session on a busy machine also logs what disturbed it, one line per finding.
    let lines: Vec<String> = lines_until_quiet(&mut s, Duration::from_secs(2))
        .into_iter()
        .filter(|l| !l.contains(" disturbed: "))
        .collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(lines[0].starts_with("commperf serve: session with client 127.0.0.1:"));
    assert!(s.seen.iter().all(|l| !l.contains('\x1b')));
}

#[test]
fn a_malformed_command_after_the_handshake_is_answered_with_the_reason() {
    let mut s = Server::start(&[]);
    let (mut c, me, w) = hello_with(&s.addr, "commperf", launch::PROTOCOL_VERSION, "hostile");
    assert_eq!(w["type"], "welcome", "{w}");
    let what = "unknown variant `launch\\nmissiles`, expected one of `drop_extras`, `place`, \
                `findings`, `data`, `run`, `notify`, `bye` at line 1 column 26";
    let expect = format!("control message from client {me} is malformed: {what}");
    c.send(&json!({"type": "launch\nmissiles"})).unwrap();
    let r: Value = c.recv().unwrap();
    assert_eq!(r, json!({"type": "error", "message": expect}));
    assert!(c.recv::<Value>().is_err(), "then the session ends");
    let line = s.wait_log("failed", Duration::from_secs(10));
    assert_eq!(
        line,
        format!("commperf serve: session with client {me} failed: {expect}")
    );
    s.assert_serves();
}

#[test]
fn strangers_on_the_data_port_are_turned_away_and_the_client_still_gets_its_channel() {
    use commperf_transport::sys::socket::encode_header;
    let mut s = Server::start(&[]);
    let (mut c, me, w) = hello_with(&s.addr, "commperf", launch::PROTOCOL_VERSION, "1");
    assert_eq!(w["type"], "welcome", "{w}");
    s.wait_log("started", Duration::from_secs(10));
    c.send(&data_request(json!({"transport": "tcp"}))).unwrap();
    let offer: Value = c.recv().unwrap();
    let port = offer["address"].as_str().unwrap().to_string();
    // Three strangers reach the port before the client: one silent, one speaking HTTP, one
    // with a well-framed wrong token.
    let silent = TcpStream::connect(&port).unwrap();
    let mut http = TcpStream::connect(&port).unwrap();
    http.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut guess = TcpStream::connect(&port).unwrap();
    guess
        .write_all(&encode_header(launch::TOKEN_TAG, TOKEN.len()))
        .unwrap();
    guess.write_all("f".repeat(TOKEN.len()).as_bytes()).unwrap();
    let t = Instant::now();
    let mut real = TcpStream::connect(&port).unwrap();
    real.write_all(&encode_header(launch::TOKEN_TAG, TOKEN.len()))
        .unwrap();
    real.write_all(TOKEN.as_bytes()).unwrap();
    let ready: Value = c.recv().unwrap();
    let took = t.elapsed();
    assert_eq!(ready, json!({"type": "data_ready"}));
    eprintln!("the client's data channel was ready {took:?} after it connected");
    // The silent one is given DATA_TOKEN_WAIT (5 s); the others are turned away at once.
    assert!(
        took >= Duration::from_millis(4800) && took < Duration::from_secs(9),
        "{took:?}"
    );
    let of = |x: &TcpStream| x.local_addr().unwrap().to_string();
    let session = format!("to the data port {port} of the session with client {me}");
    for (who, why) in [
        (of(&silent), "presented no session token within 5 s"),
        (of(&http), "sent something other than the session token"),
        (of(&guess), "presented a wrong session token"),
    ] {
        let line = s.wait_log(&format!("connection from {who}"), Duration::from_secs(10));
        assert_eq!(
            line,
            format!("commperf serve: turned away a connection from {who} {session}: {why}")
        );
    }
    c.send(&json!({"type": "bye"})).unwrap();
    s.wait_log(
        &format!("session with client {me} finished"),
        Duration::from_secs(10),
    );
    drop((silent, http, guess, real));
    s.assert_serves();
}

#[test]
fn a_stranger_on_a_unix_socket_data_port_is_turned_away_and_named_by_its_process() {
    use commperf_transport::sys::socket::encode_header;
    use std::os::unix::net::UnixStream;
    let mut s = Server::start(&[]);
    let (mut c, me, w) = hello_with(&s.addr, "commperf", launch::PROTOCOL_VERSION, "1");
    assert_eq!(w["type"], "welcome", "{w}");
    c.send(&data_request(json!({"transport": "uds"}))).unwrap();
    let offer: Value = c.recv().unwrap();
    let path = offer["address"].as_str().unwrap().to_string();
    let mut stranger = UnixStream::connect(&path).unwrap();
    stranger.write_all(&[0u8; 16]).unwrap();
    let mut real = UnixStream::connect(&path).unwrap();
    real.write_all(&encode_header(launch::TOKEN_TAG, TOKEN.len()))
        .unwrap();
    real.write_all(TOKEN.as_bytes()).unwrap();
    let ready: Value = c.recv().unwrap();
    assert_eq!(ready, json!({"type": "data_ready"}));
    let line = s.wait_log("turned away", Duration::from_secs(10));
    assert_eq!(
        line,
        format!(
            "commperf serve: turned away a connection from local process {} to the data port \
             {path} of the session with client {me}: sent something other than the session \
             token",
            std::process::id()
        )
    );
    c.send(&json!({"type": "bye"})).unwrap();
    s.wait_log("finished", Duration::from_secs(10));
    drop((stranger, real));
}
