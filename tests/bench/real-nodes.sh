#!/usr/bin/env bash
# Real-node benchmark (measures; asserts nothing). Starts and stops its own
# cluster of real nodes (tests/e2e/cluster.sh up DIR --nodes 0 --real N), so
# no other cluster may be up on this machine:
#
#   tests/bench/real-nodes.sh [N]        N real nodes (default 2)
#
# Prints, in seconds:
#   1. image build with everything cached (no change), then after a one-line
#      change of a runner source file (the change is reverted afterwards);
#   2. cluster up with cached builds: from `cluster.sh up` to the first real
#      node Ready, and to all N Ready (images pushed, kubelets registered);
#   3. from `kubectl apply` of a Debugger (daemonset, with pinger) to all its
#      runner containers Running on the N nodes, the operator already
#      installed (its pods pull the images from the local registry).
# KUBE_COMBO_IMAGE_PROFILE picks the images' cargo profile (default release).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$repo"
# The test cluster's network plan: $registry, the local registry.
# shellcheck source=tests/e2e/netplan.sh
. tests/e2e/netplan.sh
n=${1:-2}
dir=$(mktemp -d /tmp/kube-combo-bench.XXXXXX)
cleanup() {
    tests/e2e/cluster.sh down "$dir" >/dev/null 2>&1 && rm -rf --one-file-system "$dir" "$dir.up.log"
    git -C "$repo" checkout -q -- runner/src/main.rs
}
trap cleanup EXIT
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
quiet() { grep -v '^Warning' || true; }

tests/e2e/images.sh build >/dev/null # warm: what the first build costs is not measured here
t=$(now)
tests/e2e/images.sh build >/dev/null
echo "image build, nothing changed:             $(since "$t") s"
echo "// bench: one-line change" >>runner/src/main.rs
t=$(now)
tests/e2e/images.sh build >/dev/null
echo "image build after a one-line runner change: $(since "$t") s"
git checkout -q -- runner/src/main.rs
tests/e2e/images.sh build >/dev/null

t=$(now)
tests/e2e/cluster.sh up "$dir" --nodes 0 --real "$n" >"$dir.up.log" 2>&1 &
up=$!
export KUBECONFIG=$dir/kubeconfig
first=""
while kill -0 "$up" 2>/dev/null || [[ -z $first ]]; do
    ready=$(kubectl get nodes --no-headers 2>/dev/null | grep -c ' Ready' || true)
    if [[ -z $first ]] && ((ready >= 1)); then first=$(since "$t"); fi
    kill -0 "$up" 2>/dev/null || break
    sleep 0.2
done
wait "$up" || { cat "$dir.up.log" >&2; exit 1; }
echo "cluster up, cached builds: first real node Ready after ${first:-?} s, all $n Ready after $(since "$t") s"

mkdir -p "$dir/overlay"
{
    echo "resources:"
    echo "  - $(realpath --relative-to="$dir/overlay" "$repo/config/default")"
    echo "images:"
    for image in operator runner pinger; do
        printf '  - name: kube-combo/%s\n    newName: %s/kube-combo/%s\n    newTag: dev\n' "$image" "$registry" "$image"
    done
} >"$dir/overlay/kustomization.yaml"
kubectl apply -k "$dir/overlay" 2>&1 | quiet >/dev/null
kubectl -n kube-combo-system rollout status deployment/combo-operator --timeout=300s 2>&1 | quiet >/dev/null
kubectl apply -n default -f config/samples/pinger.yaml 2>&1 | quiet >/dev/null
t=$(now)
kubectl apply -n default -f config/samples/debugger_daemonset_mesh.yaml 2>&1 | quiet >/dev/null
while :; do
    running=$(kubectl get pods -n default -l kubecombo.io/debugger=node-check \
        -o jsonpath='{range .items[*]}{.status.containerStatuses[?(@.name=="runner")].state.running.startedAt}{"\n"}{end}' \
        2>/dev/null | grep -c . || true)
    ((running >= n)) && break
    sleep 0.2
done
echo "kubectl apply of a Debugger -> runner containers Running on all $n nodes: $(since "$t") s"
