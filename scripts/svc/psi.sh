#!/bin/sh
# CPU pressure (PSI): the share of the last 10 s in which some runnable task
# waited for a CPU.
#
# Items: "psi:cpu".
# Environment:
#   SVC_PSI_CPU_MAX_PERCENT  highest healthy "some" avg10 of /proc/pressure/cpu (default 90)
set -u
# shellcheck source=SCRIPTDIR/../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

pressure psi:cpu cpu "${SVC_PSI_CPU_MAX_PERCENT:-90}"
