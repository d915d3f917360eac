#!/usr/bin/env bash
# Prints the suite report: one line per area from the cases the tests
# recorded (api/src/suite.rs, `record`), then every case that was not
# handled or lost something.
#   tests/suite-report.sh [FILE]      default target/suite-report.tsv
set -euo pipefail
file=${1:-$(dirname "${BASH_SOURCE[0]}")/../target/suite-report.tsv}
if [[ ! -s $file ]]; then
    echo "suite report: no case recorded"
    exit 0
fi
awk -F'\t' '
    { tried[$1] += $2; handled[$1] += $3; lost[$1] += $4; cases[$1]++ }
    $3 < $2 || $4 > 0 { bad[++n] = sprintf("1  %s: %s: %d of %d handled, %d lost", $1, $5, $3, $2, $4) }
    END {
        for (a in tried) printf "0%s: %d of %d handled (%d cases), %d reports or keys lost\n", a, handled[a], tried[a], cases[a], lost[a]
        for (i = 1; i <= n; i++) print bad[i]
    }' "$file" | sort | cut -c2-
# The fault matrix on real nodes (tests/e2e/tests/real_faults.rs) in its own words.
awk -F'\t' '
    $1 == "fault matrix" && $5 == "detected" { d += $3; dn += $2; any = 1 }
    $1 == "fault matrix" && $5 == "cleared" { c += $3; cn += $2; any = 1 }
    $1 == "fault matrix" && $5 == "healthy runs" { r += $2 - $3; rn += $2; any = 1 }
    END {
        if (any) printf "fault matrix on real nodes: faults detected %d of %d, cleared %d of %d, red on healthy nodes %d in %d runs\n", d, dn, c, cn, r, rn
    }' "$file"
# The faults the kernel itself logged (tests/e2e/tests/real_faults/kernel.rs).
awk -F'\t' '
    $1 == "real kernel faults" { n += $3; t += $2; any = 1 }
    END { if (any) printf "real kernel faults: named %d of %d\n", n, t }' "$file"
# The production-like real node (tests/e2e/tests/real_faults/production.rs), its own line.
note=$(dirname "$file")/suite-production-node.txt
if [[ -s $note ]]; then
    cat "$note"
fi
