#!/usr/bin/env bash
# One combo-pinger among N simulated peers, then tests/bench/pinger-scale.sh
# on it: CPU, RSS, /metrics size and series, peer-watch bytes, failed rounds
# and Events under 1 % loss, Events for a silenced peer, cluster-wide totals.
# Then the cost of a rolling update: REPLACE peers (default 200) replaced one
# by one, with the peers from the operator's lists (maxPeers 20) and with the
# pinger following every pod (maxPeers 0), in the same run.
#
#   tests/bench/pinger-peers.sh N [SECONDS]     (root; PINGER_BIN=... and
#                                                 OPERATOR_BIN=... to measure
#                                                 other builds)
#
# Runs in a private network and mount namespace of its own: a test cluster
# with one simulated node (tests/e2e/cluster.sh up DIR --nodes 1), N Pod objects
# labelled as Debugger `bench`'s pods, bound to a Node no kubelet runs,
# their status set to Running and Ready with addresses 10.100.x.y, which
# are made local on that namespace's loopback. The pinger runs as pod
# peer-1 with the Pinger defaults (metrics on, timeoutMs 200), as a process
# of this machine, and so does the operator (combo-operator), which writes
# the peer lists of Debugger `bench` (its DaemonSet selects no node). Every probe stays inside the namespace; leaving it
# removes the cluster, the routes and the processes.
set -euo pipefail
n=${1:?number of peers} secs=${2:-60}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bin=${PINGER_BIN:-$repo/target/release/combo-pinger}
operator=${OPERATOR_BIN:-$repo/target/release/combo-operator}
replace=${REPLACE:-200}
for b in "$bin" "$operator"; do
    [[ -x $b ]] || { echo "build it first: cargo build --release -p combo-pinger -p combo-operator" >&2; exit 2; }
done
if ((n < 2 || n > 60000)); then echo "N is 2..60000" >&2; exit 2; fi

if [[ -z ${KC_PEERS_INSIDE:-} ]]; then
    exec env KC_PEERS_INSIDE=1 unshare --net --mount --propagation private -- bash "$0" "$@"
fi
mkdir -p /run/netns && mount -t tmpfs tmpfs /run/netns
mount -t sysfs sysfs /sys
ip link set lo up
ip route add local 10.100.0.0/16 dev lo

dir=$(mktemp -d /tmp/kc-peers.XXXXXX)
pinger_pid='' operator_pid='' proxy_pid=''
cleanup() {
    for p in $pinger_pid $operator_pid $proxy_pid; do kill "$p" 2>/dev/null || true; done
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
---
apiVersion: kubecombo.io/v1
kind: Debugger
metadata:
  name: bench
spec:
  workloadType: daemonset
  enablePinger: true
  pinger: bench
  enableConfigMap: false
  selector: {kubecombo.io/bench: no-such-node}
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
cat >"$dir/pods.py" <<'PY'
# Simulated peers through kubectl proxy: make NAME Running and Ready with
# address IP; replace pods one by one, each by a new name, at a pace.
import json, sys, time, urllib.request
from concurrent.futures import ThreadPoolExecutor
port, ns = sys.argv[2], sys.argv[3]
now = "2026-01-01T00:00:00Z"
def call(method, path, body=None, ctype="application/json"):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/api/v1/namespaces/{ns}/pods{path}",
        data=None if body is None else json.dumps(body).encode(), method=method,
        headers={"Content-Type": ctype})
    urllib.request.urlopen(req).read()
def addr(i):
    return f"10.100.{i // 250}.{i % 250 + 1}"
def pod(name):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "labels": {"kubecombo.io/debugger": "bench"}},
            "spec": {"nodeName": "ghost", "containers": [{"name": c, "image": "none"} for c in ("runner", "pinger")]}}
def running(name, ip):
    body = {"status": {
        "phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}],
        "conditions": [{"type": t, "status": "True", "lastTransitionTime": now}
                       for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")],
        "containerStatuses": [{"name": c, "ready": True, "restartCount": 0,
                               "image": "none", "imageID": "", "started": True,
                               "state": {"running": {"startedAt": now}}}
                              for c in ("runner", "pinger")]}}
    call("PATCH", f"/{name}/status", body, "application/merge-patch+json")
if sys.argv[1] == "ready":
    n = int(sys.argv[4])
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda i: running(f"peer-{i}", addr(i)), range(1, n + 1)))
elif sys.argv[1] == "replace":
    # replace FIRST COUNT PER_SECOND SUFFIX: peer-FIRST.. (old name from
    # the last suffix) each deleted and created again as a new pod.
    first, count, rate, old, new = int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6]), sys.argv[7], sys.argv[8]
    for i in range(first, first + count):
        t = time.monotonic()
        call("DELETE", f"/peer-{i}{old}", {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0})
        call("POST", "", pod(f"peer-{i}{new}"))
        running(f"peer-{i}{new}", addr(i))
        time.sleep(max(0.0, 1 / rate - (time.monotonic() - t)))
PY
python3 "$dir/pods.py" ready "$port" "$ns" "$n"

RUST_LOG=warn KUBECONFIG=$dir/kubeconfig "$operator" --metrics-addr 127.0.0.1:18081 \
    --namespace "$ns" >"$dir/operator.log" 2>&1 &
operator_pid=$!
written() { curl -sf http://127.0.0.1:18081/metrics | awk '/^combo_operator_peer_list_writes_total/ {print $2}'; }
# Every pod's list written: the writes stop moving.
last=-1
for _ in $(seq 600); do
    w=$(written || echo 0)
    [[ $w == "$last" && $w -ge $n ]] && break
    last=$w
    sleep 1
done
echo "operator: $(written) lists written for $n pods"

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

# A rolling update: REPLACE peers replaced one by one, at a pace the
# operator's writes keep up with (each replacement rewrites about 2 ×
# maxPeers lists; the operator writes at most 200 a second).
received() { "$repo/tests/bench/tcp-received.sh" "$pinger_pid"; }
# Until neither the operator's writes nor the pinger's received bytes have
# moved for 3 s.
settle() {
    local last='' now quiet=0
    for _ in $(seq 600); do
        now="$(written) $(received)"
        if [[ $now == "$last" ]]; then quiet=$((quiet + 1)); else quiet=0; fi
        ((quiet >= 3)) && return
        last=$now
        sleep 1
    done
}
((replace > n - 1)) && replace=$((n - 1))
# What one list change sends the pinger: its own pod's metadata (the
# pinger watches its own pod for metadata only).
pod_bytes=$(curl -sf -H 'Accept: application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1' \
    "http://127.0.0.1:$port/api/v1/namespaces/$ns/pods/peer-1" | wc -c)
w0=$(written) r0=$(received)
python3 "$dir/pods.py" replace "$port" "$ns" 2 "$replace" 4 "" -r1
settle
lw=$(($(written) - w0)) lr=$(($(received) - r0))
kubectl patch pinger -n "$ns" bench --type merge -p '{"spec":{"maxPeers":0}}' >/dev/null
for _ in $(seq 120); do
    t=$(curl -sf http://127.0.0.1:18080/metrics | grep -c '^combo_pinger_target_up{' || true)
    ((t >= n - 1)) && break
    sleep 1
done
settle
r1=$(received)
python3 "$dir/pods.py" replace "$port" "$ns" 2 "$replace" 4 -r1 -r2
settle
pr=$(($(received) - r1))
python3 - "$n" "$replace" "$lw" "$lr" "$pr" "$pod_bytes" "${NODES:-5000}" <<'PY'
import sys
n, replaced, writes, list_bytes, pods_bytes, pod_bytes, nodes = map(int, sys.argv[1:])
w = writes / replaced
print(f"rolling update of {replaced} of {n} peers, one by one:")
print(f"  lists (maxPeers 20): {writes} lists written ({w:.1f} per replaced pod), "
      f"{list_bytes:,} bytes received by this pinger, {pod_bytes:,} bytes of pod metadata a list change")
print(f"  pods (maxPeers 0)  : {pods_bytes:,} bytes received by this pinger "
      f"({pods_bytes / replaced:,.0f} per replaced pod)")
# A full rolling update of every pod of a cluster of `nodes` nodes. With
# lists each write is one event of one pod's metadata (about pod_bytes) to
# one pinger; without them each replaced pod reaches every pinger.
lists_total = nodes * w * pod_bytes
pods_total = nodes * nodes * pods_bytes / replaced
print(f"  a full rolling update at {nodes} nodes, all pingers together: "
      f"lists {lists_total / 1e9:,.2f} GB ({w * pod_bytes / 1e3:,.0f} kB a pinger), "
      f"pods {pods_total / 1e9:,.2f} GB ({nodes * pods_bytes / replaced / 1e3:,.0f} kB a pinger): "
      f"{pods_total / max(lists_total, 1):,.1f}x less with lists")
PY
