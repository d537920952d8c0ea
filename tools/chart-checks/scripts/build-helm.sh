#!/usr/bin/env bash
# Builds helm 3 from its Go module (pinned in ../helm/go.mod) into a cache outside the
# repository, keyed by version, as tools/kube-binaries/build.sh does for the control plane.
# A second run with the same version only verifies the cached binary.
#
# Usage: tools/chart-checks/scripts/build-helm.sh     # prints the helm binary path on stdout
# Env:   KRT_HELM_CACHE  cache root (default: $XDG_CACHE_HOME/kruntimes or ~/.cache/kruntimes)
#        KRT_HELM_BIN    a prebuilt helm to use instead (only verified)
set -euo pipefail
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=mod

here=$(cd "$(dirname "$0")/../helm" && pwd)
log() { printf '[helm] %s\n' "$*" >&2; }
module_version() { # module path -> version from go.mod
  sed -nE "s#^[[:space:]]*(require )?$1 (v[^ ]+).*#\2#p" "$here/go.mod" | head -n1
}
helm_version=$(module_version helm.sh/helm/v3)
client_go_version=$(module_version k8s.io/client-go)
[ -n "$helm_version" ] && [ -n "$client_go_version" ] || { log "cannot read versions from $here/go.mod"; exit 1; }

verify() { # binary
  local out
  out=$("$1" version --template '{{.Version}}' 2>&1) || { log "$1 version failed: $out"; return 1; }
  [ "$out" = "$helm_version" ] || { log "$1 version printed '$out', expected '$helm_version'"; return 1; }
}

if [ -n "${KRT_HELM_BIN:-}" ]; then verify "$KRT_HELM_BIN"; echo "$KRT_HELM_BIN"; exit 0; fi

cache_root=${KRT_HELM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kruntimes}
bin_dir="$cache_root/helm/$helm_version"
mkdir -p "$bin_dir"

if [ -x "$bin_dir/helm" ]; then
  log "helm $helm_version: cached"
else
  # The Kubernetes version helm assumes offline (.Capabilities.KubeVersion, lint deprecations)
  # is derived from client-go as helm's own Makefile does: v0.X -> 1.X.
  k8s_minor=${client_go_version#v0.}; k8s_minor=${k8s_minor%%.*}
  ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$helm_version -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
  for pkg in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
    ldflags="$ldflags -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$k8s_minor"
  done
  log "helm $helm_version: building helm.sh/helm/v3/cmd/helm (first build takes a few minutes)"
  start=$(date +%s)
  tmp="$bin_dir/.helm.tmp.$$"
  trap 'rm -f "$tmp"' EXIT
  (cd "$here" && go build -trimpath -ldflags "$ldflags" -o "$tmp" helm.sh/helm/v3/cmd/helm)
  mv -f "$tmp" "$bin_dir/helm" # atomic: a killed build never leaves a half binary behind
  log "helm $helm_version: built in $(( $(date +%s) - start ))s"
fi
verify "$bin_dir/helm"
echo "$bin_dir/helm"
