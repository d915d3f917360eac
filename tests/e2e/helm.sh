#!/usr/bin/env bash
# The chart's lifecycle with Helm itself on a cluster of real nodes
# (docs/testing.md, "Helm"):
#
#   tests/e2e/helm.sh DIR     DIR: tests/e2e/cluster.sh up DIR --nodes 0 --real N
#
# With the helm of tests/deps.sh and the images the harness pushed to the
# cluster's registry (172.31.0.1:5000/kube-combo/*:dev):
#   helm lint --strict; helm template with a string for replicas fails naming it;
#   helm package (versions 0.1.0-ci.1 and 0.1.0-ci.2);
#   each right values file of the chart's ci/ installs an operator that
#     becomes Ready, with its values ("schema: installed M of M right ones");
#   helm install from the first package, with imagePullSecrets and the node
#     sample with its Pinger as the values debuggers and pingers (the
#     Debugger at priorityClassName system-node-critical, which its pods
#     carry): they run, and a run reaches every node's summary;
#   helm push of the second package to the registry (OCI, plain HTTP) and
#     helm upgrade from oci://: the operator's pod is replaced, every node
#     keeps its key in the summary and the Debugger stays Ready at every
#     500 ms poll, and a run under the new operator reaches every node;
#   Debuggers and Pingers deleted, then helm uninstall: nothing of the
#     release is left but what Helm keeps by policy (the CRDs of crds/ and
#     the namespace --create-namespace made), which it then deletes.
# Each step is a case of the suite report (area "helm"). Run it after the
# tests that install the operator otherwise: it removes such an install first.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
dir=$(cd "${1:?usage: helm.sh DIR}" && pwd)
export KUBECONFIG=$dir/kubeconfig
cache=${KUBE_COMBO_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kube-combo}
helm=${KUBE_COMBO_HELM:-$cache/helm/helm}
[[ -x $helm ]] || helm=$(command -v helm) || { echo "helm.sh: no helm (tests/deps.sh installs it)" >&2; exit 2; }
registry=172.31.0.1:5000 # netplan.sh
release=kube-combo
system=kube-combo-system
ns=combo-helm
debugger=node-check # config/samples/debugger_daemonset_mesh.yaml
report=${COMBO_SUITE_REPORT:-$repo/target/suite-report.tsv}
work=$(mktemp -d /tmp/kube-combo-helm.XXXXXX)
poller='' current='' done=0
mapfile -t nodes < <(seq 1 "$(cat "$dir/real-nodes")" | sed 's/^/real-/')
((${#nodes[@]})) || { echo "helm.sh: $dir has no real nodes" >&2; exit 2; }
images=(--set "image.operator.repository=$registry/kube-combo/operator,image.runner.repository=$registry/kube-combo/runner,image.pinger.repository=$registry/kube-combo/pinger" --set "image.operator.tag=dev,image.runner.tag=dev,image.pinger.tag=dev")
combo() { PATH=$(cat "$dir/bin-dir"):$PATH kubectl combo "$@"; }

log() { printf '[helm %(%T)T] %s\n' -1 "$*"; }
# One case of the suite report (tests/suite-report.sh): area, tried, handled, lost, case.
record() { mkdir -p "$(dirname "$report")" && printf 'helm\t1\t%s\t0\t%s\n' "$1" "$2" >>"$report"; }
begin() { current=$1; log "$1"; }
passed() { record 1 "$current"; log "ok: $current"; current=''; }
fail() {
    echo "helm.sh: FAIL: ${current:+$current: }$*" >&2
    [[ -n $current ]] && record 0 "$current"
    current=''
    exit 1
}
# shellcheck source=tests/e2e/debugger-checks.sh
. "$here/debugger-checks.sh"

# What of the release is in its namespace: everything but the namespace's
# own ServiceAccount and token and the pull secret the test made.
release_left() {
    kubectl get deployments,replicasets,pods,services,serviceaccounts,roles,rolebindings,secrets -n "$system" -o name |
        grep -v -e '^serviceaccount/default$' -e '^secret/default-token-' -e '^secret/regcred$' || true
}

# Debuggers and Pingers first, while an operator runs to take its marks off
# the nodes, then whatever installed it: this release, or the manifest of
# the checkout (the other tests' kustomize install has its objects' names).
remove_install() {
    if kubectl get crd debuggers.kubecombo.io >/dev/null 2>&1; then
        kubectl delete debuggers,pingers --all -A --wait=false >/dev/null
        # shellcheck disable=SC2016 # expanded by the inner bash
        wait_until 180 "every Debugger and Pinger deleted" \
            bash -c '[[ -z $(kubectl get debuggers,pingers -A -o name) ]]'
    fi
    if "$helm" status "$release" -n "$system" >/dev/null 2>&1; then
        "$helm" uninstall "$release" -n "$system" --wait --timeout 180s >/dev/null
    fi
    kubectl delete -f "$repo/deploy/kube-combo.yaml" --ignore-not-found --wait=true --timeout=180s >/dev/null
    kubectl delete namespace "$ns" "$system" --ignore-not-found --timeout=180s >/dev/null
}

# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
    [[ -n $poller ]] && kill "$poller" 2>/dev/null
    if ((!done)); then
        log "cleaning up after a failure"
        current='' remove_install || true
    fi
    rm -rf "$work"
    return 0
}
trap cleanup EXIT

# uid and image of each operator pod not being deleted.
operator_pods() {
    kubectl get pods -n "$system" -l app.kubernetes.io/component=operator -o json | jq -r '.items[]
        | select(.metadata.deletionTimestamp == null) | [.metadata.uid, .metadata.labels["app.kubernetes.io/version"]] | @tsv'
}

operator_at() { # app version
    kubectl -n "$system" rollout status deployment/combo-operator --timeout=10s >/dev/null &&
        [[ $(operator_pods | cut -f2 | sort -u) == "$1" ]]
}

# Every real node runs one Ready pod of the Debugger.
workload_ready() {
    local pods
    pods=$(kubectl get pods -n "$ns" -l "kubecombo.io/debugger=$debugger" -o json | jq -r '.items[]
        | select(.metadata.deletionTimestamp == null)
        | [.spec.nodeName, ([.status.conditions[]? | select(.type == "Ready") | .status] | first // "False")] | @tsv')
    [[ $(wc -l <<<"$pods") == "${#nodes[@]}" ]] && ! grep -q 'False$' <<<"$pods"
}

# Asks for a run and waits until every node's summary has it and the Debugger is Ready.
run_reaches_every_node() {
    combo run "$debugger" -n "$ns" >/dev/null
    local run
    run=$(kubectl get debugger -n "$ns" "$debugger" -o jsonpath='{.metadata.annotations.kubecombo\.io/run-now}')
    wait_until 300 "every node's summary of run $run" summary_has_every_node "$run"
    wait_until 60 "Debugger Ready" debugger_ready
}

check_chart() {
    begin "helm lint --strict"
    "$helm" lint --strict "$repo/deploy/helm/kube-combo" >"$work/lint" 2>&1 || fail "$(cat "$work/lint")"
    passed
    begin "helm template refuses a string for replicas, naming it"
    if "$helm" template "$release" "$repo/deploy/helm/kube-combo" --set-string replicas=two >/dev/null 2>"$work/bad"; then
        fail "rendered with replicas=two"
    fi
    grep -q '/replicas' "$work/bad" || fail "the error does not name replicas: $(cat "$work/bad")"
    passed
    begin "helm package"
    local v
    for v in 0.1.0-ci.1 0.1.0-ci.2; do
        "$helm" package "$repo/deploy/helm/kube-combo" --version "$v" --app-version "$v" -d "$work" >/dev/null ||
            fail "helm package --version $v"
        [[ -f $work/kube-combo-$v.tgz ]] || fail "no kube-combo-$v.tgz"
    done
    passed
}

# Each right values file of the chart's ci/ (operator/tests/chart/ renders
# them and refuses the wrong values it generates) installs an operator that
# becomes Ready, watching a namespace of its own; the values reach it.
install_right_values() {
    begin "schema: each right values file of ci/ installs and becomes Ready"
    local f i=0 n ok=0 files=("$repo"/deploy/helm/kube-combo/ci/*-values.yaml)
    for f in "${files[@]}"; do
        i=$((i + 1)) n=combo-schema-$i
        "$helm" install "$n" "$repo/deploy/helm/kube-combo" -n "$n" --create-namespace -f "$f" "${images[@]}" \
            --set watchNamespace="$n" --wait --timeout 180s >"$work/schema-$i" 2>&1 ||
            fail "helm install -f $(basename "$f"): $(cat "$work/schema-$i")"
        kubectl wait -n "$n" --for=condition=Available deployment --all --timeout=120s >/dev/null ||
            fail "$(basename "$f"): the operator is not Available: $(kubectl get pods -n "$n" -o wide)"
        kubectl wait -n "$n" --for=condition=Ready pod -l app.kubernetes.io/component=operator --timeout=120s >/dev/null ||
            fail "$(basename "$f"): the operator's pod is not Ready: $(kubectl get pods -n "$n" -o wide)"
        if [[ $(basename "$f") == full-values.yaml ]]; then
            local d
            d=$(kubectl get deployment -n "$n" combo-ci -o json)
            jq -e '.spec.strategy.rollingUpdate.maxUnavailable == "25%"
                and (.spec.template.spec.containers[0].env | any(.name == "RUST_LOG" and .value == "debug"))
                and (.spec.template.spec.containers[0].args | index("--leader-elect-lease=combo-ci"))
                and (.spec.template.spec.tolerations | length == 2)' <<<"$d" >/dev/null ||
                fail "full-values.yaml: the Deployment lacks a value: $(jq -c '.spec.strategy, .spec.template.spec.containers[0].args' <<<"$d")"
            [[ $(kubectl get serviceaccount -n "$n" combo-ci.sa -o jsonpath='{.metadata.labels.team}') == infra ]] ||
                fail "full-values.yaml: the ServiceAccount has no label team=infra"
            wait_until 60 "the Lease combo-ci of full-values.yaml's extraArgs" kubectl get lease -n "$n" combo-ci
        fi
        "$helm" uninstall "$n" -n "$n" --wait --timeout 180s >/dev/null || fail "helm uninstall $n"
        kubectl delete namespace "$n" --timeout=180s >/dev/null
        ok=$((ok + 1))
    done
    log "schema: installed $ok of ${#files[@]} right ones"
    passed
}

# The Debugger and Pinger of config/samples/debugger_daemonset_mesh.yaml as
# the chart's values debuggers and pingers, in namespace $ns.
# The node sample's Debugger and Pinger as the chart's values, the Debugger's
# pods at the priority node agents run at.
sample_values() {
    # shellcheck disable=SC2016 # $ns is jq's
    yq -y -s --arg ns "$ns" '{
        pingers: [.[] | select(.kind == "Pinger") | {name: .metadata.name, namespace: $ns, spec}],
        debuggers: [.[] | select(.kind == "Debugger")
            | {name: .metadata.name, namespace: $ns, spec: (.spec + {priorityClassName: "system-node-critical"})}]}' \
        "$repo/config/samples/debugger_daemonset_mesh.yaml"
}

install_and_run() {
    begin "helm install from the packaged chart with a Debugger from values, a run on every node"
    kubectl create namespace "$system" >/dev/null
    # A pull secret for the operator's pod (the registry asks for none).
    kubectl create secret docker-registry regcred -n "$system" --docker-server="$registry" \
        --docker-username=kube-combo --docker-password=unused >/dev/null
    kubectl create namespace "$ns" >/dev/null
    sample_values >"$work/sample-values.yaml"
    "$helm" install "$release" "$work/kube-combo-0.1.0-ci.1.tgz" -n "$system" "${images[@]}" \
        --set 'imagePullSecrets[0].name=regcred' -f "$work/sample-values.yaml" --wait --timeout 180s >"$work/install" ||
        fail "helm install: $(cat "$work/install")"
    grep -q 'kubectl label namespace' "$work/install" || fail "helm install printed no NOTES: $(cat "$work/install")"
    wait_until 180 "the operator of 0.1.0-ci.1 rolled out" operator_at 0.1.0-ci.1
    [[ $(kubectl get deployment -n "$system" combo-operator -o jsonpath='{.spec.template.spec.imagePullSecrets[0].name}') == regcred ]] ||
        fail "the operator's pod has no imagePullSecrets"
    [[ $(kubectl get debugger -n "$ns" "$debugger" -o jsonpath='{.metadata.labels.app\.kubernetes\.io/managed-by}') == Helm ]] ||
        fail "the chart made no Debugger $ns/$debugger from its values"
    [[ $(kubectl get pinger -n "$ns" mesh -o jsonpath='{.metadata.labels.app\.kubernetes\.io/managed-by}') == Helm ]] ||
        fail "the chart made no Pinger $ns/mesh from its values"
    wait_until 180 "a Ready pod of the Debugger from values on every node" workload_ready
    # The API server resolves the class to its value: the name reached the pods.
    local priorities
    priorities=$(kubectl get pods -n "$ns" -o json |
        jq -r '.items[] | "\(.spec.priorityClassName // "-") \(.spec.priority // "-")"' | sort -u)
    [[ $priorities == "system-node-critical 2000001000" ]] ||
        fail "the Debugger's priorityClassName did not reach its pods: $priorities"
    run_reaches_every_node
    passed
}

upgrade_from_oci() {
    begin "helm push to the registry and helm upgrade from oci://"
    "$helm" push "$work/kube-combo-0.1.0-ci.2.tgz" "oci://$registry/charts" --plain-http >"$work/push" 2>&1 ||
        fail "helm push: $(cat "$work/push")"
    [[ $("$helm" show chart "oci://$registry/charts/kube-combo" --version 0.1.0-ci.2 --plain-http 2>/dev/null |
        awk '$1 == "version:" {print $2}') == 0.1.0-ci.2 ]] || fail "the registry does not serve chart 0.1.0-ci.2"
    passed
    begin "helm upgrade: every node in the summary and the Debugger Ready throughout"
    local before after
    before=$(operator_pods | cut -f1)
    watch_roll "$work/roll" &
    poller=$!
    "$helm" upgrade "$release" "oci://$registry/charts/kube-combo" --version 0.1.0-ci.2 --plain-http \
        -n "$system" --reset-then-reuse-values --wait --timeout 180s >"$work/upgrade" 2>&1 ||
        fail "helm upgrade: $(cat "$work/upgrade")"
    wait_until 180 "the operator of 0.1.0-ci.2 rolled out" operator_at 0.1.0-ci.2
    run_reaches_every_node
    kill "$poller"
    wait "$poller" 2>/dev/null || true
    poller=''
    after=$(operator_pods | cut -f1)
    [[ -z $(comm -12 <(sort <<<"$before") <(sort <<<"$after")) ]] || fail "the operator's pod was not replaced"
    [[ $("$helm" history "$release" -n "$system" -o json | jq -r 'last | "\(.revision) \(.chart) \(.status)"') == "2 kube-combo-0.1.0-ci.2 deployed" ]] ||
        fail "helm history: $("$helm" history "$release" -n "$system")"
    (($(cat "$work/roll.polls") >= 10)) || fail "only $(cat "$work/roll.polls") polls during the upgrade"
    [[ ! -s $work/roll ]] || fail "during the upgrade: $(sort -u -k2 "$work/roll" | head -5)"
    log "upgraded: $(cat "$work/roll.polls") polls, every node in the summary, Ready throughout"
    passed
}

uninstall() {
    begin "helm uninstall leaves nothing of the release but the CRDs and the namespace"
    kubectl delete debuggers,pingers --all -A --wait=false >/dev/null
    # shellcheck disable=SC2016 # expanded by the inner bash
    wait_until 180 "every Debugger and Pinger deleted" bash -c '[[ -z $(kubectl get debuggers,pingers -A -o name) ]]'
    # shellcheck disable=SC2016 # expanded by the inner bash
    wait_until 120 "every DebuggerReport gone with its Debugger" bash -c '[[ -z $(kubectl get debuggerreports -A -o name) ]]'
    "$helm" uninstall "$release" -n "$system" --wait --timeout 180s >/dev/null || fail "helm uninstall"
    local left t
    [[ -z $("$helm" list -A -q) ]] || fail "helm list: $("$helm" list -A)"
    # The operator exits within 2 s of SIGTERM; its pod object goes when the
    # garbage collector and the kubelet are done with it, which on a busy
    # machine takes longer than the pod's grace period (10 s). What was left
    # at the last look is what the failure names.
    for ((t = 0; t < 180; t++)); do
        left=$(release_left)
        [[ -z $left ]] && break
        sleep 1
    done
    [[ -z $left ]] || fail "left in $system after $t s: $(tr '\n' ' ' <<<"$left")"
    log "the release's objects gone from $system ${t} s after helm uninstall"
    left=$(kubectl get clusterroles,clusterrolebindings -o name | grep -E '/combo-' || true)
    [[ -z $left ]] || fail "cluster roles or bindings left: $left"
    left=$(kubectl get nodes -o json | jq -r '.items[] | .metadata.name as $n
        | ((.status.conditions // [])[] | select(.type | startswith("kubecombo.io/")) | "\($n) condition \(.type)"),
          ((.spec.taints // [])[] | select(.key | startswith("kubecombo.io/")) | "\($n) taint \(.key)")')
    [[ -z $left ]] || fail "node marks left: $left"
    # What Helm keeps by policy (docs/install.md, "Helm"): the CRDs of crds/.
    left=$(kubectl get crd -o name | grep kubecombo.io | sort | tr '\n' ' ')
    [[ $left == "customresourcedefinition.apiextensions.k8s.io/debuggerreports.kubecombo.io customresourcedefinition.apiextensions.k8s.io/debuggers.kubecombo.io customresourcedefinition.apiextensions.k8s.io/pingers.kubecombo.io " ]] ||
        fail "Helm should keep the three CRDs; found: $left"
    kubectl delete crd debuggers.kubecombo.io pingers.kubecombo.io debuggerreports.kubecombo.io --timeout=120s >/dev/null
    kubectl delete namespace "$system" "$ns" --timeout=180s >/dev/null
    passed
}

log "helm $("$helm" version --short) on ${#nodes[*]} real nodes"
log "removing any install of kube-combo the other tests left"
remove_install
kubectl delete crd debuggers.kubecombo.io pingers.kubecombo.io debuggerreports.kubecombo.io --ignore-not-found >/dev/null
check_chart
install_right_values
install_and_run
upgrade_from_oci
uninstall
done=1
log "lint, template, package, install, upgrade from OCI and uninstall: ok"
