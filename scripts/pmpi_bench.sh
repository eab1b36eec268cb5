#!/usr/bin/env bash
# pmpi_bench.sh — the cost of `commperf monitor`'s MPI interposer (docs/results.md's "Monitor"
# rows): per-intercepted-call cost against the same interposer with empty wrappers (every
# wrapper only calls PMPI: the floor any PMPI tool pays), the fixed per-run cost (an empty MPI
# program), and application slowdown on hpcc and lammps against the bare program. Interleaved
# runs (none, empty wrappers, full recording, in turn), median of N each, in the same run.
# The interposer is the one the commperf binary carries, installed into a scratch cache as
# `commperf monitor` installs it.
# Usage: scripts/pmpi_bench.sh [N]
# Environment:
#   PARTS="callcost pollcost fixed apps"   which parts to run (default: all four)
#   RT_OLD=path/libcommperf_pmpi_rt.so  also time full recording with this runtime (mode full_old,
#                                     interleaved with the others): a before/after; the shims
#                                     are taken from SHIM_OLD_DIR (libcommperf_pmpi_MPI.so of
#                                     the same old build), as the shim and runtime of one build
#                                     belong together
#   CLOCK=cpu                     callcost/pollcost time the rank thread's CPU time, not wall time
#   APPS_MPI="openmpi mpich"      which MPIs run the applications (mpich needs
#                                 scripts/build_mpich_apps.sh [--lammps] first)
#   LONG=1                        the longer application runs: tests/apps/hpccinf-long.txt and
#                                 in.lj with 20000 steps, instead of hpccinf.txt and 2000 steps
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/machine.sh
N=${1:-7}
PARTS=${PARTS:-callcost pollcost fixed apps}
APPS_MPI=${APPS_MPI:-openmpi}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
APPS=${COMMPERF_APPS_DIR:-$PWD/target/mpich-apps}/bin
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
cargo build --release --locked -q --bin commperf
# Install the interposer as commperf preloads it: one monitored run of an empty program per MPI
# puts its shim and the runtime into the cache.
export COMMPERF_CACHE_DIR=$W/cache
printf '#include <mpi.h>\nint main(int c, char **v) { MPI_Init(&c, &v); MPI_Finalize(); return 0; }\n' > "$W/empty.c"
for mpi in openmpi mpich; do
    mpicc.$mpi -O2 -w -o "$W/empty_$mpi" "$W/empty.c"
    target/release/commperf monitor -o "$W/install-$mpi" -- mpirun.$mpi -np 1 "$W/empty_$mpi" > /dev/null 2>&1
done
shim_of() { ls "$COMMPERF_CACHE_DIR"/libcommperf_pmpi_"$1"-*.so; }
RT=$(ls "$COMMPERF_CACHE_DIR"/libcommperf_pmpi_rt-*.so)
wait_quiet
machine_line
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
idle() { awk '/^cpu /{i=$5+$6; t=0; for(k=2;k<=NF;k++) t+=$k; print i, t}' /proc/stat; }
load_note() { # % idle over one second, so each result says how loaded the machine was
    read -r i0 t0 < <(idle); sleep 1; read -r i1 t1 < <(idle)
    echo "cpu idle before the part: $(( (i1 - i0) * 100 / (t1 - t0) )) %"
}
# Open MPI takes `-x VAR=value`, MPICH's Hydra `-genv VAR value`.
pass() { if [ "$mpi" = openmpi ]; then echo -x "$1"; else echo -genv "${1%%=*}" "${1#*=}"; fi; }
SHIM_OLD_DIR=${SHIM_OLD_DIR:-}
modes_cc="none empty full"
[ -n "${RT_OLD:-}" ] && modes_cc="$modes_cc full_old"

# Per-call cost: prog (crates/pmpi/tests/apps/PROG.c) run with 1 rank, its ns per iteration of
# CALLS intercepted calls, each mode interleaved. CLOCK=cpu times the rank's thread CPU time
# instead of the wall clock (a descheduled rank then adds nothing, the writer thread is not counted).
cost_part() {
    local prog=$1 iters=$2 calls=$3
    for mpi in openmpi mpich; do
        load_note
        mpicc.$mpi -O2 -w -o "$W/${prog}_$mpi" crates/pmpi/tests/apps/$prog.c
        SHIM=$(shim_of $mpi)
        for i in $(seq "$N"); do
            for mode in $modes_cc; do
                rm -rf "$W/d"; mkdir -p "$W/d"
                args=()
                case $mode in
                    empty) args=($(pass LD_PRELOAD=$SHIM:$RT) $(pass COMMPERF_PMPI_DIR=$W/d) $(pass COMMPERF_PMPI_EMPTY=1)) ;;
                    full) args=($(pass LD_PRELOAD=$SHIM:$RT) $(pass COMMPERF_PMPI_DIR=$W/d) $(pass COMMPERF_PMPI_FLUSH_MS=5)) ;;
                    full_old) args=($(pass LD_PRELOAD=$SHIM_OLD_DIR/libcommperf_pmpi_$mpi.so:$RT_OLD) $(pass COMMPERF_PMPI_DIR=$W/d) $(pass COMMPERF_PMPI_FLUSH_MS=5)) ;;
                esac
                v=$(mpirun.$mpi -np 1 "${args[@]}" "$W/${prog}_$mpi" "$iters" ${CLOCK:-})
                echo "$v" >> "$W/${prog}_${mpi}_$mode"
            done
        done
        for mode in $modes_cc; do
            echo "$prog $mpi $mode ns/iteration ($calls calls, ${CLOCK:-wall} time): median $(median < "$W/${prog}_${mpi}_$mode") of $(tr '\n' ' ' < "$W/${prog}_${mpi}_$mode")"
        done
        e=$(median < "$W/${prog}_${mpi}_empty")
        n=$(median < "$W/${prog}_${mpi}_none")
        echo "$prog $mpi: empty - none = $(echo "($e - $n) / $calls" | bc -l | xargs printf '%.1f') ns per call (the interposition itself)"
        for mode in $modes_cc; do
            [ "$mode" = none ] || [ "$mode" = empty ] && continue
            f=$(median < "$W/${prog}_${mpi}_$mode")
            echo "$prog $mpi: $mode - empty = $(echo "($f - $e) / $calls" | bc -l | xargs printf '%.1f') ns per intercepted call"
        done
    done
}
[[ " $PARTS " == *" callcost "* ]] && cost_part callcost 1000000 3
[[ " $PARTS " == *" pollcost "* ]] && cost_part pollcost 5000000 3

# Fixed per-run cost: an MPI program that only initializes and finalizes, 2 ranks, with and
# without the preload (the runtime's start, the clock exchanges at MPI_Init and MPI_Finalize,
# the writer thread, the files).
if [[ " $PARTS " == *" fixed "* ]]; then
    for mpi in openmpi mpich; do
        load_note
        SHIM=$(shim_of $mpi)
        for i in $(seq "$N"); do
            for mode in none full; do
                rm -rf "$W/d"; mkdir -p "$W/d"
                args=()
                [ $mode = full ] && args=($(pass LD_PRELOAD=$SHIM:$RT) $(pass COMMPERF_PMPI_DIR=$W/d))
                s=$(date +%s.%N)
                mpirun.$mpi -np 2 "${args[@]}" "$W/empty_$mpi" > /dev/null
                e=$(date +%s.%N)
                echo "$e - $s" | bc -l >> "$W/fixed_${mpi}_$mode"
            done
        done
        a=$(median < "$W/fixed_${mpi}_none"); b=$(median < "$W/fixed_${mpi}_full")
        echo "empty program $mpi wall s: none median $a [$(tr '\n' ' ' < "$W/fixed_${mpi}_none")] full median $b [$(tr '\n' ' ' < "$W/fixed_${mpi}_full")] fixed cost $(echo "($b - $a) * 1000" | bc -l | xargs printf '%.1f') ms"
    done
fi

# Application slowdown. Debian's hpcc and lammps link Open MPI; the MPICH builds come from
# scripts/build_mpich_apps.sh.
if [[ " $PARTS " == *" apps "* ]]; then
    if [ "${LONG:-0}" = 1 ]; then
        cp crates/pmpi/tests/apps/hpccinf-long.txt "$W/hpccinf.txt"
        steps=20000
    else
        cp crates/pmpi/tests/apps/hpccinf.txt "$W/"
        sed -i "s/^2            Ps/1            Ps/" "$W/hpccinf.txt"
        steps=2000
    fi
    cp crates/pmpi/tests/apps/in.lj "$W/"
    sed -i "s/^run .*/run             $steps/" "$W/in.lj"
    for mpi in $APPS_MPI; do
        SHIM=$(shim_of $mpi)
        if [ $mpi = openmpi ]; then hpcc=hpcc; lmp=lmp; else hpcc=$APPS/hpcc; lmp=$APPS/lmp; fi
        for app in hpcc lammps; do
            if [ $app = hpcc ]; then cmd=("$hpcc"); else cmd=("$lmp" -in in.lj -log none -screen none); fi
            if ! command -v "${cmd[0]}" >/dev/null; then
                echo "$app $mpi: ${cmd[0]} not found (scripts/build_mpich_apps.sh --lammps builds it)"
                continue
            fi
            load_note
            for i in $(seq "$N"); do
                for mode in none full; do
                    rm -rf "$W/d"; mkdir -p "$W/d"
                    args=()
                    [ $mode = full ] && args=($(pass LD_PRELOAD=$SHIM:$RT) $(pass COMMPERF_PMPI_DIR=$W/d))
                    s=$(date +%s.%N)
                    (cd "$W" && mpirun.$mpi -np 2 "${args[@]}" "${cmd[@]}" > /dev/null 2>&1)
                    e=$(date +%s.%N)
                    echo "$e - $s" | bc -l >> "$W/app_${app}_${mpi}_$mode"
                    if [ $mode = full ] && [ "$i" = 1 ]; then
                        echo "$app $mpi: recorded $(du -sb "$W/d" | cut -f1) bytes in $(ls "$W/d" | wc -l) files"
                    fi
                done
            done
            a=$(median < "$W/app_${app}_${mpi}_none"); b=$(median < "$W/app_${app}_${mpi}_full")
            echo "$app $mpi wall s: none median $a [$(tr '\n' ' ' < "$W/app_${app}_${mpi}_none")] full median $b [$(tr '\n' ' ' < "$W/app_${app}_${mpi}_full")] slowdown $(echo "($b / $a - 1) * 100" | bc -l | xargs printf '%.2f') %"
        done
    done
fi
