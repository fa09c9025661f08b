#!/usr/bin/env bash
# Makes the two tokens compose.yaml mounts as secrets (the cluster token and
# trust-control's bearer token) under target/compose/secrets, once: existing
# tokens are kept, so a running arena and a rebuilt one agree. Tokens are
# never part of an image or of the repository.
# Usage: compose/tokens.sh
set -euo pipefail
cd "$(dirname "$0")/.."

secrets="target/compose/secrets"
mkdir -p "$secrets"
for name in cluster trust; do
    if [ ! -s "$secrets/$name.token" ]; then
        od -An -N24 -tx1 /dev/urandom | tr -d ' \n' > "$secrets/$name.token"
    fi
done
# Readable by the image's unprivileged user when compose bind-mounts them.
chmod 0644 "$secrets/"*.token
