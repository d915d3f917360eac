#!/bin/sh
# Host services: no failed systemd unit, the kubelet and the container
# runtime active.
#
# The host's systemd is reached with nsenter into PID 1 when HOST_ROOT is not
# "/" (enableSys: hostPID and the host root at /host), or directly when this
# machine's PID 1 is systemd. Otherwise the host is not reachable and the
# script reports no item (it never fails for that).
#
# Items: "failed-units", "kubelet", "container-runtime".
# Environment:
#   SVC_KUBELET_UNIT    the kubelet's unit; empty skips the check (default kubelet)
#   SVC_RUNTIME_UNITS   container runtime units, the first one installed is
#                       checked; empty skips (default "containerd crio docker")
#   SVC_IGNORE_UNITS    failed units to ignore, shell globs (default none)
set -u
# shellcheck source=SCRIPTDIR/../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

kubelet=${SVC_KUBELET_UNIT-kubelet}
runtimes=${SVC_RUNTIME_UNITS-containerd crio docker}
ignore=${SVC_IGNORE_UNITS:-}

pid1=$(cat "$HR/proc/1/comm" 2>/dev/null || true)
if [ "$pid1" != systemd ]; then
    echo "host systemd not reachable (PID 1 of $HOST_ROOT is ${pid1:-unknown}): service checks skipped"
    exit 0
fi
if [ "$HR" != "" ]; then
    sysctl() { nsenter --target 1 --mount --uts --ipc --net --pid -- systemctl "$@"; }
else
    sysctl() { systemctl "$@"; }
fi
if ! sysctl is-system-running >/dev/null 2>&1 && ! sysctl list-units --no-legend >/dev/null 2>&1; then
    echo "host systemd not reachable through systemctl: service checks skipped"
    exit 0
fi

failed=""
for unit in $(sysctl list-units --state=failed --no-legend --plain 2>/dev/null | awk '{ print $1 }'); do
    if ! matches_any "$unit" "$ignore"; then
        failed="$failed $unit"
    fi
done
if [ -n "$failed" ]; then
    echo "err failed-units failed systemd units:$failed"
else
    echo "ok failed-units"
fi

# check ITEM UNIT: the unit must be loaded and active.
check() {
    load=$(sysctl show -p LoadState --value "$2" 2>/dev/null)
    state=$(sysctl is-active "$2" 2>/dev/null)
    if [ "$load" != loaded ]; then
        echo "err $1 unit $2 not found"
    elif [ "$state" != active ]; then
        echo "err $1 unit $2 is ${state:-unknown}"
    else
        echo "ok $1"
    fi
}

if [ -n "$kubelet" ]; then
    check kubelet "$kubelet"
fi
if [ -n "$runtimes" ]; then
    found=""
    for r in $runtimes; do
        if [ "$(sysctl show -p LoadState --value "$r" 2>/dev/null)" = loaded ]; then
            found=$r
            break
        fi
    done
    if [ -n "$found" ]; then
        check container-runtime "$found"
    else
        echo "err container-runtime none of the units $runtimes is installed"
    fi
fi
