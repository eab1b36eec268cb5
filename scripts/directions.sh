#!/usr/bin/env bash
# directions.sh — the direction of each extended benchmark's effect on the real transports of
# this machine, as a benchmark: the claims crates/cli/tests/directions.rs checks only for their
# arithmetic (rows, baselines, costs), measured here with their figures.
#
# Each effect is judged on paired, interleaved measurements, never on two runs far apart: several
# blocks "baseline, variant" in a row (a block per size of nearly the same message, 16, 17, 18 …
# B or 1 MiB − k × 4 KiB, measured on one connection just before each other; conns and cq measure
# one size, their blocks are repeated runs), and the median of the per-block differences against
# a bar: the effect absent would make that median about zero. The bars are those the tests used
# to assert, chosen from the effects measured on this 2-vCPU VM idle and at load 2.
#
# Prints one line per effect (median gain, bar, gain / bar, every block) and a Markdown table;
# writes the raw rows to $OUT (JSON). Exits 1 if an effect is below its bar. A figure measured on
# a loaded machine says how loaded it was: the load average is printed beside it.
#
# Needs: cargo, python3.
# Usage: scripts/directions.sh [OUT.json]      (about 2 minutes idle)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${1:-/tmp/commperf-directions.json}"
cargo build --release --locked -q
CP="$PWD/target/release/commperf" OUT="$OUT" exec python3 - <<'PY'
import json, os, statistics, subprocess, sys

CP = os.environ["CP"]
RUNS = 7  # repeated runs of conns and cq: their blocks


def bench(args):
    o = subprocess.run([CP, "bench", *args, "--format", "json"], capture_output=True, text=True)
    if o.returncode != 0:
        sys.exit(f"commperf bench {' '.join(args)} failed: {o.stderr}")
    return json.loads(o.stdout)


def rows(v, b):
    return [r for r in v["results"] if r["benchmark"] == b]


def row(rs, **what):
    for r in rs:
        if all(r.get(k) == x for k, x in what.items()):
            return r
    sys.exit(f"no row with {what}")


def sizes(first, step, n):
    return ",".join(str(first + i * step) for i in range(n))


def one_cpu():
    # Both ends on the first CPU this process may use: the cache effects need both ends to
    # share a cache, which a VM's two vCPUs do not always do.
    for line in open("/proc/self/status"):
        if line.startswith("Cpus_allowed_list:"):
            first = "".join(c if c.isdigit() else " " for c in line.split(":")[1]).split()[0]
            return f"{first},{first}"
    sys.exit("no Cpus_allowed_list")


raw, results = {}, []


def judge(what, gains, bar, blocks):
    m = statistics.median(gains)
    ok = m > bar
    results.append((what, m, bar, ok))
    print(f"{'ok  ' if ok else 'FAIL'} {what}: median {m:.3f} µs over {len(gains)} blocks, "
          f"bar {bar:.3f} µs ({m / bar:.1f} × the bar)", flush=True)
    for b in blocks:
        print(f"       {b}")


# Blocking: waking a sleeping process costs microseconds; spinning 1000 checks first wins it
# back. Bars: 2 µs for the cost, half the cost for the spin's win.
v = bench(["blocking", "-t", "tcp,uds", "--sizes", sizes(16, 1, 7), "--iters", "2000"])
raw["blocking"] = v
rs = rows(v, "blocking")
for t in ["tcp", "uds"]:
    costs, wins, blocks = [], [], []
    for size in range(16, 23):
        once = row(rs, transport=t, size_bytes=size, block_spins=0)
        spun = row(rs, transport=t, size_bytes=size, block_spins=1000)
        base = once["baseline_p50_us"]
        costs.append(once["p50_us"] - base)
        wins.append(once["p50_us"] - spun["p50_us"])
        blocks.append(f"{size} B: poll {base:.2f}, block {once['p50_us']:.2f}, "
                      f"spin then block {spun['p50_us']:.2f}")
    judge(f"{t}: blocking costs", costs, 2.0, blocks)
    judge(f"{t}: spinning first wins back", wins, 0.5 * statistics.median(costs), blocks)

# Fresh buffers from a pool twice the LLC against a reused one, 1 MiB, shm, one CPU. Bar: a
# tenth of the reused baseline.
cpu = one_cpu()
v = bench(["bufmgmt", "-t", "shm", "--sizes", sizes(1 << 20, -4096, 5), "--iters", "300",
           "--cpus", cpu, "--mode", "block"])
raw["bufmgmt"] = v
costs, bases, blocks = [], [], []
for r in rows(v, "bufmgmt"):
    if r.get("buffers") != "fresh":
        continue
    costs.append(r["p50_us"] - r["baseline_p50_us"])
    bases.append(r["baseline_p50_us"])
    blocks.append(f"{r['size_bytes']} B: reused {r['baseline_p50_us']:.1f}, fresh {r['p50_us']:.1f}")
judge("shm: fresh buffers cost", costs, 0.1 * statistics.median(bases), blocks)

# 64 scattered segments against one: shm packed (bar 1.5 % of the one-segment latency), uds
# vectored (bar 15 %).
for t, more, packed, share in [("shm", ["--cpus", cpu, "--mode", "block"], True, 0.015),
                               ("uds", [], False, 0.15)]:
    v = bench(["noncontig", "-t", t, "--sizes", sizes(1024, 64, 5), "--iters", "2000", *more])
    raw[f"noncontig-{t}"] = v
    rs = rows(v, "noncontig")
    costs, ones, blocks = [], [], []
    for size in (1024 + 64 * i for i in range(5)):
        one = row(rs, transport=t, size_bytes=size, segments=1, packed=packed)["p50_us"]
        many = row(rs, transport=t, size_bytes=size, segments=64, packed=packed)["p50_us"]
        costs.append(many - one)
        ones.append(one)
        blocks.append(f"{size} B: 1 segment {one:.3f}, 64 segments {many:.3f}")
    how = "packed" if packed else "vectored"
    judge(f"{t} {how}: 64 segments cost", costs, share * statistics.median(ones), blocks)

# Sweeping 64 open uds endpoints (a poll(2) each) against one. Bar: 2 µs.
costs, blocks, raw["conns"] = [], [], []
for _ in range(RUNS):
    v = bench(["conns", "-t", "uds", "--conns-max", "64", "--iters", "500"])
    raw["conns"].append(v)
    rs = rows(v, "conns")
    p = {r["connections"]: r["p50_us"] for r in rs}
    costs.append(p[64] - p[1])
    blocks.append(f"1 endpoint {p[1]:.2f}, 64 endpoints {p[64]:.2f}")
judge("uds: 64 endpoints cost", costs, 2.0, blocks)

# A completion queue against the sweep over the same endpoints: uds at 64 (one epoll_wait
# against 64 poll(2) calls; bar 2 µs), shm at 256 (one queue against 256 ring checks; bar 15 %
# of the sweep).
for t, n, iters, bar in [("uds", 64, "500", lambda s: 2.0), ("shm", 256, "2000",
                                                                lambda s: 0.15 * statistics.median(s))]:
    wins, sweeps, blocks, raw[f"cq-{t}"] = [], [], [], []
    for _ in range(RUNS):
        v = bench(["cq", "-t", t, "--conns-max", str(n), "--iters", iters])
        raw[f"cq-{t}"].append(v)
        at = row(rows(v, "cq"), connections=n)
        cq, sweep = at["p50_us"], at["baseline_p50_us"]
        wins.append(sweep - cq)
        sweeps.append(sweep)
        blocks.append(f"{n} endpoints: sweep {sweep:.3f}, completion queue {cq:.3f}")
    judge(f"{t}: the completion queue wins", wins, bar(sweeps), blocks)

load = open("/proc/loadavg").read().split()[:3]
print(f"\nload average {' '.join(load)}, {os.cpu_count()} CPUs\n")
print("| effect | median gain, µs | bar, µs | gain / bar |")
print("|---|---|---|---|")
for what, m, bar, ok in results:
    print(f"| {what} | {m:.3f} | {bar:.3f} | {m / bar:.1f}{'' if ok else ' (below)'} |")
json.dump(raw, open(os.environ["OUT"], "w"))
sys.exit(0 if all(ok for *_, ok in results) else 1)
PY
