#!/bin/sh
# Disk space and inode usage of every node filesystem.
#
# Items: "<mount point>" (space) and "inodes:<mount point>".
# Environment:
#   DISK_USAGE_MAX_PERCENT   highest healthy space usage (default 90)
#   DISK_INODES_MAX_PERCENT  highest healthy inode usage (default 90)
#   DISK_FSTYPES             filesystem types checked
#                            (default "ext2 ext3 ext4 xfs btrfs zfs f2fs vfat overlay")
#   DISK_IGNORE_MOUNTS       mount points to skip, shell globs (default none)
set -u
# shellcheck source=SCRIPTDIR/../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

max_used=${DISK_USAGE_MAX_PERCENT:-90}
max_inodes=${DISK_INODES_MAX_PERCENT:-90}
types=${DISK_FSTYPES:-ext2 ext3 ext4 xfs btrfs zfs f2fs vfat overlay}
ignore=${DISK_IGNORE_MOUNTS:-}

# percent DF_FLAG PATH: the Use% (or IUse%) column without "%", or "-".
percent() {
    df -P "$1" "$2" 2>/dev/null | awk 'NR == 2 { sub(/%$/, "", $5); print $5 }'
}

mounts=$(block_mounts "$types") || exit 1
printf '%s\n' "$mounts" | while read -r _dev mp _opts; do
    [ -n "$mp" ] || continue
    if matches_any "$mp" "$ignore"; then
        continue
    fi
    path=$(host_path "$mp")
    used=$(percent -k "$path")
    case $used in
        '' | *[!0-9]*) echo "err $mp cannot read usage of $path" ;;
        *) if [ "$used" -gt "$max_used" ]; then
               echo "err $mp disk full (${used}% used, limit ${max_used}%)"
           else
               echo "ok $mp"
           fi ;;
    esac
    inodes=$(percent -i "$path")
    case $inodes in
        '' | *[!0-9]*) ;; # no inode accounting (btrfs, vfat)
        *) if [ "$inodes" -gt "$max_inodes" ]; then
               echo "err inodes:$mp inodes nearly exhausted (${inodes}% used, limit ${max_inodes}%)"
           else
               echo "ok inodes:$mp"
           fi ;;
    esac
done
