#!/bin/sh
# MTU consistency: the node's physical interfaces (and bonds) that are up
# all have the same MTU, the one most of them have, or NET_EXPECTED_MTU.
#
# Items: "mtu:<interface>"; "mtu" (skip) when no interface qualifies.
# Environment:
#   NET_EXPECTED_MTU   the MTU every interface must have (default: the most common one)
#   NET_MTU_IFACES     interfaces compared, shell globs (default: the physical
#                      interfaces and bonds that are up)
#   NET_IGNORE_IFACES  interfaces to skip, shell globs (default in docs/checks.md)
set -u
# shellcheck source=SCRIPTDIR/../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

expected=${NET_EXPECTED_MTU:-}
only=${NET_MTU_IFACES:-}
ignore=${NET_IGNORE_IFACES:-$DEFAULT_IGNORE_IFACES}

list=""
for ifc in $(ifaces_up "$ignore"); do
    if [ -n "$only" ]; then
        matches_any "$ifc" "$only" || continue
    elif ! physical "$ifc" && [ ! -d "$HR/sys/class/net/$ifc/bonding" ]; then
        continue
    fi
    list="$list$ifc $(cat "$HR/sys/class/net/$ifc/mtu" 2>/dev/null || echo 0)
"
done
if [ -z "$list" ]; then
    skip mtu "no physical interface up in this network namespace (the node's needs hostNetwork)"
    exit 0
fi
printf '%s' "$list" | awk -v want="$expected" '
    { name[NR] = $1; mtu[NR] = $2; n[$2]++ }
    END {
        if (want == "") for (m in n) if (n[m] > n[want] || (n[m] == n[want] && m + 0 > want + 0)) want = m
        for (i = 1; i <= NR; i++) {
            if (mtu[i] == want) print "ok mtu:" name[i]
            else printf "err mtu:%s MTU %s, expected %s (%s)\n", name[i], mtu[i], want,
                (ENVIRON["NET_EXPECTED_MTU"] != "" ? "NET_EXPECTED_MTU" : "the MTU of most interfaces")
        }
    }'
