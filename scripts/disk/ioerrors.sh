#!/bin/sh
# I/O and filesystem errors in the kernel log since the previous run.
#
# The kernel log is read from the position the previous run reached (kept in
# STATE_DIR): an error is reported by the first run after it was logged, and
# not again. The first run records the position and reports skip.
#
# Items: "io:<device>" per device with more I/O error lines than the limit,
# else "io-errors"; "fs:<device>" per device with filesystem errors (EXT4-fs
# error, XFS corruption or metadata I/O error, BTRFS error, a remount
# read-only), else "fs-errors".
# Environment:
#   DISK_IO_ERRORS_MAX   highest healthy count of I/O error lines per device (default 0)
#   DISK_FS_ERRORS_MAX   highest healthy count of filesystem error lines per device (default 0)
#   KERNEL_LOG_FILE      read this file (/dev/kmsg record format) instead of the kernel log
set -u
# shellcheck source=SCRIPTDIR/../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

io_max=${DISK_IO_ERRORS_MAX:-0}
fs_max=${DISK_FS_ERRORS_MAX:-0}

new=$(klog_new)
code=$?
if [ "$code" -ne 0 ]; then
    klog_skip "$code" io-errors fs-errors
    exit 0
fi

printf '%s\n' "$new" | awk -v io_max="$io_max" -v fs_max="$fs_max" '
    function device(   d) {
        if (match($0, /dev [a-z][a-z0-9]*/)) return substr($0, RSTART + 4, RLENGTH - 4)
        if (match($0, /\((sd|nvme|vd|xvd|hd|mmcblk|dm-|md|loop)[a-z0-9p-]*\)/)) return substr($0, RSTART + 1, RLENGTH - 2)
        if (match($0, /device (sd|nvme|vd|xvd|hd|mmcblk|dm-|md|loop)[a-z0-9p-]*/)) return substr($0, RSTART + 7, RLENGTH - 7)
        if (match($0, /\[(sd|nvme|vd|xvd|hd)[a-z0-9]*\]/)) return substr($0, RSTART + 1, RLENGTH - 2)
        return "unknown"
    }
    function keep(kind, d,   m) {
        m = $0; sub(/^[0-9.]+ /, "", m)
        if (length(m) > 160) m = substr(m, 1, 160) "..."
        n[kind, d]++; last[kind, d] = m; devs[kind, d] = d
    }
    /EXT4-fs error|EXT4-fs warning.*error|XFS \(.*\): (Corruption|metadata I\/O error|Metadata corruption)|BTRFS (error|critical)|[Rr]emounting filesystem read-only/ {
        keep("fs", device()); next
    }
    /I\/O error|critical medium error|Medium Error|Buffer I\/O error|critical target error/ { keep("io", device()) }
    END {
        for (k in n) {
            split(k, p, SUBSEP)
            max = p[1] == "io" ? io_max : fs_max
            if (n[k] > max) {
                what = p[1] == "io" ? "I/O error" : "filesystem error"
                printf "err %s:%s %d %s line(s) in the kernel log since the previous run, last: %s\n", p[1], p[2], n[k], what, last[k]
                bad[p[1]] = 1
            }
        }
        if (!bad["io"]) print "ok io-errors"
        if (!bad["fs"]) print "ok fs-errors"
    }'
state_commit
