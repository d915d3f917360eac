#!/bin/sh
# Processes the kernel's OOM killer killed since the previous run, told
# apart by what ran out of memory.
#
# A container killed at its own memory limit is its workload's event, which
# the kubelet already reports (OOMKilled): the node is fine. The node's own
# OOMs are faults: a global OOM (the node ran out of memory:
# "oom-kill:constraint=CONSTRAINT_NONE,...,global_oom,..." and "Out of memory:
# Killed process ...", also a cpuset or memory policy constraint), or an OOM
# at the limit of a cgroup that is not a pod's (system.slice, the kubelet's,
# the container runtime's: "oom-kill:constraint=CONSTRAINT_MEMCG,...,
# oom_memcg=/system.slice/containerd.service,..."), or at the limit of the
# cgroup that holds all pods or a QoS class of them: the pods together
# reached the memory the node allots them (node allocatable), a node-level
# signal even though no single container was over its own limit
# ("oom_memcg=/kubepods.slice", "/kubepods.slice/kubepods-burstable.slice",
# cgroupfs's "/kubepods", "/kubepods/besteffort"; cgroup v1 and v2 alike).
# These are the node's wherever the kubelet's --cgroup-root puts them, even
# when MEM_OOM_POD_CGROUPS lists them. A cgroup is a pod's when it is one of
# MEM_OOM_POD_CGROUPS or under one, and not one of those: a pod's own
# cgroup ("/kubepods/burstable/pod<uid>", "/kubepods.slice/
# kubepods-burstable.slice/kubepods-burstable-pod<uid>.slice", a Guaranteed
# pod's "/kubepods/pod<uid>"), at the pod's own limit, or a container's
# under it; and containerd's "/k8s.io/<id>", where its
# Kubernetes containers go when the kubelet runs without pod cgroups
# (cgroupsPerQOS false).
#
# How many: the increase of the oom_kill counter of /proc/vmstat since the
# previous run (kept in STATE_DIR); without that counter (kernels before
# 4.13), the "Killed process" lines of the kernel log. Which kind: the kernel
# log since the position the previous run reached: each "Killed process N
# (comm)" line ("Memory cgroup out of memory: " or "Out of memory: " before
# it on kernels since 5.x) with the "oom-kill:" summary the kernel prints
# before it (5.0 and later: constraint, oom_memcg, task_memcg), or on older
# kernels "Memory cgroup out of memory: Kill process ..." and "Task in <cgroup>
# killed as a result of limit of <cgroup>". A memory cgroup kill whose
# summary the kernel left out (it rate-limits them to 10 in 5 s, so only a
# burst lacks them) counts as a pod's.
#
# Kills the counter shows but the kernel log does not (the log is not
# readable, or lost them) are of unknown kind and count as the node's, the
# message saying so: a node OOM is never hidden.
#
# The first run records the baseline and reports skip.
#
# Items: "oom-kills": err with the node's own kills over the limit, naming
# the last process, its kind and cgroup (for the pods' cgroup: "node
# allocatable"); ok otherwise, the ok line noting the containers killed at
# their own limit (the runner shows only the item).
# Environment:
#   MEM_OOM_KILLS_MAX    highest healthy count of the node's own OOM kills since the previous run (default 0)
#   MEM_OOM_POD_CGROUPS  the memory cgroups of pods, as the kernel log writes them (default "/kubepods /kubepods.slice /k8s.io")
#   KERNEL_LOG_FILE      read this file (/dev/kmsg records or dmesg text) instead of the kernel log
set -u
# shellcheck source=SCRIPTDIR/../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

max=${MEM_OOM_KILLS_MAX:-0}

if ! state_ready; then
    skip oom-kills "$NO_STATE_REASON"
    exit 0
fi

new=$(klog_new)
klog=$?
# "<node kills> <pod kills> <last node kill><tab><last pod kill>"
kinds=$(printf '0 0 \t')
if [ "$klog" -eq 0 ]; then
    kinds=$(printf '%s\n' "$new" | PODS=${MEM_OOM_POD_CGROUPS:-/kubepods /kubepods.slice /k8s.io} awk '
        BEGIN { np = split(ENVIRON["PODS"], pods, " ") }
        # pods_root(CG): the root of the pods'"'"' cgroups CG is under, or "".
        function pods_root(cg,   i) {
            for (i = 1; i <= np; i++) if (cg == pods[i] || index(cg, pods[i] "/") == 1) return pods[i]
            return ""
        }
        # shared(CG): whether CG is the kubelet'"'"'s cgroup of all pods
        # ("kubepods", "kubepods.slice", under --cgroup-root; its limit is the
        # node'"'"'s allocatable memory) or of a QoS class under it
        # ("kubepods/burstable", "kubepods.slice/kubepods-besteffort.slice"):
        # many pods'"'"', not one pod'"'"'s.
        function shared(cg) {
            return cg ~ /(^|\/)kubepods(\.slice)?$/ || cg ~ /(^|\/)kubepods(\.slice)?\/(kubepods-)?(burstable|besteffort)(\.slice)?$/
        }
        # field(S, KEY): the value of KEY in a "k=v,k=v" summary.
        function field(s, key,   v) {
            if (!match(s, "(^|,)" key "=[^,]*")) return ""
            v = substr(s, RSTART, RLENGTH)
            sub(/^,?[^=]*=/, "", v)
            return v
        }
        { m = $0; sub(/^[0-9.]+ /, "", m) }
        # The summary of the kill that follows (4.19 and later).
        index(m, "oom-kill:constraint=") {
            s = substr(m, index(m, "oom-kill:") + 9)
            con = field(s, "constraint")
            ckind = con == "CONSTRAINT_MEMCG" ? "memcg" : "global"
            cmemcg = field(s, "oom_memcg"); ctask = field(s, "task_memcg")
            fresh = 1; group = ""
            next
        }
        # The same before 4.19 (cgroup v1 only), for a memory cgroup OOM.
        match(m, / killed as a result of limit of /) && m ~ /^Task in / {
            cmemcg = substr(m, RSTART + RLENGTH)
            ctask = substr(m, 9, RSTART - 9)
            ckind = "memcg"; con = ""; fresh = 1; group = ""
            next
        }
        # memory.oom.group: every task of the cgroup is killed.
        match(m, /^Tasks in [^ ]+ are going to be killed/) {
            group = substr(m, 10); sub(/ .*/, "", group)
            next
        }
        # The choice before the kill, on kernels before 5.x.
        m ~ /(Memory cgroup out of memory|Out of memory[^:]*): Kill process [0-9]+/ {
            pkind = m ~ /Memory cgroup out of memory/ ? "memcg" : "global"
            next
        }
        match(m, /Killed process [0-9]+ \([^)]*\)/) {
            v = substr(m, RSTART + 15, RLENGTH - 15)
            pre = substr(m, 1, RSTART - 1)
            pid = v; sub(/ .*/, "", pid)
            comm = v; sub(/^[0-9]+ \(/, "", comm); sub(/\)$/, "", comm)
            if (pre ~ /Memory cgroup out of memory/) kind = "memcg"
            else if (pre ~ /Out of memory/) kind = "global"
            else if (pkind != "") kind = pkind
            else if (fresh) kind = ckind
            else kind = ""
            cg = ""; tcg = ""; c = ""
            if (fresh && ckind == kind) { cg = cmemcg; tcg = ctask; c = con }
            if (group != "" && kind == "memcg") cg = group
            who = comm " (pid " pid ")"
            if (kind == "memcg" && (cg == "" || (!shared(cg) && pods_root(cg) != ""))) {
                pods_n++
                lastpod = who (cg == "" ? "" : " in " cg)
            } else {
                node_n++
                if (kind == "memcg" && cg ~ /kubepods(\.slice)?$/) lastnode = who " at the memory limit of " cg ", the cgroup of all pods: the pods together used the memory the node allots them (node allocatable)"
                else if (kind == "memcg" && shared(cg)) lastnode = who " at the memory limit of " cg ", the cgroup of a QoS class: its pods together used the memory allotted to them"
                else if (kind == "memcg") lastnode = who " at the memory limit of cgroup " cg
                else if (kind == "global" && c != "" && c != "CONSTRAINT_NONE") lastnode = who " out of memory in its " (c == "CONSTRAINT_CPUSET" ? "cpuset" : "memory policy") " (" c ")"
                else if (kind == "global") lastnode = who " in a global OOM (the node ran out of memory)" (tcg == "" ? "" : ", task cgroup " tcg)
                else lastnode = who ", kind not logged"
            }
            fresh = 0; pkind = ""
        }
        END { printf "%d %d %s\t%s\n", node_n, pods_n, substr(lastnode, 1, 200), substr(lastpod, 1, 200) }')
fi
tab=$(printf '\t')
node_log=${kinds%% *}
rest=${kinds#* }
pod_log=${rest%% *}
rest=${rest#* }
last_node=${rest%%"$tab"*}
last_pod=${rest#*"$tab"}

counter=$(awk '$1 == "oom_kill" { print $2 }' "$HR/proc/vmstat" 2>/dev/null)
if [ -n "$counter" ]; then
    d=$(echo "oom_kill $counter" | delta oom)
    if [ $? -eq 10 ]; then
        skip oom-kills "$BASELINE_REASON"
        state_commit
        exit 0
    fi
    total=$(echo "$d" | awk '{ print $2 }')
elif [ "$klog" -eq 0 ]; then
    total=$((node_log + pod_log))
else
    klog_skip "$klog" oom-kills
    exit 0
fi
unknown=$((total - node_log - pod_log))
[ "$unknown" -gt 0 ] || unknown=0
node=$((node_log + unknown))

msg=""
if [ "$node_log" -gt 0 ]; then
    msg="$node_log OOM kill(s) since the previous run not at a container's own memory limit, last: $last_node"
fi
if [ "$unknown" -gt 0 ]; then
    case $klog in
        0) why="not in the kernel log (/proc/vmstat counts them), so their kind is unknown" ;;
        10) why="of unknown kind: the kernel log is read from this run on" ;;
        *) why="of unknown kind: the kernel log is not readable" ;;
    esac
    msg="${msg:+$msg; and }$unknown OOM kill(s) since the previous run $why"
fi
note=""
if [ "$pod_log" -gt 0 ]; then
    note="$pod_log container(s) killed at their own memory limit since the previous run (the kubelet reports them as OOMKilled), last: $last_pod"
fi
if [ "$node" -gt "$max" ]; then
    echo "err oom-kills $msg${note:+; also $note}"
else
    line="ok oom-kills"
    [ -z "$msg" ] || line="$line $msg (limit $max)"
    [ -z "$note" ] || line="$line${msg:+;} $note"
    echo "$line"
fi
state_commit
