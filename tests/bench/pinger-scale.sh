#!/usr/bin/env bash
# One pinger among N peers: CPU, memory, /metrics size and series, and the
# Events it writes when one chosen peer stops answering. Prints measured
# numbers; not a timed test.
#
#   tests/bench/pinger-scale.sh PID METRICS_PORT NAMESPACE POD [SECONDS]
#
# PID is a running combo-pinger following a Pinger (with the defaults) as
# pod POD of NAMESPACE, whose peers' addresses answer on this machine (for
# example `ip route add local 10.100.0.0/16 dev lo` in a namespace of
# simulated pods). Needs kubectl for that cluster, nft, and root.
set -euo pipefail
pid=${1:?pid} port=${2:?metrics port} ns=${3:?namespace} pod=${4:?pod} secs=${5:-60}
tick=$(getconf CLK_TCK)
cpu() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
scrape() { curl -sf "http://127.0.0.1:$port/metrics"; }
events() {
    kubectl get events -n "$ns" --field-selector "involvedObject.name=$pod" -o json |
        python3 -c 'import json,sys; print(sum(1 for e in json.load(sys.stdin)["items"] if e.get("type") == "Warning"))'
}
peers=$(kubectl get pods -n "$ns" --no-headers | awk '$3 == "Running"' | wc -l)
c0=$(cpu)
sleep "$secs"
c1=$(cpu)
metrics=$(scrape)
echo "pods Running in $ns: $peers"
python3 - "$c0" "$c1" "$tick" "$secs" <<'PY'
import sys
c0, c1, tick, secs = map(int, sys.argv[1:])
print(f"CPU         : {(c1 - c0) / tick / secs * 100:.2f} % of one core over {secs} s")
PY
echo "RSS         : $(awk '/VmRSS/ {printf "%.1f MiB", $2 / 1024}' "/proc/$pid/status")"
echo "/metrics    : $(printf %s "$metrics" | wc -c) bytes, $(printf %s "$metrics" | grep -vc '^#') series, $(printf %s "$metrics" | grep -c '^combo_pinger_target_up{') targets"

# One chosen peer stops answering.
dead=$(printf %s "$metrics" | sed -n 's/^combo_pinger_target_up{kind="icmp",target="\([0-9.]*\)"} 1$/\1/p' | head -1)
before=$(events)
table="kcbench_$$"
nft add table ip "$table"
trap 'nft delete table ip "$table" 2>/dev/null || true' EXIT
nft "add chain ip $table out { type filter hook output priority 0; }"
nft "add rule ip $table out ip daddr $dead icmp type echo-request drop"
sleep "$secs"
after=$(events)
echo "peer $dead silenced for $secs s: $((after - before)) Warning Event(s) created on $pod"
