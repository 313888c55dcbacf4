# syntax=docker/dockerfile:1
# Build with dev dependencies, run with production dependencies only, as a non-root user.
# Works with a read-only root filesystem: nothing is written at run time.
FROM node:24-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build && npm prune --omit=dev

FROM node:24-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
COPY crds ./crds
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["node", "dist/cli/edgectl.js"]
CMD ["operator"]
