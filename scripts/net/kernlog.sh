#!/bin/sh
# Network problems in the kernel log since the previous run (the position is
# kept in STATE_DIR; the first run records it and reports skip):
#
#   unregister-netdevice  a network device that cannot be unregistered
#                         because references to it leak ("unregister_netdevice:
#                         waiting for <dev> to become free. Usage count = N")
#   conntrack-full        a full connection tracking table: "nf_conntrack:
#                         nf_conntrack: table full, dropping packet" (6.19 in
#                         a pod's namespace: "... table full in netns N,
#                         dropping packet"), or its expectation table (FTP,
#                         SIP helpers): "nf_conntrack: expectation table full"
#   tx-timeout:<iface>    an interface whose transmit queue stopped:
#                         - the kernel's watchdog, "NETDEV WATCHDOG: <iface>
#                           (<driver>): transmit queue N timed out[ N ms]"
#                           (up to 6.7, a WARN_ONCE: once per boot, later
#                           timeouts show only as the driver's line), from 6.8
#                           "<driver> <bus id> <iface>: NETDEV WATCHDOG: CPU:
#                           N: transmit queue N timed out N ms" every time;
#                         - the driver's own report, "<driver> <bus id>
#                           <iface>: ..." with: ixgbe "initiating reset due to
#                           tx timeout", "Detected Tx Unit Hang", "tx hang N
#                           detected on queue N"; i40e/ice "tx_timeout: ...",
#                           "tx_timeout recovery ..."; mlx5 and bnxt "TX
#                           timeout detected"; mlx5 and virtio_net "TX timeout
#                           on queue: ..."; ena "Transmit time out", "TX q N
#                           is paused for too long", "Found a Tx that wasn't
#                           completed on time", "TX hasn't completed", "The
#                           number of lost tx completions is above the
#                           threshold", "Lost TX completions are above the
#                           threshold"; e1000e "Detected Hardware Unit Hang",
#                           "Reset adapter unexpectedly"; igb's "Detected Tx
#                           Unit Hang" names only the device ("igb
#                           0000:02:00.0: "): its interface from
#                           /sys/bus/{pci,virtio}/devices/<id>/net, else the
#                           item is tx-timeout:<bus id>
#                         A driver's reset lines ("Reset adapter", "Trigger
#                         reset is on") are not counted: they follow any
#                         reset, and a transmit timeout has its own line.
#   neighbour-table-full  the ARP or NDP table overflowed ("neighbour:
#                         arp_cache: neighbor table overflow!"): addresses of
#                         peers are dropped (gc_thresh3 too low for the node)
#
# One transmit timeout prints several lines (watchdog, the driver's detail,
# per-packet lines): they count once. A watchdog line always counts; a
# driver's line counts unless a line of the same interface came at most 2 s
# before it (the same report; the watchdog fires at most once per
# watchdog_timeo, 5 s for most drivers).
#
# Items: "unregister-netdevice", "conntrack-full", "tx-timeout:<iface>" per
# interface over the limit, else "tx-timeouts"; "neighbour-table-full".
# Environment:
#   NET_UNREGISTER_MAX      highest healthy count of such lines (default 0)
#   NET_CONNTRACK_FULL_MAX  highest healthy count of such lines (default 0)
#   NET_TX_TIMEOUTS_MAX     highest healthy count of transmit timeouts per interface (default 0)
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
# The interface of each PCI or virtio device, "<bus id>=<iface>", for the
# driver lines that name only the device (no process: globs).
devs=""
for _n in "$HR"/sys/bus/pci/devices/*/net/* "$HR"/sys/bus/virtio/devices/*/net/*; do
    [ -e "$_n" ] || continue
    _d=${_n%/net/*}
    devs="$devs ${_d##*/}=${_n##*/}"
done
printf '%s\n' "$new" | DEVS=$devs awk '
    BEGIN {
        n = split(ENVIRON["DEVS"], w, " ")
        for (i = 1; i <= n; i++) {
            b = w[i]; sub(/=.*/, "", b)
            # A device with two interfaces names neither.
            v = (b in iface) ? "" : substr(w[i], length(b) + 2)
            iface[b] = v
        }
    }
    # subject(P): what the prefix P of a driver line names: the interface of
    # netdev_printk ("<driver> <bus id> <iface>", "<iface>"; a " (unregistered)"
    # state after it), or for dev_printk ("<driver> <bus id>") and an
    # unnamed device the interface of that bus id, else the bus id.
    function subject(p,   k, w, b) {
        sub(/ \((uninitialized|unregistering|unregistered|released|dummy|unknown)\)$/, "", p)
        b = sub(/ ?\(unnamed net_device\)$/, "", p)
        k = split(p, w, " ")
        if (k == 0) return "unknown"
        if (k == 2 || (b && k >= 2)) return (w[k] in iface) && iface[w[k]] != "" ? iface[w[k]] : w[k]
        if (b) return "unknown"
        return w[k]
    }
    # tx(IT, WATCHDOG): a transmit timeout line of interface IT; counts
    # unless it continues, within 2 s, a report of the same interface.
    function tx(it, watchdog,   t) {
        t = $1 + 0
        if (watchdog || !(it in at) || t - at[it] > 2) print "tx-timeout:" it, m
        at[it] = t
    }
    {
        m = $0; sub(/^[0-9.]+ /, "", m)
        # The caller id dmesg may show ("[ T1234] "), and the lines after the
        # first of a record (/dev/kmsg writes "\x0a" for them).
        sub(/^\[ *[CT][0-9]+\] /, "", m); sub(/\\x0a.*/, "", m)
    }
    m ~ /unregister_netdevice: waiting for / { print "unregister-netdevice", m; next }
    m ~ /_conntrack: (expectation )?table full/ { print "conntrack-full", m; next }
    m ~ /[Nn]eighbou?r table overflow/ { print "neighbour-table-full", m; next }
    m ~ /NETDEV WATCHDOG: [^ :]+ \(/ {
        d = substr(m, index(m, "NETDEV WATCHDOG: ") + 17); sub(/ .*/, "", d)
        tx(d, 1); next
    }
    index(m, ": NETDEV WATCHDOG: ") { tx(subject(substr(m, 1, index(m, ": NETDEV WATCHDOG: ") - 1)), 1); next }
    match(m, /: (Detected (Tx|Hardware) Unit Hang|Reset adapter unexpectedly|initiating reset due to tx timeout|tx hang [0-9]+ detected on queue|tx_timeout(:| recovery)|TX timeout (detected|on queue|on invalid queue)|Transmit time out|TX q [0-9]+ is paused for too long|Found a Tx that wasn.t completed on time|TX hasn.t completed|The number of lost tx completions is above|Lost TX completions are above)/) {
        tx(subject(substr(m, 1, RSTART - 1)), 0)
    }
    ' | klog_tally \
    unregister-netdevice unregister-netdevice "${NET_UNREGISTER_MAX:-0}" 'unregister_netdevice' \
    conntrack-full conntrack-full "${NET_CONNTRACK_FULL_MAX:-0}" 'conntrack table full' \
    tx-timeout tx-timeouts "${NET_TX_TIMEOUTS_MAX:-0}" 'transmit timeout' \
    neighbour-table-full neighbour-table-full "${NET_NEIGHBOUR_FULL_MAX:-0}" 'neighbour table overflow'
state_commit
