#!/bin/sh
# RAID: Linux software RAID (md) arrays from /proc/mdstat must have all
# their members; a hardware RAID controller is named, and skipped: its
# state needs the vendor's tool (storcli, perccli, ssacli, arcconf), which
# the image does not have.
#
# Items: "raid:<md array>", "raid:<controller PCI address>" (skip), "raid"
# (skip) when the node has neither.
set -u
# shellcheck source=SCRIPTDIR/../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

found=0
if [ -r "$HR/proc/mdstat" ]; then
    out=$(awk '
        /^md[0-9a-z_]* : / {
            if (name != "") report()
            name = $1; state = $3; status = ""; progress = ""
            next
        }
        name != "" && /\[[0-9]+\/[0-9]+\]/ {
            match($0, /\[[0-9]+\/[0-9]+\]/); status = substr($0, RSTART, RLENGTH)
            if (match($0, /\[[U_]+\]/)) members = substr($0, RSTART, RLENGTH)
        }
        name != "" && match($0, /(recovery|resync|reshape) *=.*/) { progress = substr($0, RSTART, 60) }
        /^$/ { if (name != "") report(); name = "" }
        END { if (name != "") report() }
        function report(   a) {
            if (state != "active") printf "err raid:%s array is %s\n", name, state
            else if (status != "") {
                split(substr(status, 2, length(status) - 2), a, "/")
                if (a[2] + 0 < a[1] + 0) printf "err raid:%s degraded: %s of %s members up %s%s\n", name, a[2], a[1], members, (progress != "" ? ", " progress : "")
                else print "ok raid:" name
            } else print "ok raid:" name
        }' "$HR/proc/mdstat")
    if [ -n "$out" ]; then
        printf '%s\n' "$out"
        found=1
    fi
fi
# PCI class 0x0104xx: RAID bus controller. Read with the shell's read: no
# process per PCI device (a server has hundreds).
for dev in "$HR"/sys/bus/pci/devices/*; do
    [ -r "$dev/class" ] || continue
    read -r class < "$dev/class" || continue
    case $class in
        0x0104*)
            found=1
            vendor=$(cat "$dev/vendor" 2>/dev/null)
            skip "raid:${dev##*/}" "hardware RAID controller (PCI vendor $vendor): its state needs the vendor's tool (storcli, perccli, ssacli, arcconf), not in the image"
            ;;
    esac
done
if [ "$found" -eq 0 ]; then
    skip raid "no software (md) array and no hardware RAID controller on this node"
fi
