//! `commperf app --loop`: a real small loop over Open MPI's two stacks (2 ranks, the kit's
//! pipeline and cg at small sizes), checked against what the run itself wrote: the stacks'
//! LogGP parameters are those of the bench files, the reference is the stack with the smaller
//! o_s + L + o_r, the knobs are the parameters' differences (negatives clamped and named), the
//! in-process replay equals `commperf predict` run on the trace the loop wrote with the same
//! parameters, the errors are the JSON's own times' ratios, the window measured holds the
//! program's timed loop, the study round-trips through `app report` (a version 1 file still
//! reads) and its page loads in a headless Chromium with figure (c). Without Open MPI or the
//! `mpi` feature (or Chromium) the test skips with a message, unless `COMMPERF_REQUIRE_MPI=1`.

mod mpi_apps;
use mpi_apps::{chromium, exe, need, need_chromium, need_mpi_feature, ok, text, Scratch};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("number expected: {v}"))
}

/// The first piece of a `bench loggp` result file, in ns: (L, o_s, o_r, g, G, O).
/// Which row of a bench file: its first (smallest size), the first of a piece, or the first of
/// the identified piece covering a size (the nearest on a log scale when none does).
#[derive(Clone, Copy)]
enum Piece {
    First,
    Span(u64, u64),
    Covering(u64),
}

fn bench_params(file: &Path, which: Piece) -> [f64; 9] {
    let t = std::fs::read_to_string(file).expect("bench file");
    let j: Value = serde_json::from_str(&t).expect("bench JSON");
    let mut rows: Vec<&Value> = j["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["benchmark"] == "loggp")
        .collect();
    rows.sort_by_key(|r| r["size_bytes"].as_u64().unwrap());
    let span = |r: &Value| (r["piece_from_bytes"].as_u64(), r["piece_to_bytes"].as_u64());
    let row = match which {
        Piece::First => rows.first().copied(),
        Piece::Span(lo, hi) => rows
            .iter()
            .copied()
            .find(|r| span(r) == (Some(lo), Some(hi))),
        Piece::Covering(size) => {
            // A piece whose parameters the bench could not all identify is not one the loop
            // can take.
            let identified = |r: &&&Value| {
                [
                    "L_us",
                    "o_s_fixed_us",
                    "o_r_fixed_us",
                    "g_us",
                    "G_us_per_byte",
                ]
                .iter()
                .all(|k| r[*k].as_f64().is_some_and(|x| x.is_finite() && x >= 0.0))
            };
            let away = |r: &&Value| match span(r) {
                (Some(lo), Some(hi)) if lo <= size && size <= hi => 0.0,
                (Some(lo), Some(hi)) => {
                    let s = size.max(1) as f64;
                    (s / lo as f64).ln().abs().min((s / hi as f64).ln().abs())
                }
                _ => f64::INFINITY,
            };
            rows.iter()
                .filter(identified)
                .copied()
                .min_by(|a, b| away(a).total_cmp(&away(b)))
        }
    }
    .expect("a loggp row");
    let us = |k: &str| row[k].as_f64().unwrap_or(0.0) * 1e3;
    [
        us("L_us"),
        us("o_s_fixed_us"),
        us("o_r_fixed_us"),
        us("g_us"),
        us("G_us_per_byte"),
        (us("O_s_us_per_byte") + us("O_r_us_per_byte")) / 2.0,
        us("overlap_us"),
        us("send_wait_us"),
        us("duplex_us"),
    ]
}

/// The page loads in a headless Chromium with no console message (its Content-Security-Policy
/// makes any load or script one) and its DOM holds figure (c) with its points.
fn chromium_loads(s: &Scratch, html: &str) {
    need_chromium("app_loop");
    let page = s.0.join("loop.html");
    std::fs::write(&page, html).unwrap();
    let (o, console) = chromium(s, &page, &["--dump-dom"]);
    ok(&o);
    assert!(console.is_empty(), "{console:?}");
    let dom = text(&o.stdout);
    let at = dom.find("id=\"fig-loop\"").expect("figure (c) in the DOM");
    let fig = &dom[at..];
    let fig = &fig[..fig.find("</svg>").expect("its svg")];
    assert_eq!(fig.matches("<circle class=\"point\"").count(), 4, "{fig}");
    assert_eq!(fig.matches("<rect class=\"point\"").count(), 2, "{fig}");
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1e-12)
}

#[test]
#[cfg_attr(
    not(all(commperf_mpi_feature, commperf_has_openmpi, commperf_has_chromium)),
    ignore = "needs a build with the mpi feature (--features commperf/mpi) and Open MPI (mpicc.openmpi, mpirun.openmpi: apt-get install libopenmpi-dev openmpi-bin) and chromium (apt-get install chromium)"
)]
fn the_loop_predicts_and_emulates_every_stack_from_the_reference() {
    need_mpi_feature("app_loop");
    need("app_loop", &["mpicc.openmpi", "mpirun.openmpi"]);
    let s = Scratch::new("app-loop", "loop");
    let out = s.0.join("study");
    // The limit is a hang guard, not a timing claim: 46 s idle, but a loaded 2-core machine
    // (two CPU hogs and a build) stretched the LogGP measurements alone past 600 s, ranks that
    // yield while they poll giving their CPU away for a time slice per message.
    let o = Command::new("timeout")
        .args(["-k", "10", "2400", exe(), "app", "--np", "2", "--cache"])
        .arg(s.0.join("cache"))
        .args([
            "--programs",
            "pipeline,cg",
            "--stacks",
            "ompi-shm,ompi-tcp",
            "--no-bench",
            "--loop",
            "--arg",
            "pipeline:iters=5",
            "--arg",
            "cg:iters=50",
            "--arg",
            "cg:m=256",
            "--json",
            "-o",
        ])
        .arg(&out)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("COMMPERF_PROGRESS_AFTER_MS", "0")
        .current_dir(&s.0)
        .output()
        .expect("commperf app --loop");
    ok(&o);
    let j: Value = serde_json::from_str(&text(&o.stdout)).expect("--json prints JSON");
    assert_eq!(j["schema_version"], 2);
    let l = &j["loop"];
    assert!(l.is_object(), "{j}");

    // The parameters are the bench files' first piece, in ns.
    let stacks = l["stacks"].as_array().unwrap();
    assert_eq!(stacks.len(), 2);
    let mut p: Vec<[f64; 9]> = Vec::new();
    for (st, name) in stacks.iter().zip(["ompi-shm", "ompi-tcp"]) {
        assert_eq!(st["stack"], name);
        assert!(st["error"].is_null(), "{st}");
        let file = out.join(format!("loggp-{name}.json"));
        assert_eq!(st["file"].as_str().map(Path::new), Some(file.as_path()));
        let b = bench_params(&file, Piece::First);
        let q = &st["params"];
        let got = [
            f(&q["L_ns"]),
            f(&q["o_s_ns"]),
            f(&q["o_r_ns"]),
            f(&q["g_ns"]),
            f(&q["G_ns_per_byte"]),
            f(&q["O_ns_per_byte"]),
            f(&q["overlap_ns"]),
            f(&q["send_wait_ns"]),
            f(&q["duplex_ns"]),
        ];
        for (g, w) in got.iter().zip(&b) {
            assert!(close(*g, *w), "{name}: {got:?} against the file's {b:?}");
        }
        assert!(close(f(&q["small_message_ns"]), b[0] + b[1] + b[2]), "{q}");
        p.push(b);
    }
    // The reference: the smaller o_s + L + o_r.
    let cost = |b: &[f64; 9]| b[0] + b[1] + b[2];
    let (r, other) = if cost(&p[0]) <= cost(&p[1]) {
        (0, 1)
    } else {
        (1, 0)
    };
    let names = ["ompi-shm", "ompi-tcp"];
    assert_eq!(l["reference"], names[r], "{l}");
    assert!(
        l["reference_rule"]
            .as_str()
            .unwrap()
            .starts_with(&format!("{}: the least small-message cost", names[r])),
        "{l}"
    );

    let cells = l["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 4);
    // The machine was probed (CI and this VM have two CPUs): its usual state is a cache line's
    // one-way trip, tens to hundreds of ns.
    let usual = f(&l["usual_state_ns"]);
    assert!((1.0..1e4).contains(&usual), "{l}");
    let mut predictions = 0;
    let mut emulations = 0;
    for c in cells {
        let (prog, stack) = (c["program"].as_str().unwrap(), c["stack"].as_str().unwrap());
        assert!(c["error"].is_null(), "{c}");
        assert_eq!(c["window_from"], "barrier", "{c}");
        let study_cell = j["cells"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["program"] == prog && x["stack"] == stack)
            .unwrap();
        assert_eq!(c["measured_program_s"], study_cell["time_s"], "{c}");
        // Each run's machine state beside its time: a cache line's trip between two CPUs, a
        // few to a few hundred ns (null only where the state changed during the run).
        let states = study_cell["run_states_ns"].as_array().unwrap();
        assert_eq!(
            states.len(),
            study_cell["times_s"].as_array().unwrap().len()
        );
        assert!(
            states
                .iter()
                .flat_map(Value::as_f64)
                .all(|x| (1.0..1e4).contains(&x)),
            "{study_cell}"
        );
        // A cell is marked for another state only by a state that differs from the usual one
        // (which is one of the study's), and then says which figures.
        for why in c["other_state"].as_array().unwrap() {
            let w = why.as_str().unwrap();
            assert!(
                w.contains("in another state") || w.starts_with("the bench of"),
                "{w}"
            );
        }
        // The window runs from the barrier the kit starts its clock after to the last call,
        // which is after the clock stops: it holds the timed loop, and lies within the launch.
        let (m, prog_s) = (f(&c["measured_total_s"]), f(&c["measured_program_s"]));
        assert!(m >= 0.99 * prog_s, "{c}");
        assert!(m < f(&study_cell["wall_s"]), "{c}");
        let comm = f(&c["measured_comm_s"]);
        assert!(comm > 0.0 && comm <= m, "{c}");
        // The errors are the JSON's own ratios.
        let pred = f(&c["predicted_total_s"]);
        assert!(
            close(f(&c["total_error_percent"]), (pred - m) / m * 100.0),
            "{c}"
        );
        let pc = f(&c["predicted_comm_s"]);
        assert!(pc > 0.0 && pc <= pred, "{c}");
        assert!(close(
            f(&c["comm_error_percent"]),
            (pc - comm) / comm * 100.0
        ));
        predictions += 1;

        // The replay is `commperf predict` on the trace the loop wrote, with this stack's
        // parameters.
        let si = names.iter().position(|n| *n == stack).unwrap();
        // The piece the cell names: the one covering the trace's median message.
        let piece = Piece::Span(
            c["piece_from_bytes"].as_u64().expect("the replay's piece"),
            c["piece_to_bytes"].as_u64().expect("the replay's piece"),
        );
        let file_of = |i: usize| out.join(format!("loggp-{}.json", names[i]));
        let b = bench_params(&file_of(si), piece);
        // Messages to oneself at the reference's overheads, its piece for the same messages.
        let ref_cell = cells
            .iter()
            .find(|x| x["program"] == prog && x["stack"] == names[r])
            .unwrap();
        let own = bench_params(
            &file_of(r),
            Piece::Span(
                ref_cell["piece_from_bytes"].as_u64().unwrap(),
                ref_cell["piece_to_bytes"].as_u64().unwrap(),
            ),
        );
        // --repeat 1: the median run is the only one.
        let trace = out
            .join(prog)
            .join(names[r])
            .join("run-0")
            .join("trace.txt");
        assert_eq!(c["trace"].as_str().map(Path::new), Some(trace.as_path()));
        assert!(trace.is_file(), "{}", trace.display());
        let po = Command::new(exe())
            .args(["predict", "--trace"])
            .arg(&trace)
            .args([
                "--model",
                "loggp",
                "--eager",
                "64k",
                "--no-receive-gap",
                "--loggp-receive",
                "last-byte",
                "--progress",
                "wait",
                "--local-self-messages",
                "--self-overheads",
                &format!("o_s={},o_r={},O={}", own[1], own[2], own[5]),
                "--format",
                "json",
                "--loggp",
                &format!(
                    "L={},o_s={},o_r={},g={},G={},O={}",
                    b[0], b[1], b[2], b[3], b[4], b[5]
                ),
                // The piece's overlap, the send's wait and the exchange's excess (`bench
                // loggp` measures the exchange at the MPI layer).
                "--overlap",
                &format!("overlap={},wait={},duplex={}", b[6], b[7], b[8]),
            ])
            .output()
            .expect("commperf predict");
        ok(&po);
        let pj: Value = serde_json::from_str(&text(&po.stdout)).expect("predict JSON");
        assert!(
            (f(&pj["total_us"]) * 1e-6 - pred).abs() <= 1e-9 * pred.max(1e-6),
            "{stack}: predict says {} µs, the loop {pred} s",
            pj["total_us"]
        );

        let e = &c["emulation"];
        if si == r {
            assert!(e.is_null(), "the reference is not emulated: {c}");
            continue;
        }
        assert!(e["error"].is_null(), "{e}");
        // The knobs are the differences of the two stacks' pieces covering the program's
        // typical message on the reference, negatives clamped to 0 and named.
        let typical = j["cells"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["program"] == prog && x["stack"] == names[r])
            .and_then(|x| x["profile"]["dominant_mean_bytes"].as_u64())
            .expect("the reference's message profile");
        let (slow, fast) = (
            bench_params(&file_of(other), Piece::Covering(typical)),
            bench_params(&file_of(r), Piece::Covering(typical)),
        );
        let d = |i: usize| slow[i] - fast[i];
        let want = [
            ("o_ns", "o", (d(1) + d(2)) / 2.0),
            ("g_ns", "g", d(3)),
            ("G_ns_per_byte", "G", d(4)),
            ("L_ns", "L", d(0)),
        ];
        let clamped: Vec<&str> = e["clamped"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_str().unwrap())
            .collect();
        for (field, name, v) in want {
            // A ΔL above 0 but below what L's side band costs a message (150 ns) is not
            // emulated either, and named with its sign.
            let floor = name == "L" && v > 0.0 && v < 150.0;
            let set = if v < 0.0 || floor { 0.0 } else { v };
            assert!(close(f(&e[field]), set), "{field}: want {v}: {e}");
            assert_eq!(
                clamped.iter().any(|c| c.starts_with(&format!("{name} -"))),
                v < 0.0,
                "{name} = {v}: {e}"
            );
            assert_eq!(
                clamped.iter().any(|c| c.starts_with(&format!("{name} +"))),
                floor,
                "{name} = {v}: {e}"
            );
        }
        let et = f(&e["total_s"]);
        assert!(
            close(f(&e["total_error_percent"]), (et - m) / m * 100.0),
            "{e}"
        );
        let ep = f(&e["program_s"]);
        assert!(close(
            f(&e["program_error_percent"]),
            (ep - prog_s) / prog_s * 100.0
        ));
        let dirs = e["monitor_dirs"].as_array().unwrap();
        assert_eq!(dirs.len(), 1);
        let d0 = Path::new(dirs[0].as_str().unwrap());
        assert!(
            d0.starts_with(out.join(prog).join(names[r])) && d0.join("rank-1.cpmpi").is_file(),
            "{}",
            d0.display()
        );
        assert!(
            !d0.join(".emulate").exists(),
            "the knobs' run files are removed"
        );
        emulations += 1;
    }
    assert_eq!(l["predictions"], predictions);
    assert_eq!(l["emulations"], emulations);
    let within = cells
        .iter()
        .filter(|c| f(&c["total_error_percent"]).abs() <= 10.0)
        .count();
    assert_eq!(l["predictions_within_10_percent"], within);

    // The table, the SVG, and the saved study again.
    let t = text(&o.stderr);
    assert!(t.contains("LogGP parameters of ompi-tcp"), "{t}");
    let svg = std::fs::read_to_string(out.join("loop.svg")).expect("loop.svg");
    assert!(svg.starts_with("<svg "), "{svg}");
    assert_eq!(svg.matches("<circle class=\"point\"").count(), 4, "{svg}");
    assert_eq!(svg.matches("<rect class=\"point\"").count(), 2, "{svg}");
    let report = |args: &[&str], file: &Path| {
        let o = Command::new(exe())
            .args(["app", "report"])
            .arg(file)
            .args(args)
            .output()
            .expect("app report");
        ok(&o);
        text(&o.stdout)
    };
    let back: Value =
        serde_json::from_str(&report(&["--format", "json"], &out)).expect("report JSON");
    assert_eq!(back, j, "the study round-trips through app report");
    let table = report(&[], &out);
    assert!(table.contains("# the loop: predicted"), "{table}");
    assert!(
        table.contains(&format!("within 10 %: {within} of 4 predictions (total)")),
        "{table}"
    );
    let html = report(&["--format", "html"], &out);
    assert!(html.contains("id=\"fig-loop\""), "{html}");
    assert_eq!(html.matches("<circle class=\"point\"").count(), 4);
    chromium_loads(&s, &html);
    // A version 1 study (no loop) still reads.
    let mut v1 = j.clone();
    v1["schema_version"] = 1.into();
    v1.as_object_mut().unwrap().remove("loop");
    let f1 = s.0.join("v1.json");
    std::fs::write(&f1, serde_json::to_string(&v1).unwrap()).unwrap();
    let t1 = report(&[], &f1);
    assert!(
        t1.contains("# commperf app | 2 ranks") && !t1.contains("the loop"),
        "{t1}"
    );
}

/// A stack whose MPI this commperf does not link, with no `--mpich-commperf`: no parameters,
/// and its loop cells say why while its measured times are still there; the reference is the
/// stack that has parameters.
#[test]
#[cfg_attr(
    not(all(commperf_mpi_feature, commperf_has_openmpi, commperf_has_mpich)),
    ignore = "needs a build with the mpi feature (--features commperf/mpi) and Open MPI (mpicc.openmpi, mpirun.openmpi: apt-get install libopenmpi-dev openmpi-bin) and MPICH (mpicc.mpich, mpirun.mpich: apt-get install libmpich-dev mpich)"
)]
fn a_stack_without_a_commperf_for_its_mpi_says_why_in_its_loop_cells() {
    need_mpi_feature("app_loop_mpich");
    need(
        "app_loop_mpich",
        &[
            "mpicc.openmpi",
            "mpirun.openmpi",
            "mpicc.mpich",
            "mpiexec.mpich",
        ],
    );
    let s = Scratch::new("app-loop", "nompich");
    let out = s.0.join("study");
    // The limit is a hang guard, not a timing claim: 46 s idle, but a loaded 2-core machine
    // (two CPU hogs and a build) stretched the LogGP measurements alone past 600 s, ranks that
    // yield while they poll giving their CPU away for a time slice per message.
    let o = Command::new("timeout")
        .args(["-k", "10", "2400", exe(), "app", "--np", "2", "--cache"])
        .arg(s.0.join("cache"))
        .args(["--programs", "pipeline", "--stacks", "mpich-shm,ompi-shm"])
        .args(["--no-bench", "--loop", "--arg", "pipeline:iters=5", "-o"])
        .arg(&out)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .current_dir(&s.0)
        .output()
        .expect("commperf app --loop");
    ok(&o);
    let t = text(&o.stdout);
    let j: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("study.json")).unwrap()).unwrap();
    let l = &j["loop"];
    assert_eq!(l["reference"], "ompi-shm", "{l}");
    let st = &l["stacks"][0];
    assert_eq!(st["stack"], "mpich-shm");
    assert!(st["params"].is_null(), "{st}");
    assert!(
        st["error"].as_str().unwrap().contains("--mpich-commperf"),
        "{st}"
    );
    let c = &l["cells"][0];
    assert_eq!(c["stack"], "mpich-shm");
    assert!(
        c["error"]
            .as_str()
            .unwrap()
            .starts_with("no LogGP parameters: "),
        "{c}"
    );
    assert!(c["predicted_total_s"].is_null(), "{c}");
    assert!(f(&c["measured_total_s"]) > 0.0, "{c}");
    let e = &c["emulation"];
    assert!(
        e["error"]
            .as_str()
            .unwrap()
            .starts_with("no LogGP parameters of mpich-shm: "),
        "{e}"
    );
    assert!(e["monitor_dirs"].as_array().unwrap().is_empty(), "{e}");
    assert!(!out.join("pipeline/ompi-shm/emulate-mpich-shm").exists());
    assert_eq!(
        (l["predictions"].as_u64(), l["emulations"].as_u64()),
        (Some(1), Some(0))
    );
    assert!(t.contains("mpich-shm  no parameters: "), "{t}");
    assert!(
        t.contains("pipeline emulating mpich-shm: no LogGP parameters"),
        "{t}"
    );
}
