#!/usr/bin/env bash
# compare.sh — commperf's transports against the tools users would run instead, measured in the
# same run: the figures of docs/results.md's "Transports" table.
#
# Runs scripts/anchors.sh (sockperf, iperf3, NetPIPE over TCP and Open MPI shared memory), an
# osu_mbw_mr-style Open MPI message-rate program (scripts/anchors/mpi_mr.c), `commperf limits`,
# and the matching commperf benchmarks, each figure the median of COMPARE_RUNS runs (default 3),
# all pinned to the same two CPUs (peer/server on 0, client on 1). Prints the machine and a
# Markdown table of the ratios, and writes every raw figure to $OUT (JSON).
#
# Needs: cargo, python3; installs Debian's sockperf, iperf3, netpipe-*, openmpi when missing.
# Usage: scripts/compare.sh [OUT.json]      (about 4 minutes; default OUT target/results/compare.json)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/machine.sh
OUT="${1:-target/results/compare.json}"
mkdir -p "$(dirname "$OUT")"
RUNS="${COMPARE_RUNS:-3}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
log() { printf '[compare %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }

# COMMPERF=path uses that binary instead of building target/release/commperf.
if [ -z "${COMMPERF:-}" ]; then cargo build --release --locked -q; fi
wait_quiet
machine_line
CP=${COMMPERF:-target/release/commperf}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

log "anchors (scripts/anchors.sh)"
ANCHORS_SOCKPERF_T=2 ANCHORS_IPERF_T=2 bash scripts/anchors.sh > "$WORK/anchors.json"

log "Open MPI message rate (osu_mbw_mr-style, 8 B, window 64)"
mr_runs=()
if command -v mpicc >/dev/null; then
    mpicc -O2 -o "$WORK/mpi_mr" scripts/anchors/mpi_mr.c
    for _ in $(seq "$RUNS"); do
        v=$(timeout 60 mpirun --oversubscribe -np 2 --bind-to core --mca pml ob1 --mca btl self,vader \
            "$WORK/mpi_mr" 8 64 20000 2>/dev/null | sed -n 's/^msgs_per_s=//p' || true)
        mr_runs+=("${v:-null}")
    done
fi
printf '%s\n' "${mr_runs[@]:-null}" > "$WORK/mpi_mr.txt"

cpjson() { # name, commperf args...
    local name="$1"; shift
    for i in $(seq "$RUNS"); do
        "$CP" bench "$@" --cpus 1,0 --format json > "$WORK/$name.$i.json"
    done
}
log "commperf figures"
"$CP" limits --cpus 0,1 --format json > "$WORK/limits.json"
cpjson shm_lat   latency -t shm --sizes 8 --iters 200000
cpjson shm_bw    bw -t shm --sizes 1M
cpjson shm_mr    mr -t shm --sizes 8 --window 64 --iters 20000
cpjson tcp_poll  latency -t tcp --sizes 64 --iters 100000
cpjson tcp_block latency -t tcp --mode block --sizes 64 --iters 20000
cpjson tcp_bw    bw -t tcp --sizes 1M

python3 - "$WORK" "$RUNS" "$OUT" <<'PY'
import json, statistics, sys, os
work, runs, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
a = json.load(open(f"{work}/anchors.json"))
lim = json.load(open(f"{work}/limits.json"))
mr = [float(x) for x in open(f"{work}/mpi_mr.txt").read().split() if x != "null"]
def med(name, key):
    vals = []
    for i in range(1, runs + 1):
        r = json.load(open(f"{work}/{name}.{i}.json"))["results"][0]
        vals.append(r[key])
    return statistics.median(vals), vals
def in_run_ratio(name):
    # p50 / the limit measured right before the row (cache-line one-way + 8 B of copying).
    vals = []
    for i in range(1, runs + 1):
        r = json.load(open(f"{work}/{name}.{i}.json"))["results"][0]
        vals.append(r["p50_us"] / r["limit_us"])
    return statistics.median(vals), vals
fig = {
  "shm_lat_over_cacheline_8B": in_run_ratio("shm_lat"),
  "shm_lat_p50_us_8B": med("shm_lat", "p50_us"),
  "shm_bw_mb_per_s_1MiB": med("shm_bw", "mb_per_s"),
  "shm_mr_msgs_per_s_8B": med("shm_mr", "msgs_per_s"),
  "tcp_poll_p50_us_64B": med("tcp_poll", "p50_us"),
  "tcp_block_p50_us_64B": med("tcp_block", "p50_us"),
  "tcp_bw_mb_per_s_1MiB": med("tcp_bw", "mb_per_s"),
}
m = lambda k: fig[k][0]
cl = lim["cacheline_one_way_us"]
iperf = a.get("iperf3_gb_per_s")
iperf_1m = a.get("iperf3_gb_per_s_1MiB_writes")
rows = [
  ("shm 8 B latency p50 / physical limit measured just before it (median of per-run ratios)", m("shm_lat_over_cacheline_8B"), 1.0, "≤ 1.5", lambda r: r <= 1.5),
  ("shm 8 B latency p50 / NPopenmpi 8 B", m("shm_lat_p50_us_8B"), a.get("npopenmpi_lat_us_8B"), "≤ 1", lambda r: r <= 1),
  ("shm 1 MiB bw / NPopenmpi 1 MiB", m("shm_bw_mb_per_s_1MiB"), a.get("npopenmpi_mb_per_s_1MiB"), "≥ 1", lambda r: r >= 1),
  ("shm 8 B msgs/s / Open MPI (osu_mbw_mr-style)", m("shm_mr_msgs_per_s_8B"), statistics.median(mr) if mr else None, "≥ 1", lambda r: r >= 1),
  ("tcp poll 64 B p50 / sockperf --nonblocked", m("tcp_poll_p50_us_64B"), a.get("sockperf_pp_poll_p50_us_64B"), "≤ 1.05", lambda r: r <= 1.05),
  ("tcp block 64 B p50 / sockperf blocking", m("tcp_block_p50_us_64B"), a.get("sockperf_pp_block_p50_us_64B"), "≤ 1.05", lambda r: r <= 1.05),
  ("tcp 1 MiB bw / iperf3 single stream (default 128 KiB writes)", m("tcp_bw_mb_per_s_1MiB"), iperf * 1000 if iperf else None, "≥ 0.9", lambda r: r >= 0.9),
  ("tcp 1 MiB bw / iperf3 single stream (-l 1M)", m("tcp_bw_mb_per_s_1MiB"), iperf_1m * 1000 if iperf_1m else None, "≥ 0.9", lambda r: r >= 0.9),
]
print("| comparison | commperf | anchor | ratio | goal | met |")
print("|---|---|---|---|---|---|")
for name, ours, anchor, goal, ok in rows:
    if anchor:
        r = ours / anchor
        print(f"| {name} | {ours:.4g} | {anchor:.4g} | {r:.3f} | {goal} | {'yes' if ok(r) else 'NO'} |")
    else:
        print(f"| {name} | {ours:.4g} | n/a | n/a | {goal} | n/a |")
json.dump({"anchors": a, "limits": lim, "mpi_mr_msgs_per_s": mr,
           "commperf": {k: {"median": v[0], "runs": v[1]} for k, v in fig.items()}},
          open(out, "w"), indent=2)
print(f"\nraw figures: {out}", file=sys.stderr)
PY
