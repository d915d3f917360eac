#!/usr/bin/env bash
# What a full default inspection costs on a production-like node (measures;
# asserts nothing). The node is a fixture tree given to the runner as
# HOST_ROOT, as a pod with enableSys sees /host:
#
#   * 5,000 processes in proc/ (pause, shims, sleeps) and one kubelet, whose
#     --container-runtime-endpoint is a live unix socket of the tree;
#   * a mount table with the node's own filesystems (/, /var,
#     /var/lib/kubelet, /boot/efi), 200 container overlays and their shm,
#     50 CSI PersistentVolumes (staging and pod mounts) and 100 projected
#     volumes;
#   * 200 veth interfaces beside eth0, disks, PCI devices, a thermal zone,
#     a kernel log of 2,000 records, and this machine's /proc files.
#
# The release runner runs every default script (scripts/) in local mode
# (combo-runner --once). The first run records the baselines of the
# since-the-previous-run checks and is not counted; the next RUNS runs are,
# each printed with its wall time and CPU time (user + system of the runner
# and every script and command it waited for, from GNU time) beside the
# target: at most 1 CPU-second and 10 s. With BASE=<git revision>, the
# scripts of that revision are measured the same way first, for comparison.
#
#   tests/bench/node-cost.sh                      (RUNS=3)
#   BASE=97e47aa RUNS=2 tests/bench/node-cost.sh
#   RUNNER=target/debug/combo-runner tests/bench/node-cost.sh   (no release build)
#   KEEP=1 ...   keeps the fixture node and the last run's table (in /tmp/node-cost.*)
#
# Not like a node: this machine's PID 1 is not systemd, so the systemd items
# skip (their systemctl calls are not measured); nothing listens on the
# kubelet's healthz port and the resolver (127.0.0.1) refuses at once.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
runs=${RUNS:-3}
procs=${PROCS:-5000}
overlays=${OVERLAYS:-200}
pvs=${PVS:-50}
work=$(mktemp -d /tmp/node-cost.XXXXXX)
node=$work/node
listener=""
cleanup() {
    if [[ -n $listener ]]; then kill "$listener" 2>/dev/null || true; fi
    [[ -n ${KEEP:-} ]] || rm -rf "$work"
}
trap cleanup EXIT

command -v /usr/bin/time >/dev/null || { echo "needs GNU time (apt-get install time)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "needs python3 (to listen on the runtime socket)" >&2; exit 2; }
if [[ -n ${RUNNER:-} ]]; then
    bin=$RUNNER
else
    cargo build --release -q -p combo-runner --manifest-path "$repo/Cargo.toml"
    bin=$repo/target/release/combo-runner
fi

# --- The node -----------------------------------------------------------------

# copy SRC DEST: a /proc or /sys file of this machine into the tree.
copy() {
    mkdir -p "$(dirname "$node/$2")"
    cat "$1" >"$node/$2" 2>/dev/null || true
}
mkdir -p "$node/proc/1" "$node/var/lib/kubelet/pki" "$node/run/containerd" \
    "$node/boot/efi" "$node/etc" "$node/dev"
for f in stat loadavg meminfo vmstat diskstats uptime cpuinfo mdstat \
    pressure/cpu pressure/memory pressure/io sys/kernel/pid_max sys/kernel/threads-max \
    sys/kernel/random/boot_id sys/fs/file-nr \
    sys/net/netfilter/nf_conntrack_count sys/net/netfilter/nf_conntrack_max; do
    copy "/proc/$f" "proc/$f"
done
for f in route ipv6_route if_inet6 dev; do
    copy "/proc/net/$f" "proc/1/net/$f"
done
echo "nameserver 127.0.0.1" >"$node/etc/resolv.conf"
printf 'systemd\n' >"$node/proc/1/comm"
# PID 1 in this network namespace, as with hostNetwork.
mkdir -p "$node/proc/1/ns"
ln -s "$(readlink /proc/self/ns/net)" "$node/proc/1/ns/net"
printf '/sbin/init\0' >"$node/proc/1/cmdline"

# Processes: pauses, shims and workloads; a kernel thread has no command line.
for ((pid = 2; pid <= procs; pid++)); do
    d=$node/proc/$pid
    mkdir -p "$d"
    case $((pid % 4)) in
        0) printf 'pause\n' >"$d/comm"; printf '/pause\0' >"$d/cmdline" ;;
        1) printf 'containerd-shim\n' >"$d/comm"
           printf '/usr/bin/containerd-shim-runc-v2\0-namespace\0k8s.io\0-id\0%064d\0' "$pid" >"$d/cmdline" ;;
        2) printf 'sleep\n' >"$d/comm"; printf 'sleep\0infinity\0' >"$d/cmdline" ;;
        3) printf 'kworker/%d:1\n' "$pid" >"$d/comm"; : >"$d/cmdline" ;;
    esac
done
mkdir -p "$node/proc/1234"
printf 'kubelet\n' >"$node/proc/1234/comm"
printf '/usr/bin/kubelet\0--config=/var/lib/kubelet/config.yaml\0--container-runtime-endpoint=unix:///run/containerd/containerd.sock\0--hostname-override=bench\0' \
    >"$node/proc/1234/cmdline"
python3 -c 'import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(64)
while True:
    c, _ = s.accept(); c.close()' "$node/run/containerd/containerd.sock" &
listener=$!

# The mount table: the node's filesystems, then its pods' and containers'.
{
    echo "20 1 0:20 / /sys rw - sysfs sysfs rw"
    echo "21 1 0:21 / /proc rw - proc proc rw"
    echo "22 1 0:5 / /dev rw - devtmpfs udev rw"
    echo "25 1 253:0 / / rw,relatime - ext4 /dev/vda1 rw"
    echo "26 25 253:16 / /var rw,relatime - xfs /dev/vdb1 rw,attr2"
    echo "27 26 253:32 / /var/lib/kubelet rw,relatime - ext4 /dev/vdc rw"
    echo "28 25 253:2 / /boot/efi rw - vfat /dev/vda2 rw"
    echo "29 25 0:25 / /run rw - tmpfs tmpfs rw"
    id=100
    for ((i = 0; i < overlays; i++)); do
        c=$(printf '%064x' "$i")
        echo "$((id++)) 29 0:$((100 + i)) / /run/containerd/io.containerd.runtime.v2.task/k8s.io/$c/rootfs rw - overlay overlay rw,lowerdir=/var/lib/containerd/l/$i,upperdir=/var/lib/containerd/u/$i,workdir=/var/lib/containerd/w/$i"
        if ((i % 2 == 0)); then
            echo "$((id++)) 29 0:$((400 + i)) / /run/containerd/io.containerd.grpc.v1.cri/sandboxes/$c/shm rw - tmpfs shm rw,size=65536k"
        fi
    done
    for ((i = 0; i < pvs; i++)); do
        uid=$(printf '%08x-0000-4000-8000-%012x' "$i" "$i")
        echo "$((id++)) 27 8:$((16 * i + 32)) / /var/lib/kubelet/plugins/kubernetes.io/csi/ebs.csi.aws.com/$i/globalmount rw - ext4 /dev/nvme${i}n1 rw"
        echo "$((id++)) 27 8:$((16 * i + 32)) / /var/lib/kubelet/pods/$uid/volumes/kubernetes.io~csi/pvc-$i/mount rw - ext4 /dev/nvme${i}n1 rw"
    done
    for ((i = 0; i < 2 * pvs; i++)); do
        echo "$((id++)) 27 0:$((700 + i)) / /var/lib/kubelet/pods/p$i/volumes/kubernetes.io~projected/kube-api-access-$i rw - tmpfs tmpfs rw"
    done
} >"$node/proc/1/mountinfo"
# Every mount point exists, so scripts that look at pod mounts find them.
awk '$5 != "/" { print $5 }' "$node/proc/1/mountinfo" | sed "s|^|$node|" | xargs mkdir -p

# Interfaces: eth0 and a veth per pod.
iface() {
    local d=$node/sys/class/net/$1
    mkdir -p "$d/statistics"
    echo 0x1003 >"$d/flags"; echo up >"$d/operstate"; echo 1500 >"$d/mtu"
    for s in rx_errors tx_errors rx_dropped tx_dropped rx_packets tx_packets; do echo 1000 >"$d/statistics/$s"; done
}
iface eth0
mkdir -p "$node/sys/class/net/eth0/device"
echo 10000 >"$node/sys/class/net/eth0/speed"; echo full >"$node/sys/class/net/eth0/duplex"
for ((i = 0; i < overlays; i++)); do iface "veth$(printf '%07x' "$i")"; done
# Disks, PCI devices, a thermal zone.
for disk in vda vdb vdc; do mkdir -p "$node/sys/block/$disk"; echo 1 >"$node/sys/block/$disk/size"; done
for ((i = 0; i < 120; i++)); do
    d=$node/sys/bus/pci/devices/0000:$(printf '%02x' $((i / 8))):00.$((i % 8))
    mkdir -p "$d"; echo 0x020000 >"$d/class"; echo 0x8086 >"$d/vendor"
done
mkdir -p "$node/sys/class/thermal/thermal_zone0"
echo x86_pkg_temp >"$node/sys/class/thermal/thermal_zone0/type"
echo 45000 >"$node/sys/class/thermal/thermal_zone0/temp"
# The kernel log, in /dev/kmsg format.
for ((i = 1; i <= 2000; i++)); do
    printf '6,%d,%d,-;eth0: link is up, pod %d\n' "$i" "$((i * 1000000))" "$i"
done >"$node/dev/kmsg"

# --- Runs ---------------------------------------------------------------------

# once SCRIPTS STATE: one run; prints "wall cpu items disk_items".
once() {
    /usr/bin/time -f '%e %U %S' -o "$work/time" \
        "$bin" --once --scripts "$1" --state-dir "$2" --host-root "$node" \
        --output table >"$work/out" 2>&1 || true
    local wall user sys
    read -r wall user sys < <(tail -n 1 "$work/time")
    printf '%s %s %s %s\n' "$wall" "$(echo "$user + $sys" | bc)" \
        "$(sed -n 's/^run [^ ]*: \([0-9]*\) items.*/\1/p' "$work/out")" \
        "$(grep -c '^disk ' "$work/out")"
}

# measure NAME SCRIPTS: a baseline run, then RUNS counted runs.
measure() {
    local state=$work/state-$1 i wall cpu items disk
    once "$2" "$state" >/dev/null
    echo "$1: $procs processes, $overlays container overlays, $pvs PVs, $(wc -l <"$node/proc/1/mountinfo") mounts"
    for ((i = 1; i <= runs; i++)); do
        read -r wall cpu items disk < <(once "$2" "$state")
        printf '  run %d: wall %.2f s (target at most 10 s), CPU %.2f s (target at most 1 CPU-s); %d items, %d of them disk\n' \
            "$i" "$wall" "$cpu" "$items" "$disk"
    done
    grep -E '^[a-z]+ +[^ ]+ +FAIL ' "$work/out" | sed 's/^/  failed: /' | head -n 12 || true
}

if [[ -n ${BASE:-} ]]; then
    mkdir -p "$work/base"
    git -C "$repo" archive "$BASE" scripts | tar -x -C "$work/base"
    measure "scripts of $BASE" "$work/base/scripts"
fi
cp -r "$repo/scripts" "$work/scripts"
measure "scripts of this tree" "$work/scripts"
