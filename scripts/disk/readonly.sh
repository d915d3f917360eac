#!/bin/sh
# Node filesystems that are read-only, as after the kernel remounts a
# filesystem read-only on errors, or that XFS shut down: a shut-down XFS
# stays mounted read-write, but every stat of it fails with an I/O error
# until it is unmounted; one bounded stat of all XFS mount points tells.
# Pod volumes (a PersistentVolume mounted readOnly) and container storage
# are not the node's and are left out (DISK_EXCLUDE_MOUNTS).
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
#   CHECK_COMMAND_TIMEOUT  seconds the stat of the XFS mount points may take (default 10)
set -u
# shellcheck source=SCRIPTDIR/../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

types=${DISK_FSTYPES:-ext2 ext3 ext4 xfs btrfs zfs f2fs vfat}
ignore=${DISK_RO_IGNORE:-/boot/efi /snap/*}

mounts=$(block_mounts "$types") || exit 1

# The XFS mount points whose stat fails with an I/O error ("'<path>'" each).
shut=""
xfs=$(block_mounts xfs) || xfs=""
if [ -n "$xfs" ]; then
    set --
    while read -r _dev mp _opts; do
        [ -n "$mp" ] && set -- "$@" "$(host_path "$mp")"
    done <<EOF
$xfs
EOF
    shut=$(LC_ALL=C bounded stat -c %n "$@" 2>&1 >/dev/null | grep 'Input/output error')
fi

printf '%s\n' "$mounts" | while read -r _dev mp opts; do
    [ -n "$mp" ] || continue
    if matches_any "$mp" "$ignore"; then
        continue
    fi
    case $shut in
        *"'$(host_path "$mp")'"*)
            echo "err ro:$mp XFS shut down: every access fails with an I/O error (unmount it and run xfs_repair)"
            continue
            ;;
    esac
    # The super block options tell the filesystem's own state.
    case ",$opts," in
        *,ro,*) echo "err ro:$mp filesystem is read-only" ;;
        *) echo "ok ro:$mp" ;;
    esac
done
