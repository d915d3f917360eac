#!/bin/sh
# I/O pressure (PSI): the share of the last 10 s in which some task waited
# for I/O.
#
# Items: "psi:io".
# Environment:
#   DISK_PSI_IO_MAX_PERCENT  highest healthy "some" avg10 of /proc/pressure/io (default 50)
set -u
# shellcheck source=SCRIPTDIR/../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

pressure psi:io io "${DISK_PSI_IO_MAX_PERCENT:-50}"
