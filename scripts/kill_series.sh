#!/usr/bin/env bash
# The kill -9 series of issue 30 ("no orphans"): N times each (default 50), `commperf monitor`
# and `commperf emulate` over `mpirun.openmpi -np 2 lingers 30`, and `commperf app` running
# `lingers 30` on the ompi-shm stack (mpirun under the monitor), are killed with SIGKILL at a
# random point 0.2-2 s after their start; a trial is clean when, within 5 s, no process of
# the run is left (found by a marker in their environment, which mpirun passes to its ranks)
# and no file in the run's TMPDIR (emulate's run directory, Open MPI's session directory and
# shared-memory segments, which the test points there). Prints tried / clean per launcher.
#
#   scripts/kill_series.sh [N] [path/to/commperf]
set -u
n=${1:-50}
exe=${2:-target/debug/commperf}
root=$(cd "$(dirname "$0")/.." && pwd)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
scratch=$(mktemp -d /tmp/commperf-kill-series.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
mpicc.openmpi -O1 -w -o "$scratch/lingers" "$root/crates/pmpi/tests/apps/lingers.c" || exit 1

# The pids of the processes whose environment holds COMMPERF_KILL_SERIES=$1.
of_run() {
    grep -lsaF "COMMPERF_KILL_SERIES=$1" /proc/[0-9]*/environ 2>/dev/null |
        sed 's|/proc/\([0-9]*\)/environ|\1|' | grep -v "^$$\$" || true
}

for verb in monitor emulate app; do
    clean=0
    for i in $(seq 1 "$n"); do
        mark="$$-$verb-$i"
        tmp="$scratch/tmp-$verb-$i"
        mkdir -p "$tmp"
        launcher=(mpirun.openmpi -np 2 --oversubscribe)
        case $verb in
            monitor) args=(monitor -o "$scratch/out-$i") ;;
            emulate) args=(emulate --L 20us) ;;
            app) args=(app --stacks ompi-shm --np 2 --no-bench -o "$scratch/out-$i")
                 launcher=() ;;
        esac
        COMMPERF_KILL_SERIES=$mark TMPDIR=$tmp OMPI_MCA_btl_vader_backing_directory=$tmp \
            "$exe" "${args[@]}" -- "${launcher[@]}" "$scratch/lingers" 30 \
            </dev/null >/dev/null 2>&1 &
        pid=$!
        sleep "$(awk -v r="$RANDOM" 'BEGIN { printf "%.2f", 0.2 + 1.8 * r / 32767 }')"
        kill -9 "$pid"
        wait "$pid" 2>/dev/null
        left=""
        for _ in $(seq 1 50); do
            left="$(of_run "$mark")$(find "$tmp" -mindepth 1 | head -1)"
            [ -z "$left" ] && break
            sleep 0.1
        done
        if [ -z "$left" ]; then
            clean=$((clean + 1))
        else
            echo "$verb trial $i: left $left" >&2
            # What the trial left is ended here, by pid, so the next starts clean.
            for p in $(of_run "$mark"); do kill -9 "$p" 2>/dev/null; done
        fi
        rm -rf "$tmp" "$scratch/out-$i"
    done
    echo "$verb: tried $n, clean $clean"
done
