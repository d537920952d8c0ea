#!/usr/bin/env bash
# Builds the upstream control-plane binaries (kube-apiserver, kube-controller-manager,
# etcd), kubectl (the client the tests and the local cluster's users run: the same
# pinned version, not whatever the machine has), SeaweedFS's `weed` (the S3-compatible object store for artifacts) and
# Prometheus (the local cluster's metrics; the dashboards' queries are evaluated on it) and Jaeger's
# all-in-one (./jaeger: the OTLP receiver and query API the tracing test reads spans back from) from their Go modules into a cache outside the repository, keyed by version. A second run with the
# same versions only verifies the cached binaries. With --node it also builds what the
# real node runs (tools/real-node): kubelet, kube-proxy and kube-scheduler from
# the same k8s.io/kubernetes, containerd, containerd-shim-runc-v2 and ctr (./containerd),
# coredns (./coredns), kube-router (./kube-router, its network policy controller) and runc
# (./runc: the only one with cgo, for libseccomp; Debian's runc 1.1.5 cannot run Pods with
# user namespaces); the test suite never asks for those. runc needs gcc, pkg-config and
# libseccomp-dev (its static libseccomp.a): installed with apt-get when missing and root.
#
# Named components (etcd kube-apiserver kube-controller-manager kubectl weed prometheus
# jaeger-all-in-one, and with --node the node's) build and verify only those: `npm run dev`
# builds the control plane first and the rest while its demo runs.
# Each build's seconds are kept in $cache_root/kube-binaries/build-seconds/<component>, and
# the next build of that component names them in its progress line.
#
# Usage: tools/kube-binaries/build.sh [--node] [COMPONENT ...]   # prints the bin directory on stdout
# Env:   KRT_KUBE_BIN_CACHE  cache root (default: $XDG_CACHE_HOME/kruntimes or ~/.cache/kruntimes)
set -euo pipefail
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=mod

usage="usage: $0 [--node] [COMPONENT ...]"
node=false
[ "${1-}" = --node ] && { node=true; shift; }
control_plane=(etcd kube-apiserver kube-controller-manager kubectl weed prometheus jaeger-all-in-one)
node_parts=(kubelet kube-proxy kube-scheduler containerd containerd-shim-runc-v2 ctr coredns kube-router runc)
wanted=("$@")
for component in "${wanted[@]}"; do
  case " ${control_plane[*]} $($node && echo "${node_parts[*]}") " in
    *" $component "*) ;;
    *) echo "$usage (unknown component '$component')" >&2; exit 2 ;;
  esac
done
wants() { # component: named on the command line, or none named (all)
  [ ${#wanted[@]} -eq 0 ] && return 0
  case " ${wanted[*]} " in *" $1 "*) return 0 ;; esac
  return 1
}

here=$(cd "$(dirname "$0")" && pwd)
module_version() { # module dir, module path -> version from go.mod
  sed -nE "s#^[[:space:]]*(require )?$2 (v[^ ]+).*#\2#p" "$1/go.mod" | head -n1
}
kube_version=$(module_version "$here/kubernetes" k8s.io/kubernetes)
etcd_version=$(module_version "$here/etcd" go.etcd.io/etcd/server/v3)
seaweedfs_version=$(module_version "$here/seaweedfs" github.com/seaweedfs/seaweedfs)
prometheus_version=$(module_version "$here/prometheus" github.com/prometheus/prometheus)
jaeger_version=$(module_version "$here/jaeger" github.com/jaegertracing/jaeger)
go_version=$(go env GOVERSION)
[ -n "$kube_version" ] && [ -n "$etcd_version" ] && [ -n "$seaweedfs_version" ] && [ -n "$prometheus_version" ] && [ -n "$jaeger_version" ] ||
  { echo "build.sh: cannot read versions from go.mod" >&2; exit 1; }

cache_root=${KRT_KUBE_BIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kruntimes}
bin_dir="$cache_root/kube-binaries/kubernetes-$kube_version-etcd-$etcd_version-$go_version"
mkdir -p "$bin_dir"

log() { printf '[kube-binaries] %s\n' "$*" >&2; }
times_dir="$cache_root/kube-binaries/build-seconds"
mkdir -p "$times_dir"

verify() { # name, expected substring of its version output, version arguments (default --version)
  local name=$1 want=$2 out
  shift 2
  wants "$name" || return 0
  [ $# -gt 0 ] || set -- --version
  out=$("$bin_dir/$name" "$@" 2>&1) || { log "$name $* failed: $out"; return 1; }
  case "$out" in *"$want"*) return 0 ;; esac
  log "$name $* printed '$out', expected it to contain '$want'"; return 1
}

build() { # component, file name, module dir, package, ldflags, build tags (optional, comma-separated),
  # go build flags (optional, one word each); CGO_ENABLED=1 before the call for a cgo build
  local component=$1 name=$2 dir=$3 pkg=$4 ldflags=$5 tags=${6-} tmp start last seconds
  local -a flags
  read -r -a flags <<<"${7-}"
  wants "$component" || return 0
  if [ -x "$bin_dir/$name" ]; then log "$component: cached"; return 0; fi
  last=$(cat "$times_dir/$component" 2>/dev/null || true)
  # `npm run dev` reads this line: the component, and the seconds its last build here took.
  log "$component: building $pkg ($([[ $last =~ ^[0-9]+$ ]] && echo "its last build here took ${last}s" || echo 'no earlier build here; a first build takes minutes'))"
  start=$(date +%s)
  tmp="$bin_dir/.$name.tmp.$$"
  (cd "$dir" && go build -trimpath "${flags[@]}" -tags "$tags" -ldflags "-s -w $ldflags" -o "$tmp" "$pkg")
  mv -f "$tmp" "$bin_dir/$name" # atomic: a killed build never leaves a half binary behind
  seconds=$(( $(date +%s) - start ))
  echo "$seconds" >"$times_dir/.$component.$$" && mv -f "$times_dir/.$component.$$" "$times_dir/$component"
  log "$component: built in ${seconds}s"
}

ensure_runc_build_deps() { # gcc, pkg-config and libseccomp's static library (Debian's packages)
  local missing=()
  command -v gcc >/dev/null || missing+=(gcc libc6-dev)
  command -v pkg-config >/dev/null || missing+=(pkg-config)
  { [ -f "$(gcc -print-file-name=libseccomp.a 2>/dev/null)" ] && pkg-config --exists libseccomp 2>/dev/null; } || missing+=(libseccomp-dev)
  [ ${#missing[@]} -eq 0 ] && return 0
  [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null ||
    { log "runc: needs ${missing[*]} (Debian's packages) to build; install them, or run as root"; exit 1; }
  log "runc: installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y --no-install-recommends "${missing[@]}" >&2
}

kube_ldflags() {
  local v=$kube_version major minor pkg=k8s.io/component-base/version
  major=${v#v}; major=${major%%.*}; minor=${v#v$major.}; minor=${minor%%.*}
  printf -- '-X %s.gitVersion=%s -X %s.gitMajor=%s -X %s.gitMinor=%s -X %s.gitTreeState=clean -X %s.buildDate=1970-01-01T00:00:00Z' \
    "$pkg" "$v" "$pkg" "$major" "$pkg" "$minor" "$pkg" "$pkg"
}

build etcd etcd "$here/etcd" go.etcd.io/etcd/server/v3 "-X go.etcd.io/etcd/api/v3/version.GitSHA=module-$etcd_version"
build kube-apiserver kube-apiserver "$here/kubernetes" k8s.io/kubernetes/cmd/kube-apiserver "$(kube_ldflags)"
build kube-controller-manager kube-controller-manager "$here/kubernetes" k8s.io/kubernetes/cmd/kube-controller-manager "$(kube_ldflags)"
build kubectl kubectl "$here/kubernetes" k8s.io/kubernetes/cmd/kubectl "$(kube_ldflags)"
# bin_dir is keyed by the control plane's versions only, so that moving the SeaweedFS pin
# does not rebuild kube-apiserver: weed is cached under its own version, and `weed` is a
# symlink to the current one (its version output names the module version, stamped below).
weed_name="weed-$seaweedfs_version"
build weed "$weed_name" "$here/seaweedfs" github.com/seaweedfs/seaweedfs/weed \
  "-X github.com/seaweedfs/seaweedfs/weed/util/version.COMMIT=module-$seaweedfs_version"
link() { # name, versioned file it points to (when built or cached)
  [ -e "$bin_dir/$2" ] || return 0
  ln -sfn "$2" "$bin_dir/.$1.tmp.$$"
  mv -fT "$bin_dir/.$1.tmp.$$" "$bin_dir/$1" # atomic replacement of the symlink
}
link weed "$weed_name"
# Without the web UI's assets (they are built with npm, not Go): the HTTP API and /graph's
# query page answer; the React UI says it was built without assets.
prometheus_name="prometheus-$prometheus_version"
prom_common=github.com/prometheus/common/version
build prometheus "$prometheus_name" "$here/prometheus" github.com/prometheus/prometheus/cmd/prometheus \
  "-X $prom_common.Version=$prometheus_version -X $prom_common.Revision=module-$prometheus_version -X $prom_common.Branch=module"
link prometheus "$prometheus_name"
# Jaeger v1's all-in-one (collector and query in one process, in-memory storage by default).
jaeger_name="jaeger-all-in-one-$jaeger_version"
jaeger_pkg=github.com/jaegertracing/jaeger
build jaeger-all-in-one "$jaeger_name" "$here/jaeger" "$jaeger_pkg/cmd/all-in-one" \
  "-X $jaeger_pkg/internal/version.latestVersion=$jaeger_version -X $jaeger_pkg/internal/version.commitSHA=module-$jaeger_version"
link jaeger-all-in-one "$jaeger_name"

if $node; then
  containerd_version=$(module_version "$here/containerd" github.com/containerd/containerd/v2)
  coredns_version=$(module_version "$here/coredns" github.com/coredns/coredns)
  kube_router_version=$(module_version "$here/kube-router" github.com/cloudnativelabs/kube-router/v2)
  runc_version=$(module_version "$here/runc" github.com/opencontainers/runc)
  [ -n "$containerd_version" ] && [ -n "$coredns_version" ] && [ -n "$kube_router_version" ] && [ -n "$runc_version" ] ||
    { echo "build.sh: cannot read the node's versions from go.mod" >&2; exit 1; }
  build kubelet kubelet "$here/kubernetes" k8s.io/kubernetes/cmd/kubelet "$(kube_ldflags)"
  build kube-proxy kube-proxy "$here/kubernetes" k8s.io/kubernetes/cmd/kube-proxy "$(kube_ldflags)"
  build kube-scheduler kube-scheduler "$here/kubernetes" k8s.io/kubernetes/cmd/kube-scheduler "$(kube_ldflags)"
  # Like weed, each cached under its own version behind a symlink. Static (CGO_ENABLED=0),
  # so without the snapshotters that need cgo or are of no use here (containerd's Makefile
  # tags for a static build; the shim, like upstream's, without the gRPC API).
  ctrd_pkg=github.com/containerd/containerd/v2
  ctrd_ldflags="-X $ctrd_pkg/version.Version=$containerd_version -X $ctrd_pkg/version.Revision=module-$containerd_version -X $ctrd_pkg/version.Package=$ctrd_pkg"
  ctrd_tags=urfave_cli_no_docs,osusergo,netgo,static_build,no_btrfs,no_devmapper,no_zfs
  for cmd in containerd containerd-shim-runc-v2 ctr; do
    tags=$ctrd_tags
    [ "$cmd" = containerd-shim-runc-v2 ] && tags=$tags,no_grpc
    build "$cmd" "$cmd-$containerd_version" "$here/containerd" "$ctrd_pkg/cmd/$cmd" "$ctrd_ldflags" "$tags"
    link "$cmd" "$cmd-$containerd_version"
  done
  build coredns "coredns-$coredns_version" "$here/coredns" github.com/coredns/coredns \
    "-X github.com/coredns/coredns/coremain.GitCommit=module-$coredns_version"
  link coredns "coredns-$coredns_version"
  kr_pkg=github.com/cloudnativelabs/kube-router/v2
  build kube-router "kube-router-$kube_router_version" "$here/kube-router" "$kr_pkg/cmd/kube-router" \
    "-X $kr_pkg/pkg/version.Version=$kube_router_version -X $kr_pkg/pkg/version.BuildDate=module-$kube_router_version"
  link kube-router "kube-router-$kube_router_version"
  # runc as its Makefile's `static` target builds it (static PIE, seccomp, no libpathrs: that
  # tag needs the Rust library), with cgo for libseccomp, statically linked: the binary runs
  # whatever the machine has installed.
  if wants runc && [ ! -x "$bin_dir/runc-$runc_version" ]; then ensure_runc_build_deps; fi
  CGO_ENABLED=1 build runc "runc-$runc_version" "$here/runc" github.com/opencontainers/runc \
    "-X main.gitCommit=module-$runc_version -linkmode external -extldflags -static-pie" \
    seccomp,urfave_cli_no_docs,netgo,osusergo -buildmode=pie
  link runc "runc-$runc_version"
fi

verify etcd "${etcd_version#v}"
verify kube-apiserver "$kube_version"
verify kube-controller-manager "$kube_version"
verify kubectl "$kube_version" version --client
verify weed "module-$seaweedfs_version" version
verify prometheus "revision: module-$prometheus_version"
verify jaeger-all-in-one "\"gitCommit\":\"module-$jaeger_version\"" version
if $node; then
  verify kubelet "$kube_version"
  verify kube-proxy "$kube_version"
  verify kube-scheduler "$kube_version"
  verify containerd "$containerd_version module-$containerd_version"
  verify containerd-shim-runc-v2 "$containerd_version" -v
  verify ctr "$containerd_version"
  verify coredns "CoreDNS-${coredns_version#v}" -version
  verify kube-router "version $kube_router_version, built on module-$kube_router_version" --version
  verify runc "runc version ${runc_version#v}"$'\n'"commit: module-$runc_version"
fi
echo "$bin_dir"
