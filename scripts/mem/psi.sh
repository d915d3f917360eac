#!/bin/sh
# Memory pressure (PSI): the share of the last 10 s in which some task waited
# for memory (reclaim, swap-in, refaults).
#
# Items: "psi:memory".
# Environment:
#   MEM_PSI_MAX_PERCENT  highest healthy "some" avg10 of /proc/pressure/memory (default 20)
set -u
# shellcheck source=SCRIPTDIR/../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

pressure psi:memory memory "${MEM_PSI_MAX_PERCENT:-20}"
