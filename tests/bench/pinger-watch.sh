#!/usr/bin/env bash
# What one pinger receives to follow its peers while every peer is updated
# once: the whole-Pod watch the pinger used before, against the table-row
# watch it uses now (Accept: as=Table, includeObject=None). Prints measured
# bytes; not a timed test.
#
#   tests/bench/pinger-watch.sh NAMESPACE SELECTOR
#
# Needs kubectl pointed at a cluster that has pods matching SELECTOR in
# NAMESPACE (for example the pods of one Debugger). Every pod gets one
# annotation change, as a status update or a relabel would give.
set -euo pipefail
ns=${1:?namespace} selector=${2:?label selector}
work=$(mktemp -d)
port=$((20000 + RANDOM % 10000))
kubectl proxy --port="$port" >"$work/proxy.log" 2>&1 &
proxy=$!
pids=("$proxy")
cleanup() { kill "${pids[@]}" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
for _ in $(seq 50); do
    curl -sf "http://127.0.0.1:$port/version" >/dev/null && break
    sleep 0.2
done
base="http://127.0.0.1:$port/api/v1/namespaces/$ns/pods?labelSelector=$(printf %s "$selector" | sed 's|/|%2F|g; s|=|%3D|g')"
version=$(curl -sf "$base&limit=1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["metadata"]["resourceVersion"])')
pods=$(kubectl get pods -n "$ns" -l "$selector" --no-headers | wc -l)
table='Accept: application/json;as=Table;v=v1;g=meta.k8s.io'
curl -sN "$base&watch=1&resourceVersion=$version" >"$work/pods.json" &
pids+=($!)
curl -sN -H "$table" "$base&includeObject=None&watch=1&resourceVersion=$version" >"$work/table.json" &
pids+=($!)
sleep 1
kubectl annotate pods -n "$ns" -l "$selector" --overwrite "kubecombo.io/bench-touch=$(date +%s%N)" >/dev/null
for _ in $(seq 600); do
    a=$(wc -l <"$work/pods.json") b=$(wc -l <"$work/table.json")
    [[ $a -ge $pods && $b -ge $pods ]] && break
    sleep 0.2
done
full=$(wc -c <"$work/pods.json") rows=$(wc -c <"$work/table.json")
full_n=$(wc -l <"$work/pods.json") rows_n=$(wc -l <"$work/table.json")
echo "peers updated once: $pods (API server $(kubectl version -o json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["serverVersion"]["gitVersion"])'))"
printf 'whole Pods  : %9d bytes in %d events (%d bytes each)\n' "$full" "$full_n" $((full / (full_n > 0 ? full_n : 1)))
printf 'table rows  : %9d bytes in %d events (%d bytes each, the first carries the column definitions)\n' "$rows" "$rows_n" $((rows / (rows_n > 0 ? rows_n : 1)))
python3 - "$full" "$rows" "$pods" <<'PY'
import sys
full, rows, n = map(int, sys.argv[1:])
print(f"ratio       : {rows / full:.3f} (table rows / whole Pods)")
print(f"cluster-wide, {n} pingers each seeing all {n} peers updated once: "
      f"{full * n / 1e6:.1f} MB before, {rows * n / 1e6:.1f} MB now")
PY
