#!/usr/bin/env bash
# Checks the Prometheus alert rules in config/prometheus/: syntax, unit tests
# (promtool test rules), and that the PrometheusRule carries the same groups
# as the plain rules file. Installs promtool (Debian package prometheus)
# when it is missing.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo/config/prometheus"
if ! command -v promtool >/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null
fi
promtool check rules rules.yaml
promtool test rules rules_test.yaml
want=$(grep -v '^#' rules.yaml | sed 's/^/  /')
got=$(sed -n '/^spec:$/,$p' prometheusrule.yaml | tail -n +2)
if [ "$want" != "$got" ]; then
    echo "config/prometheus/prometheusrule.yaml is stale: run deploy/render.sh" >&2
    exit 1
fi

# The Grafana dashboard: every query parses (checked as recording rules,
# with the template variables filled in) and uses only the pinger's metrics
# and the operator's result metrics.
dashboard="$repo/deploy/grafana/kube-combo-pinger.json"
exprs=$(mktemp)
trap 'rm -f "$exprs"' EXIT
python3 - "$dashboard" > "$exprs" <<'PY'
import json, re, sys
dash = json.load(open(sys.argv[1]))
ours = {"combo_pinger_target_up", "combo_pinger_probes_total",
        "combo_pinger_rtt_seconds_bucket",
        "combo_operator_debugger_failing_nodes",
        "combo_operator_node_problem"}
print("groups:\n  - name: dashboard\n    rules:")
for n, panel in enumerate(dash["panels"]):
    for t in panel["targets"]:
        expr = t["expr"].replace("$namespace", ".*").replace("$kind", ".*")
        used = set(re.findall(r"\bcombo_[a-z_]+", expr))
        if not used or not used <= ours:
            sys.exit(f"panel {panel['title']!r} uses {sorted(used - ours) or 'no kube-combo metric'}")
        print(f"      - record: dashboard_panel_{n}")
        print(f"        expr: {json.dumps(expr)}")
PY
promtool check rules "$exprs"
echo "prometheus rules and dashboard: ok"
