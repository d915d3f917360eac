#!/bin/sh
# Disk space and inode usage of every node filesystem: those of DISK_FSTYPES,
# and "/" whatever its type (an immutable OS's overlay or tmpfs root). Pod
# volumes and container storage are not the node's and are left out
# (DISK_EXCLUDE_MOUNTS). Each df is bounded: one stuck on a hung mount (NFS)
# is cut after CHECK_COMMAND_TIMEOUT and reported as err.
#
# Items: "<mount point>" (space) and "inodes:<mount point>".
# Environment:
#   DISK_USAGE_MAX_PERCENT   highest healthy space usage (default 90)
#   DISK_INODES_MAX_PERCENT  highest healthy inode usage (default 90)
#   DISK_FSTYPES             filesystem types checked
#                            (default "ext2 ext3 ext4 xfs btrfs zfs f2fs vfat")
#   DISK_EXCLUDE_MOUNTS      mount points that are not the node's, shell globs
#                            (default: pod volumes and container storage, see
#                            docs/checks.md; empty: none)
#   DISK_IGNORE_MOUNTS       more mount points to skip, shell globs (default none)
#   CHECK_COMMAND_TIMEOUT    seconds each df may take (default 10)
set -u
# shellcheck source=SCRIPTDIR/../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

max_used=${DISK_USAGE_MAX_PERCENT:-90}
max_inodes=${DISK_INODES_MAX_PERCENT:-90}
types=${DISK_FSTYPES:-ext2 ext3 ext4 xfs btrfs zfs f2fs vfat}

# percent DF_FLAG PATH: the Use% (or IUse%) column without "%", "-" when
# df shows none, "timeout" when df was cut, empty when it failed.
percent() {
    _out=$(bounded df -P "$1" "$2" 2>/dev/null)
    _code=$?
    if timed_out "$_code"; then
        echo timeout
        return 0
    fi
    printf '%s\n' "$_out" | awk 'NR == 2 { sub(/%$/, "", $5); print $5 }'
}

mounts=$(block_mounts "$types" root) || exit 1
printf '%s\n' "$mounts" | while read -r _dev mp _opts; do
    [ -n "$mp" ] || continue
    path=$(host_path "$mp")
    used=$(percent -k "$path")
    case $used in
        timeout)
            # A hung mount answers neither: no inode query to wait for.
            echo "err $mp cannot read usage: $(limit_why df)"
            continue ;;
        '' | *[!0-9]*) echo "err $mp cannot read usage of $path" ;;
        *) if [ "$used" -gt "$max_used" ]; then
               echo "err $mp disk full (${used}% used, limit ${max_used}%)"
           else
               echo "ok $mp"
           fi ;;
    esac
    inodes=$(percent -i "$path")
    case $inodes in
        timeout) echo "err inodes:$mp cannot read inode usage: $(limit_why df)" ;;
        '' | *[!0-9]*) ;; # no inode accounting (btrfs, vfat)
        *) if [ "$inodes" -gt "$max_inodes" ]; then
               echo "err inodes:$mp inodes nearly exhausted (${inodes}% used, limit ${max_inodes}%)"
           else
               echo "ok inodes:$mp"
           fi ;;
    esac
done
