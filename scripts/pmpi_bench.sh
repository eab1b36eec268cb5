#!/usr/bin/env bash
# Issue 13 measurements of the MPI interposer (BENCHMARKS.md): per-intercepted-call cost against
# an empty PMPI wrapper, and application slowdown on hpcc and lammps. Interleaved runs (none,
# empty wrappers, full recording, in turn), median of N each.
# Usage: scripts/pmpi_bench.sh [N]   (after `cargo build --release -p commperf-pmpi`)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-7}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
OUT=$(ls -td target/release/build/commperf-pmpi-*/out | head -1)
RT=$PWD/target/release/libcommperf_pmpi.so
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

for mpi in openmpi mpich; do
    mpicc.$mpi -O2 -w -o "$W/cc_$mpi" crates/pmpi/tests/apps/callcost.c
    SHIM=$PWD/$OUT/libcommperf_pmpi_$mpi.so
    if [ $mpi = openmpi ]; then pass() { echo -x "$1"; }; else pass() { echo -genv "${1%%=*}" "${1#*=}"; }; fi
    for i in $(seq "$N"); do
        for mode in none empty full; do
            mkdir -p "$W/d"
            args=()
            case $mode in
                empty) args=($(pass LD_PRELOAD=$SHIM:$RT) $(pass COMMPERF_PMPI_DIR=$W/d) $(pass COMMPERF_PMPI_EMPTY=1)) ;;
                full) args=($(pass LD_PRELOAD=$SHIM:$RT) $(pass COMMPERF_PMPI_DIR=$W/d) $(pass COMMPERF_PMPI_FLUSH_MS=5)) ;;
            esac
            v=$(mpirun.$mpi -np 1 "${args[@]}" "$W/cc_$mpi" 1000000)
            echo "$v" >> "$W/cc_${mpi}_$mode"
        done
    done
    for mode in none empty full; do
        echo "callcost $mpi $mode ns/iteration (3 calls): median $(median < "$W/cc_${mpi}_$mode") of $(tr '\n' ' ' < "$W/cc_${mpi}_$mode")"
    done
    e=$(median < "$W/cc_${mpi}_empty"); f=$(median < "$W/cc_${mpi}_full")
    echo "callcost $mpi: full - empty = $(echo "($f - $e) / 3" | bc -l | xargs printf '%.1f') ns per intercepted call"
done

# Application slowdown (Open MPI: Debian's hpcc and lammps link it only).
cp crates/pmpi/tests/apps/hpccinf.txt "$W/"
cp crates/pmpi/tests/apps/in.lj "$W/"
sed -i 's/^run .*/run             2000/' "$W/in.lj"
sed -i "s/^2            Ps/1            Ps/" "$W/hpccinf.txt"
SHIM=$PWD/$OUT/libcommperf_pmpi_openmpi.so
for app in hpcc lammps; do
    for i in $(seq "$N"); do
        for mode in none full; do
            args=()
            [ $mode = full ] && args=(-x LD_PRELOAD=$SHIM:$RT -x COMMPERF_PMPI_DIR=$W/d)
            if [ $app = hpcc ]; then cmd=(hpcc); else cmd=(lmp -in in.lj -log none -screen none); fi
            s=$(date +%s.%N)
            (cd "$W" && mpirun.openmpi -np 2 "${args[@]}" "${cmd[@]}" > /dev/null 2>&1)
            e=$(date +%s.%N)
            echo "$e - $s" | bc -l >> "$W/app_${app}_$mode"
        done
    done
    a=$(median < "$W/app_${app}_none"); b=$(median < "$W/app_${app}_full")
    echo "$app wall s: none median $a [$(tr '\n' ' ' < "$W/app_${app}_none")] full median $b [$(tr '\n' ' ' < "$W/app_${app}_full")] slowdown $(echo "($b / $a - 1) * 100" | bc -l | xargs printf '%.2f') %"
done
