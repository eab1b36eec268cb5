#!/usr/bin/env bash
# The pipeline model's figures (docs/results.md): the shm stage fits (calibrate, 3 runs), `bench pipeline` over shm, tcp and
# uds from 64 KiB to 64 MiB, and the 1 MiB bandwidth of the adaptive shm transport, of fixed
# 64 KiB fragments and of Open MPI's vader (scripts/mpi_pingpong.c's osu_bw loop, built with
# mpicc.openmpi) interleaved over ROUNDS. Usage: scripts/pipeline-model.sh [OUT_DIR] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-$(mktemp -d)}
rounds=${2:-3}
mkdir -p "$out"
cp=${COMMPERF:-target/release/commperf}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# The machine is shared: wait (up to 3 minutes) for the 1-minute load to fall below 2.
quiet() {
    for _ in $(seq 36); do
        awk '{exit !($1 < 2.0)}' /proc/loadavg && return 0
        sleep 5
    done
    echo "load stayed at $(cut -d' ' -f1 /proc/loadavg): measuring anyway" >&2
}
for r in 1 2 3; do
    quiet
    "$cp" calibrate -t shm --sizes 1K,64K --no-loggp -o "$out/cal$r.json" 2>"$out/cal$r.txt"
done
cp "$out/cal2.json" "$out/shm-profile.json"
for t in shm tcp uds; do
    quiet
    uptime >"$out/pipeline-$t.load"
    "$cp" bench pipeline -t "$t" --sizes 64K:64M --pipeline-profile "$out/shm-profile.json" \
        --format json -o "$out/pipeline-$t.json" >"$out/pipeline-$t.txt" 2>&1
    uptime >>"$out/pipeline-$t.load"
done
mpicc.openmpi -O2 scripts/mpi_pingpong.c -o "$out/pingpong"
for r in $(seq "$rounds"); do
    quiet
    "$cp" bench bw -t shm --sizes 1M --format json -o "$out/bw-auto-$r.json" >/dev/null 2>&1
    "$cp" bench bw -t shm --sizes 1M --fragment 64K --format json -o "$out/bw-64k-$r.json" \
        >/dev/null 2>&1
    mpirun.openmpi --mca pml ob1 --mca btl self,vader -np 2 --bind-to core "$out/pingpong" \
        >"$out/ompi-$r.txt"
done
"$cp" limits >"$out/limits.txt" 2>&1 || true
echo "results in $out"
