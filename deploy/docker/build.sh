#!/usr/bin/env bash
# Builds the image of one app: deploy/docker/build.sh APP [TAG]   (nx: `npx nx run APP:docker-build`)
# The context is the repository root; the image is kruntimes/APP:TAG (TAG default: the
# chart's appVersion), the name the chart's values use by default.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
app=${1:?usage: deploy/docker/build.sh APP [TAG]}
tag=${2:-$(sed -nE 's/^appVersion: "?([^"]+)"?$/\1/p' "$root/deploy/charts/kruntimes/Chart.yaml")}
dockerfile="$root/deploy/docker/$app.Dockerfile"
[ -f "$dockerfile" ] || { echo "docker-build: no $dockerfile" >&2; exit 1; }
if ! command -v docker >/dev/null 2>&1; then
  echo "docker-build: the docker CLI is not installed; building kruntimes/$app needs a Docker engine (BuildKit)" >&2
  exit 2
fi
if ! docker info >/dev/null 2>&1; then
  echo "docker-build: no Docker engine answers (docker info failed); start one or set DOCKER_HOST" >&2
  exit 2
fi
DOCKER_BUILDKIT=1 docker build -f "$dockerfile" -t "kruntimes/$app:$tag" "$root"
