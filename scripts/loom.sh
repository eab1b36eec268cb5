#!/usr/bin/env bash
# Model-checks the interposer runtime's lock-free structures with loom: the per-thread event ring
# (the C shim's producer against the writer's drain) and the request tables (posts, completions by
# the posting thread and by others, duplicated handles, slot reuse, rehash, spill). Each model
# runs once per interleaving of its threads within loom's preemption bound and prints how many
# interleavings it explored (crates/pmpi-rt/src/runtime/tests.rs, `models`).
#
# Usage: scripts/loom.sh [TEST-NAME-FILTER]
# Env: LOOM_MAX_PREEMPTIONS (default 3), and loom's own (LOOM_LOG=trace, LOOM_LOCATION=1 to
# see a failing interleaving step by step; LOOM_CHECKPOINT_FILE to replay it).
# Builds into target/loom: `--cfg loom` changes every crate's flags, and a shared target
# directory would be rebuilt from scratch by the next ordinary build.
set -euo pipefail
cd "$(dirname "$0")/.."
export LOOM_MAX_PREEMPTIONS=${LOOM_MAX_PREEMPTIONS:-3}
export RUSTFLAGS="${RUSTFLAGS:-} --cfg loom"
filter=${1:-runtime::tests::models}
start=$(date +%s)
cargo test -p commperf-pmpi-rt --release --locked --target-dir target/loom --lib "$filter" \
    -- --nocapture --test-threads=1
echo "loom.sh: $(($(date +%s) - start)) s, build included (LOOM_MAX_PREEMPTIONS=$LOOM_MAX_PREEMPTIONS)"
