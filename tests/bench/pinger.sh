#!/usr/bin/env bash
# Benchmark of combo-pinger against Debian's fping on the same loopback targets.
#
# N targets in 127.1.0.0/16, one probe per target per second for DURATION
# seconds: combo-pinger and fping at the same time, each in a network
# namespace of its own with the same loopback addresses (so both are measured
# in the same state of the machine, whose speed drifts by a third over
# minutes on a shared host), then combo-pinger again with every tenth target
# black-holed (nft drop). Prints
# CPU seconds per 1000 probes for both and their ratio, combo-pinger's peak
# RSS, the median |RTT difference| per target, and the delay the black hole
# adds to the other targets' rounds.
#
# combo-pinger opens unprivileged ICMP (SOCK_DGRAM) sockets when the
# namespace's net.ipv4.ping_group_range allows it, as a pod without NET_RAW
# would; ICMP_SOCKET=raw leaves the range closed so it falls back to a raw
# socket, as fping uses.
#
# Usage: tests/bench/pinger.sh   (root; env N=1000 DURATION=30 ICMP_SOCKET=dgram|raw PINGER_BIN=...)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIN=${PINGER_BIN:-$ROOT/target/release/combo-pinger}
N=${N:-1000}
DURATION=${DURATION:-30}
ICMP_SOCKET=${ICMP_SOCKET:-dgram}
NS=kcpb-$$
NSF=kcpbf-$$
WORK=$(mktemp -d)

cleanup() { ip netns del "$NS" 2>/dev/null || true; ip netns del "$NSF" 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT

[ -x "$BIN" ] || { echo "build it first: cargo build --release -p combo-pinger" >&2; exit 2; }
command -v fping >/dev/null || { echo "fping is not installed" >&2; exit 2; }

ip netns add "$NS"
ip -n "$NS" link set lo up
ip netns add "$NSF"
ip -n "$NSF" link set lo up
if [ "$ICMP_SOCKET" = dgram ]; then
    ip netns exec "$NS" sysctl -q -w net.ipv4.ping_group_range="0 2147483647"
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

run_pinger() {
    ip netns exec "$NS" /usr/bin/time -f "%U %S %M" -o "$1.time" \
        "$BIN" --count 1 --interval 1 --rounds "$DURATION" --timeout-ms 1000 \
        --max-loss-percent 100 "${PING_ARGS[@]}" > "$1.out" 2>/dev/null || true
}

echo "combo-pinger and fping: $N targets x $DURATION s, side by side ..." >&2
run_pinger "$WORK/pinger" &
PINGER_PID=$!
ip netns exec "$NSF" /usr/bin/time -f "%U %S %M" -o "$WORK/fping.time" \
    fping -C "$DURATION" -p 1000 -i 1 -t 1000 -q -f "$WORK/targets" 2> "$WORK/fping.out" || true
wait "$PINGER_PID"

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

echo "combo-pinger ICMP socket: $ICMP_SOCKET; fping: raw"
python3 - "$WORK" "$N" "$DURATION" <<'PY'
import re, statistics as st, sys
from datetime import datetime
work, n, dur = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
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

def usage(path):
    u, s, m = open(path).read().split()[-3:]
    return float(u) + float(s), int(m)

def fping(path):
    rtts = {}
    for line in open(path):
        if " : " not in line:
            continue
        ip, vals = line.split(" : ", 1)
        rtts[ip.strip()] = [float(v) for v in vals.split() if v != "-"]
    return rtts

p_rtt, p_times = pinger(f"{work}/pinger.out")
f_rtt = fping(f"{work}/fping.out")
_, h_times = pinger(f"{work}/holed.out")
holes = set(open(f"{work}/holes").read().split())
p_cpu, p_rss = usage(f"{work}/pinger.time")
f_cpu, f_rss = usage(f"{work}/fping.time")
p_probes = sum(len(v) for v in p_times.values())
f_probes = n * dur
p_per = p_cpu / (p_probes / 1000) if p_probes else float("nan")
f_per = f_cpu / (f_probes / 1000)
diffs = [abs(st.median(p_rtt[ip]) - st.median(f_rtt[ip])) * 1000
         for ip in p_rtt if f_rtt.get(ip)]

def gaps(times, skip):
    out = []
    for ip, ts in times.items():
        if ip in skip:
            continue
        out += [b - a for a, b in zip(ts, ts[1:])]
    return sorted(out)

base, holed = gaps(p_times, set()), gaps(h_times, holes)
def pct(xs, q):
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")

received = sum(len(v) for v in p_rtt.values())
print(f"targets {n}, duration {dur} s, probes: combo-pinger {p_probes} ({received} answered), fping {f_probes}")
print(f"CPU s per 1000 probes: combo-pinger {p_per:.4f}, fping {f_per:.4f}, ratio {p_per / f_per:.2f} (target <= 0.7)")
print(f"RSS: combo-pinger {p_rss / 1024:.1f} MiB (target <= 20), fping {f_rss / 1024:.1f} MiB")
p_med = st.median(st.median(v) for v in p_rtt.values()) * 1000
f_med = st.median(st.median(v) for v in f_rtt.values() if v) * 1000
print(f"median RTT: combo-pinger {p_med:.1f} us, fping {f_med:.1f} us")
print(f"median |RTT difference| per target: {st.median(diffs):.1f} us over {len(diffs)} targets (target <= 50)")
print(f"round gap of the other targets, median/p99: {pct(base, .5) * 1000:.1f}/{pct(base, .99) * 1000:.1f} ms "
      f"-> {pct(holed, .5) * 1000:.1f}/{pct(holed, .99) * 1000:.1f} ms with {len(holes)} black-holed")
print(f"added delay from the black hole, median/p99: {(pct(holed, .5) - pct(base, .5)) * 1000:+.1f}/"
      f"{(pct(holed, .99) - pct(base, .99)) * 1000:+.1f} ms (target 0)")
PY
