#!/usr/bin/env bash
# The kill -9 series of issue 30 ("no orphans"): N times each (default 50), `commperf monitor`
# and `commperf emulate` over `mpirun.openmpi -np 2 lingers 30`, and `commperf app` running
# `lingers 30` on the ompi-shm stack (mpirun under the monitor), are killed with SIGKILL at a
# random point 0.2-2 s after their start; a trial is clean when, within 5 s, no process of
# the run is left (found by a marker in their environment, which mpirun passes to its ranks)
# and no file in the run's TMPDIR (emulate's run directory, Open MPI's session directory and
# shared-memory segments, which the test points there). Prints per launcher the trials, the
# clean ones (within 5 s, and within 2 s) and the slowest clean-up.
#
#   scripts/kill_series.sh [N] [path/to/commperf] [VERB...]   (default: monitor emulate app)
set -u
n=${1:-50}
exe=${2:-target/debug/commperf}
shift 2 2>/dev/null || shift $#
verbs=("$@")
[ ${#verbs[@]} -eq 0 ] && verbs=(monitor emulate app)
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

for verb in "${verbs[@]}"; do
    clean=0 in2=0 slowest=0
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
        # Polled for 5 s from the kill; `tenths` is how long (wall clock) the run took to be gone.
        killed=$(date +%s%N) left="" tenths=0
        while :; do
            left="$(of_run "$mark")$(find "$tmp" -mindepth 1 2>/dev/null | head -1)"
            tenths=$((($(date +%s%N) - killed) / 100000000))
            [ -z "$left" ] || [ "$tenths" -ge 50 ] && break
            sleep 0.1
        done
        if [ -z "$left" ]; then
            clean=$((clean + 1))
            [ "$tenths" -le 20 ] && in2=$((in2 + 1))
            [ "$tenths" -gt "$slowest" ] && slowest=$tenths
        else
            echo "$verb trial $i: left $left" >&2
            # What the trial left is ended here, by pid, so the next starts clean.
            for p in $(of_run "$mark"); do kill -9 "$p" 2>/dev/null; done
        fi
        rm -rf "$tmp" "$scratch/out-$i"
    done
    echo "$verb: tried $n, clean within 5 s $clean, within 2 s $in2 (slowest clean trial" \
        "$((slowest / 10)).$((slowest % 10)) s)"
done
