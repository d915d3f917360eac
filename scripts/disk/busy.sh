#!/bin/sh
# How busy each disk was since the previous run, from /proc/diskstats: the
# share of the time it had I/O in flight (io_ticks), and the average time an
# I/O took (await). The counters are kept in STATE_DIR; the first run records
# them and reports skip.
#
# Items: "busy:<disk>", "await:<disk>" (whole disks, not partitions).
# Environment:
#   DISK_BUSY_MAX_PERCENT  highest healthy share of time busy (default 90)
#   DISK_AWAIT_MAX_MS      highest healthy average milliseconds per I/O (default 500)
#   DISK_AWAIT_MIN_IOS     fewer I/Os than this since the previous run leave await ok (default 100)
#   DISK_DEVICES           disks checked, shell globs (default "sd* nvme* vd* xvd* hd* mmcblk*")
set -u
# shellcheck source=SCRIPTDIR/../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

busy_max=${DISK_BUSY_MAX_PERCENT:-90}
await_max=${DISK_AWAIT_MAX_MS:-500}
await_min=${DISK_AWAIT_MIN_IOS:-100}
devices=${DISK_DEVICES:-sd* nvme* vd* xvd* hd* mmcblk*}

current=$(awk '{ print $3, $4 + $8, $7 + $11, $13 }' "$HR/proc/diskstats" 2>/dev/null |
    while read -r dev ios wait ticks; do
        [ -d "$HR/sys/block/$dev" ] || continue   # partitions are not under /sys/block
        matches_any "$dev" "$devices" || continue
        echo "$dev.ios $ios"
        echo "$dev.wait $wait"
        echo "$dev.ticks $ticks"
    done)
disks=$(printf '%s\n' "$current" | sed -n 's/\.ios .*//p')
[ -n "$disks" ] || exit 0

if ! state_ready; then
    for d in $disks; do
        skip "busy:$d" "$NO_STATE_REASON"
        skip "await:$d" "$NO_STATE_REASON"
    done
    exit 0
fi
age=$(state_age diskstats)
deltas=$(printf '%s\n' "$current" | delta diskstats)
if [ $? -eq 10 ]; then
    for d in $disks; do
        skip "busy:$d" "$BASELINE_REASON"
        skip "await:$d" "$BASELINE_REASON"
    done
    exit 0
fi
printf '%s\n' "$deltas" | awk -v age="$age" -v busy_max="$busy_max" -v await_max="$await_max" -v await_min="$await_min" '
    { d = $1; sub(/\.[a-z]+$/, "", d); k = substr($1, length(d) + 2); v[d, k] = $2; if (!(d in seen)) { seen[d] = 1; order[++n] = d } }
    END {
        for (j = 1; j <= n; j++) {
            d = order[j]
            if (age + 0 <= 0) printf "skip busy:%s no time elapsed since the previous run\n", d
            else {
                b = v[d, "ticks"] / (age * 10)
                if (b > 100) b = 100
                if (b > busy_max) printf "err busy:%s busy %.0f%% of the %.0fs since the previous run (limit %s%%)\n", d, b, age, busy_max
                else print "ok busy:" d
            }
            ios = v[d, "ios"]
            if (ios >= await_min && ios > 0 && v[d, "wait"] / ios > await_max)
                printf "err await:%s %.0f ms per I/O on average over %d I/Os since the previous run (limit %s ms)\n", d, v[d, "wait"] / ios, ios, await_max
            else print "ok await:" d
        }
    }'
state_commit
