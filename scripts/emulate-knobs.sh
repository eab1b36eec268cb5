#!/usr/bin/env bash
# emulate-knobs.sh — do the emulator's knobs move their own LogGP parameter, and only it, and
# what do they cost at zero? `commperf emulate calibrate` over shm and loopback TCP: each knob
# alone at each value between knobs-at-zero baselines, measured by `bench loggp`'s PRTT fit; the
# anchor is the same transport with the knobs at zero (and, for the cost at zero, the bare
# transport), in the same run. The figures of docs/results.md's "Emulation" rows.
# Needs: cargo. About 5 minutes.
# Usage: scripts/emulate-knobs.sh [REPEAT]      (default 3 rounds)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/machine.sh
REPEAT=${1:-3}
# COMMPERF=path uses that binary instead of building target/release/commperf.
if [ -z "${COMMPERF:-}" ]; then cargo build --release --locked -q --bin commperf; fi
wait_quiet
for t in shm tcp; do
    machine_line
    "${COMMPERF:-target/release/commperf}" emulate calibrate -t "$t" --repeat "$REPEAT"
done
