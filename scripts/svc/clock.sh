#!/bin/sh
# Clock synchronisation of the node: the kernel's "synchronised" state as
# timedatectl shows it (NTPSynchronized, set by chrony, ntpd or
# systemd-timesyncd), else chronyc tracking (leap status and offset), else
# systemd-timesyncd's /run/systemd/timesync/synchronized. The node's tools
# are reached like systemd.sh reaches systemctl, each bounded by
# CHECK_COMMAND_TIMEOUT: one that hangs is passed over for the next, and
# named in the skip reason when none answers.
#
# Items: "clock-sync".
# Environment:
#   SVC_CLOCK_MAX_OFFSET_MS  highest healthy offset from NTP time that chronyc shows, ms (default 500)
#   CHECK_COMMAND_TIMEOUT    seconds each timedatectl or chronyc may take (default 10)
set -u
# shellcheck source=SCRIPTDIR/../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

max_ms=${SVC_CLOCK_MAX_OFFSET_MS:-500}

# host CMD...: the node's CMD, through PID 1's namespaces with enableSys,
# bounded.
host() {
    if [ -n "$HR" ]; then
        bounded nsenter --target 1 --mount --uts --ipc --net --pid -- "$@"
    elif [ -z "${POD_NAME:-}" ]; then
        bounded "$@"
    else
        return 127
    fi
}

# Commands the limit cut, for the skip reason.
hung=""
synced=$(host timedatectl show -p NTPSynchronized --value 2>/dev/null)
code=$?
if timed_out "$code"; then
    hung="; $(limit_why timedatectl)"
fi
case $synced in
    yes) echo "ok clock-sync"; exit 0 ;;
    no) echo "err clock-sync the clock is not synchronised (timedatectl: NTPSynchronized=no)"; exit 0 ;;
esac
tracking=$(host chronyc tracking 2>/dev/null)
code=$?
if timed_out "$code"; then
    hung="$hung; $(limit_why chronyc)"
fi
if [ "$code" -eq 0 ] && [ -n "$tracking" ]; then
    printf '%s\n' "$tracking" | awk -v max="$max_ms" '
        /^Leap status/ { v = $0; sub(/^[^:]*: */, "", v); leap = v }
        /^System time/ { off = $4 * 1000 }
        END {
            if (leap != "Normal") printf "err clock-sync chrony: leap status %s (not synchronised)\n", leap
            else if (off > max) printf "err clock-sync chrony: the clock is %.0f ms off NTP time (limit %s ms)\n", off, max
            else print "ok clock-sync"
        }'
    exit 0
fi
if [ -e "$HR/run/systemd/timesync/synchronized" ]; then
    echo "ok clock-sync"
    exit 0
fi
skip clock-sync "no timedatectl, chronyc or timesyncd state reachable on the node (needs enableSys and one of them)$hung"
