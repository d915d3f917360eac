#!/bin/sh
# Network problems in the kernel log since the previous run (the position is
# kept in STATE_DIR; the first run records it and reports skip):
#
#   unregister-netdevice  a network device that cannot be unregistered
#                         because references to it leak ("unregister_netdevice:
#                         waiting for <dev> to become free")
#   conntrack-full        a full connection tracking table ("nf_conntrack:
#                         table full, dropping packet")
#   tx-timeout:<iface>    an interface whose transmit queue stopped: the
#                         kernel's "NETDEV WATCHDOG: <iface> (<driver>):
#                         transmit queue N timed out" (newer kernels: "<driver>
#                         <bus id> <iface>: NETDEV WATCHDOG: CPU: N: transmit
#                         queue N timed out"), a driver's "Detected Tx Unit
#                         Hang" or "Detected Hardware Unit Hang"
#   neighbour-table-full  the ARP or NDP table overflowed ("neighbour:
#                         arp_cache: neighbor table overflow!"): addresses of
#                         peers are dropped (gc_thresh3 too low for the node)
#
# Items: "unregister-netdevice", "conntrack-full", "tx-timeout:<iface>" per
# interface over the limit, else "tx-timeouts"; "neighbour-table-full".
# Environment:
#   NET_UNREGISTER_MAX      highest healthy count of such lines (default 0)
#   NET_CONNTRACK_FULL_MAX  highest healthy count of such lines (default 0)
#   NET_TX_TIMEOUTS_MAX     highest healthy count of transmit timeout lines per interface (default 0)
#   NET_NEIGHBOUR_FULL_MAX  highest healthy count of neighbour table overflow lines (default 0)
#   KERNEL_LOG_FILE         read this file (/dev/kmsg record format) instead of the kernel log
set -u
# shellcheck source=SCRIPTDIR/../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

new=$(klog_new)
code=$?
if [ "$code" -ne 0 ]; then
    klog_skip "$code" unregister-netdevice conntrack-full tx-timeouts neighbour-table-full
    exit 0
fi
printf '%s\n' "$new" | awk '
    # iface_before(S): the interface a driver message names, the last word
    # before S ("ixgbe 0000:01:00.0 eth0: NETDEV WATCHDOG: ...").
    function iface_before(s,   p, n, w) {
        p = substr(m, 1, index(m, s) - 1)
        n = split(p, w, " ")
        p = w[n]; sub(/:$/, "", p)
        return p == "" ? "unknown" : p
    }
    { m = $0; sub(/^[0-9.]+ /, "", m) }
    m ~ /unregister_netdevice: waiting for/ { print "unregister-netdevice", m; next }
    m ~ /nf_conntrack: table full, dropping packet/ { print "conntrack-full", m; next }
    m ~ /NETDEV WATCHDOG: [^ :]+ \(/ {
        d = substr(m, index(m, "NETDEV WATCHDOG: ") + 17); sub(/ .*/, "", d)
        print "tx-timeout:" d, m; next
    }
    index(m, ": NETDEV WATCHDOG: ") { print "tx-timeout:" iface_before(": NETDEV WATCHDOG: "), m; next }
    m ~ /: Detected (Tx|Hardware) Unit Hang/ {
        s = index(m, ": Detected Tx Unit Hang") ? ": Detected Tx Unit Hang" : ": Detected Hardware Unit Hang"
        print "tx-timeout:" iface_before(s), m; next
    }
    m ~ /[Nn]eighbou?r table overflow/ { print "neighbour-table-full", m }
    ' | klog_tally \
    unregister-netdevice unregister-netdevice "${NET_UNREGISTER_MAX:-0}" 'unregister_netdevice' \
    conntrack-full conntrack-full "${NET_CONNTRACK_FULL_MAX:-0}" 'conntrack table full' \
    tx-timeout tx-timeouts "${NET_TX_TIMEOUTS_MAX:-0}" 'transmit timeout' \
    neighbour-table-full neighbour-table-full "${NET_NEIGHBOUR_FULL_MAX:-0}" 'neighbour table overflow'
state_commit
