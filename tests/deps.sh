#!/usr/bin/env bash
# Installs the Debian packages that building, testing and the local cluster
# need (root; apt-get). Idempotent: installs only what is missing.
set -euo pipefail
packages=(build-essential pkg-config golang-go rsync dpkg-dev etcd-server iproute2 iptables nftables
    openssl util-linux curl iputils-ping shellcheck fping dnsutils procps jq prometheus victoria-metrics chromium)
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
