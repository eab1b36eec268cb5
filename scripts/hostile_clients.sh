#!/usr/bin/env bash
# Hostile clients against a real `commperf serve` (issue 30, item 9): a server started on
# loopback with a token meets idle, trickling, flooding, garbage-sending, oversized, wrongly
# authenticated, log-forging, malformed-after-auth and data-port-stranger clients. Each client
# checks the outcome it must get (refused with the right reason, closed, or served); then the
# server's log is checked (no forged line, no escape code, every flood eviction accounted for)
# and a real `commperf bench --peer` must still be served. Prints "clients tried N, passed P"
# and the counts per kind; exits non-zero on any failure.
#
#   scripts/hostile_clients.sh [path/to/commperf]
set -u
exe=${1:-target/debug/commperf}
scratch=$(mktemp -d /tmp/commperf-hostile.XXXXXX)
token=hostile-test-token-0123456789
server_pid=
cleanup() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
    rm -rf "$scratch"
}
trap cleanup EXIT

"$exe" serve --listen 127.0.0.1:0 --token "$token" >"$scratch/out" 2>"$scratch/log" &
server_pid=$!
for _ in $(seq 1 100); do
    grep -q '^commperf serve: listening on' "$scratch/out" 2>/dev/null && break
    sleep 0.1
done
addr=$(sed -n 's/^commperf serve: listening on //p' "$scratch/out")
[ -n "$addr" ] || { echo "the server did not start: $(cat "$scratch/log")"; exit 1; }

python3 - "$addr" "$token" "$exe" "$scratch/log" <<'EOF'
import json, os, random, socket, struct, subprocess, sys, threading, time
from collections import Counter

addr, token, exe, logfile = sys.argv[1:5]
started = time.time()
host, port = addr.rsplit(":", 1)
port = int(port)
FORGED = "x\n commperf serve: session with client 6.6.6.6:1 started\x1b[2K"
ESCAPED = r"x\n commperf serve: session with client 6.6.6.6:1 started\u{1b}[2K"
tried, passed = Counter(), Counter()
failures = []
lock = threading.Lock()

def conn(timeout=15):
    s = socket.create_connection((host, port), timeout=timeout)
    s.settimeout(timeout)
    return s

def send(s, msg):
    body = json.dumps(msg).encode()
    s.sendall(struct.pack("<I", len(body)) + body)

def recv_exact(s, n):
    b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c:
            raise EOFError("closed")
        b += c
    return b

def recv(s):
    (n,) = struct.unpack("<I", recv_exact(s, 4))
    return json.loads(recv_exact(s, n))

def closed(s):
    """The server closed the connection (a reset counts: it closed with our bytes unread)."""
    try:
        return s.recv(1) == b""
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False

def hello(magic="commperf", protocol=1, version="hostile", tok=None):
    return {"type": "hello", "magic": magic, "protocol": protocol, "version": version,
            "token": token if tok is None else tok}

def refused_with(s, want):
    r = recv(s)
    ok = r.get("type") == "refused" and want in r.get("reason", "") and "\n" not in r["reason"]
    return ok and closed(s), r

def run(kind, fn):
    with lock:
        tried[kind] += 1
    try:
        ok, detail = fn()
    except Exception as e:  # any surprise is a failure of that client
        ok, detail = False, repr(e)
    with lock:
        if ok:
            passed[kind] += 1
        else:
            failures.append(f"{kind}: {str(detail)[:300]}")

# ---- the kinds of client ----------------------------------------------------------------

def idle():
    s = conn()
    return refused_with(s, "handshake not completed within its 5 s deadline")

def trickle():
    s = conn()
    body = json.dumps(hello()).encode()
    frame = struct.pack("<I", len(body)) + body
    t = time.time()
    try:
        for b in frame:
            s.sendall(bytes([b]))
            time.sleep(0.2)
    except (BrokenPipeError, ConnectionResetError):
        pass
    ok, r = refused_with(s, "handshake not completed within its 5 s deadline")
    return ok and time.time() - t < 8, r

def garbage():
    s = conn()
    s.sendall(b"\x10\x00\x00\x00" + os.urandom(16))
    return refused_with(s, "is malformed")

def oversized_frame():
    s = conn()
    s.sendall(struct.pack("<I", 0xFFFFFFFF))
    return refused_with(s, "frame of 4294967295 bytes exceeds the 65536-byte limit")

def oversized_field():
    s = conn()
    send(s, hello(magic="m" * 60000))
    ok, r = refused_with(s, "not a commperf client (magic '" + "m" * 200 + "… (60000 bytes in all)')")
    return ok and len(r["reason"]) < 400, r

def bad_token():
    s = conn()
    send(s, hello(tok="guess-" + str(random.random())))
    return refused_with(s, "wrong session token")

def bad_magic():
    s = conn()
    send(s, hello(magic="http"))
    return refused_with(s, "not a commperf client (magic 'http')")

def bad_protocol():
    s = conn()
    send(s, hello(protocol=7))
    return refused_with(s, "protocol version 7 (commperf hostile) is not supported")

def not_a_hello():
    s = conn()
    send(s, {"type": "bye"})
    return refused_with(s, "is malformed")

def forged_log():
    s = conn()
    which = random.choice(["magic", "version"])
    if which == "magic":
        send(s, hello(magic=FORGED))
        return refused_with(s, f"not a commperf client (magic '{ESCAPED}')")
    send(s, hello(protocol=2, version=FORGED))
    return refused_with(s, f"protocol version 2 (commperf {ESCAPED}) is not supported")

def connect_close():
    s = conn()
    s.close()
    return True, ""

def authed():
    """A client with the token; the session slot may be busy for a moment (BUSY_GRACE)."""
    for _ in range(20):
        s = conn(30)
        send(s, hello())
        w = recv(s)
        if w.get("type") == "welcome":
            return s
        if "busy" not in w.get("reason", ""):
            raise RuntimeError(f"not welcomed: {w}")
        time.sleep(0.5)
    raise RuntimeError("always busy")

def malformed_after_auth():
    s = authed()
    me = "%s:%d" % s.getsockname()
    cmd = random.choice(["launch\nmissiles", "\x1b[2J", "run"])
    send(s, {"type": cmd})
    r = recv(s)
    want = f"control message from client {me} is malformed: "
    ok = r.get("type") == "error" and r.get("message", "").startswith(want) and "\n" not in r["message"]
    return ok and closed(s), r

def data_stranger():
    s = authed()
    send(s, {"type": "data", "transport": "tcp", "mode": "poll", "max_message": 4096,
             "idle_timeout_ms": 60000, "shm_ring_bytes": 1 << 20, "shm_frag_bytes": 65536,
             "shm_single_copy_from": None, "extra": False, "uring_sqpoll": False})
    offer = recv(s)
    dh, dp = offer["address"].rsplit(":", 1)
    stranger = socket.create_connection((dh, int(dp)))
    stranger.sendall(random.choice([b"GET / HTTP/1.1\r\n\r\n" + b" " * 16,
                                    struct.pack("<QII", len(token), 0xC0DE70CE, 0x43504D31)
                                    + b"x" * len(token)]))
    real = socket.create_connection((dh, int(dp)))
    real.sendall(struct.pack("<QII", len(token), 0xC0DE70CE, 0x43504D31) + token.encode())
    r = recv(s)
    ok = r == {"type": "data_ready"} and closed(stranger)
    send(s, {"type": "bye"})
    for x in (s, stranger, real):
        x.close()
    return ok, r

def flood_member(i, conns):
    """Held idle among 150: closed without a word to make room, or refused at the deadline."""
    s = conns[i]
    s.settimeout(15)
    try:
        r = recv(s)
        ok = r.get("type") == "refused" and "5 s deadline" in r.get("reason", "")
        return ok and closed(s), r
    except EOFError:
        return True, ""  # closed to make room

# ---- the series --------------------------------------------------------------------------

def parallel(jobs):
    ts = [threading.Thread(target=run, args=j) for j in jobs]
    for t in ts:
        t.start()
    for t in ts:
        t.join()

# Unauthenticated clients, many at once (fewer than the 64 pending a server holds).
quick = [garbage, oversized_frame, oversized_field, bad_token, bad_magic, bad_protocol,
         not_a_hello, forged_log, connect_close]
parallel([(f.__name__, f) for f in quick for _ in range(6)])
parallel([("idle", idle)] * 8 + [("trickle", trickle)] * 4)
# Authenticated ones take the session slot one after the other.
for _ in range(8):
    run("malformed_after_auth", malformed_after_auth)
for _ in range(6):
    run("data_stranger", data_stranger)
# The flood: 150 idle connections at once.
flood = [conn(15) for _ in range(150)]
parallel([("flood", lambda i=i: flood_member(i, flood)) for i in range(150)])
for s in flood:
    s.close()

# ---- after them: the log, and a real client --------------------------------------------
time.sleep(11)  # the log window closes: every count is written
log = open(logfile, encoding="utf-8", errors="replace").read().splitlines()

def check(kind, ok, detail):
    with lock:
        tried[kind] += 1
        if ok:
            passed[kind] += 1
        else:
            failures.append(f"{kind}: {str(detail)[:300]}")

forged = [l for l in log if not l.startswith("commperf serve: ") or "\x1b" in l
          or l.startswith("commperf serve: session with client 6.6.6.6")]
check("log_not_forged", not forged, forged[:3])
single = sum("the one that waited longest makes room" in l for l in log)
summed = sum(int(l.split("closed ")[1].split(" ")[0]) for l in log
             if "more connections without a hello" in l)
# 150 flood connections against a cap of 64: 86 closed to make room.
check("log_flood_counted", single + summed == 86,
      f"{single} lines + {summed} summarised of 86 evictions")
# Of each of the two kinds of connection event, at most LINES_PER_WINDOW (3) lines and one
# summary per 10 s window, windows never overlapping; two lines per session; one line per
# stale shm segment removed at start.
sessions = tried["malformed_after_auth"] + tried["data_stranger"] + 1
windows = int((time.time() - started) / 10) + 1
stale = sum(l.startswith("commperf serve: removed /dev/shm/") for l in log)
bound = 2 * 4 * windows + 2 * sessions + stale
check("log_bounded", len(log) <= bound, f"{len(log)} lines, bound {bound}")
b = subprocess.run([exe, "bench", "latency", "-t", "tcp", "--sizes", "8", "--iters", "50",
                    "--peer", addr, "--token", token], capture_output=True, text=True)
check("real_bench_after", b.returncode == 0, b.stderr.strip()[-300:])

checks = [k for k in tried if k.startswith("log_") or k == "real_bench_after"]
kinds = [k for k in tried if k not in checks]
print(f"clients tried {sum(tried[k] for k in kinds)}, passed {sum(passed[k] for k in kinds)} "
      f"({len(kinds)} kinds)")
for k in kinds:
    print(f"  {k:<22} tried {tried[k]:>3}, passed {passed[k]:>3}")
print(f"checks after them: {sum(passed[k] for k in checks)} of {len(checks)} passed")
for k in checks:
    print(f"  {k:<22} {'passed' if passed[k] else 'FAILED'}")
total_t, total_p = sum(tried.values()), sum(passed.values())
print(f"server log: {len(log)} lines")
for f in failures[:20]:
    print("FAILED", f)
sys.exit(0 if total_t == total_p else 1)
EOF
