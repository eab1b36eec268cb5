//! The documentation against the command line: every list of values a help text gives is
//! complete (computed from the enums the parsers accept), and every command line the README and
//! the book (`docs/src`) show parses, runnable or not (`crates/cli/tests/docs.rs` runs the
//! runnable ones), and every option they name exists.

use crate::cli::{bench_transports, calibrate_transports, BenchArgs, Cli, Command};
use clap::{CommandFactory, Parser};
use commperf_core::{Benchmark, Mode};
use commperf_predict::collectives::Algorithms;
use commperf_predict::gen::Pattern;
use commperf_predict::parse::TraceFormat;
use commperf_report::Format;

/// The long help of `commperf SUB`.
fn help(sub: &str) -> String {
    let mut c = Cli::command();
    c.find_subcommand_mut(sub)
        .unwrap_or_else(|| panic!("no subcommand {sub}"))
        .render_long_help()
        .to_string()
}

/// The help paragraph of one argument: from the line naming it to the next argument's.
fn arg_help(help: &str, arg: &str) -> String {
    let mut out = String::new();
    let mut inside = false;
    for l in help.lines() {
        let t = l.trim_start();
        let starts_arg = t.starts_with('-') || t.starts_with('<') || t.starts_with('[');
        if starts_arg {
            inside = t.starts_with(arg) || t.contains(&format!(", {arg}"));
        }
        if inside {
            out.push_str(t);
            out.push(' ');
        }
    }
    assert!(!out.is_empty(), "no help for {arg} in:\n{help}");
    out
}

/// Whether `name` occurs in `text` as a word of its own (not inside `uring-tcp` or `mpich`).
fn lists(text: &str, name: &str) -> bool {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    text.match_indices(name).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + name.len()..].chars().next();
        !before.is_some_and(word) && !after.is_some_and(word)
    })
}

fn assert_lists(sub: &str, arg: &str, names: &[String]) {
    let h = arg_help(&help(sub), arg);
    for n in names {
        assert!(
            lists(&h, n),
            "`commperf {sub} --help` omits {n} for {arg}: {h}"
        );
    }
}

fn strings<T: std::fmt::Display>(v: &[T]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

fn parses(args: &[&str]) -> Result<Cli, String> {
    let mut argv = vec!["commperf"];
    argv.extend(args);
    Cli::try_parse_from(&argv).map_err(|e| crate::cli::one_line(&e))
}

#[test]
fn help_texts_list_every_value_the_options_accept() {
    // bench: every benchmark, every transport but the tests' model (and no model), every mode,
    // every format; each listed name is accepted.
    assert_lists("bench", "[BENCHMARK]", &strings(Benchmark::ALL));
    for b in Benchmark::ALL {
        parses(&["bench", b.as_str()]).unwrap();
    }
    assert_lists("bench", "-t", &strings(&bench_transports()));
    assert!(!lists(&arg_help(&help("bench"), "-t"), "model"));
    for t in bench_transports() {
        parses(&["bench", "-t", t.as_str()]).unwrap();
    }
    assert_lists("bench", "--mode", &strings(Mode::ALL));
    for sub in ["bench", "report", "compare"] {
        assert_lists(sub, "--format", &strings(Format::ALL));
    }
    assert_lists(
        "limits",
        "--format",
        &strings(&[Format::Table, Format::Json]),
    );
    assert!(parses(&["limits", "--format", "csv"]).is_err());
    // calibrate measures through commperf's own launcher: not mpi.
    assert_lists("calibrate", "-t", &strings(&calibrate_transports()));
    assert!(!lists(&arg_help(&help("calibrate"), "-t"), "mpi"));
    for t in calibrate_transports() {
        parses(&["calibrate", "-t", t.as_str()]).unwrap();
    }
    assert!(parses(&["calibrate", "-t", "mpi"]).is_err());
    // predict: trace formats, and every collective family with every algorithm.
    assert_lists("predict", "--format-in", &strings(TraceFormat::ALL));
    for (family, names) in Algorithms::choices() {
        let h = arg_help(&help("predict"), "--algo");
        assert!(lists(&h, family), "--algo omits {family}: {h}");
        for n in names {
            assert!(h.contains(n), "--algo omits {family}={n}: {h}");
            let spec = format!("{family}={n}");
            parses(&["predict", "--trace", "t", "--algo", &spec]).unwrap();
        }
    }
    // gen-trace: every pattern, each accepted.
    let names: Vec<String> = Pattern::NAMES.iter().map(|s| s.to_string()).collect();
    assert_lists("gen-trace", "<PATTERN>", &names);
    for p in Pattern::NAMES {
        let p = p.replace("XxY", "2x2");
        Pattern::parse(&p, 4).unwrap();
    }
}

/// The documents whose command lines are checked: the README and every chapter of the book,
/// as (path relative to the repository, text). The book is read at test time, so a chapter
/// added later is checked without touching this file.
fn documents() -> Vec<(String, String)> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut docs = vec![(
        "README.md".to_string(),
        include_str!("../../../README.md").to_string(),
    )];
    let mut dirs = vec![root.join("docs/src")];
    let mut files = Vec::new();
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "md") {
                files.push(p);
            }
        }
    }
    files.sort();
    for p in files {
        let name = p.strip_prefix(&root).unwrap_or(&p).display().to_string();
        docs.push((name, std::fs::read_to_string(&p).unwrap()));
    }
    docs
}

/// A document's shell blocks (` ```sh `, ` ```sh,no-run `, bash, shell) and the `commperf …`
/// code spans without placeholders, as argument vectors after `commperf` (or `cargo run … --`).
fn command_lines(doc: &str) -> Vec<(String, Vec<String>)> {
    let mut lines: Vec<String> = Vec::new();
    let mut in_fence = false;
    let mut in_sh = false;
    let mut pending = String::new();
    // Running text is read a paragraph at a time: a code span may wrap onto the next line.
    let mut para = String::new();
    for l in doc.lines().chain(std::iter::once("")) {
        if l.trim_start().starts_with("```") {
            spans(&std::mem::take(&mut para), &mut lines);
            if in_fence {
                (in_fence, in_sh) = (false, false);
            } else {
                let info = l.trim().trim_start_matches('`');
                let lang = info.split([',', ' ']).next().unwrap_or("");
                (in_fence, in_sh) = (true, matches!(lang, "sh" | "bash" | "shell"));
            }
            continue;
        }
        if in_fence {
            if in_sh {
                // Continuation lines join the command they continue.
                match l.trim_end().strip_suffix('\\') {
                    Some(head) => pending.push_str(head),
                    None => {
                        pending.push_str(l);
                        lines.push(std::mem::take(&mut pending));
                    }
                }
            }
            continue;
        }
        if l.trim().is_empty() {
            spans(&std::mem::take(&mut para), &mut lines);
        } else {
            para.push_str(l.trim());
            para.push(' ');
        }
    }
    let mut out = Vec::new();
    for line in lines {
        let words = shell_words(&line);
        let start = if words.first().map(String::as_str) == Some("cargo") {
            // `cargo run --release -- ARGS`; `cargo test -p commperf` runs no commperf.
            (words.get(1).map(String::as_str) == Some("run"))
                .then(|| words.iter().position(|w| w == "--").map(|i| i + 1))
                .flatten()
        } else {
            words
                .iter()
                .position(|w| w == "commperf" || w.ends_with("/commperf"))
                .map(|i| i + 1)
        };
        let Some(start) = start else { continue };
        let args: Vec<String> = words[start..]
            .iter()
            .take_while(|w| !matches!(w.as_str(), "|" | ";" | "&&" | "||" | ">" | "2>"))
            .cloned()
            .collect();
        out.push((line.trim().to_string(), args));
    }
    out
}

/// The `commperf …` code spans of a paragraph of running text, unless they hold a placeholder
/// (FILE, `[…]`, `<token>`, a list of choices `a|b`) or only name a command.
fn spans(para: &str, lines: &mut Vec<String>) {
    for (i, span) in para.split('`').enumerate() {
        let placeholder = span.contains(['[', '<', '…', '|'])
            || span
                .split_whitespace()
                .any(|w| w.len() > 1 && w.chars().all(|c| c.is_ascii_uppercase()));
        // `commperf SUB` alone names a command rather than showing a command line.
        let example = span.split_whitespace().count() > 2
            && [
                "commperf ",
                "mpirun ",
                "mpiexec",
                "srun ",
                "cargo run ",
                "sudo commperf ",
            ]
            .iter()
            .any(|p| span.starts_with(p));
        if i % 2 == 1
            && span.contains("commperf ")
            && !placeholder
            && example
            && !names_a_command(span)
        {
            lines.push(span.to_string());
        }
    }
}

/// Whether a span is `commperf` and subcommand names only (`commperf emulate sweep`): it names
/// a command in running text rather than showing a command line.
fn names_a_command(span: &str) -> bool {
    let mut words = span.split_whitespace();
    if words.next() != Some("commperf") {
        return false;
    }
    let mut cmd = Cli::command();
    for w in words {
        match cmd.find_subcommand(w) {
            Some(sub) => cmd = sub.clone(),
            None => return false,
        }
    }
    true
}

/// Words of a shell line: blanks separate, quotes group, `#` after a blank starts a comment.
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut w = String::new();
    let mut quote: Option<char> = None;
    let mut in_word = false;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => w.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, '#') if !in_word => break,
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut w));
                    in_word = false;
                }
            }
            (None, c) => {
                w.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(w);
    }
    words
}

#[test]
fn every_command_line_in_the_readme_and_the_book_parses() {
    let docs = documents();
    let mut total = 0;
    for (name, text) in &docs {
        let lines = command_lines(text);
        total += lines.len();
        if name == "README.md" {
            // The extractor must find the README's examples, or this test proves nothing.
            assert!(
                lines.len() >= 6,
                "README: {} command lines found: {lines:?}",
                lines.len()
            );
        }
        for (line, args) in &lines {
            check_command_line(name, line, args);
        }
    }
    assert!(docs.len() >= 10, "the book has {} chapters", docs.len() - 1);
    assert!(
        total >= 100,
        "{total} command lines in the README and the book"
    );
}

fn check_command_line(doc: &str, line: &str, args: &[String]) {
    let mut argv = vec!["commperf".to_string()];
    argv.extend(args.iter().cloned());
    let cli = match Cli::try_parse_from(&argv) {
        Ok(cli) => cli,
        // `commperf predict --help` is a command line too: it prints help.
        Err(e)
            if matches!(
                e.kind(),
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion
            ) =>
        {
            return
        }
        Err(e) => panic!(
            "{doc}: `{line}` does not parse: {}",
            crate::cli::one_line(&e)
        ),
    };
    // Options checked across each other, as `main` does.
    if let Command::Bench(b) = &cli.command {
        check_bench(&format!("{doc}: `{line}`"), b);
    }
}

#[test]
fn the_extractor_reads_fences_spans_and_continuations() {
    let doc = "text `commperf bench latency -t shm` and `commperf bench` and `commperf report FILE`\n\
               and `commperf emulate sweep` (a command named) `commperf monitor report mon`, and\n\
               one wrapped: `commperf predict --trace\nt.txt --model loggp`\n\n\
               ```sh,no-run\ncommperf predict --trace t.txt \\\n    --model loggp   # a comment\n```\n\
               ```text\ncommperf bench --nonsense\n```\n\
               ```sh\nD=x; commperf gen-trace ring --ranks 4 -o r.txt > /dev/null\n\
               cargo test -p commperf --test docs\ncargo run --release -- limits\n```\n";
    let lines = command_lines(doc);
    let args: Vec<Vec<String>> = lines.into_iter().map(|(_, a)| a).collect();
    let v = |s: &str| s.split_whitespace().map(str::to_string).collect::<Vec<_>>();
    assert_eq!(
        args,
        vec![
            v("bench latency -t shm"),
            v("monitor report mon"),
            v("predict --trace t.txt --model loggp"),
            v("predict --trace t.txt --model loggp"),
            v("gen-trace ring --ranks 4 -o r.txt"),
            v("limits"),
        ]
    );
}

fn check_bench(at: &str, b: &BenchArgs) {
    use commperf_bench::ConfigError;
    match b.to_config() {
        Ok(cfg) => {
            b.check_plot(&cfg)
                .and_then(|()| b.mpi_layers(&cfg).map(|_| ()))
                .unwrap_or_else(|e| panic!("{at}: {e}"));
        }
        // What depends on this machine (its CPUs, its descriptor limit) or on a file an earlier
        // command of the example writes (`--pipeline-profile` of a calibration).
        Err(ConfigError::Cpus(_) | ConfigError::Conns(_) | ConfigError::PipelineProfile(_)) => {}
        Err(e) => panic!("{at}: {e}"),
    }
}

#[test]
fn every_option_the_readme_and_the_book_name_exists() {
    // Options of the other tools the documents show (cargo, mpirun, srun, the scripts), and
    // clap's own --help and --version.
    let foreign = [
        "--help",
        "--version",
        "--release",
        "--workspace",
        "--no-fail-fast",
        "--features",
        "--path",
        "--locked",
        "--test",
        "--ignored",
        "--all",
        "--all-targets",
        "--check",
        // sockperf's, an anchor of the results.
        "--nonblocked",
        "--oversubscribe",
        "--allow-run-as-root",
        "--bind-to",
        "--cpu-list",
        "--mca",
        "--mpi",
        // scripts/build_mpich_apps.sh's.
        "--lammps",
        // scripts/sanitize.sh's, and cargo fuzz's (the robustness page).
        "--only",
        "--csrc",
        "--sanitizer",
        "--fuzz-dir",
        "--debug-assertions",
        "--cfg",
    ];
    let mut ours: Vec<String> = Vec::new();
    // Subcommands and theirs (`monitor run`, `monitor report`), and the top level's.
    let top = Cli::command();
    let mut subs: Vec<clap::Command> = vec![top];
    while let Some(sub) = subs.pop() {
        for a in sub.get_arguments() {
            if let Some(l) = a.get_long() {
                ours.push(format!("--{l}"));
            }
        }
        subs.extend(sub.get_subcommands().cloned());
    }
    let mut missing = Vec::new();
    for (doc, text) in documents() {
        for (i, _) in text.match_indices("--") {
            let rest = &text[i + 2..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-')
                .collect();
            let prev = text[..i].chars().next_back();
            // `#--layers-…` is a link to a heading about the option, not the option.
            if name.is_empty()
                || prev.is_some_and(|c| c.is_ascii_alphanumeric() || c == '-' || c == '#')
            {
                continue;
            }
            let opt = format!("--{}", name.trim_end_matches('-'));
            if opt == "--" {
                continue; // a table rule, `---`
            }
            if !ours.contains(&opt) && !foreign.contains(&opt.as_str()) {
                let m = format!("{doc}: {opt}");
                if !missing.contains(&m) {
                    missing.push(m);
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "the documents name options no subcommand has: {missing:?}"
    );
}
