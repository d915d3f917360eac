#!/bin/sh
# Processes killed by the kernel's OOM killer since the previous run.
#
# Counts the increase of the oom_kill counter of /proc/vmstat since the
# previous run (kept in STATE_DIR); without that counter (kernels before
# 4.13), the "Killed process" lines of the kernel log since the position the
# previous run reached. When the kernel log is readable, the message names the
# last killed process. The first run records the baseline and reports skip.
#
# Items: "oom-kills".
# Environment:
#   MEM_OOM_KILLS_MAX   highest healthy count of OOM kills since the previous run (default 0)
#   KERNEL_LOG_FILE     read this file (/dev/kmsg record format) instead of the kernel log
set -u
# shellcheck source=SCRIPTDIR/../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

max=${MEM_OOM_KILLS_MAX:-0}
kill_re='Killed process [0-9]+|Memory cgroup out of memory: Kill(ed)? process'

if ! state_ready; then
    skip oom-kills "$NO_STATE_REASON"
    exit 0
fi

new=$(klog_new)
klog=$?
last=""
if [ "$klog" -eq 0 ]; then
    last=$(printf '%s\n' "$new" | RE=$kill_re awk 'BEGIN { re = ENVIRON["RE"] }
        $0 ~ re { m = $0; sub(/^[0-9.]+ /, "", m); l = m; n++ }
        END { printf "%d %s", n, substr(l, 1, 160) }')
fi

counter=$(awk '$1 == "oom_kill" { print $2 }' "$HR/proc/vmstat" 2>/dev/null)
if [ -n "$counter" ]; then
    d=$(echo "oom_kill $counter" | delta oom)
    if [ $? -eq 10 ]; then
        skip oom-kills "$BASELINE_REASON"
        state_commit
        exit 0
    fi
    count=$(echo "$d" | awk '{ print $2 }')
elif [ "$klog" -eq 0 ]; then
    count=${last%% *}
else
    klog_skip "$klog" oom-kills
    exit 0
fi
detail=""
if [ -n "$last" ] && [ -n "${last#* }" ]; then
    detail=", last: ${last#* }"
fi
if [ "${count:-0}" -gt "$max" ]; then
    echo "err oom-kills $count OOM kill(s) since the previous run$detail"
else
    echo "ok oom-kills"
fi
state_commit
