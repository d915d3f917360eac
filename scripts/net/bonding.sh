#!/bin/sh
# Bonding (link aggregation), from /proc/net/bonding: every bond is up with
# all its slaves up and at least NET_BOND_MIN_SLAVES of them; in 802.3ad
# (LACP) mode every slave is in the active aggregator; the slaves negotiated
# the same speed and duplex; and the bonds share one mode (or NET_BOND_MODE).
#
# Items: "bond:<bond>", "bond-speed:<bond>", "bond-mode:<bond>"; "bonding"
# (skip) without a bond.
# Environment:
#   NET_BOND_MIN_SLAVES  fewest healthy slaves per bond (default 2)
#   NET_BOND_MODE        text the "Bonding Mode" line of every bond must contain,
#                        e.g. 802.3ad (default: the mode most bonds have)
set -u
# shellcheck source=SCRIPTDIR/../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

min=${NET_BOND_MIN_SLAVES:-2}
mode=${NET_BOND_MODE:-}
dir=$(net_proc bonding)

set -- "$dir"/*
if [ ! -r "$1" ]; then
    skip bonding "no bonding interface in this network namespace (the node's needs hostNetwork)"
    exit 0
fi
for f in "$@"; do
    awk -v bond="${f##*/}" -v min="$min" '
        /^Bonding Mode:/ { m = $0; sub(/^Bonding Mode: */, "", m) }
        /^Slave Interface:/ { s = $3; slaves[++n] = s; next }
        /^MII Status:/ { if (s == "") bondmii = $3; else mii[s] = $3 }
        /^Speed:/ && s != "" { speed[s] = $2 }
        /^Duplex:/ && s != "" { duplex[s] = $2 }
        /^Active Aggregator Info:/ { inactive = 1 }
        /^[ \t]*Aggregator ID:/ {
            if (s == "" && inactive) active = $3
            else if (s != "") agg[s] = $3
        }
        END {
            bad = ""
            if (bondmii != "up") bad = bad "; bond MII status " bondmii
            for (i = 1; i <= n; i++) {
                x = slaves[i]
                if (mii[x] != "up") bad = bad "; slave " x " MII status " mii[x]
                else if (active != "" && agg[x] != active) bad = bad "; slave " x " not in the active LACP aggregator (" agg[x] ", active " active ")"
            }
            if (n < min) bad = bad "; " n " slave(s), fewer than " min
            if (bad != "") printf "err bond:%s %s\n", bond, substr(bad, 3)
            else print "ok bond:" bond
            diff = ""
            for (i = 1; i <= n; i++) {
                x = slaves[i]
                if (mii[x] != "up") continue
                if (ref == "") ref = speed[x] " " duplex[x]
                else if (speed[x] " " duplex[x] != ref) diff = 1
                all = all ", " x " " speed[x] " " duplex[x]
            }
            if (diff) printf "err bond-speed:%s slaves negotiated differently: %s\n", bond, substr(all, 3)
            else print "ok bond-speed:" bond
            print "MODE " bond " " m
        }' "$f"
done | awk -v want="$mode" '
    /^MODE / { b = $2; sub(/^MODE [^ ]+ /, ""); bm[b] = $0; order[++k] = b; count[$0]++; next }
    { print }
    END {
        # A tie has no common mode: every bond is named.
        if (want == "") for (m in count) if (count[m] > best) { best = count[m]; common = m; tie = 0 } else if (count[m] == best) tie = 1
        if (tie) common = "(none: as many bonds use another mode)"
        for (i = 1; i <= k; i++) {
            b = order[i]
            if (want != "") {
                if (index(bm[b], want)) print "ok bond-mode:" b
                else printf "err bond-mode:%s mode %s, expected %s (NET_BOND_MODE)\n", b, bm[b], want
            } else if (bm[b] == common) print "ok bond-mode:" b
            else printf "err bond-mode:%s mode %s, the other bonds use %s\n", b, bm[b], common
        }
    }'
