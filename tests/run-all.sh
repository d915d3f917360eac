#!/usr/bin/env bash
# Runs every test of kube-combo on a fresh Debian machine, as root:
# installs what the tests need, checks formatting and lints, runs the unit and
# integration tests, then starts the real control plane (tests/e2e/cluster.sh)
# and runs the end-to-end tests against it. Exits non-zero on any failure.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"

step() { printf '\n==> %s\n' "$*"; }

step "installing test dependencies"
bash tests/deps.sh

step "formatting and lints"
cargo fmt --all --check
cargo clippy --workspace --all-targets --quiet -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --quiet
shellcheck tests/e2e/*.sh tests/bench/*.sh tests/*.sh deploy/*.sh .ci/run

step "unit and integration tests"
# The suite report starts empty here: the runner's and the pinger's
# integration tests record cases too (tests/suite-report.sh).
rm -f target/suite-report.tsv target/suite-production-node.txt
# The mesh page's browser test skips without chromium elsewhere; here
# tests/deps.sh installed it, so a missing one fails (docs/testing.md).
export COMBO_REQUIRE_CHROMIUM=1
# So does the chart's test without helm (tests/deps.sh installed it).
export COMBO_REQUIRE_HELM=1
cargo test  # default members: everything but the end-to-end crate

step "Prometheus alert rules and the Grafana dashboard"
bash tests/prometheus.sh

step "end-to-end tests on a real control plane"
dir=$(mktemp -d /tmp/kube-combo-e2e.XXXXXX)
real_dir=$(mktemp -d /tmp/kube-combo-real.XXXXXX)
# A cluster's directory (logs, etcd data, node state) goes once it is down:
# left behind, each run would keep about 2.5 GB in /tmp.
# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
    local d
    for d in "$dir" "$real_dir"; do
        tests/e2e/cluster.sh down "$d" >/dev/null 2>&1 && rm -rf --one-file-system "$d"
    done
    return 0
}
trap cleanup EXIT
# The debug build: `cargo test` above has built its dependencies already.
tests/e2e/cluster.sh up "$dir" --nodes 3 --debug
status=0
bash tests/e2e/second-cluster.sh "$dir" || status=$?
COMBO_E2E_DIR=$dir cargo test -p combo-e2e --no-fail-fast -- --test-threads 4 || status=$?
# 200 runners applying their DebuggerReports at once.
COMBO_E2E_DIR=$dir cargo test -p combo-runner --test cluster_writes -- --ignored || status=$?
tests/e2e/cluster.sh down "$dir"

step "end-to-end tests on real nodes (kubelet + containerd, the project's images)"
# The images' build is unoptimised here: it shares nothing with the host's
# build, and a debug compile takes half the time (docs/testing.md, "Real nodes").
KUBE_COMBO_IMAGE_PROFILE=${KUBE_COMBO_IMAGE_PROFILE:-dev} tests/e2e/cluster.sh up "$real_dir" --nodes 0 --real 2
COMBO_E2E_DIR=$real_dir cargo test -p combo-e2e --test real_nodes --no-fail-fast -- --test-threads 4 || status=$?
# kubectl combo mesh and its page in Chromium with a link cut between the real nodes.
COMBO_E2E_DIR=$real_dir cargo test -p combo-e2e --test mesh --no-fail-fast || status=$?
# kubectl combo run: one run besides the cron's, spec.runAt untouched, with the kubelet's pods.
COMBO_E2E_DIR=$real_dir cargo test -p combo-e2e --test run_now --no-fail-fast || status=$?
# Ownership, truthful status and stopping, again with the kubelet's pods.
COMBO_E2E_DIR=$real_dir cargo test -p combo-e2e --test truth --no-fail-fast -- --test-threads 4 || status=$?
# Node conditions, taints and missed runs with the kubelet's pods; it scales the operator to 0 and back.
COMBO_E2E_DIR=$real_dir cargo test -p combo-e2e --test node_conditions --no-fail-fast || status=$?
# The alerts through vmagent's Kubernetes discovery and vmalert, with the kubelet's pods.
COMBO_E2E_DIR=$real_dir cargo test -p combo-e2e --test vmagent --no-fail-fast || status=$?
# Faults injected into the machine and one node's namespaces, one at a time (docs/testing.md, "Fault matrix on real nodes").
COMBO_E2E_DIR=$real_dir cargo test -p combo-e2e --test real_faults --no-fail-fast -- --test-threads 1 || status=$?
# It stops the API server and etcd: alone, after the others (docs/testing.md, "Fault tests").
COMBO_E2E_DIR=$real_dir cargo test -p combo-e2e --test real_outage --no-fail-fast || status=$?
# Install, upgrade and uninstall from release artifacts alone; it removes the
# install the tests above made, so it runs after them (docs/testing.md).
KUBE_COMBO_IMAGE_PROFILE=${KUBE_COMBO_IMAGE_PROFILE:-dev} tests/e2e/upgrade.sh "$real_dir" || status=$?
# The chart through Helm: lint, template, package, install, upgrade from
# OCI, uninstall; it leaves nothing of kube-combo (docs/testing.md, "Helm").
tests/e2e/helm.sh "$real_dir" || status=$?
step "the quickstart, as a user runs it"
# It starts a cluster of its own: the real nodes' goes first.
tests/e2e/cluster.sh down "$real_dir"
KUBE_COMBO_IMAGE_PROFILE=${KUBE_COMBO_IMAGE_PROFILE:-dev} tests/e2e/quickstart.sh || status=$?
step "suite report"
bash tests/suite-report.sh
exit "$status"
