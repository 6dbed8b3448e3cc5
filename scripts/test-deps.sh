#!/usr/bin/env bash
# Installs and starts what Wick's tests need, when it is missing: a Docker
# engine, redis-server, etcd and the modules kube-apiserver builds from (the
# manifest test's control plane), a static busybox (for test images built
# FROM scratch), e2fsprogs (mkfs.ext4 for the workspaces' disk images), Node.js
# with npm (the TypeScript SDK's and the UI's tests), the ACP adapters of
# deploy/acp-agents from their lockfile (the real-adapter tests run them),
# Debian's Chromium with a font (the UI's browser tests drive it; they
# never download a browser), and mmdebstrap, with which it then builds the
# sandbox images (wick-sandbox-runtime and wick-sandbox-claude-code) when the
# engine lacks them. Idempotent, and quick when everything is already there.
# Installing needs root on Debian or Ubuntu; elsewhere it says what is missing.
set -euo pipefail

log() { printf 'test-deps: %s\n' "$*" >&2; }

# Programs the tests run that are built from pinned Go modules of their own
# (testenv.Pinned): kube-apiserver for deploy/k8s's manifest test, Jaeger
# for the e2e trace test. Each is built once per machine and pin (cold:
# minutes of CPU) into the user cache under the hash of its go.mod and
# go.sum, the name testenv.Pinned.Path computes; later runs find it there.
pinned() { # name module package [ldflags]
  local name=$1 mod=$2 pkg=$3 ldflags=${4:-} root hash bin tmp
  root=$(cd "$(dirname "$0")/.." && pwd)
  hash=$(cat "$root/$mod/go.mod" "$root/$mod/go.sum" | sha256sum | cut -c1-16)
  bin="${XDG_CACHE_HOME:-$HOME/.cache}/wick-testenv/$name-$hash"
  [ -x "$bin" ] && return 0
  mkdir -p "$(dirname "$bin")"
  tmp=$(mktemp "$(dirname "$bin")/.$name-XXXXXX")
  log "building $name from $mod (once per machine and pin)"
  if ! (cd "$root/$mod" && GOWORK=off GOFLAGS=-mod=readonly go build -o "$tmp" ${ldflags:+-ldflags="$ldflags"} "$pkg"); then
    rm -f "$tmp"; log "could not build $name from $mod"; exit 1
  fi
  mv "$tmp" "$bin"
}

# `test-deps.sh k8s` installs only what `make test-k8s` needs on top (its
# single-node cluster: containerd, runc, the CNI plugins, iproute2, iptables,
# ipset, nsenter; redis-server, whose binaries the overlays/dev test packs as
# the redis image) and builds the kubelet, controller-manager, scheduler and
# kube-proxy from tools/kube, CoreDNS from tools/coredns and kube-router (the
# cluster's NetworkPolicy enforcer) from tools/kuberouter; `make test` never
# pays for them.
if [ "${1:-}" = k8s ]; then
  k8s_need=()
  for p in etcd-server containerd runc containernetworking-plugins iproute2 iptables ipset util-linux busybox-static redis-server; do
    dpkg -s "$p" >/dev/null 2>&1 || k8s_need+=("$p")
  done
  if [ ${#k8s_need[@]} -gt 0 ]; then
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
      log "installing ${k8s_need[*]}"
      export DEBIAN_FRONTEND=noninteractive
      apt-get update -qq
      apt-get install -y -qq --no-install-recommends "${k8s_need[@]}" >/dev/null
    else
      # The test says why it cannot run (and fails under WICK_TEST_K8S=1).
      log "missing ${k8s_need[*]}; install them (Debian/Ubuntu: apt-get install ${k8s_need[*]})"
      exit 0
    fi
  fi
  kube_version=$(sed -n 's/^const KubeVersion = "\(.*\)"/\1/p' "$(dirname "$0")/../deploy/k8s/internal/cluster/cluster.go")
  for p in kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy; do
    pinned "$p" tools/kube "k8s.io/kubernetes/cmd/$p" "-X k8s.io/component-base/version.gitVersion=$kube_version"
  done
  pinned coredns tools/coredns github.com/wick-agent/wick/tools/coredns
  pinned kube-router tools/kuberouter github.com/cloudnativelabs/kube-router/v2/cmd/kube-router
  # kube-router sees the traffic between pods on the node's bridge through
  # br_netfilter, a module only the host can load.
  [ -e /proc/sys/net/bridge/bridge-nf-call-iptables ] || log "br_netfilter is not loaded; the cluster needs it (modprobe br_netfilter)"
  log "ready for the single-node cluster: $(containerd --version | cut -d' ' -f3), runc $(runc --version | sed -n 's/^runc version //p'), CNI plugins in /usr/lib/cni"
  exit 0
fi

need=()
command -v dockerd >/dev/null 2>&1 || need+=(docker.io)
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
# etcd under the real kube-apiserver of deploy/k8s's manifest test.
command -v etcd >/dev/null 2>&1 || need+=(etcd-server)
command -v node >/dev/null 2>&1 || need+=(nodejs)
command -v npm >/dev/null 2>&1 || need+=(npm)
# Workspaces are bounded by an ext4 image each (docs/sandbox.md).
[ -x /usr/sbin/mkfs.ext4 ] || [ -x /sbin/mkfs.ext4 ] || command -v mkfs.ext4 >/dev/null 2>&1 || need+=(e2fsprogs)
# The runtime image is built from Debian packages with mmdebstrap.
command -v mmdebstrap >/dev/null 2>&1 || need+=(mmdebstrap)
# CHROMIUM_PATH names another Chromium for the browser tests.
[ -x "${CHROMIUM_PATH:-/usr/bin/chromium}" ] || need+=(chromium)
# Test images are built FROM scratch, so busybox must be the static build.
# Without a font, Chromium's screenshots show boxes for text.
if command -v dpkg >/dev/null 2>&1; then
  dpkg -s busybox-static >/dev/null 2>&1 || need+=(busybox-static)
  dpkg -s fonts-dejavu-core >/dev/null 2>&1 || need+=(fonts-dejavu-core)
else
  command -v busybox >/dev/null 2>&1 || need+=(busybox-static)
fi

if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    log "installing ${need[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  else
    log "missing ${need[*]}; install them (Debian/Ubuntu: apt-get install ${need[*]})"
    exit 1
  fi
fi

# The ACP adapters (Claude Code's and Codex's) at the versions of the
# lockfile; npm's own record of the install (node_modules/.package-lock.json)
# older than the lockfile means a stale install. Tests run them offline.
acp_dir="$(cd "$(dirname "$0")/.." && pwd)/deploy/acp-agents"
if [ ! -f "$acp_dir/node_modules/.package-lock.json" ] ||
   [ "$acp_dir/package-lock.json" -nt "$acp_dir/node_modules/.package-lock.json" ]; then
  log "installing the ACP adapters of deploy/acp-agents (npm ci)"
  (cd "$acp_dir" && npm ci --omit=dev --no-audit --no-fund --loglevel=error >&2)
  touch "$acp_dir/node_modules/.package-lock.json"
fi

if command -v go >/dev/null 2>&1; then
  kube_version=$(sed -n 's/^const KubeVersion = "\(.*\)"/\1/p' "$(dirname "$0")/../deploy/k8s/internal/cluster/cluster.go")
  pinned kube-apiserver tools/kube k8s.io/kubernetes/cmd/kube-apiserver \
    "-X k8s.io/component-base/version.gitVersion=$kube_version"
  pinned jaeger tools/jaeger github.com/jaegertracing/jaeger/cmd/jaeger
  # e2e's TestConsumer builds programs that `go get` the suite and its Go SDK
  # offline, from a proxy directory and the module cache's downloads: every
  # module of their own builds must be there. The workspace selects newer
  # versions of some than the root module's go.mod does, so building here
  # does not download those. Once per pair of go.sum files.
  root=$(cd "$(dirname "$0")/.." && pwd)
  stamp="${XDG_CACHE_HOME:-$HOME/.cache}/wick-testenv/consumer-modules-$(cat "$root/go.sum" "$root/sdk/go/go.sum" | sha256sum | cut -c1-16)"
  if [ ! -f "$stamp" ]; then
    log "downloading the modules of the suite's and the Go SDK's own builds (once per go.sum)"
    for m in . sdk/go; do
      # What `go mod tidy` needs is what a consumer's tidy needs; -diff
      # changes no file (and says when the module is not tidy).
      (cd "$root/$m" && GOWORK=off go mod tidy -diff >&2) || log "$m: go.mod and go.sum are not tidy (see the diff above)"
    done
    mkdir -p "$(dirname "$stamp")" && touch "$stamp"
  fi
fi

docker_up() { docker version --format '{{.Server.APIVersion}}' >/dev/null 2>&1; }

if ! docker_up; then
  if [ "$(id -u)" -ne 0 ]; then
    log "the Docker engine is not answering and only root can start it here"
    exit 1
  fi
  pidfile=/var/run/docker.pid
  # A dockerd that was killed leaves its pid file behind and the next one
  # refuses to start; remove it only when that process is gone.
  if [ -f "$pidfile" ] && ! kill -0 "$(cat "$pidfile")" 2>/dev/null; then
    log "removing stale $pidfile"
    rm -f "$pidfile"
  fi
  if ! pgrep -x dockerd >/dev/null 2>&1; then
    log "starting dockerd"
    # In a session of its own: the engine outlives the command that started
    # it, also when that command's process group is killed (a timeout, a
    # stopped CI step), instead of dying under the next test run.
    setsid nohup dockerd >/var/log/wick-dockerd.log 2>&1 < /dev/null &
  fi
  for _ in $(seq 1 150); do
    docker_up && break
    sleep 0.2
  done
  if ! docker_up; then
    log "dockerd did not come up; last lines of /var/log/wick-dockerd.log:"
    tail -n 20 /var/log/wick-dockerd.log >&2 || true
    exit 1
  fi
fi
# The sandbox images the runtime and ACP tests use. A cold build takes
# minutes (mostly the Debian mirror and the disk), so it runs in the
# background while the other tests run: it holds an exclusive lock on
# $WICK_IMAGES_LOCK until it ends, and the tests that need an image wait for
# that lock (testenv.WaitImages) before they look. Each script returns at
# once when the tag of its current recipe is on the engine.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
images_lock=${WICK_IMAGES_LOCK:-/tmp/wick-images.lock}
images_log=${images_lock%.lock}.log
exec 9>"$images_lock"
flock 9
(
  trap 'flock -u 9' EXIT
  "$root/deploy/images/runtime.sh" && "$root/deploy/images/acp-agents.sh"
) >"$images_log" 2>&1 &
exec 9>&-
log "sandbox images: building in the background when missing (log: $images_log)"
log "ready: docker API $(docker version --format '{{.Server.APIVersion}}'), $(redis-server --version | cut -d' ' -f3), busybox at $(command -v busybox), node $(node --version), claude-code-acp $(node -p "require('$acp_dir/node_modules/@zed-industries/claude-code-acp/package.json').version"), $("${CHROMIUM_PATH:-/usr/bin/chromium}" --version 2>/dev/null || echo "chromium at ${CHROMIUM_PATH:-/usr/bin/chromium}")"
