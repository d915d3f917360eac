#!/bin/sh
# Node filesystems that are read-only, as after the kernel remounts a
# filesystem read-only on errors. Pod volumes (a PersistentVolume mounted
# readOnly) and container storage are not the node's and are left out
# (DISK_EXCLUDE_MOUNTS).
#
# Items: "ro:<mount point>".
# Environment:
#   DISK_FSTYPES         filesystem types checked
#                        (default "ext2 ext3 ext4 xfs btrfs zfs f2fs vfat")
#   DISK_EXCLUDE_MOUNTS  mount points that are not the node's, shell globs
#                        (default: pod volumes and container storage, see
#                        docs/checks.md; empty: none)
#   DISK_IGNORE_MOUNTS   more mount points to skip, shell globs (default none)
#   DISK_RO_IGNORE       mount points that are read-only on purpose, shell
#                        globs (default "/boot/efi /snap/*")
set -u
# shellcheck source=SCRIPTDIR/../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

types=${DISK_FSTYPES:-ext2 ext3 ext4 xfs btrfs zfs f2fs vfat}
ignore=${DISK_RO_IGNORE:-/boot/efi /snap/*}

mounts=$(block_mounts "$types") || exit 1
printf '%s\n' "$mounts" | while read -r _dev mp opts; do
    [ -n "$mp" ] || continue
    if matches_any "$mp" "$ignore"; then
        continue
    fi
    # The super block options tell the filesystem's own state.
    case ",$opts," in
        *,ro,*) echo "err ro:$mp filesystem is read-only" ;;
        *) echo "ok ro:$mp" ;;
    esac
done
