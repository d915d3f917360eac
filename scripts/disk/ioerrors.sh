#!/bin/sh
# I/O and filesystem errors in the kernel log.
#
# Items: "io:<device>" per device with errors, or "io-errors" when the log
# has no error; nothing when the kernel log is not readable.
# Environment:
#   DISK_IO_ERRORS_MAX      highest healthy count of error lines per device (default 0)
#   DISK_IO_WINDOW_SECONDS  only count errors this recent; 0 = since boot (default 0)
set -u
# shellcheck source=SCRIPTDIR/../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

max=${DISK_IO_ERRORS_MAX:-0}
window=${DISK_IO_WINDOW_SECONDS:-0}

if ! log=$(kernel_log); then
    echo "kernel log not readable: I/O error check skipped"
    exit 0
fi
since=0
if [ "$window" -gt 0 ]; then
    since=$(( $(uptime_seconds) - window ))
fi

printf '%s\n' "$log" | awk -v since="$since" -v max="$max" '
    $1 + 0 < since { next }
    /I\/O error|critical medium error|EXT4-fs error|XFS \(.*\): (metadata I\/O error|Corruption)|BTRFS error|remounting filesystem read-only|Remounting filesystem read-only/ {
        dev = "unknown"
        if (match($0, /dev [a-z0-9]+[a-z0-9]*/)) dev = substr($0, RSTART + 4, RLENGTH - 4)
        else if (match($0, /\((sd|nvme|vd|xvd|dm-|md|loop)[a-z0-9p-]*\)/)) dev = substr($0, RSTART + 1, RLENGTH - 2)
        else if (match($0, /device (sd|nvme|vd|xvd|dm-|md|loop)[a-z0-9p-]*/)) dev = substr($0, RSTART + 7, RLENGTH - 7)
        n[dev]++
        msg = $0; sub(/^[0-9.]+ /, "", msg)
        last[dev] = msg
    }
    END {
        bad = 0
        for (d in n) {
            if (n[d] > max) {
                m = last[d]
                if (length(m) > 160) m = substr(m, 1, 160) "..."
                printf "err io:%s %d I/O error line(s) in kernel log, last: %s\n", d, n[d], m
                bad = 1
            }
        }
        if (!bad) print "ok io-errors"
    }'
