# Build: bundle edgectl and its dependencies with esbuild into a few files (the emulator's and
# the local control plane's code in chunks loaded only when used). Run: those files on the slim
# Node image, no node_modules, as a non-root user; nothing is written at run time, so the root
# filesystem can be read-only.
FROM node:24-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# npm ci's postinstall (brings its own Node only where the running one is too old: not here)
COPY scripts/ensure-node.mjs ./scripts/
RUN npm ci --no-audit --no-fund --loglevel=error
COPY .nvmrc ./
COPY scripts/bundle.ts ./scripts/
COPY src ./src
RUN node scripts/bundle.ts /app/bundle

FROM node:24-slim
# Memory (README, "Sizing the pod"; the benchmarks run with these): a 1 MiB young generation,
# since the operator's garbage is small and short-lived and larger semi-spaces stay resident
# after a burst of work; V8's heuristics for size over speed (the operator waits on the API,
# not on the CPU; a flag NODE_OPTIONS may not carry, hence in ENTRYPOINT); glibc returns
# freed memory instead of keeping it per thread arena. The chart adds --max-old-space-size
# from the pod's memory limit (and repeats NODE_OPTIONS' flags).
ENV NODE_ENV=production \
    NODE_OPTIONS=--max-semi-space-size=1 \
    MALLOC_ARENA_MAX=2 \
    MALLOC_TRIM_THRESHOLD_=65536 \
    MALLOC_MMAP_THRESHOLD_=65536
WORKDIR /app
COPY --from=build /app/bundle ./
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["node", "--optimize-for-size", "/app/edgectl.js"]
CMD ["operator"]
