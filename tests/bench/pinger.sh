#!/usr/bin/env bash
# Benchmark of combo-pinger against Debian's fping and against the floor of a
# probe's cost, on the same loopback targets.
#
# N targets in 127.1.0.0/16, one probe per target per second for DURATION
# seconds, RUNS times. In each run three programs probe at the same time,
# each in a network namespace of its own with the same loopback addresses
# (so all three are measured in the same state of the machine, whose speed
# drifts by a third over minutes on a shared host):
#   * combo-pinger;
#   * fping;
#   * the floor: probe_floor (pinger/examples/probe_floor.rs), the same
#     echoes over the same kind of socket as combo-pinger, batched on the
#     same 10 ms grid with sendmmsg/recvmmsg, and nothing else.
# Then combo-pinger once more with every tenth target black-holed (nft drop).
#
# Prints, for each run, the CPU (user + system) per probe of the three in
# microseconds and the ratios pinger/fping and pinger/floor; then the median
# of the runs with min and max; combo-pinger's peak RSS, the median |RTT
# difference| per target against fping, and the delay the black hole adds
# to the other targets' rounds.
#
# combo-pinger and the floor open unprivileged ICMP (SOCK_DGRAM) sockets when
# the namespace's net.ipv4.ping_group_range allows it, as a pod without
# NET_RAW would; ICMP_SOCKET=raw leaves the range closed so both fall back
# to a raw socket, as fping uses.
#
# Usage: tests/bench/pinger.sh   (root; env N=1000 DURATION=20 RUNS=5
#        ICMP_SOCKET=dgram|raw PINGER_BIN=... FLOOR_BIN=...)
# Build: cargo build --release -p combo-pinger --bin combo-pinger --example probe_floor
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIN=${PINGER_BIN:-$ROOT/target/release/combo-pinger}
FLOOR=${FLOOR_BIN:-$ROOT/target/release/examples/probe_floor}
N=${N:-1000}
DURATION=${DURATION:-20}
RUNS=${RUNS:-5}
ICMP_SOCKET=${ICMP_SOCKET:-dgram}
NS=kcpb-$$
NSF=kcpbf-$$
NSL=kcpbl-$$
WORK=$(mktemp -d)

cleanup() {
    for ns in "$NS" "$NSF" "$NSL"; do ip netns del "$ns" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT

build="cargo build --release -p combo-pinger --bin combo-pinger --example probe_floor"
[ -x "$BIN" ] || { echo "build it first: $build" >&2; exit 2; }
[ -x "$FLOOR" ] || { echo "build the floor first: $build" >&2; exit 2; }
command -v fping >/dev/null || { echo "fping is not installed" >&2; exit 2; }

for ns in "$NS" "$NSF" "$NSL"; do
    ip netns add "$ns"
    ip -n "$ns" link set lo up
done
if [ "$ICMP_SOCKET" = dgram ]; then
    for ns in "$NS" "$NSL"; do
        ip netns exec "$ns" sysctl -q -w net.ipv4.ping_group_range="0 2147483647"
    done
fi

python3 - "$N" > "$WORK/targets" <<'PY'
import sys
n = int(sys.argv[1])
for i in range(n):
    print(f"127.1.{i // 250}.{i % 250 + 1}")
PY
mapfile -t TARGETS < "$WORK/targets"
PING_ARGS=()
for t in "${TARGETS[@]}"; do PING_ARGS+=(--ping "$t"); done
# fping sends one request every -i ms whatever the targets: at most 1 ms
# apart, so that N requests fit in the 1 s period.
FPING_INTERVAL=$(python3 -c "print(min(1.0, 1000 / $N))")

# measure NS OUT CMD...: runs CMD in NS; OUT.cpu gets its user and system
# CPU seconds (wait4, microseconds), OUT.rss its peak RSS in KiB (GNU time).
measure() {
    local ns=$1 out=$2
    shift 2
    ip netns exec "$ns" python3 -c '
import os, sys
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[2], sys.argv[2:])
_, _, ru = os.wait4(pid, 0)
open(sys.argv[1], "w").write(f"{ru.ru_utime:.6f} {ru.ru_stime:.6f}\n")
' "$out.cpu" /usr/bin/time -f "%M" -o "$out.rss" "$@"
}

run_pinger() {
    measure "$NS" "$1" "$BIN" --count 1 --interval 1 --rounds "$DURATION" --timeout-ms 1000 \
        --max-loss-percent 100 "${PING_ARGS[@]}" > "$1.out" 2>/dev/null || true
}

for run in $(seq "$RUNS"); do
    echo "run $run of $RUNS: combo-pinger, fping and the floor, $N targets x $DURATION s, side by side ..." >&2
    run_pinger "$WORK/pinger.$run" &
    PINGER_PID=$!
    measure "$NSL" "$WORK/floor.$run" "$FLOOR" "$WORK/targets" "$DURATION" > "$WORK/floor.$run.out" &
    FLOOR_PID=$!
    measure "$NSF" "$WORK/fping.$run" fping -C "$DURATION" -p 1000 -i "$FPING_INTERVAL" -t 1000 -q \
        -f "$WORK/targets" 2> "$WORK/fping.$run.out" || true
    wait "$PINGER_PID" "$FLOOR_PID"
done

echo "combo-pinger with every tenth target black-holed ..." >&2
awk 'NR % 10 == 0' "$WORK/targets" > "$WORK/holes"
{
    echo "table inet hole {"
    echo " set holes { type ipv4_addr; elements = { $(paste -sd, "$WORK/holes") } }"
    echo " chain inp { type filter hook input priority 0; ip daddr @holes icmp type echo-request drop; }"
    echo "}"
} > "$WORK/hole.nft"
ip netns exec "$NS" nft -f "$WORK/hole.nft"
run_pinger "$WORK/holed"

echo "ICMP socket: combo-pinger and the floor $ICMP_SOCKET ($(cut -d' ' -f6 "$WORK/floor.1.out")), fping raw"
python3 - "$WORK" "$N" "$DURATION" "$RUNS" <<'PY'
import re, statistics as st, sys
from datetime import datetime
work, n, dur, runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
line_re = re.compile(r"^(\S+) round (\d+) icmp (\S+): (ok|FAIL) (\d+)/(\d+) received.*?rtt min/avg/max (\S+)")

def pinger(path):
    rtts, times = {}, {}
    for line in open(path):
        m = line_re.match(line)
        if not m:
            continue
        t, _, ip, _, rcv, _, rtt = m.groups()
        times.setdefault(ip, []).append(datetime.fromisoformat(t.replace("Z", "+00:00")).timestamp())
        if rtt != "-":
            rtts.setdefault(ip, []).append(float(rtt.split("/")[1]))
    return rtts, times

def cpu(prefix):
    u, s = open(f"{prefix}.cpu").read().split()
    return float(u) + float(s)

def rss(prefix):
    return int(open(f"{prefix}.rss").read().split()[-1])

def fping(path):
    rtts, sent = {}, 0
    for line in open(path):
        if " : " not in line:
            continue
        ip, vals = line.split(" : ", 1)
        vals = vals.split()
        sent += len(vals)
        rtts[ip.strip()] = [float(v) for v in vals if v != "-"]
    return rtts, sent

def floor(path):
    words = open(path).read().split()
    return int(words[1]), int(words[3])

rows = []
for r in range(1, runs + 1):
    p_rtt, p_times = pinger(f"{work}/pinger.{r}.out")
    f_rtt, f_sent = fping(f"{work}/fping.{r}.out")
    l_sent, l_answered = floor(f"{work}/floor.{r}.out")
    p_sent = sum(len(v) for v in p_times.values())
    p_answered = sum(len(v) for v in p_rtt.values())
    f_answered = sum(len(v) for v in f_rtt.values())
    per = lambda c, k: c / k * 1e6 if k else float("nan")
    p_us = per(cpu(f"{work}/pinger.{r}"), p_sent)
    f_us = per(cpu(f"{work}/fping.{r}"), f_sent)
    l_us = per(cpu(f"{work}/floor.{r}"), l_sent)
    diffs = [abs(st.median(p_rtt[ip]) - st.median(f_rtt[ip])) * 1000 for ip in p_rtt if f_rtt.get(ip)]
    rows.append(dict(p=p_us, f=f_us, l=l_us, pf=p_us / f_us, pl=p_us / l_us,
                     rss=rss(f"{work}/pinger.{r}") / 1024, frss=rss(f"{work}/fping.{r}") / 1024,
                     lrss=rss(f"{work}/floor.{r}") / 1024,
                     diff=st.median(diffs) if diffs else float("nan"),
                     p_med=st.median(st.median(v) for v in p_rtt.values()) * 1000 if p_rtt else float("nan"),
                     f_med=st.median(st.median(v) for v in f_rtt.values() if v) * 1000 if f_answered else float("nan")))
    print(f"run {r}: probes sent/answered: combo-pinger {p_sent}/{p_answered}, fping {f_sent}/{f_answered}, "
          f"floor {l_sent}/{l_answered}")
    print(f"run {r}: CPU per probe: combo-pinger {p_us:.1f} us, fping {f_us:.1f} us, floor {l_us:.1f} us; "
          f"pinger/fping {p_us / f_us:.2f}, pinger/floor {p_us / l_us:.2f}")

def agg(key, fmt):
    xs = [row[key] for row in rows]
    return f"{st.median(xs):{fmt}} [{min(xs):{fmt}}-{max(xs):{fmt}}]"

print(f"--- {n} targets x {dur} s, median [min-max] of {runs} runs ---")
print(f"CPU per probe: combo-pinger {agg('p', '.1f')} us, fping {agg('f', '.1f')} us, floor {agg('l', '.1f')} us")
print(f"ratio pinger/fping: {agg('pf', '.2f')} (target <= 0.5)")
print(f"ratio pinger/floor: {agg('pl', '.2f')} (target <= 3)")
print(f"peak RSS: combo-pinger {agg('rss', '.1f')} MiB (target <= 16), fping {agg('frss', '.1f')} MiB, "
      f"floor {agg('lrss', '.1f')} MiB")
print(f"median RTT: combo-pinger {agg('p_med', '.1f')} us, fping {agg('f_med', '.1f')} us")
print(f"median |RTT difference| per target: {agg('diff', '.1f')} us (target <= 50)")

_, h_times = pinger(f"{work}/holed.out")
_, p_times = pinger(f"{work}/pinger.1.out")
holes = set(open(f"{work}/holes").read().split())

def gaps(times, skip):
    out = []
    for ip, ts in times.items():
        if ip in skip:
            continue
        out += [b - a for a, b in zip(ts, ts[1:])]
    return sorted(out)

def pct(xs, q):
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")

base, holed = gaps(p_times, set()), gaps(h_times, holes)
print(f"round gap of the other targets, median/p99: {pct(base, .5) * 1000:.1f}/{pct(base, .99) * 1000:.1f} ms "
      f"-> {pct(holed, .5) * 1000:.1f}/{pct(holed, .99) * 1000:.1f} ms with {len(holes)} black-holed")
print(f"added delay from the black hole, median/p99: {(pct(holed, .5) - pct(base, .5)) * 1000:+.1f}/"
      f"{(pct(holed, .99) - pct(base, .99)) * 1000:+.1f} ms (target 0)")
PY
