#!/bin/sh
# IP address conflicts: IPv6 addresses whose duplicate address detection
# failed (the dadfailed flag in /proc/net/if_inet6), and, when arping is in
# the image and the pod is in the node's network namespace, IPv4 addresses
# another host answers for (arping -D), up to 8 addresses at a time, each
# arping bounded by CHECK_COMMAND_TIMEOUT.
#
# Items: "dad:<interface>" per interface with IPv6 addresses, "ipv4:<address>"
# (skip "ipv4-conflict" without arping or the node's network).
# Environment:
#   NET_IGNORE_IFACES    interfaces to skip, shell globs (default in docs/checks.md)
#   NET_ARPING_TIMEOUT     seconds arping waits per address (default 1)
#   CHECK_COMMAND_TIMEOUT  seconds each arping may take in all (default 10)
set -u
# shellcheck source=SCRIPTDIR/../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

ignore=${NET_IGNORE_IFACES:-$DEFAULT_IGNORE_IFACES}
wait_s=${NET_ARPING_TIMEOUT:-1}
# Most arpings at a time: a node's addresses take about one wait, not one each.
parallel=8

inet6=$(net_proc if_inet6)
if [ -r "$inet6" ]; then
    # address ifindex prefixlen scope flags name; IFA_F_DADFAILED is 0x08.
    awk '{ print $6, $5, $1 }' "$inet6" | while read -r ifc flags addr; do
        matches_any "$ifc" "$ignore" && continue
        echo "$ifc $(( 0x$flags & 8 )) $addr"
    done | awk '
        { if (!($1 in seen)) { seen[$1] = 1; order[++n] = $1 } if ($2 != 0) bad[$1] = bad[$1] " " $3 }
        END {
            for (i = 1; i <= n; i++) {
                x = order[i]
                if (x in bad) printf "err dad:%s IPv6 duplicate address detection failed for%s (another host uses it)\n", x, bad[x]
                else print "ok dad:" x
            }
        }'
fi

if ! command -v arping >/dev/null 2>&1; then
    skip ipv4-conflict "arping is not in the runner image (Debian package iputils-arping)"
    exit 0
fi
if ! host_net; then
    skip ipv4-conflict "not in the node's network namespace (needs hostNetwork)"
    exit 0
fi
# dad IFACE ADDR: the ipv4 item of ADDR.
dad() {
    # -D: duplicate address detection; exit 0 when nobody answered.
    bounded arping -D -q -c 2 -w "$wait_s" -I "$1" "$2" >/dev/null 2>&1
    _code=$?
    # In that mode arping exits 1 when a reply came, 2 when it could not
    # probe at all (no raw socket: the pod lacks CAP_NET_RAW).
    if [ "$_code" -eq 0 ]; then
        echo "ok ipv4:$2"
    elif [ "$_code" -eq 1 ]; then
        echo "err ipv4:$2 another host answers ARP for $2 on $1 (address conflict)"
    elif timed_out "$_code"; then
        skip "ipv4:$2" "$(limit_why arping) on $1"
    else
        skip "ipv4:$2" "arping could not probe on $1 (exit $_code; it needs a raw socket: enableSys, or CAP_NET_RAW)"
    fi
}
bounded ip -4 -o addr show scope global 2>/dev/null | awk '{ sub(/\/.*/, "", $4); print $2, $4 }' |
    {
        n=0
        while read -r ifc addr; do
            matches_any "$ifc" "$ignore" && continue
            dad "$ifc" "$addr" &
            n=$((n + 1))
            if [ "$n" -ge "$parallel" ]; then
                wait
                n=0
            fi
        done
        wait
    }
