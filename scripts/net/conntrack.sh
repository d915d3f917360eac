#!/bin/sh
# Connection tracking table usage of the node: nf_conntrack_count against
# nf_conntrack_max (a full table drops new connections).
#
# Items: "conntrack".
# Environment:
#   NET_CONNTRACK_MAX_PERCENT  highest healthy usage in percent (default 80)
set -u
# shellcheck source=SCRIPTDIR/../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

max=${NET_CONNTRACK_MAX_PERCENT:-80}
d="$HR/proc/sys/net/netfilter"

# The count is per network namespace: only the node's is the node's. The
# net sysctls of any /proc are those of the reader's namespace.
if ! host_net; then
    skip conntrack "not in the node's network namespace (needs hostNetwork)"
    exit 0
fi
if [ ! -r "$d/nf_conntrack_count" ] || [ ! -r "$d/nf_conntrack_max" ]; then
    skip conntrack "no $d/nf_conntrack_count (nf_conntrack not loaded)"
    exit 0
fi
count=$(cat "$d/nf_conntrack_count")
limit=$(cat "$d/nf_conntrack_max")
awk -v c="$count" -v m="$limit" -v max="$max" 'BEGIN {
    if (m + 0 <= 0) print "skip conntrack nf_conntrack_max is 0"
    else if (c * 100 > m * max) printf "err conntrack %d of %d conntrack entries used (%.0f%%, limit %s%%)\n", c, m, c * 100 / m, max
    else print "ok conntrack"
}'
