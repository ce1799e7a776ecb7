# leasehold container image: FROM scratch, about 10 MB, no shell.
#
#   docker build -t registry.example.com/leasehold:0.5.0 \
#     --build-arg REVISION="$(git rev-parse HEAD)" --build-arg CREATED="$(date -u +%FT%TZ)" .
#
# or, with a binary built already (what deploy.image and the release do; the same rootfs and
# runtime stages below, with the binary and its status entries from the build context):
#
#   scripts/build-image.sh --binary build/release/sidecar/leasehold --tag leasehold:0.5.0
#
# No `# syntax=` line: BuildKit would pull that frontend image, and machines without a
# registry (this project's CI) could not build; nothing here needs more than the built-in one.
# Such a machine makes the two base images from Debian's packages first:
# scripts/make-base-images.sh. The build and rootfs stages reach the Debian mirror over the
# default build network (apt-get in RUN).
#
# build: the build packages of scripts/install-deps.sh (--build-only: not the test toolchain)
#   and the same CMake preset as CI, without the tests (LEASEHOLD_TESTS=OFF). Only the build
#   files and sidecar/ are copied, so that a change to the tests, docs or charts reuses the
#   cached build layer. Its output is /out: the stripped binary and status.d (below).
# rootfs: assembles the runtime image's whole file tree in /rootfs (list in README, "Container
#   image"). It runs on the build machine's architecture and executes nothing of TARGETARCH's:
#   glibc comes from `apt-get download libc6:TARGETARCH` + `dpkg-deb -x`, and the shared
#   objects to copy from `readelf` of the binary (NEEDED and the program interpreter: the list
#   `ldd` gives, which cannot run a foreign binary). tests/deploy/test_dockerfile.py fails when
#   that list and `ldd` of the release binary disagree in either direction.
# runtime: FROM scratch, COPY only (no RUN: nothing would execute under emulation when another
#   architecture is built), the labels.

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
# The dpkg status entries of the -dev packages linked into the binary, from this machine, the
# one that linked it (scripts/build-image.sh --write-status: the list is there).
COPY scripts/build-image.sh scripts/build-image.sh
RUN scripts/build-image.sh --write-status /out/status.d --arch "$(dpkg --print-architecture)"

FROM debian:bookworm-slim AS rootfs
ARG TARGETARCH=amd64
# glibc of the target architecture, unpacked and never run: its shared objects, its copyright
# file and its control paragraph. binutils for readelf, which reads any architecture's ELF.
RUN set -eu; \
    [ "$TARGETARCH" = "$(dpkg --print-architecture)" ] || dpkg --add-architecture "$TARGETARCH"; \
    apt-get update; \
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends binutils; \
    mkdir -p /libc6; chown _apt /libc6; cd /libc6; \
    apt-get download "libc6:$TARGETARCH"; \
    dpkg-deb -x libc6_*.deb root; \
    dpkg-deb -f libc6_*.deb >control; \
    rm -rf /var/lib/apt/lists/* libc6_*.deb
# The binary and the status entries of what it links statically. scripts/build-image.sh makes
# these two lines copy its build context instead (`COPY --from=build /out/X` -> `COPY X`).
COPY --from=build /out/leasehold /rootfs/usr/local/bin/leasehold
COPY --from=build /out/status.d /rootfs/var/lib/dpkg/status.d
# Each shared object at the path `ldd` gives: the interpreter at its PT_INTERP path, each other
# NEEDED library where libc6 ships it (/lib/<triplet>/, in the loader's default search path: the
# image has no ld.so.cache; a NEEDED loader is the interpreter, already loaded). Links are
# resolved inside the unpacked package (the loader's is absolute) and the files copied, so the
# image holds no symbolic links. A NEEDED library that libc6 does not ship fails the build: the
# image holds glibc only.
# The status entries make the image's contents visible to scanners and SBOM tools (syft, trivy
# read distroless' /var/lib/dpkg/status.d/<package>): libc6's is its control paragraph (the
# distroless format); OpenSSL, yaml-cpp, Boost and libstdc++ are linked statically, so no file of
# theirs is in the image and only their -dev packages' entries (`dpkg-query -s`) name their
# versions.
RUN set -eu; \
    bin=/rootfs/usr/local/bin/leasehold; \
    resolve() { \
      p="$1"; n=0; \
      while [ -L "/libc6/root$p" ]; do \
        t=$(readlink "/libc6/root$p"); \
        case "$t" in /*) p="$t" ;; *) p="$(dirname "$p")/$t" ;; esac; \
        n=$((n + 1)); [ "$n" -lt 16 ] || { echo "rootfs: link loop at $1" >&2; exit 1; }; \
      done; \
      [ -f "/libc6/root$p" ] || { echo "rootfs: $1 is not in libc6:$TARGETARCH" >&2; exit 1; }; \
      install -D -m 0755 "/libc6/root$p" "/rootfs$1"; \
      echo "rootfs: $1"; \
    }; \
    interp=$(readelf -l "$bin" | sed -n 's/.*Requesting program interpreter: \(.*\)]$/\1/p'); \
    [ -n "$interp" ] || { echo "rootfs: the binary names no program interpreter" >&2; exit 1; }; \
    resolve "$interp"; \
    for lib in $(readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p'); do \
      [ "$lib" != "$(basename "$interp")" ] || continue; \
      found=$(cd /libc6/root && find . \( -path './lib/*' -o -path './usr/lib/*' \) \
        -name "$lib" \( -type f -o -type l \) | sed 's|^\.||'); \
      [ "$(printf '%s\n' "$found" | grep -c .)" = 1 ] || { \
        echo "rootfs: $lib is not one file of libc6:$TARGETARCH (${found:-none})" >&2; exit 1; }; \
      resolve "$found"; \
    done; \
    install -D -m 0644 /libc6/root/usr/share/doc/libc6/copyright \
      /rootfs/usr/share/doc/libc6/copyright; \
    install -D -m 0644 /libc6/control /rootfs/var/lib/dpkg/status.d/libc6; \
    chmod 0644 /rootfs/var/lib/dpkg/status.d/*; \
    mkdir -p /rootfs/etc; \
    printf '%s\n' 'root:x:0:0:root:/root:/sbin/nologin' \
      'nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin' >/rootfs/etc/passwd; \
    printf '%s\n' 'root:x:0:' 'nonroot:x:65532:' >/rootfs/etc/group; \
    chmod 0644 /rootfs/etc/passwd /rootfs/etc/group; \
    chown -R 0:0 /rootfs; \
    find /rootfs -type d -exec chmod 0755 {} +

FROM scratch
# No CA certificates: in a cluster the sidecar trusts the ServiceAccount's ca.crt, and a
# kubeconfig must name its CA. No /tmp and no shell: nothing runs here but the binary (run
# mode's init container copies it with `leasehold copy-self`, not cp).
COPY --from=rootfs /rootfs/ /
# A numeric user (65532, "nonroot" by convention, in /etc/passwd), so that Kubernetes can verify
# runAsNonRoot.
USER 65532:65532
# Probes and metrics (/healthz, /readyz, /metrics). /leader listens on 127.0.0.1:4040 only.
EXPOSE 9102
ENTRYPOINT ["/usr/local/bin/leasehold"]
# The labels last, so that a new CREATED or REVISION rebuilds nothing above. VERSION equals
# project.conf's version= (checked by a test); scripts/build-image.sh passes it from there. No
# source/documentation label: project.conf's home is empty, and no other site is this project's.
ARG VERSION=0.5.0
ARG REVISION=unknown
ARG CREATED=unknown
LABEL org.opencontainers.image.title="leasehold" \
      org.opencontainers.image.description="Kubernetes leader election as a sidecar: Lease-based, fencing tokens, /leader on localhost" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.licenses="Apache-2.0"
