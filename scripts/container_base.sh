#!/usr/bin/env bash
# Builds the base image every CareJury image starts from, out of Debian's own packages: no image
# registry is needed (none may be reachable), only a Debian mirror. mmdebstrap writes a minimal
# Debian root file system with Python 3.11, `docker import` turns it into an image.
#
# The base is pinned by its tag: every Dockerfile and the compose file name it, so nothing is
# ever pulled. The tag carries the Debian release and BASE_VERSION, which is bumped whenever the
# package list or the recipe below changes (so an old image is never taken for the new one).
# Set DEBIAN_MIRROR to a snapshot (http://snapshot.debian.org/archive/debian/<date>/) to build
# the very same packages later. An image with the tag already there is kept; pass --rebuild to
# make it again (for security updates).
#
#   bash scripts/container_base.sh [--rebuild]   # prints the image's tag
#
# Needs a running Docker daemon (DOCKER_HOST) and root (mmdebstrap; installed here if missing).
set -euo pipefail

SUITE="${DEBIAN_SUITE:-bookworm}"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
# What every image needs: Python and venv for the app, certificates for model providers'
# HTTPS, tini as process 1 (forwards signals, reaps children). Each image adds its own.
PACKAGES="python3,python3-venv,ca-certificates,tini"
BASE_VERSION=1  # bump when PACKAGES or the recipe below changes
TAG="carejury-base:${SUITE}-v${BASE_VERSION}"

if [ "${1:-}" != "--rebuild" ] && docker image inspect "$TAG" >/dev/null 2>&1; then
  echo "$TAG"
  exit 0
fi

if ! command -v mmdebstrap >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq mmdebstrap >&2
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Leave out manuals, documentation and translations: a server image never shows them, and they
# are a fifth of the file system. Copyright files stay (licences travel with the binaries).
mmdebstrap --variant=minbase --include="$PACKAGES" \
  --dpkgopt='path-exclude=/usr/share/man/*' \
  --dpkgopt='path-exclude=/usr/share/locale/*' \
  --dpkgopt='path-exclude=/usr/share/doc/*' \
  --dpkgopt='path-include=/usr/share/doc/*/copyright' \
  --customize-hook='rm -rf "$1"/var/cache/apt/* "$1"/var/lib/apt/lists/*' \
  "$SUITE" "$work/rootfs.tar" "$MIRROR" >&2

docker import \
  --change 'ENV LANG=C.UTF-8' \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'CMD ["/bin/bash"]' \
  --message "Debian $SUITE minbase + $PACKAGES from $MIRROR" \
  "$work/rootfs.tar" "$TAG" >&2
echo "$TAG"
