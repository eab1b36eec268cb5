//! What `commperf serve`'s accept loop writes to its log under a flood: real sockets on
//! 127.0.0.1, the real accept loop, the log collected line by line.

use commperf_transport::launch::Server;
use commperf_transport::serve::{ServeLimits, LINES_PER_WINDOW, LOG_WINDOW};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A server with `max_pending` whose log lines (and when each came) are collected.
fn server(max_pending: usize) -> (commperf_transport::serve::Acceptor, String, Log) {
    let server = Server::bind("127.0.0.1:0".parse().unwrap(), Some("t0ken".into())).unwrap();
    let addr = server.local_addr().to_string();
    let log: Log = Arc::new(Mutex::new(Vec::new()));
    let l = log.clone();
    // A handshake deadline beyond the test: the connections kept wait, and nothing but the
    // evictions is logged.
    let limits = ServeLimits {
        max_pending,
        handshake: Duration::from_secs(120),
        ..ServeLimits::default()
    };
    let acceptor = server
        .start(limits, move |ev| {
            l.lock().unwrap().push((Instant::now(), ev.to_string()))
        })
        .unwrap();
    (acceptor, addr, log)
}

type Log = Arc<Mutex<Vec<(Instant, String)>>>;

/// Evictions the log accounts for: one per line of its own, plus each summary's count.
fn evictions_logged(lines: &[(Instant, String)]) -> (usize, u64, usize) {
    let single = lines
        .iter()
        .filter(|(_, l)| l.contains("the one that waited longest makes room"))
        .count();
    let summaries: Vec<u64> = lines
        .iter()
        .filter_map(|(_, l)| l.strip_prefix("closed "))
        .filter_map(|r| r.split(" more connections without a hello").next())
        .filter_map(|n| n.parse().ok())
        .collect();
    (single, summaries.iter().sum(), summaries.len())
}

#[test]
fn a_flood_of_300_idle_connections_writes_3_lines_and_one_summary_with_the_count() {
    let (flood, cap) = (300usize, 4usize);
    let (acceptor, addr, log) = server(cap);
    let t = Instant::now();
    let conns: Vec<TcpStream> = (0..flood)
        .map(|_| TcpStream::connect(&addr).unwrap())
        .collect();
    let connected = t.elapsed();
    // Every connection but the newest `cap` is closed to make room, each with one event.
    let evicted = (flood - cap) as u64;
    let end = Instant::now() + LOG_WINDOW + Duration::from_secs(20);
    loop {
        let lines = log.lock().unwrap().clone();
        let (single, summed, _) = evictions_logged(&lines);
        if single as u64 + summed == evicted {
            break;
        }
        assert!(
            Instant::now() < end,
            "the log accounts for {single} + {summed} of {evicted} evictions:\n{}",
            lines
                .iter()
                .map(|(_, l)| l.as_str())
                .collect::<Vec<_>>()
                .join("\n")
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let lines = log.lock().unwrap().clone();
    let text: Vec<&str> = lines.iter().map(|(_, l)| l.as_str()).collect();
    eprintln!(
        "{flood} idle connections in {connected:?}, cap {cap}; the log:\n{}",
        text.join("\n")
    );
    assert_eq!(acceptor.pending(), cap);
    // The whole flood fits in one 10 s window: its first LINES_PER_WINDOW evictions get a line
    // each, the other 293 one summary line when the window ends, and nothing else was logged.
    assert!(
        connected < LOG_WINDOW,
        "too slow to test one window: {connected:?}"
    );
    let (single, summed, summaries) = evictions_logged(&lines);
    assert_eq!(single, LINES_PER_WINDOW as usize, "{text:#?}");
    assert_eq!(summaries, 1, "{text:#?}");
    assert_eq!(summed, evicted - LINES_PER_WINDOW as u64);
    assert_eq!(lines.len(), LINES_PER_WINDOW as usize + 1, "{text:#?}");
    assert_eq!(
        text[3],
        format!(
            "closed 293 more connections without a hello in the last 10 s to make room ({cap} \
             were already waiting to authenticate each time; only the first 3 of a 10 s window \
             get a line each)"
        )
    );
    // The summary comes when the window that opened with the first eviction ends.
    let waited = lines[3].0 - lines[0].0;
    assert!(
        waited >= LOG_WINDOW && waited < LOG_WINDOW + Duration::from_secs(2),
        "summary after {waited:?}"
    );
    drop(conns);
    drop(acceptor);
}

#[test]
fn counts_still_held_are_summarised_when_the_server_stops() {
    use std::io::Read;
    let (acceptor, addr, log) = server(1);
    let conns: Vec<TcpStream> = (0..20)
        .map(|_| TcpStream::connect(&addr).unwrap())
        .collect();
    // The 19th is closed when the 20th is admitted: then 19 were closed, in a window that is
    // still open (10 s).
    let mut c = &conns[18];
    c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    assert_eq!(c.read(&mut [0u8; 1]).unwrap_or(0), 0);
    // It is closed just before its eviction is logged.
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(log.lock().unwrap().len(), LINES_PER_WINDOW as usize);
    drop(acceptor);
    let lines = log.lock().unwrap().clone();
    let (single, summed, summaries) = evictions_logged(&lines);
    assert_eq!((single, summed, summaries), (3, 16, 1), "{lines:?}");
    drop(conns);
}
