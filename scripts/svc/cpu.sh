#!/bin/sh
# CPU: average usage since the previous run (/proc/stat, kept in STATE_DIR;
# the first run records it and reports skip), the 5-minute load average per
# CPU, and the CPU model (all alike, or SVC_CPU_MODEL).
#
# Items: "cpu:usage", "cpu:load", "cpu:model" (the ok line names the model).
# Environment:
#   SVC_CPU_USAGE_MAX_PERCENT  highest healthy busy share of all CPUs (default 95)
#   SVC_CPU_MIN_SECONDS        shortest time since the previous run over which usage is
#                              judged; a shorter one is skipped and the older record kept (default 60)
#   SVC_LOAD_MAX_PER_CPU       highest healthy 5-minute load average per CPU (default 4)
#   SVC_CPU_MODEL              shell glob the model name must match (default: any, but one model)
set -u
# shellcheck source=SCRIPTDIR/../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

usage_max=${SVC_CPU_USAGE_MAX_PERCENT:-95}
min_s=${SVC_CPU_MIN_SECONDS:-60}
load_max=${SVC_LOAD_MAX_PER_CPU:-4}
model_want=${SVC_CPU_MODEL:-}
stat="$HR/proc/stat"

# busy_total: "busy <jiffies>" and "total <jiffies>" of all CPUs: idle, iowait
# and steal are not busy; guest time is already in user and nice.
busy_total() {
    awk '$1 == "cpu" {
        t = 0; for (i = 2; i <= 9 && i <= NF; i++) t += $i
        printf "busy %.0f\ntotal %.0f\n", t - $5 - $6 - $9, t
    }' "$stat"
}
if [ ! -r "$stat" ]; then
    skip cpu:usage "cannot read $stat"
elif ! state_ready; then
    skip cpu:usage "$NO_STATE_REASON"
else
    age=$(state_age cpustat)
    if [ -n "$age" ] && awk -v a="$age" -v m="$min_s" 'BEGIN { exit !(a < m) }'; then
        # Too short to judge: the older record stays, so the next run spans more.
        skip cpu:usage "only ${age}s since the previous record, fewer than ${min_s}s"
    else
        d=$(busy_total | delta cpustat)
        if [ $? -eq 10 ]; then
            skip cpu:usage "$BASELINE_REASON"
        else
            printf '%s\n' "$d" | awk -v max="$usage_max" -v age="$age" '
                { v[$1] = $2 }
                END {
                    if (v["total"] <= 0) { print "skip cpu:usage no CPU time passed since the previous run"; exit }
                    u = v["busy"] * 100 / v["total"]
                    if (u > max) printf "err cpu:usage CPUs %.0f%% busy on average over the %.0fs since the previous run (limit %s%%)\n", u, age, max
                    else print "ok cpu:usage"
                }'
        fi
        state_commit
    fi
fi

cpus=$(grep -c '^cpu[0-9]' "$stat" 2>/dev/null)
if [ -z "$cpus" ] || [ "$cpus" -eq 0 ] || [ ! -r "$HR/proc/loadavg" ]; then
    skip cpu:load "cannot read the CPU count or $HR/proc/loadavg"
else
    awk -v n="$cpus" -v max="$load_max" '{
        if ($2 / n > max) printf "err cpu:load load average %s over 5 minutes on %d CPUs (%.1f per CPU, limit %s)\n", $2, n, $2 / n, max
        else print "ok cpu:load"
    }' "$HR/proc/loadavg"
fi

models=$(awk -F': *' '$1 ~ /^(model name|Processor|cpu model)[ \t]*$/ { print $2 }' "$HR/proc/cpuinfo" 2>/dev/null | sort | uniq -c)
if [ -z "$models" ]; then
    skip cpu:model "no model name in $HR/proc/cpuinfo"
elif [ "$(printf '%s\n' "$models" | wc -l)" -gt 1 ]; then
    echo "err cpu:model CPUs of different models: $(printf '%s\n' "$models" | sed 's/^ *//' | tr '\n' ';')"
else
    model=$(printf '%s\n' "$models" | sed 's/^ *[0-9]* //')
    if [ -n "$model_want" ] && ! matches_any "$model" "$model_want"; then
        echo "err cpu:model $model, expected $model_want (SVC_CPU_MODEL)"
    else
        echo "ok cpu:model $model"
    fi
fi
