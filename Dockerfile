# syntax=docker/dockerfile:1

# ---- build ----------------------------------------------------------------
FROM rust:1-bookworm AS builder
WORKDIR /src
COPY . .
# Cache mounts keep the crate registry and build artefacts between builds;
# the binary is copied out of the cached target dir in the same step.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked \
    && install -m 0755 target/release/gridgate /usr/local/bin/gridgate

# ---- runtime --------------------------------------------------------------
FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/*
RUN groupadd --system --gid 10001 gridgate \
    && useradd --system --uid 10001 --gid gridgate --home-dir /data --no-create-home \
       --shell /usr/sbin/nologin gridgate \
    && mkdir -p /data \
    && chown gridgate:gridgate /data
COPY --from=builder /usr/local/bin/gridgate /usr/local/bin/gridgate

ENV GRIDGATE_DATA_DIR=/data
# Declared after the chown so a fresh named volume starts out owned by gridgate.
VOLUME ["/data"]
WORKDIR /data
USER 10001:10001
EXPOSE 8080
ENTRYPOINT ["gridgate"]
# Listening beyond loopback needs authentication: run with GRIDGATE_AUTH=jwt and a key
# (GRIDGATE_JWT_SECRET, _PUBLIC_KEY or _JWKS), or GRIDGATE_ALLOW_UNAUTHENTICATED=true for a
# trusted local network; otherwise the server refuses to start and says so.
CMD ["serve", "--listen", "0.0.0.0:8080"]
