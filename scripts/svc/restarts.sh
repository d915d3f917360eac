#!/bin/sh
# Frequent restarts of the kubelet and the container runtime: the increase
# of systemd's NRestarts of their units since the previous run (kept in
# STATE_DIR; the first run records it and reports skip). Needs the host's
# systemd, reached as in systemd.sh (each systemctl bounded by
# CHECK_COMMAND_TIMEOUT; a count it cuts is skipped, naming the command).
#
# Items: "restarts:kubelet", "restarts:container-runtime".
# Environment:
#   SVC_RESTARTS_MAX   highest healthy count of restarts since the previous run (default 2)
#   SVC_KUBELET_UNIT   the kubelet's unit; empty skips it (default kubelet)
#   SVC_RUNTIME_UNITS  container runtime units, the first one installed is
#                      checked; empty skips it (default "containerd crio docker")
#   CHECK_COMMAND_TIMEOUT  seconds each systemctl may take (default 10)
set -u
# shellcheck source=SCRIPTDIR/../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

max=${SVC_RESTARTS_MAX:-2}
kubelet=${SVC_KUBELET_UNIT-kubelet}
runtimes=${SVC_RUNTIME_UNITS-containerd crio docker}
items="${kubelet:+restarts:kubelet} ${runtimes:+restarts:container-runtime}"

if ! host_systemd; then
    for i in $items; do skip "$i" "$SYSTEMD_WHY"; done
    exit 0
fi
if ! state_ready; then
    for i in $items; do skip "$i" "$NO_STATE_REASON"; done
    exit 0
fi
runtime=""
for r in $runtimes; do
    if [ "$(hostctl show -p LoadState --value "$r" 2>/dev/null)" = loaded ]; then
        runtime=$r
        break
    fi
done
current=""
for pair in ${kubelet:+kubelet=$kubelet} ${runtime:+container-runtime=$runtime}; do
    n=$(hostctl show -p NRestarts --value "${pair#*=}" 2>/dev/null)
    if timed_out $?; then
        skip "restarts:${pair%%=*}" "$(limit_why "systemctl show ${pair#*=}")"
        continue
    fi
    case $n in
        '' | *[!0-9]*) skip "restarts:${pair%%=*}" "systemd does not count the restarts of ${pair#*=} (NRestarts needs systemd 235)" ;;
        *) current="$current${pair%%=*} $n
" ;;
    esac
done
if [ -n "$runtimes" ] && [ -z "$runtime" ]; then
    skip restarts:container-runtime "none of the units $runtimes is installed"
fi
[ -n "$current" ] || exit 0
deltas=$(printf '%s' "$current" | delta nrestarts)
if [ $? -eq 10 ]; then
    printf '%s' "$current" | while read -r item _n; do skip "restarts:$item" "$BASELINE_REASON"; done
    exit 0
fi
printf '%s\n' "$deltas" | while read -r item d _total; do
    [ -n "$item" ] || continue
    if [ "$d" -gt "$max" ]; then
        echo "err restarts:$item restarted $d times since the previous run (limit $max)"
    else
        echo "ok restarts:$item"
    fi
done
state_commit
