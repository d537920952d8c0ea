#!/usr/bin/env bash
# Builds the upstream control-plane binaries (kube-apiserver, kube-controller-manager,
# etcd) and SeaweedFS's `weed` (the S3-compatible object store for artifacts) from their
# Go modules into a cache outside the repository, keyed by version. A second run with the
# same versions only verifies the cached binaries.
#
# Usage: tools/kube-binaries/build.sh            # prints the bin directory on stdout
# Env:   KRT_KUBE_BIN_CACHE  cache root (default: $XDG_CACHE_HOME/kruntimes or ~/.cache/kruntimes)
set -euo pipefail
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=mod

here=$(cd "$(dirname "$0")" && pwd)
module_version() { # module dir, module path -> version from go.mod
  sed -nE "s#^[[:space:]]*(require )?$2 (v[^ ]+).*#\2#p" "$1/go.mod" | head -n1
}
kube_version=$(module_version "$here/kubernetes" k8s.io/kubernetes)
etcd_version=$(module_version "$here/etcd" go.etcd.io/etcd/server/v3)
seaweedfs_version=$(module_version "$here/seaweedfs" github.com/seaweedfs/seaweedfs)
go_version=$(go env GOVERSION)
[ -n "$kube_version" ] && [ -n "$etcd_version" ] && [ -n "$seaweedfs_version" ] ||
  { echo "build.sh: cannot read versions from go.mod" >&2; exit 1; }

cache_root=${KRT_KUBE_BIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kruntimes}
bin_dir="$cache_root/kube-binaries/kubernetes-$kube_version-etcd-$etcd_version-$go_version"
mkdir -p "$bin_dir"

log() { printf '[kube-binaries] %s\n' "$*" >&2; }

verify() { # name, expected substring of its version output, version argument (default --version)
  local out
  out=$("$bin_dir/$1" "${3:---version}" 2>&1) || { log "$1 ${3:---version} failed: $out"; return 1; }
  case "$out" in *"$2"*) return 0 ;; esac
  log "$1 ${3:---version} printed '$out', expected it to contain '$2'"; return 1
}

build() { # name, module dir, package, ldflags
  local name=$1 dir=$2 pkg=$3 ldflags=$4 tmp start
  if [ -x "$bin_dir/$name" ]; then log "$name: cached"; return 0; fi
  log "$name: building $pkg (first build takes several minutes)"
  start=$(date +%s)
  tmp="$bin_dir/.$name.tmp.$$"
  (cd "$dir" && go build -trimpath -ldflags "-s -w $ldflags" -o "$tmp" "$pkg")
  mv -f "$tmp" "$bin_dir/$name" # atomic: a killed build never leaves a half binary behind
  log "$name: built in $(( $(date +%s) - start ))s"
}

kube_ldflags() {
  local v=$kube_version major minor pkg=k8s.io/component-base/version
  major=${v#v}; major=${major%%.*}; minor=${v#v$major.}; minor=${minor%%.*}
  printf -- '-X %s.gitVersion=%s -X %s.gitMajor=%s -X %s.gitMinor=%s -X %s.gitTreeState=clean -X %s.buildDate=1970-01-01T00:00:00Z' \
    "$pkg" "$v" "$pkg" "$major" "$pkg" "$minor" "$pkg" "$pkg"
}

build etcd "$here/etcd" go.etcd.io/etcd/server/v3 "-X go.etcd.io/etcd/api/v3/version.GitSHA=module-$etcd_version"
build kube-apiserver "$here/kubernetes" k8s.io/kubernetes/cmd/kube-apiserver "$(kube_ldflags)"
build kube-controller-manager "$here/kubernetes" k8s.io/kubernetes/cmd/kube-controller-manager "$(kube_ldflags)"
# bin_dir is keyed by the control plane's versions only, so that moving the SeaweedFS pin
# does not rebuild kube-apiserver: weed is cached under its own version, and `weed` is a
# symlink to the current one (its version output names the module version, stamped below).
weed_name="weed-$seaweedfs_version"
build "$weed_name" "$here/seaweedfs" github.com/seaweedfs/seaweedfs/weed \
  "-X github.com/seaweedfs/seaweedfs/weed/util/version.COMMIT=module-$seaweedfs_version"
ln -sfn "$weed_name" "$bin_dir/.weed.tmp.$$"
mv -fT "$bin_dir/.weed.tmp.$$" "$bin_dir/weed" # atomic replacement of the symlink

verify etcd "${etcd_version#v}"
verify kube-apiserver "$kube_version"
verify kube-controller-manager "$kube_version"
verify weed "module-$seaweedfs_version" version
echo "$bin_dir"
