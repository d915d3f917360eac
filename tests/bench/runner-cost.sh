#!/usr/bin/env bash
# What a full default inspection costs on this machine (measures; asserts
# nothing): the release runner in local mode, as root, runs every default
# script (scripts/), as a pod with enableSys does on its node. The first run
# records the baselines of the since-the-previous-run checks and is not
# counted; the next RUNS runs are, each printed with its wall time, CPU time
# (user + system, the scripts included) and peak RSS, and as a ratio to the
# targets (1 CPU-second, 10 s). Then, with a test cluster (COMBO_E2E_DIR),
# the runner's RSS while it idles in cluster mode (watching a Debugger with
# no runAt), as a ratio to 16 MiB.
#
#   tests/bench/runner-cost.sh            (RUNS=3)
#   COMBO_E2E_DIR=/tmp/kc tests/bench/runner-cost.sh
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
runs=${RUNS:-3}
work=$(mktemp -d /tmp/runner-cost.XXXXXX)
pid=""
ns=""
cleanup() {
    [[ -n $pid ]] && kill "$pid" 2>/dev/null
    [[ -n $ns ]] && KUBECONFIG=$COMBO_E2E_DIR/kubeconfig kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1
    rm -rf "$work"
    return 0
}
trap cleanup EXIT

command -v /usr/bin/time >/dev/null || { echo "needs GNU time (apt-get install time)" >&2; exit 2; }
cargo build --release -q -p combo-runner --manifest-path "$repo/Cargo.toml"
bin=$repo/target/release/combo-runner

once() {
    /usr/bin/time -f '%e %U %S %M' -o "$work/time" \
        "$bin" --once --scripts "$work/scripts" --state-dir "$work/state" --output table >"$work/out" 2>&1 || true
    # The last line: GNU time says first when the run exits 1 (a failed item).
    read -r wall user sys rss < <(tail -n 1 "$work/time")
    printf '%s %s %s\n' "$wall" "$(echo "$user + $sys" | bc)" "$rss"
}

cp -r "$repo/scripts" "$work/scripts"
once >/dev/null
echo "full default run (categories disk net mem svc, $(grep -c . "$work/out") output lines):"
for i in $(seq 1 "$runs"); do
    read -r wall cpu rss < <(once)
    printf '  run %d: wall %.2f s (%.2f of 10 s), CPU %.2f s (%.2f of 1 s), peak RSS %d KiB\n' \
        "$i" "$wall" "$(echo "$wall / 10" | bc -l)" "$cpu" "$cpu" "$rss"
done
grep -E '^[a-z]+ +[^ ]+ +(FAIL|SKIP) ' "$work/out" | awk '{ print $3 }' | sort | uniq -c |
    awk '{ printf "  last run: %d %s\n", $1, $2 }'
grep -E '^[a-z]+ +[^ ]+ +FAIL ' "$work/out" | sed 's/^/  failed: /' || true

if [[ -z ${COMBO_E2E_DIR:-} ]]; then
    echo "idle RSS: needs a test cluster (COMBO_E2E_DIR)"
    exit 0
fi
export KUBECONFIG=$COMBO_E2E_DIR/kubeconfig
ns=runner-cost-$$
kubectl create namespace "$ns" >/dev/null
printf 'apiVersion: kubecombo.io/v1\nkind: Debugger\nmetadata:\n  name: idle\nspec:\n  selector: {kubecombo.io/none: "x"}\n' |
    kubectl apply -n "$ns" -f - >/dev/null
NODE_NAME=bench POD_NAME=bench POD_NAMESPACE=$ns DEBUGGER_NAME=idle \
    "$bin" --state-dir "$work/idle-state" >"$work/idle.log" 2>&1 &
pid=$!
sleep 20
rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status")
printf 'idle in cluster mode after 20 s: RSS %d KiB (%.2f of 16 MiB)\n' "$rss" "$(echo "$rss / 16384" | bc -l)"
