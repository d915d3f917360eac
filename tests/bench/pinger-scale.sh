#!/usr/bin/env bash
# One pinger among N peers: CPU, memory, /metrics size and series, the bytes
# its peer watch receives while every peer is updated once, failed rounds
# and Events under 1 % loss, and the Events it writes when one chosen peer
# stops answering; then the cluster-wide totals these imply. Prints measured
# numbers; not a timed test.
#
#   tests/bench/pinger-scale.sh PID METRICS_PORT NAMESPACE POD [SECONDS]
#   tests/bench/pinger-scale.sh --targets [N]
#
# With --targets, no cluster: one standalone pinger probing N loopback
# targets (default 5000), each once a second, against fping and the floor of
# a probe's cost, as tests/bench/pinger.sh does at 1,000: CPU per probe of
# the three, the ratios pinger/fping (target <= 0.5) and pinger/floor
# (target <= 3), median of RUNS (default 5) with min and max, and RSS.
#
# PID is a running combo-pinger following a Pinger (with the defaults) as
# pod POD of NAMESPACE, whose peers' addresses answer on this machine (for
# example `ip route add local 10.100.0.0/16 dev lo` in a namespace of
# simulated pods). Needs kubectl for that cluster, nft, ss, and root.
# PINGER_LOG: the pinger's log (its "round failed" lines are counted);
# LOSS_SECONDS: how long the 1 % loss lasts (default 3 × SECONDS);
# NODES: the cluster size of the printed totals (default 5000);
# PEER_SOURCE: `list` when the pinger reads its peers from its own pod's
# list (maxPeers 1..1000, the default), `pods` when it follows every pod of
# its Debugger (maxPeers 0); it picks the cluster-wide watch formula.
set -euo pipefail
if [[ ${1:-} == --targets ]]; then
    N=${2:-5000} exec "$(dirname "${BASH_SOURCE[0]}")/pinger.sh"
fi
pid=${1:?pid} port=${2:?metrics port} ns=${3:?namespace} pod=${4:?pod} secs=${5:-60}
loss_secs=${LOSS_SECONDS:-$((3 * secs))} nodes=${NODES:-5000} log=${PINGER_LOG:-}
source=${PEER_SOURCE:-list}
tick=$(getconf CLK_TCK)
cpu() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
scrape() { curl -sf "http://127.0.0.1:$port/metrics"; }
events() {
    kubectl get events -n "$ns" --field-selector "involvedObject.name=$pod" -o json |
        python3 -c 'import json,sys; print(sum(1 for e in json.load(sys.stdin)["items"] if e.get("type") == "Warning"))'
}
# Bytes the pinger's TCP connections have received.
received() { "$(dirname "${BASH_SOURCE[0]}")/tcp-received.sh" "$pid"; }
# Sum of combo_pinger_probes_total of ICMP targets with result $1.
probes() { printf %s "$1" | awk -v r="result=\"$2\"" '/^combo_pinger_probes_total\{kind="icmp"/ && index($0, r) { s += $NF } END { print s + 0 }'; }
failed_rounds() { if [[ -n $log ]]; then grep -c 'round failed' "$log" || true; else echo 0; fi; }

table="kcbench_$$"
trap 'nft delete table ip "$table" 2>/dev/null || true' EXIT

peers=$(kubectl get pods -n "$ns" --no-headers | awk '$3 == "Running"' | wc -l)
c0=$(cpu)
sleep "$secs"
c1=$(cpu)
metrics=$(scrape)
echo "pods Running in $ns: $peers"
cpu_pct=$(python3 -c "import sys; print(f'{($c1 - $c0) / $tick / $secs * 100:.2f}')")
echo "CPU         : $cpu_pct % of one core over $secs s"
rss=$(awk '/VmRSS/ {printf "%.1f", $2 / 1024}' "/proc/$pid/status")
echo "RSS         : $rss MiB"
mbytes=$(printf %s "$metrics" | wc -c) series=$(printf %s "$metrics" | grep -vc '^#')
targets=$(printf %s "$metrics" | grep -c '^combo_pinger_target_up{')
echo "/metrics    : $mbytes bytes, $series series, $targets targets"

# Every peer updated once (an annotation, as a status update or a relabel
# would give): what the pinger receives until its connections fall quiet.
r0=$(received)
kubectl annotate pods -n "$ns" --all --overwrite "kubecombo.io/bench-touch=$(date +%s%N)" >/dev/null
last=-1 quiet=0
for _ in $(seq 300); do
    now=$(received)
    if [[ $now == "$last" ]]; then quiet=$((quiet + 1)); else quiet=0; fi
    ((quiet >= 5)) && break
    last=$now
    sleep 1
done
watch_bytes=$(($(received) - r0))
echo "peer watch  : $watch_bytes bytes received while all $peers peers were updated once ($((watch_bytes / (peers > 0 ? peers : 1))) per peer)"

# 1 % of the echo requests leaving this namespace dropped.
ev0=$(events) f0=$(failed_rounds) m0=$(scrape)
nft add table ip "$table"
nft "add chain ip $table out { type filter hook output priority 0; }"
nft "add rule ip $table out icmp type echo-request numgen random mod 100 < 1 drop"
sleep "$loss_secs"
nft delete table ip "$table"
m1=$(scrape) f1=$(failed_rounds) ev1=$(events)
# A request dropped on its way out fails its send (EPERM): result "error";
# one dropped further on is never answered: "timeout". Both are lost.
count() { echo $(($(probes "$1" ok) + $(probes "$1" timeout) + $(probes "$1" error))); }
lost_of() { echo $(($(probes "$1" timeout) + $(probes "$1" error))); }
sent=$(($(count "$m1") - $(count "$m0")))
lost=$(($(lost_of "$m1") - $(lost_of "$m0")))
loss_events=$((ev1 - ev0)) loss_failed=$((f1 - f0))
echo "1 % loss    : $loss_secs s, $sent probes, $lost lost, $loss_failed rounds failed${log:+ (from the log)}, $loss_events Warning Event(s)"

# One chosen peer stops answering.
dead=$(printf %s "$metrics" | sed -n 's/^combo_pinger_target_up{kind="icmp",target="\([0-9.]*\)"[^}]*} 1$/\1/p' | head -1)
before=$(events)
nft add table ip "$table"
nft "add chain ip $table out { type filter hook output priority 0; }"
nft "add rule ip $table out ip daddr $dead icmp type echo-request drop"
sleep "$secs"
after=$(events)
dead_events=$((after - before))
echo "peer $dead silenced for $secs s: $dead_events Warning Event(s) created on $pod"

python3 - "$nodes" "$targets" "$series" "$mbytes" "$watch_bytes" "$peers" "$sent" "$lost" "$loss_secs" "$source" <<'PY'
import sys
nodes, targets, series, mbytes, watch, peers, sent, lost, loss_secs = map(int, sys.argv[1:10])
source = sys.argv[10]
count, interval = 3, 5                     # the Pinger defaults
loss = 0.01
q = 3 * loss**2 * (1 - loss) + loss**3     # a round fails: 2 or 3 of 3 lost (maxLossPercent 50)
per_target_hour = 3600 / interval * q * q  # a Warning: 2 failed rounds in a row
print(f"cluster-wide at {nodes} nodes, each pinger as this one:")
print(f"  echo requests : {nodes * targets * count / interval:,.0f} a second")
print(f"  series        : {nodes * series:,} ({nodes * mbytes / 1e6:,.0f} MB per scrape of every pinger)")
if source == "pods":
    # Each pinger follows all the others: the bytes per peer measured here,
    # times nodes peers, times nodes pingers.
    total = nodes * nodes * watch / max(peers, 1)
else:
    # Each pinger follows its own pod only: what it received here, times
    # nodes pingers, whatever the number of peers.
    total = nodes * watch
print(f"  peer watches  : {total / 1e9:,.3f} GB sent by the API servers when every pod is updated once ({source})")
print(f"  1 % loss      : model {per_target_hour:.2g} Warnings per target-hour, {per_target_hour * nodes * targets:.1f} an hour"
      f" (measured here: {sent} probes, {lost} lost, {loss_secs * targets / 3600:.2f} target-hours)")
print(f"  one dead node : about {targets} probers, one Event series each")
PY
