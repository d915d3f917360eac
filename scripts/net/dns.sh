#!/bin/bash
# The nameservers of resolv.conf are reachable: a TCP connection to their
# DNS port succeeds.
#
# Items: "nameserver:<address>".
# Environment:
#   NET_RESOLV_CONF    the file read (default $HOST_ROOT/etc/resolv.conf)
#   NET_DNS_PORT       the port tried (default 53)
#   NET_DNS_TIMEOUT    seconds per nameserver (default 2)
set -u
# shellcheck source=SCRIPTDIR/../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

conf=${NET_RESOLV_CONF:-$HR/etc/resolv.conf}
port=${NET_DNS_PORT:-53}
limit=${NET_DNS_TIMEOUT:-2}

if [ ! -r "$conf" ]; then
    echo "err nameservers cannot read $conf"
    exit 0
fi
servers=$(awk '$1 == "nameserver" && $2 != "" { print $2 }' "$conf")
if [ -z "$servers" ]; then
    echo "err nameservers no nameserver in $conf"
    exit 0
fi
pids=()
for ns in $servers; do
    # Check every server at once so that one black hole costs one timeout.
    (
        addr=${ns%%%*}   # drop an IPv6 zone
        # shellcheck disable=SC2016 # expanded by the inner bash, from its arguments
        if timeout "$limit" bash -c 'exec 3<>"/dev/tcp/$1/$2"' _ "$addr" "$port" 2>/dev/null; then
            echo "ok nameserver:$ns"
        else
            echo "err nameserver:$ns not reachable on tcp port $port within ${limit}s"
        fi
    ) &
    pids+=("$!")
done
wait "${pids[@]}"
