# syntax=docker/dockerfile:1
# The Chio Arena image, compiled inside Docker: the path for machines that
# can pull base images (`docker compose up --build`, CI with a registry).
# Stage `build` compiles the release `chio` binary from this repository with
# the official Rust image; the final stage holds that binary, the reference
# scenarios and the compose topology on a slim Debian matching the build
# stage's C library, and runs as an unprivileged user. Machines that pull
# nothing use compose/build.sh instead (host build, FROM scratch image);
# both produce the image `chio-arena:local` that compose.yaml runs. See
# docs/deploy.md.

FROM rust:1-bookworm AS build
WORKDIR /src
# Dependencies are fetched with the lock file as committed.
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked -p chio-controller --bin chio \
    && install -D -m 0755 target/release/chio /out/chio

FROM debian:bookworm-slim
RUN useradd --system --uid 10001 --home-dir /state --shell /usr/sbin/nologin chio \
    && mkdir -p /state /arena \
    && chown chio /state
COPY --from=build /out/chio /usr/local/bin/chio
COPY scenarios /arena/scenarios
COPY compose/topology.toml /arena/topology.toml
ENV TMPDIR=/tmp
USER chio
ENTRYPOINT ["/usr/local/bin/chio"]
