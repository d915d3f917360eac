#!/usr/bin/env bash
# A real Kubernetes control plane (v1.20.2: etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler) with simulated nodes whose pods run
# as local processes (tests/nodesim).
#
#   tests/e2e/cluster.sh up DIR [--nodes N] [--real N] [--debug]
#                                             build (first time) and start; prints `export KUBECONFIG=...`
#                                             --nodes: simulated nodes (default 3, 0..200)
#                                             --real: real nodes, kubelet + containerd (default 0;
#                                             tests/e2e/realnodes.sh, images from tests/e2e/images.sh)
#   tests/e2e/cluster.sh down DIR             stop everything `up` started, by pid, and remove the networks
#   tests/e2e/cluster.sh status DIR           say what runs
#   tests/e2e/cluster.sh stop DIR NAME        stop one control-plane process (etcd, kube-apiserver, ...)
#   tests/e2e/cluster.sh start DIR NAME       start it again with the same command line
#
# Kubernetes binaries are built once and cached in
# ${KUBE_COMBO_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kube-combo}; the project's
# binaries come from `cargo build --release`, or with --debug from `cargo build`
# (the build `cargo test` has made already: the test command saves a release
# build that way). The directory they run from is written to DIR/bin-dir.
#
# One cluster per machine: `up` refuses while another DIR's cluster runs
# (recorded in /run/kube-combo-cluster), naming it and how to stop it, and
# `down` of another DIR leaves the running cluster's networks alone.
#
# Network plan (one cluster per machine; its names and addresses: netplan.sh):
#   bridge kcbr0 172.31.0.1/24 on the host: the API server listens there.
#   node-i: network namespace kc-node-i with InternalIP 172.31.0.(10+i) on the
#           bridge and a pod bridge cbr0 172.30.i.1/24; it routes between pods.
#           It has no default route: nothing from a node or a pod leaves the
#           machine (pods resolve names through 172.31.0.1, where nothing answers).
#   pods:   a network namespace each (kcp-<uid>) with an address in 172.30.i.0/24
#           behind their node, so a rule in kc-node-i applies to that node's pods.
#   kubectl exec/logs: the API server dials a node by its InternalIP; the
#           simulator serves no kubelet API there, so they fail at once (and
#           node names are never looked up in the machine's DNS).
#   real-i: see tests/e2e/realnodes.sh (172.31.0.(100+i), pods 172.30.(100+i).0/24);
#           its default route is via 172.31.0.1.
#   gateway: the host's nftables table kc_gateway drops what a node or pod
#           sends through the host to an address outside 172.31.0.0/24 and
#           172.30.0.0/16; `down` deletes it.
#   fences: unreachable routes (metric 4000) for 172.31.0.0/24 and
#           172.30.0.0/16 stay on the host, also after `down`.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
cache=${KUBE_COMBO_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kube-combo}
kbin=$cache/k8s/bin
# shellcheck source=tests/e2e/netplan.sh
. "$here/netplan.sh"
api_port=6443
etcd_port=23790

die() { echo "cluster.sh: $*" >&2; exit 2; }
usage() { die "usage: cluster.sh up DIR [--nodes N] [--real N] [--debug] | down DIR | status DIR | stop DIR NAME | start DIR NAME"; }
# shellcheck source=tests/e2e/realnodes.sh
. "$here/realnodes.sh"

pid_alive() { [[ -f $1 ]] && kill -0 "$(cat "$1")" 2>/dev/null; }

# One cluster per machine (the network plan's names and addresses are
# fixed): the DIR of the cluster that runs is kept here while it runs.
owner_file=${KUBE_COMBO_CLUSTER_OWNER:-/run/kube-combo-cluster}

# The DIR of another cluster with a process of it still running on this
# machine; nothing when there is none.
other_cluster() {
    local other p
    other=$(cat "$owner_file" 2>/dev/null) || return 0
    [[ -n $other && $other != "$dir" ]] || return 0
    for p in "$other"/pids/*.pid; do
        if pid_alive "$p"; then
            echo "$other"
            return 0
        fi
    done
}

# apt_install [APT-OPTION...] [PACKAGE...]: installs the packages, reading
# the package lists again only when they are missing or stale.
apt_install() {
    local opts=() pkgs=() a
    for a in "$@"; do [[ $a == -* ]] && opts+=("$a") || pkgs+=("$a"); done
    ((${#pkgs[@]})) || return 0
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q "${opts[@]}" "${pkgs[@]}" >/dev/null 2>&1 || {
        apt-get update -q >/dev/null && apt-get install -y -q "${opts[@]}" "${pkgs[@]}" >/dev/null
    }
}

ensure_packages() {
    local need=()
    command -v etcd >/dev/null || need+=(etcd-server)
    command -v ip >/dev/null || need+=(iproute2)
    command -v openssl >/dev/null || need+=(openssl)
    command -v nsenter >/dev/null || need+=(util-linux)
    command -v iptables >/dev/null || need+=(iptables)
    command -v nft >/dev/null || need+=(nftables)
    command -v curl >/dev/null || need+=(curl)
    apt_install "${need[@]}"
    command -v kubectl >/dev/null || die "kubectl is not installed"
}

make_pki() {
    local pki=$1
    [[ -f $pki/apiserver.crt ]] && return 0
    mkdir -p "$pki"
    (
        cd "$pki"
        openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -keyout ca.key -out ca.crt \
            -subj "/CN=kube-combo-test-ca" 2>/dev/null
        cat >apiserver.ext <<EXT
basicConstraints=CA:FALSE
keyUsage=digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=IP:$host_ip,IP:127.0.0.1,IP:10.96.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,DNS:localhost
EXT
        openssl req -newkey rsa:2048 -nodes -keyout apiserver.key -out apiserver.csr \
            -subj "/CN=kube-apiserver" 2>/dev/null
        openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
            -days 3650 -extfile apiserver.ext -out apiserver.crt 2>/dev/null
        openssl genrsa -out sa.key 2048 2>/dev/null
        openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
    )
}

write_kubeconfig() { # file token
    cat >"$1" <<KC
apiVersion: v1
kind: Config
clusters:
- name: kube-combo
  cluster:
    server: https://$host_ip:$api_port
    certificate-authority: $dir/pki/ca.crt
users:
- name: admin
  user:
    token: $2
contexts:
- name: kube-combo
  context: {cluster: kube-combo, user: admin}
current-context: kube-combo
KC
}

# The cluster's ranges are never sent off the machine: an unreachable route
# with a high metric sits under the bridge and node routes, and stays after
# `down`, so a stray request to 172.31.0.1 or a pod address fails at once.
fence_ranges() {
    ip route replace unreachable "$node_fence" metric 4000
    ip route replace unreachable "$pod_fence" metric 4000
}

# The real nodes' default gateway is the host: what reaches it from the
# cluster's ranges for an address outside them is dropped in the forward
# chain of a table of its own (counted: `nft list table ip kc_gateway`),
# so nothing a node or a pod sends leaves the machine, whatever the host
# forwards otherwise.
gateway_up() {
    gateway_down
    nft -f - <<EOF
table ip $gateway_table {
    chain forward {
        type filter hook forward priority filter; policy accept;
        ip saddr { $node_fence, $pod_fence } ip daddr != { $node_fence, $pod_fence } counter drop
    }
}
EOF
}

gateway_down() { nft delete table ip "$gateway_table" 2>/dev/null || true; }

net_up() {
    local n=$1 i ns
    fence_ranges
    gateway_up
    if ! ip link show "$bridge" >/dev/null 2>&1; then
        ip link add "$bridge" type bridge
    fi
    # A bridge without an address of its own takes the lowest of its ports'
    # and changes it when that port leaves; peers that cached the old one
    # lose their path for a minute. A fixed, locally administered one.
    ip link set "$bridge" address 02:6b:63:ff:00:01
    ip addr replace "$host_ip/24" dev "$bridge"
    ip link set "$bridge" up
    # Pod and node traffic crosses this bridge; never let a FORWARD policy drop it.
    iptables -C FORWARD -i "$bridge" -j ACCEPT 2>/dev/null || iptables -I FORWARD -i "$bridge" -j ACCEPT
    for ((i = 1; i <= n; i++)); do
        ns=$(node_netns "$i")
        netns_on_bridge "$ns" "$(node_veth "$i")" "$(node_ip "$i")"
        ip -n "$ns" link add cbr0 type bridge 2>/dev/null || true
        # Fixed, as the host bridge's above: pods keep their gateway's
        # address while other pods come and go.
        ip -n "$ns" link set cbr0 address "$(printf '02:6b:63:00:%02x:01' "$i")"
        ip -n "$ns" addr replace "$(node_gateway "$i")/24" dev cbr0
        ip -n "$ns" link set cbr0 up
        ip route replace "$(node_subnet "$i")" via "$(node_ip "$i")"
    done
}

net_down() {
    local ns i
    for ns in $(ip netns list 2>/dev/null | awk -v p="$pod_netns_prefix" 'index($1, p) == 1 {print $1}'); do
        ip netns del "$ns" 2>/dev/null || true
    done
    for ns in $(ip netns list 2>/dev/null | awk -v p="$node_netns_prefix" 'index($1, p) == 1 {print $1}'); do
        i=${ns#"$node_netns_prefix"}
        netns_off_bridge "$ns" "$(node_veth "$i")" "$(node_subnet "$i")"
    done
    real_net_down
    iptables -D FORWARD -i "$bridge" -j ACCEPT 2>/dev/null || true
    ip link del "$bridge" 2>/dev/null || true
    gateway_down
    fence_ranges
}

start() { # name logfile cmd...
    local name=$1 log=$2
    shift 2
    # The command line, for `cluster.sh start DIR NAME` after a stop.
    mkdir -p "$dir/cmds"
    printf '%s\0' "$log" "$@" >"$dir/cmds/$name"
    setsid "$@" >>"$log" 2>&1 </dev/null &
    echo $! >"$dir/pids/$name.pid"
}

# Stops one process `up` started, by its recorded pid: SIGTERM, SIGKILL
# after 10 s (kill_pid_file, tests/e2e/realnodes.sh).
stop_process() { kill_pid_file "$dir/pids/$1.pid"; }

# `cluster.sh stop DIR NAME` / `start DIR NAME`: one control-plane process
# (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, nodesim)
# stopped, then started again with the same command line, for fault tests.
cmd_stop() {
    local name=${1:?which process}
    [[ -f $dir/cmds/$name ]] || die "no process $name was started in $dir"
    stop_process "$name"
    echo "stopped $name"
}

cmd_start() {
    local name=${1:?which process} argv
    [[ -f $dir/cmds/$name ]] || die "no process $name was started in $dir"
    if pid_alive "$dir/pids/$name.pid"; then die "$name runs already"; fi
    mapfile -d '' argv <"$dir/cmds/$name"
    start "$name" "${argv[@]}"
    echo "started $name (pid $(cat "$dir/pids/$name.pid"))"
}

wait_http() { # what url tries
    local i
    for ((i = 0; i < $3; i++)); do
        if curl -fsk --max-time 2 -H "Authorization: Bearer $(cat "$dir/admin.token")" "$2" >/dev/null 2>&1; then
            return 0
        fi
        sleep 0.5
    done
    return 1
}

cmd_up() {
    local nodes=3 real=0 profile=release
    while (($#)); do
        case $1 in
        --nodes) nodes=${2:?--nodes needs a number}; shift 2 ;;
        --real) real=${2:?--real needs a number}; shift 2 ;;
        --debug) profile=debug; shift ;;
        *) usage ;;
        esac
    done
    if ! [[ $nodes =~ ^[0-9]+$ ]] || ((nodes > 200)); then die "--nodes takes 0..200"; fi
    if ! [[ $real =~ ^[0-9]+$ ]] || ((real > 50)); then die "--real takes 0..50"; fi
    ((nodes + real > 0)) || die "a cluster needs a node (--nodes or --real)"
    local p other
    # Two `up`s at once: the second waits for the first's check and record.
    exec 8>"$owner_file.lock"
    flock -w 600 8 || die "another cluster.sh up holds $owner_file.lock"
    other=$(other_cluster)
    [[ -z $other ]] || die "a cluster already runs on this machine from $other; stop it first with: $0 down $other"
    for p in "$dir"/pids/*.pid; do
        if pid_alive "$p"; then die "a cluster already runs in $dir (cluster.sh down $dir first)"; fi
    done
    if ip link show "$bridge" >/dev/null 2>&1; then
        # Any answer at all means a cluster of another DIR is up; without one,
        # the network is left over from a cluster whose processes were killed.
        if curl -sk --max-time 2 -o /dev/null "https://$host_ip:$api_port/healthz"; then
            die "another cluster is up on $host_ip: run cluster.sh down on its DIR first"
        fi
        echo "removing the network of a cluster that is no longer running"
        pkill -f "^$repo/target/(release|debug)/combo-" 2>/dev/null || true
        net_down
    fi
    # A cluster that ran in DIR before left its etcd data and its nodes'
    # containerd stores: started on them, pods would find the old objects
    # and run the old images of the same tags. Its mounts are gone once it
    # is down; with one left, it is not.
    if findmnt -rn -o TARGET | grep -q "^$dir/"; then
        die "mounts of an earlier cluster are left under $dir: run cluster.sh down $dir first"
    fi
    rm -rf --one-file-system "$dir/etcd" "$dir/real"
    echo "$dir" >"$owner_file"
    flock -u 8
    ensure_packages
    ((real == 0)) || ensure_real_packages
    "$here/build-k8s.sh"
    local build=(cargo build --quiet) bins=$repo/target/$profile
    [[ $profile == release ]] && build+=(--release)
    if ((nodes == 0)); then
        # Real nodes only: everything runs from the images, and the kubectl
        # plugin comes out of the operator image (after the push below).
        bins=$dir/bin
    elif [[ ${KUBE_COMBO_HARNESS_ONLY:-} == 1 ]]; then
        echo "building the project's binaries ($profile)"
        # Working on the harness itself: pods of project images whose binary
        # is not built report ErrImageNeverPull.
        (cd "$repo" && "${build[@]}" --bin combo-nodesim)
    else
        echo "building the project's binaries ($profile)"
        (cd "$repo" && "${build[@]}" --bin combo-nodesim --bin combo-operator \
            --bin combo-runner --bin combo-pinger --bin kubectl-combo)
    fi

    mkdir -p "$dir"/{pids,logs,pods}
    echo "$nodes" >"$dir/nodes"
    echo "$real" >"$dir/real-nodes"
    echo "$bins" >"$dir/bin-dir"
    make_pki "$dir/pki"
    [[ -f $dir/admin.token ]] || head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$dir/admin.token"
    printf '%s,admin,admin,"system:masters"\n' "$(cat "$dir/admin.token")" >"$dir/tokens.csv"
    write_kubeconfig "$dir/kubeconfig" "$(cat "$dir/admin.token")"
    net_up "$nodes"
    real_net_up "$real"
    route_all_pod_subnets "$nodes" "$real"
    start_dns "$nodes" "$real"
    if ((real)); then
        start_registry
        start_private_registry
        "$here/images.sh" push "$registry"
        if ((nodes == 0)) && [[ ${KUBE_COMBO_HARNESS_ONLY:-} != 1 ]]; then
            "$here/images.sh" plugin "$dir/bin"
        fi
        # In a cluster with simulated nodes, only pods that tolerate it land on a real node.
        start_real_nodes "$real" "$((nodes > 0))"
    fi

    start etcd "$dir/logs/etcd.log" etcd --name kc --data-dir "$dir/etcd" \
        --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
        --listen-peer-urls http://127.0.0.1:23800 --initial-advertise-peer-urls http://127.0.0.1:23800 \
        --initial-cluster kc=http://127.0.0.1:23800
    start kube-apiserver "$dir/logs/kube-apiserver.log" "$kbin/kube-apiserver" \
        --etcd-servers "http://127.0.0.1:$etcd_port" \
        --bind-address "$host_ip" --advertise-address "$host_ip" --secure-port "$api_port" --insecure-port 0 \
        --tls-cert-file "$dir/pki/apiserver.crt" --tls-private-key-file "$dir/pki/apiserver.key" \
        --client-ca-file "$dir/pki/ca.crt" --token-auth-file "$dir/tokens.csv" \
        --authorization-mode Node,RBAC --allow-privileged=true \
        --service-account-key-file "$dir/pki/sa.pub" --service-account-signing-key-file "$dir/pki/sa.key" \
        --service-account-issuer https://kubernetes.default.svc --service-cluster-ip-range 10.96.0.0/16 \
        --enable-admission-plugins NamespaceLifecycle,ServiceAccount,NodeRestriction,DefaultTolerationSeconds \
        --event-ttl 1h --kubelet-preferred-address-types InternalIP
    wait_http apiserver "https://$host_ip:$api_port/readyz" 240 || {
        tail -20 "$dir/logs/kube-apiserver.log" >&2
        die "kube-apiserver did not become ready"
    }
    start kube-controller-manager "$dir/logs/kube-controller-manager.log" "$kbin/kube-controller-manager" \
        --kubeconfig "$dir/kubeconfig" --leader-elect=false --port 0 --secure-port 0 \
        --controllers daemonset,deployment,replicaset,garbagecollector,namespace,serviceaccount,serviceaccount-token,job,endpoint,resourcequota \
        --service-account-private-key-file "$dir/pki/sa.key" --root-ca-file "$dir/pki/ca.crt" \
        --concurrent-gc-syncs 10
    start kube-scheduler "$dir/logs/kube-scheduler.log" "$kbin/kube-scheduler" \
        --kubeconfig "$dir/kubeconfig" --leader-elect=false --port 0 --secure-port 0
    if ((nodes)); then
        start nodesim "$dir/logs/nodesim.log" "$bins/combo-nodesim" \
            --kubeconfig "$dir/kubeconfig" --dir "$dir" --nodes "$nodes" \
            --bin-dir "$bins" --scripts "$repo/scripts" \
            --api-server "$host_ip:$api_port" --ca "$dir/pki/ca.crt"
    fi
    launch_real_nodes "$real"

    local i ok=0
    for ((i = 0; i < 240; i++)); do
        ((real)) && untaint_ready_real_nodes "$real"
        if [[ $(KUBECONFIG=$dir/kubeconfig kubectl get nodes --no-headers 2>/dev/null | grep -c ' Ready') == "$((nodes + real))" ]] &&
            KUBECONFIG=$dir/kubeconfig kubectl get serviceaccount default -n default >/dev/null 2>&1; then
            ok=1
            break
        fi
        sleep 0.5
    done
    ((ok)) || { cmd_status; die "nodes did not become Ready (logs in $dir/logs)"; }
    ((real)) && untaint_ready_real_nodes "$real"
    echo "cluster up: $nodes simulated and $real real nodes, state in $dir"
    echo "export KUBECONFIG=$dir/kubeconfig"
}

cmd_down() {
    local name other
    # Nodes first: they stop their pods' processes and remove their namespaces.
    stop_real_nodes
    for name in nodesim kube-scheduler kube-controller-manager kube-apiserver etcd dnsmasq registry \
        registry-private; do
        stop_process "$name"
    done
    other=$(other_cluster)
    if [[ -n $other ]]; then
        # The networks are the running cluster's: left to its own `down`.
        echo "cluster down: $dir (the networks belong to the cluster of $other, which runs)"
        return 0
    fi
    net_down
    [[ $(cat "$owner_file" 2>/dev/null) != "$dir" ]] || rm -f "$owner_file"
    echo "cluster down: $dir"
}

cmd_status() {
    local name p
    local real_pids=("$dir"/pids/*real-*.pid)
    real_pids=("${real_pids[@]##*/}")
    for name in etcd kube-apiserver kube-controller-manager kube-scheduler nodesim dnsmasq registry \
        registry-private "${real_pids[@]%.pid}"; do
        p=$dir/pids/$name.pid
        if pid_alive "$p"; then
            echo "$name: running (pid $(cat "$p"))"
        else
            echo "$name: stopped"
        fi
    done
    if pid_alive "$dir/pids/kube-apiserver.pid"; then
        KUBECONFIG=$dir/kubeconfig kubectl get nodes -o wide 2>/dev/null || true
    fi
}

(($# >= 2)) || usage
cmd=$1
mkdir -p "$2"
dir=$(cd "$2" && pwd)
shift 2
case $cmd in
up) cmd_up "$@" ;;
down) cmd_down ;;
real-node) real_node_main "${1:?node index}" ;; # inside the node's namespaces (launch_real_nodes)
status) cmd_status ;;
stop) cmd_stop "$@" ;;
start) cmd_start "$@" ;;
*) usage ;;
esac
