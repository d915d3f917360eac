#!/bin/sh
# Kernel problems in the kernel log since the previous run (the position is
# kept in STATE_DIR; the first run records it and reports skip): hung tasks
# ("blocked for more than N seconds"), soft and hard lockups, and oopses
# (Oops, kernel BUG, NULL pointer dereference, general protection fault,
# panic).
#
# Items: "hung-tasks", "soft-lockups", "oops".
# Environment:
#   SVC_HUNG_TASKS_MAX    highest healthy count of hung task lines (default 0)
#   SVC_SOFT_LOCKUPS_MAX  highest healthy count of lockup lines (default 0)
#   SVC_OOPS_MAX          highest healthy count of oops lines (default 0)
#   KERNEL_LOG_FILE       read this file (/dev/kmsg record format) instead of the kernel log
set -u
# shellcheck source=SCRIPTDIR/../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

new=$(klog_new)
code=$?
if [ "$code" -ne 0 ]; then
    klog_skip "$code" hung-tasks soft-lockups oops
    exit 0
fi
printf '%s\n' "$new" | klog_count hung-tasks "${SVC_HUNG_TASKS_MAX:-0}" \
    'blocked for more than [0-9]+ seconds' 'hung task'
printf '%s\n' "$new" | klog_count soft-lockups "${SVC_SOFT_LOCKUPS_MAX:-0}" \
    'BUG: soft lockup|hard LOCKUP' 'lockup'
printf '%s\n' "$new" | klog_count oops "${SVC_OOPS_MAX:-0}" \
    'Oops: |kernel BUG at|BUG: unable to handle|BUG: kernel NULL pointer dereference|general protection fault|Kernel panic' 'oops'
state_commit
