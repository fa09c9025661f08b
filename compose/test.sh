#!/usr/bin/env bash
# The compose acceptance test (the offline path CI runs): builds the image
# on the host (compose/build.sh, no registry), runs `docker compose up
# --no-build` (or `docker-compose`) until the controller exits, and checks
# its exit status and the output of the triangular-delegation run.
set -euo pipefail
cd "$(dirname "$0")/.."

if docker compose version >/dev/null 2>&1; then
    compose=(docker compose)
else
    compose=(docker-compose)
fi

compose/build.sh
log="$(mktemp)"
trap '"${compose[@]}" down --volumes --remove-orphans >/dev/null 2>&1 || true; rm -f "$log"' EXIT

status=0
"${compose[@]}" up --no-build --exit-code-from controller --abort-on-container-exit 2>&1 | tee "$log" || status=$?

if [ "$status" -ne 0 ]; then
    echo "compose test: the controller exited with status $status" >&2
    exit 1
fi
for expected in \
    "result: passed (6 calls, 6 passed, 0 failed; 4 delegate, revoke or hand-over steps, 4 as expected)" \
    "carol-reads-after-revocation" \
    "reason: delegation chain revoked at ancestor bob-files"; do
    if ! grep -qF "$expected" "$log"; then
        echo "compose test: the controller's output lacks: $expected" >&2
        exit 1
    fi
done
echo "compose test: passed"
