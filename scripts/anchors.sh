#!/usr/bin/env bash
# anchors.sh — measure the anchors of docs/results.md (what users would run instead of commperf)
# on this machine.
#
# Tools: sockperf, iperf3, NetPIPE (NPtcp, NPopenmpi) over Open MPI shared memory.
# Pinning: server / receiver / MPI rank 0 on core 0, client / rank 1 on core 1.
# Every figure is the median of 3 runs (ANCHORS_QUICK=1: 1 run). Prints ONE JSON object on stdout;
# all progress goes to stderr. A figure that cannot be measured is null, and the script goes on.
#
# Units:
#   *_us_*       one-way latency in microseconds (half the round trip).
#   *_mb_per_s_* MB/s with MB = 1e6 bytes.      *_gb_per_s* GB/s with GB = 1e9 bytes.
#
# Tool output formats (checked against sockperf 3.7 and NetPIPE 3.7.2 as packaged in Debian 12):
#   sockperf ping-pong prints one-way latency (RTT/2) percentiles unless --full-rtt is given:
#     "sockperf: ---> percentile 50.000 =   27.912"   (usec)  -> we take the 50.000 line.
#   NetPIPE output file (-o): "bytes  Mbps  seconds" where
#     seconds = one-way time (round trip / 2), the MINIMUM over NetPIPE's trials (netpipe.c), and
#     Mbps    = bits / (seconds * 1024 * 1024)  -- i.e. units of 2^20 bit/s, NOT 1e6 bit/s.
#   The seconds column is printed with only 8 decimals (10 ns resolution, too coarse for MPI shared
#   memory at ~0.1-0.3 us), so we recompute the time from the Mbps column (6 decimals):
#     t = bytes*8 / (Mbps * 2^20);  one-way us = t*1e6;  MB/s = bytes / t / 1e6.
#   iperf3 -J: end.sum_received.bits_per_second (receiver side, bit/s) -> GB/s = bps / 8 / 1e9.
#
# Modes: sockperf "poll" = --nonblocked on BOTH server and client (both spin; with a blocking server
# the p50 is ~3x higher); "block" = default blocking sockets on both ends. iperf3_gb_per_s uses the
# default 128 KiB writes; the extra key iperf3_gb_per_s_1MiB_writes adds -l 1M (1 MiB writes, as
# NPtcp/NPopenmpi at 1 MiB).
#
# Message rate: osu_style_mr_msgs_per_s_8B is always null. Debian 12 packages no MPI message-rate
# tool (no OSU micro-benchmarks, no Intel MPI Benchmarks: `apt-cache search osu`,
# `apt-cache search micro-benchmark` find nothing relevant), and this script installs only
# Debian packages.
#
# Environment:
#   ANCHORS_QUICK=1        1 run per figure instead of 3
#   ANCHORS_SERVER_CPU=0   core for servers / receivers      ANCHORS_CLIENT_CPU=1  core for clients
#   ANCHORS_SOCKPERF_T=3   seconds per sockperf run          ANCHORS_IPERF_T=3     seconds per iperf3 run
#   ANCHORS_NO_INSTALL=1   never call apt-get
set -euo pipefail

RUNS=3
if [[ "${ANCHORS_QUICK:-0}" == "1" ]]; then RUNS=1; fi
SRV_CPU="${ANCHORS_SERVER_CPU:-0}"
CLI_CPU="${ANCHORS_CLIENT_CPU:-1}"
SOCKPERF_T="${ANCHORS_SOCKPERF_T:-3}"
IPERF_T="${ANCHORS_IPERF_T:-3}"

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export LC_ALL=C

log() { printf '[anchors %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }

# ---------------------------------------------------------------- process bookkeeping / cleanup
WORK="$(mktemp -d)"
declare -a PIDS=()   # every background job we start (each is a `timeout` = its own process group)

stop_pid() { # stop one job we started: TERM its process group, then KILL if still there
    local p="$1" i
    kill -0 "$p" 2>/dev/null || return 0
    kill -TERM -- "-$p" 2>/dev/null || kill -TERM "$p" 2>/dev/null || true
    for i in 1 2 3 4 5 6 7 8 9 10; do
        kill -0 "$p" 2>/dev/null || break
        sleep 0.2
    done
    if kill -0 "$p" 2>/dev/null; then
        kill -KILL -- "-$p" 2>/dev/null || kill -KILL "$p" 2>/dev/null || true
    fi
    wait "$p" 2>/dev/null || true
}

forget_pid() {
    local p="$1" q
    local -a keep=()
    for q in "${PIDS[@]}"; do [[ "$q" == "$p" ]] || keep+=("$q"); done
    PIDS=("${keep[@]+"${keep[@]}"}")
}

cleanup() {
    local p
    for p in "${PIDS[@]+"${PIDS[@]}"}"; do stop_pid "$p"; done
    PIDS=()
    cd / && rm -rf "$WORK"
}
trap cleanup EXIT
trap 'log "interrupted"; exit 130' INT TERM HUP

# Start a bounded background job (a server). `timeout` (without --foreground) puts itself in its
# own process group, so its pid is also the pgid we kill later. Sets global BG_PID.
BG_PID=""
start_bg() { # start_bg LOGFILE SECONDS CMD...
    local logf="$1" secs="$2"; shift 2
    timeout -k 2 "$secs" "$@" >"$logf" 2>&1 &
    BG_PID=$!
    PIDS+=("$BG_PID")
}
stop_bg() { stop_pid "$1"; forget_pid "$1"; }

# Run a bounded foreground job (a client), tracked so an interrupt also stops it.
run_fg() { # run_fg LOGFILE SECONDS CMD...   -> returns the command's status
    local logf="$1" secs="$2" p rc=0; shift 2
    timeout -k 2 "$secs" "$@" >"$logf" 2>&1 &
    p=$!
    PIDS+=("$p")
    wait "$p" || rc=$?
    forget_pid "$p"
    return "$rc"
}

PORT=$(( 20000 + ($$ % 20000) ))
next_port() { PORT=$(( PORT + 1 )); }

wait_listen() { # wait (max ~5 s) until something listens on TCP port $1
    local port="$1" i
    if ! command -v ss >/dev/null 2>&1; then sleep 1; return 0; fi
    for i in $(seq 1 50); do
        if [[ -n "$(ss -Hltn "( sport = :$port )" 2>/dev/null)" ]]; then return 0; fi
        sleep 0.1
    done
    return 1
}

# ---------------------------------------------------------------- number helpers
is_num() { [[ "$1" =~ ^[0-9]+([.][0-9]+)?([eE][-+]?[0-9]+)?$ ]]; }

median() { # median of the numeric args (mean of the two middle ones if even); "" if none
    local v; local -a nums=()
    for v in "$@"; do is_num "$v" && nums+=("$v"); done
    ((${#nums[@]})) || { echo ""; return 0; }
    printf '%s\n' "${nums[@]}" | sort -g | awk '{a[NR]=$1} END{ if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2 }'
}

fmt() { # fmt PRINTF_FORMAT VALUE -> formatted number, or null
    if is_num "${2:-}"; then awk -v f="$1" -v x="$2" 'BEGIN{printf f, x}'; else printf 'null'; fi
}

json_str() { local s="$1"; s="${s//\\/\\\\}"; s="${s//\"/\\\"}"; printf '"%s"' "$s"; }

# ---------------------------------------------------------------- install
ensure_tools() {
    local c missing=0
    for c in sockperf iperf3 NPtcp NPopenmpi mpirun taskset timeout; do
        command -v "$c" >/dev/null 2>&1 || { log "missing: $c"; missing=1; }
    done
    ((missing)) || { log "all tools present, skipping install"; return 0; }
    if [[ "${ANCHORS_NO_INSTALL:-0}" == "1" ]]; then log "ANCHORS_NO_INSTALL=1: not installing"; return 0; fi
    local sudo=""
    if [[ "$(id -u)" != 0 ]]; then
        if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else log "not root and no sudo: cannot install"; return 0; fi
    fi
    local pkgs=(sockperf iperf3 netpipe-tcp netpipe-openmpi openmpi-bin libopenmpi-dev)
    command -v ss >/dev/null 2>&1 || pkgs+=(iproute2)
    log "installing: ${pkgs[*]}"
    if ! $sudo env DEBIAN_FRONTEND=noninteractive timeout 900 apt-get install -y -q "${pkgs[@]}" >&2; then
        log "install failed; running apt-get update and retrying"
        $sudo timeout 300 apt-get update -q >&2 || true
        $sudo env DEBIAN_FRONTEND=noninteractive timeout 900 apt-get install -y -q "${pkgs[@]}" >&2 \
            || log "install failed again; unmeasurable figures will be null"
    fi
}

# ---------------------------------------------------------------- measurements
# Each function runs in the main shell (so the EXIT trap knows every server it starts), stores one
# number in RES (empty on failure) and never fails.
RES=""

sockperf_p50() { # sockperf_p50 poll|block -> one-way p50 latency (us), 64 B, TCP loopback
    RES=""
    command -v sockperf >/dev/null 2>&1 || return 0
    local mode="$1" port srv out="$WORK/sockperf_cli.log"
    local -a nb=()
    if [[ "$mode" == poll ]]; then nb=(--nonblocked); fi   # busy-poll: non-blocking sockets on BOTH ends
    next_port; port=$PORT
    start_bg "$WORK/sockperf_srv.log" $(( SOCKPERF_T + 30 )) \
        taskset -c "$SRV_CPU" sockperf sr --tcp -i 127.0.0.1 -p "$port" "${nb[@]+"${nb[@]}"}"
    srv=$BG_PID
    if wait_listen "$port"; then
        rm -f "$out"
        run_fg "$out" $(( SOCKPERF_T + 20 )) \
            taskset -c "$CLI_CPU" sockperf pp --tcp -i 127.0.0.1 -p "$port" -m 64 -t "$SOCKPERF_T" "${nb[@]+"${nb[@]}"}" \
            || log "sockperf pp ($mode) exited with status $?"
        RES=$(sed 's/\x1b\[[0-9;]*m//g' "$out" 2>/dev/null | awk '/percentile 50\.000 =/ {print $NF; exit}') || RES=""
    else
        log "sockperf server did not come up on port $port"
    fi
    stop_bg "$srv"
}

iperf3_gbps() { # iperf3_gbps [extra client args] -> receiver GB/s (1e9 B/s), single stream
    RES=""
    command -v iperf3 >/dev/null 2>&1 || return 0
    local port srv out="$WORK/iperf3_cli.json"
    next_port; port=$PORT
    start_bg "$WORK/iperf3_srv.log" $(( IPERF_T + 30 )) taskset -c "$SRV_CPU" iperf3 -s -1 -p "$port"
    srv=$BG_PID
    if wait_listen "$port"; then
        rm -f "$out"
        run_fg "$out" $(( IPERF_T + 20 )) \
            taskset -c "$CLI_CPU" iperf3 -c 127.0.0.1 -p "$port" -t "$IPERF_T" -J "$@" \
            || log "iperf3 client exited with status $?"
        RES=$(awk '/"sum_received"/ {f=1}
             f && /"bits_per_second"/ { v=$0; sub(/.*"bits_per_second"[ \t]*:[ \t]*/, "", v); sub(/[ \t,].*/, "", v);
                                        printf "%.6f\n", v/8/1e9; exit }' "$out" 2>/dev/null) || RES=""
    else
        log "iperf3 server did not come up on port $port"
    fi
    stop_bg "$srv"
}

netpipe_parse() { # netpipe_parse FILE BYTES lat|bw -> sets RES: one-way us, or MB/s (1e6), from the Mbps column
    RES=$(awk -v n="$2" -v what="$3" '$1 == n && $2 > 0 {
            t = $1 * 8 / ($2 * 1048576)               # Mbps column is bits / (t * 2^20)
            if (what == "lat") printf "%.6f\n", t * 1e6; else printf "%.3f\n", $1 / t / 1e6
            exit }' "$1" 2>/dev/null) || RES=""
}

nptcp() { # nptcp BYTES lat|bw
    RES=""
    command -v NPtcp >/dev/null 2>&1 || return 0
    local n="$1" what="$2" port srv out="$WORK/nptcp.out"
    rm -f "$out"
    next_port; port=$PORT
    # receiver (server role) on core 0, transmitter on core 1; one message size, no perturbation
    start_bg "$WORK/nptcp_rcv.log" 60 taskset -c "$SRV_CPU" NPtcp -P "$port" -p 0 -l "$n" -u "$n"
    srv=$BG_PID
    if wait_listen "$port"; then
        run_fg "$WORK/nptcp_tx.log" 60 \
            taskset -c "$CLI_CPU" NPtcp -h 127.0.0.1 -P "$port" -p 0 -l "$n" -u "$n" -o "$out" \
            || log "NPtcp transmitter exited with status $?"
        netpipe_parse "$out" "$n" "$what"
    else
        log "NPtcp receiver did not come up on port $port"
    fi
    stop_bg "$srv"
}

npopenmpi() { # npopenmpi BYTES lat|bw  (Open MPI ob1 + vader shared memory, ranks bound to cores 0,1)
    RES=""
    command -v NPopenmpi >/dev/null 2>&1 || return 0
    command -v mpirun >/dev/null 2>&1 || return 0
    local n="$1" what="$2" out="$WORK/npmpi.out"
    rm -f "$out"
    if ! run_fg "$WORK/npmpi.log" 90 \
        mpirun --oversubscribe -np 2 --bind-to core --mca pml ob1 --mca btl self,vader \
        NPopenmpi -p 0 -l "$n" -u "$n" -o "$out"; then
        log "mpirun NPopenmpi failed:"; tail -n 5 "$WORK/npmpi.log" >&2 || true
    fi
    netpipe_parse "$out" "$n" "$what"
}

# ---------------------------------------------------------------- main
ensure_tools
if [[ "$(nproc)" -lt 2 ]]; then log "warning: fewer than 2 CPUs; pinning to $SRV_CPU/$CLI_CPU may fail"; fi

declare -A R=()   # R[key] = space-separated per-run values
add() { R[$1]="${R[$1]:-} ${2:-}"; }

cd "$WORK"   # NetPIPE / Open MPI may drop files in the current directory

for run in $(seq 1 "$RUNS"); do
    log "round $run/$RUNS"
    sockperf_p50 poll;      log "  sockperf pp --nonblocked 64B p50 = ${RES:-n/a} us";   add sp_poll "$RES"
    sockperf_p50 block;     log "  sockperf pp (blocking) 64B p50  = ${RES:-n/a} us";   add sp_block "$RES"
    iperf3_gbps;            log "  iperf3 single stream            = ${RES:-n/a} GB/s"; add ip3 "$RES"
    iperf3_gbps -l 1M;      log "  iperf3 single stream, -l 1M     = ${RES:-n/a} GB/s"; add ip3_1m "$RES"
    nptcp 8 lat;            log "  NPtcp 8B                        = ${RES:-n/a} us";   add nptcp_lat "$RES"
    nptcp 1048576 bw;       log "  NPtcp 1MiB                      = ${RES:-n/a} MB/s"; add nptcp_bw "$RES"
    npopenmpi 8 lat;        log "  NPopenmpi 8B                    = ${RES:-n/a} us";   add mpi_lat "$RES"
    npopenmpi 1048576 bw;   log "  NPopenmpi 1MiB                  = ${RES:-n/a} MB/s"; add mpi_bw "$RES"
done

med() { # med KEY -> median of the runs stored under KEY
    local -a vals=()
    read -r -a vals <<<"${R[$1]:-}" || true
    median "${vals[@]+"${vals[@]}"}"
}

cpu="$(awk -F': *' '/^model name/ {print $2; exit}' /proc/cpuinfo 2>/dev/null || true)"
[[ -n "$cpu" ]] || cpu="$(uname -m)"
cpu="$cpu ($(nproc) CPUs)"
kernel="$(uname -r)"
date_utc="$(date -u +%Y-%m-%dT%H:%M:%SZ)"

ver() { "$@" 2>&1 | head -n 1 | tr -d '\r' || true; }
v_sockperf="$(command -v sockperf >/dev/null 2>&1 && ver sockperf --version | sed 's/.*version //' || echo)"
v_iperf3="$(command -v iperf3 >/dev/null 2>&1 && ver iperf3 --version || echo)"
v_ompi="$(command -v mpirun >/dev/null 2>&1 && ver mpirun --version || echo)"
v_netpipe="$(dpkg-query -W -f='${Version}' netpipe-tcp 2>/dev/null || echo)"

cat <<EOF
{
  "sockperf_pp_poll_p50_us_64B": $(fmt '%.3f' "$(med sp_poll)"),
  "sockperf_pp_block_p50_us_64B": $(fmt '%.3f' "$(med sp_block)"),
  "iperf3_gb_per_s": $(fmt '%.3f' "$(med ip3)"),
  "iperf3_gb_per_s_1MiB_writes": $(fmt '%.3f' "$(med ip3_1m)"),
  "nptcp_lat_us_8B": $(fmt '%.3f' "$(med nptcp_lat)"),
  "nptcp_mb_per_s_1MiB": $(fmt '%.1f' "$(med nptcp_bw)"),
  "npopenmpi_lat_us_8B": $(fmt '%.4f' "$(med mpi_lat)"),
  "npopenmpi_mb_per_s_1MiB": $(fmt '%.1f' "$(med mpi_bw)"),
  "osu_style_mr_msgs_per_s_8B": null,
  "runs": $RUNS,
  "tools": {"sockperf": $(json_str "$v_sockperf"), "iperf3": $(json_str "$v_iperf3"), "openmpi": $(json_str "$v_ompi"), "netpipe": $(json_str "$v_netpipe")},
  "machine": {"cpu": $(json_str "$cpu"), "kernel": $(json_str "$kernel"), "date": $(json_str "$date_utc")}
}
EOF
log "done"
