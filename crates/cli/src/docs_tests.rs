//! The documentation against the command line: every list of values a help text gives is
//! complete (computed from the enums the parsers accept), and every command line the README
//! shows parses.

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

/// The README's shell blocks and the `commperf …` code spans without placeholders, as
/// argument vectors after `commperf` (or `cargo run … --`).
fn readme_command_lines() -> Vec<(String, Vec<String>)> {
    let readme = include_str!("../../../README.md");
    let mut lines: Vec<String> = Vec::new();
    let mut in_sh = false;
    let mut pending = String::new();
    for l in readme.lines() {
        if l.starts_with("```") {
            in_sh = !in_sh && matches!(l.trim(), "```sh" | "```bash" | "```shell");
            continue;
        }
        if in_sh {
            // Continuation lines join the command they continue.
            match l.trim_end().strip_suffix('\\') {
                Some(head) => pending.push_str(head),
                None => {
                    pending.push_str(l);
                    lines.push(std::mem::take(&mut pending));
                }
            }
            continue;
        }
        // `commperf …` in running text, unless it holds a placeholder (FILE, `[…]`, `<token>`).
        for (i, span) in l.split('`').enumerate() {
            let placeholder = span.contains(['[', '<', '…'])
                || span
                    .split_whitespace()
                    .any(|w| w.len() > 1 && w.chars().all(|c| c.is_ascii_uppercase()));
            // `commperf SUB` alone names a command rather than showing a command line.
            let example = span.split_whitespace().count() > 2
                && ["commperf ", "mpirun ", "mpiexec", "srun ", "cargo run "]
                    .iter()
                    .any(|p| span.starts_with(p));
            if i % 2 == 1 && span.contains("commperf ") && !placeholder && example {
                lines.push(span.to_string());
            }
        }
    }
    let mut out = Vec::new();
    for line in lines {
        let words = shell_words(&line);
        let start = words
            .iter()
            .position(|w| w == "commperf" || w.ends_with("/commperf"))
            .map(|i| i + 1)
            .or_else(|| {
                // `cargo run --release -- ARGS`
                (words.first().map(String::as_str) == Some("cargo")
                    && words.get(1).map(String::as_str) == Some("run"))
                .then(|| words.iter().position(|w| w == "--").map(|i| i + 1))
                .flatten()
            });
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
fn every_command_line_in_the_readme_parses() {
    let lines = readme_command_lines();
    // The extractor must find the examples, or this test proves nothing.
    assert!(
        lines.len() >= 30,
        "{} command lines found: {lines:?}",
        lines.len()
    );
    for (line, args) in &lines {
        let mut argv = vec!["commperf".to_string()];
        argv.extend(args.iter().cloned());
        let cli = match Cli::try_parse_from(&argv) {
            Ok(cli) => cli,
            // `commperf predict --help` is a command line too: it prints help.
            Err(e) if e.kind() == clap::error::ErrorKind::DisplayHelp => continue,
            Err(e) => panic!(
                "README: `{line}` does not parse: {}",
                crate::cli::one_line(&e)
            ),
        };
        // Options checked across each other, as `main` does; only what depends on this
        // machine (its CPUs, its descriptor limit) may differ elsewhere.
        if let Command::Bench(b) = &cli.command {
            check_bench(line, b);
        }
    }
}

fn check_bench(line: &str, b: &BenchArgs) {
    use commperf_bench::ConfigError;
    match b.to_config() {
        Ok(cfg) => {
            b.check_plot(&cfg)
                .and_then(|()| b.mpi_layers(&cfg).map(|_| ()))
                .unwrap_or_else(|e| panic!("README: `{line}`: {e}"));
        }
        Err(ConfigError::Cpus(_) | ConfigError::Conns(_)) => {}
        Err(e) => panic!("README: `{line}`: {e}"),
    }
}

#[test]
fn every_option_the_readme_names_exists() {
    // Options of the other tools the README shows (cargo, mpirun), and clap's own --help.
    let foreign = [
        "--help",
        "--release",
        "--workspace",
        "--features",
        "--path",
        "--locked",
        "--oversubscribe",
        "--allow-run-as-root",
        "--bind-to",
        "--cpu-list",
        // scripts/build_mpich_apps.sh's.
        "--lammps",
    ];
    let mut ours: Vec<String> = Vec::new();
    // Subcommands and theirs (`monitor run`, `monitor report`).
    let mut subs: Vec<clap::Command> = Cli::command().get_subcommands().cloned().collect();
    while let Some(sub) = subs.pop() {
        for a in sub.get_arguments() {
            if let Some(l) = a.get_long() {
                ours.push(format!("--{l}"));
            }
        }
        subs.extend(sub.get_subcommands().cloned());
    }
    let readme = include_str!("../../../README.md");
    let mut missing = Vec::new();
    for (i, _) in readme.match_indices("--") {
        let rest = &readme[i + 2..];
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-')
            .collect();
        let prev = readme[..i].chars().next_back();
        if name.is_empty() || prev.is_some_and(|c| c.is_ascii_alphanumeric() || c == '-') {
            continue;
        }
        let opt = format!("--{}", name.trim_end_matches('-'));
        if opt == "--" {
            continue; // a table rule, `---`
        }
        if !ours.contains(&opt) && !foreign.contains(&opt.as_str()) && !missing.contains(&opt) {
            missing.push(opt);
        }
    }
    assert!(
        missing.is_empty(),
        "the README names options no subcommand has: {missing:?}"
    );
}
