#!/usr/bin/env bash
# Builds a release of kube-combo and pushes its images (docs/install.md,
# "Release artifacts"):
#
#   deploy/release.sh [OPTION...] VERSION REGISTRY [OUT]
#
# builds the three images with buildah (tests/e2e/images.sh build, OCI format,
# the binaries printing VERSION), pushes them as REGISTRY/kube-combo/{operator,
# runner,pinger}:VERSION and writes OUT (default dist/VERSION):
#   kube-combo.yaml          the install manifest (config/default), images pinned by digest
#   kube-combo-VERSION.tgz   the Helm chart, as `helm package` makes it, values pinned by digest
#   kubectl-combo            the kubectl plugin (Linux x86-64, from the operator image)
#   kubectl_complete-combo   kubectl's completion of `kubectl combo` (1.26+), beside it on the PATH
#   kubectl-combo-linux-amd64.tar.gz, combo.yaml
#                            the plugin as krew installs it: the archive (the binary,
#                            kubectl_complete-combo and LICENSE) and krew's Plugin manifest with its sha256
#                            and URL (--url), checked by deploy/krew-check.sh
#   LICENSE                  the Apache License 2.0, also in the chart and the archive
#   samples/                 the example Debuggers and Pingers of config/samples
#   images.txt               NAME REGISTRY/kube-combo/NAME@sha256:... per image
#   SHA256SUMS               of all the above
# Options:
#   --insecure               the registry speaks plain HTTP (no TLS)
#   --keep NAMES --previous DIR
#                            take the images NAMES (comma-separated, e.g. runner,pinger)
#                            from the release in DIR, same digests, instead of building
#                            them: a release that changes the operator alone keeps the
#                            Debuggers' pods (their pod template does not change)
#   --prebuilt               push the images tests/e2e/images.sh built last, without a build
#   --url BASE               where the artifacts will be downloaded from, for the krew
#                            manifest's uri (default file://OUT, for `kubectl krew install
#                            --manifest=OUT/combo.yaml` on this machine)
# KUBE_COMBO_IMAGE_PROFILE (default release) is the cargo profile. Credentials
# for REGISTRY are buildah's (`buildah login`, with KUBE_COMBO_CACHE's storage).
# With Docker instead of buildah (the Dockerfiles' cache mounts need BuildKit):
#   docker buildx build --build-arg KUBE_COMBO_VERSION=VERSION \
#       -f deploy/docker/Dockerfile.runner -t REGISTRY/kube-combo/runner:VERSION --push .
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
images_sh=$repo/tests/e2e/images.sh
all=(operator runner pinger)

die() { echo "release.sh: $*" >&2; exit 2; }
usage() { die "usage: release.sh [--insecure] [--keep NAMES --previous DIR] [--prebuilt] [--url BASE] VERSION REGISTRY [OUT]"; }

tls=true keep='' previous='' prebuilt=0 url='' args=()
while (($#)); do
    case $1 in
    --insecure) tls=false; shift ;;
    --keep) keep=${2:?--keep needs NAMES}; shift 2 ;;
    --previous) previous=${2:?--previous needs DIR}; shift 2 ;;
    --prebuilt) prebuilt=1; shift ;;
    --url) url=${2:?--url needs BASE}; shift 2 ;;
    -*) usage ;;
    *) args+=("$1"); shift ;;
    esac
done
((${#args[@]} == 2 || ${#args[@]} == 3)) || usage
version=${args[0]} registry=${args[1]%/}
out=${args[2]:-$repo/dist/$version}
# Helm takes a chart version in SemVer 2 only.
[[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$ ]] ||
    die "VERSION '$version' is not a SemVer version (1.2.3, 1.2.3-rc.1)"
[[ -n $keep && -z $previous ]] && die "--keep needs --previous DIR"
kept=() built=()
for i in "${all[@]}"; do
    if [[ ,$keep, == *,$i,* ]]; then kept+=("$i"); else built+=("$i"); fi
done
for i in ${keep//,/ }; do [[ " ${all[*]} " == *" $i "* ]] || die "--keep: no image '$i' (${all[*]})"; done

if [[ -d $out && -n $(ls -A "$out") && ! -f $out/SHA256SUMS ]]; then
    die "$out is not empty and holds no release: give another OUT"
fi
rm -rf "$out"
mkdir -p "$out/samples"
out=$(cd "$out" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Images: built and pushed, or taken from the previous release.
if ((${#built[@]})); then
    if ((!prebuilt)); then
        KUBE_COMBO_VERSION=$version KUBE_COMBO_IMAGES="${built[*]}" "$images_sh" build
    fi
    "$images_sh" publish "$version" "$registry" "$tls" "$work" "${built[@]}"
fi
: >"$out/images.txt"
for i in "${all[@]}"; do
    if [[ " ${kept[*]} " == *" $i "* ]]; then
        ref=$(awk -v n="$i" '$1 == n {print $2}' "$previous/images.txt")
        [[ $ref == *@sha256:* ]] || die "no image '$i' in $previous/images.txt"
    else
        ref=$registry/kube-combo/$i@$(cat "$work/$i.digest")
    fi
    echo "$i $ref" >>"$out/images.txt"
done
image() { awk -v n="$1" '$1 == n {print $2}' "$out/images.txt"; }

# The install manifest: config/default with the images pinned (kustomize
# also rewrites the operator's COMBO_RUNNER_IMAGE and COMBO_PINGER_IMAGE).
overlay=$repo/target/release-overlay
rm -rf "$overlay" && mkdir -p "$overlay"
{
    echo "resources: [../../config/default]"
    echo "images:"
    for i in "${all[@]}"; do
        ref=$(image "$i")
        printf '  - name: kube-combo/%s\n    newName: %s\n    digest: %s\n' "$i" "${ref%@*}" "${ref#*@}"
    done
} >"$overlay/kustomization.yaml"
{
    echo "# kube-combo $version: kubectl apply -f kube-combo.yaml (docs/install.md)."
    kubectl kustomize "$overlay"
} >"$out/kube-combo.yaml"
rm -rf "$overlay"

# The chart, packaged as `helm package` does: kube-combo/ in a gzipped tar.
cp -r "$repo/deploy/helm/kube-combo" "$work/kube-combo"
sed -i -e "s/^version: .*/version: $version/" -e "s/^appVersion: .*/appVersion: \"$version\"/" \
    "$work/kube-combo/Chart.yaml"
# Each image's repository and digest (image.<name>.repository, .tag and
# .digest); the tag is the version, which the digest wins over.
for i in "${all[@]}"; do
    ref=$(image "$i")
    awk -v n="$i" -v repo="${ref%@*}" -v digest="${ref#*@}" -v tag="$version" '
        /^[^ #]/ { top = $1 }
        top == "image:" && /^  [a-z]+:/ { cur = $1 }
        top == "image:" && cur == n ":" && /^    repository:/ { $0 = "    repository: " repo }
        top == "image:" && cur == n ":" && /^    tag:/ { $0 = "    tag: \"" tag "\"" }
        top == "image:" && cur == n ":" && /^    digest:/ { $0 = "    digest: \"" digest "\"" }
        { print }' "$work/kube-combo/values.yaml" >"$work/values.yaml"
    mv "$work/values.yaml" "$work/kube-combo/values.yaml"
    grep -qF "digest: \"${ref#*@}\"" "$work/kube-combo/values.yaml" || die "values.yaml: no digest written for $i"
done
cp "$repo/LICENSE" "$work/kube-combo/LICENSE"
tar -C "$work" --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 \
    -czf "$out/kube-combo-$version.tgz" kube-combo

# The plugin of the operator image pushed (or of the release kept).
if [[ " ${kept[*]} " == *" operator "* ]]; then
    cp "$previous/kubectl-combo" "$out/kubectl-combo"
else
    "$images_sh" plugin "$out"
fi
cp "$repo"/config/samples/*.yaml "$out/samples/"

# The plugin for krew: an archive of the binary and krew's Plugin manifest.
krew_archive=kubectl-combo-linux-amd64.tar.gz
cp "$repo/LICENSE" "$out/LICENSE"
install -m 0755 "$repo/deploy/kubectl_complete-combo" "$out/kubectl_complete-combo"
tar -C "$out" --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -czf "$out/$krew_archive" \
    kubectl-combo kubectl_complete-combo LICENSE
url=${url:-file://$(cd "$out" && pwd)}
home=$(awk '$1 == "home:" {print $2}' "$repo/deploy/helm/kube-combo/Chart.yaml")
cat >"$out/combo.yaml" <<EOF
apiVersion: krew.googlecontainertools.github.com/v1alpha2
kind: Plugin
metadata:
  name: combo
spec:
  version: v$version
  homepage: $home
  shortDescription: Read kube-combo's node inspections and probes
  description: |
    kubectl combo reads what the kube-combo operator's Debuggers found on
    the cluster's nodes: the summary of an inspection run node by node
    (disk, network, memory and service checks), the error log of a node's
    scripts, the pingers' mesh of network paths between nodes with their
    loss and latency, and it asks a Debugger for a run now. It needs the
    kube-combo operator installed (its chart or kube-combo.yaml).
  caveats: |
    kubectl combo needs the kube-combo operator in the cluster, and these
    permissions: get, list and watch on debuggers, pingers and
    debuggerreports (kubecombo.io), patch on debuggers (a run now), get and
    list on pods, create on pods/exec (the errlog of a runner pod) and get
    on pods/proxy (the pingers' /recent for the mesh); errlog runs kubectl,
    which must be on the PATH.
  platforms:
    - selector:
        matchLabels:
          os: linux
          arch: amd64
      uri: ${url%/}/$krew_archive
      sha256: $(sha256sum "$out/$krew_archive" | cut -d' ' -f1)
      bin: kubectl-combo
EOF
"$repo/deploy/krew-check.sh" "$out/combo.yaml" "$out/$krew_archive" "$version" || die "combo.yaml: not a manifest krew takes"
(cd "$out" && sha256sum kube-combo.yaml "kube-combo-$version.tgz" kubectl-combo kubectl_complete-combo "$krew_archive" combo.yaml \
    LICENSE images.txt samples/*.yaml >SHA256SUMS)
echo "release $version in $out:"
sed 's/^/  /' "$out/images.txt"
