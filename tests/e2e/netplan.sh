# shellcheck shell=bash disable=SC2034 # the values are cluster.sh's and realnodes.sh's
# The test cluster's network plan (docs/testing.md, "Network plan"), sourced by cluster.sh and
# realnodes.sh; the Rust side's one copy is tests/kit/src/netplan.rs, and a
# test there checks that the two agree.
#
#   bridge kcbr0 with 172.31.0.1/24 on the host: the API server, DNS and the
#   image registries (:5000, and :5001 with authentication) listen there.
#   simulated node i: netns kc-node-i, eth0 172.31.0.(10+i) (veth kcn<i> on
#   the host), pods in 172.30.i.0/24 behind the node's bridge cbr0 (.1).
#   real node i: netns kc-real-i, eth0 172.31.0.(100+i) (veth kcr<i> on the
#   host), pods in 172.30.(100+i).0/24 behind the CNI bridge cni0 (.1); its
#   default route is via the host bridge, which drops what the nodes send
#   beyond the plan's ranges ($gateway_table).
#   pods of simulated nodes: a netns each, kcp-<first 8 of the UID>.

bridge=kcbr0
host_ip=172.31.0.1
registry=$host_ip:5000
# The same images behind basic authentication (realnodes.sh, start_private_registry).
private_registry=$host_ip:5001
# Unreachable routes on the host for everything of the plan.
node_fence=172.31.0.0/24
pod_fence=172.30.0.0/16
# The host's nftables table (family ip) whose forward chain drops packets
# from the plan's ranges to anywhere outside them (cluster.sh, gateway_up).
gateway_table=kc_gateway
node_netns_prefix=kc-node-
real_netns_prefix=kc-real-
pod_netns_prefix=kcp-

node_netns() { echo "$node_netns_prefix$1"; }
node_veth() { echo "kcn$1"; }
node_ip() { echo "172.31.0.$((10 + $1))"; }
node_subnet() { echo "172.30.$1.0/24"; }
node_gateway() { echo "172.30.$1.1"; }

real_netns() { echo "$real_netns_prefix$1"; }
real_veth() { echo "kcr$1"; }
real_ip() { echo "172.31.0.$((100 + $1))"; }
real_subnet() { echo "172.30.$((100 + $1)).0/24"; }
real_gateway() { echo "172.30.$((100 + $1)).1"; }

# netns_on_bridge NS VETH IP: network namespace NS whose eth0 has IP/24 on
# the bridge through veth VETH, forwarding, with unprivileged ICMP allowed
# as container runtimes do.
netns_on_bridge() {
    local ns=$1 veth=$2 ip=$3
    ip netns add "$ns" 2>/dev/null || true
    ip link add "$veth" type veth peer name "$veth-p" 2>/dev/null || true
    ip link set "$veth-p" netns "$ns" 2>/dev/null || true
    ip link set "$veth" master "$bridge" up
    ip -n "$ns" link set lo up
    ip -n "$ns" link set "$veth-p" name eth0 2>/dev/null || true
    ip -n "$ns" addr replace "$ip/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip netns exec "$ns" sysctl -qw net.ipv4.ip_forward=1
    ip netns exec "$ns" sysctl -qw net.ipv4.ping_group_range="0 2147483647"
}

# netns_off_bridge NS VETH SUBNET: undoes netns_on_bridge and the host's
# route to the pod subnet behind NS.
netns_off_bridge() {
    local ns=$1 veth=$2 subnet=$3
    ip route del "$subnet" 2>/dev/null || true
    ip link del "$veth" 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true
}
