#!/usr/bin/env bash
# Checks a krew Plugin manifest and its archive as krew and its index
# validate them (docs/install.md, "Release artifacts"):
#
#   deploy/krew-check.sh MANIFEST ARCHIVE [VERSION]
#
# apiVersion krew.googlecontainertools.github.com/v1alpha2 and kind Plugin;
# metadata.name a safe plugin name (lower-case letters, digits, dashes) and
# the manifest's file name (combo.yaml for combo); spec.version a SemVer
# with its v (vVERSION when VERSION is given); homepage (a URL),
# shortDescription, description and caveats set; one platform or
# more, each with a selector, a uri, a sha256 of 64 lower-case hex digits
# and a bin (a relative path inside the archive). The platform whose uri
# names ARCHIVE has ARCHIVE's sha256, and ARCHIVE holds its bin, executable,
# and a LICENSE file. Prints one line per problem and exits 1 on any.
# Needs yq (Debian's package yq, jq for YAML).
set -euo pipefail
manifest=${1:?usage: krew-check.sh MANIFEST ARCHIVE [VERSION]}
archive=${2:?usage: krew-check.sh MANIFEST ARCHIVE [VERSION]}
version=${3:-}
problems=()
bad() { problems+=("$*"); }
q() { yq -r "$1" "$manifest"; }

[[ $(q .apiVersion) == krew.googlecontainertools.github.com/v1alpha2 ]] || bad "apiVersion is $(q .apiVersion)"
[[ $(q .kind) == Plugin ]] || bad "kind is $(q .kind), not Plugin"
name=$(q .metadata.name)
[[ $name =~ ^[a-z0-9]+(-[a-z0-9]+)*$ ]] || bad "metadata.name '$name' is not a plugin name"
[[ $(basename "$manifest") == "$name.yaml" ]] || bad "the manifest of '$name' is $(basename "$manifest"), not $name.yaml"
v=$(q .spec.version)
[[ $v =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$ ]] || bad "spec.version '$v' is not v and a SemVer"
[[ -z $version || $v == "v$version" ]] || bad "spec.version is $v, not v$version"
for f in homepage shortDescription description caveats; do
    [[ $(q ".spec.$f // \"\" | length") -gt 0 ]] || bad "spec.$f is empty"
done
[[ $(q '.spec.homepage // ""') =~ ^https?:// ]] || bad "spec.homepage is not a URL"
n=$(q '.spec.platforms // [] | length')
((n > 0)) || bad "spec.platforms is empty"
sha=$(sha256sum "$archive" | cut -d' ' -f1)
ours=''
for ((i = 0; i < n; i++)); do
    p=".spec.platforms[$i]"
    [[ $(q "$p.selector | type") == object ]] || bad "platform $i has no selector"
    uri=$(q "$p.uri // \"\"")
    [[ -n $uri ]] || bad "platform $i has no uri"
    [[ $(q "$p.sha256 // \"\"") =~ ^[0-9a-f]{64}$ ]] || bad "platform $i: sha256 is not 64 lower-case hex digits"
    bin=$(q "$p.bin // \"\"")
    [[ -n $bin && $bin != /* && $bin != *..* ]] || bad "platform $i: bin '$bin' is not a relative path"
    if [[ $uri == */"$(basename "$archive")" ]]; then
        ours=$i
        [[ $(q "$p.sha256") == "$sha" ]] || bad "platform $i: sha256 is not that of $(basename "$archive")"
        x=$(mktemp -d)
        tar -C "$x" -xzf "$archive"
        [[ -f $x/$bin && -x $x/$bin ]] || bad "platform $i: $(basename "$archive") holds no executable $bin"
        [[ -f $x/LICENSE ]] || bad "$(basename "$archive") holds no LICENSE"
        rm -rf "$x"
    fi
done
[[ -n $ours ]] || bad "no platform's uri names $(basename "$archive")"
if ((${#problems[@]})); then
    for p in "${problems[@]}"; do echo "krew-check.sh: $manifest: $p" >&2; done
    exit 1
fi
echo "krew-check.sh: $manifest: $name $v, $n platform(s), ok"
