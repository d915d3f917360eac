#!/bin/sh
# Build stage of every Dockerfile here: compiles all three images' binaries
# in one cargo run and copies them to OUT. With the Dockerfiles' shared cache
# mounts (cargo registry, target directory) the first image's build compiles
# the workspace once and the other two find it done; after a code change only
# what the change touches is recompiled.
#   build.sh PROFILE OUT     PROFILE: a cargo profile (release, dev, ...)
set -eu
profile=$1 out=$2
case $profile in dev | test) dir=debug ;; *) dir=$profile ;; esac
cargo build --locked --profile "$profile" -p combo-operator -p combo-runner -p combo-pinger
mkdir -p "$out"
for b in combo-operator kubectl-combo combo-runner combo-pinger; do
    cp "target/$dir/$b" "$out/$b"
done
