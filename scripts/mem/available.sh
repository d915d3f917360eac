#!/bin/sh
# Available memory of the node.
#
# Items: "available".
# Environment:
#   MEM_AVAILABLE_MIN_PERCENT  lowest healthy MemAvailable in percent of MemTotal (default 10)
set -u
# shellcheck source=SCRIPTDIR/../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

min=${MEM_AVAILABLE_MIN_PERCENT:-10}
info="$HR/proc/meminfo"
read -r total avail <<EOF
$(awk '$1 == "MemTotal:" { t = $2 } $1 == "MemAvailable:" { a = $2 } END { print t + 0, a + 0 }' "$info" 2>/dev/null)
EOF
total=${total:-0} avail=${avail:-0}
if [ "$total" -le 0 ]; then
    echo "err available cannot read MemTotal from $info"
elif [ $(( avail * 100 )) -lt $(( total * min )) ]; then
    echo "err available low memory: $(( avail / 1024 )) MiB of $(( total / 1024 )) MiB available ($(( avail * 100 / total ))%, limit ${min}%)"
else
    echo "ok available"
fi
