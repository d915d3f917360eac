#!/bin/sh
# Problems of the kernel itself and of the machine under it, in the kernel
# log since the previous run (the position is kept in STATE_DIR; the first
# run records it and reports skip). Each report counts once, on the line
# that opens it; the lines that follow it (call traces, registers, the
# machine check's TSC/ADDR lines, the firmware report's sections) count
# nowhere.
#
#   hung-tasks       "INFO: task <comm>:<pid> blocked for more than N seconds."
#                    (any task: docker, umount.aufs, kworker, ...)
#   soft-lockups     "watchdog: BUG: soft lockup - CPU#N stuck for Ns!",
#                    "Watchdog detected hard LOCKUP on cpu N", "BUG:
#                    workqueue lockup - pool ..."
#   rcu-stalls       "rcu: INFO: rcu_sched self-detected stall on CPU",
#                    "... detected stalls on CPUs/tasks:", expedited and
#                    RCU-tasks stalls, "... detected stall, but suppressed
#                    full report due to a stuck CSD-lock"
#   hardware-errors  errors the hardware did not correct: a machine check
#                    whose status has UC set ("mce: [Hardware Error]: CPU 3:
#                    Machine Check Exception: 5 Bank 7: be00000000800400"),
#                    AMD's decoded "Uncorrected, software restartable error."
#                    and "System Fatal error.", a firmware (APEI/GHES) report
#                    of event severity fatal or recoverable ("{1}[Hardware
#                    Error]: event severity: fatal"; without "{N}" a BERT
#                    record of the previous boot), an EDAC device's "UE:".
#                    A firmware report of a memory error is mem/ecc.sh's
#                    where ghes_edac counts it (an EDAC memory controller
#                    named ghes_edac)
#   oops             the kernel's own crashes: the die() header ("Oops: 0002
#                    [#1] SMP PTI", "general protection fault ...: 0000 [#1]",
#                    "invalid opcode: 0000 [#1]", arm64's "Internal error:
#                    Oops: ..."), "kernel BUG at <file>:<line>!" and "Kernel
#                    BUG at <symbol> [verbose debug info unavailable]", "BUG:
#                    ..." (NULL pointer dereference, unable to handle page
#                    fault, scheduling while atomic, bad page state, ...),
#                    "PANIC: double fault", a "Kernel panic - not syncing: ..."
#                    of its own. The die() header of an oops that a BUG line
#                    opened is the same oops.
#
# A "Kernel panic - not syncing: <reason>" ends the report of its reason:
# it counts in that item (hung_task: hung-tasks; softlockup, Hard LOCKUP:
# soft-lockups; RCU Stall: rcu-stalls; machine check, Fatal hardware error:
# hardware-errors; Fatal exception and the rest: oops), and only when the
# run counted nothing there before it. A panic for an uncorrected memory
# error ("UE ...", "Memory failure ...") is mem/kernlog.sh's.
#
# Not counted: corrected hardware errors (the machine check whose status has
# UC clear, "Corrected error, no action required.", "Deferred error, no
# action required.", "event severity: corrected" or "info"; corrected memory
# errors are mem/ecc.sh's and mem/kernlog.sh's), the notice "Machine check
# events logged" (it follows every machine check, corrected ones too), a
# "WARNING: CPU: N PID: N at ..." (a warning; the kernel goes on), and a
# user-space process's crash: "traps: ..." lines and "<comm>[<pid>]:
# segfault at ...".
#
# Items: "hung-tasks", "soft-lockups", "rcu-stalls", "hardware-errors", "oops".
# Environment:
#   SVC_HUNG_TASKS_MAX       highest healthy count of hung task reports (default 0)
#   SVC_SOFT_LOCKUPS_MAX     highest healthy count of lockup reports (default 0)
#   SVC_RCU_STALLS_MAX       highest healthy count of RCU stall reports (default 0)
#   SVC_HARDWARE_ERRORS_MAX  highest healthy count of uncorrected hardware error reports (default 0)
#   SVC_OOPS_MAX             highest healthy count of oops reports (default 0)
#   KERNEL_LOG_FILE          read this file (/dev/kmsg records or dmesg text) instead of the kernel log
set -u
# shellcheck source=SCRIPTDIR/../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

new=$(klog_new)
code=$?
if [ "$code" -ne 0 ]; then
    klog_skip "$code" hung-tasks soft-lockups rcu-stalls hardware-errors oops
    exit 0
fi
# Whether ghes_edac counts the firmware's memory errors for mem/ecc.sh.
ghes_edac=0
for n in "$HR"/sys/devices/system/edac/mc/mc[0-9]*/mc_name; do
    [ -r "$n" ] && read -r name < "$n" && [ "$name" = ghes_edac ] && ghes_edac=1 && break
done
printf '%s\n' "$new" | awk -v ghes_edac="$ghes_edac" '
    function out(item, line) { print item, line; cnt[item]++ }
    # uc(STATUS): whether a machine check status (%016Lx) has UC (bit 61)
    # set: the hardware did not correct the error.
    function uc(st) {
        if (length(st) < 16) return 1
        return index("2367abefABEF", substr(st, 1, 1)) > 0
    }
    # panic_item(REASON): the item a panic of REASON ends the report of; ""
    # for another script'"'"'s.
    function panic_item(r) {
        if (r ~ /^hung_task: /) return "hung-tasks"
        if (r ~ /^softlockup: |^Hard LOCKUP/) return "soft-lockups"
        if (r ~ /^RCU Stall/) return "rcu-stalls"
        if (r ~ /^UE |^Memory failure /) return ""
        if (r ~ /[Mm]achine [Cc]heck|^MCA |^Failed kernel mode recovery|Fatal hardware error|^EDAC [^ ]*: UE /) return "hardware-errors"
        return "oops"
    }
    { m = $0; sub(/^[0-9.]+ /, "", m) }
    # A user-space process that crashed: the kernel reports it, it is not
    # the kernel failing.
    m ~ /^traps: / || m ~ /\[[0-9]+\]: segfault at / { next }
    m ~ /\[[0-9]+\].* ip:?[0-9a-f]+ sp:?[0-9a-f]+ error:?[0-9a-f]+/ { next }
    # The closing line of a panic repeats it.
    m ~ /^---\[ end / { next }
    (i = index(m, "Kernel panic - not syncing: ")) {
        it = panic_item(substr(m, i + 28))
        if (it != "" && !cnt[it] && !(it == "hardware-errors" && ng)) out(it, m)
        next
    }
    m ~ /blocked for more than [0-9]+ seconds/ { out("hung-tasks", m); next }
    m ~ /BUG: soft lockup|Watchdog detected hard LOCKUP|BUG: workqueue lockup/ { out("soft-lockups", m); next }
    m ~ /rcu_[a-z_]+ (self-)?detected (expedited )?stalls?( on|, but|\?)/ { out("rcu-stalls", m); next }
    # Machine checks: the first line of each bank'"'"'s record.
    match(m, /Machine Check( Exception)?: [0-9a-fA-F]+ Bank [0-9]+: [0-9a-fA-F]+/) {
        st = substr(m, RSTART, RLENGTH); sub(/.*: /, "", st)
        if (uc(st)) out("hardware-errors", m)
        next
    }
    # AMD'"'"'s decoding of the same (drivers/edac/mce_amd.c).
    index(m, "[Hardware Error]: ") && m ~ /(Uncorrected, software (restartable|containable) error|System Fatal error)\.$/ {
        out("hardware-errors", m); next
    }
    # The firmware'"'"'s (APEI/GHES, CPER) report "{N}[Hardware Error]: ...":
    # once, on its severity, after its sections (a memory error that
    # ghes_edac counts is mem/ecc.sh'"'"'s).
    match(m, /^\{[0-9]+\}\[Hardware Error\]: event severity: [a-z]+/) {
        id = substr(m, 2, index(m, "}") - 2)
        sev = substr(m, RSTART, RLENGTH); sub(/^.*: /, "", sev)
        if (sev != "corrected" && sev != "info" && !(id in ghes)) { ghes[id] = m; gorder[++ng] = id }
        next
    }
    m ~ /^\{[0-9]+\}\[Hardware Error\]: +section_type: memory error/ { gmem[substr(m, 2, index(m, "}") - 2)] = 1; next }
    # The same from the previous boot (BERT: "Error records from previous
    # boot:"): the error that may have ended it.
    match(m, /^\[Hardware Error\]: event severity: [a-z]+/) {
        sev = substr(m, RSTART, RLENGTH); sub(/^.*: /, "", sev)
        if (sev != "corrected" && sev != "info") out("hardware-errors", m)
        next
    }
    m ~ /^EDAC DEVICE[0-9]+: UE: / { out("hardware-errors", m); next }
    # The closing lines of a fatal machine check or firmware report, before
    # its panic.
    m ~ /\[Hardware Error\]: (Machine check: |Fake kernel panic: |Some CPUs didn.t answer)|GHES: Fatal hardware error but panic disabled/ {
        if (!cnt["hardware-errors"] && !ng) out("hardware-errors", m)
        next
    }
    index(m, "[Hardware Error]") { next }
    # The lines that open an oops whose die() header follows.
    m ~ /^[Kk]ernel BUG at |BUG: unable to handle |BUG: kernel NULL pointer dereference|BUG: .*stack guard page was hit|^PANIC: double fault|: Corrupted page table at address / {
        out("oops", m); opened = NR; next
    }
    m ~ /: [0-9a-f]+ \[#[0-9]+\]/ {
        if (opened && NR - opened <= 20) opened = 0
        else out("oops", m)
        next
    }
    m ~ /(^|[ :])BUG: / { out("oops", m) }
    END { for (j = 1; j <= ng; j++) if (!(ghes_edac && (gorder[j] in gmem))) print "hardware-errors", ghes[gorder[j]] }
    ' | klog_tally \
    hung-tasks hung-tasks "${SVC_HUNG_TASKS_MAX:-0}" 'hung task' \
    soft-lockups soft-lockups "${SVC_SOFT_LOCKUPS_MAX:-0}" 'lockup' \
    rcu-stalls rcu-stalls "${SVC_RCU_STALLS_MAX:-0}" 'RCU stall' \
    hardware-errors hardware-errors "${SVC_HARDWARE_ERRORS_MAX:-0}" 'hardware error' \
    oops oops "${SVC_OOPS_MAX:-0}" 'oops'
state_commit
