#!/bin/sh
# CPU and board temperatures: thermal zones (/sys/class/thermal), else the
# CPU sensors of hwmon (coretemp, k10temp). Virtual machines have neither.
#
# Items: "temp:<zone type or sensor>"; "temp" (skip) without a sensor.
# Environment:
#   SVC_TEMP_MAX_CELSIUS  highest healthy temperature in °C (default 90)
set -u
# shellcheck source=SCRIPTDIR/../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

max=${SVC_TEMP_MAX_CELSIUS:-90}
readings=""
for z in "$HR"/sys/class/thermal/thermal_zone*; do
    [ -r "$z/temp" ] || continue
    t=$(cat "$z/temp" 2>/dev/null) || continue
    type=$(cat "$z/type" 2>/dev/null || echo "${z##*/}")
    readings="$readings$type ${z##*/} $t
"
done
if [ -z "$readings" ]; then
    for h in "$HR"/sys/class/hwmon/hwmon*; do
        name=$(cat "$h/name" 2>/dev/null)
        case $name in coretemp | k10temp | zenpower | cpu_thermal) ;; *) continue ;; esac
        for i in "$h"/temp*_input; do
            [ -r "$i" ] || continue
            readings="$readings$name ${h##*/} $(cat "$i")
"
        done
    done
fi
if [ -z "$readings" ]; then
    skip temp "no thermal zone or CPU temperature sensor (virtual machine, or no driver)"
    exit 0
fi
# Several zones of one type (or sensors of one chip) become one item: the hottest.
printf '%s' "$readings" | awk -v max="$max" '
    $3 ~ /^-?[0-9]+$/ { if (!($1 in hot) || $3 > hot[$1]) { hot[$1] = $3; where[$1] = $2 } if (!($1 in seen)) { seen[$1] = 1; order[++n] = $1 } }
    END {
        for (i = 1; i <= n; i++) {
            t = order[i]; c = hot[t] / 1000
            if (c > max) printf "err temp:%s %.0f°C (%s; limit %s°C)\n", t, c, where[t], max
            else print "ok temp:" t
        }
    }'
