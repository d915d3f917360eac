#!/usr/bin/env bash
# The main job on a fresh Debian machine (root): build kube-combo's images
# from deploy/docker/, start a local Kubernetes cluster of two real nodes
# (kubelet and containerd; tests/e2e/cluster.sh) that pull them from a local
# registry, install the operator with `kubectl apply -k` of an overlay of
# config/default pointing the images at that registry, run the README's
# own-cluster steps (the node sample alone), add the pinger with its
# sample, trigger an inspection run and print what it found (on these
# healthy nodes: no failed item). Then make one fault on real-1 (a loop
# filesystem filled past the disk usage check's limit), show it in the
# summary and its errlog (`kubectl combo errlog`, through kubectl exec),
# clear it, show the item green again, and remove the filesystem.
# The cluster keeps running; stop it with
# `tests/e2e/cluster.sh down "$KUBE_COMBO_QUICKSTART_DIR"`.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
dir=${KUBE_COMBO_QUICKSTART_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kube-combo/quickstart}
# The test cluster's network plan: $registry, the local registry.
# shellcheck source=tests/e2e/netplan.sh
. tests/e2e/netplan.sh
quiet() { grep -v '^Warning' || true; }

bash tests/deps.sh
tests/e2e/cluster.sh down "$dir" >/dev/null 2>&1 || true
tests/e2e/cluster.sh up "$dir" --nodes 0 --real 2
export KUBECONFIG=$dir/kubeconfig
# kubectl-combo, as shipped in the operator image.
export PATH=$dir/bin:$PATH

echo "==> installing kube-combo (kubectl apply -k of config/default with the images at $registry)"
mkdir -p "$dir/overlay"
{
    echo "resources:"
    echo "  - $(realpath --relative-to="$dir/overlay" "$repo/config/default")"
    echo "images:"
    for image in operator runner pinger; do
        printf '  - name: kube-combo/%s\n    newName: %s/kube-combo/%s\n    newTag: dev\n' "$image" "$registry" "$image"
    done
} >"$dir/overlay/kustomization.yaml"
kubectl apply -k "$dir/overlay" 2>&1 | quiet
kubectl -n kube-combo-system rollout status deployment/combo-operator --timeout=180s 2>&1 | quiet

echo "==> the README's own-cluster steps, as written: the node sample alone, a run, its summary"
kubectl label namespace default pod-security.kubernetes.io/enforce=privileged --overwrite 2>&1 | quiet
kubectl apply -f config/samples/debugger_daemonset.yaml 2>&1 | quiet
# Exit 1: the run had failed items (shown below); 4: not every node reported.
waited=0
kubectl combo run node-check -n default --wait || waited=$?
((waited <= 1)) || { echo "kubectl combo run --wait: exit $waited" >&2; exit 1; }
kubectl combo summary node-check -n default 2> >(quiet >&2)

echo "==> adding the pinger (config/samples/debugger_daemonset_mesh.yaml)"
kubectl apply -f config/samples/debugger_daemonset_mesh.yaml 2>&1 | quiet
kubectl -n default rollout status daemonset/node-check --timeout=180s 2>&1 | quiet
# One run now; the sample's schedule (spec.runAt) stays as it is.
kubectl combo run node-check -n default 2>&1 | quiet
run_at=$(kubectl get dbg node-check -n default -o jsonpath='{.metadata.annotations.kubecombo\.io/run-now}')

# Wait for this run, not one an earlier quickstart left in the status.
echo "==> waiting for the 2 nodes to finish the run of $run_at"
finished=false
for _ in $(seq 1 90); do
    got=$(kubectl get dbg node-check -n default \
        -o jsonpath='{.status.lastRunAt} {.status.completedNodes}' 2>/dev/null || true)
    read -r last done_nodes <<<"$got"
    if [[ ${last:-} == "$run_at" && ${done_nodes:-0} -ge 2 ]]; then
        finished=true
        break
    fi
    sleep 2
done
$finished || echo "the run of $run_at has not finished on both nodes after 3 minutes; showing what there is" >&2
echo "==> Debuggers"
kubectl get dbg -A 2>&1 | quiet
echo "==> failed items of the run (kubectl combo summary node-check; --all lists every item)"
# The table goes to stdout; what is not in it (no failed item, skipped
# items) to stderr.
kubectl combo summary node-check -n default 2> >(quiet >&2) | tee "$dir/summary.txt"
# The errlog of the first failed item (the row under the table's header),
# read through kubectl exec.
node='' category=''
if [[ $(head -n 1 "$dir/summary.txt") == NODE* ]]; then
    read -r node _ category _ < <(sed -n 2p "$dir/summary.txt") || true
fi
if [[ -n $category ]]; then
    echo "==> its errlog (kubectl combo errlog node-check --node $node --category $category)"
    kubectl combo errlog node-check -n default --node "$node" --category "$category" 2>&1 | quiet
else
    echo "==> no item failed, so no errlog was written; the runner's view of a node (kubectl exec):"
    pod=$(kubectl get pods -n default -l kubecombo.io/debugger=node-check -o jsonpath='{.items[0].metadata.name}')
    kubectl exec -n default "$pod" -c runner -- ls -l /scripts 2>&1 | quiet
fi

# The fault: a 16 MiB ext4 filesystem on a loop device, mounted at
# $fault_mount on the machine (the runners read the machine's mount table:
# with hostPID, /host/proc/1 is its PID 1, the nodes being processes of this
# machine) and in real-1's mount namespace (whose root is the runner's /host,
# so only real-1's df sees the filesystem; on real-2 the same path is a
# directory of the root filesystem), then filled to 95 %.
fault_mount=/mnt/kc-quickstart
fault_image=$dir/fault-disk.img
limit=90 # DISK_USAGE_MAX_PERCENT's default (docs/checks.md, scripts/disk/usage.sh)
in_real_1() { nsenter --mount="/proc/$(cat "$dir/pids/containerd-real-1.pid")/ns/mnt" -- "$@"; }
# Unmounted on real-1, then on the machine; the loop device detached and the
# image deleted. Also on exit, should the quickstart stop half-way.
remove_fault() {
    local dev
    if in_real_1 mountpoint -q "$fault_mount" 2>/dev/null; then
        in_real_1 umount "$fault_mount" || in_real_1 umount -l "$fault_mount"
    fi
    if mountpoint -q "$fault_mount" 2>/dev/null; then
        umount "$fault_mount" || umount -l "$fault_mount"
    fi
    for dev in $(losetup -n -O NAME -j "$fault_image" 2>/dev/null); do losetup -d "$dev"; done
    rm -f "$fault_image"
    rmdir "$fault_mount" 2>/dev/null || true
}
trap remove_fault EXIT
# The summary of the run `--wait` saw finish: the operator writes the status
# (which --wait reads) and the summary ConfigMap on paces of their own, up
# to 2 s apart, and the summary says STALE until it holds that run.
summary_of_run() { # [--all]
    local out
    for _ in $(seq 1 10); do
        out=$(kubectl combo summary node-check -n default "$@" 2>&1) || true
        grep -q '^STALE:' <<<"$out" || break
        sleep 1
    done
    printf '%s\n' "$out" | quiet
}
echo "==> a fault on real-1: a loop filesystem at $fault_mount filled past the disk usage check's limit ($limit %)"
truncate -s 16M "$fault_image"
mkfs.ext4 -q -F -m 0 "$fault_image"
fault_dev=$(losetup -f --show "$fault_image")
mkdir -p "$fault_mount"
mount "$fault_dev" "$fault_mount"
in_real_1 mount "$fault_dev" "$fault_mount"
read -r used avail < <(df -k --output=used,avail "$fault_mount" | tail -n 1)
dd if=/dev/zero of="$fault_mount/fill" bs=1k count=$(((used + avail) * 95 / 100 - used)) status=none
sync
df -h "$fault_mount"
waited=0
kubectl combo run node-check -n default --wait || waited=$?
((waited <= 1)) || { echo "kubectl combo run --wait: exit $waited" >&2; exit 1; }
((waited == 1)) || echo "the run found no failed item: the fault was not seen" >&2
summary_of_run
echo "==> its errlog (kubectl combo errlog node-check --node real-1 --category disk)"
kubectl combo errlog node-check -n default --node real-1 --category disk 2>&1 | quiet

echo "==> clearing it: $fault_mount/fill deleted, then a run"
rm -f "$fault_mount/fill"
sync
waited=0
kubectl combo run node-check -n default --wait || waited=$?
((waited <= 1)) || { echo "kubectl combo run --wait: exit $waited" >&2; exit 1; }
summary_of_run
echo "==> real-1's item $fault_mount (kubectl combo summary node-check --all)"
summary_of_run --all | awk -v m="$fault_mount" '/^NODE / || ($1 == "real-1" && $5 == m)'
remove_fault
if in_real_1 mountpoint -q "$fault_mount" 2>/dev/null || mountpoint -q "$fault_mount" 2>/dev/null ||
    [[ -n $(losetup -n -j "$fault_image" 2>/dev/null) ]]; then
    echo "the fault's filesystem is still there: $fault_mount, $fault_image" >&2
else
    echo "==> the fault removed: $fault_mount unmounted on real-1 and on the machine, its loop device detached, its image deleted"
fi

echo "==> InspectionFailed Events of the runners"
kubectl get events -n default --field-selector reason=InspectionFailed 2>&1 | quiet
echo "==> the pinger's metrics of one pod (combo_pinger_target_up), through the API server's proxy"
pod=$(kubectl get pods -n default -l kubecombo.io/debugger=node-check -o jsonpath='{.items[0].metadata.name}')
# The series appear after the pinger's first round (intervalSeconds, and a
# DNS or TCP probe up to timeoutMs): ask until they are there, for 60 s.
up=
for _ in $(seq 1 30); do
    kubectl get --raw "/api/v1/namespaces/default/pods/$pod:8080/proxy/metrics" 2>/dev/null >"$dir/metrics.txt" || true
    up=$(grep '^combo_pinger_target_up' "$dir/metrics.txt" || true)
    [[ -n $up ]] && break
    sleep 2
done
if [[ -n $up ]]; then
    echo "$up"
else
    echo "pod $pod serves no combo_pinger_target_up series after 60 s: its pinger has not finished a round" \
        "(kubectl logs -n default $pod -c pinger)" >&2
fi
echo "==> every path of the pingers over the last minutes, failing ones first (kubectl combo mesh node-check --all)"
kubectl combo mesh node-check -n default --all --html "$dir/mesh.html" 2>&1 | quiet
echo "its heat map, one page without external resources: $dir/mesh.html"
echo
echo "cluster state in $dir; stop it with: tests/e2e/cluster.sh down $dir"
echo "export KUBECONFIG=$dir/kubeconfig PATH=$dir/bin:\$PATH"
