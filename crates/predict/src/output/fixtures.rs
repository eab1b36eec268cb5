//! Hand-built predictions and timelines for the renderers' snapshot tests, and the snapshot
//! check itself: expected files live in `tests/data/snapshots/`; run the tests with
//! `COMMPERF_UPDATE_SNAPSHOTS=1` to rewrite them after an intended change, then review the diff.

use super::*;

/// Three ranks on a star, every optional section present.
pub fn prediction() -> Prediction {
    let rank = |rank: u32, finish: f64, compute: f64, comm: f64, wait: f64| RankTimes {
        rank,
        host: format!("node{rank}"),
        finish_us: finish,
        compute_us: compute,
        comm_us: comm,
        wait_us: wait,
    };
    let link = |id: u32, from: &str, to: &str, bytes: f64, busy: f64, maxc: u32| LinkUse {
        id,
        from: from.into(),
        to: to.into(),
        class: "edge".into(),
        bytes,
        busy_us: busy,
        utilization: busy / 42.5,
        max_contention: maxc,
    };
    Prediction {
        schema_version: PREDICTION_SCHEMA_VERSION,
        tool: "commperf 0.1.0".into(),
        model: "contention".into(),
        trace: "ring.txt".into(),
        trace_format: "own".into(),
        topology: "star:3".into(),
        profile: "netgauge t.dat".into(),
        background: "const:0.25".into(),
        seed: 7,
        eager_threshold_bytes: 65536,
        ranks_count: 3,
        operations: 9,
        messages: 3,
        events: 12,
        total_us: 42.5,
        ranks: vec![
            rank(0, 40.0, 10.0, 20.0, 10.0),
            rank(1, 42.5, 12.5, 25.0, 5.0),
            rank(2, 41.0, 8.0, 30.0, 3.0),
        ],
        links: vec![
            link(0, "node0", "sw", 4096.0, 20.0, 1),
            link(3, "sw", "node1", 8192.0, 30.0, 2),
            link(5, "sw", "node2", 1024.0, 5.0, 1),
        ],
        bottlenecks: vec!["sw->node1".into(), "node0->sw".into()],
        knee: Some(Knee {
            link: "sw->node1".into(),
            packet_bytes: 4096,
            capacity_pkts_per_s: 183_105.47,
            busy_throughput_pkts_per_s: 66_666.67,
            mean_throughput_pkts_per_s: 47_058.82,
            background_load: 0.25,
        }),
        bounds: Some(Bounds {
            best_us: 40.0,
            average_us: 42.5,
            worst_us: 45.125,
            runs: 8,
        }),
    }
}

/// `n` ranks finishing at `rank % 10` µs, nothing optional.
pub fn many_ranks(n: u32) -> Prediction {
    let mut p = prediction();
    p.ranks_count = n;
    p.ranks = (0..n)
        .map(|r| RankTimes {
            rank: r,
            host: format!("n{r}"),
            finish_us: (r % 10) as f64,
            compute_us: 0.0,
            comm_us: 0.0,
            wait_us: 0.0,
        })
        .collect();
    p.links.clear();
    p.bottlenecks.clear();
    p.knee = None;
    p.bounds = None;
    p
}

/// The timeline of a three-rank ring: compute, send to the right, receive from the left.
pub fn timeline() -> Timeline {
    let span = |rank, kind, start_ns, end_ns, peer, bytes| Span {
        rank,
        kind,
        start_ns,
        end_ns,
        peer,
        bytes,
    };
    let mut spans = Vec::new();
    let mut messages = Vec::new();
    for r in 0..3u32 {
        let c = 10_000.0 + 1_000.0 * r as f64;
        let right = (r + 1) % 3;
        let left = (r + 2) % 3;
        spans.push(span(r, SpanKind::Compute, 0.0, c, None, 0));
        spans.push(span(r, SpanKind::Send, c, c + 20_000.0, Some(right), 4096));
        spans.push(span(
            r,
            SpanKind::Recv,
            c,
            33_000.0 + 500.0 * r as f64,
            Some(left),
            4096,
        ));
        spans.push(span(
            r,
            SpanKind::Wait,
            33_000.0 + 500.0 * r as f64,
            40_000.0 + 1_250.0 * r as f64,
            None,
            0,
        ));
        messages.push(Arrow {
            src: r,
            dst: right,
            bytes: 4096,
            start_ns: c,
            end_ns: 32_250.5 + 500.0 * right as f64,
        });
    }
    Timeline {
        nranks: 3,
        spans,
        messages,
    }
}

/// Compares `text` with the snapshot file `name` (or rewrites it when asked to).
pub fn check_snapshot(name: &str, text: &str) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/snapshots")
        .join(name);
    if std::env::var_os("COMMPERF_UPDATE_SNAPSHOTS").is_some() {
        std::fs::create_dir_all(path.parent().expect("has a parent")).expect("snapshot dir");
        std::fs::write(&path, text).expect("write snapshot");
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (run with COMMPERF_UPDATE_SNAPSHOTS=1)",
            path.display()
        )
    });
    assert!(
        text == expected,
        "{name} differs from its snapshot {}; got:\n{text}",
        path.display()
    );
}
