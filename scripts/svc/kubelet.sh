#!/bin/bash
# The node's Kubernetes components: the kubelet answers its health endpoint,
# the container runtime's socket is there, and the API server (the control
# plane) accepts a connection.
#
# * kubelet-healthz: GET http://127.0.0.1:10248/healthz answers 200 "ok".
#   Needs the node's network namespace (hostNetwork, or local mode on the
#   node). A kubelet that is gone refuses the connection; one that is
#   stopped or hung accepts it and never answers: both are err.
# * runtime-socket: the runtime endpoint of the node's kubelet (its
#   --container-runtime-endpoint, seen through HOST_ROOT's /proc), else the
#   first of SVC_RUNTIME_SOCKETS, is a socket. Needs enableSys.
# * apiserver: a TCP connection to KUBERNETES_SERVICE_HOST:PORT (in a pod).
#
# Items: "kubelet-healthz", "runtime-socket", "apiserver".
# Environment:
#   SVC_KUBELET_HEALTHZ   host:port of the kubelet's healthz; empty skips it (default 127.0.0.1:10248)
#   SVC_RUNTIME_SOCKETS   sockets looked for when the kubelet's endpoint is unknown
#                         (default "/run/containerd/containerd.sock /run/crio/crio.sock
#                         /var/run/crio/crio.sock /run/cri-dockerd.sock /var/run/dockershim.sock")
#   SVC_HTTP_TIMEOUT      seconds per connection (default 3)
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

# flag NAME: the value of --NAME in the argument lines on stdin.
flag() {
    awk -v f="--$1" 'p { print; exit } index($0, f "=") == 1 { print substr($0, length(f) + 2); exit } $0 == f { p = 1 }'
}

# kubelet_endpoint: the --container-runtime-endpoint of the node's kubelet
# (the one whose --hostname-override is NODE_NAME, else the only one).
kubelet_endpoint() {
    local f args ep mine="" any="" n=0
    for f in "$HR"/proc/[0-9]*/cmdline; do
        args=$(tr '\0' '\n' <"$f" 2>/dev/null) || continue
        [[ $(head -n 1 <<<"$args") == *kubelet ]] || continue
        n=$((n + 1))
        ep=$(flag container-runtime-endpoint <<<"$args")
        [ -n "$ep" ] || continue
        any=$ep
        if [ -n "${NODE_NAME:-}" ] && [ "$(flag hostname-override <<<"$args")" = "$NODE_NAME" ]; then
            mine=$ep
        fi
    done
    if [ -n "$mine" ]; then echo "$mine"; elif [ "$n" -eq 1 ]; then echo "$any"; fi
}

if ! k8s_node; then
    skip runtime-socket "not a Kubernetes node (not in a pod, no /var/lib/kubelet)"
elif ! host_visible; then
    skip runtime-socket "the node's files are not visible (needs enableSys)"
else
    ep=$(kubelet_endpoint)
    ep=${ep#unix://}
    if [ -n "$ep" ]; then
        if [ -S "$HR$ep" ]; then
            echo "ok runtime-socket $ep"
        else
            echo "err runtime-socket the kubelet's runtime endpoint $ep is not a socket"
        fi
    else
        found=""
        for s in $sockets; do
            if [ -S "$HR$s" ]; then found=$s; break; fi
        done
        if [ -n "$found" ]; then
            echo "ok runtime-socket $found"
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
