#!/bin/sh
# Processes killed by the kernel's OOM killer.
#
# Counts "Killed process" lines of the kernel log in the last window; when
# the kernel log is not readable, the oom_kill counter of /proc/vmstat
# (since boot) is used instead.
#
# Items: "oom-kills".
# Environment:
#   MEM_OOM_KILLS_MAX       highest healthy count of OOM kills (default 0)
#   MEM_OOM_WINDOW_SECONDS  how far back the kernel log counts (default 3600)
set -u
# shellcheck source=SCRIPTDIR/../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

max=${MEM_OOM_KILLS_MAX:-0}
window=${MEM_OOM_WINDOW_SECONDS:-3600}

if log=$(kernel_log); then
    since=$(( $(uptime_seconds) - window ))
    set -- "$(printf '%s\n' "$log" | awk -v since="$since" '
        $1 + 0 >= since && /Out of memory|Memory cgroup out of memory|oom-kill:|Killed process/ && /Killed process/ {
            n++; m = $0; sub(/^[0-9.]+ /, "", m); last = m
        }
        END { printf "%d %s", n, substr(last, 1, 160) }')"
    count=${1%% *}
    last=${1#* }
    scope="in the last ${window}s"
else
    count=$(awk '$1 == "oom_kill" { print $2 }' "$HR/proc/vmstat" 2>/dev/null)
    count=${count:-0}
    last=""
    scope="since boot"
fi
if [ "$count" -gt "$max" ]; then
    echo "err oom-kills $count OOM kill(s) $scope${last:+, last: $last}"
else
    echo "ok oom-kills"
fi
