# leasehold container image.
#
#   docker build -t registry.example.com/leasehold:0.5.0 \
#     --build-arg REVISION="$(git rev-parse HEAD)" --build-arg CREATED="$(date -u +%FT%TZ)" .
#
# No `# syntax=` line: BuildKit would pull that frontend image, and machines without a
# registry (this project's CI) could not build; nothing here needs more than the built-in one.
# Such a machine makes the two base images from Debian's packages first:
# scripts/make-base-images.sh. Both stages reach the Debian mirror over the default build
# network (apt-get in RUN).
#
# Build stage: the build packages of scripts/install-deps.sh (--build-only: not the test
# toolchain) and the same CMake preset as CI, without the tests (LEASEHOLD_TESTS=OFF). Only the
# build files and sidecar/ are copied, so that a change to the tests, docs or charts reuses the
# cached build layer (tests/deploy's deploy.image builds this image in the gate).
# Runtime stage: debian:bookworm-slim plus exactly the packages that hold the shared libraries
# the binary links (`ldd`); tests/deploy/test_dockerfile.py fails when this list and `ldd` of
# the release binary disagree in either direction.

FROM debian:bookworm AS build
WORKDIR /src
# Dependencies first, so that a source change does not reinstall them.
COPY scripts/install-deps.sh scripts/install-deps.sh
RUN scripts/install-deps.sh --build-only && rm -rf /var/lib/apt/lists/*
COPY CMakeLists.txt CMakePresets.json project.conf ./
COPY sidecar sidecar
RUN cmake --preset release -DLEASEHOLD_TESTS=OFF \
 && cmake --build --preset release --target leasehold \
 && install -D -s -m 0755 build/release/sidecar/leasehold /out/leasehold \
 && ldd /out/leasehold \
 && /out/leasehold --version

FROM debian:bookworm-slim
# Runtime libraries of the binary: only glibc (libc6: libc, libm, the loader). OpenSSL,
# yaml-cpp and libstdc++ are linked statically (LEASEHOLD_STATIC_DEPS, for a smaller RSS), and
# libc6 is already in the base image; listing it keeps this list equal to what `ldd` shows.
# No ca-certificates: in a cluster the sidecar trusts the ServiceAccount's ca.crt, and a
# kubeconfig must name its CA.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libc6 \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb /var/log/apt /var/log/dpkg.log
COPY --from=build /out/leasehold /usr/local/bin/leasehold
# A numeric user (65532, "nonroot" by convention), so that Kubernetes can verify runAsNonRoot.
USER 65532:65532
# Probes and metrics (/healthz, /readyz, /metrics). /leader listens on 127.0.0.1:4040 only.
EXPOSE 9102
ENTRYPOINT ["/usr/local/bin/leasehold"]
# The labels last: a new CREATED or REVISION (every build of CI's) then re-runs no RUN above
# (a RUN after an ARG whose value changed misses the cache), so the runtime stage's apt-get
# layer is reused.
ARG VERSION=0.5.0
ARG REVISION=unknown
ARG CREATED=unknown
LABEL org.opencontainers.image.title="leasehold" \
      org.opencontainers.image.description="Kubernetes leader election as a sidecar: Lease-based, fencing tokens, /leader on localhost" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.source="https://github.com/leasehold/leasehold" \
      org.opencontainers.image.documentation="https://github.com/leasehold/leasehold/blob/main/docs/operations.md" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.base.name="docker.io/library/debian:bookworm-slim"
