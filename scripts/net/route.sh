#!/bin/sh
# A default route is present (IPv4 or IPv6) in the node's network namespace:
# this process's with hostNetwork (COMBO_HOST_NETWORK=true), else PID 1's
# (the host's with enableSys).
#
# Items: "default-route".
set -u
# shellcheck source=SCRIPTDIR/../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

v4=$(net_proc route)
v6=$(net_proc ipv6_route)
if awk 'NR > 1 && $2 == "00000000" && $8 == "00000000" { found = 1 } END { exit !found }' "$v4" 2>/dev/null; then
    echo "ok default-route"
elif awk '$1 ~ /^0+$/ && $2 == "00" && $10 != "lo" { found = 1 } END { exit !found }' "$v6" 2>/dev/null; then
    echo "ok default-route"
else
    echo "err default-route no default route (IPv4 or IPv6)"
fi
