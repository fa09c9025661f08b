#!/usr/bin/env bash
# Builds what compose.yaml needs without pulling any image: the release
# `chio` binary built on the host, a root filesystem holding it, the shared
# libraries `ldd` lists for it and the reference scenarios, and generated
# token files (kept out of the image and mounted read-only at run time).
# Then `docker compose build` turns the root filesystem into a FROM scratch
# image. Usage: compose/build.sh   (then: docker compose up --exit-code-from controller)
set -euo pipefail
cd "$(dirname "$0")/.."

target_dir="${CARGO_TARGET_DIR:-target}"
out="target/compose"
rootfs="$out/context/rootfs"

echo "== cargo build --release -p chio-controller --bin chio"
cargo build --release -p chio-controller --bin chio
binary="$target_dir/release/chio"

rm -rf "$out/context"
mkdir -p "$rootfs/usr/local/bin" "$rootfs/tmp" "$rootfs/state" "$rootfs/arena"
cp "$binary" "$rootfs/usr/local/bin/chio"

# The dynamic loader and every library the binary links, at their own paths.
ldd "$binary" | awk '/=> \// { print $3 } /^\t\// { print $1 }' | sort -u | while read -r lib; do
    mkdir -p "$rootfs$(dirname "$lib")"
    cp -L "$lib" "$rootfs$lib"
done

cp -R scenarios "$rootfs/arena/scenarios"
cp compose/topology.toml "$rootfs/arena/topology.toml"
cp compose/Dockerfile "$out/context/Dockerfile"

# Tokens: generated once, reused by later builds, never baked into the image.
mkdir -p "$out/secrets"
for name in cluster trust; do
    if [ ! -s "$out/secrets/$name.token" ]; then
        od -An -N24 -tx1 /dev/urandom | tr -d ' \n' > "$out/secrets/$name.token"
    fi
done
chmod 0644 "$out/secrets/"*.token

echo "== docker compose build"
if docker compose version >/dev/null 2>&1; then
    docker compose build
else
    docker-compose build
fi
