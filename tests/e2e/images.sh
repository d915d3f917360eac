#!/usr/bin/env bash
# Builds kube-combo's container images from deploy/docker/ with buildah, as
# `docker build` would, and pushes them to a registry.
#
#   tests/e2e/images.sh build              build (incrementally) kube-combo/{operator,runner,pinger}:dev
#   tests/e2e/images.sh push REGISTRY      build, then push them (and kube-combo/pause:3.4) to REGISTRY
#                                          (plain HTTP, e.g. 172.31.0.1:5000 from cluster.sh)
#   tests/e2e/images.sh plugin DIR         copy kubectl-combo out of the operator image into DIR
#   tests/e2e/images.sh publish VERSION REGISTRY TLS-VERIFY DIR NAME...
#                                          push built images as release VERSION (deploy/release.sh)
#
# The base images the Dockerfiles name cannot be pulled here, so the first
# build makes local stand-ins under the same names, from Debian bookworm:
#   docker.io/library/debian:bookworm-slim   mmdebstrap --variant=minbase, docs left out
#   gcr.io/distroless/cc-debian12[:nonroot]  the distroless package set (libc6, libgcc-s1,
#                                           libstdc++6, libgomp1, libssl3, ca-certificates,
#                                           tzdata, netbase, base-files) unpacked, no shell,
#                                           users root, nonroot (65532), nobody
#   docker.io/library/rust:1.89-bookworm     minbase + build-essential, pkg-config, git, curl,
#                                           this machine's Rust toolchain in /usr/local (rustup layout)
#                                           and its local CA certificates (crates are downloaded)
# Image storage (vfs) lives in ${KUBE_COMBO_CACHE:-~/.cache/kube-combo}/containers;
# cargo's registry and target directory are buildah cache mounts shared by
# the three Dockerfiles, so a code change recompiles only what it touches.
# KUBE_COMBO_IMAGE_PROFILE (default release) is the cargo profile built;
# KUBE_COMBO_HARNESS_ONLY=1 makes `push` push the sandbox image only;
# KUBE_COMBO_VERSION, when set, is the version the binaries print (--version);
# KUBE_COMBO_IMAGES (default "operator runner pinger") names the images `build`
# builds (deploy/release.sh builds those a release changes).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
cache=${KUBE_COMBO_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kube-combo}
store=$cache/containers
profile=${KUBE_COMBO_IMAGE_PROFILE:-release}
tag=dev
images=(operator runner pinger)
read -r -a built <<<"${KUBE_COMBO_IMAGES:-${images[*]}}"
suites=("deb http://deb.debian.org/debian bookworm main"
    "deb http://deb.debian.org/debian bookworm-updates main"
    "deb http://deb.debian.org/debian-security bookworm-security main")

die() { echo "images.sh: $*" >&2; exit 2; }
bh() { buildah --root "$store/root" --runroot "$store/run" --storage-driver vfs "$@"; }
have() { bh inspect --type image "$1" >/dev/null 2>&1; }
log() { printf '[images %(%T)T] %s\n' -1 "$*"; }

ensure_packages() {
    local need=() p
    for p in buildah mmdebstrap gcc libc6-dev rsync; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || need+=("$p")
    done
    if ((${#need[@]})); then
        export DEBIAN_FRONTEND=noninteractive
        apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null 2>&1 || {
            apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null
        }
    fi
}

# Commits a root filesystem that `fill DIR` writes into a new image NAME.
commit_rootfs() { # name fill-function config-args...
    local name=$1 fill=$2 ctr mnt
    shift 2
    ctr=$(bh from scratch)
    mnt=$(bh mount "$ctr")
    "$fill" "$mnt"
    bh umount "$ctr" >/dev/null
    bh config "$@" "$ctr"
    bh commit --quiet "$ctr" "$name" >/dev/null
    bh rm "$ctr" >/dev/null
}

fill_slim() {
    rmdir "$1"
    mmdebstrap --quiet --variant=minbase --dpkgopt='path-exclude=/usr/share/doc/*' \
        --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
        --dpkgopt='path-include=/usr/share/doc/*/copyright' bookworm "$1" "${suites[@]}"
}

# Runs a command in the root filesystem $1 with a clean environment: this
# machine's (TMPDIR, HOME, ...) names paths that do not exist there.
in_root() {
    chroot "$1" env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "${@:2}"
}

fill_rust() {
    fill_slim "$1"
    in_root "$1" apt-get update -q >/dev/null
    in_root "$1" apt-get install -y -q --no-install-recommends \
        build-essential pkg-config libssl-dev git curl ca-certificates >/dev/null
    rm -rf "$1"/var/lib/apt/lists/*
    # The build stage downloads crates: it trusts what this machine trusts
    # (a TLS-inspecting proxy's CA, for one), as a locally mirrored base would.
    if compgen -G '/usr/local/share/ca-certificates/*.crt' >/dev/null; then
        cp /usr/local/share/ca-certificates/*.crt "$1/usr/local/share/ca-certificates/"
        in_root "$1" update-ca-certificates >/dev/null 2>&1
    fi
    local tc
    tc=$(rustc --print sysroot)
    mkdir -p "$1/usr/local/rustup/toolchains" "$1/usr/local/cargo/bin"
    rsync -a --exclude share/doc "$tc/" "$1/usr/local/rustup/toolchains/stable/"
    local b
    for b in "$1"/usr/local/rustup/toolchains/stable/bin/*; do
        ln -s "../../rustup/toolchains/stable/bin/${b##*/}" "$1/usr/local/cargo/bin/${b##*/}"
    done
}

fill_distroless() {
    local work deb
    work=$(mktemp -d)
    chmod 755 "$work" # apt's download user writes there
    (cd "$work" && apt-get download -q base-files netbase tzdata libc6 libgcc-s1 libgomp1 \
        libstdc++6 libssl3 ca-certificates >/dev/null)
    for deb in "$work"/*.deb; do dpkg-deb -x "$deb" "$1"; done
    rm -rf "$work" "$1"/usr/share/doc "$1"/usr/share/man
    mkdir -p "$1"/etc/ssl/certs "$1"/tmp "$1"/home/nonroot "$1"/root
    chmod 1777 "$1"/tmp
    chown 65532:65532 "$1"/home/nonroot
    find "$1"/usr/share/ca-certificates -name '*.crt' -exec cat {} + >"$1"/etc/ssl/certs/ca-certificates.crt
    printf '%s\n' 'root:x:0:0:root:/root:/sbin/nologin' 'nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin' \
        'nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin' >"$1"/etc/passwd
    printf '%s\n' 'root:x:0:' 'nobody:x:65534:' 'nonroot:x:65532:' >"$1"/etc/group
}

base_images() {
    if ! have docker.io/library/debian:bookworm-slim; then
        log "stand-in debian:bookworm-slim (mmdebstrap)"
        commit_rootfs docker.io/library/debian:bookworm-slim fill_slim --cmd '["bash"]' \
            --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
    fi
    if ! have gcr.io/distroless/cc-debian12:latest; then
        log "stand-in gcr.io/distroless/cc-debian12 (Debian packages, unpacked)"
        commit_rootfs gcr.io/distroless/cc-debian12:latest fill_distroless \
            --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
            --env SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt --user 0 --workingdir /
    fi
    if ! have gcr.io/distroless/cc-debian12:nonroot; then
        local ctr
        ctr=$(bh from --pull-never gcr.io/distroless/cc-debian12:latest)
        bh config --user 65532 --workingdir /home/nonroot "$ctr"
        bh commit --quiet "$ctr" gcr.io/distroless/cc-debian12:nonroot >/dev/null
        bh rm "$ctr" >/dev/null
    fi
    if ! have docker.io/library/rust:1.89-bookworm; then
        log "stand-in rust:1.89-bookworm (mmdebstrap and this machine's toolchain, $(rustc --version))"
        commit_rootfs docker.io/library/rust:1.89-bookworm fill_rust --cmd '["bash"]' \
            --env RUSTUP_HOME=/usr/local/rustup --env CARGO_HOME=/usr/local/cargo \
            --env PATH=/usr/local/cargo/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
    fi
}

# The sandbox ("pause") image every pod starts with, from the Kubernetes
# source tree build-k8s.sh unpacked.
pause_image() {
    have kube-combo/pause:3.4 && return 0
    local src=$cache/k8s/src/tree/build/pause/linux/pause.c work ctr
    [[ -f $src ]] || "$here/build-k8s.sh" >/dev/null
    work=$(mktemp -d)
    gcc -Os -Wall -Werror -static -DVERSION=v3.4-kube-combo -o "$work/pause" "$src"
    ctr=$(bh from scratch)
    bh copy "$ctr" "$work/pause" /pause >/dev/null
    bh config --entrypoint '["/pause"]' --user 65535:65535 "$ctr"
    bh commit --quiet "$ctr" kube-combo/pause:3.4 >/dev/null
    bh rm "$ctr" >/dev/null
    rm -rf "$work"
}

build() {
    ensure_packages
    mkdir -p "$store"
    base_images
    local i
    for i in "${built[@]}"; do
        log "kube-combo/$i:$tag (deploy/docker/Dockerfile.$i, profile $profile${KUBE_COMBO_VERSION:+, version $KUBE_COMBO_VERSION})"
        bh bud --quiet --isolation chroot --pull-never --build-arg "PROFILE=$profile" \
            --build-arg "KUBE_COMBO_VERSION=${KUBE_COMBO_VERSION:-}" \
            -f "$repo/deploy/docker/Dockerfile.$i" -t "kube-combo/$i:$tag" "$repo" >/dev/null
    done
    # vfs keeps every layer whole: drop the replaced images and build leftovers.
    # (No --layers for the same reason: the compile is incremental through
    # the cache mounts, not through layers.)
    bh rm --all >/dev/null 2>&1 || true
    bh rmi --prune >/dev/null 2>&1 || true
    log "built"
}

push() { # registry
    local reg=$1 i list=("${images[@]/%/:$tag}" pause:3.4)
    if [[ ${KUBE_COMBO_HARNESS_ONLY:-} == 1 ]]; then
        # Working on the harness itself: the sandbox image only.
        ensure_packages
        mkdir -p "$store"
        pause_image
        list=(pause:3.4)
    else
        build
        # The test cluster's sandbox image, not a release artifact: only a
        # push to a cluster's registry builds it (from the Kubernetes tree).
        pause_image
    fi
    for i in "${list[@]}"; do
        bh push --quiet --tls-verify=false "kube-combo/$i" "docker://$reg/kube-combo/$i" >/dev/null
    done
    log "pushed to $reg"
}

# Pushes built images as a release (deploy/release.sh): each
# kube-combo/NAME:dev, labelled with the version, as REGISTRY/kube-combo/NAME:VERSION,
# its digest (sha256:...) written to DIR/NAME.digest.
publish() { # version registry tls-verify dir name...
    local version=$1 reg=$2 tls=$3 out=$4 i ctr
    shift 4
    for i in "$@"; do
        ctr=$(bh from --pull-never "kube-combo/$i:$tag")
        bh config --label "org.opencontainers.image.version=$version" \
            --label "org.opencontainers.image.title=kube-combo-$i" "$ctr"
        bh commit --quiet --format oci "$ctr" "kube-combo/$i:$version" >/dev/null
        bh rm "$ctr" >/dev/null
        bh push --quiet --tls-verify="$tls" --digestfile "$out/$i.digest" \
            "kube-combo/$i:$version" "docker://$reg/kube-combo/$i:$version" >/dev/null
        bh rmi "kube-combo/$i:$version" >/dev/null
        log "pushed $reg/kube-combo/$i:$version@$(cat "$out/$i.digest")"
    done
}

# The kubectl plugin shipped in the operator image, for this machine.
plugin() { # dest-dir
    local ctr mnt
    mkdir -p "$1"
    ctr=$(bh from --pull-never "kube-combo/operator:$tag")
    mnt=$(bh mount "$ctr")
    cp "$mnt/usr/local/bin/kubectl-combo" "$1/kubectl-combo"
    bh umount "$ctr" >/dev/null
    bh rm "$ctr" >/dev/null
}

case ${1:-} in
build) build ;;
push) push "${2:?usage: images.sh push REGISTRY}" ;;
plugin) plugin "${2:?usage: images.sh plugin DIR}" ;;
publish) (($# >= 6)) || die "usage: images.sh publish VERSION REGISTRY TLS-VERIFY DIR NAME..."; publish "${@:2}" ;;
*) die "usage: images.sh build | push REGISTRY | plugin DIR | publish VERSION REGISTRY TLS-VERIFY DIR NAME..." ;;
esac
