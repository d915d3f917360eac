#!/usr/bin/env bash
# Benchmark of per-node DebuggerReports (measures; asserts nothing): for each
# N, a fresh control plane with one simulated node (it runs the operator),
# the operator installed from config/default, then runner/benches/reports.rs
# (N report writers in one process; see its header), and the cluster torn
# down. Up to BASELINE_UP_TO nodes the old design (N field managers writing
# keys of one ConfigMap) is measured in the same run. Then, on one more fresh
# cluster, the operator's RSS as Debuggers are added in steps of RSS_STEP up
# to RSS_MAX (each selects no node, so no pod starts).
#
#   tests/bench/reports.sh [N ...]        (default: 200 1000 5000)
#
# Environment: BASELINE_UP_TO (1000), LIMIT seconds per measurement (600),
# COMBO_BENCH_ARRIVAL (seconds over which the results are handed to the
# writers; 0, the default, hands them over at once), COMBO_BENCH_BUSY (1: each
# node's result is a busy node's, 150 items with 30 failures of 160 bytes,
# instead of six items with one failure),
# RSS_STEP (1000), RSS_MAX (10000; 0 skips), WORK (a scratch directory).
# Run it inside the sandbox that owns the cluster, e.g.
#   /work/sandbox.sh run NAME tests/bench/reports.sh
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
sizes=("$@")
((${#sizes[@]})) || sizes=(200 1000 5000)
baseline_up_to=${BASELINE_UP_TO:-1000}
limit=${LIMIT:-600}
rss_step=${RSS_STEP:-1000}
rss_max=${RSS_MAX:-10000}
work=${WORK:-$(mktemp -d /tmp/reports-bench.XXXXXX)}
dir=$work/cluster
mkdir -p "$work"

cleanup() { "$repo/tests/e2e/cluster.sh" down "$dir" >/dev/null 2>&1 || true; }
trap cleanup EXIT

up() {
    "$repo/tests/e2e/cluster.sh" up "$dir" --nodes 1 >"$work/up.log" 2>&1 ||
        { cat "$work/up.log" >&2; exit 1; }
    export KUBECONFIG=$dir/kubeconfig
    kubectl apply -k "$repo/config/default" 2>&1 | grep -v '^Warning' >/dev/null || true
    kubectl -n kube-combo-system rollout status deployment/combo-operator --timeout=180s >/dev/null
}

# The process id of the operator (the release build the cluster runs).
operator_pid() {
    local p exe
    for p in /proc/[0-9]*; do
        exe=$(readlink "$p/exe" 2>/dev/null || true)
        if [[ $exe == "$repo/target/release/combo-operator"* ]]; then
            echo "${p#/proc/}"
            return
        fi
    done
}

# The operator's VmRSS in KiB, or another field of its /proc status
# (VmHWM: its peak); 0 when it does not run.
operator_rss_kb() {
    local pid field=${1:-VmRSS}
    pid=$(operator_pid)
    [[ -n $pid ]] || { echo 0; return; }
    awk -v f="$field:" '$1 == f {print $2}' "/proc/$pid/status"
}

echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -r)"
(cd "$repo" && cargo bench --quiet -p combo-runner --bench reports --no-run 2>/dev/null)
for n in "${sizes[@]}"; do
    up
    baseline=0
    ((n <= baseline_up_to)) && baseline=1
    # The bench reads the operator's peak RSS itself, right after the run.
    (cd "$repo" && COMBO_E2E_DIR=$dir COMBO_BENCH_NODES=$n COMBO_BENCH_BASELINE=$baseline \
        COMBO_BENCH_OPERATOR_PID=$(operator_pid) \
        COMBO_BENCH_LIMIT=$limit cargo bench --quiet -p combo-runner --bench reports 2>"$work/bench-$n.err") ||
        { echo "the benchmark at N=$n failed:"; tail -5 "$work/bench-$n.err"; }
    awk -v r="$(operator_rss_kb)" -v h="$(operator_rss_kb VmHWM)" -v a="$(operator_rss_kb RssAnon)" \
        -v f="$(operator_rss_kb RssFile)" -v n="$n" \
        'BEGIN { printf "operator RSS after the run at N=%d: %.1f MiB (%.1f MiB its own memory, %.1f MiB pages of its binary and libraries), peak %.1f MiB (target under 50)\n", n, r/1024, a/1024, f/1024, h/1024 }'
    cleanup
done

((rss_max > 0)) || exit 0
up
ns=reports-bench-rss
kubectl create ns "$ns" >/dev/null
debuggers() { # first last
    for i in $(seq "$1" "$2"); do
        printf -- '---\napiVersion: kubecombo.io/v1\nkind: Debugger\nmetadata: {name: d%05d}\nspec: {selector: {bench: none}}\n' "$i"
    done
}
count_ds() { kubectl get ds -n "$ns" --no-headers 2>/dev/null | wc -l; }
sleep 10
awk -v r="$(operator_rss_kb)" 'BEGIN { printf "operator RSS with 0 Debuggers: %.1f MiB\n", r/1024 }'
for ((m = rss_step; m <= rss_max; m += rss_step)); do
    t0=$(date +%s)
    debuggers $((m - rss_step + 1)) "$m" | kubectl apply -n "$ns" -f - 2>&1 | grep -v '^Warning' >/dev/null || true
    while (($(count_ds) < m)); do sleep 2; done
    sleep 10
    awk -v r="$(operator_rss_kb)" -v m="$m" -v s=$(($(date +%s) - t0)) \
        'BEGIN { printf "operator RSS with %d Debuggers: %.1f MiB (step took %d s)\n", m, r/1024, s }'
done
