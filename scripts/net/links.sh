#!/bin/sh
# Link state of the node's network interfaces: an interface that is
# administratively up must have its link up.
#
# Items: "<interface>".
# Environment:
#   NET_IGNORE_IFACES  interfaces to skip, shell globs
#                      (default "lo veth* cali* tunl* docker* virbr* *_h *_c")
set -u
# shellcheck source=SCRIPTDIR/../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

ignore=${NET_IGNORE_IFACES:-$DEFAULT_IGNORE_IFACES}

for dir in "$HR"/sys/class/net/*; do
    [ -e "$dir/operstate" ] || continue
    ifc=${dir##*/}
    if matches_any "$ifc" "$ignore"; then
        continue
    fi
    flags=$(cat "$dir/flags" 2>/dev/null || echo 0x0)
    state=$(cat "$dir/operstate" 2>/dev/null || echo unknown)
    if [ $(( flags & 1 )) -eq 0 ]; then
        echo "ok $ifc"   # administratively down: intended
        continue
    fi
    case $state in
        down | lowerlayerdown | notpresent)
            echo "err $ifc link $state (interface is up but has no carrier)" ;;
        *) echo "ok $ifc" ;;
    esac
done
