#!/bin/bash
# The node's Kubernetes components: the kubelet answers its health endpoint,
# the container runtime accepts a connection on its socket, and the API
# server (the control plane) accepts a connection.
#
# * kubelet-healthz: GET http://127.0.0.1:10248/healthz answers 200 "ok".
#   Needs the node's network namespace (hostNetwork, or local mode on the
#   node). A kubelet that is gone refuses the connection; one that is
#   stopped or hung accepts it and never answers: both are err.
# * runtime-socket: the runtime endpoint of the node's kubelet (its
#   --container-runtime-endpoint, seen through HOST_ROOT's /proc), else the
#   first of SVC_RUNTIME_SOCKETS that accepts, accepts a unix connection
#   ("$COMBO_RUNNER" probe-socket): a runtime that died and left its socket
#   file behind refuses it. Needs enableSys. The process table is read with
#   shell builtins, no process per entry: a node's thousands of processes
#   cost milliseconds.
# * apiserver: a TCP connection to KUBERNETES_SERVICE_HOST:PORT (in a pod).
#
# Items: "kubelet-healthz", "runtime-socket", "apiserver".
# Environment:
#   SVC_KUBELET_HEALTHZ   host:port of the kubelet's healthz; empty skips it (default 127.0.0.1:10248)
#   SVC_RUNTIME_SOCKETS   sockets looked for when the kubelet's endpoint is unknown
#                         (default "/run/containerd/containerd.sock /run/crio/crio.sock
#                         /var/run/crio/crio.sock /run/cri-dockerd.sock /var/run/dockershim.sock")
#   SVC_HTTP_TIMEOUT      seconds per connection (default 3)
#   COMBO_RUNNER          the runner binary, which connects to the socket (set by the runner)
set -u
# shellcheck source=SCRIPTDIR/../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

healthz=${SVC_KUBELET_HEALTHZ-127.0.0.1:10248}
sockets=${SVC_RUNTIME_SOCKETS:-/run/containerd/containerd.sock /run/crio/crio.sock /var/run/crio/crio.sock /run/cri-dockerd.sock /var/run/dockershim.sock}
limit=${SVC_HTTP_TIMEOUT:-3}

# http_get HOST PORT PATH: the status line and body of a plain HTTP GET.
http_get() {
    # shellcheck disable=SC2016 # expanded by the inner bash, from its arguments
    timeout "$limit" bash -c 'exec 3<>"/dev/tcp/$1/$2" || exit 1
        printf "GET %s HTTP/1.0\r\nHost: %s\r\n\r\n" "$3" "$1" >&3
        cat <&3 || true' _ "$1" "$2" "$3" 2>/dev/null
}

if [ -n "$healthz" ]; then
    if ! k8s_node; then
        skip kubelet-healthz "not a Kubernetes node (not in a pod, no /var/lib/kubelet)"
    elif ! host_net; then
        skip kubelet-healthz "not in the node's network namespace (needs hostNetwork)"
    elif ! reply=$(http_get "${healthz%:*}" "${healthz##*:}" /healthz) || [ -z "$reply" ]; then
        # Refused, timed out, or closed without a word.
        echo "err kubelet-healthz no answer from http://$healthz/healthz within ${limit}s (the kubelet is not running or hangs)"
    else
        status=$(head -n 1 <<<"$reply" | tr -d '\r')
        body=$(tail -n 1 <<<"$reply" | tr -d '\r')
        case $status in
            HTTP/*\ 200*) if [ "$body" = ok ]; then echo "ok kubelet-healthz"; else echo "err kubelet-healthz healthz answered 200 but ${body:0:80}"; fi ;;
            *) echo "err kubelet-healthz healthz answered ${status:0:40}: ${body:0:120}" ;;
        esac
    fi
fi

# flag NAME: the value of --NAME in the kubelet's arguments (the array
# args), given as --NAME=VALUE or --NAME VALUE.
flag() {
    local i
    for ((i = 1; i < ${#args[@]}; i++)); do
        case ${args[i]} in
            "--$1="*) echo "${args[i]#*=}"; return ;;
            "--$1") echo "${args[i + 1]:-}"; return ;;
        esac
    done
}

# kubelet_endpoint: the --container-runtime-endpoint of the node's kubelet
# (the one whose --hostname-override is NODE_NAME, else the only one).
# Builtins only per process: read stops at argv[0]'s NUL, and only a
# kubelet's whole command line is read.
kubelet_endpoint() {
    local f argv0 ep mine="" any="" n=0
    local -a args
    for f in "$HR"/proc/[0-9]*/cmdline; do
        # Kernel threads have an empty command line: read fails.
        IFS= read -r -d "" argv0 2>/dev/null <"$f" || continue
        [[ $argv0 == *kubelet ]] || continue
        mapfile -t -d "" args 2>/dev/null <"$f" || continue
        n=$((n + 1))
        ep=$(flag container-runtime-endpoint)
        [ -n "$ep" ] || continue
        any=$ep
        if [ -n "${NODE_NAME:-}" ] && [ "$(flag hostname-override)" = "$NODE_NAME" ]; then
            mine=$ep
        fi
    done
    if [ -n "$mine" ]; then echo "$mine"; elif [ "$n" -eq 1 ]; then echo "$any"; fi
}

# connect SOCKET: 0 when a daemon accepts a connection on the node's unix
# socket SOCKET; else 1 with the reason in $why, or 3 when this runner
# cannot connect (no COMBO_RUNNER, or one without probe-socket).
connect() {
    local out code
    if [ ! -e "$HR$1" ]; then why="no such file"; return 1; fi
    if [ ! -S "$HR$1" ]; then why="not a socket"; return 1; fi
    if [ -z "${COMBO_RUNNER:-}" ] || [ ! -x "$COMBO_RUNNER" ]; then return 3; fi
    out=$(bounded "$COMBO_RUNNER" probe-socket --timeout-ms "$((limit * 1000))" "$HR$1" 2>&1)
    code=$?
    case $code in
        0) return 0 ;;
        1) why=$(head -n 1 <<<"$out"); return 1 ;;
    esac
    if timed_out "$code"; then
        why=$(limit_why "$COMBO_RUNNER probe-socket")
        return 1
    fi
    return 3
}
no_probe="no COMBO_RUNNER with the probe-socket subcommand: the runtime socket cannot be connected to"

if ! k8s_node; then
    skip runtime-socket "not a Kubernetes node (not in a pod, no /var/lib/kubelet)"
elif ! host_visible; then
    skip runtime-socket "the node's files are not visible (needs enableSys)"
else
    ep=$(kubelet_endpoint)
    ep=${ep#unix://}
    if [ -n "$ep" ]; then
        connect "$ep"
        case $? in
            0) echo "ok runtime-socket $ep" ;;
            3) skip runtime-socket "$no_probe" ;;
            *) echo "err runtime-socket the kubelet's runtime endpoint $ep: $why" ;;
        esac
    else
        found="" first="" first_why="" cannot=""
        for s in $sockets; do
            connect "$s"
            case $? in
                0) found=$s; break ;;
                3) cannot=1 ;;
                *) if [ -z "$first" ] && [ "$why" != "no such file" ]; then first=$s first_why=$why; fi ;;
            esac
        done
        if [ -n "$found" ]; then
            echo "ok runtime-socket $found"
        elif [ -n "$first" ]; then
            echo "err runtime-socket $first: $first_why"
        elif [ -n "$cannot" ]; then
            skip runtime-socket "$no_probe"
        else
            echo "err runtime-socket no container runtime socket: none of $sockets"
        fi
    fi
fi

if [ -z "${KUBERNETES_SERVICE_HOST:-}" ]; then
    skip apiserver "not in a pod (no KUBERNETES_SERVICE_HOST)"
else
    port=${KUBERNETES_SERVICE_PORT:-443}
    # shellcheck disable=SC2016 # expanded by the inner bash, from its arguments
    if timeout "$limit" bash -c 'exec 3<>"/dev/tcp/$1/$2"' _ "$KUBERNETES_SERVICE_HOST" "$port" 2>/dev/null; then
        echo "ok apiserver"
    else
        echo "err apiserver no TCP connection to the API server $KUBERNETES_SERVICE_HOST:$port within ${limit}s"
    fi
fi
