#!/usr/bin/env bash
# One combo-pinger among N simulated peers, then tests/bench/pinger-scale.sh
# on it: CPU, RSS, /metrics size and series, peer-watch bytes, failed rounds
# and Events under 1 % loss, Events for a silenced peer, cluster-wide totals.
#
#   tests/bench/pinger-peers.sh N [SECONDS]     (root; PINGER_BIN=... to
#                                                 measure another build)
#
# Runs in a private network and mount namespace of its own: a test cluster
# with one simulated node (tests/e2e/cluster.sh up DIR --nodes 1), N Pod objects
# labelled as Debugger `bench`'s pods, bound to a Node no kubelet runs,
# their status set to Running and Ready with addresses 10.100.x.y, which
# are made local on that namespace's loopback. The pinger runs as pod
# peer-1 with the Pinger defaults (metrics on, timeoutMs 200), as a process
# of this machine. Every probe stays inside the namespace; leaving it
# removes the cluster, the routes and the processes.
set -euo pipefail
n=${1:?number of peers} secs=${2:-60}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bin=${PINGER_BIN:-$repo/target/release/combo-pinger}
[[ -x $bin ]] || { echo "build it first: cargo build --release -p combo-pinger" >&2; exit 2; }
if ((n < 2 || n > 60000)); then echo "N is 2..60000" >&2; exit 2; fi

if [[ -z ${KC_PEERS_INSIDE:-} ]]; then
    exec env KC_PEERS_INSIDE=1 unshare --net --mount --propagation private -- bash "$0" "$@"
fi
mkdir -p /run/netns && mount -t tmpfs tmpfs /run/netns
mount -t sysfs sysfs /sys
ip link set lo up
ip route add local 10.100.0.0/16 dev lo

dir=$(mktemp -d /tmp/kc-peers.XXXXXX)
pinger_pid=
cleanup() {
    [[ -n $pinger_pid ]] && kill "$pinger_pid" 2>/dev/null
    "$repo/tests/e2e/cluster.sh" down "$dir" >/dev/null 2>&1 || true
    rm -rf "$dir"
}
trap cleanup EXIT
"$repo/tests/e2e/cluster.sh" up "$dir" --nodes 1 >"$dir.up.log" 2>&1 ||
    { cat "$dir.up.log" >&2; exit 1; }
rm -f "$dir.up.log"
export KUBECONFIG=$dir/kubeconfig
ns=bench
kubectl create namespace "$ns" >/dev/null
kubectl apply -f "$repo/config/crd" >/dev/null
kubectl wait --for condition=established crd/pingers.kubecombo.io >/dev/null
kubectl apply -n "$ns" -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Node
metadata:
  name: ghost
---
apiVersion: kubecombo.io/v1
kind: Pinger
metadata:
  name: bench
spec:
  enableMetrics: true
  metricsPort: 18080
  timeoutMs: 200
  peers: true
YAML

# The peers: created in one request each of 500, then their status set
# through the API (kubectl 1.20 cannot patch a status).
addr() { echo "10.100.$(($1 / 250)).$(($1 % 250 + 1))"; }
python3 - "$n" "$ns" > "$dir/pods.json" <<'PY'
import json, sys
n, ns = int(sys.argv[1]), sys.argv[2]
items = [{
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": f"peer-{i}", "namespace": ns,
                 "labels": {"kubecombo.io/debugger": "bench"}},
    "spec": {"nodeName": "ghost",
             "containers": [{"name": "runner", "image": "none"},
                            {"name": "pinger", "image": "none"}]},
} for i in range(1, n + 1)]
print(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
PY
kubectl create -f "$dir/pods.json" >/dev/null
port=$((20000 + RANDOM % 10000))
kubectl proxy --port="$port" >"$dir/proxy.log" 2>&1 &
proxy_pid=$!
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$port/api" >/dev/null && break; sleep 0.2; done
python3 - "$n" "$ns" "$port" <<'PY'
import json, sys, urllib.request
from concurrent.futures import ThreadPoolExecutor
n, ns, port = int(sys.argv[1]), sys.argv[2], sys.argv[3]
now = "2026-01-01T00:00:00Z"
def running(i):
    ip = f"10.100.{i // 250}.{i % 250 + 1}"
    body = {"status": {
        "phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}],
        "conditions": [{"type": t, "status": "True", "lastTransitionTime": now}
                       for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")],
        "containerStatuses": [{"name": c, "ready": True, "restartCount": 0,
                               "image": "none", "imageID": "", "started": True,
                               "state": {"running": {"startedAt": now}}}
                              for c in ("runner", "pinger")]}}
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/api/v1/namespaces/{ns}/pods/peer-{i}/status",
        data=json.dumps(body).encode(), method="PATCH",
        headers={"Content-Type": "application/merge-patch+json"})
    urllib.request.urlopen(req).read()
with ThreadPoolExecutor(8) as pool:
    list(pool.map(running, range(1, n + 1)))
PY
kill "$proxy_pid"

POD_NAME=peer-1 POD_NAMESPACE=$ns NODE_NAME=ghost POD_IP=$(addr 1) DEBUGGER_NAME=bench \
    PINGER_NAME=bench RUST_LOG=warn "$bin" >"$dir/pinger.log" 2>&1 &
pinger_pid=$!
for _ in $(seq 100); do
    targets=$(curl -sf http://127.0.0.1:18080/metrics | grep -c '^combo_pinger_target_up{' || true)
    ((targets > 0)) && break
    sleep 0.3
done
echo "peers: $n (Running and Ready), pinger: $bin"
PINGER_LOG=$dir/pinger.log "$repo/tests/bench/pinger-scale.sh" "$pinger_pid" 18080 "$ns" peer-1 "$secs"
