#!/bin/sh
# Negotiated speed and duplex of the node's physical interfaces whose link
# is up (/sys/class/net/<interface>/speed and duplex). Virtual interfaces
# and drivers that report no speed (virtio) are skipped.
#
# Items: "speed:<interface>", "duplex:<interface>".
# Environment:
#   NET_SPEED_MIN_MBPS  lowest healthy speed in Mb/s; 0 turns the check off (default 1000)
#   NET_IGNORE_IFACES   interfaces to skip, shell globs (default in docs/checks.md)
set -u
# shellcheck source=SCRIPTDIR/../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

min=${NET_SPEED_MIN_MBPS:-1000}
ignore=${NET_IGNORE_IFACES:-$DEFAULT_IGNORE_IFACES}

for ifc in $(ifaces_up "$ignore"); do
    dir="$HR/sys/class/net/$ifc"
    [ "$(cat "$dir/operstate" 2>/dev/null)" = up ] || continue   # links.sh reports links down
    if ! physical "$ifc"; then
        if [ -z "$HR" ] && [ -n "${POD_NAME:-}" ] && ! host_net; then
            # The pod's own interfaces: the node's are out of sight.
            skip "speed:$ifc" "virtual interface: no negotiated speed (the pod's own; the node's interfaces need hostNetwork or enableSys)"
        else
            skip "speed:$ifc" "virtual interface: no negotiated speed"
        fi
        continue
    fi
    speed=$(cat "$dir/speed" 2>/dev/null)
    duplex=$(cat "$dir/duplex" 2>/dev/null)
    case $speed in
        '' | -* | *[!0-9]*) skip "speed:$ifc" "the driver reports no link speed (${speed:-unreadable})" ;;
        *) if [ "$speed" -lt "$min" ]; then
               echo "err speed:$ifc link negotiated at $speed Mb/s (lowest healthy ${min} Mb/s)"
           else
               echo "ok speed:$ifc"
           fi ;;
    esac
    case $duplex in
        full) echo "ok duplex:$ifc" ;;
        half) echo "err duplex:$ifc link negotiated half duplex" ;;
        *) skip "duplex:$ifc" "the driver reports no duplex (${duplex:-unreadable})" ;;
    esac
done
