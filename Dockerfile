# syntax=docker/dockerfile:1
# Tollgate gateway image. Build: docker build -t tollgate .
# Run:   docker run -d -p 8080:8080 -v tollgate-data:/data \
#          -e TOLLGATE_UPSTREAM_URL=https://provider.example -e TOLLGATE_UPSTREAM_API_KEY=... tollgate
# Both stages use the same base image: the native SQLite module built in the first must
# match the Node ABI and glibc of the second.
ARG NODE_IMAGE=node:24-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
# Toolchain for better-sqlite3, in case no prebuilt binary matches this Node/platform.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
# Dependencies first (cached while only src/ changes). Install scripts run only for the one
# package that needs one, the native SQLite module.
RUN npm ci --ignore-scripts --no-audit --no-fund \
 && npm rebuild better-sqlite3 \
 && node -e "new (require('better-sqlite3'))(':memory:').close()"
COPY tsconfig.json ./
COPY src ./src
RUN npm run build && npm prune --omit=dev

FROM ${NODE_IMAGE}
ENV NODE_ENV=production \
    TOLLGATE_HOST=0.0.0.0 \
    TOLLGATE_PORT=8080 \
    TOLLGATE_DATA_DIR=/data
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY config ./config
# The image's `node` user (uid 1000) owns only the data directory.
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME /data
EXPOSE 8080
# Liveness only (/healthz); orchestrators should also probe /readyz before routing traffic.
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.TOLLGATE_PORT || 8080) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# SIGTERM drains in-flight requests for server.shutdownGraceMs (10 s): give `docker stop`
# more than that (--stop-timeout 20 or stop_grace_period: 20s).
STOPSIGNAL SIGTERM
# The young generation capped as in `npm start` (README "Memory"): ~16 MB less RSS under load.
ENTRYPOINT ["node", "--max-semi-space-size=8", "dist/cli.js"]
CMD ["serve"]
