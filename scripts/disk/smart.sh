#!/bin/sh
# SMART of each disk with smartctl: the drive's overall health and the
# sectors it cannot read (an overall PASSED can hide them), how much of
# an SSD's rated endurance is used, and whether a SATA link negotiated below
# what the drive supports. Needs smartctl in the image and the host's
# devices (enableSys); otherwise every item is skipped. smartctl runs with
# "-n standby": a spun-down disk is not woken, its items are skipped for
# that run. Each smartctl is bounded: a disk that does not answer within
# CHECK_COMMAND_TIMEOUT is err.
#
# Items: "smart:<disk>", "wear:<disk>" (SSDs), "sata:<disk>" (SATA disks).
# Environment:
#   DISK_SSD_WEAR_MAX_PERCENT  highest healthy share of the rated endurance used (default 80)
#   DISK_BAD_SECTORS_MAX       highest healthy count of pending or offline-uncorrectable
#                              sectors (ATA attributes 197 and 198; default 0)
#   DISK_DEVICES               disks checked, shell globs (default "sd* nvme* vd* xvd* hd* mmcblk*")
#   DISK_DEV_DIR               where the device nodes are (default /dev)
#   CHECK_COMMAND_TIMEOUT      seconds each smartctl may take (default 10)
set -u
# shellcheck source=SCRIPTDIR/../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

wear_max=${DISK_SSD_WEAR_MAX_PERCENT:-80}
devices=${DISK_DEVICES:-sd* nvme* vd* xvd* hd* mmcblk*}
devdir=${DISK_DEV_DIR:-/dev}

disks=""
for dir in "$HR"/sys/block/*; do
    dev=${dir##*/}
    matches_any "$dev" "$devices" || continue
    disks="$disks $dev"
done
[ -n "$disks" ] || exit 0

if ! command -v smartctl >/dev/null 2>&1; then
    for d in $disks; do
        skip "smart:$d" "smartctl is not in the runner image (Debian package smartmontools)"
    done
    exit 0
fi
for d in $disks; do
    if [ ! -e "$devdir/$d" ]; then
        skip "smart:$d" "no $devdir/$d (the host's devices need enableSys)"
        continue
    fi
    out=$(bounded smartctl -n standby -H -i -A "$devdir/$d" 2>&1)
    code=$?
    if timed_out "$code"; then
        echo "err smart:$d $(limit_why smartctl) on $devdir/$d (the disk does not answer)"
        continue
    fi
    # -n standby: smartctl leaves a disk in standby or sleep alone and
    # says so ("Device is in STANDBY mode, exit(2)").
    mode=$(printf '%s\n' "$out" | awk '/^Device is in [A-Z_ ]+ mode/ { m = $0; sub(/^Device is in /, "", m); sub(/ mode.*/, "", m); print tolower(m); exit }')
    if [ -n "$mode" ]; then
        skip "smart:$d" "the disk is in $mode mode (spun down): not woken to read SMART"
        continue
    fi
    # Bits 0 and 1: the command line failed or the device did not open.
    if [ $(( code & 3 )) -ne 0 ]; then
        skip "smart:$d" "smartctl cannot read $devdir/$d (it needs enableSys: root, privileged, the node's /dev): $(printf '%s\n' "$out" | grep -v '^$' | tail -n 1)"
        continue
    fi
    printf '%s\n' "$out" | awk -v d="$d" -v wear_max="$wear_max" -v bad_max="${DISK_BAD_SECTORS_MAX:-0}" '
        /self-assessment test result:|SMART Health Status:/ {
            v = $0; sub(/.*: */, "", v); health = v
        }
        /^Rotation Rate:.*Solid State/ { ssd = 1 }
        /^NVMe|^Model Number:/ { ssd = 1 }
        /^Percentage Used:/ { v = $3; sub(/%/, "", v); used = v + 0; have = 1 }
        # Sectors the drive could not read and has not remapped: the raw
        # value (the 10th field) of Current_Pending_Sector and
        # Offline_Uncorrectable.
        $1 == "197" && $10 ~ /^[0-9]+$/ { pending = $10 + 0 }
        $1 == "198" && $10 ~ /^[0-9]+$/ { uncorrectable = $10 + 0 }
        # ATA wear attributes: the normalized value is the endurance left.
        $1 ~ /^(177|202|231|233)$/ && $4 ~ /^[0-9]+$/ && !have { used = 100 - $4; have = 1 }
        /^SATA Version is:/ {
            if (match($0, /[0-9.]+ Gb\/s \(current: [0-9.]+ Gb\/s\)/)) {
                s = substr($0, RSTART, RLENGTH); split(s, w, " ")
                max = w[1]; cur = w[4]; sata = 1
            }
        }
        END {
            if (health == "") printf "skip smart:%s smartctl shows no health status (virtual disk or USB bridge?)\n", d
            else if (health != "PASSED" && health != "OK") printf "err smart:%s SMART health %s\n", d, health
            else if (pending > bad_max || uncorrectable > bad_max) printf "err smart:%s %d pending and %d offline-uncorrectable sectors (limit %d): the drive cannot read them\n", d, pending, uncorrectable, bad_max
            else print "ok smart:" d
            if (ssd) {
                if (!have) printf "skip wear:%s the SSD reports no wear indicator\n", d
                else if (used > wear_max) printf "err wear:%s %d%% of the rated endurance used (limit %s%%)\n", d, used, wear_max
                else print "ok wear:" d
            }
            if (sata) {
                if (cur + 0 < max + 0) printf "err sata:%s SATA link at %s Gb/s, the drive supports %s Gb/s\n", d, cur, max
                else print "ok sata:" d
            }
        }'
done
