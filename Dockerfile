# Tower's image for people who build with Docker and have the network: the same image
# `cargo xtask image` writes with umoci (docs/operating.md) — a static musl `tower` with the
# frontend compiled in, on an empty base, run as 65532. `docker build -t tower .`
#
# Not built by CI (no container engine runs there); `tests/it/image.rs` checks the umoci one.

FROM rust:1.95-bookworm AS build
RUN apt-get update \
    && apt-get install -y --no-install-recommends musl-tools nodejs npm ca-certificates \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# Installs wasm-bindgen and wasm-opt as `cargo xtask` pins them, builds dist/ (split per tab)..
RUN cargo xtask frontend
RUN rustup target add x86_64-unknown-linux-musl \
    && CC_x86_64_unknown_linux_musl=musl-gcc cargo build --locked --profile image \
        --target x86_64-unknown-linux-musl --package tower-backend --bin tower \
        --features embed-dist
RUN mkdir -p /rootfs/etc/ssl/certs /rootfs/tmp /rootfs/var/lib/tower /rootfs/usr/local/bin \
    && cp target/x86_64-unknown-linux-musl/image/tower /rootfs/usr/local/bin/tower \
    && cp /etc/ssl/certs/ca-certificates.crt /rootfs/etc/ssl/certs/ \
    && printf 'root:x:0:0:root:/root:/sbin/nologin\ntower:x:65532:65532:tower:/var/lib/tower:/sbin/nologin\n' > /rootfs/etc/passwd \
    && printf 'root:x:0:\ntower:x:65532:\n' > /rootfs/etc/group \
    && chmod 1777 /rootfs/tmp && chown 65532:65532 /rootfs/var/lib/tower

FROM scratch
COPY --from=build /rootfs/ /
USER 65532:65532
WORKDIR /var/lib/tower
ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/tower"]
CMD ["serve", "--config", "/etc/tower/tower.yaml"]
