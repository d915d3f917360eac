#!/usr/bin/env bash
# The pinger's Events under its default settings on the test cluster: first
# a 1 % random drop of echo requests in one peer pod's network namespace for
# LOSS_SECONDS, then that peer cut off entirely for DEAD_SECONDS. Prints the
# Warning Events each prober recorded, per hour and what that implies at
# 5,000 nodes with the default maxPeers; measures, does not assert.
#
#   COMBO_E2E_DIR=DIR [LOSSY=all] tests/bench/pinger-events.sh [LOSS_SECONDS] [DEAD_SECONDS]
#
# LOSSY=all puts the drop in every pinger pod's namespace instead (echo
# requests on their way out): every link loses 1 %, for more rounds to count.
# DIR is a running tests/e2e/cluster.sh cluster of simulated nodes (every
# pod has a network namespace of its own, reachable from this machine).
# Defaults: 600 s of loss, 330 s dead (one repeat of the dead peer's Event
# is due after 5 minutes). Needs root, nft, kubectl, curl, python3.
set -euo pipefail
loss_secs=${1:-600} dead_secs=${2:-330} lossy_all=${LOSSY:-one}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
dir=${COMBO_E2E_DIR:?COMBO_E2E_DIR=DIR of a tests/e2e/cluster.sh cluster}
export KUBECONFIG=$dir/kubeconfig
nodes=$(cat "$dir/nodes")
ns=bench-events-$$
selector=kubecombo.io/debugger=peers
loss_table=kcbench_loss dead_table=kcbench_dead
netns=
lossy_netns=()

nft_in() { ip netns exec "$netns" nft "$@"; }
unloss() {
    local n
    for n in "${lossy_netns[@]}"; do
        ip netns exec "$n" nft delete table inet "$loss_table" 2>/dev/null || true
    done
}
cleanup() {
    unloss
    if [[ -n $netns ]]; then
        nft_in delete table inet "$dead_table" 2>/dev/null || true
    fi
    kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1 || true
}
trap cleanup EXIT

kubectl apply -k "$repo/config/default" >/dev/null
kubectl -n kube-combo-system rollout status deployment/combo-operator --timeout=180s >/dev/null
kubectl create namespace "$ns" >/dev/null
# The shipped sample: the Pinger's defaults (interval 5 s, count 3,
# timeout 1 s, maxLossPercent 50, maxPeers 20, metrics on port 8080).
kubectl apply -n "$ns" -f "$repo/config/samples/pinger_peers.yaml" >/dev/null

# name ip uid node, one line per Running and Ready pod.
pods() {
    kubectl get pods -n "$ns" -l "$selector" -o json | python3 -c '
import json, sys
for p in json.load(sys.stdin)["items"]:
    s = p.get("status", {})
    ready = any(c["type"] == "Ready" and c["status"] == "True" for c in s.get("conditions", []))
    if s.get("phase") == "Running" and ready and s.get("podIP"):
        m = p["metadata"]
        print(m["name"], s["podIP"], m["uid"], p["spec"]["nodeName"])'
}
for _ in $(seq 180); do
    [[ $(pods | wc -l) == "$nodes" ]] && break
    sleep 1
done
[[ $(pods | wc -l) == "$nodes" ]] || { echo "pods of $ns not ready" >&2; exit 1; }
# Every pinger has seen every peer and probed it a few rounds.
sleep 30
pods >"/tmp/$ns.pods"
read -r lossy lossy_ip lossy_uid _ < <(awk '$4 == "node-1"' "/tmp/$ns.pods")
netns=kcp-${lossy_uid:0:8}

# Per prober: name, Warning Event writes (each Event object, counting the
# repeats folded into its series); with an address, only the Events whose
# note is about that ICMP target.
events() {
    kubectl get events.v1.events.k8s.io -n "$ns" -o json | python3 -c '
import json, sys
about = sys.argv[1] if len(sys.argv) > 1 else None
writes, objects = {}, {}
for e in json.load(sys.stdin)["items"]:
    if e.get("type") != "Warning":
        continue
    if about and not e.get("note", "").startswith(f"icmp {about}:"):
        continue
    pod = e["regarding"]["name"]
    writes[pod] = writes.get(pod, 0) + ((e.get("series") or {}).get("count") or 1)
    objects[pod] = objects.get(pod, 0) + 1
for pod in writes:
    print(pod, writes[pod], objects[pod])' "$@"
}

# Per prober: probes sent and lost, and rounds failed, on the links through
# the lossy pod (its own targets, and the other pods' probes of it).
probes() {
    while read -r name ip _ _; do
        curl -sf --max-time 5 "http://$ip:8080/metrics" | python3 -c '
import re, sys
me, lossy = sys.argv[1], sys.argv[2]
sent = lost = 0
for line in sys.stdin:
    m = re.match(r"combo_pinger_probes_total\{kind=\"icmp\",target=\"([^\"]+)\",result=\"([a-z_]+)\"\} (\S+)", line)
    if m and (me == lossy or m[1] == lossy):
        sent += float(m[3])
        lost += float(m[3]) if m[2] != "ok" else 0
print(sys.argv[3], int(sent), int(lost), end=" ")' "$ip" "$([[ $lossy_all == all ]] && echo "$ip" || echo "$lossy_ip")" "$name"
        # Failed rounds on those links, from the pinger's log ("round failed").
        log=$dir/pods/$ns/$name/pinger.log
        if [[ $name == "$lossy" || $lossy_all == all ]]; then
            grep -c 'round failed target=icmp ' "$log" || true
        else
            grep -c "round failed target=icmp $lossy_ip " "$log" || true
        fi
    done <"/tmp/$ns.pods"
}

echo "cluster: $nodes simulated nodes; Pinger defaults"
events >"/tmp/$ns.events0"
probes >"/tmp/$ns.probes0"
if [[ $lossy_all == all ]]; then
    echo "1 % random drop of echo requests out of every pinger pod's namespace for $loss_secs s"
    while read -r _ _ uid _; do
        lossy_netns+=("kcp-${uid:0:8}")
        ip netns exec "kcp-${uid:0:8}" nft -f - <<NFT
table inet $loss_table {
    chain output { type filter hook output priority 0; icmp type echo-request numgen random mod 100 < 1 drop; }
}
NFT
    done <"/tmp/$ns.pods"
else
    echo "1 % random drop of echo requests in and out of $lossy's namespace ($lossy_ip, node-1) for $loss_secs s"
    lossy_netns=("$netns")
    nft_in -f - <<NFT
table inet $loss_table {
    chain input { type filter hook input priority 0; icmp type echo-request numgen random mod 100 < 1 drop; }
    chain output { type filter hook output priority 0; icmp type echo-request numgen random mod 100 < 1 drop; }
}
NFT
fi
sleep "$loss_secs"
unloss
events >"/tmp/$ns.events1"
probes >"/tmp/$ns.probes1"
python3 - "/tmp/$ns" "$loss_secs" "$([[ $lossy_all == all ]] || echo "$lossy")" <<'PY'
import sys
base, secs, lossy = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def table(path, cols):
    out = {}
    for line in open(path):
        f = line.split()
        out[f[0]] = [int(x) for x in f[1:cols + 1]]
    return out
e0, e1 = table(base + ".events0", 1), table(base + ".events1", 1)
p0, p1 = table(base + ".probes0", 3), table(base + ".probes1", 3)
print(f"{'prober':<18} {'lossy probes':>12} {'lost':>6} {'failed rounds':>13} {'Warnings':>9} {'per hour':>9}")
total_sent = total_lost = total_failed = total_events = 0
for pod in sorted(p1):
    sent, lost, failed = (a - b for a, b in zip(p1[pod], p0.get(pod, [0, 0, 0])))
    ev = e1.get(pod, [0])[0] - e0.get(pod, [0])[0]
    total_sent, total_lost, total_failed = total_sent + sent, total_lost + lost, total_failed + failed
    total_events += ev
    mark = " (the lossy pod)" if pod == lossy else ""
    print(f"{pod:<18} {sent:>12} {lost:>6} {failed:>13} {ev:>9} {ev * 3600 / secs:>9.1f}{mark}")
rounds = total_sent / 3                    # count: 3
target_hours = rounds * 5 / 3600           # one round per 5 s
p = total_lost / total_sent if total_sent else 0
print(f"lossy links: {rounds:.0f} rounds, {total_sent} probes, {total_lost} lost ({p:.2%}),"
      f" {total_failed} rounds failed, {target_hours:.2f} target-hours; {total_events} Warning Events")
links = 5000 * 20                          # probed links at 5,000 nodes, maxPeers 20
if total_events:
    rate = total_events / target_hours
    print(f"Events per lossy target-hour: {rate:.3g}; every link at 1 % loss,"
          f" 5,000 nodes x maxPeers 20: {rate * links:,.0f} Events an hour")
else:
    bound = 3 / target_hours               # 95 % upper bound of a Poisson rate seen 0 times
    print(f"Events per lossy target-hour: 0 measured, below {bound:.3g} at 95 % confidence;"
          f" every link at 1 % loss, 5,000 nodes x maxPeers 20: below {bound * links:,.0f} an hour")
for loss in (p, 0.01):
    q = 3 * loss**2 * (1 - loss) + loss**3  # a round fails: 2 or 3 of 3 lost (maxLossPercent 50)
    per_hour = 720 * q * q                  # confirm: 2 failed rounds in a row
    print(f"model at {loss:.2%} loss: a round fails with p={q:.2g}, a Warning {per_hour:.2g} an hour per"
          f" target, {per_hour * links:.2g} an hour at 5,000 nodes")
PY

echo
echo "$lossy ($lossy_ip) cut off (all but loopback dropped both ways) for $dead_secs s"
events "$lossy_ip" >"/tmp/$ns.dead0"
nft_in -f - <<NFT
table inet $dead_table {
    chain input { type filter hook input priority 0; policy drop; iifname "lo" accept; }
    chain output { type filter hook output priority 0; policy drop; oifname "lo" accept; }
}
NFT
sleep "$dead_secs"
events "$lossy_ip" >"/tmp/$ns.dead1"
nft_in delete table inet "$dead_table"
python3 - "/tmp/$ns" "$lossy" "$dead_secs" <<'PY'
import sys
base, lossy, secs = sys.argv[1], sys.argv[2], int(sys.argv[3])
def table(path):
    return {f[0]: (int(f[1]), int(f[2])) for f in (l.split() for l in open(path))}
before, after = table(base + ".dead0"), table(base + ".dead1")
probers = [l.split()[0] for l in open(base + ".pods") if l.split()[0] != lossy]
print(f"{'prober':<18} {'Event objects':>13} {'writes':>7}")
for pod in probers:
    objects = after.get(pod, (0, 0))[1] - before.get(pod, (0, 0))[1]
    writes = after.get(pod, (0, 0))[0] - before.get(pod, (0, 0))[0]
    print(f"{pod:<18} {objects:>13} {writes:>7}")
print(f"(a write is the Event's creation or a repeat folded into its series; {secs} s dead;"
      f" the cut pod's own Events cannot reach the API server)")
PY
rm -f "/tmp/$ns".*
