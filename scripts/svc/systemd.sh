#!/bin/sh
# Host services: no failed systemd unit, the kubelet and the container
# runtime active.
#
# The host's systemd is reached with nsenter into PID 1 when HOST_ROOT is not
# "/" (enableSys: hostPID and the host root at /host), or directly when this
# machine's PID 1 is systemd. Otherwise the host is not reachable and the
# script reports its items as skipped (it never fails for that).
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

if ! host_systemd; then
    for item in failed-units ${kubelet:+kubelet} ${runtimes:+container-runtime}; do
        skip "$item" "$SYSTEMD_WHY: service checks skipped"
    done
    exit 0
fi

failed=""
for unit in $(hostctl list-units --state=failed --no-legend --plain 2>/dev/null | awk '{ print $1 }'); do
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
    load=$(hostctl show -p LoadState --value "$2" 2>/dev/null)
    state=$(hostctl is-active "$2" 2>/dev/null)
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
        if [ "$(hostctl show -p LoadState --value "$r" 2>/dev/null)" = loaded ]; then
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
