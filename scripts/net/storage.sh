#!/bin/bash
# Storage network: each storage endpoint (iSCSI portal, Ceph monitor, NFS
# server...) accepts a TCP connection, within the latency limit. Only when
# NET_STORAGE_TARGETS lists them; ICMP loss and latency over time are the
# Pinger's (docs/pinger.md).
#
# Items: "storage:<host:port>".
# Environment:
#   NET_STORAGE_TARGETS   space-separated host:port endpoints (default none: no item)
#   NET_STORAGE_MAX_MS    highest healthy connect time in milliseconds (default 100)
#   NET_STORAGE_TIMEOUT   seconds per endpoint (default 3)
set -u
# shellcheck source=SCRIPTDIR/../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

targets=${NET_STORAGE_TARGETS:-}
max_ms=${NET_STORAGE_MAX_MS:-100}
limit=${NET_STORAGE_TIMEOUT:-3}

if [ -z "$targets" ]; then
    echo "no storage endpoint configured (NET_STORAGE_TARGETS)" >&2
    exit 0
fi
pids=()
for t in $targets; do
    (
        host=${t%:*} port=${t##*:}
        host=${host#[} host=${host%]}
        start=$(date +%s%N)
        # shellcheck disable=SC2016 # expanded by the inner bash, from its arguments
        if timeout "$limit" bash -c 'exec 3<>"/dev/tcp/$1/$2"' _ "$host" "$port" 2>/dev/null; then
            ms=$(( ($(date +%s%N) - start) / 1000000 ))
            if [ "$ms" -gt "$max_ms" ]; then
                echo "err storage:$t connected in $ms ms (limit $max_ms ms)"
            else
                echo "ok storage:$t"
            fi
        else
            echo "err storage:$t no TCP connection within ${limit}s"
        fi
    ) &
    pids+=("$!")
done
wait "${pids[@]}"
