//! The extended benchmarks must show their effect where the mechanism exists (issue 3): these
//! tests assert the direction of each effect on real transports.
//!
//! Timing directions cannot be judged while other tests oversubscribe the cores, so they live in
//! a test binary of their own (cargo runs test binaries one after another), run one at a time
//! (a lock), and a direction must hold in at least two of three attempts.

use serde_json::Value;
use std::process::Command;
use std::sync::Mutex;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn bench_json(args: &[&str]) -> Value {
    let o = Command::new(env!("CARGO_BIN_EXE_commperf"))
        .arg("bench")
        .args(args)
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

fn f(v: &Value, k: &str) -> f64 {
    v[k].as_f64()
        .unwrap_or_else(|| panic!("{k} missing in {v}"))
}

fn rows_of(v: &Value, bench: &str) -> Vec<Value> {
    v["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["benchmark"] == bench)
        .cloned()
        .collect()
}

/// Runs `attempt` up to three times; passes once it has held twice. Failures are reported.
fn holds_in_two_of_three(what: &str, mut attempt: impl FnMut() -> Result<(), String>) {
    let _guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (mut held, mut misses) = (0, Vec::new());
    for _ in 0..3 {
        match attempt() {
            Ok(()) => held += 1,
            Err(e) => misses.push(e),
        }
        if held == 2 {
            return;
        }
    }
    panic!("{what}: held {held} of 3 times; misses: {misses:#?}");
}

#[test]
fn blocking_costs_more_than_polling_and_spinning_first_wins_it_back() {
    holds_in_two_of_three("blocking", || {
        let v = bench_json(&[
            "blocking", "-t", "tcp,uds", "--sizes", "16", "--iters", "3000",
        ]);
        let rows = rows_of(&v, "blocking");
        assert_eq!(rows.len(), 2 * 2, "two variants per transport");
        for r in &rows {
            assert_eq!(r["mode"], "block");
            let (p50, base, cost) = (f(r, "p50_us"), f(r, "baseline_p50_us"), f(r, "cost_us"));
            assert!((cost - (p50 - base)).abs() < 1e-9, "{r}");
        }
        for t in ["tcp", "uds"] {
            let find = |spins: u64| {
                rows.iter()
                    .find(|r| r["transport"] == t && r["block_spins"] == spins)
                    .unwrap()
            };
            let (at_once, hybrid) = (find(0), find(1000));
            // Waking a sleeping process costs microseconds on any Linux, tens on these VMs.
            if f(at_once, "cost_us") <= 2.0 {
                return Err(format!("{t}: blocking should cost over 2 µs: {at_once}"));
            }
            if f(hybrid, "p50_us") >= f(at_once, "p50_us") {
                return Err(format!(
                    "{t}: spinning first should avoid the wake-up: {hybrid}"
                ));
            }
        }
        Ok(())
    });
}

#[test]
fn fresh_buffers_cost_more_than_a_reused_one_for_large_messages() {
    holds_in_two_of_three("bufmgmt", || {
        let v = bench_json(&["bufmgmt", "-t", "shm", "--sizes", "1M", "--iters", "300"]);
        let r = &rows_of(&v, "bufmgmt")[0];
        assert!((f(r, "cost_us") - (f(r, "p50_us") - f(r, "baseline_p50_us"))).abs() < 1e-9);
        // A reused 1 MiB buffer stays in cache; one from a pool twice the LLC never does.
        if f(r, "cost_us") > 0.0 {
            Ok(())
        } else {
            Err(format!("fresh buffers cost nothing: {r}"))
        }
    });
}

#[test]
fn sixty_four_scattered_segments_cost_more_than_one() {
    holds_in_two_of_three("noncontig", || {
        let v = bench_json(&[
            "noncontig",
            "-t",
            "shm,uds",
            "--sizes",
            "1K",
            "--iters",
            "5000",
        ]);
        let rows = rows_of(&v, "noncontig");
        assert_eq!(
            rows.len(),
            2 * 7 * 2,
            "transports × k = 1…64 × vectored/packed"
        );
        let p50 = |t: &str, k: u64, packed: bool| {
            let r = rows
                .iter()
                .find(|r| r["transport"] == t && r["segments"] == k && r["packed"] == packed)
                .unwrap_or_else(|| panic!("{t} {k} {packed}"));
            assert!((f(r, "cost_us") - (f(r, "p50_us") - f(r, "baseline_p50_us"))).abs() < 1e-9);
            f(r, "p50_us")
        };
        // shm, packed: 64 copies of 16 B from 64 pages against one copy of 1 KiB (3× here).
        // uds, vectored: the kernel walks 64 iovecs against one (about +2 µs here). The packing
        // cost over uds (+0.3 µs on 3 µs) is within the run-to-run noise, so it is not asserted.
        for (t, packed) in [("shm", true), ("uds", false)] {
            let (one, many) = (p50(t, 1, packed), p50(t, 64, packed));
            if many <= one {
                let how = if packed { "packed" } else { "vectored" };
                return Err(format!(
                    "{t} {how}: 64 segments {many} µs, 1 segment {one} µs"
                ));
            }
        }
        Ok(())
    });
}

#[test]
fn sweeping_more_open_endpoints_costs_more() {
    holds_in_two_of_three("conns", || {
        let v = bench_json(&["conns", "-t", "uds", "--conns-max", "64", "--iters", "500"]);
        let rows = rows_of(&v, "conns");
        let counts: Vec<u64> = rows
            .iter()
            .map(|r| r["connections"].as_u64().unwrap())
            .collect();
        assert_eq!(counts, vec![1, 2, 4, 8, 16, 32, 64]);
        let p50 = |n: u64| {
            f(
                rows.iter().find(|r| r["connections"] == n).unwrap(),
                "p50_us",
            )
        };
        assert!(rows
            .iter()
            .all(|r| (f(r, "baseline_p50_us") - p50(1)).abs() < 1e-9));
        // Every wait polls 64 sockets instead of one: one syscall each.
        if p50(64) > p50(1) + 2.0 {
            Ok(())
        } else {
            Err(format!(
                "64 endpoints {} µs, 1 endpoint {} µs",
                p50(64),
                p50(1)
            ))
        }
    });
}

#[test]
fn a_completion_queue_beats_sweeping_many_endpoints() {
    holds_in_two_of_three("cq", || {
        let v = bench_json(&["cq", "-t", "uds", "--conns-max", "64", "--iters", "500"]);
        let rows = rows_of(&v, "cq");
        assert_eq!(rows.len(), 7);
        let at64 = rows.iter().find(|r| r["connections"] == 64).unwrap();
        let (cq, sweep) = (f(at64, "p50_us"), f(at64, "baseline_p50_us"));
        assert!((f(at64, "cost_us") - (cq - sweep)).abs() < 1e-9);
        // One epoll_wait against 64 poll(2) calls per check.
        if cq + 2.0 < sweep {
            Ok(())
        } else {
            Err(format!(
                "64 endpoints: completion queue {cq} µs, sweep {sweep} µs"
            ))
        }
    });
    // shm: one shared-memory queue against 256 ring checks (about 2 ns each) per poll.
    holds_in_two_of_three("cq over shm", || {
        let v = bench_json(&["cq", "-t", "shm", "--conns-max", "256", "--iters", "2000"]);
        let rows = rows_of(&v, "cq");
        assert_eq!(rows.len(), 9);
        let at256 = rows.iter().find(|r| r["connections"] == 256).unwrap();
        let (cq, sweep) = (f(at256, "p50_us"), f(at256, "baseline_p50_us"));
        if cq < sweep {
            Ok(())
        } else {
            Err(format!(
                "256 endpoints: completion queue {cq} µs, sweep {sweep} µs"
            ))
        }
    });
}
