#!/usr/bin/env bash
# The interposer's C parts (crates/pmpi/csrc) under ThreadSanitizer and AddressSanitizer: built
# with gcc's -fsanitize=thread and, separately, -fsanitize=address, preloaded with the recording
# runtime into real MPI programs under mpirun, 2 to 4 ranks. Fails on any sanitizer report left
# after the suppressions (scripts/sanitize/*.supp: MPI libraries' own reports only, each said
# why). A CI stage (.ci/run); docs/src/monitor.md says what it covers.
#
#   scripts/sanitize.sh [--mpi mpich|openmpi|both (the default)] [--csrc DIR] [--only tsan|asan]
#                       [--programs "NAME…"] [--keep]
#
# --csrc builds another copy of the C sources (to show what a fix fixed: an older checkout's
# crates/pmpi/csrc). The Rust runtime is not instrumented (a sanitized Rust build needs a
# nightly toolchain and -Zbuild-std): it runs as built, and its memory is seen by the
# sanitizers only where the C side touches it (the rings it pushes events into).
#
# Needs: gcc's libtsan and libasan, mpicc.<mpi> and mpirun.<mpi>, and a build of this tree
# (cargo build, or clippy: the interposer's build script writes the have_<mpi>.h headers the
# C sources are compiled with, and builds the runtime).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

mpis=both
csrc=crates/pmpi/csrc
only=""
pick=""
keep=0
while [ $# -gt 0 ]; do
    case "$1" in
        --mpi) mpis=$2; shift 2 ;;
        --csrc) csrc=$2; shift 2 ;;
        --only) only=$2; shift 2 ;;
        --programs) pick=" $2 "; shift 2 ;;
        --keep) keep=1; shift ;;
        *) echo "usage: $0 [--mpi mpich|openmpi|both] [--csrc DIR] [--only tsan|asan] [--programs \"NAME…\"] [--keep]" >&2; exit 2 ;;
    esac
done
[ "$mpis" = both ] && mpis="mpich openmpi"
csrc=$(cd "$csrc" && pwd)

out=$root/target/sanitize
rm -rf "$out"
mkdir -p "$out"
cleanup() { [ "$keep" = 1 ] || rm -rf "$out/run"; }
trap cleanup EXIT

# The runtime as the interposer's build script builds it (the same cargo command and tree, so
# an earlier build or clippy run leaves nothing to do here).
triple=$(rustc -vV | sed -n 's/^host: //p')
rt=$root/target/commperf-pmpi-rt/$triple/release/libcommperf_pmpi_rt.so
if [ ! -f "$rt" ]; then
    CARGO_PROFILE_RELEASE_DEBUG=false CARGO_PROFILE_RELEASE_STRIP=debuginfo \
        cargo build --manifest-path crates/pmpi-rt/Cargo.toml --lib --release --locked \
        --target "$triple" --target-dir "$root/target/commperf-pmpi-rt" -q
fi

# The have_<mpi>.h the build script generated (the newest build's).
have_header() {
    local h
    h=$(ls -t "$root"/target/*/build/commperf-pmpi-*/out/have_"$1".h 2>/dev/null | head -1 || true)
    if [ -z "$h" ]; then
        echo "no have_$1.h under target/: build the workspace first (cargo build)" >&2
        exit 1
    fi
    echo "$h"
}

# The interposer for MPI $1 with sanitizer $2: build.rs's `build` command plus the sanitizer,
# at -O0 with frame pointers (stacks the reports can be read by; and -O1 took 34 s of CPU per
# build against 13 s, this stage's main cost).
build_shim() {
    local mpi=$1 san=$2 so=$out/libcommperf_pmpi_${1}_$2.so extra=() have
    have=$(have_header "$mpi")
    [ "$mpi" = openmpi ] && extra+=(-lmpi_mpifh)
    "mpicc.$mpi" -shared -fPIC -O0 -g -fno-omit-frame-pointer "-fsanitize=$san" \
        -Wall -Wextra -Wno-unused-parameter "-DCPMPI_${mpi^^}" -include "$have" \
        -I"$csrc" "$csrc/shim.c" "$csrc/emulate.c" "$csrc/coll.c" -o "$so" "${extra[@]}" \
        -Wl,--allow-shlib-undefined -lpthread
}

# The programs: name, compiler, source (crates/pmpi/tests/apps), ranks, arguments.
# commthreads: MPI_THREAD_MULTIPLE, communicators made and freed on two threads (the table's
# race); threads: MPI_THREAD_MULTIPLE, requests posted on one thread, completed on another;
# counts (C) and counts.f90 (Fortran): every point-to-point form, split communicators,
# collectives, MPI_Pcontrol; collemu: the collectives coll.c runs under the knobs
# (COMMPERF_EMULATE), so emulate.c and coll.c run too.
programs=(
    "commthreads mpicc commthreads.c 2"
    "threads mpicc threads.c 4"
    "counts mpicc counts.c 4"
    "counts_f mpif90 counts.f90 4"
    "collemu mpicc collemu.c 4 emulate"
)

compile_app() {
    local mpi=$1 cc=$2 src=$3 exe=$4
    "$cc.$mpi" -O1 -g "crates/pmpi/tests/apps/$src" -o "$exe" 2>"$exe.log" || {
        cat "$exe.log" >&2
        exit 1
    }
}

sanlib() { gcc -print-file-name="lib$1.so"; }

fail=0
run_one() {
    local mpi=$1 san=$2 shim=$3 name=$4 exe=$5 np=$6 mode=$7
    local dir=$out/run/$mpi-$san-$name
    mkdir -p "$dir/mon"
    local pre
    pre="$(sanlib "$san"):$shim:$rt"
    local env=(
        "LD_PRELOAD=$pre"
        "COMMPERF_PMPI_DIR=$dir/mon"
        "TSAN_OPTIONS=suppressions=$root/scripts/sanitize/tsan-$mpi.supp log_path=$dir/report exitcode=66 history_size=4"
        # No leak check: MPICH's and UCX's leaks at exit are in plugins they have unloaded by
        # then, which LeakSanitizer can only call "<unknown module>" (no suppression can name
        # them, and none may name ours). Every access is still checked: overflows,
        # use-after-free, double free.
        "ASAN_OPTIONS=log_path=$dir/report exitcode=66 detect_leaks=0"
        # UCX (both MPIs' transport here) hooks madvise, which glibc calls as a thread exits,
        # after ThreadSanitizer has torn down the thread's state: every thread's exit crashed
        # in __tsan::MutexPreReadLock from ucm_madvise (even without the interposer). Its
        # memory hooks only serve registration caches, which these runs do not need.
        "UCX_MEM_MMAP_HOOK_MODE=none"
    )
    # collemu runs with knobs set (emulate.c's hooks, coll.c's algorithms), recording too.
    local args=()
    if [ "$mode" = emulate ]; then
        mkdir -p "$dir/emu"
        env+=("COMMPERF_EMULATE=o=1000ns,g=1000ns,G=0ns,L=5000ns" "COMMPERF_EMULATE_COLL=p2p"
            "COMMPERF_EMULATE_DIR=$dir/emu")
        args=(check)
    fi
    local launch=()
    if [ "$mpi" = openmpi ]; then
        launch=(mpirun.openmpi -np "$np" --oversubscribe)
        for e in "${env[@]}"; do launch+=(-x "$e"); done
    else
        launch=(mpirun.mpich -np "$np")
        for e in "${env[@]}"; do launch+=(-genv "${e%%=*}" "${e#*=}"); done
    fi
    local t0=$SECONDS rc=0
    (cd "$dir" && timeout -k 5 120 "${launch[@]}" "$exe" "${args[@]}") >"$dir/out" 2>&1 || rc=$?
    local reports
    reports=$(cat "$dir"/report.* 2>/dev/null | grep -c '^==[0-9]*==ERROR\|^WARNING: ThreadSanitizer' || true)
    local files
    files=$(ls "$dir/mon" | grep -c '^rank-' || true)
    printf '%-8s %-5s %-12s np=%s rc=%s reports=%s rank-files=%s %ss\n' \
        "$mpi" "$san" "$name" "$np" "$rc" "$reports" "$files" "$((SECONDS - t0))"
    if [ "$rc" != 0 ] || [ "$reports" != 0 ] || [ "$files" != "$np" ]; then
        fail=1
        cat "$dir/out" >&2
        cat "$dir"/report.* 2>/dev/null | head -150 >&2 || true
    fi
}

sans=(thread address)
[ "$only" = tsan ] && sans=(thread)
[ "$only" = asan ] && sans=(address)
for mpi in $mpis; do
    # Both builds at once: each is one large translation unit (the generated wrappers), most of
    # this script's time, and there are two cores.
    pids=()
    for san in "${sans[@]}"; do
        build_shim "$mpi" "$san" >"$out/build-$mpi-$san.log" 2>&1 &
        pids+=($!)
    done
    for p in "${pids[@]}"; do
        wait "$p" || { cat "$out"/build-"$mpi"-*.log >&2; exit 1; }
    done
    for san in "${sans[@]}"; do
        short=${san/thread/tsan}
        short=${short/address/asan}
        shim=$out/libcommperf_pmpi_${mpi}_$san.so
        for p in "${programs[@]}"; do
            # shellcheck disable=SC2086
            set -- $p
            [ -n "$pick" ] && [[ "$pick" != *" $1 "* ]] && continue
            exe=$out/$mpi-$1
            [ -x "$exe" ] || compile_app "$mpi" "$2" "$3" "$exe"
            run_one "$mpi" "$short" "$shim" "$1" "$exe" "$4" "${5:-}"
        done
    done
done
if [ "$fail" != 0 ]; then
    echo "sanitize: reports (or failed runs) above" >&2
    exit 1
fi
echo "sanitize: clean"
