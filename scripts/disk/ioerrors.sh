#!/bin/sh
# I/O and filesystem errors in the kernel log since the previous run.
#
# The kernel log is read from the position the previous run reached (kept in
# STATE_DIR): an error is reported by the first run after it was logged, and
# not again. The first run records the position and reports skip.
#
# Filesystem errors, per device: "EXT4-fs error" and "EXT4-fs warning" (also
# ext2/ext3; not the "maximal mount count reached" hint), "Remounting
# filesystem read-only" of any filesystem, "error count since last fsck",
# "Aborting journal on device", a JBD2 error, an XFS corruption, I/O error,
# internal error or shutdown ("Filesystem has been shut down due to log
# error", "Log I/O Error Detected. Shutting down filesystem", "log I/O error
# -5", in any case), "BTRFS error"/"critical", a forced read-only, "FAT-fs
# error".
# I/O errors, per device: the block layer's "<kind> error, dev <dev>, sector
# N" ("I/O error", "critical medium error", "timeout error", ...; after
# "blk_update_request:", "print_req_error:" or alone), "Buffer I/O error on
# dev <dev>", NVMe's "<ns>: I/O Cmd(0x2) @ LBA N, N blocks, I/O Error (sct
# 0x2 / sc 0x81)" (or with the command and status named: "Read(0x2) ...
# Unrecovered Read Error") and "nvme nvme0: I/O N QID N timeout", SCSI sense
# "Medium Error"/"Hardware Error", "critical target error", libata's "failed
# command:". A device is named as the kernel names it (dm-0, nvme0n1, sdb1).
# Removable drives are left out by default: an empty virtual CD-ROM (sr0)
# or floppy (fd0) fails every read.
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

printf '%s\n' "$new" | IGNORE=${DISK_IO_IGNORE_DEVICES-sr* fd*} awk "$AWK_GLOB_RE"'
    # after(RE): the word that follows the first match of RE in the line.
    function after(re,   w) {
        if (!match(m, re)) return ""
        w = substr(m, RSTART + RLENGTH)
        sub(/[ ,;)].*/, "", w)
        return w
    }
    # device(): the device a line names, as the kernel names it.
    function device(   d, n, w) {
        if (m ~ /^(Aborting journal on device |JBD2: )/) {
            # The journal, "<device>-<inode>".
            d = m; sub(/\.$/, "", d); n = split(d, w, " "); d = w[n]
            sub(/-[0-9]+$/, "", d)
            return d
        }
        if ((d = after("\\(device ")) != "") return d
        if ((d = after("(^|[ ,])dev ")) != "") return d
        if ((d = after("on device ")) != "") return d
        if (match(m, /^[^ ]+ \([^ )]+\):/)) { d = substr(m, RSTART, RLENGTH - 2); sub(/^[^(]*\(/, "", d); return d }
        if (match(m, /^nvme nvme[0-9]+: /)) return substr(m, 6, RLENGTH - 7)
        if (match(m, /^(nvme[0-9]+n[0-9]+|ata[0-9.]+): /)) return substr(m, 1, RLENGTH - 2)
        if (match(m, /\[[a-z][a-z0-9]*\]/)) return substr(m, RSTART + 1, RLENGTH - 2)
        if ((d = after("error on ")) != "") return d
        return "unknown"
    }
    # keep(KIND): the line counts for KIND (io or fs) of its device, unless
    # the device is left out.
    function keep(kind,   d, i) {
        d = device()
        sub(/[.:]$/, "", d)
        for (i = 1; i <= ng; i++) if (d ~ re[i]) return
        print kind ":" d, m
    }
    BEGIN { ng = split(ENVIRON["IGNORE"], g, " "); for (i = 1; i <= ng; i++) re[i] = glob_re(g[i]) }
    { m = $0; sub(/^[0-9.]+ /, "", m); l = tolower(m) }
    m ~ /EXT[234]-fs (error|warning)/ && m !~ /maximal mount count reached|checktime reached/ { keep("fs"); next }
    m ~ /Remounting filesystem read-only|error count since last fsck|^Aborting journal on device |^JBD2: .*[Ee]rror/ { keep("fs"); next }
    l ~ /^xfs \([^)]*\): .*(corruption|i\/o error|shut down|shutting down|internal error|force_shutdown|writeback error|rectify the problem|log_force: error|failing async write)/ {
        keep("fs"); next
    }
    m ~ /BTRFS (error|critical)|BTRFS: error \(device|BTRFS warning .*(csum|checksum) (failed|error)|forced readonly/ { keep("fs"); next }
    m ~ /FAT-fs \([^)]*\): (error|Filesystem has been set read-only)/ { keep("fs"); next }
    l ~ /i\/o error|error, dev [^,]+, sector|critical (medium|target) error|medium error|sense key : hardware error/ { keep("io"); next }
    m ~ /^nvme[0-9]+n[0-9]+: .* @ LBA [0-9]+, [0-9]+ blocks, .*\(sct 0x/ { keep("io"); next }
    m ~ /^nvme nvme[0-9]+: I\/O [0-9]+ (QID [0-9]+ )?timeout|^ata[0-9.]+: failed command:/ { keep("io") }
    ' | klog_tally \
    io io-errors "${DISK_IO_ERRORS_MAX:-0}" 'I/O error' \
    fs fs-errors "${DISK_FS_ERRORS_MAX:-0}" 'filesystem error'
state_commit
