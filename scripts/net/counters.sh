#!/bin/sh
# Error and drop counters of the node's network interfaces since the
# previous run (the values are kept in STATE_DIR; the first run records them
# and reports skip).
#
# Items: "errors:<interface>" (rx+tx errors), "drops:<interface>" (rx+tx
# dropped packets: packet loss at the interface).
# Environment:
#   NET_ERRORS_MAX         highest healthy rx+tx error count since the previous run (default 10)
#   NET_DROPS_MAX_PERCENT  highest healthy share of dropped packets, in percent of
#                          the packets since the previous run (default 1)
#   NET_DROPS_MIN          fewer drops than this are healthy whatever their share (default 100)
#   NET_IGNORE_IFACES      interfaces to skip, shell globs (default: loopback,
#                          container, overlay and tunnel interfaces, see docs/checks.md)
set -u
# shellcheck source=SCRIPTDIR/../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

max_errors=${NET_ERRORS_MAX:-10}
max_drops=${NET_DROPS_MAX_PERCENT:-1}
min_drops=${NET_DROPS_MIN:-100}
ignore=${NET_IGNORE_IFACES:-$DEFAULT_IGNORE_IFACES}

stat() {
    cat "$1/statistics/$2" 2>/dev/null || echo 0
}

ifaces=""
current=$(for dir in "$HR"/sys/class/net/*; do
    [ -d "$dir/statistics" ] || continue
    ifc=${dir##*/}
    if matches_any "$ifc" "$ignore"; then
        continue
    fi
    echo "$ifc.errors $(( $(stat "$dir" rx_errors) + $(stat "$dir" tx_errors) ))"
    echo "$ifc.drops $(( $(stat "$dir" rx_dropped) + $(stat "$dir" tx_dropped) ))"
    echo "$ifc.packets $(( $(stat "$dir" rx_packets) + $(stat "$dir" tx_packets) ))"
done)
ifaces=$(printf '%s\n' "$current" | sed -n 's/\.errors .*//p')
[ -n "$ifaces" ] || exit 0

if ! state_ready; then
    for ifc in $ifaces; do
        skip "errors:$ifc" "$NO_STATE_REASON"
        skip "drops:$ifc" "$NO_STATE_REASON"
    done
    exit 0
fi
deltas=$(printf '%s\n' "$current" | delta counters)
if [ $? -eq 10 ]; then
    for ifc in $ifaces; do
        skip "errors:$ifc" "$BASELINE_REASON"
        skip "drops:$ifc" "$BASELINE_REASON"
    done
    exit 0
fi
printf '%s\n' "$deltas" | awk -v max_errors="$max_errors" -v max_drops="$max_drops" -v min_drops="$min_drops" '
    { i = $1; sub(/\.[a-z]+$/, "", i); k = substr($1, length(i) + 2); v[i, k] = $2; if (!(i in seen)) { seen[i] = 1; order[++n] = i } }
    END {
        for (j = 1; j <= n; j++) {
            i = order[j]
            e = v[i, "errors"]; d = v[i, "drops"]; p = v[i, "packets"]
            if (e > max_errors) printf "err errors:%s %d rx/tx errors since the previous run (limit %d)\n", i, e, max_errors
            else print "ok errors:" i
            if (d >= min_drops && d * 100 > (p + d) * max_drops)
                printf "err drops:%s %d packets dropped of %d since the previous run (%.1f%%, limit %s%%)\n", i, d, p + d, d * 100 / (p + d), max_drops
            else print "ok drops:" i
        }
    }'
state_commit
