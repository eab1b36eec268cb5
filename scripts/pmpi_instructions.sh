#!/usr/bin/env bash
# pmpi_instructions.sh — instructions per intercepted call of `commperf monitor`'s interposer,
# counted by valgrind (callgrind), which a shared machine's noise cannot move: callcost.c (MPI_Isend
# + MPI_Recv + MPI_Wait to itself, one rank, as a singleton) at two iteration counts, the
# difference divided by the extra calls, for: no interposer, empty wrappers (every wrapper only
# calls PMPI), full recording, and optionally an older build's full recording (OLD_DIR = a
# directory holding libcommperf_pmpi_{openmpi,mpich}.so and libcommperf_pmpi_rt.so of one build).
# The time per call is scripts/pmpi_bench.sh's callcost; this is its noise-free companion.
# Usage: scripts/pmpi_instructions.sh   (needs valgrind; ~1 minute)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/machine.sh
command -v valgrind >/dev/null || { echo "needs valgrind (apt-get install valgrind)" >&2; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
cargo build --release --locked -q --bin commperf
export COMMPERF_CACHE_DIR=$W/cache
printf '#include <mpi.h>\nint main(int c, char **v) { MPI_Init(&c, &v); MPI_Finalize(); return 0; }\n' > "$W/empty.c"
for mpi in openmpi mpich; do
    mpicc.$mpi -O2 -w -o "$W/empty_$mpi" "$W/empty.c"
    target/release/commperf monitor -o "$W/install-$mpi" -- mpirun.$mpi -np 1 "$W/empty_$mpi" > /dev/null 2>&1
done
RT=$(ls "$COMMPERF_CACHE_DIR"/libcommperf_pmpi_rt-*.so)
machine_line
LO=20000 HI=120000
# instructions executed by the whole process for ITERS iterations
ir() { # mpi iters preload [env…]
    local mpi=$1 iters=$2 pre=$3; shift 3
    rm -rf "$W/d"; mkdir -p "$W/d"
    env COMMPERF_PMPI_DIR="$W/d" ${pre:+LD_PRELOAD=$pre} "$@" \
        valgrind --tool=callgrind --callgrind-out-file=/dev/null "$W/cc_$mpi" "$iters" 2>&1 \
        | awk '/Collected/ {print $4}'
}
per_call() { # mpi preload [env…]: instructions per call
    local a b
    a=$(ir "$1" $LO "${@:2}"); b=$(ir "$1" $HI "${@:2}")
    echo "scale=1; ($b - $a) / ($HI - $LO) / 3" | bc
}
for mpi in openmpi mpich; do
    mpicc.$mpi -O2 -w -o "$W/cc_$mpi" crates/pmpi/tests/apps/callcost.c
    SHIM=$(ls "$COMMPERF_CACHE_DIR"/libcommperf_pmpi_"$mpi"-*.so)
    none=$(per_call $mpi "")
    empty=$(per_call $mpi "$SHIM:$RT" COMMPERF_PMPI_EMPTY=1)
    full=$(per_call $mpi "$SHIM:$RT")
    echo "callcost $mpi instructions per call: none $none, empty wrappers $empty, full $full"
    echo "callcost $mpi: full - empty = $(echo "$full - $empty" | bc) instructions per intercepted call"
    if [ -n "${OLD_DIR:-}" ]; then
        old=$(per_call $mpi "$OLD_DIR/libcommperf_pmpi_$mpi.so:$OLD_DIR/libcommperf_pmpi_rt.so")
        echo "callcost $mpi: old full $old, old full - empty = $(echo "$old - $empty" | bc) instructions per intercepted call"
    fi
done
