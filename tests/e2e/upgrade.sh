#!/usr/bin/env bash
# Install, upgrade and uninstall of kube-combo from its release artifacts
# alone, on a cluster of real nodes (docs/testing.md, "Install, upgrade and
# uninstall from the release"):
#
#   tests/e2e/upgrade.sh DIR     DIR: tests/e2e/cluster.sh up DIR --nodes 0 --real N
#
# Builds three releases with deploy/release.sh into the cluster's registry,
# then works from a copy of their artifacts and kubectl only:
#   A  0.1.0-ci.1  built (KUBE_COMBO_IMAGE_PROFILE, binaries printing the version)
#   B  0.1.0-ci.2  A's images labelled again: every digest changes, the runner's too
#   C  0.1.0-ci.3  the operator alone (--keep runner,pinger: B's digests)
# It removes the install the other tests made first (run it after them),
# installs A, runs the node sample, upgrades to B (the runner pods roll, every
# node keeps its key in the summary at every 500 ms poll, the Debugger stays
# Ready, and a hung task logged between A's last run and B's first is named
# in B's errlogs: state and errlogs outlive the pods), then to C (no workload pod replaced or restarted), and uninstalls:
# Debuggers and Pingers first, then `kubectl delete -f kube-combo.yaml`, and
# nothing of kube-combo is left.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
dir=$(cd "${1:?usage: upgrade.sh DIR}" && pwd)
export KUBECONFIG=$dir/kubeconfig
registry=172.31.0.1:5000 # netplan.sh
ns=combo-install
debugger=node-check # config/samples/debugger_daemonset_mesh.yaml
work=$(mktemp -d /tmp/kube-combo-upgrade.XXXXXX)
poller=''
mapfile -t nodes < <(seq 1 "$(cat "$dir/real-nodes")" | sed 's/^/real-/')
((${#nodes[@]})) || { echo "upgrade.sh: $dir has no real nodes" >&2; exit 2; }

# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
    [[ -n $poller ]] && kill "$poller" 2>/dev/null
    rm -rf "$work"
    return 0
}
trap cleanup EXIT

log() { printf '[upgrade %(%T)T] %s\n' -1 "$*"; }
fail() { echo "upgrade.sh: FAIL: $*" >&2; exit 1; }
# shellcheck source=tests/e2e/debugger-checks.sh
. "$here/debugger-checks.sh"

build_releases() {
    local b=$work/build
    log "release A: build"
    "$repo/deploy/release.sh" --insecure 0.1.0-ci.1 "$registry" "$b/A"
    log "release B: A's images, labelled 0.1.0-ci.2"
    "$repo/deploy/release.sh" --insecure --prebuilt 0.1.0-ci.2 "$registry" "$b/B"
    log "release C: the operator alone"
    "$repo/deploy/release.sh" --insecure --prebuilt --keep runner,pinger --previous "$b/B" \
        0.1.0-ci.3 "$registry" "$b/C"
    # From here on: the artifacts, as a user downloads them, and kubectl.
    cp -r "$b" "$work/dist"
    rm -rf "$b"
    local r
    for r in A B C; do (cd "$work/dist/$r" && sha256sum --quiet -c SHA256SUMS) || fail "release $r: SHA256SUMS"; done
    [[ $("$work/dist/A/kubectl-combo" --version) == "kubectl-combo 0.1.0-ci.1" ]] ||
        fail "A's kubectl-combo --version: $("$work/dist/A/kubectl-combo" --version)"
    check_krew "$work/dist/A" 0.1.0-ci.1
}

# The krew manifest of the release in $1 (version $2): krew's Plugin for
# linux/amd64 by krew's rules (deploy/krew-check.sh: name, version,
# homepage, caveats, platforms, sha256, bin and LICENSE in the archive),
# whose archive holds the release's plugin binary, which krew links (`bin`);
# the release's LICENSE, also in its chart.
check_krew() {
    local dir=$1 version=$2 m=$1/combo.yaml x
    [[ -f $m ]] || fail "release $version: no krew manifest combo.yaml"
    "$repo/deploy/krew-check.sh" "$m" "$dir/kubectl-combo-linux-amd64.tar.gz" "$version" ||
        fail "release $version: combo.yaml is not a manifest krew takes"
    cmp -s "$dir/LICENSE" "$repo/LICENSE" || fail "release $version: no LICENSE, or not the repository's"
    tar -xzOf "$dir/kube-combo-$version.tgz" kube-combo/LICENSE | cmp -s - "$repo/LICENSE" ||
        fail "release $version: the chart kube-combo-$version.tgz holds no LICENSE"
    [[ $(yq -r .spec.caveats "$m") == *pods/exec*pods/proxy* ]] ||
        fail "release $version: combo.yaml's caveats do not name pods/exec and pods/proxy"
    local line
    for line in 'apiVersion: krew.googlecontainertools.github.com/v1alpha2' 'kind: Plugin' \
        "  version: v$version" '      bin: kubectl-combo'; do
        grep -qx -- "$line" "$m" || fail "release $version: combo.yaml has no line '$line': $(cat "$m")"
    done
    [[ $(awk '$1 == "sha256:" {print $2}' "$m") == $(sha256sum "$dir/kubectl-combo-linux-amd64.tar.gz" | cut -d' ' -f1) ]] ||
        fail "release $version: combo.yaml's sha256 is not its archive's"
    grep -q "uri: .*/kubectl-combo-linux-amd64.tar.gz$" "$m" || fail "release $version: combo.yaml's uri"
    x=$(mktemp -d)
    tar -C "$x" -xzf "$dir/kubectl-combo-linux-amd64.tar.gz"
    if ! cmp -s "$x/kubectl-combo" "$dir/kubectl-combo" || [[ ! -x $x/kubectl-combo ]]; then
        rm -rf "$x"
        fail "release $version: the krew archive does not hold the release's kubectl-combo"
    fi
    rm -rf "$x"
}

image_of() { awk -v n="$2" '$1 == n {print $2}' "$work/dist/$1/images.txt"; }
combo() { PATH=$work/dist/$1:$PATH kubectl combo "${@:2}"; }

# uid, node, image, restarts and readiness of each workload pod, one line each.
workload_pods() {
    kubectl get pods -n "$ns" -l "kubecombo.io/debugger=$debugger" -o json | jq -r '.items[]
        | select(.metadata.deletionTimestamp == null)
        | [.metadata.uid, .spec.nodeName, (.spec.containers | map(.image) | join(",")),
           ([.status.containerStatuses[]?.restartCount] | add // 0),
           ([.status.conditions[]? | select(.type == "Ready") | .status] | first // "False")] | @tsv' | sort
}

# Every real node runs one Ready pod of the Debugger whose images include $1.
rolled_to() {
    local pods
    pods=$(workload_pods)
    [[ $(grep -cF "$1" <<<"$pods") == "${#nodes[@]}" ]] &&
        [[ $(wc -l <<<"$pods") == "${#nodes[@]}" ]] && ! grep -q 'False$' <<<"$pods"
}

operator_at() { # release
    kubectl -n kube-combo-system rollout status deployment/combo-operator --timeout=180s >/dev/null &&
        [[ $(kubectl -n kube-combo-system get pods -l app.kubernetes.io/component=operator -o json |
            jq -r '[.items[] | select(.metadata.deletionTimestamp == null) | .spec.containers[0].image] | unique | join(" ")') \
            == "$(image_of "$1" operator)" ]]
}

# Debuggers and Pingers first, while the operator runs to take its marks
# off the nodes (finalizer kubecombo.io/node-marks), then the manifest.
uninstall() { # release
    if kubectl get crd debuggers.kubecombo.io >/dev/null 2>&1; then
        kubectl delete debuggers,pingers --all -A --wait=false >/dev/null
        # shellcheck disable=SC2016 # expanded by the inner bash
        wait_until 180 "every Debugger and Pinger deleted" \
            bash -c '[[ -z $(kubectl get debuggers,pingers -A -o name) ]]'
        # shellcheck disable=SC2016 # expanded by the inner bash
        wait_until 120 "every DebuggerReport gone with its Debugger" \
            bash -c '[[ -z $(kubectl get debuggerreports -A -o name) ]]'
    fi
    kubectl delete -f "$work/dist/$1/kube-combo.yaml" --ignore-not-found --wait=true --timeout=180s >/dev/null
}

nothing_left() {
    local left
    left=$(kubectl get crd -o name | grep kubecombo.io || true)
    [[ -z $left ]] || fail "CRDs left: $left"
    left=$(kubectl get clusterroles,clusterrolebindings -o name | grep -E '/combo-' || true)
    [[ -z $left ]] || fail "cluster roles or bindings left: $left"
    wait_until 120 "namespace kube-combo-system gone" bash -c '! kubectl get namespace kube-combo-system'
    left=$(kubectl get nodes -o json | jq -r '.items[] | .metadata.name as $n
        | ((.status.conditions // [])[] | select(.type | startswith("kubecombo.io/")) | "\($n) condition \(.type)"),
          ((.spec.taints // [])[] | select(.key | startswith("kubecombo.io/")) | "\($n) taint \(.key)")')
    [[ -z $left ]] || fail "node marks left: $left"
    # A finalizer nobody removes would keep the namespace Terminating.
    kubectl delete namespace "$ns" --ignore-not-found --wait=false >/dev/null
    wait_until 120 "namespace $ns deleted (no finalizer holds it)" bash -c "! kubectl get namespace $ns"
}

install_and_run() {
    log "install A"
    kubectl apply -f "$work/dist/A/kube-combo.yaml" >/dev/null
    wait_until 180 "operator of A rolled out" operator_at A
    kubectl create namespace "$ns" >/dev/null
    kubectl apply -n "$ns" -f "$work/dist/A/samples/debugger_daemonset_mesh.yaml" >/dev/null
    wait_until 180 "a Ready pod of the sample on every node" rolled_to "$(image_of A runner)"
    combo A run "$debugger" -n "$ns" >/dev/null
    local run
    run=$(kubectl get debugger -n "$ns" "$debugger" -o jsonpath='{.metadata.annotations.kubecombo\.io/run-now}')
    wait_until 300 "every node's summary of run $run" summary_has_every_node "$run"
    wait_until 60 "Debugger Ready" debugger_ready
}

# The hung task logged between the old pods' last run and the new pods' first.
fault="kc-upgrade:4242"

# Each workload pod's svc errlogs (kept on the node, so the new pod has the
# old pod's too) name $fault; A's runs came before it was logged, so only a
# run of the new pod can have written it.
fault_in_errlogs() {
    local pod
    for pod in $(kubectl get pods -n "$ns" -l "kubecombo.io/debugger=$debugger" -o name); do
        kubectl exec -n "$ns" "$pod" -c runner -- grep -rqF "$fault" /scripts/svc/errlog || return 1
    done
}

upgrade_runner() {
    log "upgrade to B (a new runner image)"
    local before after
    before=$(workload_pods | cut -f1)
    # A fault between A's last run and B's first: the kernel log's position
    # and the errlogs are kept on the node, so a run of B's pods names it.
    echo "<3>INFO: task $fault blocked for more than 120 seconds." >/dev/kmsg
    watch_roll "$work/roll" &
    poller=$!
    kubectl apply -f "$work/dist/B/kube-combo.yaml" >/dev/null
    wait_until 180 "operator of B rolled out" operator_at B
    wait_until 300 "the runner pods rolled to B's image" rolled_to "$(image_of B runner)"
    combo B run "$debugger" -n "$ns" >/dev/null
    local run
    run=$(kubectl get debugger -n "$ns" "$debugger" -o jsonpath='{.metadata.annotations.kubecombo\.io/run-now}')
    wait_until 300 "every node's summary of run $run under B" summary_has_every_node "$run"
    wait_until 60 "the fault between the pods named in an errlog of each node's new pod" fault_in_errlogs
    kill "$poller"
    wait "$poller" 2>/dev/null || true
    poller=''
    after=$(workload_pods | cut -f1)
    [[ -z $(comm -12 <(echo "$before") <(echo "$after")) ]] || fail "pods of A still run after the roll"
    (($(cat "$work/roll.polls") >= 10)) || fail "only $(cat "$work/roll.polls") polls during the roll"
    [[ ! -s $work/roll ]] || fail "during the roll: $(sort -u -k2 "$work/roll" | head -5)"
    log "rolled: $(cat "$work/roll.polls") polls, every node in the summary, Ready throughout"
}

upgrade_operator() {
    log "upgrade to C (the operator alone)"
    local i before after gen
    for i in runner pinger; do
        [[ $(image_of B "$i") == "$(image_of C "$i")" ]] || fail "C's $i image differs from B's"
    done
    [[ $(image_of B operator) != "$(image_of C operator)" ]] || fail "C's operator image is B's"
    before=$(workload_pods)
    gen=$(kubectl get daemonsets -n "$ns" -o jsonpath='{.items[*].metadata.generation}')
    kubectl apply -f "$work/dist/C/kube-combo.yaml" >/dev/null
    wait_until 180 "operator of C rolled out" operator_at C
    # The new operator reconciles the Debugger once its watch has listed;
    # a run asked for now is answered through it.
    combo C run "$debugger" -n "$ns" >/dev/null
    local run
    run=$(kubectl get debugger -n "$ns" "$debugger" -o jsonpath='{.metadata.annotations.kubecombo\.io/run-now}')
    wait_until 300 "every node's summary of run $run under C" summary_has_every_node "$run"
    debugger_ready || fail "the Debugger is not Ready under C"
    after=$(workload_pods)
    [[ $before == "$after" ]] || fail "workload pods changed (uid node images restarts ready):
before:
$before
after:
$after"
    [[ $(kubectl get daemonsets -n "$ns" -o jsonpath='{.items[*].metadata.generation}') == "$gen" ]] ||
        fail "the operator of C changed the DaemonSet"
}

log "releases into $registry"
build_releases
log "removing the install the other tests made"
uninstall A
kubectl delete namespace "$ns" --ignore-not-found >/dev/null
install_and_run
upgrade_runner
upgrade_operator
log "uninstall"
uninstall C
nothing_left
log "install, upgrade and uninstall: ok"
