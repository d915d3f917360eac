#!/bin/sh
# I/O and filesystem errors in the kernel log since the previous run.
#
# The kernel log is read from the position the previous run reached (kept in
# STATE_DIR): an error is reported by the first run after it was logged, and
# not again. The first run records the position and reports skip.
#
# A line counts when it says that something failed: an error, a timeout, a
# corruption, a shutdown, a read-only remount. The lines of the same report
# that only add detail or advice (SCSI "Add. Sense:" and "CDB:", libata's
# "cmd"/"res"/"status:"/"error:" lines, XFS's "Please unmount the filesystem
# and rectify the problem(s)", NVMe's "Abort status") do not count again.
#
# I/O errors, per device:
# - the block layer's "<kind> error, dev <dev>, sector N" ("I/O error",
#   "critical medium error", "timeout error", ...; after "blk_update_request:",
#   "print_req_error:" or alone), but not "operation not supported" nor a
#   "critical target error" of a discard or write-zeroes (a device that
#   declined an optional command: the kernel stops sending it);
#   "Buffer I/O error on dev <dev>";
# - NVMe: a namespace's "<ns>: Read(0x2) @ LBA N, N blocks, <status> (sct ..
#   / sc ..)" (also a logged passthrough command's; not Invalid Opcode or
#   Invalid Field: a declined optional command; not a controller's own admin
#   command, "nvme0: Identify(0x6), ..."); "no available path - failing
#   I/O" of a multipath namespace; the
#   controller's (nvme0) I/O timeouts in each shape ("I/O 12 QID 4 timeout,
#   aborting", "I/O tag 12 (000c) opcode 0x2 (Read) QID 4 timeout, reset
#   controller", "... completion polled"), "controller is down; will reset",
#   "Device not ready; aborting ...", "Removing after probe failure",
#   "Disabling device after reset failure", a PCI error ("frozen state error
#   detected", "failure state error detected") and a reset for a persistent
#   internal error. A path of a multipath namespace (nvme0c1n1) counts for
#   its namespace (nvme0n1);
# - SCSI ("sd 2:0:0:0: [sdb] tag#3 ..."): "FAILED Result:" whose host or
#   driver byte is not DID_OK/DRIVER_OK (with DRIVER_SENSE the sense data
#   tells), sense key "Medium Error" or "Hardware Error", "timing out command",
#   "Device offlined - not ready after error recovery", "rejecting I/O to
#   offline device", "Medium access timeout failure", "reservation conflict".
#   A line that names only its SCSI address counts for the disk an earlier
#   line of the same address named ("[sdb]") or the node's sysfs shows
#   (/sys/bus/scsi/devices/H:C:T:L/block), else for the address (io:2:0:0:0);
# - libata: "ata1.00: failed command: ..." (one per failed command; an ATAPI
#   drive's report has none), a link's "ata1: exception Emask ...", a device
#   "disabled", "reset failed, giving up", "EH pending after N tries".
# Filesystem errors, per device: "EXT4-fs error" (ext2 and ext3 too) and
# "EXT4-fs warning" but a warning that is no fault (an online resize's
# notes, a mount option's redundancy, an MMP wait, a forced cache shrink, a
# follow-up line), ext4's "Remounting filesystem read-only", "error count
# since last fsck", "mounting fs with errors", superblock I/O errors, "error
# loading journal", lost delayed allocations; any "<FS> error (device X)"
# (NILFS, REISERFS) and "Remounting filesystem read-only" (a bare one counts
# for the filesystem of the line before); JBD2's "Aborting journal on device"
# and journal I/O errors (for the journal's device); an XFS corruption, CRC
# error, I/O error, internal error or shutdown (one a user asked for too: the
# filesystem is down either way); "BTRFS error"/"critical", a BTRFS checksum
# failure or forced read-only; "FAT-fs error". A device is named as the
# kernel names it (dm-0, nvme0n1, sdb1, ata1.00).
# Removable drives are left out by default: an empty virtual CD-ROM (sr0) or
# floppy (fd0) fails every read; so are the SCSI lines of the CD-ROM driver
# (sr) whose disk is unknown. Loop devices count: their I/O is a
# workload's.
#
# Items: "io:<device>" per device with more I/O error lines than the limit,
# else "io-errors"; "fs:<device>" per device with more filesystem error
# lines than the limit, else "fs-errors".
# Environment:
#   DISK_IO_ERRORS_MAX      highest healthy count of I/O error lines per device (default 0)
#   DISK_FS_ERRORS_MAX      highest healthy count of filesystem error lines per device (default 0)
#   DISK_IO_IGNORE_DEVICES  shell globs of devices whose errors are left out (default "sr* fd*"; empty: none)
#   KERNEL_LOG_FILE         read this file (/dev/kmsg record format) instead of the kernel log
set -u
# shellcheck source=SCRIPTDIR/../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

new=$(klog_new)
code=$?
if [ "$code" -ne 0 ]; then
    klog_skip "$code" io-errors fs-errors
    exit 0
fi

# The disks the node's sysfs shows behind SCSI addresses, "2:0:0:0=sda ...",
# for the SCSI lines that name only the address. A glob: no process.
scsi_disks=""
for _p in "$HR"/sys/bus/scsi/devices/*:*:*:*/block/*; do
    [ -e "$_p" ] || continue
    _a=${_p%/block/*}
    scsi_disks="$scsi_disks ${_a##*/}=${_p##*/}"
done

printf '%s\n' "$new" | IGNORE=${DISK_IO_IGNORE_DEVICES-sr* fd*} SCSI_DISKS=$scsi_disks awk "$AWK_GLOB_RE"'
    # after(RE): the word that follows the first match of RE in the line.
    function after(re,   w) {
        if (!match(m, re)) return ""
        w = substr(m, RSTART + RLENGTH)
        sub(/[ ,;:)].*/, "", w)
        return w
    }
    # journal(NAME): the device of a JBD2 journal, "<device>-<inode>" for
    # one inside its filesystem, "<device>" for an external one.
    function journal(d) {
        sub(/\.$/, "", d)
        if (d ~ /-[0-9]+$/ && d !~ /^dm-[0-9]+$/) sub(/-[0-9]+$/, "", d)
        return d
    }
    # out(KIND, DEVICE, AS): the line counts for KIND (io or fs) of DEVICE,
    # unless DEVICE, or AS when given, matches a glob of the left-out
    # devices.
    function out(kind, d, as,   i) {
        sub(/[.:,]$/, "", d)
        if (d ~ /^nvme[0-9]+c[0-9]+n[0-9]+$/) sub(/c[0-9]+n/, "n", d)
        if (d == "") d = "unknown"
        if (as == "") as = d
        for (i = 1; i <= ng; i++) if (d ~ re[i] || as ~ re[i]) return
        if (kind == "fs") lastfs = d
        print kind ":" d, m
    }
    BEGIN {
        ng = split(ENVIRON["IGNORE"], g, " ")
        for (i = 1; i <= ng; i++) re[i] = glob_re(g[i])
        n = split(ENVIRON["SCSI_DISKS"], s, " ")
        for (i = 1; i <= n; i++) if ((j = index(s[i], "=")) > 1) disk[substr(s[i], 1, j - 1)] = substr(s[i], j + 1)
    }
    {
        m = $0; sub(/^[0-9.]+ /, "", m)
        # dmesg of a kernel with CONFIG_PRINTK_CALLER: "[T123] " first.
        if (substr(m, 1, 1) == "[") sub(/^\[ *[CT][0-9]+\] /, "", m)
    }
    # The block layer.
    m ~ /^([a-z_]+: )?[A-Za-z\/ ]+ error, dev [^ ,]+, sector [0-9]+/ {
        if (m ~ /operation not supported error, / || m ~ /critical target error, .* op 0x[0-9a-f]+:\((DISCARD|SECURE_ERASE|WRITE_SAME|WRITE_ZEROES)\)/) next
        out("io", after(" error, dev ")); next
    }
    m ~ /^Buffer I\/O error on dev(ice)? [^ ,]+, logical block / { out("io", after(" on dev(ice)? ")); next }
    # NVMe: the controller, a namespace or one of its paths, a multipath
    # namespace.
    match(m, /^nvme nvme[0-9]+: /) {
        r = substr(m, RLENGTH + 1)
        if (r ~ /^I\/O (tag )?[0-9]+ .*QID [0-9]+ timeout, / || r ~ /^(controller is down; will reset: |Removing after probe failure status: |Disabling device after reset failure: |Device not ready; aborting |frozen state error detected, reset controller$|failure state error detected, request disconnect$|resetting controller due to (AER|persistent internal error)$)/)
            out("io", substr(m, 6, RLENGTH - 7))
        next
    }
    match(m, /^nvme[0-9]+(c[0-9]+)?n[0-9]+: /) {
        if (m ~ /\(sct 0x[0-9a-f]+ \/ sc 0x[0-9a-f]+\)/ && m !~ /\(sct 0x0 \/ sc 0x[12]\)/)
            out("io", substr(m, 1, RLENGTH - 2))
        next
    }
    m ~ /^block nvme[0-9]+n[0-9]+: no (available )?path - failing I\/O$/ { out("io", substr(m, 7, index(m, ":") - 7)); next }
    # SCSI: "<driver> H:C:T:L: [disk] tag#N <text>".
    match(m, /^[a-z]+ [0-9]+:[0-9]+:[0-9]+:[0-9]+: /) {
        drv = substr(m, 1, index(m, " ") - 1)
        a = substr(m, length(drv) + 2, RLENGTH - length(drv) - 3)
        r = substr(m, RLENGTH + 1); d = ""
        if (match(r, /^\[[A-Za-z0-9_.!-]+\] /)) { d = substr(r, 2, RLENGTH - 3); disk[a] = d; r = substr(r, RLENGTH + 1) }
        sub(/^tag#[0-9]+ /, "", r)
        if (r ~ /^FAILED Result: /) bad = r !~ /hostbyte=DID_OK driverbyte=DRIVER_(OK|SENSE)( |$)/
        else bad = r ~ /^(Sense Key : (Medium|Hardware) Error|timing out command, waited [0-9]+s$|Device offlined - not ready after error recovery$|rejecting I\/O to offline device$|Medium access timeout failure\. Offlining disk!$|reservation conflict$)/
        if (bad) {
            if (d == "" && (a in disk)) d = disk[a]
            if (d != "") out("io", d)
            else out("io", a, drv == "sr" ? "sr" : a)
        }
        next
    }
    # libata: "ata1.00: ..." a device, "ata1: ..." a link or port.
    match(m, /^ata[0-9]+(\.[0-9]+)?: /) {
        d = substr(m, 1, RLENGTH - 2); r = substr(m, RLENGTH + 1)
        if (index(d, ".") ? (r ~ /^(failed command: |disabled$|disable device$)/) : (r ~ /^(exception Emask |reset failed, giving up$|EH pending after [0-9]+ tries, giving up$)/))
            out("io", d)
        next
    }
    # Filesystems.
    m ~ /^BTRFS/ {
        if (m ~ /^BTRFS (error|critical|alert|emergency) \(device |^BTRFS: error \(device / || m ~ /^BTRFS warning \(device [^)]*\): .*(csum failed |checksum verify failed |checksum error at |i\/o error at )/ || m ~ /^BTRFS info \(device [^)]*\): forced readonly$/)
            out("fs", after("\\(device "))
        next
    }
    m ~ /^EXT[234]-fs (error|warning) \(device / {
        # Warnings that are no fault: an online resize'"'"'s notes, mount-time
        # notes, a forced cache shrink, a declined request, a follow-up line.
        if (m ~ /^EXT[234]-fs warning/ && m ~ /will only finish group|need to use ext2online to resize further|No reserved GDT blocks, can.t resize|can.t shrink FS - resize aborted|won.t resize using backup superblock|Can.t resize non-sparse filesystem further|metadata_csum and uninit_bg are redundant flags|because of new feature flag, running e2fsck is recommended|MMP interval [0-9]+ higher than expected|kmmpd being stopped since|forced shrink of precached extents|Setting inode version is not supported|verity is only allowed on extent-based files|Large directory feature is not enabled on this filesystem|Enable large directory feature to access it|Mark(ing|ed) fs in need of filesystem check/) next
        out("fs", after("\\(device ")); next
    }
    match(m, /^EXT[234]-fs \([^)]+\): /) {
        r = substr(m, RLENGTH + 1)
        if (r ~ /^(error: |Remounting filesystem read-only|error count since last fsck: |I\/O error while writing superblock|previous I\/O error to superblock detected|warning: mounting fs with errors|Delayed block allocation failed |failed to convert unwritten extents|error loading journal|group descriptors corrupted|corrupt root inode|VFS: Found ext4 filesystem with invalid superblock checksum)/)
            out("fs", substr(m, 10, RLENGTH - 12))
        next
    }
    m ~ /^([A-Z0-9]+ )?error \(device [^)]+\)/ { out("fs", after("\\(device ")); next }
    m ~ /^Aborting journal on device [^ ]+$/ || m ~ /^JBD2: (Error -?[0-9]+ detected when updating journal superblock for |I\/O error when updating journal superblock for |previous I\/O error detected for journal superblock update for |Detected IO errors (-?[0-9]+ )?while flushing file data on )[^ ]+$/ {
        d = m; sub(/.* /, "", d); out("fs", journal(d)); next
    }
    m ~ /^JBD2: journal transaction [0-9]+ on [^ ]+ is corrupt\.$/ { out("fs", journal(after(" on "))); next }
    match(m, /^XFS \([^)]+\): /) {
        l = tolower(substr(m, RLENGTH + 1))
        if (l ~ /corruption|crc error|i\/o error|shut down|shutting down|internal error|writeback error|failing async write|log mount\/recovery failed/ && l !~ /^(corruption detected\. )?unmount and run xfs_repair$/)
            out("fs", substr(m, 6, RLENGTH - 8))
        next
    }
    m ~ /^FAT-fs \([^)]+\): (error, |Filesystem has been set read-only)/ { out("fs", substr(m, 9, index(m, ")") - 9)); next }
    m ~ /Remounting filesystem read-only/ {
        d = after("\\(device ")
        if (d == "" && match(m, /^[^ ]+ \([^ )]+\):/)) { d = substr(m, RSTART, RLENGTH - 2); sub(/^[^(]*\(/, "", d) }
        out("fs", d != "" ? d : lastfs)
    }
    ' | klog_tally \
    io io-errors "${DISK_IO_ERRORS_MAX:-0}" 'I/O error' \
    fs fs-errors "${DISK_FS_ERRORS_MAX:-0}" 'filesystem error'
state_commit
