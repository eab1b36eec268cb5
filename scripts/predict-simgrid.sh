#!/usr/bin/env bash
# predict-simgrid.sh — `commperf predict` against SimGrid's own replay (`smpirun -replay`) on
# SimGrid's example traces and two cluster platforms: the predicted times' ratio (accuracy) and
# the two tools' wall times (speed), in the same run. The figures of docs/results.md's
# "Prediction against SimGrid" row.
#
# Needs: cargo, python3; SimGrid 3.32 (Debian: libsimgrid-dev, which has smpirun). Without
# smpirun it compares with the answers SimGrid gave when the test data was made
# (crates/predict/tests/data/simgrid-answers.dat) and says so: accuracy only, not the same run.
# Usage: scripts/predict-simgrid.sh            (about 10 s with SimGrid)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/machine.sh
# COMMPERF=path uses that binary instead of building target/release/commperf.
if [ -z "${COMMPERF:-}" ]; then cargo build --release --locked -q; fi
CP=$(realpath "${COMMPERF:-target/release/commperf}")
D=crates/predict/tests/data
ALGOS=alltoall=linear,gather=linear,reduce=linear,allreduce=reduce-bcast
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
machine_line
if command -v smpirun >/dev/null; then
    echo "# anchor: $(smpirun -version 2>&1 | head -1 || true), replayed in this run"
    same_run=1
else
    echo "# anchor: smpirun not installed: SimGrid 3.32's stored answers ($D/simgrid-answers.dat), not this run"
    same_run=0
fi
echo
echo "| trace | platform | SimGrid µs | commperf µs | commperf / SimGrid | SimGrid wall s | commperf wall s |"
echo "|---|---|---:|---:|---:|---:|---:|"
now() { date +%s.%N; }
grep -v '^#' "$D/simgrid-answers.dat" | while read -r trace ranks platform stored; do
    t0=$(now)
    "$CP" predict --trace "$D/$trace" --topology "$D/$platform" --factors smpi --algo "$ALGOS" \
        --format json > "$W/pred.json"
    t1=$(now)
    ours=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["total_us"])' "$W/pred.json")
    if [ "$same_run" = 1 ]; then
        sg=$( (cd "$D" && sh simgrid-run.sh "$trace" "$ranks" "$platform") )
        t2=$(now)
    else
        sg=$stored
        t2=nan
    fi
    python3 - "$trace" "$platform" "$sg" "$ours" "$t0" "$t1" "$t2" <<'PY'
import sys
trace, platform, sg, ours, t0, t1, t2 = sys.argv[1:]
sg_us = float(sg) * 1e6
ours = float(ours)
w = "n/a" if t2 == "nan" else f"{float(t2) - float(t1):.3f}"
print(f"| {trace} | {platform} | {sg_us:.1f} | {ours:.1f} | {ours / sg_us:.4f} | {w} | {float(t1) - float(t0):.3f} |")
PY
done
