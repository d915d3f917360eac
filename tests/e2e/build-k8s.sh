#!/usr/bin/env bash
# Builds kube-apiserver, kube-controller-manager, kube-scheduler and kubelet (v1.20.2)
# from Debian's `kubernetes` source package with Debian's Go, once, into
#   ${KUBE_COMBO_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kube-combo}/k8s/bin
# A second call finds the binaries and returns at once.
set -euo pipefail

cache=${KUBE_COMBO_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kube-combo}
bin=$cache/k8s/bin
want=(kube-apiserver kube-controller-manager kube-scheduler kubelet)

# Kubernetes 1.20 vendors modern-go/reflect2 1.0.1 and json-iterator 1.1.10,
# which break under Go 1.18 or newer: the API server crashes (SIGSEGV) encoding
# maps and reads an empty string in a custom resource as null. Debian's newer
# packages of both (and of modern-go/concurrent) replace the vendored copies.
# The OpenAPI type validator also compares two reflect.Value structs to spot
# "zero" values; since Go 1.18 that holds for "", 0 and false, so the API
# server rejects them in custom resources as null. It is patched to test for
# nil only, as later Kubernetes releases do.
# The stamp marks binaries built that way.
stamp="reflect2-1.0.2+json-iterator-1.1.12+type-nil"
replace=(
    "golang-github-modern-go-reflect2-dev github.com/modern-go/reflect2"
    "golang-github-modern-go-concurrent-dev github.com/modern-go/concurrent"
    "golang-github-json-iterator-go-dev github.com/json-iterator/go"
)

have_all() {
    local b
    [[ $(cat "$bin/.build" 2>/dev/null) == "$stamp" ]] || return 1
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
for r in "${replace[@]}"; do
    [[ -d /usr/share/gocode/src/${r#* } ]] || need+=("${r%% *}")
done
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

for r in "${replace[@]}"; do
    path=${r#* }
    rm -rf "${tree:?}/vendor/$path"
    mkdir -p "$tree/vendor/$path"
    cp -rL "/usr/share/gocode/src/$path/." "$tree/vendor/$path/"
done

for f in vendor/k8s.io/kube-openapi/pkg/validation/validate/type.go vendor/github.com/go-openapi/validate/type.go; do
    sed -i 's/if data == nil || reflect.DeepEqual(reflect.Zero(reflect.TypeOf(data)), reflect.ValueOf(data)) {/if data == nil {/' "$tree/$f"
    grep -q 'if data == nil {' "$tree/$f" || { echo "cannot patch $f" >&2; exit 1; }
done

gopath=$cache/k8s/gopath
mkdir -p "$gopath/src/k8s.io"
ln -sfn "$tree" "$gopath/src/k8s.io/kubernetes"
echo "building kubernetes control plane and kubelet from $tree (a few minutes, once)"
(
    cd "$gopath/src/k8s.io/kubernetes"
    GOPATH=$gopath GO111MODULE=off GOFLAGS=-mod=vendor CGO_ENABLED=0 GOCACHE=$cache/k8s/gocache \
        make WHAT="cmd/kube-apiserver cmd/kube-controller-manager cmd/kube-scheduler cmd/kubelet" >"$cache/k8s/build.log" 2>&1
) || { tail -40 "$cache/k8s/build.log" >&2; exit 1; }
mkdir -p "$bin"
for b in "${want[@]}"; do
    cp "$tree/_output/local/bin/linux/amd64/$b" "$bin/.$b.new"
    mv -f "$bin/.$b.new" "$bin/$b"
done
echo "$stamp" >"$bin/.build"
echo "kubernetes binaries: built into $bin"
