#!/usr/bin/env bash
# loop.sh — how close the loop comes: `commperf app --loop` runs the NAS-pattern kit over four MPI
# stacks (Open MPI and MPICH, shared memory and TCP), measures each stack's LogGOPS parameters,
# replays each program's monitored trace with every stack's parameters and emulates every stack
# on the reference with the knobs. The anchor is the real run of the same program on the same
# stack, in the same study: the script prints how many predictions and emulations came within
# 10 % (the figures of docs/results.md's "The loop" row) and the study's own table.
#
# Needs: Open MPI and MPICH with their development files and libclang (Debian: libopenmpi-dev
# openmpi-bin libmpich-dev mpich libclang-dev). Builds commperf with `--features mpi` twice, once
# per MPI (target/mpi-openmpi, target/mpi-mpich), apart from the default build.
# Usage: scripts/loop.sh [REPEAT] [OUT_DIR]   (default 5 rounds, about 2 minutes after the builds;
#        the study in OUT_DIR, default target/results/loop)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/machine.sh
REPEAT=${1:-5}
OUT=${2:-target/results/loop}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
CARGO_TARGET_DIR=target/mpi-openmpi cargo build --release --locked -q --features mpi
MPICC=mpicc.mpich CARGO_TARGET_DIR=target/mpi-mpich cargo build --release --locked -q --features mpi
rm -rf "$OUT"
mkdir -p "$(dirname "$OUT")"
wait_quiet
machine_line
echo "# $(mpirun.openmpi --version 2>&1 | head -1); $(mpichversion 2>/dev/null | head -1 || echo MPICH)"
target/mpi-openmpi/release/commperf app --np 2 --repeat "$REPEAT" --loop \
    --mpich-commperf target/mpi-mpich/release/commperf -o "$OUT" --html "$OUT.html"
python3 - "$OUT/study.json" <<'PY'
import json, sys
loop = json.load(open(sys.argv[1]))["loop"]
p, e = loop["predictions_within_10_percent"], loop["emulations_within_10_percent"]
n_p, n_e = loop["predictions"], loop["emulations"]
print(f"\n# loop: {p} of {n_p} predictions and {e} of {n_e} emulations within 10 % of the measured run "
      f"(reference {loop['reference']})")
if "comm_predictions" in loop:
    print(f"# on communication time (inside MPI calls): {loop['comm_predictions_within_10_percent']} of "
          f"{loop['comm_predictions']} predictions and {loop['comm_emulations_within_10_percent']} of "
          f"{loop['comm_emulations']} emulations within 10 %")
    for c in loop["cells"]:
        for m in c.get("comm_misses", []):
            print(f"#   miss: {c['program']} on {c['stack']}: {m}")
if "predictions_usual" in loop:
    print(f"# in the machine's usual state: {loop.get('predictions_within_10_percent_usual')} of "
          f"{loop.get('predictions_usual')} predictions, {loop.get('emulations_within_10_percent_usual')} of "
          f"{loop.get('emulations_usual')} emulations")
PY
