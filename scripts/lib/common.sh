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

# The mount points that are pods' and containers', not the node's: pod
# volumes and subpaths (/var/lib/kubelet/pods), CSI staging mounts
# (/var/lib/kubelet/plugins), and what containerd, k3s, CRI-O and Docker
# mount for containers (root filesystems, snapshots, shm). A disk mounted
# at /var/lib/containerd or /var/lib/docker itself is the node's and stays.
# DISK_EXCLUDE_MOUNTS replaces the list (empty: none).
# shellcheck disable=SC2034 # read by the scripts that source this file
DEFAULT_EXCLUDE_MOUNTS='/var/lib/kubelet/pods/* /var/lib/kubelet/plugins/* /run/containerd/* /var/lib/containerd/* /run/k3s/containerd/* /var/lib/containers/storage/* /run/containers/storage/* /var/lib/docker/*'

# AWK_GLOB_RE: the awk function glob_re(G), the shell glob G as an anchored
# extended regular expression ("[!...]" negated as in the shell), for the
# awk programs that match names against a list of globs in one pass.
# shellcheck disable=SC2016 # awk code, expanded by awk
AWK_GLOB_RE='
    function glob_re(g,   r, i, j, c) {
        r = "^"
        for (i = 1; i <= length(g); i++) {
            c = substr(g, i, 1)
            if (c == "*") r = r ".*"
            else if (c == "?") r = r "."
            else if (c == "[" && (j = index(substr(g, i + 1), "]")) > 1) {
                c = substr(g, i + 1, j - 1)
                sub(/^!/, "^", c)
                r = r "[" c "]"; i += j
            } else if (index("\\^$.|+(){}[]/", c)) r = r "\\" c
            else r = r c
        }
        return r "$"
    }
'

# block_mounts TYPES [root]: "<maj:min> <mount point> <super options>" of
# each node filesystem of one of the space-separated TYPES (with "root",
# also "/" whatever its type: an immutable OS's overlay or tmpfs root), once
# per device, from the node's mount table. Left out: bind mounts of a
# subdirectory, and mount points matching a shell glob of
# DISK_EXCLUDE_MOUNTS (default DEFAULT_EXCLUDE_MOUNTS) or DISK_IGNORE_MOUNTS,
# as the mount table writes them (\040 for a space). One awk: no process per
# mount, however many containers the node runs.
block_mounts() {
    EXCL="${DISK_EXCLUDE_MOUNTS-$DEFAULT_EXCLUDE_MOUNTS} ${DISK_IGNORE_MOUNTS:-}" \
        awk -v types=" $1 " -v root="${2:-}" "$AWK_GLOB_RE"'
    BEGIN { n = split(ENVIRON["EXCL"], g, " "); for (k = 1; k <= n; k++) re[k] = glob_re(g[k]) }
    {
        sep = 0
        for (i = 7; i <= NF; i++) if ($i == "-") { sep = i; break }
        if (!sep || $4 != "/") next
        if (index(types, " " $(sep + 1) " ") == 0 && !(root == "root" && $5 == "/")) next
        for (k = 1; k <= n; k++) if ($5 ~ re[k]) next
        if (seen[$3]++) next
        print $3, $5, $(sep + 3)
    }' "$(host_proc mountinfo)"
}

# --- Commands with a time limit ----------------------------------------------

# bounded CMD...: runs CMD (a program, not a shell function) with a time
# limit of CHECK_COMMAND_TIMEOUT seconds (default 10), below the runner's
# per-script timeout, so a command stuck on a hung mount, disk or daemon
# costs one item, not the script. SIGTERM at the limit, SIGKILL 1 s later;
# returns 124 (or 137) when cut.
bounded() {
    timeout -k 1 "${CHECK_COMMAND_TIMEOUT:-10}" "$@"
}

# timed_out CODE: whether bounded's exit status CODE says the limit cut the
# command.
timed_out() {
    [ "$1" -eq 124 ] || [ "$1" -eq 137 ]
}

# limit_why CMD: "CMD timed out after <limit>s", for a message.
limit_why() {
    echo "$1 timed out after ${CHECK_COMMAND_TIMEOUT:-10}s"
}

# host_path MOUNTPOINT: the path of a node mount point as seen from here,
# with the mount table's octal escapes (\040 for a space) decoded.
host_path() {
    printf '%s%s\n' "$HR" "$(printf '%s' "$1" | sed 's/\\040/ /g; s/\\011/\t/g')"
}

# --- Results --------------------------------------------------------------

# skip ITEM REASON...: the check cannot be answered here (it needs host
# access, a tool or hardware this pod or node lacks). Never ok, never err.
skip() {
    _item=$1
    shift
    echo "skip $_item $*"
}

# --- What the pod can see ----------------------------------------------------

# host_visible: whether HOST_ROOT shows the node: enableSys (HOST_ROOT is not
# "/"), or local mode (no POD_NAME) on the machine itself.
host_visible() {
    [ -n "$HR" ] || [ -z "${POD_NAME:-}" ]
}

# k8s_node: whether this is a Kubernetes node: in a pod, or the host has a
# kubelet's credentials or configuration (a bare /var/lib/kubelet, such as
# the device-plugins directory a kubelet leaves behind, is not enough).
k8s_node() {
    [ -n "${POD_NAME:-}" ] && return 0
    _f=""
    for _f in var/lib/kubelet/pki var/lib/kubelet/config.yaml var/lib/kubelet/kubeconfig \
        etc/kubernetes/kubelet.conf etc/kubernetes/kubelet.kubeconfig; do
        [ -e "$HR/$_f" ] && return 0
    done
    return 1
}

# host_net: whether this process is in the node's network namespace. In a
# pod the operator says so in COMBO_HOST_NETWORK (the pod's hostNetwork,
# "true" or "false"): a node's PID 1 need not be in the node's network
# namespace (a kubelet in a network namespace of its own), so only the pod
# spec is sure. Unset (local mode, an older operator): the same namespace
# as PID 1's under HOST_ROOT (the host's with enableSys); in local mode
# when that cannot be read, assumed; a pod without enableSys cannot tell.
host_net() {
    case ${COMBO_HOST_NETWORK:-} in
        true) return 0 ;;
        false) return 1 ;;
    esac
    _self=$(readlink /proc/self/ns/net 2>/dev/null) || return 1
    if [ -z "$HR" ] && [ -n "${POD_NAME:-}" ]; then
        return 1
    fi
    if ! _init=$(readlink "$HR/proc/1/ns/net" 2>/dev/null); then
        [ -z "$HR" ]
        return
    fi
    [ "$_init" = "$_self" ]
}

# net_proc FILE: the node's /proc/net/FILE (routes, addresses, bonds). With
# COMBO_HOST_NETWORK=true this process's own, since it is in the node's
# network namespace (through HOST_ROOT's /proc, which hostPID shares, when
# there is one); otherwise PID 1's (host_proc): the host's with enableSys,
# the pod's own without.
net_proc() {
    if [ "${COMBO_HOST_NETWORK:-}" = true ]; then
        if [ -d "$HR/proc/self/net" ]; then
            printf '%s\n' "$HR/proc/self/net/$1"
        else
            printf '/proc/self/net/%s\n' "$1"
        fi
    else
        host_proc "net/$1"
    fi
}

# host_systemd: whether the node's systemd answers. Defines hostctl (the
# node's systemctl: through nsenter into PID 1 with enableSys, directly when
# HOST_ROOT is "/"); else sets SYSTEMD_WHY and returns 1, or 2 when
# systemctl did not answer within CHECK_COMMAND_TIMEOUT (a hung systemd).
host_systemd() {
    _pid1=$(cat "$HR/proc/1/comm" 2>/dev/null || true)
    if [ "$_pid1" != systemd ]; then
        # In a pod without enableSys PID 1 is the container's own.
        _need=""
        if [ -z "$HR" ] && [ -n "${POD_NAME:-}" ]; then
            _need="; needs enableSys"
        fi
        SYSTEMD_WHY="host systemd not reachable (PID 1 of $HOST_ROOT is ${_pid1:-unknown}$_need)"
        return 1
    fi
    # Each call bounded (CHECK_COMMAND_TIMEOUT): a hung systemd or nsenter
    # returns 124 instead of holding the script.
    if [ "$HR" != "" ]; then
        hostctl() { bounded nsenter --target 1 --mount --uts --ipc --net --pid -- systemctl "$@"; }
    else
        hostctl() { bounded systemctl "$@"; }
    fi
    hostctl is-system-running >/dev/null 2>&1
    _code=$?
    if timed_out "$_code"; then
        # shellcheck disable=SC2034 # read by the scripts that source this file
        SYSTEMD_WHY="host systemd does not answer: $(limit_why "systemctl is-system-running")"
        return 2
    fi
    if [ "$_code" -ne 0 ] && ! hostctl list-units --no-legend >/dev/null 2>&1; then
        # shellcheck disable=SC2034 # read by the scripts that source this file
        SYSTEMD_WHY="host systemd not reachable through systemctl"
        return 1
    fi
}

# ifaces_up: names of the node's interfaces that are administratively up,
# not matching the globs in $1.
ifaces_up() {
    for _d in "$HR"/sys/class/net/*; do
        [ -e "$_d/flags" ] || continue
        _i=${_d##*/}
        matches_any "$_i" "$1" && continue
        _f=$(cat "$_d/flags" 2>/dev/null || echo 0x0)
        [ $(( _f & 1 )) -eq 1 ] && echo "$_i"
    done
}

# physical IFACE: whether the interface has a device (not a veth, bridge,
# tunnel or other virtual interface).
physical() {
    [ -e "$HR/sys/class/net/$1/device" ]
}

# The default interfaces the net checks leave out: loopback, container and
# overlay interfaces, bridges and tunnels.
# shellcheck disable=SC2034 # read by the scripts that source this file
DEFAULT_IGNORE_IFACES='lo veth* cali* tunl* docker* virbr* *_h *_c flannel* cni* cilium* lxc* vxlan* genev* kube-ipvs* nodelocaldns weave* tun* tap* wg* br-* dummy* ifb*'

# --- State between runs -----------------------------------------------------
#
# The runner gives each script STATE_DIR, a directory of its own that stays
# from run to run on the node. Counters and the kernel log are judged on what
# changed since the previous run, never since boot.

BASELINE_REASON="baseline recorded; counting from the next run"
NO_STATE_REASON="no STATE_DIR from the runner: changes since the previous run cannot be counted"

# state_ready: whether STATE_DIR is a writable directory.
state_ready() {
    [ -n "${STATE_DIR:-}" ] && [ -d "$STATE_DIR" ] && [ -w "$STATE_DIR" ]
}

# boot_id: the node's boot id; "unknown" when it cannot be read.
boot_id() {
    cat "$HR/proc/sys/kernel/random/boot_id" 2>/dev/null || echo unknown
}

# uptime_exact: seconds since boot, with decimals.
uptime_exact() {
    awk '{ print $1 }' "$HR/proc/uptime" 2>/dev/null || echo 0
}

# delta NAME: reads "key value" counter lines on stdin and prints
# "key delta value" for each: the increase since the values the previous run
# kept in $STATE_DIR/NAME. A key absent then, a value lower than then (a
# reset) or a reboot since count from 0. Without a previous state it records
# the baseline, prints nothing and returns 10. The new values are kept in
# NAME.new until state_commit.
delta() {
    _f="$STATE_DIR/$1"
    _cur=$(cat)
    _boot=$(boot_id)
    { echo "boot $_boot $(uptime_exact)"; printf '%s\n' "$_cur"; } > "$_f.new"
    if [ ! -f "$_f" ]; then
        mv -f "$_f.new" "$_f"
        return 10
    fi
    printf '%s\n' "$_cur" | awk -v boot="$_boot" '
        NR == FNR { if (FNR == 1) same = ($2 == boot); else prev[$1] = $2; next }
        NF >= 2 {
            p = (same && ($1 in prev)) ? prev[$1] : 0
            d = $2 - p
            if (d < 0) d = $2
            printf "%s %.0f %s\n", $1, d, $2
        }' "$_f" -
}

# state_age NAME: seconds between the previous run's record NAME and now
# (since boot if the node rebooted in between); empty without a record.
state_age() {
    [ -f "$STATE_DIR/$1" ] || return 0
    awk -v boot="$(boot_id)" -v now="$(uptime_exact)" 'NR == 1 {
        if ($2 == boot && now >= $3) printf "%.3f\n", now - $3; else printf "%.3f\n", now
        exit
    }' "$STATE_DIR/$1"
}

# state_commit: keeps the values of this run (every NAME.new) for the next.
state_commit() {
    for _n in "$STATE_DIR"/*.new; do
        [ -e "$_n" ] && mv -f "$_n" "${_n%.new}"
    done
    return 0
}

# --- Kernel log since the previous run --------------------------------------

# klog_source: where the kernel log is read from: "file <path>" for
# KERNEL_LOG_FILE in /dev/kmsg record format, "text <path>" for
# KERNEL_LOG_FILE holding `dmesg` output ("[ seconds] message" lines),
# "kmsg <path>" for a readable /dev/kmsg, "dmesg"; returns 1 when none can be
# read.
klog_source() {
    if [ -n "${KERNEL_LOG_FILE:-}" ]; then
        [ -r "$KERNEL_LOG_FILE" ] || return 1
        case $(sed -n '/./{p;q;}' "$KERNEL_LOG_FILE") in
            \[*) echo "text $KERNEL_LOG_FILE" ;;
            *) echo "file $KERNEL_LOG_FILE" ;;
        esac
        return 0
    fi
    for _k in "$HR/dev/kmsg" /dev/kmsg; do
        if [ -f "$_k" ] && [ -r "$_k" ]; then
            echo "file $_k"
            return 0
        fi
        # Reading needs CAP_SYSLOG where dmesg_restrict is set.
        if [ -c "$_k" ] && dd if="$_k" iflag=nonblock bs=16384 count=1 2>/dev/null | grep -q .; then
            echo "kmsg $_k"
            return 0
        fi
    done
    if dmesg 2>/dev/null | grep -q .; then
        echo dmesg
        return 0
    fi
    return 1
}

# klog_records SOURCE: the log as "<position> <seconds> <message>" lines; the
# position is the record's sequence number, or for dmesg text its time in
# microseconds.
klog_records() {
    case $1 in
        file\ *) kmsg_positions < "${1#file }" ;;
        kmsg\ *) dd if="${1#kmsg }" iflag=nonblock bs=16384 2>/dev/null | kmsg_positions ;;
        text\ *) dmesg_positions < "${1#text }" ;;
        dmesg) dmesg 2>/dev/null | dmesg_positions ;;
    esac
}

# dmesg_positions: "[ seconds.micros] message" -> "<micros> <seconds> <message>";
# the caller dmesg prints after the time on a kernel with
# CONFIG_PRINTK_CALLER ("[  T123]", "[   C2]") is dropped, and so are the
# indented lines it prints for a record's own newlines.
dmesg_positions() {
    sed -n 's/^\[ *\([0-9]*\)\.\([0-9]*\)\] *\(\[ *[TC][0-9]*\] *\)\{0,1\}\(.*\)$/\1\2 \1.\2 \4/p'
}

# kmsg_positions: "prio,seq,usec,flags;message" -> "<seq> <seconds> <message>".
kmsg_positions() {
    awk 'index($0, ";") && $0 ~ /^[0-9]+,[0-9]+,[0-9]+/ {
        split(substr($0, 1, index($0, ";") - 1), h, ",")
        printf "%s %.6f %s\n", h[2], h[3] / 1000000, substr($0, index($0, ";") + 1)
    }'
}

# klog_new: the kernel log lines written since the previous run, as
# "<seconds> <message>"; the position reached is kept (klog.new) until
# state_commit. After a reboot the whole log of this boot is new. Returns 10
# on the first run (baseline recorded, nothing printed), 11 without
# STATE_DIR, 12 when the kernel log cannot be read.
klog_new() {
    state_ready || return 11
    _src=$(klog_source) || return 12
    case $_src in
        dmesg | text\ *) _kind="time" ;;
        *) _kind=seq ;;
    esac
    _boot=$(boot_id)
    _recs=$(klog_records "$_src")
    _last=$(printf '%s\n' "$_recs" | awk '$1 ~ /^[0-9]+$/ { l = $1 } END { printf "%.0f\n", l }')
    _f="$STATE_DIR/klog"
    if [ ! -f "$_f" ]; then
        echo "$_boot $_kind $_last" > "$_f"
        return 10
    fi
    read -r _pboot _pkind _plast < "$_f"
    if [ "$_pkind" != "$_kind" ]; then
        echo "$_boot $_kind $_last" > "$_f"
        return 10
    fi
    [ "$_pboot" = "$_boot" ] || _plast=-1
    # A quiet log keeps the old position.
    [ "$_last" -gt 0 ] || _last=$_plast
    echo "$_boot $_kind $_last" > "$_f.new"
    printf '%s\n' "$_recs" | awk -v after="$_plast" '$1 ~ /^[0-9]+$/ && $1 + 0 > after + 0 {
        sub(/^[0-9]+ /, ""); print
    }'
}

# klog_skip CODE ITEM...: the skip lines for klog_new's return CODE.
klog_skip() {
    _code=$1
    shift
    case $_code in
        10) _why=$BASELINE_REASON ;;
        11) _why=$NO_STATE_REASON ;;
        *) _why="kernel log not readable (needs enableSys: /dev/kmsg or dmesg with CAP_SYSLOG; KERNEL_LOG_FILE overrides)" ;;
    esac
    for _i in "$@"; do
        skip "$_i" "$_why"
    done
}

# klog_tally FAMILY OK MAX WHAT...: reads the classified kernel log lines
# of a run, "<item> <message>", on stdin and judges them in groups of four
# arguments: each item of FAMILY (FAMILY itself, or FAMILY:<subject> such as
# io:sdb) with more than MAX lines is err, naming the count (WHAT line(s))
# and the last one; a family without an err item prints "ok OK". One awk,
# however many families.
klog_tally() {
    _specs=""
    while [ $# -ge 4 ]; do
        _specs="$_specs$1|$2|$3|$4
"
        shift 4
    done
    SPECS=$_specs awk '
        BEGIN {
            nl = split(ENVIRON["SPECS"], l, "\n")
            for (i = 1; i <= nl; i++)
                if (split(l[i], f, "|") == 4) { k++; fam[k] = f[1]; okn[k] = f[2]; max[k] = f[3] + 0; what[k] = f[4] }
        }
        NF >= 1 { m = $0; sub(/^[^ ]+ ?/, "", m); n[$1]++; last[$1] = m }
        END {
            for (i = 1; i <= k; i++) {
                bad = 0
                for (it in n) {
                    if (it != fam[i] && index(it, fam[i] ":") != 1) continue
                    if (n[it] <= max[i]) continue
                    m = last[it]
                    if (length(m) > 160) m = substr(m, 1, 160) "..."
                    printf "err %s %d %s line(s) in the kernel log since the previous run, last: %s\n", it, n[it], what[i], m
                    bad = 1
                }
                if (!bad) print "ok " okn[i]
            }
        }'
}

# pressure ITEM RESOURCE MAX: err ITEM when the "some" avg10 of
# /proc/pressure/RESOURCE (share of the last 10 s in which some task waited
# for it) is over MAX percent; skip without PSI.
pressure() {
    _p="$HR/proc/pressure/$2"
    if [ ! -r "$_p" ]; then
        skip "$1" "no $_p (kernel without PSI, or booted with psi=0)"
        return 0
    fi
    awk -v item="$1" -v max="$3" -v res="$2" '$1 == "some" {
        for (i = 2; i <= NF; i++) if ($i ~ /^avg10=/) { v = substr($i, 7) + 0; found = 1 }
    }
    END {
        if (!found) printf "skip %s no some avg10 in /proc/pressure/%s\n", item, res
        else if (v > max) printf "err %s %s pressure: tasks waited for %s %.1f%% of the last 10s (limit %s%%)\n", item, res, res, v, max
        else print "ok " item
    }' "$_p"
}
