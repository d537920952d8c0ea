#!/usr/bin/env bash
# The Pod sandbox ("pause") image from pause.c: a static binary in an image FROM scratch,
# built with buildah as registry.k8s.io/pause:3.10.1 (the sandbox image the node's
# containerd is configured with; nothing is pulled) and written as an OCI archive for
# `ctr images import`. Used by node.sh (when containerd lacks the image) and images.sh.
#
# Usage: tools/real-node/pause/build.sh ARCHIVE   (root; prints the image reference)
set -euo pipefail

IMAGE=registry.k8s.io/pause:3.10.1
here=$(cd "$(dirname "$0")" && pwd)
if [ $# -ne 1 ] || [ -z "$1" ]; then echo "usage: $0 ARCHIVE" >&2; exit 2; fi
archive=$1

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
mkdir -p "$(dirname "$archive")"
rm -f "$archive"
buildah push --quiet "$IMAGE" "oci-archive:$archive:$IMAGE" >/dev/null
log "pause image $IMAGE built: $archive"
echo "$IMAGE"
