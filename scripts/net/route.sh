#!/bin/sh
# A default route is present (IPv4 or IPv6).
#
# Items: "default-route".
set -u
# shellcheck source=SCRIPTDIR/../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

v4=$(host_proc net/route)
v6=$(host_proc net/ipv6_route)
if awk 'NR > 1 && $2 == "00000000" && $8 == "00000000" { found = 1 } END { exit !found }' "$v4" 2>/dev/null; then
    echo "ok default-route"
elif awk '$1 ~ /^0+$/ && $2 == "00" && $10 != "lo" { found = 1 } END { exit !found }' "$v6" 2>/dev/null; then
    echo "ok default-route"
else
    echo "err default-route no default route (IPv4 or IPv6)"
fi
