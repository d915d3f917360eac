#!/bin/sh
# Host services: no failed systemd unit, the kubelet and the container
# runtime active.
#
# The host's systemd is reached with nsenter into PID 1 when HOST_ROOT is not
# "/" (enableSys: hostPID and the host root at /host), or directly when this
# machine's PID 1 is systemd. Otherwise the host is not reachable and the
# script reports its items as skipped (it never fails for that). Every
# systemctl is bounded by CHECK_COMMAND_TIMEOUT: a systemd that does not
# answer within it is err (failed-units), naming the command and the limit.
#
# Items: "failed-units", "kubelet", "container-runtime".
# Environment:
#   SVC_KUBELET_UNIT    the kubelet's unit; empty skips the check (default kubelet)
#   SVC_RUNTIME_UNITS   container runtime units, the first one installed is
#                       checked; empty skips (default "containerd crio docker")
#   SVC_IGNORE_UNITS    failed units to ignore, shell globs (default none)
#   CHECK_COMMAND_TIMEOUT  seconds each systemctl may take (default 10)
set -u
# shellcheck source=SCRIPTDIR/../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

kubelet=${SVC_KUBELET_UNIT-kubelet}
runtimes=${SVC_RUNTIME_UNITS-containerd crio docker}
ignore=${SVC_IGNORE_UNITS:-}

host_systemd
code=$?
if [ "$code" -ne 0 ]; then
    items="failed-units ${kubelet:+kubelet} ${runtimes:+container-runtime}"
    if [ "$code" -eq 2 ]; then
        # A systemd that does not answer is a fault of the node.
        echo "err failed-units $SYSTEMD_WHY"
        items=${items#failed-units}
    fi
    for item in $items; do
        skip "$item" "$SYSTEMD_WHY: service checks skipped"
    done
    exit 0
fi

units=$(hostctl list-units --state=failed --no-legend --plain 2>/dev/null)
code=$?
failed=""
for unit in $(printf '%s\n' "$units" | awk '{ print $1 }'); do
    if ! matches_any "$unit" "$ignore"; then
        failed="$failed $unit"
    fi
done
if timed_out "$code"; then
    echo "err failed-units $(limit_why "systemctl list-units")"
elif [ -n "$failed" ]; then
    echo "err failed-units failed systemd units:$failed"
else
    echo "ok failed-units"
fi

# check ITEM UNIT: the unit must be loaded and active.
check() {
    load=$(hostctl show -p LoadState --value "$2" 2>/dev/null)
    if timed_out $?; then
        echo "err $1 $(limit_why "systemctl show $2")"
        return
    fi
    state=$(hostctl is-active "$2" 2>/dev/null)
    if timed_out $?; then
        echo "err $1 $(limit_why "systemctl is-active $2")"
    elif [ "$load" != loaded ]; then
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
