#!/usr/bin/env bash
# Bytes the TCP connections of process PID have received (tcp_info
# bytes_received through ss): for a pinger, the API server's answers, its
# watches included, with TLS and HTTP framing. Needs root to see other
# processes' sockets.
#
#   tests/bench/tcp-received.sh PID
set -euo pipefail
pid=${1:?pid}
ss -tinpH 2>/dev/null | awk -v p="pid=$pid," '
    /^[A-Z]/ { mine = index($0, p) > 0; next }
    mine { for (i = 1; i <= NF; i++) if ($i ~ /^bytes_received:/) { split($i, a, ":"); s += a[2] } }
    END { print s + 0 }'
