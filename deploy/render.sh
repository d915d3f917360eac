#!/usr/bin/env bash
# Regenerates everything derived from the Rust types and config/:
#   config/crd/*.yaml            (combo-operator crd)
#   deploy/helm/kube-combo/crds  (copies of the CRDs)
#   deploy/helm/kube-combo/rules.yaml (the operator's ClusterRole rules)
#   deploy/kube-combo.yaml       (kubectl kustomize config/default)
#   config/prometheus/prometheusrule.yaml (from config/prometheus/rules.yaml)
#   deploy/helm/kube-combo/prometheus-rules.yaml (a copy of config/prometheus/rules.yaml)
#   deploy/helm/kube-combo/dashboards/ (a copy of deploy/grafana/)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
cargo run -q -p combo-operator --bin combo-operator -- crd --out config/crd
cp config/crd/kubecombo.io_*.yaml deploy/helm/kube-combo/crds/
sed -n '/^rules:$/,$p' config/rbac/cluster_role.yaml | tail -n +2 | sed 's/^  //' > deploy/helm/kube-combo/rules.yaml
{
    echo "# kube-combo: everything in one file (kubectl kustomize config/default)."
    echo "# Regenerate with deploy/render.sh."
    kubectl kustomize config/default
} > deploy/kube-combo.yaml
{
    echo "# Generated from config/prometheus/rules.yaml by deploy/render.sh: edit that file."
    printf 'apiVersion: monitoring.coreos.com/v1\nkind: PrometheusRule\nmetadata:\n  name: kube-combo-alerts\n  labels:\n    app.kubernetes.io/name: kube-combo\nspec:\n'
    grep -v '^#' config/prometheus/rules.yaml | sed 's/^/  /'
} > config/prometheus/prometheusrule.yaml
cp config/prometheus/rules.yaml deploy/helm/kube-combo/prometheus-rules.yaml
cp deploy/grafana/kube-combo-pinger.json deploy/helm/kube-combo/dashboards/
