#!/bin/sh
# Build stage of every Dockerfile here: compiles all three images' binaries
# (the operator image also carries the kubectl plugin) in one cargo run and
# copies them to OUT. With the Dockerfiles' shared cache mounts (cargo
# registry, target directory) the first image's build compiles the workspace
# once and the other two find it done; after a code change only what the
# change touches is recompiled.
#   build.sh PROFILE OUT     PROFILE: a cargo profile (release, dev, ...)
set -eu
profile=$1 out=$2
case $profile in dev | test) dir=debug ;; *) dir=$profile ;; esac
# Cargo rebuilds what is newer than its last build, by modification time.
# The target directory is shared by builds from any checkout, and a
# checkout's files may be older than the last build made from another one:
# when the sources' content differs from the last build's, they are made
# newer so that the workspace's crates are compiled again.
stamp=target/.sources-$profile
sources=$(find Cargo.toml Cargo.lock api operator plugin pinger runner -type f \
    \( -name '*.rs' -o -name '*.toml' -o -name '*.json' -o -name '*.yaml' \) |
    LC_ALL=C sort | xargs sha256sum | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$sources" ]; then
    find api operator plugin pinger runner -type f -name '*.rs' -exec touch {} +
fi
cargo build --locked --profile "$profile" -p combo-operator -p kubectl-combo -p combo-runner -p combo-pinger
echo "$sources" > "$stamp"
mkdir -p "$out"
for b in combo-operator kubectl-combo combo-runner combo-pinger; do
    cp "target/$dir/$b" "$out/$b"
done
