#!/usr/bin/env bash
# Runs every fuzz target (fuzz/fuzz_targets/, one per reader of outside input) for SECONDS each
# (default 60) with libFuzzer through cargo-fuzz, and prints per target: runs executed, corpus
# size and crashes. Exits 1 if any target crashed (its input is named: copy it to
# fuzz/regressions/TARGET/ with the error it must give, and fix the reader).
#
# Usage: scripts/fuzz.sh [SECONDS] [TARGET…]
#
# The seeds (fuzz/corpus/TARGET/) are read, never written: what libFuzzer adds goes to
# target/fuzz/corpus/TARGET/ (kept between runs, so a longer run starts where the last ended),
# crashes to target/fuzz/artifacts/TARGET/. Built with `--sanitizer none` (the readers are safe
# Rust: AddressSanitizer would find nothing the bounds checks do not, and needs nightly) and
# debug assertions (overflow is a crash). cargo-fuzz passes rustc `-Z` flags; on a stable
# toolchain this script sets RUSTC_BOOTSTRAP=1 for them (see the manual's Robustness page).
# Environment: FUZZ_MAX_LEN (largest input, bytes, default 65536), FUZZ_RSS_MB (libFuzzer's
# memory limit, default 2048).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
shift || true
if [ $# -gt 0 ]; then
    targets=("$@")
else
    mapfile -t targets < <(ls fuzz/fuzz_targets | sed 's/\.rs$//')
fi
command -v cargo-fuzz >/dev/null || {
    echo "cargo-fuzz is not installed: cargo install cargo-fuzz --locked" >&2
    exit 2
}
if ! rustc --version | grep -q nightly; then
    export RUSTC_BOOTSTRAP=1
fi
export CARGO_TARGET_DIR=$PWD/target/fuzz/build
flags=(--sanitizer none --debug-assertions --fuzz-dir fuzz)
start=$(date +%s)
if [ $# -eq 0 ]; then
    cargo fuzz build "${flags[@]}"
else
    for t in "${targets[@]}"; do cargo fuzz build "${flags[@]}" "$t"; done
fi
echo "build: $(($(date +%s) - start)) s"

printf '%-12s %10s %8s %8s\n' target runs corpus crashes
status=0
for t in "${targets[@]}"; do
    work=target/fuzz/corpus/$t
    art=target/fuzz/artifacts/$t
    log=target/fuzz/$t.log
    mkdir -p "$work" "$art"
    rc=0
    cargo fuzz run "${flags[@]}" "$t" "$work" "fuzz/corpus/$t" -- \
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
