#!/usr/bin/env bash
# A deterministic mutation series over every reader of outside input, through the installed
# `commperf` binary (no libFuzzer, no nightly): fuzz/corpus/READER/'s real files are mutated N
# times each reader (bit flips, truncation, duplicated lines, huge numbers, deep nesting,
# deleted and inserted bytes; the rank files' frame checksums are recomputed for half of them,
# so that their contents are reached), and each mutant is given to the verb that reads it under
# a time and a memory limit. Counted: tried, clean errors (exit 1 with a one-line message naming
# the file), other errors (non-zero, but not such a message: listed), successes, panics,
# timeouts and OOMs. Exits 1 if any panic, timeout or OOM.
#
# Usage: scripts/mutation_series.sh [N_PER_READER]   (default 700: 8 readers, 5,600 inputs)
# Environment: COMMPERF (the binary; default `commperf` on PATH), SEED (default 1),
# TIMEOUT (seconds per input, default 10), MEM_KB (ulimit -v, default 4194304 = 4 GiB),
# JOBS (parallel inputs, default 2), KEEP=1 keeps the work directory.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-700}
bin=${COMMPERF:-$(command -v commperf || true)}
[ -x "$bin" ] || { echo "no commperf binary: install it or set COMMPERF" >&2; exit 2; }
seed=${SEED:-1}
timeout_s=${TIMEOUT:-10}
mem_kb=${MEM_KB:-4194304}
jobs=${JOBS:-2}
work=$(mktemp -d "${TMPDIR:-/tmp}/commperf-mutants.XXXXXX")
[ -n "${KEEP:-}" ] || trap 'rm -rf "$work"' EXIT

# 1. The mutants, and one line per input: READER<TAB>FILE-IT-NAMES<TAB>command args…
python3 - "$n" "$seed" "$work" fuzz/corpus <<'EOF'
import os, random, re, struct, sys
n, seed, work, corpus = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
M = (1 << 64) - 1
FNV_OFFSET, FNV_PRIME = 0xcbf29ce484222325, 0x100000001b3

def fnv1a(d):
    h = FNV_OFFSET
    for b in d:
        h = ((h ^ b) * FNV_PRIME) & M
    return h

def fnv64w(d):  # commperf_pmpi_rt::format::fnv64w
    lane = [FNV_OFFSET, FNV_OFFSET ^ 1, FNV_OFFSET ^ 2, FNV_OFFSET ^ 3]
    full = len(d) // 32 * 32
    for o in range(0, full, 32):
        for i in range(4):
            w = struct.unpack_from("<Q", d, o + 8 * i)[0]
            lane[i] = ((lane[i] ^ w) * FNV_PRIME) & M
    rest = d[full:]
    for i in range(4):
        c = rest[8 * i:8 * i + 8]
        if not c:
            break
        lane[i] = ((lane[i] ^ int.from_bytes(c, "little")) * FNV_PRIME) & M
    h = ((FNV_OFFSET ^ len(d)) * FNV_PRIME) & M
    for l in lane:
        h = ((h ^ l) * FNV_PRIME) & M
    return h ^ (h >> 29)

def fix_checksums(b):
    """Recomputes every whole frame's checksum (format: crates/pmpi-rt/src/format.rs)."""
    b = bytearray(b)
    if len(b) < 8 or b[:7] != b"CPMPI\x00v" or b[7:8] not in b"12345":
        return bytes(b)
    v = int(b[7:8])
    at = 8
    while len(b) - at >= 16:
        ln = struct.unpack_from("<I", b, at + 4)[0]
        end = at + 16 + ln
        if end > len(b):
            break
        p = bytes(b[at + 8:at + 8 + ln])
        struct.pack_into("<Q", b, at + 8 + ln, fnv1a(p) if v == 1 else fnv64w(p))
        at = end
    return bytes(b)

HUGE = [b"18446744073709551616", b"99999999999999999999999999999999", b"4294967296",
        b"9223372036854775807", b"-1", b"1e400", b"nan", b"-0", b"1e-400", b"16777216"]
NEST = {".xml": (b"<zone id=\"n\" routing=\"Full\">", b"</zone>"), ".json": (b"[", b"]"),
        ".dot": (b"{", b"}"), ".goal": (b"{", b"}")}

def mutate(rng, data, ext):
    v = bytearray(data)
    for _ in range(1 + rng.randrange(3)):
        op = rng.randrange(8)
        if op == 0 and v:  # bit flips
            for _ in range(1 + rng.randrange(4)):
                i = rng.randrange(len(v)); v[i] ^= 1 << rng.randrange(8)
        elif op == 1 and v:  # truncation
            del v[rng.randrange(len(v)):]
        elif op == 2:  # a line duplicated (many times, sometimes)
            lines = bytes(v).split(b"\n")
            i = rng.randrange(len(lines))
            times = rng.choice([1, 2, 10, 1000])
            lines[i:i + 1] = [lines[i]] * (times + 1)
            v = bytearray(b"\n".join(lines))
        elif op == 3:  # a number made huge
            nums = [m.span() for m in re.finditer(rb"\d+", bytes(v))]
            if nums:
                a, b = rng.choice(nums); v[a:b] = rng.choice(HUGE)
        elif op == 4:  # deep nesting
            o, c = NEST.get(ext, (b"{", b"}"))
            d = rng.choice([50, 1000, 100000])
            i = rng.randrange(len(v) + 1)
            v[i:i] = o * d + c * rng.choice([0, d])
        elif op == 5 and v:  # a range deleted
            i = rng.randrange(len(v)); del v[i:i + 1 + rng.randrange(64)]
        elif op == 6 and v:  # a range duplicated elsewhere
            i = rng.randrange(len(v)); piece = v[i:i + 1 + rng.randrange(128)]
            j = rng.randrange(len(v) + 1); v[j:j] = piece
        else:  # random bytes inserted
            i = rng.randrange(len(v) + 1)
            v[i:i] = bytes(rng.randrange(256) for _ in range(1 + rng.randrange(8)))
    return bytes(v)

rng = random.Random(seed)
lines = []
# A trace every topology can carry (2 ranks: each topology seed has at least 2 hosts).
trace2 = os.path.join(work, "two-ranks.txt")
open(trace2, "w").write("ranks 2\nrank 0\nsend 1 1KiB\nrecv 1 8\nrank 1\nrecv 0 1KiB\nsend 0 8\n")
for reader in sorted(r for r in os.listdir(corpus) if os.path.isdir(os.path.join(corpus, r))):
    d = os.path.join(corpus, reader)
    seeds = sorted(os.listdir(d))
    out = os.path.join(work, reader)
    os.makedirs(out)
    for i in range(n):
        s = seeds[i % len(seeds)]
        ext = os.path.splitext(s)[1]
        m = mutate(rng, open(os.path.join(d, s), "rb").read(), ext)
        if reader == "rank_file":
            if rng.randrange(2):
                m = fix_checksums(m)
            # The run's directory: the mutant as rank 0, the seed's other ranks beside it.
            run = os.path.join(out, str(i)); os.makedirs(run)
            f = os.path.join(run, "rank-0.cpmpi")
            open(f, "wb").write(m)
            lines.append(f"{reader}\t{f}\tmonitor report {run} --trace {run}/trace.txt")
            continue
        f = os.path.join(out, f"{i}{ext}")
        open(f, "wb").write(m)
        fmt = {"goal": "goal", "simgrid_ti": "simgrid", "own_trace": "own"}.get(reader)
        if fmt:
            cmd = f"predict --trace {f} --format-in {fmt}"
        elif reader in ("simgrid_xml", "dot"):
            cmd = f"predict --trace {trace2} --topology {f}"
        elif reader == "result_json":
            cmd = f"report {f}"
        elif reader == "monitor_run":
            cmd = f"monitor report {f}"
        else:
            sys.exit(f"no verb reads {reader}")
        lines.append(f"{reader}\t{f}\t{cmd}")
open(os.path.join(work, "inputs.tsv"), "w").write("\n".join(lines) + "\n")
EOF

# 2. Each input under the limits; one result line each: READER<TAB>OUTCOME<TAB>FILE.
one() {
    local reader=$1 file=$2 cmd=$3 err rc
    err="$file.stderr"
    # shellcheck disable=SC2086 # the command's words are split on purpose
    rc=0
    (ulimit -v "$mem_kb"; exec timeout -s KILL "$timeout_s" "$bin" $cmd) >/dev/null 2>"$err" || rc=$?
    local outcome
    if grep -aq "panicked" "$err"; then outcome=panic
    elif [ "$rc" = 137 ]; then outcome=timeout
    elif grep -aqiE "memory allocation of|out of memory|cannot allocate|Cannot allocate" "$err" \
        || [ "$rc" = 134 ]; then outcome=oom
    elif [ "$rc" = 0 ]; then outcome=success
    elif [ "$(grep -ac . "$err")" = 1 ] && grep -aqF "$(basename "$file")" "$err"; then outcome=clean
    elif [ "$reader" = rank_file ] && [ "$(grep -ac . "$err")" = 1 ] && grep -aqF "rank-0" "$err"; then outcome=clean
    else outcome=other
    fi
    printf '%s\t%s\t%s\n' "$reader" "$outcome" "$file"
}
export -f one
export bin mem_kb timeout_s
tr '\n' '\0' <"$work/inputs.tsv" | xargs -0 -P "$jobs" -I{} bash -c 'IFS=$'"'\t'"' read -r r f c <<<"$1"; one "$r" "$f" "$c"' _ {} \
    >"$work/results.tsv"

# 3. The counts.
echo "mutation series: seed $seed, $n inputs per reader, timeout ${timeout_s}s, ulimit -v ${mem_kb} KiB, $bin"
count() { awk -F'\t' -v r="$1" -v o="$2" '(r == "total" || $1 == r) && (o == "tried" || $2 == o)' "$work/results.tsv" | wc -l; }
printf '%-12s %6s %6s %6s %7s %6s %7s %4s\n' reader tried clean other success panic timeout oom
for r in $(cut -f1 "$work/results.tsv" | sort -u) total; do
    printf '%-12s %6d %6d %6d %7d %6d %7d %4d\n' "$r" "$(count "$r" tried)" "$(count "$r" clean)" \
        "$(count "$r" other)" "$(count "$r" success)" "$(count "$r" panic)" "$(count "$r" timeout)" \
        "$(count "$r" oom)"
done
bad=0
for o in other panic timeout oom; do
    grep -P "\t$o\t" "$work/results.tsv" | head -5 | while IFS=$'\t' read -r r _ f; do
        echo "$o: $r $f: $(head -c 300 "$f.stderr" | tr '\n' ' ')"
    done
done
grep -qP "\t(panic|timeout|oom)\t" "$work/results.tsv" && bad=1
[ -n "${KEEP:-}" ] && echo "inputs and results kept in $work"
exit $bad
