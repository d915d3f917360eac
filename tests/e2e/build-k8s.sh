#!/usr/bin/env bash
# Builds kube-apiserver, kube-controller-manager and kube-scheduler (v1.20.2)
# from Debian's `kubernetes` source package with Debian's Go, once, into
#   ${KUBE_COMBO_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kube-combo}/k8s/bin
# A second call finds the binaries and returns at once.
set -euo pipefail

cache=${KUBE_COMBO_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kube-combo}
bin=$cache/k8s/bin
want=(kube-apiserver kube-controller-manager kube-scheduler)

have_all() {
    local b
    for b in "${want[@]}"; do [[ -x $bin/$b ]] || return 1; done
}

if have_all; then
    echo "kubernetes binaries: cached in $bin"
    exit 0
fi

export DEBIAN_FRONTEND=noninteractive
need=()
command -v go >/dev/null || need+=(golang-go)
command -v rsync >/dev/null || need+=(rsync)
command -v dpkg-source >/dev/null || need+=(dpkg-dev)
if ((${#need[@]})); then
    apt-get install -y -q "${need[@]}" >/dev/null
fi

src=$cache/k8s/src
mkdir -p "$src"
if ! ls "$src"/kubernetes_*.dsc >/dev/null 2>&1; then
    if ! grep -rqs '^Types: deb deb-src' /etc/apt/sources.list.d/ && ! grep -qs '^deb-src' /etc/apt/sources.list; then
        sed -i 's/^Types: deb$/Types: deb deb-src/' /etc/apt/sources.list.d/debian.sources
        apt-get update -q >/dev/null
    fi
    (cd "$src" && apt-get source --download-only kubernetes >/dev/null 2>&1) || {
        apt-get update -q >/dev/null
        (cd "$src" && apt-get source --download-only kubernetes >/dev/null)
    }
fi

tree=$src/tree
if [[ ! -f $tree/.extracted ]]; then
    rm -rf "$tree"
    dpkg-source --no-check -x "$src"/kubernetes_*.dsc "$tree" >/dev/null
    touch "$tree/.extracted"
fi

gopath=$cache/k8s/gopath
mkdir -p "$gopath/src/k8s.io"
ln -sfn "$tree" "$gopath/src/k8s.io/kubernetes"
echo "building kubernetes control plane from $tree (a few minutes, once)"
(
    cd "$gopath/src/k8s.io/kubernetes"
    GOPATH=$gopath GO111MODULE=off GOFLAGS=-mod=vendor CGO_ENABLED=0 GOCACHE=$cache/k8s/gocache \
        make WHAT="cmd/kube-apiserver cmd/kube-controller-manager cmd/kube-scheduler" >"$cache/k8s/build.log" 2>&1
) || { tail -40 "$cache/k8s/build.log" >&2; exit 1; }
mkdir -p "$bin"
for b in "${want[@]}"; do
    cp "$tree/_output/local/bin/linux/amd64/$b" "$bin/$b"
done
echo "kubernetes binaries: built into $bin"
