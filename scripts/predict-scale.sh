#!/usr/bin/env bash
# predict-scale.sh — how fast `commperf predict` is on large workloads: wall time and peak memory,
# end to end (read, parse, simulate, print), for the figures of docs/results.md's "Prediction
# at scale" rows. Each figure is the median of RUNS runs (default 3), all runs printed.
#
#   1. a 1,048,576-rank binomial broadcast of 1 KiB as GOAL, LogGOPS mode (3.1 M events);
#   2. a 1,024-rank pairwise all-to-all of 4 KiB over a k = 16 fat tree, contention mode
#      (1,047,552 messages);
#   3. a 16-rank pipelined ring of 100,000 one-byte segments (LogGOPSim schedgen's layout,
#      scripts/pipelined-ring-goal.sh), contention and LogGOPS mode (1.5 M messages).
#
# The anchor is LogGOPSim on the same GOAL files, when its `txt2bin` and `LogGOPSim` binaries are
# on the PATH (they are not packaged by Debian: build them yourself); otherwise the script says
# there is no same-run anchor and prints commperf's figures alone.
# Needs: cargo, python3, GNU time (/usr/bin/time). About 1 minute; the files take 300 MB in a
# scratch directory, removed at the end.
# Usage: scripts/predict-scale.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/machine.sh
RUNS=${1:-3}
# COMMPERF=path uses that binary instead of building target/release/commperf.
if [ -z "${COMMPERF:-}" ]; then cargo build --release --locked -q; fi
CP=$(realpath "${COMMPERF:-target/release/commperf}")
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
wait_quiet
machine_line
"$CP" gen-trace bcast --ranks 1048576 --bytes 1k -o "$W/bcast1m.goal"
"$CP" gen-trace pairwise --ranks 1024 --bytes 4k -o "$W/pw.txt"
sh scripts/pipelined-ring-goal.sh 16 100000 1 > "$W/pring.goal"

# measure NAME COMMAND...: RUNS runs, each "wall_s peak_MB"; prints the runs and their median.
measure() {
    local name=$1; shift
    local runs=()
    for _ in $(seq "$RUNS"); do
        /usr/bin/time -f "%e %M" -o "$W/time" "$@" > /dev/null
        runs+=("$(awk '{printf "%.2f %.0f", $1, $2 / 1024}' "$W/time")")
    done
    printf '%s\n' "${runs[@]}" | python3 -c '
import sys, statistics
name = sys.argv[1]
rows = [tuple(map(float, l.split())) for l in sys.stdin if l.strip()]
wall = statistics.median(r[0] for r in rows)
mb = max(r[1] for r in rows)
print(f"| {name} | {wall:.2f} s | {mb:.0f} MB | " + ", ".join(f"{r[0]:.2f}" for r in rows) + " |")
' "$name"
}

echo
echo "| workload | wall (median) | peak RSS | runs (s) |"
echo "|---|---:|---:|---|"
measure "bcast 1M ranks 1 KiB, GOAL, --model loggp" \
    "$CP" predict --trace "$W/bcast1m.goal" --model loggp
measure "pairwise all-to-all 1024 ranks 4 KiB, fattree:k=16" \
    "$CP" predict --trace "$W/pw.txt" --topology fattree:k=16
measure "pipelined ring 16 ranks x 100000 segments, contention" \
    "$CP" predict --trace "$W/pring.goal"
measure "pipelined ring 16 ranks x 100000 segments, --model loggp" \
    "$CP" predict --trace "$W/pring.goal" --model loggp

echo
if command -v txt2bin >/dev/null && command -v LogGOPSim >/dev/null; then
    echo "# anchor: LogGOPSim on the same broadcast (conversion + simulation), L=2500,o=1500,g=1000,G=6"
    echo "| LogGOPSim step | wall (median) | peak RSS | runs (s) |"
    echo "|---|---:|---:|---|"
    measure "txt2bin (convert the GOAL text)" txt2bin -i "$W/bcast1m.goal" -o "$W/bcast1m.bin"
    measure "LogGOPSim (simulate)" LogGOPSim -f "$W/bcast1m.bin" -L 2500 -o 1500 -g 1000 -G 6 -S 65535
    measure "commperf, the same parameters" \
        "$CP" predict --trace "$W/bcast1m.goal" --model loggp --loggp L=2500,o=1500,g=1000,G=6 --eager 65535
else
    echo "# anchor: LogGOPSim is not on the PATH (txt2bin, LogGOPSim; not packaged by Debian): no same-run anchor"
fi
