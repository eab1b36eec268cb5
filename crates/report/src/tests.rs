//! Snapshot-style tests: a hand-built report, rendered in every format, compared with inline
//! expected strings.

use super::*;
use commperf_core::{
    Benchmark, Limits, Machine, Mode, Options, Placement, Row, TimerInfo, TransportKind,
};

fn report() -> Report {
    let mut lat_small = Row::new(Benchmark::Latency, TransportKind::Shm, Mode::Poll, 8);
    lat_small.iterations = 100_000;
    lat_small.warmup = 1_000;
    lat_small.p50_us = Some(0.2134);
    lat_small.p90_us = Some(0.25);
    lat_small.p99_us = Some(0.4012);
    lat_small.min_us = Some(0.18);
    lat_small.max_us = Some(12.5034);
    lat_small.mean_us = Some(0.2231);
    lat_small.efficiency = Some(0.3337);
    lat_small.limit_us = Some(0.0712);
    lat_small.validated = true;

    let mut bw = Row::new(Benchmark::Bw, TransportKind::Shm, Mode::Poll, 65536);
    bw.iterations = 2_000;
    bw.warmup = 20;
    bw.window = Some(64);
    bw.mb_per_s = Some(8012.3456);
    bw.msgs_per_s = Some(122258.6);
    bw.efficiency = Some(0.4451);
    bw.limit_mb_per_s = Some(18000.5);
    bw.validated = true;

    // Same block as the first row although a bw row comes between them; no efficiency.
    let mut lat_large = Row::new(Benchmark::Latency, TransportKind::Shm, Mode::Poll, 1 << 20);
    lat_large.iterations = 1_000;
    lat_large.warmup = 10;
    lat_large.p50_us = Some(95.123);
    lat_large.p90_us = Some(101.5);
    lat_large.p99_us = Some(130.25);
    lat_large.min_us = Some(90.0);
    lat_large.max_us = Some(250.75);
    lat_large.mean_us = Some(97.8761);
    lat_large.validated = true;

    Report {
        schema_version: SCHEMA_VERSION,
        tool: "commperf 0.1.0".to_string(),
        started_unix_s: 1_700_000_000,
        machine: Machine {
            hostname: "node1".to_string(),
            cpu_model: "AMD EPYC 7763 64-Core Processor".to_string(),
            cores: 2,
            kernel: "6.8.0-45-generic".to_string(),
            timer: TimerInfo {
                source: "tsc".to_string(),
                tsc_ghz: Some(2.45),
                cost_ns: 9.8,
            },
        },
        options: Options {
            benchmarks: vec![Benchmark::Latency, Benchmark::Bw],
            transports: vec![TransportKind::Shm],
            modes: vec![Mode::Poll],
            sizes_bytes: vec![8, 65536, 1 << 20],
            iterations: None,
            warmup: None,
            window: 64,
            validate: true,
            launcher: "local".to_string(),
            peer: None,
        },
        placement: Placement {
            pinned: true,
            local_cpu: Some(0),
            peer_cpu: Some(1),
        },
        limits: Some(Limits {
            cacheline_one_way_us: 0.0712,
            memcpy_in_cache_mb_per_s: 45000.4,
            memcpy_out_of_cache_mb_per_s: 18000.0,
            memcpy_in_cache_bytes: 1 << 20,
            memcpy_out_of_cache_bytes: 1 << 30,
            cpus: [0, 1],
        }),
        results: vec![lat_small, bw, lat_large],
    }
}

#[test]
fn table_format_is_osu_style_blocks() {
    let expected = "\
# machine: AMD EPYC 7763 64-Core Processor, 2 cpus, kernel 6.8.0-45-generic
# timer: tsc 2.45 GHz, read cost 9.8 ns
# placement: local cpu 0, peer cpu 1 (pinned)
# limits: cache-line one-way 0.071 us, memcpy 45000 MB/s in cache, 18000 MB/s out of cache

# commperf latency | transport shm | mode poll | validated
# Size   p50(us)  p90(us)  p99(us)  min(us)  max(us)  mean(us)    eff
8          0.213    0.250    0.401    0.180    12.50     0.223  33.4%
1048576    95.12   101.50   130.25    90.00   250.75     97.88      -

# commperf bw | transport shm | mode poll | window 64 | validated
# Size     MB/s  msgs/s    eff
65536   8012.35  122259  44.5%
";
    assert_eq!(render(&report(), Format::Table), expected);
}

#[test]
fn markdown_format_has_headings_bullets_and_pipe_tables() {
    let expected = "\
- machine: AMD EPYC 7763 64-Core Processor, 2 cpus, kernel 6.8.0-45-generic
- timer: tsc 2.45 GHz, read cost 9.8 ns
- placement: local cpu 0, peer cpu 1 (pinned)
- limits: cache-line one-way 0.071 us, memcpy 45000 MB/s in cache, 18000 MB/s out of cache

## latency, transport shm, mode poll, validated

| Size    | p50(us) | p90(us) | p99(us) | min(us) | max(us) | mean(us) |   eff |
| :------ | ------: | ------: | ------: | ------: | ------: | -------: | ----: |
| 8       |   0.213 |   0.250 |   0.401 |   0.180 |   12.50 |    0.223 | 33.4% |
| 1048576 |   95.12 |  101.50 |  130.25 |   90.00 |  250.75 |    97.88 |     - |

## bw, transport shm, mode poll, window 64, validated

| Size  |    MB/s | msgs/s |   eff |
| :---- | ------: | -----: | ----: |
| 65536 | 8012.35 | 122259 | 44.5% |
";
    assert_eq!(render(&report(), Format::Md), expected);
}

#[test]
fn csv_format_is_one_flat_table_at_full_precision() {
    let expected = "\
benchmark,transport,mode,size_bytes,iterations,warmup,window,p50_us,p90_us,p99_us,min_us,max_us,mean_us,mb_per_s,msgs_per_s,efficiency,limit_us,limit_mb_per_s,baseline_p50_us,cost_us,block_spins,connections,segments,packed,buffers,o_s_us,o_r_us,g_us,G_us_per_byte,L_us,validated
latency,shm,poll,8,100000,1000,,0.2134,0.25,0.4012,0.18,12.5034,0.2231,,,0.3337,0.0712,,,,,,,,,,,,,,true
bw,shm,poll,65536,2000,20,64,,,,,,,8012.3456,122258.6,0.4451,,18000.5,,,,,,,,,,,,,true
latency,shm,poll,1048576,1000,10,,95.123,101.5,130.25,90,250.75,97.8761,,,,,,,,,,,,,,,,,,true
";
    assert_eq!(render(&report(), Format::Csv), expected);
}

#[test]
fn csv_columns_are_exactly_the_row_fields() {
    let mut r = report().results[0].clone();
    r.window = Some(1);
    (r.mb_per_s, r.msgs_per_s) = (Some(1.0), Some(1.0));
    (r.limit_us, r.limit_mb_per_s) = (Some(1.0), Some(1.0));
    (r.baseline_p50_us, r.cost_us, r.block_spins) = (Some(1.0), Some(1.0), Some(1));
    (r.segments, r.packed, r.connections) = (Some(2), Some(true), Some(8));
    r.buffers = Some(commperf_core::BufferUse::Registered);
    (r.o_s_us, r.o_r_us, r.g_us, r.gap_per_byte_us, r.L_us) =
        (Some(1.0), Some(1.0), Some(1.0), Some(1.0), Some(1.0));
    let v = serde_json::to_value(&r).unwrap();
    let mut fields: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    let mut columns = csv::COLUMNS.to_vec();
    fields.sort_unstable();
    columns.sort_unstable();
    assert_eq!(
        fields, columns,
        "a Row field is missing from the CSV (or vice versa)"
    );
}

#[test]
fn mr_columns_mixed_windows_and_partial_validation() {
    let mut r = report();
    r.limits = None;
    r.placement = Placement {
        pinned: false,
        local_cpu: None,
        peer_cpu: Some(3),
    };
    r.machine.timer = TimerInfo {
        source: "monotonic".to_string(),
        tsc_ghz: None,
        cost_ns: 25.04,
    };
    let mut a = Row::new(Benchmark::Mr, TransportKind::Tcp, Mode::Block, 1);
    (a.window, a.msgs_per_s, a.mb_per_s) = (Some(16), Some(1_500_000.4), Some(1.5));
    let mut b = Row::new(Benchmark::Mr, TransportKind::Tcp, Mode::Block, 64);
    (b.window, b.msgs_per_s, b.validated) = (Some(64), Some(999_999.5), true);
    r.results = vec![a, b];
    let expected = "\
# machine: AMD EPYC 7763 64-Core Processor, 2 cpus, kernel 6.8.0-45-generic
# timer: monotonic, read cost 25.0 ns
# placement: local cpu unknown, peer cpu 3 (not pinned)

# commperf mr | transport tcp | mode block | validated 1 of 2 sizes
# Size   msgs/s  MB/s  window
1       1500000  1.50      16
64      1000000     -      64
";
    assert_eq!(render(&r, Format::Table), expected);
}

#[test]
fn empty_results_say_so() {
    let mut r = report();
    r.results.clear();
    assert!(render(&r, Format::Table).ends_with("(pinned)\n# limits: cache-line one-way 0.071 us, memcpy 45000 MB/s in cache, 18000 MB/s out of cache\n\n# no results\n"));
    assert!(render(&r, Format::Md).ends_with("\n\nNo results.\n"));
    assert_eq!(render(&r, Format::Csv).lines().count(), 1, "header only");
}

#[test]
fn json_round_trips_through_load_json() {
    let r = report();
    let text = render(&r, Format::Json);
    assert!(text.starts_with("{\n  \"schema_version\": 1,\n"));
    assert!(text.ends_with("}\n"));
    assert_eq!(load_json(&text).unwrap(), r);
}

#[test]
fn newer_schema_version_is_refused_by_name() {
    let mut v = serde_json::to_value(report()).unwrap();
    v["schema_version"] = 99.into();
    // A newer schema may change anything; the version is what gets reported.
    v["results"] = "changed shape".into();
    let err = load_json(&v.to_string()).unwrap_err();
    assert_eq!(
        err,
        ReportError::UnsupportedVersion {
            found: 99,
            supported: SCHEMA_VERSION
        }
    );
    let msg = err.to_string();
    assert!(msg.contains("99"), "{msg}");
    assert_eq!(
        msg,
        "result file has schema_version 99, which this commperf cannot read (it reads versions \
         1 to 1); it was written by a newer commperf"
    );
    v["schema_version"] = 0.into();
    assert!(matches!(
        load_json(&v.to_string()),
        Err(ReportError::UnsupportedVersion { found: 0, .. })
    ));
}

#[test]
fn parse_errors_carry_line_and_column() {
    let err = load_json("{\n  \"schema_version\": 1,\n  \"tool\": }").unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid result file at 3:11: expected value"
    );

    // Valid JSON, wrong shape: the position comes from the typed parse.
    let text = render(&report(), Format::Json).replace("\"tool\"", "\"tool_name\"");
    match load_json(&text).unwrap_err() {
        ReportError::Parse {
            line,
            column,
            message,
        } => {
            assert!(line > 1 && column > 0, "{line}:{column}");
            assert_eq!(message, "missing field `tool`");
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(matches!(
        load_json(""),
        Err(ReportError::Parse { line: 1, .. })
    ));
}

#[test]
fn format_names_parse_and_errors_list_allowed_values() {
    for f in Format::ALL {
        assert_eq!(f.as_str().parse::<Format>().unwrap(), *f);
        assert_eq!(f.to_string(), f.as_str());
    }
    assert_eq!(Format::default(), Format::Table);
    let e = "html".parse::<Format>().unwrap_err();
    assert_eq!(
        e.to_string(),
        "unknown format 'html' (allowed: table json csv md)"
    );
}

#[test]
fn loggp_summary_follows_seed_004_table_3_1() {
    let mut r = report();
    r.results.clear();
    for (t, size, os, or, l) in [
        (TransportKind::Shm, 1, 0.9, 0.9, 0.9),
        (TransportKind::Shm, 4, 0.02, 0.03, 0.05),
        (TransportKind::Tcp, 4, 3.0, 1.0, 1.0),
    ] {
        let mut row = Row::new(Benchmark::Loggp, t, Mode::Poll, size);
        (row.o_s_us, row.o_r_us, row.L_us) = (Some(os), Some(or), Some(l));
        row.g_us = Some(0.5);
        row.p50_us = Some(os + or + l);
        r.results.push(row);
    }
    let text = render(&r, Format::Table);
    let summary = text
        .split("# commperf loggp summary ")
        .nth(1)
        .expect("summary present");
    let expected = "\
 at 4 B (seed 004 Table 3.1, Figure 3.5)
# parameter   shm poll  tcp poll
O_s (us)         0.020     3.000
O_r (us)         0.030     1.000
g (us)           0.500     0.500
L (us)           0.050     1.000
latency (us)     0.100     5.000
O_s share          20%       60%
O_r share          30%       20%
L share            50%       20%
";
    assert_eq!(summary, expected);
    // No loggp rows, no summary.
    assert!(!render(&report(), Format::Table).contains("loggp summary"));
}
