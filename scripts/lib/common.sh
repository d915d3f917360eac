# shellcheck shell=sh
# Helpers shared by the default inspection scripts. Sourced, never run.
#
# HOST_ROOT is where the node's root filesystem is: "/" by default, "/host"
# when the Debugger has enableSys.

HOST_ROOT=${HOST_ROOT:-/}
# The host root without a trailing slash, so "$HR/proc" works for "/" too.
HR=${HOST_ROOT%/}

# host_proc FILE: the node's view of /proc/FILE, preferring PID 1's (the
# host's namespaces when the pod has hostPID), else our own.
host_proc() {
    if [ -r "$HR/proc/1/$1" ]; then
        printf '%s\n' "$HR/proc/1/$1"
    else
        printf '%s\n' "$HR/proc/$1"
    fi
}

# kernel_log: the kernel ring buffer as "<seconds since boot> <message>"
# lines; returns 1 when it cannot be read.
kernel_log() {
    kmsg="$HR/dev/kmsg"
    if [ -f "$kmsg" ] && [ -r "$kmsg" ]; then
        # A plain file in a fixture tree, in /dev/kmsg record format.
        kmsg_records < "$kmsg"
        return 0
    fi
    if [ -c "$kmsg" ] && [ -r "$kmsg" ]; then
        # Non-blocking: dd stops at the end of the buffer instead of waiting.
        if dd if="$kmsg" iflag=nonblock bs=16384 2>/dev/null | kmsg_records; then
            return 0
        fi
    fi
    if out=$(dmesg 2>/dev/null) && [ -n "$out" ]; then
        printf '%s\n' "$out" | sed -n 's/^\[ *\([0-9.]*\)\] */\1 /p'
        return 0
    fi
    return 1
}

# kmsg_records: "prio,seq,usec,flags;message" -> "<seconds> <message>".
kmsg_records() {
    awk -F';' 'index($0, ";") && $1 ~ /^[0-9]+,[0-9]+,[0-9]+/ {
        split($1, h, ",")
        msg = substr($0, index($0, ";") + 1)
        printf "%.6f %s\n", h[3] / 1000000, msg
    }'
}

# uptime_seconds: seconds since the node booted, as an integer.
uptime_seconds() {
    awk '{ printf "%d\n", $1 }' "$HR/proc/uptime" 2>/dev/null || echo 0
}

# matches_any NAME PATTERNS: whether NAME matches one of the shell globs in
# the space-separated PATTERNS.
matches_any() {
    _name=$1
    # No pathname expansion while splitting the pattern list.
    set -f
    for _p in $2; do
        # shellcheck disable=SC2254 # the patterns are globs on purpose
        case $_name in $_p) set +f; return 0 ;; esac
    done
    set +f
    return 1
}

# block_mounts TYPES: "<maj:min> <mount point> <super options>" of each
# filesystem of one of the space-separated TYPES, once per device, from the
# node's mount table; bind mounts of a subdirectory are left out.
block_mounts() {
    awk -v types=" $1 " '{
        sep = 0
        for (i = 7; i <= NF; i++) if ($i == "-") { sep = i; break }
        if (!sep || $4 != "/") next
        if (index(types, " " $(sep + 1) " ") == 0) next
        if (seen[$3]++) next
        print $3, $5, $(sep + 3)
    }' "$(host_proc mountinfo)"
}

# host_path MOUNTPOINT: the path of a node mount point as seen from here,
# with the mount table's octal escapes (\040 for a space) decoded.
host_path() {
    printf '%s%s\n' "$HR" "$(printf '%s' "$1" | sed 's/\\040/ /g; s/\\011/\t/g')"
}
