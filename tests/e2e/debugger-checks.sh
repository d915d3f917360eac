# shellcheck shell=bash disable=SC2154 # ns, debugger and nodes are the caller's
# Checks of a Debugger on the real nodes of a test cluster, shared by the
# scripts that roll the operator under it (helm.sh, upgrade.sh). Sourced;
# the caller defines fail, $ns, $debugger and the array nodes.

# wait_until SECONDS WHAT COMMAND...: runs COMMAND every second until it succeeds.
wait_until() {
    local limit=$1 what=$2 t
    shift 2
    for ((t = 0; t < limit; t++)); do
        "$@" >/dev/null 2>&1 && return 0
        sleep 1
    done
    fail "not within ${limit}s: $what"
}

summary_has_every_node() { # run-at ("": any run)
    local data n
    data=$(kubectl get configmap -n "$ns" "$debugger-summary" -o json | jq -c '.data // {}')
    for n in "${nodes[@]}"; do
        jq -e --arg n "$n" --arg r "$1" '.[$n] and ($r == "" or (.[$n] | contains($r)))' \
            <<<"$data" >/dev/null || return 1
    done
}

debugger_ready() {
    [[ $(kubectl get debugger -n "$ns" "$debugger" \
        -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}') == True ]]
}

# Polls every 500 ms until stopped, writing a line to $1 at each poll where a
# node is missing from the summary or the Debugger is not Ready.
watch_roll() {
    local polls=0
    while :; do
        summary_has_every_node "" || echo "$(date +%T.%N) a node is missing from the summary" >>"$1"
        debugger_ready || echo "$(date +%T.%N) the Debugger is not Ready" >>"$1"
        polls=$((polls + 1))
        echo "$polls" >"$1.polls"
        sleep 0.5
    done
}
