#!/usr/bin/env bash
# Runs every fuzz target (fuzz/fuzz_targets/, one per reader of outside input) for SECONDS each
# (default 60) with libFuzzer, and prints per target: runs executed, corpus
# size and crashes. Exits 1 if any target crashed (its input is named: copy it to
# fuzz/regressions/TARGET/ with the error it must give, and fix the reader).
#
# Usage: scripts/fuzz.sh [SECONDS] [TARGET…]
#
# The seeds (fuzz/corpus/TARGET/) are read, never written: what libFuzzer adds goes to
# target/fuzz/corpus/TARGET/ (kept between runs, so a longer run starts where the last ended),
# crashes to target/fuzz/artifacts/TARGET/. No sanitizer (the readers are safe Rust:
# AddressSanitizer would find nothing the bounds checks do not, and needs nightly); the same
# targets run under `cargo fuzz run --sanitizer none --fuzz-dir fuzz TARGET` too.
# Environment: FUZZ_MAX_LEN (largest input, bytes, default 65536), FUZZ_RSS_MB (libFuzzer's
# memory limit, default 2048), FUZZ_OPT_LEVEL (default 3; CI's smoke run builds at 1, about
# half the build time for a slower fuzzer, which a 5 s run does not miss), FUZZ_CODEGEN_UNITS
# (default 16: a faster build, a slightly slower fuzzer).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
shift || true
if [ $# -gt 0 ]; then
    targets=("$@")
else
    mapfile -t targets < <(ls fuzz/fuzz_targets | sed 's/\.rs$//')
fi
# Built by cargo with the flags cargo-fuzz 0.13 passes for `--sanitizer none
# --debug-assertions` (its src/project.rs), so that neither cargo-fuzz nor a nightly toolchain is
# needed: SanitizerCoverage's instrumentation for libFuzzer (libfuzzer-sys links libFuzzer),
# `--cfg fuzzing`, debug assertions (overflow is a crash). `--target` keeps the flags off build
# scripts. Left out: cargo-fuzz's one codegen unit, which only makes the fuzzer faster and the
# build much slower.
triple=$(rustc -vV | sed -n 's/^host: //p')
export CARGO_TARGET_DIR=$PWD/target/fuzz/build
export RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing \
-Cllvm-args=-simplifycfg-branch-fold-threshold=0 -Cllvm-args=-sanitizer-coverage-stack-depth \
-Cdebug-assertions"
start=$(date +%s)
bins=()
for t in "${targets[@]}"; do bins+=(--bin "$t"); done
cargo build --manifest-path fuzz/Cargo.toml --target "$triple" --release \
    --config 'profile.release.debug="line-tables-only"' \
    --config "profile.release.opt-level=${FUZZ_OPT_LEVEL:-3}" \
    --config "profile.release.codegen-units=${FUZZ_CODEGEN_UNITS:-16}" "${bins[@]}"
echo "build: $(($(date +%s) - start)) s"

printf '%-12s %10s %8s %8s\n' target runs corpus crashes
status=0
for t in "${targets[@]}"; do
    work=target/fuzz/corpus/$t
    art=target/fuzz/artifacts/$t
    log=target/fuzz/$t.log
    mkdir -p "$work" "$art"
    rc=0
    "$CARGO_TARGET_DIR/$triple/release/$t" "$work" "fuzz/corpus/$t" \
        -max_total_time="$secs" -max_len="${FUZZ_MAX_LEN:-65536}" -rss_limit_mb="${FUZZ_RSS_MB:-2048}" \
        -timeout=10 -artifact_prefix="$art/" \
        -print_final_stats=1 >"$log" 2>&1 || rc=$?
    runs=$(grep -oP '^stat::number_of_executed_units:\s*\K\d+' "$log" | awk '{s += $1} END {print s + 0}')
    corpus=$(find "$work" -type f | wc -l)
    crashes=$(find "$art" -type f \( -name 'crash-*' -o -name 'oom-*' -o -name 'timeout-*' -o -name 'leak-*' \) | wc -l)
    printf '%-12s %10s %8s %8s\n' "$t" "$runs" "$corpus" "$crashes"
    if [ "$rc" != 0 ] || [ "$crashes" != 0 ]; then
        status=1
        grep -E "panicked|ERROR: libFuzzer|Test unit written" "$log" | head -5 | sed 's/^/    /'
    fi
done
exit $status
