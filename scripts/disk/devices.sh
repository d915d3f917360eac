#!/bin/sh
# Disk device state from sysfs, without tools: a SCSI/SATA disk the kernel
# took offline, and an NVMe drive whose PCIe link trained below its maximum
# speed or width (the interface mode of the SSD).
#
# Items: "state:<disk>" (SCSI devices), "pcie:<nvme controller>".
# Environment:
#   DISK_DEVICES  disks checked, shell globs (default "sd* nvme* vd* xvd* hd* mmcblk*")
set -u
# shellcheck source=SCRIPTDIR/../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

devices=${DISK_DEVICES:-sd* nvme* vd* xvd* hd* mmcblk*}

for dir in "$HR"/sys/block/*; do
    dev=${dir##*/}
    matches_any "$dev" "$devices" || continue
    [ -r "$dir/device/state" ] || continue   # only SCSI devices have one
    state=$(cat "$dir/device/state" 2>/dev/null)
    case $state in
        running | live) echo "ok state:$dev" ;;
        *) echo "err state:$dev device state is ${state:-unknown} (not running: taken offline by the kernel?)" ;;
    esac
done

# gts "8.0 GT/s PCIe": 8.0; "Unknown" stays as is.
gts() {
    awk '{ print $1 }' "$1" 2>/dev/null
}
for ctl in "$HR"/sys/class/nvme/nvme*; do
    [ -e "$ctl/device/current_link_speed" ] || continue
    name=${ctl##*/}
    cur=$(gts "$ctl/device/current_link_speed")
    max=$(gts "$ctl/device/max_link_speed")
    curw=$(cat "$ctl/device/current_link_width" 2>/dev/null)
    maxw=$(cat "$ctl/device/max_link_width" 2>/dev/null)
    awk -v n="$name" -v c="$cur" -v m="$max" -v cw="$curw" -v mw="$maxw" 'BEGIN {
        if (c !~ /^[0-9.]+$/ || m !~ /^[0-9.]+$/ || cw !~ /^[0-9]+$/ || mw !~ /^[0-9]+$/)
            printf "skip pcie:%s the PCIe link speed or width is not reported (%s/%s GT/s, x%s/x%s)\n", n, c, m, cw, mw
        else if (c + 0 < m + 0 || cw + 0 < mw + 0)
            printf "err pcie:%s PCIe link degraded: %s GT/s x%s, the drive supports %s GT/s x%s\n", n, c, cw, m, mw
        else print "ok pcie:" n
    }'
done
