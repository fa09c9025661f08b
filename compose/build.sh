#!/usr/bin/env bash
# The offline image build: what compose.yaml needs without pulling any
# image. Builds the release `chio` binary on the host, a root filesystem
# holding it, the shared libraries `ldd` lists for it, the reference
# scenarios and the compose topology, and turns it into the `FROM scratch`
# image `chio-arena:local` (compose/Dockerfile). It also makes the token
# secrets (compose/tokens.sh). Where base images can be pulled, the
# multi-stage Dockerfile at the repository root builds the same image
# inside Docker instead (docs/deploy.md).
# Usage: compose/build.sh   (then: docker compose up --no-build --exit-code-from controller)
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

compose/tokens.sh

echo "== docker build -t chio-arena:local (FROM scratch)"
docker build -t chio-arena:local "$out/context"
