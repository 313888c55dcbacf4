# Build: bundle edgectl and its dependencies with esbuild into a few files (the emulator's and
# the local control plane's code in chunks loaded only when used). Run: those files on the slim
# Node image, no node_modules, as a non-root user; nothing is written at run time, so the root
# filesystem can be read-only.
FROM node:24-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund --loglevel=error
COPY .nvmrc ./
COPY scripts/bundle.ts ./scripts/
COPY src ./src
RUN node scripts/bundle.ts /app/bundle

FROM node:24-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /app/bundle ./
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["node", "/app/edgectl.js"]
CMD ["operator"]
