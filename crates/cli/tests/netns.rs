//! Two hosts for real: `commperf serve` in one network namespace, `commperf bench --peer` in
//! another, joined by a veth pair with their own addresses. Needs root and iproute2 (CI has
//! both); elsewhere the test says why it did not run.

use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

fn ip(args: &[&str]) -> bool {
    Command::new("ip")
        .args(args)
        .status()
        .is_ok_and(|s| s.success())
}

/// Two namespaces and a veth between them; removed on drop, also after a failed assertion.
struct Hosts {
    a: String,
    b: String,
}

impl Hosts {
    fn new() -> Option<Hosts> {
        let id = std::process::id();
        let h = Hosts {
            a: format!("cpa{id}"),
            b: format!("cpb{id}"),
        };
        let (va, vb) = (format!("va{id}"), format!("vb{id}"));
        let ok = ip(&["netns", "add", &h.a])
            && ip(&["netns", "add", &h.b])
            && ip(&["link", "add", &va, "type", "veth", "peer", "name", &vb])
            && ip(&["link", "set", &va, "netns", &h.a])
            && ip(&["link", "set", &vb, "netns", &h.b])
            && ip(&["-n", &h.a, "addr", "add", "10.231.0.1/24", "dev", &va])
            && ip(&["-n", &h.b, "addr", "add", "10.231.0.2/24", "dev", &vb])
            && ip(&["-n", &h.a, "link", "set", &va, "up"])
            && ip(&["-n", &h.b, "link", "set", &vb, "up"])
            && ip(&["-n", &h.a, "link", "set", "lo", "up"])
            && ip(&["-n", &h.b, "link", "set", "lo", "up"]);
        ok.then_some(h)
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        // Deleting a namespace deletes the veth end inside it, and with it the pair.
        ip(&["netns", "del", &self.a]);
        ip(&["netns", "del", &self.b]);
    }
}

/// The server, killed and reaped when dropped: a failed assertion leaves no server waiting in
/// a namespace that is about to be deleted (declared after [`Hosts`], so dropped before it).
struct Server(Child);

impl Server {
    fn exit_within(&mut self, limit: Duration) -> Option<ExitStatus> {
        let start = Instant::now();
        loop {
            if let Some(s) = self.0.try_wait().unwrap() {
                return Some(s);
            }
            if start.elapsed() > limit {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
#[cfg_attr(
    not(commperf_has_netns),
    ignore = "needs root and iproute2's ip and tc (network namespaces)"
)]
fn bench_against_serve_in_another_network_namespace() {
    // Ignored where the build found no root or iproute2; here only when COMMPERF_REQUIRE_MPI
    // forces it.
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    assert!(
        root && ip(&["-V"]),
        "network namespaces need root and iproute2"
    );
    let Some(hosts) = Hosts::new() else {
        panic!("running as root with iproute2, but the network namespaces could not be made");
    };
    let exe = commperf_testkit::exe();
    let mut server = Server(
        Command::new("ip")
            .args([
                "netns",
                "exec",
                &hosts.a,
                exe,
                "serve",
                "--listen",
                "10.231.0.1:0",
                "--once",
            ])
            .args(["--token", "netns-token"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let mut first = String::new();
    // Kept open until the end: the server's stdout stays a live pipe.
    let mut banner = BufReader::new(server.0.stdout.take().unwrap());
    banner.read_line(&mut first).unwrap();
    let addr = first.trim().rsplit(' ').next().unwrap().to_string();
    assert!(addr.starts_with("10.231.0.1:"), "{first}");
    let out = Command::new("ip")
        .args([
            "netns", "exec", &hosts.b, exe, "bench", "latency", "bw", "-t", "tcp",
        ])
        .args([
            "--sizes",
            "8,64K",
            "--iters",
            "200",
            "--peer",
            &addr,
            "--token",
            "netns-token",
        ])
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // --once: the server leaves after the session.
    let status = server.exit_within(Duration::from_secs(30));
    assert!(
        status.is_some_and(|s| s.success()),
        "server after the session: {status:?}"
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["options"]["peer"], addr.as_str());
    let rows = v["results"].as_array().unwrap();
    assert_eq!(rows.len(), 4);
    for r in rows {
        assert_eq!(r["transport"], "tcp");
        if r["benchmark"] == "latency" {
            assert!(r["p50_us"].as_f64().unwrap() > 0.0);
        } else {
            assert!(r["mb_per_s"].as_f64().unwrap() > 0.0);
        }
    }
    // From the other host, the loopback-only default would have refused: the server really
    // listened on the veth address, and nothing is reachable on the client's own loopback.
    let o = Command::new("ip")
        .args([
            "netns",
            "exec",
            &hosts.b,
            exe,
            "bench",
            "-t",
            "tcp",
            "--peer",
            "127.0.0.1:7707",
        ])
        .args(["--token", "x"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("Connection refused"));
}
