#!/usr/bin/env bash
# The floor under the operator's create rate (measures; asserts nothing):
# the requests an operator cannot avoid for N new Debuggers, sent with no
# operator running, against N DaemonSets applied directly, in one run.
#
#   COMBO_E2E_DIR=DIR tests/bench/operator-floor.sh [N]
#
# With the operator scaled to 0, kubectl applies N Debuggers while curl, 32
# requests at a time, applies each one's summary ConfigMap and DaemonSet
# without waiting for the Debugger (an operator has to wait: it needs the
# Debugger's uid for the ownerReference). The DaemonSets all exist when both
# are done. Then curl applies each status and creates each WorkloadCreated
# Event. No workload RBAC is written. Prints both times and the ratio of the
# rates: no operator can do better than that ratio on this machine.
set -euo pipefail
dir=${COMBO_E2E_DIR:?set COMBO_E2E_DIR to the cluster directory}
n=${1:-200}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export KUBECONFIG=$dir/kubeconfig
api=$(kubectl config view --minify -o jsonpath='{.clusters[0].cluster.server}')
token=$(cat "$dir/admin.token")
now() { date +%s.%N; }
tmp=$(mktemp -d)
suffix=$(printf '%x' $(( $(date +%s%N) & 0xffffff )))
ns_floor=bench-floor-$suffix
ns_direct=bench-direct-$suffix
cleanup() {
    kubectl delete ns "$ns_floor" "$ns_direct" --wait=false >/dev/null 2>&1 || true
    kubectl -n kube-combo-system scale deployment/combo-operator --replicas 1 >/dev/null 2>&1 || true
    rm -rf "$tmp"
}
trap cleanup EXIT

kubectl apply -k "$repo/config/default" >/dev/null 2>&1
kubectl -n kube-combo-system scale deployment/combo-operator --replicas 0 >/dev/null
while kubectl -n kube-combo-system get pods -l app.kubernetes.io/component=operator --no-headers 2>/dev/null | grep -q .; do
    sleep 1
done
kubectl create ns "$ns_floor" >/dev/null
kubectl create ns "$ns_direct" >/dev/null

# One curl config block: method, content type, URL, JSON body.
request() {
    printf 'url = "%s"\nrequest = "%s"\nheader = "Authorization: Bearer %s"\n' "$api$3" "$1" "$token"
    printf 'header = "Content-Type: %s"\nheader = "Expect:"\ninsecure\noutput = "/dev/null"\nfail\n' "$2"
    printf 'data = "%s"\n' "${4//\"/\\\"}"
}
apply_patch() { request PATCH application/apply-patch+yaml "$1?fieldManager=combo-operator&force=true" "$2"; }
labels() { printf '{"app.kubernetes.io/name":"kube-combo","app.kubernetes.io/instance":"%s","kubecombo.io/debugger":"%s"}' "$1" "$1"; }
daemonset() { # name -> the DaemonSet the operator renders for a plain Debugger
    local l; l=$(labels "$1")
    printf '{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"%s","labels":%s,"annotations":{"kubecombo.io/spec-hash":"0"}},' "$1" "$l"
    printf '"spec":{"selector":{"matchLabels":%s},"updateStrategy":{"type":"RollingUpdate","rollingUpdate":{"maxUnavailable":"100%%"}},' "$l"
    printf '"template":{"metadata":{"labels":%s},"spec":{"serviceAccountName":"kube-combo-workload","nodeSelector":{"bench":"none"},' "$l"
    printf '"containers":[{"name":"runner","image":"ghcr.io/kube-combo/combo-runner:v0.1.0","env":[{"name":"DEBUGGER_NAME","value":"%s"},' "$1"
    printf '{"name":"NODE_NAME","valueFrom":{"fieldRef":{"fieldPath":"spec.nodeName"}}}],'
    printf '"resources":{"requests":{"cpu":"100m","memory":"128Mi"},"limits":{"cpu":"100m","memory":"128Mi"}}}]}}}}'
}
first=true
for i in $(seq 1 "$n"); do
    d=d$(printf %04d "$i")
    printf -- '---\napiVersion: kubecombo.io/v1\nkind: Debugger\nmetadata: {name: %s}\nspec: {selector: {bench: none}}\n' "$d" >>"$tmp/debuggers.yaml"
    printf -- '---\n%s\n' "$(daemonset "$d")" >>"$tmp/daemonsets.yaml"
    $first || { echo next >>"$tmp/workloads.cfg"; echo next >>"$tmp/status.cfg"; }
    first=false
    {
        apply_patch "/apis/apps/v1/namespaces/$ns_floor/daemonsets/$d" "$(daemonset "$d")"
        echo next
        apply_patch "/api/v1/namespaces/$ns_floor/configmaps/$d-summary" \
            "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"$d-summary\",\"labels\":$(labels "$d")}}"
    } >>"$tmp/workloads.cfg"
    {
        apply_patch "/apis/kubecombo.io/v1/namespaces/$ns_floor/debuggers/$d/status" \
            '{"apiVersion":"kubecombo.io/v1","kind":"Debugger","status":{"observedGeneration":1,"desiredPods":0,"readyPods":0,"conditions":[{"type":"Ready","status":"True","reason":"WorkloadReady","message":"0/0 pods ready","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}'
        echo next
        request POST application/json "/api/v1/namespaces/$ns_floor/events" \
            "{\"metadata\":{\"generateName\":\"$d.\"},\"involvedObject\":{\"apiVersion\":\"kubecombo.io/v1\",\"kind\":\"Debugger\",\"name\":\"$d\",\"namespace\":\"$ns_floor\"},\"reason\":\"WorkloadCreated\",\"message\":\"created DaemonSet $d\",\"type\":\"Normal\",\"source\":{\"component\":\"combo-operator\"}}"
    } >>"$tmp/status.cfg"
done

t0=$(now)
kubectl apply -n "$ns_direct" -f "$tmp/daemonsets.yaml" >/dev/null
t1=$(now)
kubectl apply -n "$ns_floor" -f "$tmp/debuggers.yaml" >/dev/null &
applying=$!
curl -sS --no-progress-meter -Z --parallel-max 32 -K "$tmp/workloads.cfg"
wait "$applying"
t2=$(now)
curl -sS --no-progress-meter -Z --parallel-max 32 -K "$tmp/status.cfg"
t3=$(now)
made=$(kubectl get ds -n "$ns_floor" --no-headers | wc -l)
awk -v n="$n" -v made="$made" -v d="$(echo "$t1 - $t0" | bc)" -v f="$(echo "$t2 - $t1" | bc)" -v s="$(echo "$t3 - $t1" | bc)" 'BEGIN {
    printf "floor %d: direct DaemonSets %.2fs, Debuggers + their ConfigMaps and DaemonSets with no operator %.2fs (%d DaemonSets), ratio %.2f; with statuses and Events %.2fs\n",
        n, d, f, made, d/f, s }'
