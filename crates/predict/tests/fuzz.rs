//! A deterministic mutation fuzzer for the three trace readers.
//!
//! commperf promises that no input makes it panic. Every example file (and a few
//! own-format traces) is mutated thousands of times — byte flips, deletions, duplications and
//! insertions of tokens that have broken parsers before (huge and negative numbers, `1e400`,
//! `nan`, braces, NUL, invalid UTF-8 made lossy) — and fed to every reader. Each must return
//! without panicking, and every error must point inside the input. The generator is seeded, so a
//! failure reproduces; no external crate is needed.

use commperf_predict::gen::{own_pattern_string, Pattern};
use commperf_predict::parse::{parse_str, ParseError, ParseOptions, TraceFormat};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

/// SplitMix64, like the predictor's own generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

const TOKENS: &[&[u8]] = &[
    b"-1",
    b"0",
    b"18446744073709551616",
    b"9223372036854775808",
    b"4294967295",
    b"2147483648",
    b"16777216",
    b"1e400",
    b"-1e400",
    b"nan",
    b"inf",
    b"1e-400",
    b"0.5",
    b"}",
    b"{",
    b":",
    b"/*",
    b"*/",
    b"//",
    b"#",
    b"\0",
    b"\xff\xfe",
    b"\xc3",
    b"\n",
    b"\r\n",
    b" ",
    b"any",
    b"root",
    b"tag",
    b"as",
    b"requires",
    b"irequires",
    b"l1",
    b"l1:",
    b"rank",
    b"ranks",
    b"num_ranks",
    b"send",
    b"recv",
    b"isend",
    b"irecv",
    b"wait",
    b"waitall",
    b"alltoall",
    b"alltoallv",
    b"reducescatter",
    b"gatherv",
    b"init 1",
    b"barrier",
    b"comm",
    b"comm g 0 1\n",
    b"on",
    b"on g",
    b"g",
    b"iallreduce",
    b"ibcast root 0 8",
    b"scan",
    b"iexscan",
    b"KiB",
    b"us",
    b"b",
    b"99999999999999999999999999999999999999999999999999999999999999999999999999999999",
];

fn mutate(rng: &mut Rng, seed: &[u8]) -> Vec<u8> {
    let mut v = seed.to_vec();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(v.len() + 1);
        match rng.below(6) {
            0 if !v.is_empty() => {
                let i = rng.below(v.len());
                v[i] ^= 1 << rng.below(8);
            }
            1 if !v.is_empty() => {
                let n = 1 + rng.below(16);
                let end = (at + n).min(v.len());
                v.drain(at.min(v.len())..end);
            }
            2 | 3 => {
                let t = TOKENS[rng.below(TOKENS.len())];
                v.splice(at..at, t.iter().copied());
            }
            4 if !v.is_empty() => {
                // Duplicate a slice somewhere else (repeats lines, ranks, labels).
                let a = rng.below(v.len());
                let b = (a + 1 + rng.below(40)).min(v.len());
                let piece = v[a..b].to_vec();
                let at = rng.below(v.len() + 1);
                v.splice(at..at, piece);
            }
            _ => {
                // Replace a digit run's digit with another digit.
                if let Some(i) = (0..v.len())
                    .map(|k| (k + at) % v.len().max(1))
                    .find(|&k| v.get(k).is_some_and(u8::is_ascii_digit))
                {
                    v[i] = b'0' + rng.below(10) as u8;
                }
            }
        }
    }
    v
}

/// Line and column inside the input (the column may be one past the line's last character).
fn assert_inside(e: &ParseError, text: &str) {
    let lines: Vec<&str> = text.split('\n').collect();
    assert!(
        e.line >= 1 && e.line <= lines.len(),
        "line {} of {}: {e}",
        e.line,
        lines.len()
    );
    let chars = lines[e.line - 1].chars().count();
    assert!(
        e.column >= 1 && e.column <= chars + 1,
        "column {} of {chars}: {e}",
        e.column
    );
    assert!(e.token.chars().count() <= 65, "token too long: {e}");
}

fn seeds() -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let mut out = Vec::new();
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| matches!(p.extension().and_then(|x| x.to_str()), Some("goal" | "txt")))
        .collect();
    names.sort();
    for p in names {
        out.push((p.display().to_string(), std::fs::read(&p).unwrap()));
    }
    out.push((
        "own-example".into(),
        b"# comment\nranks 3\nrank 0\ncompute 1.5us\nisend 1 1KiB tag 3 as r1\nirecv 2 8B as r2\n\
          wait r1\nwaitall\nbcast root 1 1MiB\nallreduce 8\nrank 1:\nrecv 0 1KiB tag 3\n\
          bcast root 1 1MiB\nallreduce 8\nrank 2\nsend 0 8\nbcast root 1 1MiB\nallreduce 8\n"
            .to_vec(),
    ));
    out.push((
        "own-groups".into(),
        b"ranks 4\ncomm row 0 1\ncomm col 2 0\ncomm all 3 2 1 0\nrank 0\n\
          iallreduce 8 on row as a\nbcast root 1 1KiB on col\nscan 8 on all\nwait a\n\
          rank 1\niallreduce 8 on row as a\nwaitall\nscan 8 on all\nrank 2\n\
          bcast root 1 1KiB on col\nscan 8 on all\nrank 3\nibarrier as b\nscan 8 on all\n"
            .to_vec(),
    ));
    for p in [
        Pattern::Halo2D { x: 2, y: 2 },
        Pattern::PairwiseAllToAll,
        Pattern::RingShift,
    ] {
        out.push((
            p.to_string(),
            own_pattern_string(p, 4, 64, 1).unwrap().into_bytes(),
        ));
    }
    out
}

#[test]
fn no_input_makes_a_reader_panic() {
    let opts = ParseOptions::default();
    let mut rng = Rng(0x5eed_c0ff_ee00_0001);
    let seeds = seeds();
    let per_seed = 3000;
    let mut parsed = 0usize;
    let mut errors = 0usize;
    for (name, seed) in &seeds {
        for i in 0..per_seed {
            let bytes = mutate(&mut rng, seed);
            let text = String::from_utf8_lossy(&bytes).into_owned();
            for fmt in [TraceFormat::Own, TraceFormat::Goal, TraceFormat::SimGrid] {
                let r = catch_unwind(AssertUnwindSafe(|| parse_str(&text, "f", fmt, &opts)));
                match r {
                    Ok(Ok(_)) => parsed += 1,
                    Ok(Err(e)) => {
                        assert_inside(&e, &text);
                        errors += 1;
                    }
                    Err(_) => panic!("{fmt} reader panicked on mutation {i} of {name}:\n{text:?}"),
                }
            }
        }
    }
    eprintln!("fuzz: {parsed} mutated inputs parsed, {errors} refused");
    // The mutations must exercise both outcomes, or the fuzzer tests nothing.
    assert!(parsed > 100, "only {parsed} mutated inputs parsed");
    assert!(errors > 1000, "only {errors} mutated inputs failed");
}

#[test]
fn adversarial_inputs_are_refused_cleanly() {
    let opts = ParseOptions::default();
    let long = "9".repeat(100_000);
    let cases = [
        String::new(),
        "\0".into(),
        "\u{feff}ranks 2".into(),
        format!("ranks {long}"),
        format!("num_ranks 2 rank 0 {{ l1: calc {long} }}"),
        format!("0 compute {long}e{long}"),
        "num_ranks 2 rank 0 { l1: send 1b to 1 tag 0 l1 requires l1 }".into(),
        "num_ranks 2 rank 0 { /* never closed".into(),
        "ranks 16777216\nrank 0\nalltoall 8\n".into(),
        "0 send 16777215 0 8\n0 alltoall 8 8\n".into(),
        "16777216 init".into(),
        "0 gatherv 1".into(),
        "0 wait".into(),
        "rank".into(),
        "{{{{}}}}".into(),
        "ranks 4\ncomm c 0 0\n".into(),
        "ranks 4\ncomm c\n".into(),
        "ranks 4\ncomm c 3 2 1 0\nrank 0\nbcast root 99999999999999999999 8 on c\n".into(),
        "ranks 16777216\ncomm c 0 1 2\nrank 0\nalltoall 8 on c\nialltoall 8 on c as x\n".into(),
        format!(
            "ranks 2\ncomm c 0 1\nrank 0\n{}",
            "iallreduce 8 on c\n".repeat(70_000)
        ),
        format!("ranks 2\n{}", "comm c 0\n".repeat(3)),
        "ranks 2\nrank 0\niallreduce 8 on\n".into(),
        "ranks 2\nrank 0\nwait on\n".into(),
    ];
    for text in &cases {
        for fmt in [TraceFormat::Own, TraceFormat::Goal, TraceFormat::SimGrid] {
            let r = catch_unwind(AssertUnwindSafe(|| parse_str(text, "f", fmt, &opts)));
            match r {
                Ok(Ok(_)) => {}
                Ok(Err(e)) => assert_inside(&e, text),
                Err(_) => panic!("{fmt} reader panicked on {:?}", &text[..text.len().min(80)]),
            }
        }
    }
}

/// Found by the mutation series (scripts/mutation_series.sh): a NUL inside an operation's name
/// was printed raw in the error, so the terminal got a NUL (and could have got an escape
/// sequence). Control characters are quoted now. The input is
/// fuzz/regressions/own_trace/nul-in-operation.txt.
#[test]
fn control_characters_in_an_error_token_are_quoted() {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fuzz/regressions/own_trace/nul-in-operation.txt"),
    )
    .unwrap();
    let e = parse_str(&text, "f", TraceFormat::Own, &ParseOptions::default()).unwrap_err();
    assert_eq!((e.line, e.column, e.token.as_str()), (3, 1, "send\\01"));
    assert!(e.to_string().ends_with("(at `send\\01`)"), "{e}");
    // Quoting counts against the length limit: 64 escapes are cut like 64 characters.
    let e = parse_str(
        &"\u{1b}".repeat(200),
        "f",
        TraceFormat::Own,
        &ParseOptions::default(),
    )
    .unwrap_err();
    assert_eq!(e.token, format!("{}…", "\\u{1b}".repeat(10)));
}
