//! The book's examples, run: every runnable shell block of `docs/src/**/*.md` is executed with
//! the built binary and must succeed, and each `<!-- check: TEXT -->` after it must be found in
//! its output (and, where the book shows that output in a `text` block, in what the book shows).
//!
//! A shell block is runnable unless its fence says ` ```sh,no-run ` (MPI, root, another host, or
//! minutes): those are listed as skipped, so a reader of the test log sees what was not run.
//! The blocks of one chapter run in order, in one scratch directory where `crates`, `scripts` and
//! `apps` point at the repository and `commperf` is first on the PATH, so a chapter's later block
//! can use a file an earlier one wrote. `crates/cli/src/docs_tests.rs` checks that every command
//! line, runnable or not, parses.

use commperf_testkit::TempDir;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Longer than any runnable block takes on a loaded two-core machine (the slowest, a quick
/// `bench all`, takes about 5 s idle); a block past it is a hang, reported as such.
const BLOCK_TIMEOUT: Duration = Duration::from_secs(180);

/// A shell block of the book.
#[derive(Debug)]
struct Block {
    file: PathBuf,
    /// 1-based line of the opening fence.
    line: usize,
    script: String,
    runnable: bool,
    /// Texts its output must contain.
    checks: Vec<String>,
    /// The `text` block right after it (before the next shell block), if any: what the book
    /// shows as its output.
    shown: Option<String>,
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn markdown_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            markdown_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "md") {
            out.push(p);
        }
    }
}

/// The language and attributes of a fence's info string: ` ```sh,no-run ` → ("sh", ["no-run"]).
fn fence_info(line: &str) -> (String, Vec<String>) {
    let info = line.trim().trim_start_matches('`');
    let mut words = info
        .split([',', ' '])
        .filter(|w| !w.is_empty())
        .map(str::to_string);
    let lang = words.next().unwrap_or_default();
    (lang, words.collect())
}

fn blocks_of(file: &Path) -> Vec<Block> {
    let text = std::fs::read_to_string(file).unwrap();
    let mut blocks: Vec<Block> = Vec::new();
    let mut lines = text.lines().enumerate();
    // Whether the last block seen (shell or text) follows the last shell block directly, so a
    // text block after it is that block's output.
    let mut text_may_follow = false;
    while let Some((i, l)) = lines.next() {
        if let Some(rest) = l.trim().strip_prefix("<!-- check:") {
            let check = rest
                .strip_suffix("-->")
                .unwrap_or_else(|| panic!("{}:{}: unclosed check comment", file.display(), i + 1))
                .trim()
                .to_string();
            let b = blocks
                .iter_mut()
                .rev()
                .find(|b| b.runnable)
                .unwrap_or_else(|| {
                    panic!(
                        "{}:{}: a check before any runnable block",
                        file.display(),
                        i + 1
                    )
                });
            b.checks.push(check);
            continue;
        }
        if !l.trim_start().starts_with("```") {
            continue;
        }
        let (lang, attrs) = fence_info(l);
        let mut body = String::new();
        for (_, l) in lines.by_ref() {
            if l.trim_start().starts_with("```") {
                break;
            }
            body.push_str(l);
            body.push('\n');
        }
        match lang.as_str() {
            "sh" | "bash" | "shell" => {
                blocks.push(Block {
                    file: file.to_path_buf(),
                    line: i + 1,
                    script: body,
                    runnable: !attrs.iter().any(|a| a == "no-run"),
                    checks: Vec::new(),
                    shown: None,
                });
                text_may_follow = true;
            }
            "text" if text_may_follow => {
                if let Some(b) = blocks.last_mut() {
                    b.shown = Some(body);
                }
                text_may_follow = false;
            }
            _ => text_may_follow = false,
        }
    }
    blocks
}

/// A scratch directory for one chapter, with the repository's data beside it.
fn scratch(chapter: &str) -> TempDir {
    let d = TempDir::new(&format!("docs-{chapter}"));
    for link in ["crates", "scripts", "apps"] {
        std::os::unix::fs::symlink(repo().join(link), d.join(link)).unwrap();
    }
    d
}

/// Runs `script` with `sh -e` in `dir`; Err names what went wrong.
fn run(script: &str, dir: &Path) -> Result<String, String> {
    let bin = Path::new(commperf_testkit::exe()).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out_file = dir.join(".block-output");
    let out = std::fs::File::create(&out_file).unwrap();
    let mut child = Command::new("sh")
        .arg("-ec")
        .arg(script)
        .current_dir(dir)
        .env("PATH", path)
        .stdin(Stdio::null())
        .stdout(out.try_clone().unwrap())
        .stderr(out)
        .spawn()
        .map_err(|e| format!("starting sh: {e}"))?;
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > BLOCK_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "still running after {} s: killed",
                BLOCK_TIMEOUT.as_secs()
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let output = std::fs::read_to_string(&out_file).unwrap_or_default();
    let _ = std::fs::remove_file(&out_file);
    if status.success() {
        Ok(output)
    } else {
        Err(format!("{status}; output:\n{output}"))
    }
}

#[test]
fn the_books_runnable_examples_run_and_show_what_they_print() {
    let mut files = Vec::new();
    markdown_files(&repo().join("docs/src"), &mut files);
    assert!(files.len() >= 10, "the book has {} chapters", files.len());
    let mut failures = Vec::new();
    let (mut ran, mut checked, mut skipped) = (0, 0, 0);
    for file in &files {
        let blocks = blocks_of(file);
        // A chapter without runnable blocks needs no scratch directory.
        let scratch = blocks
            .iter()
            .any(|b| b.runnable)
            .then(|| scratch(&file.file_stem().unwrap().to_string_lossy()));
        for b in &blocks {
            let at = format!(
                "{}:{}",
                b.file.strip_prefix(repo()).unwrap_or(&b.file).display(),
                b.line
            );
            let Some(scratch) = scratch.as_ref().filter(|_| b.runnable) else {
                skipped += 1;
                eprintln!(
                    "docs: skipped (no-run) {at}: {}",
                    b.script.lines().next().unwrap_or("")
                );
                continue;
            };
            ran += 1;
            match run(&b.script, scratch) {
                Err(e) => failures.push(format!("{at}: the block failed: {e}")),
                Ok(output) => {
                    for c in &b.checks {
                        checked += 1;
                        if !output.contains(c.as_str()) {
                            failures
                                .push(format!("{at}: the output lacks `{c}`; it was:\n{output}"));
                        }
                        if let Some(shown) = &b.shown {
                            if !shown.contains(c.as_str()) {
                                failures.push(format!(
                                    "{at}: the book's output after the block does not show `{c}`"
                                ));
                            }
                        }
                    }
                }
            }
        }
    }
    eprintln!("docs: {ran} blocks run, {checked} checks, {skipped} blocks not run (no-run)");
    // The book must keep runnable examples with checks, or this test proves nothing.
    assert!(ran >= 10, "only {ran} runnable blocks in the book");
    assert!(checked >= 10, "only {checked} checks in the book");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn fences_and_checks_are_read_as_the_book_means_them() {
    let dir = TempDir::new("docs-parse");
    let f = dir.join("c.md");
    std::fs::write(
        &f,
        "# C\n\n```sh\ncommperf gen-trace ring --ranks 2 -o r.txt\n```\n\n\
         <!-- check: total 1 us -->\n\n```text\ntotal 1 us\n```\n\n\
         ```sh,no-run\nmpirun -np 2 commperf bench -t mpi\n```\n\n```rust\nfn x() {}\n```\n",
    )
    .unwrap();
    let b = blocks_of(&f);
    assert_eq!(b.len(), 2, "{b:?}");
    assert!(b[0].runnable && !b[1].runnable);
    assert_eq!(b[0].line, 3);
    assert_eq!(b[0].checks, vec!["total 1 us".to_string()]);
    assert_eq!(b[0].shown.as_deref(), Some("total 1 us\n"));
    assert_eq!(b[1].shown, None);
    assert_eq!(
        fence_info("```sh,no-run"),
        ("sh".to_string(), vec!["no-run".to_string()])
    );
}
