//! End-to-end tests of `commperf compare`: two result files written here (a shared-memory
//! transport and MPI over it, with numbers chosen so every figure is known), compared by the
//! real binary.

use commperf_core::{
    Benchmark, Machine, Mode, Options, Placement, Report, Row, TimerInfo, TransportKind,
    SCHEMA_VERSION,
};
use commperf_testkit::{commperf, stderr, TempDir};
use serde_json::Value;

fn report(t: TransportKind, lat: &[(u64, f64)], bw: &[(u64, f64)]) -> Report {
    let mut rows = Vec::new();
    for &(size, p50) in lat {
        let mut r = Row::new(Benchmark::Latency, t, Mode::Poll, size);
        r.percentiles_mut().unwrap().p50_us = Some(p50);
        rows.push(r);
    }
    for &(size, mb) in bw {
        let mut r = Row::new(Benchmark::Bw, t, Mode::Poll, size);
        r.stream_mut().unwrap().mb_per_s = Some(mb);
        rows.push(r);
    }
    Report {
        schema_version: SCHEMA_VERSION,
        tool: "commperf 0.1.0".into(),
        started_unix_s: 0,
        machine: Machine {
            hostname: "node1".into(),
            cpu_model: "cpu".into(),
            cores: 2,
            kernel: "6.8".into(),
            timer: TimerInfo {
                source: "monotonic".into(),
                tsc_ghz: None,
                cost_ns: 20.0,
            },
        },
        options: Options {
            benchmarks: vec![Benchmark::Latency, Benchmark::Bw],
            transports: vec![t],
            modes: vec![Mode::Poll],
            sizes_bytes: vec![],
            iterations: None,
            warmup: None,
            window: 64,
            validate: false,
            launcher: "local".into(),
            peer: None,
            mpi_library: None,
            mpi_calls: None,
        },
        placement: Placement {
            pinned: false,
            local_cpu: None,
            peer_cpu: None,
            ..Placement::default()
        },
        limits: None,
        results: rows,
        disturbance: Default::default(),
        partial: false,
    }
}

/// A scratch directory of this test's own, removed when dropped.
/// `report` written as JSON to `name` in `d`; its path.
fn write(d: &TempDir, name: &str, report: &Report) -> String {
    let p = d.join(name);
    std::fs::write(&p, serde_json::to_string_pretty(report).unwrap()).unwrap();
    p.display().to_string()
}

fn files(d: &TempDir) -> (String, String) {
    // MPI adds 0.25 us to 8 B and 0.5 us to 1 KiB (dyadic, so exact); it delivers 6000 of
    // shm's 8000 MB/s at 64 KiB. bibw only in the upper file.
    let lo = report(
        TransportKind::Shm,
        &[(8, 0.25), (1024, 0.5)],
        &[(65536, 8000.0)],
    );
    let mut up = report(
        TransportKind::Mpi,
        &[(8, 0.5), (1024, 1.0)],
        &[(65536, 6000.0)],
    );
    let mut bibw = Row::new(Benchmark::Bibw, TransportKind::Mpi, Mode::Poll, 65536);
    bibw.stream_mut().unwrap().mb_per_s = Some(9000.0);
    up.results.push(bibw);
    (write(d, "shm.json", &lo), write(d, "mpi.json", &up))
}

#[test]
fn compare_prints_the_table_and_writes_json() {
    let d = TempDir::new("compare-ok");
    let (lo, up) = files(&d);
    let o = commperf(&["compare", &lo, &up]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8(o.stdout).unwrap();
    for line in [
        format!("# commperf compare | lower shm ({lo}; commperf 0.1.0 on node1) | upper mpi ({up}; commperf 0.1.0 on node1)"),
        "# commperf compare latency | mode poll | lower shm | upper mpi".into(),
        "# Size  shm p50(us)  mpi p50(us)  added(us)  added(%)".into(),
        "8             0.250        0.500      0.250   +100.0%".into(),
        "1024          0.500        1.000      0.500   +100.0%".into(),
        "# verdict: mpi adds 0.375 us (+100 %) over shm up to 1 KiB".into(),
        "65536    8000.00   6000.00     75.0%".into(),
        "# verdict: mpi delivers 75 % of shm's bandwidth at large messages (>= 64 KiB)".into(),
        "# not compared: bibw (poll) only in upper mpi".into(),
    ] {
        assert!(text.lines().any(|l| l == line), "missing {line:?} in\n{text}");
    }

    // -o FILE.json: the comparison as JSON in the file, the table still on stdout.
    let out = d.join("cmp.json");
    let o = commperf(&["compare", &lo, &up, "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("# verdict: "));
    assert!(stderr(&o).contains("wrote"), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["lower"]["transports"][0], "shm");
    assert_eq!(v["upper"]["source"], up.as_str());
    let lat = &v["benchmarks"][0];
    assert_eq!(lat["benchmark"], "latency");
    assert_eq!(lat["points"][1]["added_us"], 0.5);
    assert_eq!(lat["points"][1]["added_percent"], 100.0);
    assert_eq!(v["benchmarks"][1]["points"][0]["fraction_delivered"], 0.75);
    assert_eq!(v["not_compared"][0]["benchmark"], "bibw");
    assert_eq!(v["not_compared"][0]["only_in"], "upper");

    // --format csv to stdout.
    let o = commperf(&["compare", &lo, &up, "--format", "csv"]);
    let csv = String::from_utf8(o.stdout).unwrap();
    assert_eq!(csv.lines().count(), 1 + 3, "{csv}");
    assert!(
        csv.contains("\nlatency,poll,,,,,shm,mpi,8,,,0.25,0.5,0.25,100,"),
        "{csv}"
    );
}

#[test]
fn compare_errors_name_the_file_and_exit_1() {
    let d = TempDir::new("compare-err");
    let (lo, up) = files(&d);
    let bad = d.join("bad.json");
    std::fs::write(&bad, "{\"schema_version\": 1,\n  oops").unwrap();
    let bad = bad.to_str().unwrap();
    let o = commperf(&["compare", &lo, bad]);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(
        e.starts_with(&format!("commperf: {bad}: invalid result file at 2:")),
        "{e}"
    );
    assert!(o.stdout.is_empty());

    let missing = d.join("missing.json").display().to_string();
    let o = commperf(&["compare", &missing, &up]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).starts_with(&format!("commperf: {missing}: ")),
        "{}",
        stderr(&o)
    );

    // Nothing in common: both files named, and what each holds.
    let mr = {
        let mut r = report(TransportKind::Mpi, &[], &[]);
        let mut row = Row::new(Benchmark::Mr, TransportKind::Mpi, Mode::Poll, 8);
        row.stream_mut().unwrap().mb_per_s = Some(4.0);
        r.results.push(row);
        write(&d, "mr.json", &r)
    };
    let o = commperf(&["compare", &lo, &mr]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o).trim_end(),
        format!(
            "commperf: {lo} and {mr}: nothing to compare: no benchmark and size was measured by \
             both; lower has latency (poll) 8 to 1K (2 sizes), bw (poll) 64K; upper has mr \
             (poll) 8"
        )
    );

    // A lower file mixing two transports is refused by its name.
    let mixed = {
        let mut r = report(TransportKind::Shm, &[(8, 0.25)], &[]);
        r.results.push({
            let mut row = Row::new(Benchmark::Latency, TransportKind::Tcp, Mode::Poll, 1024);
            row.percentiles_mut().unwrap().p50_us = Some(5.0);
            row
        });
        write(&d, "mixed.json", &r)
    };
    let o = commperf(&["compare", &mixed, &up]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).starts_with(&format!(
            "commperf: {mixed}: the lower layer's latency rows (poll) come from several \
             transports (shm, tcp)"
        )),
        "{}",
        stderr(&o)
    );
}
