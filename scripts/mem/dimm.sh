#!/bin/sh
# Memory modules (DIMMs) from the SMBIOS tables with dmidecode: all
# populated modules run at one speed, come from at most MEM_DIMM_VENDORS_MAX
# vendors, and the memory the kernel sees (MemTotal) is not far below what is
# installed (a module lost or disabled). dmidecode must be in the image and
# may read the tables (root: enableSys); MEM_EXPECTED_MIB sets the size to
# compare with instead.
#
# Items: "dimm:speed", "dimm:vendor", "size".
# Environment:
#   MEM_DIMM_VENDORS_MAX        most healthy distinct module vendors (default 1)
#   MEM_EXPECTED_MIB            the memory the node should have, MiB (default: the modules' total)
#   MEM_SIZE_TOLERANCE_PERCENT  how far below that MemTotal may be, percent (default 10)
#   CHECK_COMMAND_TIMEOUT       seconds dmidecode may take (default 10)
set -u
# shellcheck source=SCRIPTDIR/../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

vendors_max=${MEM_DIMM_VENDORS_MAX:-1}
expected=${MEM_EXPECTED_MIB:-}
tolerance=${MEM_SIZE_TOLERANCE_PERCENT:-10}
total_kb=$(awk '$1 == "MemTotal:" { print $2 }' "$HR/proc/meminfo" 2>/dev/null)

why=""
table=""
if ! command -v dmidecode >/dev/null 2>&1; then
    why="dmidecode is not in the runner image (Debian package dmidecode)"
elif table=$(bounded dmidecode -t 17 2>&1); code=$?; timed_out "$code"; then
    why=$(limit_why dmidecode)
elif [ "$code" -ne 0 ] || ! printf '%s\n' "$table" | grep -q '^Memory Device'; then
    why="dmidecode cannot read the SMBIOS tables (needs root and /sys/firmware/dmi or /dev/mem: enableSys): $(printf '%s\n' "$table" | grep -v '^$' | tail -n 1)"
fi

# One line per populated module: "<size MiB>|<configured speed>|<vendor>".
modules=""
if [ -z "$why" ]; then
    modules=$(printf '%s\n' "$table" | awk '
        /^Memory Device/ { if (size != "") print size "|" speed "|" vendor; size = ""; speed = ""; vendor = ""; inside = 1; next }
        !inside { next }
        /^\tSize:/ {
            if ($2 ~ /^[0-9]+$/) size = ($3 == "GB" ? $2 * 1024 : ($3 == "TB" ? $2 * 1048576 : ($3 == "kB" ? int($2 / 1024) : $2)))
        }
        /^\t(Configured Memory Speed|Configured Clock Speed):/ { v = $0; sub(/^[^:]*: */, "", v); speed = v }
        /^\tSpeed:/ && speed == "" { v = $0; sub(/^[^:]*: */, "", v); rated = v }
        /^\tManufacturer:/ { v = $0; sub(/^[^:]*: */, "", v); vendor = v }
        END { if (size != "") print size "|" speed "|" vendor }')
    if [ -z "$modules" ]; then
        why="dmidecode lists no populated memory module"
    fi
fi

if [ -n "$why" ]; then
    skip dimm:speed "$why"
    skip dimm:vendor "$why"
else
    printf '%s\n' "$modules" | awk -F'|' -v vmax="$vendors_max" '
        { n++
          if ($2 != "" && $2 !~ /Unknown|Not Specified/) { if (!($2 in sp)) { sp[$2] = 1; ns++; speeds = speeds ", " $2 } }
          if ($3 != "" && $3 !~ /Unknown|Not Specified|NO DIMM|QEMU/) { if (!($3 in ve)) { ve[$3] = 1; nv++; vendors = vendors ", " $3 } }
        }
        END {
            if (ns == 0) print "skip dimm:speed the modules report no configured speed"
            else if (ns > 1) printf "err dimm:speed modules run at different speeds: %s\n", substr(speeds, 3)
            else print "ok dimm:speed"
            if (nv == 0) print "skip dimm:vendor the modules report no manufacturer"
            else if (nv > vmax) printf "err dimm:vendor modules of %d vendors (limit %d): %s\n", nv, vmax, substr(vendors, 3)
            else print "ok dimm:vendor"
        }'
fi

if [ -z "${total_kb:-}" ]; then
    skip size "cannot read MemTotal"
    exit 0
fi
if [ -n "$expected" ]; then
    want=$expected what="MEM_EXPECTED_MIB"
elif [ -z "$why" ]; then
    want=$(printf '%s\n' "$modules" | awk -F'|' '{ s += $1 } END { printf "%.0f\n", s }')
    what="the installed modules"
else
    skip size "no size to compare MemTotal with: $why, and MEM_EXPECTED_MIB is not set"
    exit 0
fi
awk -v have="$total_kb" -v want="$want" -v tol="$tolerance" -v what="$what" 'BEGIN {
    h = have / 1024
    if (h * 100 < want * (100 - tol)) printf "err size the kernel sees %.0f MiB of the %.0f MiB of %s (more than %s%% missing)\n", h, want, what, tol
    else print "ok size"
}'
