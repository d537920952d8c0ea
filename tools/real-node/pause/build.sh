#!/usr/bin/env bash
# The Pod sandbox ("pause") image from pause.c: a static binary in an image FROM scratch,
# built with buildah as registry.k8s.io/pause:3.10.1 (the sandbox image the node's
# containerd is configured with; nothing is pulled), exported as a docker archive to
# $KRT_REAL_NODE_DIR/images/pause.tar and imported into the node's containerd (namespace
# k8s.io) when its socket exists. Called by images.sh, and by node.sh when containerd lacks
# the image.
#
# Usage (root): tools/real-node/pause/build.sh [--no-import]   (prints the image reference)
# Env: KRT_REAL_NODE_DIR (/var/lib/krt-real-node), KRT_CONTAINERD_SOCKET (the node's),
# KRT_CTR (default: kube-binaries' ctr, else the one on PATH), KRT_SNAPSHOTTER (as images.sh).
set -euo pipefail

IMAGE=registry.k8s.io/pause:3.10.1
here=$(cd "$(dirname "$0")" && pwd)
import=1
case "${1-}" in '') ;; --no-import) import=0 ;; *) echo "usage: $0 [--no-import]" >&2; exit 2 ;; esac
state=${KRT_REAL_NODE_DIR:-/var/lib/krt-real-node}
socket=${KRT_CONTAINERD_SOCKET:-/run/krt-real-node/containerd/containerd.sock}
archive=$state/images/pause.tar

started=$(date +%s)
log() { printf '[real-node] %s (%ss)\n' "$*" "$(($(date +%s) - started))" >&2; }

for tool in gcc buildah; do
  command -v "$tool" >/dev/null || { echo "pause/build.sh: $tool missing (apt-get install gcc libc6-dev buildah)" >&2; exit 1; }
done

work=$(mktemp -d)
container=
cleanup() {
  [ -z "$container" ] || buildah rm "$container" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

# Static: the image has nothing else, not even a libc.
gcc -Wall -Wextra -Werror -Os -static -s -DPAUSE_VERSION="\"${IMAGE##*:}\"" -o "$work/pause" "$here/pause.c"
container=$(buildah from scratch)
buildah copy --quiet "$container" "$work/pause" /pause >/dev/null
# As upstream's: the nobody-like user, the binary as the entrypoint.
buildah config --entrypoint '["/pause"]' --cmd '' --user 65535:65535 --os linux --arch amd64 \
  --label "io.kruntimes.pause.source-sha256=$(sha256sum "$here/pause.c" | cut -d' ' -f1)" "$container"
buildah commit --quiet --format oci --rm "$container" "$IMAGE" >/dev/null
container=
mkdir -p "$state/images"
rm -f "$archive.tmp"
buildah push --quiet "$IMAGE" "docker-archive:$archive.tmp:$IMAGE" >/dev/null
mv -f "$archive.tmp" "$archive"
log "pause image $IMAGE built: $archive"

if [ "$import" = 1 ] && [ -S "$socket" ]; then
  ctr=${KRT_CTR:-}
  if [ -z "$ctr" ]; then
    # containerd 2's ctr, the node's own (tools/kube-binaries/build.sh --node), else PATH's.
    ctr=$(find "${KRT_KUBE_BIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kruntimes}/kube-binaries" -maxdepth 2 -name ctr -perm -u+x 2>/dev/null | sort | tail -n 1)
    [ -n "$ctr" ] || ctr=$(command -v ctr) || { echo "pause/build.sh: no ctr to import with" >&2; exit 1; }
  fi
  # Its output only on a failure (it warns about cgroup v1 on every call).
  out=$(timeout 120 "$ctr" --address "$socket" --namespace k8s.io images import \
    ${KRT_SNAPSHOTTER:+--snapshotter "$KRT_SNAPSHOTTER"} "$archive" 2>&1) || { echo "$out" >&2; exit 1; }
  log "pause image imported into $socket"
elif [ "$import" = 1 ]; then
  log "no containerd socket at $socket (the node is not up): pause image exported, not imported"
fi
echo "$IMAGE"
