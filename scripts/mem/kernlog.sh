#!/bin/sh
# Memory problems the kernel logs, since the previous run (the position is
# kept in STATE_DIR; the first run records it and reports skip):
#
#   memory-errors        errors an EDAC driver found in memory, corrected
#                        (CE) or not (UE): "EDAC MC0: 1 CE memory read error
#                        on CPU_SrcID#0_Ha#0_Chan#0_DIMM#0 (...)", "EDAC MC0: 1
#                        UE ...", "EDAC MC1: CE page 0x..., ..."; the line
#                        names the module
#   memory-failure       pages the kernel took out of use after a hardware
#                        memory error: "Memory failure: 0x12345: recovery
#                        action for dirty LRU page: Recovered", "mce:
#                        Uncorrected hardware memory error in user-access at
#                        ...", "MCE: Killing <comm>:<pid> due to hardware
#                        memory corruption"
#   allocation-failures  the kernel could not allocate memory for itself:
#                        "<comm>: page allocation failure: order:4, mode:..."
#
# The EDAC counters are mem/ecc.sh's "ecc:<mc>" (with a tolerance for
# corrected errors); these items are the kernel's own report of each error.
# OOM kills are mem/oom.sh's.
#
# Items: "memory-errors", "memory-failure", "allocation-failures".
# Environment:
#   MEM_MEMORY_ERRORS_MAX   highest healthy count of EDAC error lines (default 0)
#   MEM_MEMORY_FAILURE_MAX  highest healthy count of memory failure lines (default 0)
#   MEM_ALLOC_FAILURES_MAX  highest healthy count of page allocation failure lines (default 0)
#   KERNEL_LOG_FILE         read this file (/dev/kmsg record format) instead of the kernel log
set -u
# shellcheck source=SCRIPTDIR/../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

new=$(klog_new)
code=$?
if [ "$code" -ne 0 ]; then
    klog_skip "$code" memory-errors memory-failure allocation-failures
    exit 0
fi
printf '%s\n' "$new" | awk '
    { m = $0; sub(/^[0-9.]+ /, "", m) }
    m ~ /^EDAC [^:]*MC[0-9]+: ([0-9]+ )?(CE|UE) / || m ~ /[CU]E memory read error/ {
        print "memory-errors", m; next
    }
    m ~ /^Memory failure: |Uncorrected hardware memory error|due to hardware memory corruption/ {
        print "memory-failure", m; next
    }
    m ~ /page allocation failure: order:[0-9]+/ { print "allocation-failures", m }
    ' | klog_tally \
    memory-errors memory-errors "${MEM_MEMORY_ERRORS_MAX:-0}" 'EDAC memory error' \
    memory-failure memory-failure "${MEM_MEMORY_FAILURE_MAX:-0}" 'memory failure' \
    allocation-failures allocation-failures "${MEM_ALLOC_FAILURES_MAX:-0}" 'page allocation failure'
state_commit
