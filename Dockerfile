# Build: bundle edgectl and its dependencies with esbuild into a few files (the emulator's and
# the local control plane's code in chunks loaded only when used), and gather what the Node
# binary needs to run: the shared libraries it links (ldd), nothing else. Run: FROM scratch,
# those files only: Node, its libraries, CA certificates, the bundle, user 65532. No shell, no
# package manager, no node_modules code; nothing is written at run time, so the root filesystem
# can be read-only. What a scanner (Syft, Trivy, Grype) needs to name every component: the
# Debian packages of those libraries in dpkg's distroless layout (/var/lib/dpkg/status.d), the
# Debian release (/etc/os-release), the bundled npm packages' package.json files under
# /app/node_modules, and Node's own binary (scanners read its version from it).
FROM node:24-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# npm ci's postinstall (brings its own Node only where the running one is too old: not here)
COPY scripts/ensure-node.mjs ./scripts/
RUN npm ci --no-audit --no-fund --loglevel=error
COPY .nvmrc ./
COPY scripts/strip-elf.ts scripts/dpkg-status.ts ./scripts/
# /rootfs becomes the image's root:
# - node without its symbol table and debug sections (18 MiB a debugger alone reads);
# - the libraries ldd names, at the paths the loader looks them up by (libc's resolver reads
#   /etc/hosts and /etc/resolv.conf, which the runtime mounts; no NSS modules are needed);
# - CA certificates: the Mozilla set Node carries (the one Node trusts by default), at the path
#   Debian's ca-certificates uses, for tools and for --use-openssl-ca;
# - no time zone data: Node's ICU carries its own, and the operator logs UTC;
# - user and group 65532 (nonroot), so os.userInfo() and the home directory resolve;
# - for scanners: the libraries' Debian packages (status, the checksums of the files shipped,
#   copyright; scripts/dpkg-status.ts) and the Debian release they come from.
RUN set -eu; mkdir -p /rootfs/usr/local/bin /rootfs/etc/ssl/certs; \
    node scripts/strip-elf.ts "$(command -v node)" /rootfs/usr/local/bin/node; \
    libs=$(ldd "$(command -v node)" | grep -o '/[^ ]*'); \
    for lib in $libs; do \
      mkdir -p "/rootfs${lib%/*}"; cp -L "$lib" "/rootfs$lib"; \
    done; \
    node scripts/dpkg-status.ts /rootfs $libs; \
    cp -L /etc/os-release /rootfs/etc/os-release; \
    node -p "tls.rootCertificates.join('\n')" >/rootfs/etc/ssl/certs/ca-certificates.crt; \
    printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >/rootfs/etc/passwd; \
    printf 'root:x:0:\nnonroot:x:65532:\n' >/rootfs/etc/group; \
    /rootfs/usr/local/bin/node --version >/dev/null
COPY scripts/bundle.ts scripts/bundle-packages.ts ./scripts/
COPY src ./src
# the bundle, and beside it node_modules/**/package.json of the packages it holds (for scanners)
RUN EDGE_BUNDLE_METAFILE=/app/bundle-meta.json node scripts/bundle.ts /app/bundle && \
    node scripts/bundle-packages.ts /app/bundle-meta.json /app/bundle

FROM scratch
COPY --from=build /rootfs /
COPY --from=build /app/bundle /app
# Memory (README, "Sizing the pod"; the benchmarks run with these): a 1 MiB young generation,
# since the operator's garbage is small and short-lived and larger semi-spaces stay resident
# after a burst of work; V8's heuristics for size over speed (the operator waits on the API,
# not on the CPU; a flag NODE_OPTIONS may not carry, hence in ENTRYPOINT); glibc returns
# freed memory instead of keeping it per thread arena; Maglev the top compiler tier
# (--max-opt=2): TurboFan's code and the pages of the binary holding it stay untouched, 2.5 MiB
# less at 1,000 objects and no more CPU (docs/performance.md); WebAssembly compiled by Liftoff
# only (--liftoff-only): undici parses the API's HTTP/1.1 with llhttp, a WebAssembly module whose
# hot parser V8 would otherwise recompile with its optimizing compiler, 20 MiB of malloc for a
# moment that glibc keeps in part (6 MiB at 1,000 objects), for no measurable CPU. The chart adds
# --max-old-space-size from the pod's memory limit (and repeats NODE_OPTIONS' flags).
ENV NODE_ENV=production \
    NODE_OPTIONS=--max-semi-space-size=1 \
    MALLOC_ARENA_MAX=2 \
    MALLOC_TRIM_THRESHOLD_=65536 \
    MALLOC_MMAP_THRESHOLD_=65536
WORKDIR /app
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/node", "--optimize-for-size", "--max-opt=2", "--liftoff-only", "/app/edgectl.js"]
CMD ["operator"]
