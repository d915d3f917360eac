#!/bin/sh
# Error and drop counters of the node's network interfaces (since boot).
#
# Items: "counters:<interface>".
# Environment:
#   NET_ERRORS_MAX         highest healthy rx+tx error count (default 100)
#   NET_DROPS_MAX_PERCENT  highest healthy share of dropped packets in
#                          percent of all packets (default 1)
#   NET_IGNORE_IFACES      as in links.sh
set -u
# shellcheck source=SCRIPTDIR/../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

max_errors=${NET_ERRORS_MAX:-100}
max_drops=${NET_DROPS_MAX_PERCENT:-1}
ignore=${NET_IGNORE_IFACES:-lo veth* cali* tunl* docker* virbr* *_h *_c}

stat() {
    cat "$1/statistics/$2" 2>/dev/null || echo 0
}

for dir in "$HR"/sys/class/net/*; do
    [ -d "$dir/statistics" ] || continue
    ifc=${dir##*/}
    if matches_any "$ifc" "$ignore"; then
        continue
    fi
    errors=$(( $(stat "$dir" rx_errors) + $(stat "$dir" tx_errors) ))
    drops=$(( $(stat "$dir" rx_dropped) + $(stat "$dir" tx_dropped) ))
    packets=$(( $(stat "$dir" rx_packets) + $(stat "$dir" tx_packets) ))
    if [ "$errors" -gt "$max_errors" ]; then
        echo "err counters:$ifc $errors rx/tx errors (limit $max_errors)"
    elif [ "$packets" -gt 0 ] && [ $(( drops * 100 )) -gt $(( packets * max_drops )) ]; then
        echo "err counters:$ifc $drops of $packets packets dropped (limit ${max_drops}%)"
    else
        echo "ok counters:$ifc"
    fi
done
