# Sourced by the result scripts (docs/results.md): what every figure is recorded with.
#
#   machine_line      one line: date (UTC), CPU model, CPUs, kernel, load, commperf revision
#   wait_quiet [MAX]  waits (up to QUIET_WAIT seconds, default 300) for the 1-minute load average
#                     to fall below MAX (default 1.0), then says how loaded the machine is; the
#                     figures of a loaded machine are still printed, with the load beside them.

machine_line() {
    local model rev
    model=$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1)
    rev=$(git -C "$(dirname "${BASH_SOURCE[0]}")/.." rev-parse --short HEAD 2>/dev/null || echo unknown)
    printf '# %s | %s, %s CPUs, kernel %s | load %s | commperf %s\n' \
        "$(date -u +%Y-%m-%dT%H:%MZ)" "${model:-unknown CPU}" "$(nproc)" "$(uname -r)" \
        "$(cut -d' ' -f1-3 /proc/loadavg)" "$rev"
}

wait_quiet() {
    local max=${1:-1.0} waited=0 limit=${QUIET_WAIT:-300}
    while awk -v m="$max" '{exit !($1 >= m)}' /proc/loadavg; do
        if [ "$waited" -ge "$limit" ]; then
            echo "# warning: load average $(cut -d' ' -f1 /proc/loadavg) after ${limit} s of waiting; measuring anyway" >&2
            return 0
        fi
        sleep 10
        waited=$((waited + 10))
    done
}
