#!/bin/sh
# Node filesystems that are read-only, as after the kernel remounts a
# filesystem read-only on errors.
#
# Items: "ro:<mount point>".
# Environment:
#   DISK_FSTYPES        filesystem types checked
#                       (default "ext2 ext3 ext4 xfs btrfs zfs f2fs vfat")
#   DISK_RO_IGNORE      mount points that are read-only on purpose, shell
#                       globs (default "/boot/efi /snap/*")
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
