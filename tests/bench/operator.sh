#!/usr/bin/env bash
# Operator benchmark (measures; asserts nothing). Needs a running control
# plane (tests/e2e/cluster.sh up DIR) and the operator installed from
# config/default (this script applies it):
#
#   COMBO_E2E_DIR=DIR tests/bench/operator.sh [N] [M]
#
# Prints:
#   1. N Debuggers applied at once -> seconds until all N DaemonSets exist,
#      against the same N DaemonSets applied directly in the same run; the
#      ratio of the rates (target >= 0.8). "The same": the DaemonSet the
#      operator renders for such a Debugger (taken from the cluster, in a
#      namespace of its own that is gone before the timing starts), less
#      its ownerReference, once per name. Then, for the whole picture, the
#      seconds until every summary ConfigMap and every status is written
#      too (the operator writes those once workload writes pause).
#   2. the operator's RSS once M Debuggers exist (target <= 50 MiB).
#      M=0 skips 2 and 3.
#   3. API writes the operator sends in one minute of steady state, from its
#      combo_operator_api_writes_total counter, and, seen from the API
#      server, how many of the M DaemonSets got a new spec (generation) and
#      how many Debuggers a new resourceVersion (their status is written
#      only by the operator) in that minute (target 0). DaemonSet
#      resourceVersions are not counted: the DaemonSet controller writes
#      their status.
# The Debuggers select no node (nodeSelector bench=none), so no pod starts:
# this measures the operator, not the node simulator. Needs jq.
set -euo pipefail
dir=${COMBO_E2E_DIR:?set COMBO_E2E_DIR to the cluster directory}
n=${1:-200}
m=${2:-1000}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export KUBECONFIG=$dir/kubeconfig
if [[ $(cat "$dir/bin-dir" 2>/dev/null) != "$repo/target/release" ]]; then
    echo "operator.sh: $dir does not run the release build; start it with tests/e2e/cluster.sh up DIR (no --debug)" >&2
    exit 2
fi
k() { kubectl "$@" 2>&1 | grep -v '^Warning' || true; }
now() { date +%s.%N; }
tmp=$(mktemp -d)
suffix=$(printf '%x' $(( $(date +%s%N) & 0xffffff )))
ns_op=bench-op-$suffix
ns_direct=bench-direct-$suffix
cleanup() {
    kubectl delete ns "$ns_op" "$ns_direct" --wait=false >/dev/null 2>&1 || true
    rm -rf "$tmp"
}
trap cleanup EXIT

k apply -k "$repo/config/default" >/dev/null
kubectl -n kube-combo-system rollout status deployment/combo-operator --timeout=180s >/dev/null
kubectl create ns "$ns_op" >/dev/null
kubectl create ns "$ns_direct" >/dev/null

debuggers() { # count first
    for i in $(seq "$2" "$1"); do
        printf -- '---\napiVersion: kubecombo.io/v1\nkind: Debugger\nmetadata: {name: d%04d}\nspec: {selector: {bench: none}}\n' "$i"
    done
}
daemonsets() { # count
    local tpl=bench-tpl-$suffix
    kubectl create ns "$tpl" >/dev/null
    debuggers 0 0 | k apply -n "$tpl" -f - >/dev/null
    until kubectl get ds -n "$tpl" d0000 -o json >"$tmp/rendered.json" 2>/dev/null; do sleep 0.2; done
    kubectl delete ns "$tpl" --wait=true --timeout=120s >/dev/null
    jq 'del(.status, .metadata.ownerReferences, .metadata.managedFields, .metadata.uid,
            .metadata.resourceVersion, .metadata.creationTimestamp, .metadata.generation,
            .metadata.namespace, .metadata.annotations["deprecated.daemonset.template.generation"])' \
        "$tmp/rendered.json" >"$tmp/ds.json"
    for i in $(seq 1 "$1"); do
        printf -- '---\n'
        sed "s/d0000/d$(printf %04d "$i")/g" "$tmp/ds.json"
    done
}
count_ds() { kubectl get ds -n "$1" --no-headers 2>/dev/null | wc -l; }
wait_ds() { # ns count
    while (( $(count_ds "$1") < $2 )); do sleep 0.2; done
}

debuggers "$n" 1 > "$tmp/debuggers.yaml"
daemonsets "$n" > "$tmp/daemonsets.yaml"

t0=$(now); k apply -n "$ns_direct" -f "$tmp/daemonsets.yaml" >/dev/null; wait_ds "$ns_direct" "$n"; t1=$(now)
t2=$(now); k apply -n "$ns_op" -f "$tmp/debuggers.yaml" >/dev/null; wait_ds "$ns_op" "$n"; t3=$(now)
count_rest() { # summary ConfigMaps + Debuggers with a status
    kubectl get cm -n "$ns_op" -l app.kubernetes.io/name=kube-combo --no-headers 2>/dev/null | wc -l
    kubectl get dbg -n "$ns_op" -o jsonpath='{range .items[*]}{.status.observedGeneration}{"\n"}{end}' | grep -c . || true
}
while (( $(count_rest | paste -sd+ | bc) < 2 * n )); do sleep 0.2; done; t4=$(now)
awk -v n="$n" -v d="$(echo "$t1 - $t0" | bc)" -v o="$(echo "$t3 - $t2" | bc)" -v a="$(echo "$t4 - $t2" | bc)" 'BEGIN {
    printf "create %d: direct DaemonSets %.2fs (%.1f/s), via Debuggers %.2fs (%.1f/s), ratio %.2f (target >= 0.80); summary ConfigMaps and statuses too: %.2fs\n",
        n, d, n/d, o, n/o, d/o, a }'

(( m == 0 )) && exit 0
if (( m > n )); then
    debuggers "$m" $((n + 1)) > "$tmp/more.yaml"
    k apply -n "$ns_op" -f "$tmp/more.yaml" >/dev/null
fi
wait_ds "$ns_op" "$m"
sleep 10

operator_pid() {
    local p exe
    for p in /proc/[0-9]*; do
        exe=$(readlink "$p/exe" 2>/dev/null || true)
        [[ $exe == "$repo/target/release/combo-operator"* ]] && { echo "${p#/proc/}"; return; }
    done
}
pid=$(operator_pid)
if [[ -n $pid ]]; then
    rss_kb=$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status")
    awk -v r="$rss_kb" -v m="$m" 'BEGIN { printf "operator RSS with %d Debuggers: %.1f MiB (target <= 50)\n", m, r/1024 }'
else
    echo "operator RSS: process not found (is the operator run by the node simulator?)"
fi

pod=$(kubectl get pods -n kube-combo-system -l app.kubernetes.io/component=operator \
    --field-selector=status.phase=Running -o jsonpath='{.items[0].metadata.name}')
uid=$(kubectl get pod -n kube-combo-system "$pod" -o jsonpath='{.metadata.uid}')
writes() {
    ip netns exec "kcp-${uid:0:8}" curl -s 127.0.0.1:8080/metrics |
        awk '/^combo_operator_api_writes_total/ {s += $2} END {print s + 0}'
}
versions() {
    kubectl get ds -n "$ns_op" -o jsonpath='{range .items[*]}ds/{.metadata.name}={.metadata.generation}{"\n"}{end}'
    kubectl get dbg -n "$ns_op" -o jsonpath='{range .items[*]}dbg/{.metadata.name}={.metadata.resourceVersion}{"\n"}{end}'
}
w0=$(writes); versions > "$tmp/v0"
sleep 60
w1=$(writes); versions > "$tmp/v1"
ds_changed=$(diff "$tmp/v0" "$tmp/v1" | grep -c '^> ds/' || true)
dbg_changed=$(diff "$tmp/v0" "$tmp/v1" | grep -c '^> dbg/' || true)
echo "steady state, 60s with $m Debuggers: $((w1 - w0)) operator API writes; $ds_changed DaemonSet specs and $dbg_changed Debuggers changed (target 0)"
