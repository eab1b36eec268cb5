#!/usr/bin/env bash
# MPI-layer figures of commperf against NetPIPE's NPopenmpi and a plain MPI_Send/MPI_Recv loop
# (scripts/mpi_pingpong.c, osu_latency's loop), on the same machine, interleaved, median of
# ROUNDS, over Open MPI's shared memory (vader) and over `--mca pml ob1 --mca btl tcp,self`.
#
# The figures of docs/results.md's "MPI layer" table.
#
# Needs: netpipe-openmpi openmpi-bin libopenmpi-dev libclang-dev. Builds commperf with
# `--features mpi` into target/mpi-openmpi (apart from the default build, which it leaves alone).
# Usage: scripts/mpi-anchor.sh [ROUNDS]      (default 5 rounds, about 3 minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/machine.sh
rounds=${1:-5}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
CARGO_TARGET_DIR=target/mpi-openmpi cargo build --release --locked -q --features mpi
cp=target/mpi-openmpi/release/commperf
wait_quiet
machine_line
out=$(mktemp -d)
mpicc -O2 scripts/mpi_pingpong.c -o "$out/pingpong"
sizes="1,8,64,1K,4K,64K,1M"
for path in shm tcp; do
    mca=()
    [ "$path" = tcp ] && mca=(--mca pml ob1 --mca btl tcp,self)
    for r in $(seq "$rounds"); do
        mpirun -np 2 --bind-to core "${mca[@]}" NPopenmpi -p 0 -l 1 -u 1048576 \
            -o "$out/np-$path-$r.out" >/dev/null 2>&1
        mpirun -np 2 --bind-to core "${mca[@]}" NPopenmpi -s -p 0 -l 1048576 -u 1048576 \
            -o "$out/nps-$path-$r.out" >/dev/null 2>&1
        mpirun -np 2 --bind-to core "${mca[@]}" "$out/pingpong" >"$out/pp-$path-$r.out"
        mpirun -np 2 --bind-to core "${mca[@]}" "$cp" bench latency bw --transport mpi \
            --sizes "$sizes" --format json -o "$out/cp-$path-$r.json" >/dev/null 2>&1
    done
done
echo "# $(mpirun --version 2>&1 | head -1); $rounds rounds; NPopenmpi, scripts/mpi_pingpong.c and commperf interleaved"
python3 - "$out" "$rounds" <<'EOF'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
sizes = [1, 8, 64, 1024, 4096, 65536, 1048576]
def med(xs): return statistics.median(xs)
# Each mpirun lands its ranks on vCPUs anew, and that moves every tool's figures by up to 30 %
# between runs on a VM: ratios are of medians over rounds, and of minima (NetPIPE itself reports
# the best of its trials).
for path in ["shm", "tcp"]:
    np_lat = {s: [] for s in sizes}; pp = {s: [] for s in sizes}
    cp_p50 = {s: [] for s in sizes}; cp_mean = {s: [] for s in sizes}
    nps, cpbw, ppbw = [], {}, {}
    for r in range(1, rounds + 1):
        for line in open(f"{out}/np-{path}-{r}.out"):
            n, mbps, _ = line.split()
            n = int(n)
            if n in np_lat:
                # The time column has 10 ns resolution; the throughput column is exact.
                np_lat[n].append(n * 8 / (float(mbps) * 1e6) * 1e6)
        for line in open(f"{out}/nps-{path}-{r}.out"):
            nps.append(float(line.split()[1]) / 8)  # Mbit/s -> MB/s
        for line in open(f"{out}/pp-{path}-{r}.out"):
            kind, n, x = line.split()
            if kind == "lat":
                pp[int(n)].append(float(x))
            else:
                ppbw.setdefault(int(n), []).append(float(x))
        v = json.load(open(f"{out}/cp-{path}-{r}.json"))
        for row in v["results"]:
            if row["benchmark"] == "latency":
                cp_p50[row["size_bytes"]].append(row["p50_us"])
                cp_mean[row["size_bytes"]].append(row["mean_us"])
            else:
                cpbw.setdefault(row["size_bytes"], []).append(row["mb_per_s"])
    print(f"\n### MPI over {path}: one-way latency (us), median of {rounds} rounds\n")
    print("| size | NPopenmpi | C MPI_Send/Recv loop | commperf p50 | commperf mean | p50 / NPopenmpi | mean / C loop | best p50 / best NPopenmpi | best mean / best C loop |")
    print("|---|---|---|---|---|---|---|---|---|")
    for s in sizes:
        n, c, p, m = med(np_lat[s]), med(pp[s]), med(cp_p50[s]), med(cp_mean[s])
        bn, bc, bp, bm = min(np_lat[s]), min(pp[s]), min(cp_p50[s]), min(cp_mean[s])
        print(f"| {s} | {n:.3f} | {c:.3f} | {p:.3f} | {m:.3f} | {p/n:.3f} | {m/c:.3f} | {bp/bn:.3f} | {bm/bc:.3f} |")
    print(f"\n| bandwidth (MB/s) | C osu_bw loop | commperf bw | ratio | best / best |")
    print("|---|---|---|---|---|")
    for s in (65536, 1048576):
        c, p = med(ppbw[s]), med(cpbw[s])
        print(f"| {s} B, window 64 | {c:.0f} | {p:.0f} | {p/c:.3f} | {max(cpbw[s])/max(ppbw[s]):.3f} |")
    one_mib = 1048576
    print(f"\nNPopenmpi at 1 MiB: streaming (-s) {med(nps):.0f} MB/s against commperf bw "
          f"{med(cpbw[one_mib]):.0f}; ping-pong {one_mib/med(np_lat[one_mib]):.0f} MB/s against "
          f"commperf's ping-pong {one_mib/med(cp_p50[one_mib]):.0f}")
EOF
rm -rf "$out"
