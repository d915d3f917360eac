#!/usr/bin/env bash
# Runs deploy/quickstart.sh as a user does, in a directory of its own, and
# checks what it printed (docs/testing.md, "The quickstart"): no failed item
# on the healthy nodes, then the fault it makes on real-1 named in the
# summary and the errlog, cleared, and its filesystem removed.
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
# The output in three parts: the healthy nodes (up to the fault), the fault
# (up to its clearing), the cleared fault (to the end).
part() { # from-line-pattern (empty: the start) to-line-pattern (empty: the end)
    awk -v a="$1" -v b="$2" 'BEGIN { on = a == "" } b != "" && $0 ~ b { exit } a != "" && $0 ~ a { on = 1 } on' "$out"
}
fault_at='^==> a fault on real-1: '
clear_at='^==> clearing it: '
healthy=$(part '' "$fault_at")
fault=$(part "$fault_at" "$clear_at")
cleared=$(part "$clear_at" '')
in_part() { # what part-text pattern
    grep -Eq -- "$3" <<<"$2" || problems+=("$1 (no line matching '$3')")
}
# The runs `kubectl combo run --wait` saw finish, in order: the README's
# steps', the fault's, the cleared fault's.
mapfile -t runs < <(grep -E '^run [0-9TZ]+ finished on ' "$out" | sed -E 's/^run [0-9TZ]+ //; s/;.*//')
want=('finished on 2 node(s): 0 failed items' 'finished on 2 node(s): 1 failed item(s)'
    'finished on 2 node(s): 0 failed items')
[[ ${runs[*]} == "${want[*]}" ]] ||
    problems+=("the runs --wait saw finish: $(printf '[%s] ' "${runs[@]}"), not: the first (the README's steps) with 0 failed items, the fault's with 1, the cleared fault's with 0")
! grep -Eq '^NODE +RUN +CATEGORY' <<<"$healthy" ||
    problems+=("the healthy nodes' summary lists failed items: $(grep -E -A3 '^NODE +RUN +CATEGORY' <<<"$healthy" | tr '\n' '|')")
in_part "the healthy nodes' summary has no failed item" "$healthy" '^no failed items in ConfigMap default/node-check-summary'
in_part "the fault's summary names it on real-1" "$fault" \
    '^real-1 +[0-9TZ]+ +disk +/mnt/kc-quickstart +disk full \([0-9]+% used, limit 90%\)$'
in_part "the fault's errlog names its item" "$fault" '^item: /mnt/kc-quickstart$'
in_part "the fault's errlog has its error" "$fault" '^err: disk full \([0-9]+% used, limit 90%\)$'
in_part "the cleared fault's summary has no failed item" "$cleared" '^no failed items in ConfigMap default/node-check-summary'
in_part "the cleared fault's item is ok on real-1" "$cleared" '^real-1 +[0-9TZ]+ +[^ ]+ +disk +/mnt/kc-quickstart +-$'
in_part "the fault's filesystem was removed" "$cleared" '^==> the fault removed: '
refuse "the fault's filesystem was removed" "the fault's filesystem is still there"
! grep -q ' /mnt/kc-quickstart ' /proc/self/mountinfo || problems+=("/mnt/kc-quickstart is still mounted on the machine")
real1=$(cat "$dir/pids/containerd-real-1.pid" 2>/dev/null || true)
[[ -z $real1 ]] || ! grep -q ' /mnt/kc-quickstart ' "/proc/$real1/mountinfo" 2>/dev/null ||
    problems+=("/mnt/kc-quickstart is still mounted in real-1's mount namespace")
[[ -z $(losetup -n -j "$dir/fault-disk.img" 2>/dev/null) ]] || problems+=("a loop device of $dir/fault-disk.img is left")
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
say "ok: a green run on both nodes, a fault on real-1 named and cleared, the pinger's metrics and the mesh of both pingers"
