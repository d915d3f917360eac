#!/usr/bin/env bash
# The main job on a fresh Debian machine (root): build kube-combo, start a
# local Kubernetes control plane with three simulated nodes
# (tests/e2e/cluster.sh), install the operator with `kubectl apply -k
# config/default`, apply the sample Pinger and Debuggers, trigger an
# inspection run and print what it found. The cluster keeps running; stop it
# with `tests/e2e/cluster.sh down "$KUBE_COMBO_QUICKSTART_DIR"`.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
dir=${KUBE_COMBO_QUICKSTART_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kube-combo/quickstart}

bash tests/deps.sh
tests/e2e/cluster.sh down "$dir" >/dev/null 2>&1 || true
tests/e2e/cluster.sh up "$dir" --nodes 3
export KUBECONFIG=$dir/kubeconfig
export PATH=$repo/target/release:$PATH

echo "==> installing kube-combo (kubectl apply -k config/default)"
kubectl apply -k config/default 2>&1 | grep -v '^Warning'
kubectl -n kube-combo-system rollout status deployment/combo-operator --timeout=120s 2>&1 | grep -v '^Warning'

echo "==> applying the samples (config/samples)"
kubectl apply -f config/samples/ 2>&1 | grep -v '^Warning'
sleep 5
kubectl combo run node-check -n default 2>&1 | grep -v '^Warning'
run_at=$(kubectl get dbg node-check -n default -o jsonpath='{.spec.runAt}')

# Wait for this run, not one an earlier quickstart left in the status.
echo "==> waiting for the 3 nodes to finish the run of $run_at"
finished=false
for _ in $(seq 1 90); do
    got=$(kubectl get dbg node-check -n default \
        -o jsonpath='{.status.lastRunAt} {.status.completedNodes}' 2>/dev/null || true)
    read -r last done_nodes <<<"$got"
    if [[ ${last:-} == "$run_at" && ${done_nodes:-0} -ge 3 ]]; then
        finished=true
        break
    fi
    sleep 2
done
$finished || echo "the run of $run_at has not finished on all 3 nodes after 3 minutes; showing what there is" >&2
echo "==> Debuggers"
kubectl get dbg -A 2>&1 | grep -v '^Warning'
echo "==> failed items of the run (kubectl combo summary node-check; --all lists every item)"
kubectl combo summary node-check -n default 2>&1 | grep -v '^Warning'
echo "==> InspectionFailed Events of the runners"
kubectl get events -n default --field-selector reason=InspectionFailed 2>&1 | grep -v '^Warning'
echo "==> the pinger's metrics of one pod (combo_pinger_target_up), through the API server's proxy"
pod=$(kubectl get pods -n default -l kubecombo.io/debugger=node-check -o jsonpath='{.items[0].metadata.name}')
kubectl get --raw "/api/v1/namespaces/default/pods/$pod:8080/proxy/metrics" | grep '^combo_pinger_target_up' ||
    echo "no pinger metrics from pod $pod" >&2
echo
echo "cluster state in $dir; stop it with: tests/e2e/cluster.sh down $dir"
echo "export KUBECONFIG=$dir/kubeconfig"
