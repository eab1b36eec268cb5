#!/bin/sh
# Replays one SimGrid time-independent trace with SimGrid's own smpirun and prints the simulated
# time in seconds (the figures of simgrid-answers.dat).
#   usage: simgrid-run.sh TRACE RANKS PLATFORM     (run from this directory)
# TRACE is one file holding every rank's lines (split here into one file per rank, which is what
# smpirun -replay reads, through an index) or an index of per-rank files. Rank r runs on the
# platform's r-th host (node-r). SimGrid's defaults otherwise: network/model SMPI (smpirun sets
# it), its default collective selector, crosstraffic on, TCP-gamma 4194304.
set -eu
trace=$1; ranks=$2; platform=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
: > "$tmp/hostfile"
r=0
while [ "$r" -lt "$ranks" ]; do echo "node-$r" >> "$tmp/hostfile"; r=$((r + 1)); done
if grep -qE '^[0-9]+[[:space:]]' "$trace"; then
    : > "$tmp/index"
    r=0
    while [ "$r" -lt "$ranks" ]; do
        awk -v r="$r" '$1 == r' "$trace" > "$tmp/rank$r.txt"
        echo "$tmp/rank$r.txt" >> "$tmp/index"
        r=$((r + 1))
    done
else
    sed "s|^|$(pwd)/|" "$trace" > "$tmp/index"
fi
smpirun -np "$ranks" -platform "$platform" -hostfile "$tmp/hostfile" -replay "$tmp/index" \
    --log=smpi_config.thres:warning --log=xbt_cfg.thres:warning 2>&1 |
    sed -n 's/.*Simulation time \([0-9.e+-]*\).*/\1/p'
