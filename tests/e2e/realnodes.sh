# shellcheck shell=bash disable=SC2154 # dir, here, cache, kbin, api_port: cluster.sh; bridge, host_ip, registry, private_registry, *_prefix: netplan.sh
# Real nodes of the test cluster, sourced by cluster.sh: each is a kubelet
# v1.20.2 with its own containerd (Debian's containerd, runc and CNI plugins)
# in a network namespace of its own, plus what serves them on the host
# (a DNS server and the image registry). See docs/testing.md, "Real nodes".
#
# Network plan of real node i (1..N), next to the simulated nodes' (its names
# and addresses: netplan.sh):
#   netns kc-real-i, eth0 172.31.0.(100+i)/24 on kcbr0 (veth kcr<i> on the host)
#   pod subnet 172.30.(100+i).0/24 on the CNI bridge cni0 inside that netns
#   default route via 172.31.0.1, as a node of a real cluster has one: the
#   host is the gateway and drops what is not for the cluster's ranges
#   (cluster.sh, gateway_up), so nothing leaves the machine
#   10.96.0.1:443 (the `kubernetes` Service) is DNATed there to the API server,
#   the one Service a pod of this cluster needs (there is no kube-proxy)
#   DNS: dnsmasq on 172.31.0.1:53 answers the cluster's names, nothing else
#   registry: docker-registry on 172.31.0.1:5000 (images from tests/e2e/images.sh)
#   private registry: a second docker-registry on 172.31.0.1:5001 serving the
#   same storage read-only, only to the user and password written to
#   DIR/private-registry.auth (basic authentication, htpasswd), for the
#   tests of image pull secrets
# Each node's kubelet and containerd share a private mount namespace: their
# volume, rootfs and netns mounts vanish with them, and /var/log/pods is the
# node's own directory (a kubelet removes log directories of pods it does
# not know, which would be the other nodes' pods).


# Kernel settings every kubelet sets on start; `up` saves them, `down` puts them back.
kubelet_sysctls=(vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops
    kernel.keys.root_maxkeys kernel.keys.root_maxbytes)

ensure_real_packages() {
    local need=() p
    for p in containerd runc containernetworking-plugins dnsmasq-base docker-registry apache2-utils \
        buildah mmdebstrap gcc libc6-dev; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || need+=("$p")
    done
    apt_install --no-install-recommends "${need[@]}"
}

# Every node netns (simulated kc-node-*, real kc-real-*) routes every pod
# subnet but its own through that subnet's node.
route_all_pod_subnets() { # sim real
    local sim=$1 real=$2 ns k
    local -a nets=() vias=() spaces=()
    for ((k = 1; k <= sim; k++)); do nets+=("$(node_subnet "$k")"); vias+=("$(node_ip "$k")"); spaces+=("$(node_netns "$k")"); done
    for ((k = 1; k <= real; k++)); do nets+=("$(real_subnet "$k")"); vias+=("$(real_ip "$k")"); spaces+=("$(real_netns "$k")"); done
    for ns in "${!spaces[@]}"; do
        for k in "${!nets[@]}"; do
            ((k == ns)) && continue
            ip -n "${spaces[$ns]}" route replace "${nets[$k]}" via "${vias[$k]}"
        done
    done
}

real_net_up() { # n
    local n=$1 i ns ip
    for ((i = 1; i <= n; i++)); do
        ns=$(real_netns "$i")
        ip=$(real_ip "$i")
        netns_on_bridge "$ns" "$(real_veth "$i")" "$ip"
        ip route replace "$(real_subnet "$i")" via "$ip"
        ip -n "$ns" route replace default via "$host_ip" dev eth0
        # The `kubernetes` Service for pods (PREROUTING) and host-network pods (OUTPUT).
        ip -n "$ns" route replace 10.96.0.1/32 via "$host_ip"
        ip netns exec "$ns" iptables -t nat -A PREROUTING -d 10.96.0.1/32 -p tcp --dport 443 \
            -j DNAT --to-destination "$host_ip:$api_port"
        ip netns exec "$ns" iptables -t nat -A OUTPUT -d 10.96.0.1/32 -p tcp --dport 443 \
            -j DNAT --to-destination "$host_ip:$api_port"
    done
}

real_net_down() {
    local ns i
    for ns in $(ip netns list 2>/dev/null | awk -v p="$real_netns_prefix" 'index($1, p) == 1 {print $1}'); do
        i=${ns#"$real_netns_prefix"}
        netns_off_bridge "$ns" "$(real_veth "$i")" "$(real_subnet "$i")"
    done
}

# DNS for pods and nodes: the cluster's names, from a hosts file; any other
# name gets no answer from upstream (there is none), so nothing leaves.
start_dns() { # sim real
    local k hosts=$dir/dns-hosts
    {
        echo "$host_ip kubernetes kubernetes.default kubernetes.default.svc kubernetes.default.svc.cluster.local"
        for ((k = 1; k <= $1; k++)); do echo "$(node_ip "$k") node-$k"; done
        for ((k = 1; k <= $2; k++)); do echo "$(real_ip "$k") real-$k"; done
    } >"$hosts"
    start dnsmasq "$dir/logs/dnsmasq.log" dnsmasq --keep-in-foreground --log-facility=- \
        --conf-file=/dev/null --no-resolv --no-hosts --addn-hosts="$hosts" \
        --bind-interfaces --listen-address="$host_ip" --port 53 --user=root \
        --domain-needed --bogus-priv --local=/cluster.local/ --pid-file=
}

start_registry() {
    local store=$cache/registry
    mkdir -p "$store"
    cat >"$dir/registry.yml" <<EOF
version: 0.1
log: {level: warn}
storage:
  filesystem: {rootdirectory: $store}
  delete: {enabled: true}
http: {addr: "$registry"}
EOF
    start registry "$dir/logs/registry.log" docker-registry serve "$dir/registry.yml"
    local t
    for ((t = 0; t < 60; t++)); do
        curl -fs --max-time 1 "http://$registry/v2/" >/dev/null 2>&1 && return 0
        sleep 0.5
    done
    die "the image registry on $registry did not start (log: $dir/logs/registry.log)"
}

# The images of the registry (start_registry) again, on $private_registry,
# only to user kube-combo with a password made for this cluster: its store
# is the same directory, read-only, so nothing is copied. The user and
# password are written to DIR/private-registry.auth as `user:password`.
start_private_registry() {
    local password
    password=$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
    htpasswd -bcB "$dir/private-registry.htpasswd" kube-combo "$password" 2>/dev/null
    printf 'kube-combo:%s\n' "$password" >"$dir/private-registry.auth"
    cat >"$dir/registry-private.yml" <<EOF
version: 0.1
log: {level: warn}
storage:
  filesystem: {rootdirectory: $cache/registry}
  maintenance: {readonly: {enabled: true}, uploadpurging: {enabled: false}}
auth:
  htpasswd: {realm: kube-combo-test, path: $dir/private-registry.htpasswd}
http: {addr: "$private_registry"}
EOF
    start registry-private "$dir/logs/registry-private.log" docker-registry serve "$dir/registry-private.yml"
    local t
    for ((t = 0; t < 60; t++)); do
        # Up, and asking for the password: 401 without it, 200 with it.
        if [[ $(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "http://$private_registry/v2/") == 401 ]] &&
            curl -fs --max-time 1 -u "kube-combo:$password" "http://$private_registry/v2/" >/dev/null; then
            return 0
        fi
        sleep 0.5
    done
    die "the private registry on $private_registry did not start (log: $dir/logs/registry-private.log)"
}

write_real_node_config() { # i token tainted
    local i=$1 token=$2 tainted=$3 nd=$dir/real/real-$1
    mkdir -p "$nd"/{cni,ipam,pod-logs,netns,kubelet,state,containerd,runc,opt,kube-combo} \
        "$nd/certs.d/$registry" "$nd/certs.d/$private_registry"
    cat >"$nd/containerd.toml" <<EOF
version = 2
root = "$nd/containerd"
state = "$nd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = "$nd/containerd.sock"
[plugins."io.containerd.internal.v1.opt"]
  path = "$nd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$registry/kube-combo/pause:3.4"
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$nd/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$nd/cni"
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "$nd/certs.d"
EOF
    local r
    for r in "$registry" "$private_registry"; do
        cat >"$nd/certs.d/$r/hosts.toml" <<EOF
server = "http://$r"
[host."http://$r"]
  capabilities = ["pull", "resolve"]
EOF
    done
    cat >"$nd/cni/10-kube-combo.conflist" <<EOF
{
  "cniVersion": "0.4.0",
  "name": "kc-real-$i",
  "plugins": [{
    "type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
    "ipam": {"type": "host-local", "dataDir": "$nd/ipam",
             "ranges": [[{"subnet": "$(real_subnet "$i")", "gateway": "$(real_gateway "$i")"}]],
             "routes": [{"dst": "0.0.0.0/0"}]}
  }]
}
EOF
    echo "nameserver $host_ip" >"$nd/resolv.conf"
    cat >"$nd/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $(real_ip "$i")
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
# The API server dials kubelets without a client certificate (exec, logs):
# the kubelet port is reachable only inside the cluster's private ranges.
authentication: {anonymous: {enabled: true}, webhook: {enabled: false}}
authorization: {mode: AlwaysAllow}
cgroupDriver: cgroupfs
cgroupsPerQOS: false
enforceNodeAllocatable: []
failSwapOn: false
clusterDNS: [$host_ip]
clusterDomain: cluster.local
resolvConf: $nd/resolv.conf
serializeImagePulls: false
imageGCHighThresholdPercent: 100
evictionHard: {memory.available: 50Mi, nodefs.available: 1%, imagefs.available: 1%}
syncFrequency: 10s
EOF
    cat >"$nd/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: kube-combo
  cluster: {server: "https://$host_ip:$api_port", certificate-authority: $dir/pki/ca.crt}
users:
- name: kubelet
  user: {token: $token}
contexts:
- name: kube-combo
  context: {cluster: kube-combo, user: kubelet}
current-context: kube-combo
EOF
    local taints=""
    [[ $tainted == 1 ]] && taints="--register-with-taints=kubecombo.io/real-node=true:NoSchedule"
    echo "$taints" >"$nd/taints"
}

# Runs inside the node's network and (private) mount namespaces: containerd,
# then the kubelet; records both pids; waits for the kubelet.
real_node_main() { # i
    local i=$1 nd=$dir/real/real-$1 t
    mount --bind "$nd/pod-logs" /var/log/pods
    # Pod network namespaces (containerd names them under /run/netns) stay
    # the node's own too: `down` finds them in its directory.
    mount --bind "$nd/netns" /run/netns
    # kube-combo's directory of state and errlogs (the runners' hostPath
    # with enableSys) is the node's own, as on separate machines: the nodes
    # share this machine's /var/lib, and one node's baselines are not the
    # other's.
    mount --bind "$nd/kube-combo" /var/lib/kube-combo
    # The node's own resolver configuration, as a node of a real cluster has
    # one: the machine's names a resolver this network namespace has no
    # route to (nothing leaves the cluster), so a check of the node's
    # resolvers (enableSys reads /host/etc/resolv.conf) would ask it.
    mount --bind "$nd/resolv.conf" /etc/resolv.conf
    # The node's own /sys: a sysfs mounted here shows this network
    # namespace's interfaces (the machine's shows the machine's), as the
    # node's /sys does for a runner with enableSys (/host/sys/class/net).
    # The cgroup hierarchies stay the machine's: moved aside, then back.
    mkdir -p "$nd/sys-cgroup"
    mount --rbind /sys/fs/cgroup "$nd/sys-cgroup"
    mount -t sysfs sysfs /sys
    mount --move "$nd/sys-cgroup" /sys/fs/cgroup
    # The namespace was made private (nothing of it reaches the machine or
    # the other nodes); within it, mounts are shared from here on, as on a
    # systemd host, so a pod mounting the node's root with HostToContainer
    # propagation (the runner's /host with enableSys) sees what the node
    # mounts later. Last: a mount under a shared one cannot be moved.
    mount --make-rshared /
    containerd --config "$nd/containerd.toml" >"$dir/logs/containerd-real-$i.log" 2>&1 &
    echo $! >"$dir/pids/containerd-real-$i.pid"
    for ((t = 0; t < 100; t++)); do [[ -S $nd/containerd.sock ]] && break; sleep 0.1; done
    # shellcheck disable=SC2046 # the taint flag is one word or none
    "$kbin/kubelet" --config "$nd/kubelet.yaml" --kubeconfig "$nd/kubeconfig" \
        --container-runtime remote --container-runtime-endpoint "unix://$nd/containerd.sock" \
        --root-dir "$nd/kubelet" --cert-dir "$nd/kubelet/pki" --hostname-override "real-$i" \
        --node-ip "$(real_ip "$i")" --node-labels "kubecombo.io/node-kind=real" \
        $(cat "$nd/taints") --v 1 >"$dir/logs/kubelet-real-$i.log" 2>&1 &
    echo $! >"$dir/pids/kubelet-real-$i.pid"
    wait
}

save_sysctls() {
    [[ -f $dir/sysctl.saved ]] && return 0
    local s
    for s in "${kubelet_sysctls[@]}"; do echo "$s=$(sysctl -n "$s")"; done >"$dir/sysctl.saved"
}

restore_sysctls() {
    [[ -f $dir/sysctl.saved ]] || return 0
    local line
    while read -r line; do sysctl -qw "$line" 2>/dev/null || true; done <"$dir/sysctl.saved"
    rm -f "$dir/sysctl.saved"
}

start_real_nodes() { # n tainted
    local n=$1 tainted=$2 i token
    # The mount point of each node's own /var/log/pods.
    if [[ ! -d /var/log/pods ]]; then
        mkdir -p /var/log/pods
        touch "$dir/made-var-log-pods"
    fi
    # ... and of each node's own /var/lib/kube-combo.
    if [[ ! -d /var/lib/kube-combo ]]; then
        mkdir -p /var/lib/kube-combo
        touch "$dir/made-var-lib-kube-combo"
    fi
    save_sysctls
    for ((i = 1; i <= n; i++)); do
        token=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
        printf '%s,system:node:real-%s,system:node:real-%s,"system:nodes"\n' "$token" "$i" "$i" >>"$dir/tokens.csv"
        write_real_node_config "$i" "$token" "$tainted"
    done
}

launch_real_nodes() { # n
    local i
    for ((i = 1; i <= $1; i++)); do
        start "real-$i" "$dir/logs/real-$i.log" nsenter --net="/run/netns/$(real_netns "$i")" -- \
            unshare --mount --propagation private -- "$here/cluster.sh" real-node "$dir" "$i"
    done
}

# The kubelet registers its node with the not-ready taint, which only the
# node lifecycle controller (not run here: simulated nodes send no leases)
# would take off.
untaint_ready_real_nodes() { # n
    local i
    for ((i = 1; i <= $1; i++)); do
        KUBECONFIG=$dir/kubeconfig kubectl taint nodes "real-$i" node.kubernetes.io/not-ready:NoSchedule- \
            >/dev/null 2>&1 || true
    done
}

kill_pid_file() { # file
    local p=$1 pid k
    [[ -f $p ]] || return 0
    pid=$(cat "$p")
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null || true
        for ((k = 0; k < 100; k++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$p"
}

# Pids of the containerd shims of one node: they name that node's socket.
shim_pids() { # socket
    local f
    for f in /proc/[0-9]*/cmdline; do
        if { tr '\0' ' ' <"$f"; } 2>/dev/null | grep -qF -- "-address $1 "; then
            f=${f#/proc/}
            echo "${f%/cmdline}"
        fi
    done
    return 0
}

stop_real_nodes() {
    local nd i sock id ids pid
    for nd in "$dir"/real/real-*; do
        [[ -d $nd ]] || continue
        i=${nd##*/real-}
        sock=$nd/containerd.sock
        kill_pid_file "$dir/pids/kubelet-real-$i.pid"
        if [[ -S $sock ]] && pid_alive "$dir/pids/containerd-real-$i.pid"; then
            ids=$(ctr -a "$sock" -n k8s.io tasks ls -q 2>/dev/null || true)
            for id in $ids; do ctr -a "$sock" -n k8s.io tasks kill -s SIGKILL "$id" >/dev/null 2>&1 || true; done
            for id in $ids; do
                ctr -a "$sock" -n k8s.io tasks delete -f "$id" >/dev/null 2>&1 || true
            done
        fi
        kill_pid_file "$dir/pids/containerd-real-$i.pid"
        for pid in $(shim_pids "$sock"); do kill -KILL "$pid" 2>/dev/null || true; done
        kill_pid_file "$dir/pids/real-$i.pid"
        remove_container_cgroups "$nd"
        rm -f "$nd"/netns/cni-*
    done
    # Shim sockets' directory, made by the first shim (state dirs are the nodes' own).
    rmdir /run/containerd/s /run/containerd 2>/dev/null || true
    if [[ -f $dir/made-var-log-pods ]]; then
        rmdir /var/log/pods 2>/dev/null || true
        rm -f "$dir/made-var-log-pods"
    fi
    if [[ -f $dir/made-var-lib-kube-combo ]]; then
        rmdir /var/lib/kube-combo 2>/dev/null || true
        rm -f "$dir/made-var-lib-kube-combo"
    fi
    restore_sysctls
}

# runc leaves a container's cgroups when its shim is killed; the ids are the
# directory names under the node's runc root.
remove_container_cgroups() { # node dir
    local id c
    for id in "$1"/runc/k8s.io/*; do
        [[ -d $id ]] || continue
        id=${id##*/}
        for c in /sys/fs/cgroup/*/k8s.io/"$id" /sys/fs/cgroup/*/"$id"; do
            [[ ! -d $c ]] || rmdir "$c" 2>/dev/null || true
        done
    done
    for c in /sys/fs/cgroup/*/k8s.io; do
        [[ ! -d $c ]] || rmdir "$c" 2>/dev/null || true
    done
    return 0
}
