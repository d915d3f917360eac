#!/bin/sh
# Memory problems the kernel logs, since the previous run (the position is
# kept in STATE_DIR; the first run records it and reports skip):
#
#   memory-errors        memory errors, where mem/ecc.sh cannot read the EDAC
#                        counters (no /sys/devices/system/edac/mc/mc*/ce_count;
#                        where it can, every EDAC error is its ecc:<mc> alone):
#                        an error ECC could not correct, "EDAC MC0: 1 UE memory
#                        read error on CPU_SrcID#0_Ha#0_Chan#0_DIMM#0 (...)"
#                        (the line names the module), and corrected errors
#                        with mem/ecc.sh's tolerance: more than MEM_ECC_CE_MAX
#                        since the previous run on one memory controller
#                        ("EDAC MC0: 12 CE ..."), in the firmware's reports
#                        ("{1}[Hardware Error]: event severity: corrected"
#                        with "section_type: memory error") or in the machine
#                        checks of the memory controller whose status has UC
#                        clear. When corrected errors go over, their lines
#                        count, the last one saying how many errors.
#   memory-failure       pages the kernel took out of use after a hardware
#                        memory error, and processes it killed for one: once
#                        per page, on its first line ("Memory failure:
#                        0x12345: recovery action for dirty LRU page:
#                        Recovered", "Memory failure: 0x12345: Sending SIGBUS
#                        to <comm>:<pid> due to hardware memory corruption",
#                        "mce: Uncorrected hardware memory error in
#                        user-access at 12345000", "RAS: Soft-offlining pfn:
#                        0x12345", "soft offline: 0x12345: ..."), and "MCE:
#                        Killing <comm>:<pid> due to hardware memory
#                        corruption fault at ...". A page whose uncorrected
#                        error this run already names (the EDAC "UE" line's
#                        page, the machine check's ADDR, the firmware
#                        report's physical_address) is that error's.
#   allocation-failures  the kernel could not allocate memory for itself:
#                        "<comm>: page allocation failure: order:4, mode:...",
#                        "vmalloc error: size ..., failed to allocate pages",
#                        "vmalloc: allocation failure: ..."
#
# The firmware's own report of an uncorrected error (and the machine
# check's, without an EDAC driver) is svc/kernlog.sh's hardware-errors;
# ghes_edac's EDAC line repeating it ("... APEI location: ...") counts
# nowhere. OOM kills are mem/oom.sh's.
#
# Items: "memory-errors", "memory-failure", "allocation-failures".
# Environment:
#   MEM_MEMORY_ERRORS_MAX   highest healthy count of memory error lines (default 0)
#   MEM_ECC_CE_MAX          highest healthy count of corrected memory errors since the previous run,
#                           per memory controller, where mem/ecc.sh cannot count them (default 10, as mem/ecc.sh)
#   MEM_MEMORY_FAILURE_MAX  highest healthy count of pages (and killed processes) of memory failure (default 0)
#   MEM_ALLOC_FAILURES_MAX  highest healthy count of allocation failure lines (default 0)
#   KERNEL_LOG_FILE         read this file (/dev/kmsg records or dmesg text) instead of the kernel log
set -u
# shellcheck source=SCRIPTDIR/../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

new=$(klog_new)
code=$?
if [ "$code" -ne 0 ]; then
    klog_skip "$code" memory-errors memory-failure allocation-failures
    exit 0
fi
# Whether mem/ecc.sh reads EDAC's counters: then corrected errors are its.
edac=0
for mc in "$HR"/sys/devices/system/edac/mc/mc[0-9]*; do
    [ -r "$mc/ce_count" ] && edac=1 && break
done
printf '%s\n' "$new" | awk -v edac="$edac" -v ce_max="${MEM_ECC_CE_MAX:-10}" '
    # hexnum(S): the hex number S without "0x" and leading zeros, in lower case.
    function hexnum(s) {
        s = tolower(s); sub(/^0x/, "", s); sub(/^0+/, "", s)
        return s == "" ? "0" : s
    }
    # pfn(ADDR): the page frame of a physical address (4 KiB pages).
    function pfn(a) {
        a = hexnum(a)
        return length(a) > 3 ? substr(a, 1, length(a) - 3) : "0"
    }
    # failure(KEY, LINE): a memory failure event, once per page.
    function failure(k, line) {
        if (k in mf) return
        mf[k] = line; order[++nf] = k
    }
    # corrected(KEY, N, LINE): N corrected errors of KEY (a memory
    # controller, the firmware, the machine check).
    function corrected(k, n, line) {
        if (edac) return
        if (!(k in ce)) { ce[k] = 0; keys[++nk] = k }
        ce[k] += n; celine[k] = line; celines[k] = celines[k] "\n" line
    }
    { m = $0; sub(/^[0-9.]+ /, "", m) }
    # EDAC (drivers/edac/edac_mc.c): "EDAC MC<n>: <count> CE|UE ...".
    match(m, /^EDAC MC[0-9]+: [0-9]+ (CE|UE) /) {
        split(substr(m, RSTART, RLENGTH), w, " ")
        if (match(m, /page:0x[0-9a-f]+/)) p = hexnum(substr(m, RSTART + 5, RLENGTH - 5))
        else p = ""
        if (w[4] == "UE") {
            if (p != "") ue[p] = 1
            # ghes_edac repeats the firmware report (hardware-errors); EDAC
            # counters are mem/ecc.sh'"'"'s.
            if (edac || index(m, "APEI location:")) next
            print "memory-errors", m; nue++
        } else {
            sub(/:$/, "", w[2])
            corrected("EDAC " w[2], w[3] + 0, m)
        }
        next
    }
    # The firmware report (APEI/GHES): "{N}[Hardware Error]: ...".
    match(m, /^\{[0-9]+\}\[Hardware Error\]: /) {
        id = substr(m, 2, index(m, "}") - 2)
        r = substr(m, RLENGTH + 1)
        if (r ~ /^event severity: /) { sev[id] = substr(r, 17); next }
        if (r ~ /section_type: memory error/ && sev[id] == "corrected")
            corrected("firmware (APEI)", 1, m)
        if (sev[id] != "corrected" && match(r, /physical_address: 0x[0-9a-f]+/))
            ue[pfn(substr(r, RSTART + 18, RLENGTH - 18))] = 1
        next
    }
    # Machine checks: the memory controller'"'"'s (MCACOD 0000 0000 1MMM
    # CCCC), corrected (UC clear); the address of an uncorrected one.
    match(m, /Machine Check( Exception)?: [0-9a-fA-F]+ Bank [0-9]+: [0-9a-fA-F]+$/) {
        st = tolower(substr(m, RSTART, RLENGTH)); sub(/.*: /, "", st)
        mce_uc = length(st) < 16 || index("2367abef", substr(st, 1, 1)) > 0
        c = substr(st, length(st) - 3)
        if (!mce_uc && length(st) == 16 && substr(c, 1, 1) ~ /[01]/ && substr(c, 2, 1) == "0" && substr(c, 3, 1) ~ /[89a-f]/)
            corrected("machine check", 1, m)
        next
    }
    mce_uc && match(m, /\[Hardware Error\]: TSC [0-9a-f]+ ADDR [0-9a-f]+/) {
        a = substr(m, RSTART, RLENGTH); sub(/.* /, "", a); ue[pfn(a)] = 1; mce_uc = 0; next
    }
    # AMD'"'"'s decoding (drivers/edac/mce_amd.c): the status, then the address.
    index(m, "[Hardware Error]: ") && m ~ /(error|required)\.$/ {
        amd_uc = m ~ /Uncorrected, software|System Fatal error/; next
    }
    amd_uc && match(m, /\[Hardware Error\]: Error Addr: 0x[0-9a-f]+/) {
        a = substr(m, RSTART, RLENGTH); sub(/.* /, "", a); ue[pfn(a)] = 1; amd_uc = 0; next
    }
    # An uncorrected memory error panics the node (edac_mc_panic_on_ue,
    # the memory-failure sysctl off).
    (i = index(m, "Kernel panic - not syncing: ")) {
        r = substr(m, i + 28)
        if (r ~ /^UE / && !nue && !edac) { print "memory-errors", m; nue++ }
        else if (match(r, /^Memory failure (from trap [0-9]+ )?on page [0-9a-f]+/)) {
            a = substr(r, RSTART, RLENGTH); sub(/.* /, "", a); failure(hexnum(a), m)
        }
        next
    }
    # Memory failure (mm/memory-failure.c and who calls it).
    match(m, /^Memory failure: (buffer overflow when queuing memory failure at )?0x[0-9a-f]+/) ||
    match(m, /^(RAS: Soft-offlining pfn: |[Ss]oft[ _]offline: )0x[0-9a-f]+/) ||
    match(m, /^mce: Uncorrected memory error in page 0x[0-9a-f]+/) {
        a = substr(m, RSTART, RLENGTH); sub(/.* /, "", a); failure(hexnum(a), m); next
    }
    # The same from the firmware'"'"'s report (drivers/acpi/apei/ghes.c).
    m ~ /^0x[0-9a-f]+: Sending SIGBUS to .* due to hardware memory corruption/ {
        a = m; sub(/:.*/, "", a); failure(hexnum(a), m); next
    }
    match(m, /(Uncorrected hardware memory error in user-access|Kernel accessed poison in user space) at [0-9a-f]+/) {
        a = substr(m, RSTART, RLENGTH); sub(/.* /, "", a); failure(pfn(a), m); next
    }
    m ~ /^MCE: Killing .* due to hardware memory corruption fault at / { failure("kill " NR, m); next }
    m ~ /page allocation failure: order:[0-9]+|: vmalloc: allocation failure|: vmalloc error: size [0-9]+, (failed|page order)/ {
        print "allocation-failures", m
    }
    END {
        for (j = 1; j <= nf; j++) if (!(order[j] in ue)) print "memory-failure", mf[order[j]]
        for (j = 1; j <= nk; j++) {
            k = keys[j]
            if (ce[k] <= ce_max) continue
            n = split(substr(celines[k], 2), l, "\n")
            for (x = 1; x < n; x++) print "memory-errors", l[x]
            print "memory-errors", ce[k] " corrected errors (" k ") since the previous run, more than MEM_ECC_CE_MAX " ce_max ": " celine[k]
        }
    }
    ' | klog_tally \
    memory-errors memory-errors "${MEM_MEMORY_ERRORS_MAX:-0}" 'memory error' \
    memory-failure memory-failure "${MEM_MEMORY_FAILURE_MAX:-0}" 'memory failure' \
    allocation-failures allocation-failures "${MEM_ALLOC_FAILURES_MAX:-0}" 'allocation failure'
state_commit
