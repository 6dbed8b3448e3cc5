#!/usr/bin/env bash
# Builds wick-sandbox-claude-code: wick-sandbox-runtime with the ACP adapters
# of deploy/acp-agents (claude-code-acp, which bundles Claude Code, and
# codex-acp with its Linux binary) installed exactly as package-lock.json
# pins them, their commands on PATH. An agent whose acp command is
# claude-code-acp or codex-acp runs in a sandbox of this image.
#
# The engine reaches no registry, so nothing is installed inside the build:
# `npm ci --omit=dev --ignore-scripts` runs on this host into a build
# directory (npm's registry is reachable from here), and the Dockerfile only
# COPYs it. The adapters are pure JavaScript or prebuilt binaries, so no
# install script is needed.
#
# Tagged with a hash of this file, the lockfile and the runtime image's recipe,
# and :latest; skipped when that tag is present (-f builds anyway). Builds the
# runtime image first when it is missing.
set -euo pipefail

NAME=wick-sandbox-claude-code
RUNTIME=wick-sandbox-runtime
PREFIX=/usr/local/lib/wick-acp-agents

log() { printf 'claude-code image: %s\n' "$*" >&2; }

force=0
[ "${1:-}" = "-f" ] && force=1

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
agents=$(cd "$here/../acp-agents" && pwd)
runtime_hash=$(sha256sum "$here/runtime.sh" | cut -c1-12)
hash=$(cat "$here/acp-agents.sh" "$here/runtime.sh" "$agents/package.json" "$agents/package-lock.json" | sha256sum | cut -c1-12)
tag="$NAME:$hash"

if [ "$force" -eq 0 ] && docker image inspect "$tag" >/dev/null 2>&1; then
  docker tag "$tag" "$NAME:latest"
  log "$tag is present (recipe and lockfile unchanged); tagged $NAME:latest"
  exit 0
fi
if ! docker image inspect "$RUNTIME:$runtime_hash" >/dev/null 2>&1; then
  "$here/runtime.sh"
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
start=$(date +%s)
mkdir "$work/agents"
cp "$agents/package.json" "$agents/package-lock.json" "$work/agents/"
log "installing deploy/acp-agents (npm ci --omit=dev)"
(cd "$work/agents" && npm ci --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)

# Claude Code makes no calls besides the model's (no telemetry, no update
# checks) with CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: a sandbox has no
# network for anything else.
runtime_path=$(docker image inspect "$RUNTIME:$runtime_hash" --format '{{range .Config.Env}}{{println .}}{{end}}' | sed -n 's/^PATH=//p')
cat >"$work/Dockerfile" <<EOF
FROM $RUNTIME:$runtime_hash
COPY agents $PREFIX
ENV PATH=$PREFIX/node_modules/.bin:$runtime_path
ENV CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1
LABEL org.opencontainers.image.title=$NAME wick.recipe=$hash
EOF
# The legacy builder uses the local runtime image as it is; nothing is pulled.
DOCKER_BUILDKIT=0 docker build --quiet --network none --tag "$tag" "$work" >/dev/null
docker tag "$tag" "$NAME:latest"
size=$(docker image inspect "$tag" --format '{{.Size}}')
log "built $tag and $NAME:latest: $((size / 1000000)) MB in $(($(date +%s) - start)) s"
