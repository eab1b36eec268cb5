//! `commperf app --html FILE` and `app report DIR --format html`, checked in a real headless
//! Chromium: a real small study (Open MPI's two stacks, 2 ranks, the kit's pipeline and ep and a
//! non-MPI command whose name is markup) is written as a page, re-rendered from its study.json,
//! loaded by `chromium --headless=new --dump-dom` and screenshotted; the page must load with no
//! console message (its Content-Security-Policy turns any external load and any injected
//! script or handler into one), and its DOM must hold the study.json's measured values and the
//! expected figures and bars. Without Open MPI, the `mpi` feature or Chromium the test skips with
//! a message, unless `COMMPERF_REQUIRE_MPI=1` (as CI sets it).

mod mpi_apps;
use mpi_apps::{chromium, exe, need, need_chromium, need_mpi_feature, ok, text, Scratch};
use serde_json::Value;
use std::process::Command;
use std::time::Instant;

/// The markup a program's name carries in: a command's name is its file name, which cannot
/// hold a `/`, so an image with a handler rather than a script element.
const HOSTILE: &str = "<img src=x onerror=console.error(666)>";

fn cells<'a>(j: &'a Value, program: &str) -> Vec<&'a Value> {
    j["cells"]
        .as_array()
        .expect("cells")
        .iter()
        .filter(|c| c["program"] == program)
        .collect()
}

/// The part of `dom` from the element that carries `marker` to the end of its SVG.
fn svg_of<'a>(dom: &'a str, marker: &str) -> &'a str {
    let at = dom
        .find(marker)
        .unwrap_or_else(|| panic!("no {marker} in {dom}"));
    let d = &dom[at..];
    &d[..d.find("</svg>").expect("svg end")]
}

#[test]
#[cfg_attr(
    not(all(commperf_mpi_feature, commperf_has_openmpi, commperf_has_chromium)),
    ignore = "needs a build with the mpi feature (--features commperf/mpi) and Open MPI (mpicc.openmpi, mpirun.openmpi: apt-get install libopenmpi-dev openmpi-bin) and chromium (apt-get install chromium)"
)]
fn a_real_studys_page_loads_in_chromium_with_its_values_and_figures() {
    need_mpi_feature("app_html");
    need("app_html", &["mpicc.openmpi", "mpirun.openmpi"]);
    need_chromium("app_html");
    let s = Scratch::new("app-html", "chromium");
    let out = s.0.join("study");
    let page = s.0.join("page.html");
    // A command that is no MPI program, named by markup: its cells fail (the interposer sees
    // nothing), and its name goes into the page's tables.
    let hostile = s.0.join(HOSTILE);
    std::os::unix::fs::symlink("/bin/true", &hostile).expect("symlink");
    let t0 = Instant::now();
    let o = Command::new("timeout")
        .args(["-k", "10", "600", exe(), "app", "--np", "2", "--cache"])
        .arg(s.0.join("cache"))
        .args(["--programs", "pipeline,ep", "--stacks", "ompi-shm,ompi-tcp"])
        .args(["--arg", "pipeline:bs=4", "--arg", "pipeline:blocks=3"])
        .args(["--arg", "pipeline:iters=5", "--arg", "ep:n=5000", "--arg"])
        .args(["ep:work=4", "-o", out.to_str().unwrap(), "--html"])
        .arg(&page)
        .arg("--")
        .arg(&hostile)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .current_dir(&s.0)
        .output()
        .expect("run commperf app");
    ok(&o);
    let study_s = t0.elapsed().as_secs_f64();
    assert!(
        text(&o.stderr).contains(&format!("commperf: wrote {}", page.display())),
        "{}",
        text(&o.stderr)
    );
    let html = std::fs::read_to_string(&page).expect("the page");
    let j: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("study.json")).unwrap()).unwrap();

    // The same page again from the saved study.
    let again = s.0.join("again.html");
    let r = Command::new(exe())
        .args(["app", "report"])
        .arg(&out)
        .args(["--format", "html", "-o"])
        .arg(&again)
        .output()
        .expect("app report");
    ok(&r);
    assert_eq!(
        std::fs::read_to_string(&again).unwrap(),
        html,
        "app report re-renders the page app wrote"
    );

    let t1 = Instant::now();
    let (d, console) = chromium(&s, &page, &["--dump-dom"]);
    ok(&d);
    assert!(console.is_empty(), "console messages: {console:#?}");
    let dom = text(&d.stdout);
    // Loaded and parsed: the title, the tables, and the study's figures in them.
    assert!(
        dom.contains("<title>commperf app: 3 program(s) × 2 stack(s), 2 ranks</title>"),
        "{dom}"
    );
    for c in cells(&j, "pipeline").iter().chain(&cells(&j, "ep")) {
        let (p, st) = (c["program"].as_str().unwrap(), c["stack"].as_str().unwrap());
        let t = c["time_s"]
            .as_f64()
            .unwrap_or_else(|| panic!("{p} on {st} failed: {c}"));
        // The exact time in an attribute, the shown one in the unit that suits it.
        // The kit's time is its own, found by its pattern, which the cell's title names.
        let by = c["time_pattern"].as_str().unwrap();
        let td = format!(
            "<td class=\"time\" data-program=\"{p}\" data-stack=\"{st}\" data-seconds=\"{t}\" \
             data-time-source=\"program\" title=\"time printed by the program, found by {by}\">{}</td>",
            commperf_report::units::format_seconds(t)
        );
        assert!(dom.contains(&td), "{td} not in {dom}");
        let m = c["profile"]["messages"].as_u64().unwrap();
        assert_eq!(m, if p == "pipeline" { 30 } else { 0 }, "{c}");
        // pipeline's stack figures at its 32 bytes (this commperf links Open MPI).
        if p == "pipeline" {
            let lat = c["micro"]["latency_us"]
                .as_f64()
                .unwrap_or_else(|| panic!("no micro-benchmark figures: {j}"));
            assert!(
                dom.contains(&format!("<td>{lat:.2}</td>")),
                "{lat} in {dom}"
            );
        }
    }
    // The messages column: pipeline's 30 on both stacks, ep's 0 on both.
    assert_eq!(dom.matches("<td class=\"messages\">30</td>").count(), 2);
    assert_eq!(dom.matches("<td class=\"messages\">0</td>").count(), 2);
    // Figures: (a), and (b) for pipeline alone (ep sends no message; the command has no
    // profile).
    assert_eq!(dom.matches("<svg").count(), 2, "{dom}");
    let a = svg_of(&dom, "class=\"times\"");
    assert_eq!(a.matches("<rect class=\"bar\"").count(), 4, "{a}");
    assert_eq!(a.matches("class=\"failed-mark\"").count(), 2, "{a}");
    let b = svg_of(&dom, "class=\"signature\"");
    assert_eq!(b.matches("<rect class=\"bar\"").count(), 1, "{b}");
    assert!(
        b.contains("data-size-bin=\"32\" data-count=\"30\""),
        "pipeline's 30 messages of 32 bytes: {b}"
    );
    // The command's name is text: escaped in the DOM, no image element made of it.
    assert!(!dom.contains("<img"), "{dom}");
    assert!(
        dom.contains("&lt;img src=x onerror=console.error(666)&gt;"),
        "{dom}"
    );
    for c in cells(&j, HOSTILE) {
        assert!(c["error"].as_str().is_some_and(|e| !e.is_empty()), "{c}");
    }

    // And drawn: a screenshot of the page.
    let png = s.0.join("page.png");
    let (sh, console) = chromium(
        &s,
        &page,
        &[
            "--hide-scrollbars",
            "--window-size=1200,1600",
            &format!("--screenshot={}", png.display()),
        ],
    );
    ok(&sh);
    assert!(console.is_empty(), "console messages: {console:#?}");
    let p = std::fs::read(&png).expect("the screenshot");
    assert_eq!(&p[..8], b"\x89PNG\r\n\x1a\n");
    let (w, h) = (
        u32::from_be_bytes(p[16..20].try_into().unwrap()),
        u32::from_be_bytes(p[20..24].try_into().unwrap()),
    );
    assert_eq!((w, h), (1200, 1600));
    eprintln!(
        "app_html: study {study_s:.1} s, chromium (dump-dom and screenshot) {:.1} s",
        t1.elapsed().as_secs_f64()
    );
}

#[test]
fn html_and_report_inputs_are_checked_by_name() {
    let s = Scratch::new("app-html", "bad");
    let o = Command::new(exe())
        .args(["app", "--programs", "ep", "--html"])
        .arg(s.0.join("no/such/dir/page.html"))
        .output()
        .expect("commperf");
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("--html") && text(&o.stderr).contains("no/such/dir/page.html"),
        "{}",
        text(&o.stderr)
    );
    // A JSON file that is not a study, and a directory without one.
    let other = s.0.join("other.json");
    std::fs::write(
        &other,
        r#"{"schema": "commperf-bench", "schema_version": 1}"#,
    )
    .unwrap();
    let o = Command::new(exe())
        .args(["app", "report"])
        .arg(&other)
        .output()
        .expect("commperf");
    assert_eq!(o.status.code(), Some(1));
    let e = text(&o.stderr);
    assert!(e.contains("other.json: not a commperf app study"), "{e}");
    let o = Command::new(exe())
        .args(["app", "report"])
        .arg(s.0.path())
        .args(["--format", "html"])
        .output()
        .expect("commperf");
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).contains("study.json"),
        "{}",
        text(&o.stderr)
    );
    assert!(o.stdout.is_empty());
}
