#!/usr/bin/env bash
# The real node (README.md): containerd 2 + runc, the CNI bridge, the kubelet, kube-proxy,
# kube-router's network policy controller (the bridge plugin enforces no NetworkPolicy),
# and the cluster's add-ons CoreDNS and kube-scheduler (the control plane of the tests has
# no scheduler: Pods of Deployments would stay Pending), all inside the network namespace
# of net.sh, joined to the control plane of
# `tools/local-cluster/src/main.ts --dir DIR --bind-address 10.203.0.1 --secure-port 6443`
# (which writes DIR/node.kubeconfig and DIR/kube-proxy.kubeconfig for node krt-node).
#
# Usage (root; idempotent; prints nothing on stdout):
#   tools/real-node/node.sh up [CLUSTER_DIR]  configure and start; wait until the node is Ready
#                                           (KRT_IMPORT_IMAGES=1: import-images before the
#                                           kubelet starts)
#                                           (CLUSTER_DIR: local-cluster's --dir; default
#                                           $KRT_CLUSTER_DIR)
#   tools/real-node/node.sh stop            a node reboot's first half: every process of the
#                                           node and its Pods' containers die, mounts and
#                                           /run/krt-real-node go; the state dir stays
#   tools/real-node/node.sh start           its second half: start again from the state dir
#   tools/real-node/node.sh down            stop, remove the node's state (other files in the
#                                           state dir stay) and every trace on the host
#
#   tools/real-node/node.sh import-images   import every archive in $KRT_REAL_NODE_DIR/images
#                                           (images.sh's, the pause image's) into this node's
#                                           containerd (a second node: the same images, no build)
#
# KRT_NODE_INDEX=N (node-env.sh; default 1): node N, krt-nodeN, in net.sh's namespace of the
# same index, with its own state dir ($KRT_REAL_NODE_DIR/nodeN), run dir, sockets, mount
# namespace, cgroup root, pids and logs, joined with local-cluster's DIR/node-krt-nodeN.kubeconfig
# (`--node krt-node --node krt-nodeN`). Only node 1 runs the cluster's add-ons CoreDNS and
# kube-scheduler (one of each serves the cluster; every node's Pods resolve through node 1's
# CoreDNS); containerd, the kubelet, kube-proxy and kube-router run on every node (each
# serves or filters its own node's Pods). Node N goes down before node 1: the host's
# sysctls and mount-point directories are put back by the last node that goes down.
#
# Every node process runs in one mount namespace of its own (bound at RUN/mntns) joined with
# the network namespace: the kubelet's volume mounts must be visible to containerd and runc,
# and `ip netns exec` would give each process a namespace of its own and a /sys without
# /sys/fs/cgroup. Nothing the node mounts is visible on the host.
set -euo pipefail

# shellcheck source=node-env.sh
. "$(dirname "$0")/node-env.sh"
krt_node_env
BRIDGE=krt-cni0
CLUSTER_DNS=$FIRST_NODE_IP CLUSTER_DOMAIN=cluster.local
PAUSE_IMAGE=registry.k8s.io/pause:3.10.1
CNI_BIN=/usr/lib/cni
IMAGES=$BASE_STATE/images
SOCK=$RUN/containerd/containerd.sock
MNTNS=$RUN/mntns
NETNS=/run/netns/$NS
# Host-wide sysctls the kubelet sets at its start (kubelet's setupKernelTunables); down
# puts back the values they had before the first up.
HOST_SYSCTLS=(vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops kernel.keys.root_maxkeys kernel.keys.root_maxbytes)
# Shared by the nodes (in the first node's state dir): the host's state before the first
# node came up, put back when the last goes down.
HOST_SYSCTLS_FILE=$BASE_STATE/host-sysctls CREATED_HOST_DIRS=$BASE_STATE/created-host-dirs
if [ "$NODE_INDEX" = 1 ]; then
  PROCESSES=(containerd kubelet kube-proxy coredns kube-scheduler kube-router)
else
  PROCESSES=(containerd kubelet kube-proxy kube-router)
fi
runs() { [[ " ${PROCESSES[*]} " == *" $1 "* ]]; }
# The kubelet's cgroups, in every hierarchy (cgroup v1).
KUBEPODS_GLOB="/sys/fs/cgroup/*$CGROUP_ROOT/kubepods"
# What the node keeps in the state dir (down removes these and nothing else).
NODE_STATE=(containerd containerd-opt kubelet pod-logs cni config kubeconfigs pki host kubectl-cache
  logs/containerd.log logs/kubelet.log
  logs/kube-proxy.log logs/coredns.log logs/kube-scheduler.log logs/kube-router.log)
# The first node builds the pause image into the shared images dir (pause/build.sh). The
# host's state files go with the last node down (restore_host), whichever it is.
[ "$NODE_INDEX" != 1 ] || NODE_STATE+=(images/pause.tar)

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
started=$(date +%s)
log() { printf '[real-node] %s (%ss)\n' "$*" "$(($(date +%s) - started))" >&2; }
die() { log "error: $*"; exit 1; }

# ---------------------------------------------------------------- processes

# nsenter, not `ip netns exec`: see the header.
in_node() { nsenter --net="$NETNS" --mount="$MNTNS" -- "$@"; }

# The binary a process name runs (resolved: /proc/PID/exe names the file, not the symlink).
binary_of() { readlink -f "$BIN/$1"; }

pid_of() { # name -> pid on stdout when it runs (its pid file names a live process of its binary)
  local pid
  pid=$(cat "$RUN/pids/$1.pid" 2>/dev/null) || return 1
  [ -n "$pid" ] && [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$(binary_of "$1")" ] || return 1
  echo "$pid"
}

start_process() { # name, args...: in the node's namespaces, in a session of its own, logged
  local name=$1
  shift
  if pid_of "$name" >/dev/null; then log "$name: already running"; return 0; fi
  mkdir -p "$RUN/pids" "$STATE/logs"
  # setsid: a signal to the caller's process group (Ctrl-C) must not reach the node. The
  # shell writes its own pid, then becomes the process. No inherited environment.
  # shellcheck disable=SC2016 # expanded by that shell
  in_node env -i PATH="$BIN:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" HOME=/root \
    setsid sh -c 'echo $$ >"$0"; exec "$@"' "$RUN/pids/$name.pid" "$BIN/$name" "$@" \
    </dev/null >>"$STATE/logs/$name.log" 2>&1 &
  log "$name: started (log $STATE/logs/$name.log)"
}

wait_gone() { # seconds, pids...: true when all have exited in time
  local deadline=$(($(date +%s) + $1)) pid
  shift
  for pid in "$@"; do
    while [ -e "/proc/$pid" ] && [ "$(cut -d' ' -f3 "/proc/$pid/stat" 2>/dev/null)" != Z ]; do
      [ "$(date +%s)" -lt "$deadline" ] || return 1
      sleep 0.2
    done
  done
}

stop_process() { # name, seconds to exit after SIGTERM before SIGKILL
  local pid
  if pid=$(pid_of "$1"); then
    kill -TERM "$pid" 2>/dev/null || true
    if ! wait_gone "$2" "$pid"; then
      log "$1: still running ${2}s after SIGTERM, killing"
      kill -KILL "$pid" 2>/dev/null || true
      wait_gone 10 "$pid" || die "$1 (pid $pid) survives SIGKILL"
    fi
    log "$1: stopped"
  fi
  rm -f "$RUN/pids/$1.pid"
}

kill_all() { # what, pids...: SIGKILL and wait (bounded)
  local what=$1
  shift
  [ $# -gt 0 ] || return 0
  log "killing $# $what: $*"
  kill -KILL "$@" 2>/dev/null || true
  wait_gone 20 "$@" || die "$what survive SIGKILL: $*"
}

pod_pids() { # every process in the kubelet's Pod cgroups (all hierarchies: cgroup v1)
  # shellcheck disable=SC2086 # a glob
  find $KUBEPODS_GLOB -name cgroup.procs -exec cat {} + 2>/dev/null | sort -un
}

shim_pids() { # containerd's shims of this node: they name its socket in their arguments
  local pid
  for pid in $(pgrep -f -- "containerd-shim-runc-v2 .*-address $SOCK" || true); do
    [ "$pid" != $$ ] && echo "$pid"
  done
}

netns_pids() { if [ -e "$NETNS" ]; then ip netns pids "$NS" 2>/dev/null || true; fi; }

mntns_pids() { # processes in the node's mount namespace (kubelet, containerd, shims ...)
  local inode pid
  inode=$(stat -L -c %i "$MNTNS" 2>/dev/null) || return 0
  for pid in /proc/[0-9]*; do
    [ "$(stat -L -c %i "$pid/ns/mnt" 2>/dev/null)" = "$inode" ] && echo "${pid#/proc/}"
  done
  return 0
}

# ---------------------------------------------------------------- mounts and cgroups

ensure_mntns() {
  mkdir -p "$RUN"
  # A mount namespace can only be bound onto a private mount (or it would hold itself).
  if ! findmnt -n -M "$RUN" >/dev/null; then mount --bind "$RUN" "$RUN"; fi
  mount --make-private "$RUN"
  if findmnt -n -M "$MNTNS" >/dev/null; then return 0; fi
  touch "$MNTNS"
  # slave: the host's later mounts still reach the node, the node's never reach the host.
  unshare --mount="$MNTNS" --propagation slave true
  # The copy holds every mount of the host, other nodes' run dirs too (private bind mounts;
  # the kernel leaves their mount namespace's binding out): kept, this node would hold a copy
  # of another's /run/krt-real-nodeN that the other's stop cannot unmount.
  # shellcheck disable=SC2016 # expanded by the shell in the namespace
  nsenter --mount="$MNTNS" -- sh -c '
    findmnt -rn -o TARGET | grep -E "^/run/krt-real-node[0-9]*\$" | while read -r m; do
      [ "$m" = "$1" ] || umount -R -l "$m"
    done' sh "$RUN"
  mkdir -p "$RUN/sysfs"
  # As `ip netns exec` does, a sysfs of the node's network namespace, but keeping the
  # cgroup hierarchies (moved over before the old /sys goes).
  # shellcheck disable=SC2016 # expanded by the shell in the namespaces
  nsenter --net="$NETNS" --mount="$MNTNS" -- sh -euc '
    mount -t sysfs sysfs "$1"
    mount --move /sys/fs/cgroup "$1/fs/cgroup"
    umount -l /sys
    mount --move "$1" /sys
  ' sh "$RUN/sysfs"
  # Host paths the node writes whatever its configuration says are the node's own:
  # /var/log/containers (the kubelet's links), /var/lib/kubelet/device-plugins (a
  # constant of the kubelet), /var/lib/cni (the CNI library's cache). A directory made on
  # the host only to mount on is listed, and down removes it.
  local host_dir
  for host_dir in /var/log /var/lib/kubelet /var/lib/cni; do
    if [ ! -d "$host_dir" ]; then mkdir "$host_dir" && echo "$host_dir" >>"$CREATED_HOST_DIRS"; fi
    mkdir -p "$STATE/host$host_dir"
    in_node mount --bind "$STATE/host$host_dir" "$host_dir"
  done
  log "mount namespace $MNTNS"
}

# shellcheck disable=SC2086 # globs
remove_cgroups() { # the kubelet's (kubepods) in every hierarchy, deepest first, bounded; a
  # node's own cgroup root with them
  local attempt dirs
  for attempt in $(seq 1 25); do
    dirs=$(find $KUBEPODS_GLOB -depth -type d 2>/dev/null || true)
    [ -z "$CGROUP_ROOT" ] || dirs+=$'\n'$(find /sys/fs/cgroup/*$CGROUP_ROOT -maxdepth 0 -type d 2>/dev/null || true)
    dirs=$(echo "$dirs" | sed '/^$/d')
    [ -n "$dirs" ] || return 0
    echo "$dirs" | xargs -r rmdir 2>/dev/null || true
    [ "$attempt" -lt 25 ] && sleep 0.2
  done
  die "cgroups left behind: $(find $KUBEPODS_GLOB /sys/fs/cgroup/*$CGROUP_ROOT -maxdepth 0 2>/dev/null | tr '\n' ' ')"
}

# The kubelet wants its --cgroup-root in every hierarchy before it starts (node N's own).
# cgroup v1's cpuset starts empty in a new cgroup: copied from the parent, as the kubelet's
# own cgroups are.
ensure_cgroup_root() {
  [ -n "$CGROUP_ROOT" ] || return 0
  local hierarchy dir
  for hierarchy in /sys/fs/cgroup/*/; do
    [ -L "${hierarchy%/}" ] && continue # cpu -> cpu,cpuacct
    [ -f "$hierarchy/cgroup.procs" ] || continue
    dir="${hierarchy%/}$CGROUP_ROOT"
    mkdir -p "$dir"
    if [ -f "$dir/cpuset.cpus" ]; then
      [ -n "$(cat "$dir/cpuset.cpus")" ] || cat "${hierarchy%/}/cpuset.cpus" >"$dir/cpuset.cpus"
      [ -n "$(cat "$dir/cpuset.mems")" ] || cat "${hierarchy%/}/cpuset.mems" >"$dir/cpuset.mems"
    fi
  done
}

# ---------------------------------------------------------------- stop (and down)

# shellcheck disable=SC2046 # lists of pids, split into words on purpose
stop_node() {
  # The kubelet first, or it would start what is being stopped again.
  stop_process kubelet 30
  # The Pods' containers, as a power cut would: SIGKILL, whatever they do.
  kill_all "Pod processes" $(pod_pids)
  stop_process kube-proxy 15
  # Its rules and ipsets stay until start (as kube-proxy's do): Pods stay isolated.
  stop_process kube-router 15
  if runs coredns; then stop_process coredns 15; fi
  if runs kube-scheduler; then stop_process kube-scheduler 15; fi
  stop_process containerd 30
  kill_all "containerd shims" $(shim_pids)
  kill_all "processes left in the node's mount namespace" $(mntns_pids)
  # Anything else in the network namespace was started by someone else (a shell through
  # `ip netns exec`, maybe this script's caller): named, not killed.
  local pid
  for pid in $(netns_pids); do log "warning: pid $pid ($(cat "/proc/$pid/comm" 2>/dev/null)) is still in $NS"; done
  # Unbinding the namespace frees it and every mount in it (container root filesystems,
  # volumes, the Pods' network namespaces, so their veths too) once nothing is in it.
  if findmnt -n -M "$MNTNS" >/dev/null; then umount "$MNTNS"; fi
  remove_cgroups
  # /run does not survive a reboot: sockets, containerd's and runc's state, IP allocations.
  if findmnt -n -M "$RUN" >/dev/null; then umount "$RUN"; fi
  rm -rf "$RUN"
}

other_nodes_up() { # another node's mount namespace is bound (it is up, not stopped)
  local run
  for run in /run/krt-real-node /run/krt-real-node[0-9]; do
    [ "$run" != "$RUN" ] && findmnt -n -M "$run/mntns" >/dev/null 2>&1 && return 0
  done
  return 1
}

restore_host() { # only when no other node is up: they share the host's sysctls and
  # mount-point directories (removing one would detach it in a running node's namespace)
  if other_nodes_up; then log "other nodes up: the host's sysctls and directories stay for the last"; return 0; fi
  local setting
  if [ -f "$HOST_SYSCTLS_FILE" ]; then
    while read -r setting; do
      [ -z "$setting" ] || sysctl -qw "$setting" || log "warning: cannot restore $setting"
    done <"$HOST_SYSCTLS_FILE"
  fi
  local dir
  if [ -f "$CREATED_HOST_DIRS" ]; then
    while read -r dir; do rmdir "$dir" 2>/dev/null || log "warning: $dir is not empty, left"; done <"$CREATED_HOST_DIRS"
  fi
  rm -f "$HOST_SYSCTLS_FILE" "$CREATED_HOST_DIRS"
}

clean_netns() { # what the CNI plugins, kube-proxy and kube-router left in the namespace
  # (net.sh's stays)
  [ -e "$NETNS" ] || return 0
  ip netns exec "$NS" ip link del "$BRIDGE" 2>/dev/null || true
  local table set
  for table in filter nat mangle raw; do
    ip netns exec "$NS" iptables -t "$table" -F 2>/dev/null || true
    ip netns exec "$NS" iptables -t "$table" -X 2>/dev/null || true
    ip netns exec "$NS" ip6tables -t "$table" -F 2>/dev/null || true
    ip netns exec "$NS" ip6tables -t "$table" -X 2>/dev/null || true
  done
  # kube-router's ipsets (per network namespace; free once no rule names them any more).
  if command -v ipset >/dev/null; then
    for set in $(ip netns exec "$NS" ipset list -n 2>/dev/null); do
      ip netns exec "$NS" ipset destroy "$set" || log "warning: ipset $set not destroyed"
    done
  fi
}

# ---------------------------------------------------------------- configuration

ensure_packages() {
  local missing=()
  [ -x "$CNI_BIN/bridge" ] && [ -x "$CNI_BIN/host-local" ] && [ -x "$CNI_BIN/portmap" ] || missing+=(containernetworking-plugins)
  command -v iptables >/dev/null || missing+=(iptables)
  command -v ipset >/dev/null || missing+=(ipset) # kube-router's network policy controller
  command -v gcc >/dev/null && [ -f /usr/lib/x86_64-linux-gnu/libc.a ] || missing+=(gcc libc6-dev)
  command -v buildah >/dev/null || missing+=(buildah)
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y --no-install-recommends "${missing[@]}" >&2
}

kubectl_() { "$BIN/kubectl" --cache-dir "$STATE/kubectl-cache" "$@"; } # not ~/.kube/cache

kubeconfig_field() { # file, jsonpath
  kubectl_ --kubeconfig "$1" config view --raw --minify -o "jsonpath=$2"
}

copy_credentials() { # the cluster's files this node needs, copied into the state dir
  local cluster_dir=$1 file
  for file in "$NODE_KUBECONFIG" kube-proxy.kubeconfig admin.kubeconfig; do
    [ -f "$cluster_dir/$file" ] ||
      die "$cluster_dir/$file missing: start the control plane with --dir $cluster_dir --bind-address 10.203.0.1 --secure-port 6443 (--node $NODE_NAME)"
  done
  mkdir -p "$STATE/kubeconfigs" "$STATE/pki"
  install -m 600 "$cluster_dir/$NODE_KUBECONFIG" "$STATE/kubeconfigs/kubelet.kubeconfig"
  install -m 600 "$cluster_dir/kube-proxy.kubeconfig" "$STATE/kubeconfigs/kube-proxy.kubeconfig"
  # The kubelet trusts client certificates of the cluster CA (kube-apiserver's).
  kubeconfig_field "$STATE/kubeconfigs/kubelet.kubeconfig" '{.clusters[0].cluster.certificate-authority-data}' |
    base64 -d >"$STATE/pki/ca.crt"
  addon_credentials "$cluster_dir/admin.kubeconfig"
}

addon_credentials() { # admin kubeconfig: CoreDNS, kube-scheduler and kube-router as ServiceAccounts
  # of their own
  kubectl_ --kubeconfig "$1" apply -f - >/dev/null <<'EOF'
apiVersion: v1
kind: ServiceAccount
metadata: {name: coredns, namespace: kube-system}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: kube-scheduler, namespace: kube-system}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: kube-router, namespace: kube-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "system:coredns"}
rules:
  - apiGroups: [""]
    resources: [endpoints, services, pods, namespaces]
    verbs: [list, watch]
  - apiGroups: [discovery.k8s.io]
    resources: [endpointslices]
    verbs: [list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "system:coredns"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:coredns"}
subjects: [{kind: ServiceAccount, name: coredns, namespace: kube-system}]
---
# The bootstrap policy's roles for a scheduler.
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "krt:kube-scheduler"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:kube-scheduler"}
subjects: [{kind: ServiceAccount, name: kube-scheduler, namespace: kube-system}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "krt:volume-scheduler"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:volume-scheduler"}
subjects: [{kind: ServiceAccount, name: kube-scheduler, namespace: kube-system}]
---
# kube-router with only its firewall running still starts informers on all of these (and
# reads its own Node: the InternalIP names the local Pods).
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "krt:kube-router"}
rules:
  - apiGroups: [""]
    resources: [pods, namespaces, nodes, services, endpoints]
    verbs: [get, list, watch]
  - apiGroups: [networking.k8s.io]
    resources: [networkpolicies]
    verbs: [get, list, watch]
  - apiGroups: [discovery.k8s.io]
    resources: [endpointslices]
    verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "krt:kube-router"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "krt:kube-router"}
subjects: [{kind: ServiceAccount, name: kube-router, namespace: kube-system}]
EOF
  local name
  for name in coredns kube-scheduler kube-router; do
    if runs "$name"; then sa_kubeconfig "$1" "$name"; fi
  done
}

sa_kubeconfig() { # admin kubeconfig, ServiceAccount in kube-system -> STATE/kubeconfigs/NAME.kubeconfig
  local token server kc="$STATE/kubeconfigs/$2.kubeconfig"
  # A year: the token lives as long as the control plane's signing key does anyway.
  token=$(kubectl_ --kubeconfig "$1" -n kube-system create token "$2" --duration 8760h)
  server=$(kubeconfig_field "$STATE/kubeconfigs/kubelet.kubeconfig" '{.clusters[0].cluster.server}')
  rm -f "$kc"
  kubectl_ --kubeconfig "$kc" config set-cluster node --server "$server" \
    --certificate-authority "$STATE/pki/ca.crt" --embed-certs >/dev/null
  kubectl_ --kubeconfig "$kc" config set-credentials "$2" --token "$token" >/dev/null
  kubectl_ --kubeconfig "$kc" config set-context node --cluster node --user "$2" >/dev/null
  kubectl_ --kubeconfig "$kc" config use-context node >/dev/null
  chmod 600 "$kc"
}

put() { # file: its content from stdin, replaced only when it changes (kube-proxy exits
  # when its configuration file is written, even with the same content)
  cat >"$1.new"
  if cmp -s "$1.new" "$1"; then rm -f "$1.new"; else mv -f "$1.new" "$1"; fi
}

write_configs() {
  mkdir -p "$STATE/containerd" "$STATE/cni/net.d" "$STATE/kubelet" "$STATE/pod-logs" "$STATE/logs" "$STATE/config"

  # containerd 2 (config version 3, migrated by containerd itself): CRI with the overlayfs
  # snapshotter and kube-binaries' runc (1.2 or later: idmapped mounts, so Pods with
  # `hostUsers: false` run; Debian bookworm's 1.1.5 cannot), cgroupfs; nothing under the
  # host's /etc, /opt, /var, /run.
  put "$STATE/config/containerd.toml" <<EOF
version = 3
root = "$STATE/containerd"
state = "$RUN/containerd-state"
imports = []

[grpc]
  address = "$SOCK"

[ttrpc]
  address = "$SOCK.ttrpc"

[debug]
  level = "info"

[plugins]
  [plugins."io.containerd.cri.v1.images"]
    snapshotter = "overlayfs"
    [plugins."io.containerd.cri.v1.images".pinned_images]
      sandbox = "$PAUSE_IMAGE"

  [plugins."io.containerd.cri.v1.runtime"]
    # Pod network namespaces under containerd's state, not the host's /run/netns.
    netns_mounts_under_state_dir = true
    # This machine's root lacks CAP_SYS_RESOURCE: runc cannot lower a container's
    # oom_score_adj below containerd's own (the Pod sandbox asks for -998). Clamp instead.
    restrict_oom_score_adj = true
    enable_criu = false
    [plugins."io.containerd.cri.v1.runtime".containerd]
      default_runtime_name = "runc"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
          BinaryName = "$RUNC"
          Root = "$RUN/runc"
          SystemdCgroup = false
    [plugins."io.containerd.cri.v1.runtime".cni]
      bin_dirs = ["$CNI_BIN"]
      conf_dir = "$STATE/cni/net.d"

  [plugins."io.containerd.grpc.v1.cri"]
    # exec, attach and port-forward: the kubelet proxies to this, inside the namespace.
    stream_server_address = "127.0.0.1"
    stream_server_port = "0"

  [plugins."io.containerd.internal.v1.opt"]
    path = "$STATE/containerd-opt"

  [plugins."io.containerd.nri.v1.nri"]
    disable = true

  [plugins."io.containerd.shim.v1.manager"]
    # The shims' sockets: by default under the host's /run/containerd.
    socket_dir = "$RUN/shims"
EOF

  # The Pods' network: one bridge, addresses from host-local; containerd adds loopback.
  # IP allocations live under /run: a reboot (stop) forgets them, as it forgets the Pods.
  put "$STATE/cni/net.d/10-krt.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "krt",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$BRIDGE",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{ "subnet": "$POD_CIDR", "gateway": "$POD_GATEWAY" }]],
        "routes": [{ "dst": "0.0.0.0/0" }],
        "dataDir": "$RUN/cni-ipam"
      }
    },
    { "type": "portmap", "capabilities": { "portMappings": true } }
  ]
}
EOF

  # Every Pod's upstream resolver, and the node's: CoreDNS, which answers nothing outside
  # the cluster. No search domains: nothing of the host leaks in.
  printf 'nameserver %s\n' "$CLUSTER_DNS" | put "$STATE/config/resolv.conf"

  # cgroup v1 (failCgroupV1: false) with cgroupfs. Image GC and disk eviction are as good
  # as off: the images are imported, never pulled (a collected image would not come back),
  # and the disk is shared with everything else on this machine.
  put "$STATE/config/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $NODE_IP
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $STATE/pki/ca.crt}
authorization:
  mode: Webhook
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: unix://$SOCK
clusterDNS: [$CLUSTER_DNS]
clusterDomain: $CLUSTER_DOMAIN
resolvConf: $STATE/config/resolv.conf
podCIDR: $POD_CIDR
podLogsDir: $STATE/pod-logs
${CGROUP_ROOT:+cgroupRoot: $CGROUP_ROOT}
rotateCertificates: false
serverTLSBootstrap: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: 100Mi
  nodefs.available: 1%
  nodefs.inodesFree: 1%
  imagefs.available: 1%
EOF

  # iptables mode. masqueradeAll: a Pod reaching a Service backed by a Pod on the same
  # bridge gets an answer from the Service address. conntrack maxPerCore 0: leave the
  # host-wide conntrack table size alone.
  put "$STATE/config/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: $STATE/kubeconfigs/kube-proxy.kubeconfig
hostnameOverride: $NODE_NAME
mode: iptables
clusterCIDR: $POD_CIDR
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
iptables:
  masqueradeAll: true
conntrack:
  maxPerCore: 0
nodePortAddresses: [primary]
EOF

  # One scheduler, no leader election, nothing served (no port, no delegated authn).
  if runs kube-scheduler; then put "$STATE/config/kube-scheduler.yaml"; else cat >/dev/null; fi <<EOF
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: $STATE/kubeconfigs/kube-scheduler.kubeconfig
leaderElection:
  leaderElect: false
EOF

  # kube-router: the network policy controller only (kube-proxy serves Services, the bridge
  # plugin the Pods' network; no CNI configuration of its own). Its iptables chains filter
  # the traffic to and from this node's Pods, the ipsets hold the Pods a policy selects.
  # One flag a line (in the fingerprint: a changed flag restarts the node). Nothing served:
  # no health or metrics port.
  put "$STATE/config/kube-router.flags" <<EOF
--kubeconfig=$STATE/kubeconfigs/kube-router.kubeconfig
--hostname-override=$NODE_NAME
--run-firewall=true
--run-router=false
--run-service-proxy=false
--enable-cni=false
--enable-ipv4=true
--enable-ipv6=false
--service-cluster-ip-range=$SERVICE_CIDR
--health-port=0
--metrics-port=0
--v=1
EOF

  # The cluster's names only; any other name is REFUSED (no server block for it), nothing
  # is forwarded anywhere.
  if runs coredns; then put "$STATE/config/Corefile"; else cat >/dev/null; fi <<EOF
$CLUSTER_DOMAIN:53 in-addr.arpa:53 ip6.arpa:53 {
    bind $CLUSTER_DNS
    errors
    kubernetes $CLUSTER_DOMAIN in-addr.arpa ip6.arpa {
        kubeconfig $STATE/kubeconfigs/coredns.kubeconfig node
        pods insecure
    }
    cache 30
    loadbalance
}
EOF
}

# ---------------------------------------------------------------- start

wait_for() { # what, seconds, command...: poll every second, bounded
  local what=$1 deadline=$(($(date +%s) + $2))
  shift 2
  until "$@" >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$deadline" ] || return 1
    sleep 1
  done
  log "$what"
}

alive_or_die() { # name: fail with its log when it exited
  pid_of "$1" >/dev/null || die "$1 exited; the end of $STATE/logs/$1.log:
$(tail -n 30 "$STATE/logs/$1.log" 2>/dev/null)"
}

ctr_() { "$BIN/ctr" --address "$SOCK" --namespace k8s.io "$@"; }

ensure_pause_image() {
  [ -z "$(ctr_ images list -q "name==$PAUSE_IMAGE" 2>/dev/null)" ] || return 0
  if [ "$NODE_INDEX" != 1 ] && [ -f "$IMAGES/pause.tar" ]; then
    import_archive "$IMAGES/pause.tar" # the first node's, built once
  else
    KRT_REAL_NODE_DIR=$BASE_STATE KRT_CONTAINERD_SOCKET=$SOCK KRT_CTR=$BIN/ctr "$here/pause/build.sh" >/dev/null
  fi
  [ -n "$(ctr_ images list -q "name==$PAUSE_IMAGE" 2>/dev/null)" ] || die "the pause image is not in containerd after pause/build.sh"
}

node_ready() { # since (UTC, RFC 3339; may be empty): Ready, as posted by the kubelet since then
  # (after a restart the Node still shows the old kubelet's Ready for up to 40 s)
  local ready heartbeat
  read -r ready heartbeat < <(kubectl_ --kubeconfig "$STATE/kubeconfigs/kubelet.kubeconfig" get node "$NODE_NAME" \
    -o 'jsonpath={range .status.conditions[?(@.type=="Ready")]}{.status} {.lastHeartbeatTime}{end}' 2>/dev/null) || true
  [ "$ready" = True ] && ! [[ "$heartbeat" < "${1-}" ]]
}

start_node() {
  [ -e "$NETNS" ] || die "no network namespace $NS: run tools/real-node/net.sh up first"
  [ -f "$STATE/config/kubelet.yaml" ] || die "no node state in $STATE: run node.sh up CLUSTER_DIR first"
  mkdir -p "$RUN/containerd"
  ensure_mntns
  ensure_cgroup_root

  start_process containerd --config "$STATE/config/containerd.toml"
  wait_for "containerd: serving" 30 ctr_ version || { alive_or_die containerd; die "containerd does not answer on $SOCK after 30s"; }
  ensure_pause_image
  # KRT_IMPORT_IMAGES=1 (run.sh, a second node): the images before the kubelet, so that no
  # Pod lands here before they are.
  [ "${KRT_IMPORT_IMAGES:-0}" != 1 ] || import_images

  local since
  since=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  start_process kubelet --config "$STATE/config/kubelet.yaml" \
    --kubeconfig "$STATE/kubeconfigs/kubelet.kubeconfig" \
    --root-dir "$STATE/kubelet" --cert-dir "$STATE/kubelet/pki" \
    --hostname-override "$NODE_NAME" --node-ip "$NODE_IP" --v=2
  start_process kube-proxy --config "$STATE/config/kube-proxy.yaml" --v=2
  if runs coredns; then start_process coredns -conf "$STATE/config/Corefile"; fi
  if runs kube-scheduler; then start_process kube-scheduler --config "$STATE/config/kube-scheduler.yaml" --secure-port 0; fi

  local deadline=$(($(date +%s) + 120)) name
  until node_ready "$since"; do
    for name in "${PROCESSES[@]}"; do [ "$name" = kube-router ] || alive_or_die "$name"; done
    [ "$(date +%s)" -lt "$deadline" ] || die "node $NODE_NAME not Ready after 120s; the end of $STATE/logs/kubelet.log:
$(tail -n 30 "$STATE/logs/kubelet.log")"
    sleep 1
  done
  start_policy_controller
  fingerprint >"$RUN/fingerprint"
  log "node $NODE_NAME Ready"
}

# kube-router once the Node exists (it reads the Node's InternalIP at its start and exits
# without it), then until its chains are in place: after that every Pod a NetworkPolicy
# selects gets its own chain.
start_policy_controller() {
  local flags
  mapfile -t flags <"$STATE/config/kube-router.flags"
  start_process kube-router "${flags[@]}"
  wait_for "kube-router: network policy chains in place" 60 kube_router_ready || {
    alive_or_die kube-router
    die "kube-router has no KUBE-ROUTER-FORWARD jump in FORWARD after 60s; the end of $STATE/logs/kube-router.log:
$(tail -n 30 "$STATE/logs/kube-router.log")"
  }
}

kube_router_ready() { # its top-level chains exist and FORWARD jumps to them
  pid_of kube-router >/dev/null && in_node iptables -t filter -S FORWARD | grep -q -- '-j KUBE-ROUTER-FORWARD'
}

save_host_sysctls() { # once, before the first kubelet start of any node
  [ -f "$HOST_SYSCTLS_FILE" ] && return 0
  local name
  mkdir -p "$BASE_STATE"
  for name in "${HOST_SYSCTLS[@]}"; do echo "$name=$(sysctl -n "$name")"; done >"$HOST_SYSCTLS_FILE.tmp"
  mv "$HOST_SYSCTLS_FILE.tmp" "$HOST_SYSCTLS_FILE"
}

import_archive() { # docker archive -> this node's containerd (k8s.io), its output only on a failure
  local out
  out=$(timeout 600 "$BIN/ctr" --address "$SOCK" --namespace k8s.io images import "$1" 2>&1) ||
    die "importing $1 into $SOCK failed: $out"
}

import_images() { # every archive of the shared images dir (images.sh's and the pause image)
  [ -S "$SOCK" ] || die "no containerd at $SOCK: node.sh up first"
  local archive count=0
  for archive in "$IMAGES"/*.tar; do
    [ -f "$archive" ] || continue
    import_archive "$archive"
    count=$((count + 1))
  done
  [ "$count" -gt 0 ] || die "no image archives in $IMAGES (images.sh TAG first)"
  log "$count image archives of $IMAGES imported into $NODE_NAME"
}

all_running() {
  local name
  for name in "${PROCESSES[@]}"; do pid_of "$name" >/dev/null || return 1; done
}

up() {
  local cluster_dir=$1
  [ -d "$cluster_dir" ] || die "no cluster directory $cluster_dir"
  [ -e "$NETNS" ] || die "no network namespace $NS: run tools/real-node/net.sh up first"
  ensure_packages
  mkdir -p "$STATE"
  # New credentials (and ServiceAccount tokens) only for another control plane.
  if ! cmp -s "$cluster_dir/$NODE_KUBECONFIG" "$STATE/kubeconfigs/kubelet.kubeconfig"; then copy_credentials "$cluster_dir"; fi
  write_configs
  # Already running with exactly this configuration: nothing to do.
  if all_running && [ "$(fingerprint)" = "$(cat "$RUN/fingerprint" 2>/dev/null)" ]; then
    node_ready || log "warning: node $NODE_NAME is up but not Ready"
    log "node already up"
    return 0
  fi
  stop_node
  save_host_sysctls
  start_node
}

fingerprint() { cat "$STATE"/config/* "$STATE"/cni/net.d/* "$STATE"/kubeconfigs/* | sha256sum; }

[ "$(id -u)" = 0 ] || { echo "node.sh: must run as root" >&2; exit 1; }
usage() { echo "usage: [KRT_NODE_INDEX=N] $0 up [CLUSTER_DIR] | stop | start | down | import-images   (CLUSTER_DIR default: \$KRT_CLUSTER_DIR)" >&2; exit 2; }
case "${1-}" in up) [ $# -le 2 ] || usage ;; stop | start | down | import-images) [ $# -eq 1 ] || usage ;; *) usage ;; esac

# Binaries: kubelet, containerd ... (cached after the first build; this verifies them), or
# the directory KRT_KUBE_BIN_DIR names (run.sh's, built and verified once per run).
BIN=${KRT_KUBE_BIN_DIR:-$("$repo/tools/kube-binaries/build.sh" --node)}
# containerd's runc runtime runs this one (its BinaryName); the symlink resolved, so that a
# new runc pin changes the configuration's fingerprint and restarts the node.
RUNC=$(readlink -f "$BIN/runc")
[ -x "$RUNC" ] || die "no runc in $BIN: tools/kube-binaries/build.sh --node builds it"

case $1 in
  up)
    cluster_dir=${2:-${KRT_CLUSTER_DIR:-}}
    [ -n "$cluster_dir" ] || usage
    [ -d "$cluster_dir" ] || die "no cluster directory $cluster_dir"
    up "$(cd "$cluster_dir" && pwd)"
    ;;
  start) start_node ;;
  import-images) import_images ;;
  stop) stop_node; log "node stopped (state kept in $STATE)" ;;
  down)
    stop_node
    clean_netns
    restore_host
    # The node's files only: the state dir is shared (images.sh's archives and logs, the
    # end-to-end run's control-plane.pid, the other nodes' state dirs).
    for entry in "${NODE_STATE[@]}"; do rm -rf "${STATE:?}/$entry"; done
    rmdir "$STATE/images" "$STATE/logs" "$STATE" 2>/dev/null || true
    log "node $NODE_NAME down"
    ;;
esac
