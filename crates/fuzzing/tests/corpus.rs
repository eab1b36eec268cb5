//! The fuzz corpus, replayed on stable Rust in the normal test suite.
//!
//! `fuzz/corpus/TARGET/` holds real files (each one must be read without error: they are what
//! the readers exist for), `fuzz/regressions/TARGET/` the inputs that once broke a reader, each
//! with `NAME.expected`: the exact error message the reader must now give (or `ok`). Every file
//! goes through the same function the libFuzzer target calls, so a panic here is the crash
//! libFuzzer found.

use commperf_fuzzing::{run, Target};
use std::path::{Path, PathBuf};

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

/// The files of `dir` (none when it does not exist), sorted, without the `.expected` files.
fn inputs(dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut v: Vec<PathBuf> = rd
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file() && p.extension().is_none_or(|x| x != "expected"))
        .collect();
    v.sort();
    v
}

#[test]
fn every_seed_is_read() {
    let mut counts = Vec::new();
    for &t in Target::ALL {
        let files = inputs(&fuzz_dir().join("corpus").join(t.name()));
        // Every reader has real seeds: an empty corpus would test nothing.
        assert!(files.len() >= 2, "{}: only {} seeds", t.name(), files.len());
        for f in &files {
            let data = std::fs::read(f).unwrap();
            if let Err(e) = run(t, &data) {
                panic!("{}: seed {} refused: {e}", t.name(), f.display());
            }
        }
        counts.push(format!("{} {}", t.name(), files.len()));
    }
    eprintln!("seeds read: {}", counts.join(", "));
}

#[test]
fn every_regression_gives_its_expected_error() {
    let mut n = 0;
    for &t in Target::ALL {
        for f in inputs(&fuzz_dir().join("regressions").join(t.name())) {
            let data = std::fs::read(&f).unwrap();
            let expected_file = f.with_extension("expected");
            let expected = std::fs::read_to_string(&expected_file)
                .unwrap_or_else(|e| panic!("{}: {e}", expected_file.display()));
            let got = match run(t, &data) {
                Ok(()) => "ok".to_string(),
                Err(e) => e,
            };
            assert_eq!(got, expected.trim_end(), "{}", f.display());
            n += 1;
        }
    }
    eprintln!("regressions replayed: {n}");
}

#[test]
fn every_target_has_a_corpus_dir_and_a_fuzz_target() {
    for &t in Target::ALL {
        let src = fuzz_dir()
            .join("fuzz_targets")
            .join(format!("{}.rs", t.name()));
        let text =
            std::fs::read_to_string(&src).unwrap_or_else(|e| panic!("{}: {e}", src.display()));
        assert!(
            text.contains(&format!("Target::{t:?}")),
            "{} does not fuzz Target::{t:?}",
            src.display()
        );
    }
}
