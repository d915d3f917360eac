#!/bin/sh
# Swap usage of the node. A node without swap is healthy.
#
# Items: "swap".
# Environment:
#   MEM_SWAP_MAX_PERCENT  highest healthy swap usage in percent (default 50)
set -u
# shellcheck source=SCRIPTDIR/../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

max=${MEM_SWAP_MAX_PERCENT:-50}
info="$HR/proc/meminfo"
read -r total free <<EOF
$(awk '$1 == "SwapTotal:" { t = $2 } $1 == "SwapFree:" { f = $2 } END { print t + 0, f + 0 }' "$info" 2>/dev/null)
EOF
total=${total:-0} free=${free:-0}
used=$(( total - free ))
if [ "$total" -gt 0 ] && [ $(( used * 100 )) -gt $(( total * max )) ]; then
    echo "err swap $(( used / 1024 )) MiB of $(( total / 1024 )) MiB swap used ($(( used * 100 / total ))%, limit ${max}%)"
else
    echo "ok swap"
fi
