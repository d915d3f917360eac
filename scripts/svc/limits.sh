#!/bin/sh
# Kernel-wide limits: tasks (processes and threads) against pid_max, and
# open files against file-max.
#
# Items: "pids", "file-descriptors".
# Environment:
#   SVC_PIDS_MAX_PERCENT   highest healthy share of pid_max in use (default 80)
#   SVC_FILES_MAX_PERCENT  highest healthy share of file-max in use (default 80)
set -u
# shellcheck source=SCRIPTDIR/../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

pids_max=${SVC_PIDS_MAX_PERCENT:-80}
files_max=${SVC_FILES_MAX_PERCENT:-80}

# The 4th field of loadavg is "<runnable>/<tasks>", all tasks of the kernel.
tasks=$(awk '{ split($4, a, "/"); print a[2] }' "$HR/proc/loadavg" 2>/dev/null)
pid_max=$(cat "$HR/proc/sys/kernel/pid_max" 2>/dev/null)
threads_max=$(cat "$HR/proc/sys/kernel/threads-max" 2>/dev/null)
if [ -z "$tasks" ] || [ -z "$pid_max" ]; then
    skip pids "cannot read $HR/proc/loadavg or kernel/pid_max"
else
    awk -v t="$tasks" -v p="$pid_max" -v th="${threads_max:-0}" -v max="$pids_max" 'BEGIN {
        lim = p; what = "pid_max"
        if (th + 0 > 0 && th + 0 < lim + 0) { lim = th; what = "threads-max" }
        if (t * 100 > lim * max) printf "err pids %d tasks of %s %d (%.0f%%, limit %s%%)\n", t, what, lim, t * 100 / lim, max
        else print "ok pids"
    }'
fi

# Read whole: a sysctl file read byte by byte (the shell's read) ends early.
if nr=$(cat "$HR/proc/sys/fs/file-nr" 2>/dev/null) && [ -n "$nr" ]; then
    echo "$nr" | awk -v max="$files_max" '{
        u = $1; m = $3
        if (u * 100 > m * max) printf "err file-descriptors %d open files of file-max %.0f (%.0f%%, limit %s%%)\n", u, m, u * 100 / m, max
        else print "ok file-descriptors"
    }'
else
    skip file-descriptors "cannot read $HR/proc/sys/fs/file-nr"
fi
