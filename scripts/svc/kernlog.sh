#!/bin/sh
# Problems of the kernel itself and of the machine under it, in the kernel
# log since the previous run (the position is kept in STATE_DIR; the first
# run records it and reports skip):
#
#   hung-tasks       "INFO: task <comm>:<pid> blocked for more than N seconds"
#                    (any task: docker, umount.aufs, kworker, ...)
#   soft-lockups     "BUG: soft lockup", "hard LOCKUP", "BUG: workqueue lockup"
#   rcu-stalls       "rcu_sched self-detected stall on CPU", "rcu_preempt
#                    detected stalls on CPUs/tasks", expedited and tasks stalls
#   hardware-errors  "[Hardware Error]": machine checks (mce) and the
#                    firmware's (APEI/CPER) reports, corrected ones included
#   oops             the kernel's own crashes: "Oops:", a die() header
#                    ("general protection fault ...: 0000 [#1]", "divide
#                    error: 0000 [#1]", "invalid opcode: 0000 [#1]"),
#                    "kernel BUG at", "BUG: ..." (NULL pointer dereference,
#                    unable to handle page fault, ...), "Kernel panic - not
#                    syncing"
#
# A user-space process's crash is its own, not the kernel's: "traps: ..."
# lines and "<comm>[<pid>]: segfault at ..." count nowhere. Each line counts
# in one item at most.
#
# Items: "hung-tasks", "soft-lockups", "rcu-stalls", "hardware-errors", "oops".
# Environment:
#   SVC_HUNG_TASKS_MAX       highest healthy count of hung task lines (default 0)
#   SVC_SOFT_LOCKUPS_MAX     highest healthy count of lockup lines (default 0)
#   SVC_RCU_STALLS_MAX       highest healthy count of RCU stall lines (default 0)
#   SVC_HARDWARE_ERRORS_MAX  highest healthy count of "[Hardware Error]" lines (default 0)
#   SVC_OOPS_MAX             highest healthy count of oops lines (default 0)
#   KERNEL_LOG_FILE          read this file (/dev/kmsg record format) instead of the kernel log
set -u
# shellcheck source=SCRIPTDIR/../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

new=$(klog_new)
code=$?
if [ "$code" -ne 0 ]; then
    klog_skip "$code" hung-tasks soft-lockups rcu-stalls hardware-errors oops
    exit 0
fi
printf '%s\n' "$new" | awk '
    { m = $0; sub(/^[0-9.]+ /, "", m) }
    # A user-space process that crashed: the kernel reports it, it is not
    # the kernel failing.
    m ~ /^traps: / || m ~ /\[[0-9]+\]: segfault at / { next }
    m ~ /\[[0-9]+\].* ip:?[0-9a-f]+ sp:?[0-9a-f]+ error:?[0-9a-f]+/ { next }
    m ~ /blocked for more than [0-9]+ seconds/ { print "hung-tasks", m; next }
    m ~ /BUG: soft lockup|hard LOCKUP|BUG: workqueue lockup/ { print "soft-lockups", m; next }
    m ~ /rcu_[a-z_]+ (self-)?detected (expedited )?stalls? on/ { print "rcu-stalls", m; next }
    index(m, "[Hardware Error]") { print "hardware-errors", m; next }
    # The closing line of a panic repeats it.
    m ~ /^---\[ end / { next }
    m ~ /Oops: |: [0-9a-f]+ \[#[0-9]+\]|kernel BUG at |(^|[ :])BUG: |Kernel panic - not syncing|general protection fault/ {
        print "oops", m
    }' | klog_tally \
    hung-tasks hung-tasks "${SVC_HUNG_TASKS_MAX:-0}" 'hung task' \
    soft-lockups soft-lockups "${SVC_SOFT_LOCKUPS_MAX:-0}" 'lockup' \
    rcu-stalls rcu-stalls "${SVC_RCU_STALLS_MAX:-0}" 'RCU stall' \
    hardware-errors hardware-errors "${SVC_HARDWARE_ERRORS_MAX:-0}" 'hardware error' \
    oops oops "${SVC_OOPS_MAX:-0}" 'oops'
state_commit
