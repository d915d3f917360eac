#!/bin/sh
# Memory errors the ECC hardware found, from EDAC
# (/sys/devices/system/edac/mc/mc*/ce_count, ue_count), since the previous
# run (the counts are kept in STATE_DIR; the first run records them and
# reports skip).
#
# Items: "ecc:<memory controller>"; "ecc" (skip) without EDAC.
# Environment:
#   MEM_ECC_CE_MAX  highest healthy count of corrected errors since the previous run (default 10)
#   MEM_ECC_UE_MAX  highest healthy count of uncorrected errors since the previous run (default 0)
set -u
# shellcheck source=SCRIPTDIR/../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

ce_max=${MEM_ECC_CE_MAX:-10}
ue_max=${MEM_ECC_UE_MAX:-0}

current=$(for mc in "$HR"/sys/devices/system/edac/mc/mc[0-9]*; do
    [ -r "$mc/ce_count" ] || continue
    echo "${mc##*/}.ce $(cat "$mc/ce_count")"
    echo "${mc##*/}.ue $(cat "$mc/ue_count" 2>/dev/null || echo 0)"
done)
mcs=$(printf '%s\n' "$current" | sed -n 's/\.ce .*//p')
if [ -z "$mcs" ]; then
    skip ecc "no EDAC memory controller (virtual machine, memory without ECC, or no EDAC driver loaded)"
    exit 0
fi
if ! state_ready; then
    for m in $mcs; do skip "ecc:$m" "$NO_STATE_REASON"; done
    exit 0
fi
deltas=$(printf '%s\n' "$current" | delta edac)
if [ $? -eq 10 ]; then
    for m in $mcs; do skip "ecc:$m" "$BASELINE_REASON"; done
    exit 0
fi
printf '%s\n' "$deltas" | awk -v ce_max="$ce_max" -v ue_max="$ue_max" '
    { m = $1; sub(/\.[a-z]+$/, "", m); k = substr($1, length(m) + 2); v[m, k] = $2; if (!(m in seen)) { seen[m] = 1; order[++n] = m } }
    END {
        for (i = 1; i <= n; i++) {
            m = order[i]
            if (v[m, "ue"] > ue_max) printf "err ecc:%s %d uncorrected memory error(s) since the previous run (limit %d)\n", m, v[m, "ue"], ue_max
            else if (v[m, "ce"] > ce_max) printf "err ecc:%s %d corrected memory errors since the previous run (limit %d): a failing module?\n", m, v[m, "ce"], ce_max
            else print "ok ecc:" m
        }
    }'
state_commit
