#!/usr/bin/env bash
# The images of the real node (README.md), all from local files and package registries:
#   1. a Debian root filesystem (debootstrap, minbase) with Node.js 24 (the npm `node`
#      package's binary, node_modules/node/bin/node) and npm (the npm `npm` package), laid
#      out as in the official node:24-slim image; cached outside the repository, keyed by
#      its inputs, so that a second run only verifies it,
#   2. the base image localhost/kruntimes/node-base:24 made of it (buildah),
#   3. every deploy/docker/*.Dockerfile built on it (buildah bud, NODE_IMAGE=the base) as
#      docker.io/kruntimes/<app>:TAG,
#   4. each image started once with runc as its user (65532) on a read-only root: its tools
#      answer and the app loads all its modules, then ends as it must without a cluster,
#   5. each image exported as a docker archive into $KRT_REAL_NODE_DIR/images and imported
#      into the node's containerd (namespace k8s.io) when its socket exists,
#   6. the pause image (pause/build.sh).
# Usage (root): tools/real-node/images.sh TAG [--no-import] [--no-check]
#   --no-import  build and export only; --no-check  skip step 4.
# Prints the image references on stdout, `[real-node] <step> (Ns)` progress on stderr.
# Env: KRT_REAL_NODE_DIR (/var/lib/krt-real-node), KRT_REAL_NODE_CACHE (the root filesystem
# cache; ~/.cache/kruntimes/real-node), KRT_CONTAINERD_SOCKET (the node's), KRT_CTR (a ctr
# binary; default: kube-binaries' containerd 2 build, else the one on PATH), KRT_SNAPSHOTTER
# (the node's containerd snapshotter, when not overlayfs), KRT_NPM_VERSION, KRT_DEBIAN_MIRROR and
# KRT_DEBIAN_SECURITY_MIRROR (default: this machine's apt sources, debian-mirror.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
here="$root/tools/real-node"

log() { printf '[real-node] %s (%ss)\n' "$*" "$SECONDS" >&2; }
fail() { printf '[real-node] FAILED: %s\n' "$*" >&2; exit 1; }

usage="usage: tools/real-node/images.sh TAG [--no-import] [--no-check]"
tag=${1:-}
[[ $tag =~ ^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$ ]] || fail "$usage (TAG: an image tag)"
shift
import=1 check=1
for arg in "$@"; do
  case $arg in
    --no-import) import=0 ;;
    --no-check) check=0 ;;
    *) fail "$usage" ;;
  esac
done
[ "$(id -u)" = 0 ] || fail "run as root: debootstrap, buildah and runc need it"

state=${KRT_REAL_NODE_DIR:-/var/lib/krt-real-node}
cache=${KRT_REAL_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kruntimes/real-node}
socket=${KRT_CONTAINERD_SOCKET:-/run/krt-real-node/containerd/containerd.sock}
base=localhost/kruntimes/node-base:24
suite=bookworm
# The Debian mirror this machine's apt uses (or KRT_DEBIAN_MIRROR), and its security archive.
mirrors=$("$here/debian-mirror.sh" "$suite") || fail "no Debian mirror: set KRT_DEBIAN_MIRROR"
mirror=${mirrors%%$'\n'*} security_mirror=${mirrors#*$'\n'}
# Beside minbase: what the node binary links (ldd: libstdc++, libgcc_s) and the CA store.
packages=ca-certificates,libstdc++6,libgcc-s1
# The newest npm 11 when this was written; a new one rebuilds the root filesystem.
npm_version=${KRT_NPM_VERSION:-11.21.3}
node_bin="$root/node_modules/node/bin/node"

# Steps and what they leave behind on a failure: a half-built root filesystem (maybe with
# debootstrap's /proc still mounted in it), buildah working containers, check bundles.
work="" containers=() bundles=() runc_ids=()
cleanup() {
  local status=$? id
  for id in "${runc_ids[@]}"; do runc delete -f "$id" >/dev/null 2>&1 || true; done
  for id in "${containers[@]}"; do buildah rm "$id" >/dev/null 2>&1 || true; done
  for id in "${bundles[@]}"; do rm -rf --one-file-system "$id"; done
  if [ -n "$work" ] && [ -d "$work" ]; then
    # Deepest first; --one-file-system: never into a mount an interrupted debootstrap left.
    findmnt -rn -o TARGET | grep -F "$work/" | sort -r | xargs -r -n1 umount -l || true
    rm -rf --one-file-system "$work"
  fi
  exit "$status"
}
trap cleanup EXIT

# 0. tools, the Node.js binary and the lock (buildah's storage and the cache are shared)
missing=()
for tool in debootstrap buildah runc; do command -v "$tool" >/dev/null || missing+=("$tool"); done
if [ "${#missing[@]}" -gt 0 ]; then
  log "apt-get install ${missing[*]}"
  timeout 600 apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive timeout 900 apt-get install -y -qq "${missing[@]}" >&2
fi
[ -x "$node_bin" ] || fail "$node_bin is missing: run npm ci in $root first"
node_version=$("$node_bin" --version)
[[ $node_version == v24.* ]] || fail "$node_bin is $node_version, not Node.js 24"
command -v npm >/dev/null || fail "npm is not installed (it fetches the npm package)"
mkdir -p "$cache" "$state/images" "$state/logs"
exec 9>"$cache/images.lock"
flock -w 1800 9 || fail "another images.sh still holds $cache/images.lock after 30 minutes"

timed() { # STEP COMMAND...: runs COMMAND, logs STEP and how long it took
  local step=$1 start=$SECONDS
  shift
  log "$step"
  "$@"
  log "$step: done in $((SECONDS - start))s"
}

# 1. the root filesystem
make_rootfs() { # TARBALL
  local out=$1 dir npm_tgz
  work=$(mktemp -d "$cache/work.XXXXXX")
  dir="$work/rootfs"
  log "debootstrap $suite (minbase + $packages) from $mirror"
  timeout 1800 debootstrap --variant=minbase --include="$packages" "$suite" "$dir" "$mirror" >"$work/debootstrap.log" 2>&1 ||
    { tail -n 30 "$work/debootstrap.log" >&2; fail "debootstrap failed (its log's end above)"; }
  # apt as in Debian's images: updates and security too, no caches, no translations.
  rm -f "$dir/etc/apt/sources.list"
  cat >"$dir/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $mirror
Suites: $suite $suite-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $security_mirror
Suites: $suite-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  cat >"$dir/etc/apt/apt.conf.d/docker-clean" <<'EOF'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
EOF
  echo 'Acquire::Languages "none";' >"$dir/etc/apt/apt.conf.d/docker-no-languages"
  echo 'Acquire::GzipIndexes "true";' >"$dir/etc/apt/apt.conf.d/docker-gzip-indexes"
  # "slim" as debian:bookworm-slim: no documentation but copyrights, no manuals, no locales,
  # now and for what later apt-get installs add (python3, tini).
  cat >"$dir/etc/dpkg/dpkg.cfg.d/docker" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
EOF
  find "$dir/usr/share/doc" -mindepth 1 ! -type d ! -name copyright -delete
  find "$dir/usr/share/doc" -mindepth 1 -type d -empty -delete
  rm -rf "${dir:?}"/usr/share/{man,groff,info,lintian,linda}/*
  find "$dir/usr/share/locale" -mindepth 1 -maxdepth 1 ! -name locale.alias -exec rm -rf {} +
  # The official image's user (uid 1000); the kruntimes images run as 65532 anyway.
  chroot "$dir" groupadd --gid 1000 node
  chroot "$dir" useradd --uid 1000 --gid node --shell /bin/bash --create-home node
  # Node.js and npm where the official image has them.
  install -o root -g root -m 0755 "$node_bin" "$dir/usr/local/bin/node"
  ln -s node "$dir/usr/local/bin/nodejs"
  npm_tgz=$(cd "$work" && timeout 300 npm pack --silent "npm@$npm_version" | tail -n 1)
  mkdir -p "$dir/usr/local/lib/node_modules/npm"
  tar -xzf "$work/$npm_tgz" --strip-components=1 --no-same-owner -C "$dir/usr/local/lib/node_modules/npm"
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$dir/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$dir/usr/local/bin/npx"
  # npm trusts the system CA store (ca-certificates) rather than Node's copy of it, so that a
  # build can bind its own CA bundle over it: images.sh does, for a TLS-inspecting proxy.
  mkdir -p "$dir/usr/local/etc"
  echo 'cafile=/etc/ssl/certs/ca-certificates.crt' >"$dir/usr/local/etc/npmrc"
  [ "$(chroot "$dir" node --version)" = "$node_version" ] || fail "node does not run in the root filesystem"
  [ "$(chroot "$dir" npm --version)" = "$npm_version" ] || fail "npm does not run in the root filesystem"
  # What the container runtime provides (/dev, resolv.conf, hosts, hostname) or a build leaves.
  rm -rf "${dir:?}"/dev/* "${dir:?}"/tmp/* "${dir:?}"/var/tmp/* "${dir:?}"/root/.npm "${dir:?}"/var/lib/apt/lists/* \
    "${dir:?}"/var/cache/apt/*.bin "${dir:?}"/var/cache/apt/archives/*.deb "${dir:?}"/var/cache/debconf/*-old
  find "$dir/var/log" -type f -delete
  rm -f "$dir/etc/resolv.conf"
  echo localhost >"$dir/etc/hostname"
  printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n' >"$dir/etc/hosts"
  tar --numeric-owner --sort=name -C "$dir" -cf "$work/rootfs.tar" .
  (cd "$work" && sha256sum rootfs.tar | sed "s| rootfs.tar| $(basename "$out")|" >"$out.sha256")
  mv -f "$work/rootfs.tar" "$out" # the tarball appears whole or not at all
  rm -rf --one-file-system "$work"
  work=""
}
key=$({
  printf '%s\n' "$suite" "$mirror" "$security_mirror" "$packages" "$npm_version"
  sha256sum "$node_bin" | cut -d' ' -f1
  declare -f make_rootfs
} | sha256sum | cut -c1-16)
rootfs="$cache/rootfs-$suite-node$node_version-npm$npm_version-$key.tar"
if [ -f "$rootfs" ] && [ -f "$rootfs.sha256" ] && (cd "$cache" && sha256sum --quiet --status -c "$rootfs.sha256"); then
  log "root filesystem: cached and verified, $rootfs"
else
  rm -f "$rootfs" "$rootfs.sha256"
  timed "root filesystem $(basename "$rootfs")" make_rootfs "$rootfs"
fi

# 2. the base image: the root filesystem with the official image's configuration
make_base() {
  local ctr
  ctr=$(buildah from scratch)
  containers+=("$ctr")
  buildah add --quiet "$ctr" "$rootfs" / >/dev/null
  buildah config \
    --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --env NODE_VERSION="${node_version#v}" \
    --cmd '["node"]' \
    --label io.kruntimes.node-base="$base_key" \
    --label org.opencontainers.image.description="Debian $suite (minbase), Node.js $node_version, npm $npm_version: node:24-slim's layout, built by tools/real-node/images.sh" \
    "$ctr"
  buildah commit --quiet --rm "$ctr" "$base" >/dev/null
  containers=("${containers[@]/$ctr/}")
}
base_key=$({ basename "$rootfs"; declare -f make_base; } | sha256sum | cut -c1-16)
if [ "$(buildah inspect --type image --format '{{index .OCIv1.Config.Labels "io.kruntimes.node-base"}}' "$base" 2>/dev/null)" = "$base_key" ]; then
  log "base image $base: up to date"
else
  timed "base image $base" make_base
fi

# 3. the apps' images
apps=()
for file in "$root"/deploy/docker/*.Dockerfile; do apps+=("$(basename "$file" .Dockerfile)"); done
# --network host: RUN reaches the Debian mirror and the npm registry as this machine does;
# buildah's own network (netavark) would work too, but leaves its iptables chains behind.
bud_args=(--layers --pull=never --network host --build-arg NODE_IMAGE="$base")
# npm in the build trusts the system CA store (make_rootfs): this machine's, which has the CA
# of a TLS-inspecting egress proxy when there is one. Only while RUN runs; no layer keeps it.
host_ca=/etc/ssl/certs/ca-certificates.crt
[ -f "$host_ca" ] && bud_args+=(--volume "$host_ca:$host_ca:ro")
build_app() { # APP
  local app=$1 out="$state/logs/image-$1.log"
  timeout 1800 buildah bud "${bud_args[@]}" -f "$root/deploy/docker/$app.Dockerfile" -t "docker.io/kruntimes/$app:$tag" "$root" >"$out" 2>&1 ||
    { tail -n 40 "$out" >&2; fail "building $app failed (the end of $out above)"; }
}
for app in "${apps[@]}"; do timed "image docker.io/kruntimes/$app:$tag" build_app "$app"; done

# 4. each image, as the chart runs it: its user, a read-only root, all capabilities dropped
# (runc on the image's root filesystem, its own network namespace with a loopback only).
# How each app shows with no cluster that it loaded all its modules: its arguments, a line
# it must print, and whether it then exits (non-zero) or serves until SIGTERM (exit 0).
declare -A app_args=([scheduler]=--krt-image-check [stale-recovery]=--krt-image-check)
declare -A app_line=(
  [controller-manager]='--internal-ca-dir is required'
  [runtime-gateway]='--tls-cert-file is required'
  [runtimed]='invalid runtimed configuration'
  [scheduler]="Unknown option '--krt-image-check'"
  [stale-recovery]="Unknown option '--krt-image-check'"
  [runtime-server-bash]='runtime server listening'
  [runtime-server-python]='runtime server listening'
)
declare -A app_serves=([runtime-server-bash]=1 [runtime-server-python]=1)
# The tools each image must have beside node (the Dockerfiles install them).
declare -A app_tools=([runtime-server-bash]='bash tini setpriv mount' [runtime-server-python]='python3 tini setpriv mount')

runc_bundle() { # ROOTFS IMAGE-CONFIG-JSON ARGS-JSON: a new bundle directory for runc, in $bundle
  bundle=$(mktemp -d /tmp/krt-image-check.XXXXXX)
  bundles+=("$bundle")
  (cd "$bundle" && runc spec)
  # shellcheck disable=SC2016 # JavaScript, not shell
  "$node_bin" -e '
    const fs = require("node:fs");
    const [file, rootfs, image, args] = process.argv.slice(1);
    const spec = JSON.parse(fs.readFileSync(file, "utf8"));
    const config = JSON.parse(image);
    const [uid, gid] = config.User.split(":").map(Number);
    spec.root = { path: rootfs, readonly: true };
    Object.assign(spec.process, {
      terminal: false, user: { uid, gid }, args: JSON.parse(args), env: config.Env,
      cwd: config.WorkingDir || "/", noNewPrivileges: true,
      capabilities: { bounding: [], effective: [], permitted: [], inheritable: [], ambient: [] },
    });
    spec.hostname = "krt-image-check";
    // The chart mounts an emptyDir on /tmp; Runtime Pods one on /workspace.
    for (const destination of ["/tmp", "/workspace"]) {
      spec.mounts.push({ destination, type: "tmpfs", source: "tmpfs",
        options: ["nosuid", "nodev", "size=64m", "mode=1777"] });
    }
    fs.writeFileSync(file, JSON.stringify(spec, null, 2));
  ' "$bundle/config.json" "$1" "$2" "$3"
}

check_app() { # APP
  local app=$1 ref="docker.io/kruntimes/$1:$tag" ctr mnt config bundle id out pid status=0 tools line
  config=$(buildah inspect --type image "$ref" | "$node_bin" -e 'process.stdout.write(JSON.stringify(JSON.parse(require("node:fs").readFileSync(0, "utf8")).OCIv1.config))')
  [ "$("$node_bin" -p 'JSON.parse(process.argv[1]).User' "$config")" = 65532:65532 ] || fail "$ref: its user is not 65532:65532"
  [ -n "${app_line[$app]:-}" ] || fail "images.sh has no check for $app: add it to app_line"
  ctr=$(buildah from --pull=never "$ref")
  containers+=("$ctr")
  mnt=$(buildah mount "$ctr")
  id="krt-image-check-$app"
  runc delete -f "$id" >/dev/null 2>&1 || true
  runc_ids+=("$id")

  # Its user, a read-only root, node and the tools it needs.
  tools="node --version"
  for line in ${app_tools[$app]:-}; do tools+=" && $line --version | head -n 1"; done
  runc_bundle "$mnt" "$config" "$("$node_bin" -p 'JSON.stringify(["/bin/sh", "-c", process.argv[1]])' \
    "test \"\$(id -u):\$(id -g)\" = 65532:65532 && ! touch /app/.krt-writable 2>/dev/null && $tools")"
  out=$(timeout 60 runc run --bundle "$bundle" "$id" 2>&1) || fail "$ref: user, read-only root or tools: $out"
  log "check $app: user 65532:65532, read-only root, $(echo "$out" | paste -sd, | sed 's/,/, /g')"

  # The app itself, with the image's entrypoint.
  # shellcheck disable=SC2086 # app_args: words
  runc_bundle "$mnt" "$config" "$("$node_bin" -p '
    const c = JSON.parse(process.argv[1]);
    JSON.stringify([...c.Entrypoint, ...(c.Cmd ?? []), ...process.argv.slice(2)])' "$config" ${app_args[$app]:-})"
  out="$bundle/out.log"
  timeout 90 runc run --bundle "$bundle" "$id" >"$out" 2>&1 &
  pid=$!
  for _ in $(seq 1 300); do # 30 s for the line or the exit
    grep -qF -- "${app_line[$app]}" "$out" && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if [ -n "${app_serves[$app]:-}" ]; then
    grep -qF -- "${app_line[$app]}" "$out" || { kill "$pid" 2>/dev/null; cat "$out" >&2; fail "$ref did not print '${app_line[$app]}'"; }
    runc kill "$id" TERM
    wait "$pid" || status=$?
    [ "$status" = 0 ] || { cat "$out" >&2; fail "$ref exited $status on SIGTERM, not 0"; }
    log "check $app: as 65532 on a read-only root it served ('${app_line[$app]}') and stopped on SIGTERM"
  else
    wait "$pid" || status=$?
    if ! grep -qF -- "${app_line[$app]}" "$out" || [ "$status" != 1 ]; then
      cat "$out" >&2
      fail "$ref: expected '${app_line[$app]}' and exit 1, got exit $status"
    fi
    log "check $app: as 65532 on a read-only root it loaded its modules and ended with '${app_line[$app]}'"
  fi
  if grep -qE 'ERR_MODULE_NOT_FOUND|ERR_UNKNOWN_FILE_EXTENSION|SyntaxError' "$out"; then cat "$out" >&2; fail "$ref: a module did not load"; fi
  runc delete -f "$id" >/dev/null 2>&1 || true
  buildah umount "$ctr" >/dev/null
  buildah rm "$ctr" >/dev/null
  containers=("${containers[@]/$ctr/}")
}
if [ "$check" = 1 ]; then
  for app in "${apps[@]}"; do timed "check $app" check_app "$app"; done
fi

# 5. export, and import into the node's containerd
ctr_bin=${KRT_CTR:-}
if [ -z "$ctr_bin" ]; then
  # containerd 2's ctr, the node's own (tools/kube-binaries/build.sh --node), else PATH's.
  ctr_bin=$(find -L "${KRT_KUBE_BIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kruntimes}/kube-binaries" -maxdepth 2 -name ctr -type f -perm -u+x 2>/dev/null | sort | tail -n 1)
  [ -n "$ctr_bin" ] || ctr_bin=$(command -v ctr || true)
fi
do_import=0
if [ "$import" = 1 ]; then
  if [ ! -S "$socket" ]; then
    log "no containerd socket at $socket (the node is not up): images exported, not imported"
  elif [ -z "$ctr_bin" ]; then
    fail "no ctr to import with: build the node's binaries (tools/kube-binaries/build.sh --node) or apt-get install containerd"
  else
    do_import=1
  fi
fi
export_app() { # APP
  local ref="docker.io/kruntimes/$1:$tag" archive="$state/images/$1.tar" id
  id=$(buildah inspect --type image --format '{{.FromImageID}}' "$ref")
  # The archive of the same image is kept: a warm run writes nothing.
  if [ "$(cat "$archive.id" 2>/dev/null)" != "$ref $id" ]; then
    rm -f "$archive" "$archive.id" "$archive.tmp"
    timeout 600 buildah push --quiet "$ref" "docker-archive:$archive.tmp:$ref" >/dev/null
    mv -f "$archive.tmp" "$archive"
    echo "$ref $id" >"$archive.id"
  fi
  if [ "$do_import" = 1 ]; then
    # Unpacked for ctr's default snapshotter (overlayfs), or the node's KRT_SNAPSHOTTER.
    timeout 600 "$ctr_bin" --address "$socket" -n k8s.io images import ${KRT_SNAPSHOTTER:+--snapshotter "$KRT_SNAPSHOTTER"} "$archive" >/dev/null
  fi
}
for app in "${apps[@]}"; do
  timed "export$([ "$do_import" = 1 ] && echo ' and import') docker.io/kruntimes/$app:$tag" export_app "$app"
done

# 6. The pause image (pause/build.sh), imported the same way; it prints its reference.
pause_args=()
[ "$import" = 1 ] || pause_args+=(--no-import)
timed "pause image" "$here/pause/build.sh" "${pause_args[@]}"

buildah images --format '{{.Name}}:{{.Tag}} {{.Size}}' | grep -E "^(docker.io/kruntimes/[^ ]+:$tag|$base) " | sed 's/^/[real-node] size: /' >&2 || true
for app in "${apps[@]}"; do echo "docker.io/kruntimes/$app:$tag"; done
log "images: done"
