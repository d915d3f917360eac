#!/bin/sh
# Network problems in the kernel log since the previous run (the position is
# kept in STATE_DIR; the first run records it and reports skip): a network
# device that cannot be unregistered because references to it leak
# ("unregister_netdevice: waiting for <dev> to become free"), and a full
# connection tracking table ("nf_conntrack: table full, dropping packet").
#
# Items: "unregister-netdevice", "conntrack-full".
# Environment:
#   NET_UNREGISTER_MAX      highest healthy count of such lines (default 0)
#   NET_CONNTRACK_FULL_MAX  highest healthy count of such lines (default 0)
#   KERNEL_LOG_FILE         read this file (/dev/kmsg record format) instead of the kernel log
set -u
# shellcheck source=SCRIPTDIR/../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

new=$(klog_new)
code=$?
if [ "$code" -ne 0 ]; then
    klog_skip "$code" unregister-netdevice conntrack-full
    exit 0
fi
printf '%s\n' "$new" | klog_count unregister-netdevice "${NET_UNREGISTER_MAX:-0}" \
    'unregister_netdevice: waiting for' 'unregister_netdevice'
printf '%s\n' "$new" | klog_count conntrack-full "${NET_CONNTRACK_FULL_MAX:-0}" \
    'nf_conntrack: table full, dropping packet' 'conntrack table full'
state_commit
