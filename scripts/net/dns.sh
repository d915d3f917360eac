#!/bin/bash
# The node's resolvers answer: a DNS query of a name to each nameserver of
# resolv.conf (and to the cluster DNS when NET_CLUSTER_DNS is set), over UDP
# and TCP, made by the runner itself ("$COMBO_RUNNER" dns), whose ok/err/skip
# lines are passed through.
#
# The name must exist (an answer other than NOERROR with records is err) when
# it is NET_DNS_NAME, or when the resolvers are the cluster's (the pod's own
# resolv.conf in a pod without enableSys, NET_CLUSTER_DNS); asked of the
# node's own resolvers (with enableSys, or in local mode) for the default
# cluster name, any answer, NXDOMAIN included, shows a working resolver, and
# only SERVFAIL, REFUSED or no answer are err.
#
# The node's resolvers are asked as the node asks them: with enableSys
# (HOST_ROOT is the node's root) the runner enters the node's network
# namespace (that of $HOST_ROOT/proc/1) to ask them, so that a loopback
# nameserver such as systemd-resolved's stub 127.0.0.53 answers; when its
# resolv.conf names that stub, resolved's upstream servers
# ($HOST_ROOT/run/systemd/resolve/resolv.conf) are asked too. Where the
# namespace cannot be entered a loopback nameserver is skip, never err.
#
# Items: "dns:<server>/<udp|tcp>" (the runner's), "nameservers" when the file
# is unreadable or lists no nameserver, "dns" when the runner cannot query.
# Environment:
#   NET_DNS_NAME       the name asked (default kubernetes.default.svc.cluster.local)
#   NET_RESOLV_CONF    the resolv.conf read (default $HOST_ROOT/etc/resolv.conf)
#   NET_CLUSTER_DNS    the cluster DNS address, IP[:PORT], asked too (default none)
#   NET_DNS_TRANSPORTS the transports asked, "udp", "tcp" or both (default "udp tcp");
#                      DNS over TCP is required (RFC 7766), so leave out tcp only
#                      for resolvers known to lack it
#   COMBO_RUNNER       the runner binary (set by the runner)
set -u
# shellcheck source=SCRIPTDIR/../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

conf=${NET_RESOLV_CONF:-$HR/etc/resolv.conf}
name=${NET_DNS_NAME:-kubernetes.default.svc.cluster.local}
cluster=${NET_CLUSTER_DNS:-}
runner=${COMBO_RUNNER:-}
transports=${NET_DNS_TRANSPORTS:-udp tcp}

if [ ! -r "$conf" ]; then
    echo "err nameservers cannot read $conf"
    exit 0
fi
if ! awk '$1 == "nameserver" && $2 != "" { found = 1 } END { exit !found }' "$conf"; then
    echo "err nameservers no nameserver in $conf"
    exit 0
fi
if [ -z "$runner" ] || [ ! -x "$runner" ]; then
    skip dns "no COMBO_RUNNER (a runner without the dns subcommand): resolvers not queried"
    exit 0
fi

# query ARGS...: the runner's dns lines, or one err/skip item when it
# printed none.
query() {
    local out code
    out=$("$runner" dns --name "$name" "${only[@]}" "$@" 2>&1)
    code=$?
    if grep -qE '^(ok|err|skip) ' <<<"$out"; then
        grep -E '^(ok|err|skip) ' <<<"$out"
        grep -vE '^(ok|err|skip) ' <<<"$out" >&2
    elif [ "$code" -eq 2 ]; then
        skip dns "the runner has no usable dns subcommand: $(tail -n 1 <<<"$out")"
    else
        echo "err dns $runner dns exited $code: $(tail -n 1 <<<"$out")"
    fi
}

only=()
case " $transports " in *" udp "*) only+=(--udp) ;; esac
case " $transports " in *" tcp "*) only+=(--tcp) ;; esac
if [ "${#only[@]}" -ne 1 ]; then
    only=()   # both (or neither named): the runner asks over both
fi
must=()
if [ -n "${NET_DNS_NAME:-}" ] || { [ -z "$HR" ] && [ -n "${POD_NAME:-}" ]; }; then
    must=(--must-exist)
fi
# With hostNetwork this process is in the node's network namespace (the pod
# spec is sure of it; the node's PID 1 need not be there, as with a kubelet
# in a namespace of its own); otherwise the runner enters the namespace of
# the node's PID 1.
netns=()
if [ "${COMBO_HOST_NETWORK:-}" = true ]; then
    netns=(--node-netns /proc/self/ns/net)
fi
query --resolv-conf "$conf" "${must[@]}" "${netns[@]}"
if [ -n "$cluster" ]; then
    query --server "$cluster" --must-exist
fi
