#!/bin/sh
# Builds commperf (release) and runs `commperf testbed` with its defaults: 8 network
# namespaces on a bridge, 100 Mbit/s per link and direction, incast, all-to-all, ring shift and
# 2-D halo with 1 MiB messages, each measured and predicted. Needs root and iproute2.
# Extra arguments go to `commperf testbed` (e.g. --hosts 4 --rate 1gbit -o testbed.json).
set -eu
cd "$(dirname "$0")/.."
cargo build --release --bin commperf
exec ./target/release/commperf testbed "$@"
