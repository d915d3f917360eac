#!/usr/bin/env bash
# While the cluster of DIR runs, `cluster.sh up` of another directory is
# refused, naming DIR and how to stop it, and `cluster.sh down` of that
# other directory leaves the running cluster whole (its nodes Ready).
#
#   tests/e2e/second-cluster.sh DIR
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
dir=$(cd "${1:?usage: second-cluster.sh DIR}" && pwd)
other=$(mktemp -d /tmp/kube-combo-second.XXXXXX)
trap 'rm -rf --one-file-system "$other"' EXIT
fail() { echo "second cluster: $*" >&2; exit 1; }

if "$here/cluster.sh" up "$other" --nodes 1 >"$other.out" 2>&1; then
    fail "a second cluster started beside $dir"
fi
grep -q "a cluster already runs on this machine from $dir; stop it first with: .*cluster.sh down $dir" "$other.out" ||
    fail "the refusal does not name $dir and how to stop it: $(cat "$other.out")"
"$here/cluster.sh" down "$other" >"$other.out" 2>&1 || fail "down of the refused directory failed: $(cat "$other.out")"
rm -f "$other.out"
export KUBECONFIG=$dir/kubeconfig
ready=$(kubectl get nodes --no-headers 2>/dev/null | awk '$2 == "Ready"' | wc -l)
want=$(cat "$dir/nodes")
((ready == want)) || fail "the running cluster has $ready of $want nodes Ready after the refused up and its down"
echo "second cluster: refused while $dir runs; the running cluster kept its $want nodes"
