#!/usr/bin/env bash
# Builds wick-sandbox-runtime, the sandbox image people can work in, from
# Debian packages with mmdebstrap and imports it into the local engine; no
# image registry is needed, only a Debian mirror. The sandbox service still
# places wick-daemon and wickfs into every container (a read-only bind
# mount), so neither is in the image.
#
# The image is tagged with a hash of this file (the recipe) and :latest. When
# the tag of the current recipe is on the engine the build is skipped, so the
# script is cheap to run again; -f builds anyway (for newer Debian updates).
#
# Extend it by adding Debian packages to PACKAGES (or build FROM the image,
# as deploy/images/acp-agents.sh does); docs/sandbox.md says more.
#
# Environment: WICK_DEBIAN_MIRROR (default http://deb.debian.org/debian),
# WICK_DEBIAN_SECURITY (default http://deb.debian.org/debian-security).
set -euo pipefail

NAME=wick-sandbox-runtime
SUITE=bookworm
# Everything comes from Debian: Node.js 18 and npm are bookworm's; numpy,
# pandas and matplotlib are Debian's builds, so no pip and no network at run
# time. procps gives ps and kill to the agent's commands. python3-munkres
# satisfies matplotlib's fonttools, which otherwise takes scipy and with it a
# C++ toolchain and Boost (400 MB more).
PACKAGES=(
  bash ca-certificates coreutils curl findutils git grep gzip less procps ripgrep sed tar unzip xz-utils
  python3 python3-numpy python3-pandas python3-matplotlib python3-munkres
  nodejs npm
)
USER_NAME=wick
USER_ID=1000

log() { printf 'runtime image: %s\n' "$*" >&2; }

force=0
[ "${1:-}" = "-f" ] && force=1

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
hash=$(sha256sum "$here/runtime.sh" | cut -c1-12)
tag="$NAME:$hash"

if [ "$force" -eq 0 ] && docker image inspect "$tag" >/dev/null 2>&1; then
  docker tag "$tag" "$NAME:latest"
  log "$tag is present (recipe unchanged); tagged $NAME:latest"
  exit 0
fi
if ! command -v mmdebstrap >/dev/null 2>&1; then
  log "mmdebstrap is missing (Debian: apt-get install mmdebstrap)"
  exit 1
fi

mirror=${WICK_DEBIAN_MIRROR:-http://deb.debian.org/debian}
security=${WICK_DEBIAN_SECURITY:-http://deb.debian.org/debian-security}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

start=$(date +%s)
log "building $tag from $SUITE at $mirror"
include=$(IFS=,; echo "${PACKAGES[*]}")
# minbase and no recommends keep it lean; dpkg drops documentation, manual
# pages and translations as it unpacks (copyright files stay), and skips the
# fsync after every file, which a throw-away root does not need and which
# made most of the build's time.
mmdebstrap --quiet --variant=minbase --format=tar \
  --dpkgopt='force-unsafe-io' \
  --include="$include" \
  --aptopt='APT::Install-Recommends "false"' \
  --aptopt='APT::Install-Suggests "false"' \
  --dpkgopt='path-exclude=/usr/share/doc/*' \
  --dpkgopt='path-include=/usr/share/doc/*/copyright' \
  --dpkgopt='path-exclude=/usr/share/man/*' \
  --dpkgopt='path-exclude=/usr/share/info/*' \
  --dpkgopt='path-exclude=/usr/share/locale/*' \
  --dpkgopt='path-exclude=/usr/share/lintian/*' \
  --customize-hook="chroot \"\$1\" useradd --create-home --uid $USER_ID --user-group --shell /bin/bash $USER_NAME" \
  --customize-hook="mkdir -p \"\$1/workspace\" && chown $USER_ID:$USER_ID \"\$1/workspace\"" \
  --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/* "$1"/var/log/*' \
  "$SUITE" "$work/rootfs.tar" \
  "deb $mirror $SUITE main" \
  "deb $mirror $SUITE-updates main" \
  "deb $security $SUITE-security main"

# Debian's packages byte-compiled their modules at install, which keeps
# `import pandas` quick; Python writes no more bytecode. HOME is the user's
# own; npm installs globally into the user's prefix, which PATH
# carries, so `npm i -g` works without root.
docker import \
  --change "USER $USER_NAME" \
  --change 'WORKDIR /workspace' \
  --change "ENV HOME=/home/$USER_NAME" \
  --change 'ENV PATH=/home/wick/.local/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV LANG=C.UTF-8' \
  --change 'ENV PYTHONDONTWRITEBYTECODE=1' \
  --change 'ENV NPM_CONFIG_PREFIX=/home/wick/.local' \
  --change 'ENV MPLBACKEND=Agg' \
  --change "LABEL org.opencontainers.image.title=$NAME" \
  --change 'LABEL org.opencontainers.image.source=https://github.com/wick-agent/wick' \
  --change "LABEL wick.recipe=$hash" \
  --change 'CMD ["/bin/bash"]' \
  "$work/rootfs.tar" "$tag" >/dev/null
docker tag "$tag" "$NAME:latest"
size=$(docker image inspect "$tag" --format '{{.Size}}')
log "built $tag and $NAME:latest: $((size / 1000000)) MB in $(($(date +%s) - start)) s"
