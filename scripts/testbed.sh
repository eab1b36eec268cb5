#!/usr/bin/env bash
# testbed.sh — predictions against a real (small) network: builds commperf (release) and runs
# `commperf testbed` with its defaults: 8 network namespaces on a bridge, 100 Mbit/s per link and
# direction, incast, all-to-all, ring shift and 2-D halo with 1 MiB messages, each measured on
# the namespaces and predicted by the contention engine from a profile calibrated on the same
# links, in the same run. The figures of docs/results.md's "Prediction against a real network".
# Needs root and iproute2. About a minute.
# Extra arguments go to `commperf testbed` (e.g. --hosts 4 --rate 1gbit -o testbed.json).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/machine.sh
# COMMPERF=path uses that binary instead of building target/release/commperf.
if [ -z "${COMMPERF:-}" ]; then cargo build --release --locked -q --bin commperf; fi
wait_quiet
machine_line
exec "${COMMPERF:-./target/release/commperf}" testbed "$@"
