#!/usr/bin/env bash
# Runs deploy/quickstart.sh as a user does, in a directory of its own, and
# checks what it printed (docs/testing.md, "The quickstart"):
#
#   tests/e2e/quickstart.sh
#
# It needs the machine's one test cluster slot: run it when no other cluster
# is up. The quickstart's images follow KUBE_COMBO_IMAGE_PROFILE like the
# harness's. Its cluster is stopped and its directory removed on exit.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
dir=$(mktemp -d /tmp/kube-combo-quickstart.XXXXXX)
out=$(mktemp /tmp/kube-combo-quickstart-out.XXXXXX)

# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
    "$here/cluster.sh" down "$dir" >/dev/null 2>&1 && rm -rf --one-file-system "$dir"
    rm -f "$out"
    return 0
}
trap cleanup EXIT

say() { printf '[quickstart %s] %s\n' "$(date +%T)" "$*"; }

say "running deploy/quickstart.sh in $dir"
KUBE_COMBO_QUICKSTART_DIR=$dir bash "$repo/deploy/quickstart.sh" 2>&1 | tee "$out"
problems=()
expect() {
    local what=$1 pattern=$2
    grep -Eq -- "$pattern" "$out" || problems+=("$what (no line matching '$pattern')")
}
refuse() {
    local what=$1 pattern=$2
    ! grep -Eq -- "$pattern" "$out" || problems+=("$what: $(grep -E -m1 -- "$pattern" "$out")")
}
expect "the README's steps: kubectl combo run --wait saw the run finish on both nodes" \
    '^run [0-9TZ]+ finished on 2 node\(s\): [0-9]+ failed item\(s\)'
expect "kubectl combo run asked for a run and kept the schedule" \
    'requested on every node .*runAt "0 \*/6 \* \* \*" is unchanged'
refuse "the run finished on both nodes" 'has not finished on both nodes'
expect "the summary was printed" '^(no failed items in ConfigMap default/node-check-summary|NODE +RUN +CATEGORY)'
expect "the pinger's metrics were shown" '^combo_pinger_target_up\{'
refuse "the pinger served metrics" 'serves no combo_pinger_target_up series'
expect "kubectl combo mesh heard both pingers" 'paths over the last 5 minutes: .*; 2 of 2 pingers answered'
grep -q '<table id="heatmap">' "$dir/mesh.html" 2>/dev/null ||
    problems+=("the mesh page $dir/mesh.html has no heat map")
run_at=$(KUBECONFIG=$dir/kubeconfig kubectl get dbg node-check -n default -o jsonpath='{.spec.runAt}')
[[ $run_at == '0 */6 * * *' ]] || problems+=("spec.runAt is '$run_at' after the quickstart, not the sample's")

if ((${#problems[@]})); then
    printf 'quickstart: %s\n' "${problems[@]}" >&2
    exit 1
fi
say "ok: a run on both nodes, the summary, the pinger's metrics and the mesh of both pingers"
