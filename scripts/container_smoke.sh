#!/usr/bin/env bash
# The container smoke test: builds the images, starts the production stack of
# deploy/compose.yaml (PostgreSQL, Redis, set-up, site, workers), checks the deployment check
# is clean, logs in, samples a small case set, launches an offline run and waits until the
# workers finish it (scripts/container_smoke_walk.py); then removes the stack and its volumes
# and stops the Docker daemon it started. Prints how long each step took.
#
#   bash scripts/container_smoke.sh     # as root; CONTAINER_SMOKE=1 pytest runs it too
#
# Installs what it needs from Debian (docker.io, mmdebstrap, docker-compose) and starts its own
# dockerd (there is no systemd here) with its socket, data and state in CONTAINER_SMOKE_DIR.
# The daemon's data is kept there between runs, so a second run reuses the base image and the
# unchanged layers (a rebuild); delete the folder for a first build from nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

STATE="${CONTAINER_SMOKE_DIR:-/var/tmp/carejury-container-smoke}"
PORT="${CONTAINER_SMOKE_PORT:-18000}"
ADMIN=smoke-admin
PROJECT=carejury-smoke
mkdir -p "$STATE"
chmod 700 "$STATE"
# One smoke test at a time per folder: a second would stop the first one's daemon.
exec 9>"$STATE/lock"
flock --nonblock 9 || { echo "another smoke test is running in $STATE" >&2; exit 1; }

timings=()
step_started=$SECONDS
step() { # step NAME: closes the step before it, with its duration
  if [ -n "${step_name:-}" ]; then timings+=("$(printf '%-46s %4d s' "$step_name" $((SECONDS - step_started)))"); fi
  step_name="${1:-}"
  step_started=$SECONDS
  [ -n "$step_name" ] && echo "=== $step_name ==="
  return 0
}

step "install docker.io, mmdebstrap, docker-compose"
export DEBIAN_FRONTEND=noninteractive
missing=()
[ -x /usr/sbin/dockerd ] || missing+=(docker.io)
command -v mmdebstrap >/dev/null || missing+=(mmdebstrap)
command -v docker-compose >/dev/null || missing+=(docker-compose)
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}" >/dev/null
fi

step "start dockerd"
export DOCKER_HOST="unix://$STATE/docker.sock"
# Debian's client, whatever else is first on the PATH.
docker() { /usr/bin/docker "$@"; }
pidfile="$STATE/dockerd.pid"
# A daemon an interrupted smoke test left running (the lock above says none is running now).
earlier=$(cat "$pidfile" 2>/dev/null || true)
if [ -n "$earlier" ] && kill -0 "$earlier" 2>/dev/null; then
  echo "a dockerd from an earlier smoke test still runs (pid $earlier); stopping it"
  kill "$earlier"
  while kill -0 "$earlier" 2>/dev/null; do sleep 0.5; done
fi
# No firewall rules of its own and no default bridge: the compose project's network is enough,
# and nothing on the host's network changes beyond it.
/usr/sbin/dockerd -H "$DOCKER_HOST" --data-root "$STATE/data" --exec-root "$STATE/exec" \
  --pidfile "$pidfile" --iptables=false --bridge=none >"$STATE/dockerd.log" 2>&1 &
dockerd_pid=$!

compose() {
  docker-compose --project-name "$PROJECT" --file deploy/compose.yaml \
    --env-file "$STATE/smoke.env" "$@"
}
finish() {
  status=$?
  if [ $status -ne 0 ] && [ -S "$STATE/docker.sock" ] && [ -f "$STATE/smoke.env" ]; then
    echo "=== the stack's logs (the smoke test failed) ==="
    compose ps || true
    compose logs --no-color --tail 60 || true
  fi
  if [ -S "$STATE/docker.sock" ] && [ -f "$STATE/smoke.env" ]; then
    compose down --volumes --remove-orphans >/dev/null 2>&1 || true
  fi
  rm -f deploy/build-ca/ca.crt
  kill "$dockerd_pid" 2>/dev/null || true
  wait "$dockerd_pid" 2>/dev/null || true
  # The daemon leaves its network namespace's mount behind; nothing else holds it.
  umount "$STATE/exec/netns/default" 2>/dev/null || true
  exit $status
}
trap finish EXIT
for _ in $(seq 1 120); do docker info >/dev/null 2>&1 && break; sleep 0.5; done
docker info >/dev/null || { cat "$STATE/dockerd.log"; exit 1; }

step "remove what an interrupted smoke test left"
# A smoke test killed before its clean-up (its session ended, its machine stopped) leaves its
# containers and volumes in the daemon's data. The PostgreSQL volume keeps the password of that
# run, so this run's fresh password would be refused: remove them, found by the project's label.
containers=$(docker container ls --quiet --all --filter label=com.docker.compose.project=$PROJECT)
[ -z "$containers" ] || docker container rm --force --volumes $containers >/dev/null
volumes=$(docker volume ls --quiet --filter label=com.docker.compose.project=$PROJECT)
[ -z "$volumes" ] || docker volume rm --force $volumes >/dev/null
networks=$(docker network ls --quiet --filter label=com.docker.compose.project=$PROJECT)
[ -z "$networks" ] || docker network rm $networks >/dev/null
echo "removed: $(echo $containers | wc -w) containers, $(echo $volumes | wc -w) volumes, $(echo $networks | wc -w) networks"

step "base image from Debian's packages"
base_image=$(bash scripts/container_base.sh)
echo "base image: $base_image"

# Secrets of this test only, made fresh each time, readable by root only.
password=$(python3 -c 'import secrets; print(secrets.token_urlsafe(18))')
umask 077
cat >"$STATE/smoke.env" <<EOF
SECRET_KEY=$(python3 -c 'import secrets; print(secrets.token_urlsafe(50))')
POSTGRES_PASSWORD=$(python3 -c 'import secrets; print(secrets.token_hex(16))')
REDIS_PASSWORD=$(python3 -c 'import secrets; print(secrets.token_hex(16))')
ALLOWED_HOSTS=127.0.0.1
CSRF_TRUSTED_ORIGINS=https://127.0.0.1:$PORT
SITE_URL=https://127.0.0.1:$PORT
CAREJURY_PORT=$PORT
BASE_IMAGE=$base_image
WEB_PROCESSES=2
WORKER_CONCURRENCY=4
TWO_FACTOR_REQUIRED_ROLES=
EOF
# (The walk's admin has no authenticator app: two factors are tested in the browser tests,
# tests/browser/test_sso_browser.py; here they are switched off for the smoke's one login.)
umask 022

# Behind a TLS-inspecting proxy, pip in the build stage needs its CA (deploy/build-ca/README.md).
ca_bundle="${PIP_CERT:-${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}}"
if [ -n "$ca_bundle" ] && [ -s "$ca_bundle" ]; then cp "$ca_bundle" deploy/build-ca/ca.crt; fi

step "compose file is valid"
compose config --quiet

step "build the images"
DOCKER_BUILDKIT=0 compose build

step "start the stack"
compose up -d
web=$(compose ps -q web)
deadline=$((SECONDS + 300))
until [ "$(docker inspect -f '{{.State.Health.Status}}' "$web")" = healthy ]; do
  if [ $SECONDS -gt $deadline ] || [ "$(docker inspect -f '{{.State.Running}}' "$web")" != true ]; then
    echo "the site did not become healthy within 300 s"
    exit 1
  fi
  sleep 2
done
compose ps

step "deployment check"
compose exec -T web python manage.py check --deploy --fail-level WARNING

step "log in, run a small offline benchmark"
compose exec -T -e DJANGO_SUPERUSER_PASSWORD="$password" web \
  python manage.py createsuperuser --noinput --username "$ADMIN" --email admin@example.org
python3 scripts/container_smoke_walk.py "http://127.0.0.1:$PORT" "$ADMIN" "$password"

step "stop the stack"
compose down --volumes --remove-orphans
step
echo "=== timings ==="
printf '%s\n' "${timings[@]}"
echo "container smoke test passed"
