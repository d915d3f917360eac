//! The net scripts of `scripts/net` against fixture trees: links, the default
//! route, error counters, conntrack, MTU, speed, bonds and address conflicts.

mod support;

use support::scripts::{
    err, host_netns, iface, klog_append, ok, run, run_full, skipped, skipped_by, skips, up,
    Stateful, ROUTE_HEADER,
};
use support::Tree;

/// A physical interface: a device, an MTU, a speed and a duplex.
fn phys(t: &Tree, name: &str, mtu: u32, speed: &str, duplex: &str) {
    up(t, name, &[]);
    let base = format!("sys/class/net/{name}");
    t.file(&format!("{base}/device/vendor"), "0x8086\n", 0o644);
    t.file(&format!("{base}/mtu"), &format!("{mtu}\n"), 0o644);
    t.file(&format!("{base}/speed"), &format!("{speed}\n"), 0o644);
    t.file(&format!("{base}/duplex"), &format!("{duplex}\n"), 0o644);
}

#[test]
fn net_checks_pass_on_a_healthy_node() {
    let t = Tree::new("net-ok");
    up(
        &t,
        "eth0",
        &[
            ("rx_packets", 10000),
            ("tx_packets", 10000),
            ("rx_dropped", 10),
        ],
    );
    iface(&t, "eth9", "0x1002", "down", &[]);
    iface(&t, "lo", "0x9", "unknown", &[]);
    iface(&t, "veth12", "0x1003", "down", &[]);
    t.file(
        "proc/1/net/route",
        &format!("{ROUTE_HEADER}eth0\t00000000\t0100000A\t0003\t0\t0\t0\t00000000\t0\t0\t0\n"),
        0o644,
    );
    let links = run("net/links.sh", t.path(), &[]);
    assert_eq!(links.keys().collect::<Vec<_>>(), vec!["eth0", "eth9"]);
    assert!(links.values().all(Option::is_none), "{links:?}");
    ok(&run("net/route.sh", t.path(), &[]), "default-route");
}

#[test]
fn net_checks_find_down_links_and_a_missing_default_route() {
    let t = Tree::new("net-bad");
    up(
        &t,
        "eth0",
        &[
            ("rx_errors", 400),
            ("tx_errors", 200),
            ("rx_packets", 100000),
        ],
    );
    iface(
        &t,
        "eth1",
        "0x1003",
        "down",
        &[("rx_packets", 1000), ("rx_dropped", 50)],
    );
    t.file(
        "proc/1/net/route",
        &format!("{ROUTE_HEADER}eth0\t0000000A\t00000000\t0001\t0\t0\t0\t000000FF\t0\t0\t0\n"),
        0o644,
    );
    t.file("proc/1/net/ipv6_route", "00000000000000000000000000000000 00 00000000000000000000000000000000 00 00000000000000000000000000000000 ffffffff 00000001 00000000 00200200       lo\n", 0o644);
    let links = run("net/links.sh", t.path(), &[]);
    err(&links, "eth1", "link down");
    ok(&links, "eth0");
    err(
        &run("net/route.sh", t.path(), &[]),
        "default-route",
        "no default route",
    );
    t.file("proc/1/net/ipv6_route", "00000000000000000000000000000000 00 00000000000000000000000000000000 00 fe800000000000000000000000000001 00000400 00000001 00000000 00000003     eth0\n", 0o644);
    ok(&run("net/route.sh", t.path(), &[]), "default-route");
}

#[test]
fn net_counters_count_errors_and_drops_since_the_previous_run() {
    let t = Tree::new("counters");
    // Many errors since boot: not reported.
    up(
        &t,
        "eth0",
        &[
            ("rx_errors", 400),
            ("rx_packets", 100000),
            ("rx_dropped", 9000),
        ],
    );
    up(&t, "veth1", &[("rx_errors", 5)]);
    let st = Stateful::new(&t, "c", &[]);
    let (items, s) = st.run_full("net/counters.sh", &[]);
    assert!(items.is_empty(), "{items:?}");
    skipped(&s, "errors:eth0", "baseline recorded");
    skipped(&s, "drops:eth0", "baseline recorded");
    assert!(!s.contains_key("errors:veth1"), "veth ignored: {s:?}");
    let items = st.run("net/counters.sh", &[]);
    ok(&items, "errors:eth0");
    ok(&items, "drops:eth0");
    up(
        &t,
        "eth0",
        &[
            ("rx_errors", 420),
            ("tx_errors", 5),
            ("rx_packets", 110000),
            ("rx_dropped", 9500),
        ],
    );
    let items = st.run("net/counters.sh", &[]);
    err(
        &items,
        "errors:eth0",
        "25 rx/tx errors since the previous run (limit 10)",
    );
    err(
        &items,
        "drops:eth0",
        "500 packets dropped of 10500 since the previous run (4.8%, limit 1%)",
    );
    let items = st.run("net/counters.sh", &[]);
    ok(&items, "errors:eth0");
    ok(&items, "drops:eth0");
    up(
        &t,
        "eth0",
        &[
            ("rx_errors", 440),
            ("rx_packets", 120000),
            ("rx_dropped", 9600),
        ],
    );
    let items = st.run(
        "net/counters.sh",
        &[("NET_ERRORS_MAX", "20"), ("NET_DROPS_MIN", "1000")],
    );
    ok(&items, "errors:eth0");
    ok(&items, "drops:eth0");
    let s = skips("net/counters.sh", t.path(), &[]);
    skipped(&s, "errors:eth0", "no STATE_DIR");
}

#[test]
fn conntrack_usage_in_the_node_network_namespace() {
    let t = Tree::new("conntrack");
    t.file("proc/sys/net/netfilter/nf_conntrack_count", "900\n", 0o644);
    t.file("proc/sys/net/netfilter/nf_conntrack_max", "1000\n", 0o644);
    skipped_by(
        "net/conntrack.sh",
        t.path(),
        "conntrack",
        "needs hostNetwork",
    );
    host_netns(&t);
    err(
        &run("net/conntrack.sh", t.path(), &[]),
        "conntrack",
        "900 of 1000 conntrack entries used (90%, limit 80%)",
    );
    ok(
        &run(
            "net/conntrack.sh",
            t.path(),
            &[("NET_CONNTRACK_MAX_PERCENT", "95")],
        ),
        "conntrack",
    );
    std::fs::remove_file(t.join("proc/sys/net/netfilter/nf_conntrack_count")).unwrap();
    skipped_by(
        "net/conntrack.sh",
        t.path(),
        "conntrack",
        "nf_conntrack not loaded",
    );
}

#[test]
fn mtu_speed_and_duplex_of_physical_interfaces() {
    let t = Tree::new("mtu");
    skipped_by("net/mtu.sh", t.path(), "mtu", "no physical interface");
    phys(&t, "eth0", 1500, "1000", "full");
    phys(&t, "eth1", 1500, "100", "full");
    phys(&t, "eth2", 9000, "10000", "half");
    phys(&t, "eth3", 1500, "-1", "unknown");
    up(&t, "br0", &[]);
    t.file("sys/class/net/br0/mtu", "1400\n", 0o644);
    up(&t, "veth9", &[]);
    let items = run("net/mtu.sh", t.path(), &[]);
    ok(&items, "mtu:eth0");
    err(
        &items,
        "mtu:eth2",
        "MTU 9000, expected 1500 (the MTU of most interfaces)",
    );
    assert!(!items.contains_key("mtu:br0"), "virtual: {items:?}");
    let items = run("net/mtu.sh", t.path(), &[("NET_EXPECTED_MTU", "9000")]);
    ok(&items, "mtu:eth2");
    err(&items, "mtu:eth0", "expected 9000 (NET_EXPECTED_MTU)");
    err(
        &run("net/mtu.sh", t.path(), &[("NET_MTU_IFACES", "eth0 br*")]),
        "mtu:br0",
        "MTU 1400",
    );
    let (items, s) = run_full("net/speed.sh", t.path(), &[]);
    ok(&items, "speed:eth0");
    ok(&items, "duplex:eth0");
    err(&items, "speed:eth1", "100 Mb/s (lowest healthy 1000 Mb/s)");
    err(&items, "duplex:eth2", "half duplex");
    skipped(&s, "speed:eth3", "no link speed (-1)");
    skipped(&s, "duplex:eth3", "no duplex (unknown)");
    skipped(&s, "speed:br0", "virtual interface");
    assert!(!s.contains_key("speed:veth9"));
    ok(
        &run("net/speed.sh", t.path(), &[("NET_SPEED_MIN_MBPS", "100")]),
        "speed:eth1",
    );
}

#[test]
fn bonding_slaves_aggregation_speeds_and_modes() {
    let t = Tree::new("bond");
    skipped_by(
        "net/bonding.sh",
        t.path(),
        "bonding",
        "no bonding interface",
    );
    let lacp = |agg2: u32, speed2: u32| {
        format!(
            "Ethernet Channel Bonding Driver: v5.10\n\nBonding Mode: IEEE 802.3ad Dynamic link aggregation\n\
             MII Status: up\n\n802.3ad info\nActive Aggregator Info:\n\tAggregator ID: 1\n\tNumber of ports: 2\n\n\
             Slave Interface: eth0\nMII Status: up\nSpeed: 10000 Mbps\nDuplex: full\nAggregator ID: 1\n\n\
             Slave Interface: eth1\nMII Status: up\nSpeed: {speed2} Mbps\nDuplex: full\nAggregator ID: {agg2}\n"
        )
    };
    t.file("proc/1/net/bonding/bond0", &lacp(1, 10000), 0o644);
    t.file("proc/1/net/bonding/bond2", &lacp(2, 1000), 0o644);
    t.file(
        "proc/1/net/bonding/bond1",
        "Bonding Mode: fault-tolerance (active-backup)\nMII Status: up\n\n\
         Slave Interface: eth4\nMII Status: up\nSpeed: 1000 Mbps\nDuplex: full\n\n\
         Slave Interface: eth5\nMII Status: down\nSpeed: Unknown\nDuplex: Unknown\n",
        0o644,
    );
    let items = run("net/bonding.sh", t.path(), &[]);
    ok(&items, "bond:bond0");
    ok(&items, "bond-speed:bond0");
    ok(&items, "bond-mode:bond0");
    err(
        &items,
        "bond:bond2",
        "slave eth1 not in the active LACP aggregator (2, active 1)",
    );
    err(
        &items,
        "bond-speed:bond2",
        "eth0 10000 full, eth1 1000 full",
    );
    err(&items, "bond:bond1", "slave eth5 MII status down");
    ok(&items, "bond-speed:bond1");
    err(
        &items,
        "bond-mode:bond1",
        "mode fault-tolerance (active-backup), the other bonds use IEEE 802.3ad",
    );
    let items = run(
        "net/bonding.sh",
        t.path(),
        &[
            ("NET_BOND_MODE", "active-backup"),
            ("NET_BOND_MIN_SLAVES", "3"),
        ],
    );
    ok(&items, "bond-mode:bond1");
    err(
        &items,
        "bond-mode:bond0",
        "expected active-backup (NET_BOND_MODE)",
    );
    err(&items, "bond:bond0", "2 slave(s), fewer than 3");
}

#[test]
fn ip_conflicts_from_ipv6_dad_and_arping() {
    let t = Tree::new("ipconflict");
    t.file(
        "proc/1/net/if_inet6",
        "fe800000000000000000000000000001 02 40 20 80     eth0\n\
         20010db8000000000000000000000001 03 40 00 88     eth1\n\
         00000000000000000000000000000001 01 80 10 80       lo\n",
        0o644,
    );
    let (items, s) = run_full("net/ipconflict.sh", t.path(), &[]);
    ok(&items, "dad:eth0");
    err(
        &items,
        "dad:eth1",
        "duplicate address detection failed for 20010db8000000000000000000000001",
    );
    assert!(!items.contains_key("dad:lo"));
    skipped(
        &s,
        "ipv4-conflict",
        "arping is not in the runner image (Debian package iputils-arping)",
    );
    t.script(
        "fakebin/arping",
        "for a in \"$@\"; do last=$a; done\n[ \"$last\" != 10.0.0.6 ]",
    );
    t.script(
        "fakebin/ip",
        "echo '2: eth0    inet 10.0.0.5/24 brd 10.0.0.255 scope global eth0\\       valid_lft forever'\n\
         echo '3: eth1    inet 10.0.0.6/24 brd 10.0.0.255 scope global eth1\\       valid_lft forever'",
    );
    skipped_by(
        "net/ipconflict.sh",
        t.path(),
        "ipv4-conflict",
        "needs hostNetwork",
    );
    host_netns(&t);
    let items = run("net/ipconflict.sh", t.path(), &[]);
    ok(&items, "ipv4:10.0.0.5");
    err(
        &items,
        "ipv4:10.0.0.6",
        "another host answers ARP for 10.0.0.6 on eth1",
    );
    // An arping that cannot probe (no raw socket) is no conflict.
    t.script(
        "fakebin/arping",
        "echo 'arping: socket: Operation not permitted' >&2\nexit 2",
    );
    let (items, s) = run_full("net/ipconflict.sh", t.path(), &[]);
    assert!(
        items.keys().all(|i| !i.starts_with("ipv4:")),
        "no ipv4 verdict without a probe: {items:?}"
    );
    skipped(
        &s,
        "ipv4:10.0.0.5",
        "arping could not probe on eth0 (exit 2; it needs a raw socket",
    );
}

#[test]
fn a_transmit_timeout_that_names_only_a_pci_device_is_named_after_its_interface() {
    let t = Tree::new("tx-pci");
    // igb's dev_err names the PCI device; sysfs knows its interface.
    t.file(
        "sys/bus/pci/devices/0000:02:00.0/net/eth7/ifindex",
        "7\n",
        0o644,
    );
    // A device with two interfaces names neither: its bus id stays.
    t.file(
        "sys/bus/pci/devices/0000:03:00.0/net/eth8/ifindex",
        "8\n",
        0o644,
    );
    t.file(
        "sys/bus/pci/devices/0000:03:00.0/net/eth9/ifindex",
        "9\n",
        0o644,
    );
    t.file("kmsg", "6,1,1000000,-;Linux version 6.8.0\n", 0o644);
    let log = t.join("kmsg");
    let log = log.to_str().unwrap();
    let st = Stateful::new(&t, "net-kernlog", &[("KERNEL_LOG_FILE", log)]);
    assert!(
        st.run("net/kernlog.sh", &[]).is_empty(),
        "the first run records the baseline"
    );
    klog_append(
        &t,
        &[
            "igb 0000:02:00.0: Detected Tx Unit Hang\\x0a  Tx Queue             <0>",
            "igb 0000:03:00.0: Detected Tx Unit Hang\\x0a  Tx Queue             <1>",
        ],
    );
    let items = st.run("net/kernlog.sh", &[]);
    err(&items, "tx-timeout:eth7", "Detected Tx Unit Hang");
    err(&items, "tx-timeout:0000:03:00.0", "Detected Tx Unit Hang");
}
