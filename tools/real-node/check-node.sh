#!/usr/bin/env bash
# Proves that the node (node.sh up) works, in a namespace of its own that it deletes again:
#   - a Pod of the pause image runs with an address from 10.204.0.0/24;
#   - kubectl logs, exec and port-forward work (kube-apiserver -> kubelet);
#   - kube-proxy's rules send a ClusterIP to its Pod: a Pod asks another Pod through a
#     Service's ClusterIP on the same bridge (two CoreDNS Pods, one forwarding to the other
#     through the Service), and the host reaches the `kubernetes` Service;
#   - the node's CoreDNS answers the cluster's names and refuses every other, and a Pod
#     reaches it through its resolv.conf;
#   - a Pod reaches kube-apiserver through the `kubernetes` Service with its ServiceAccount
#     token (CoreDNS's kubernetes plugin, in-cluster configuration);
#   - a Pod with user namespaces (`hostUsers: false`, kube-binaries' runc; userns-check.c in
#     an image FROM scratch) runs as uid 0 inside and as a uid of the kubelet's range
#     (65536 and above) on the host; its emptyDir (disk), emptyDir (medium Memory, tmpfs),
#     ConfigMap and ServiceAccount token volumes are idmapped mounts: written and read as
#     uid 0 inside;
#   - with --restart: after node.sh stop and start the node is Ready, the Pod runs again.
#
# Usage: tools/real-node/check-node.sh CLUSTER_DIR [--restart]   (root; progress on stderr)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
if [ $# -lt 1 ] || [ ! -d "$1" ]; then echo "usage: $0 CLUSTER_DIR [--restart]" >&2; exit 2; fi
cluster_dir=$(cd "$1" && pwd)
restart=false
[ "${2-}" = --restart ] && restart=true

NS=krt-node SOCK=/run/krt-real-node/containerd/containerd.sock CHECK_NS=krt-node-check
SERVICE_IP=10.255.0.53 # fixed, so that the forwarding Pod's Corefile can name it
started=$(date +%s)
log() { printf '[real-node] check: %s (%ss)\n' "$*" "$(($(date +%s) - started))" >&2; }
fail() { log "FAILED: $*"; exit 1; }

BIN=${KRT_KUBE_BIN_DIR:-$("$repo/tools/kube-binaries/build.sh" --node 2>/dev/null)}
kube_cache=$(mktemp -d) # kubectl's discovery cache, not in ~/.kube
k() { "$BIN/kubectl" --cache-dir "$kube_cache" --kubeconfig "$cluster_dir/admin.kubeconfig" "$@"; }
dns() { ip netns exec "$NS" python3 "$here/dns-query.py" "$@" 2>/dev/null || echo "no answer"; }

wait_until() { # what, seconds, command...: poll every second, bounded
  local what=$1 seconds=$2 deadline=$(($(date +%s) + $2))
  shift 2
  until "$@" >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$deadline" ] || fail "$what: not within ${seconds}s"
    sleep 1
  done
  log "$what"
}

# A Pod that answers DNS needs a server in an image: CoreDNS's static binary, FROM scratch.
CHECK_IMAGE=localhost/kruntimes/check-coredns:$("$BIN/coredns" -version | sed -n 's/^CoreDNS-//p')
ensure_check_image() {
  local ctr=("$BIN/ctr" --address "$SOCK" --namespace k8s.io)
  [ -z "$("${ctr[@]}" images list -q "name==$CHECK_IMAGE" 2>/dev/null)" ] || return 0
  local work container
  work=$(mktemp -d)
  container=$(buildah from scratch)
  buildah copy --quiet "$container" "$(readlink -f "$BIN/coredns")" /coredns >/dev/null
  buildah config --entrypoint '["/coredns"]' "$container"
  buildah commit --quiet --format oci --rm "$container" "$CHECK_IMAGE" >/dev/null
  buildah push --quiet "$CHECK_IMAGE" "oci-archive:$work/image.tar:$CHECK_IMAGE" >/dev/null
  "${ctr[@]}" images import --platform linux/amd64 "$work/image.tar" >/dev/null 2>&1
  rm -rf "$work"
  log "image $CHECK_IMAGE imported"
}

# The user namespace probe (userns-check.c), tagged by its source: a changed probe is rebuilt.
USERNS_IMAGE=localhost/kruntimes/check-userns:$(sha256sum "$here/userns-check.c" | cut -c1-12)
ensure_userns_image() {
  local ctr=("$BIN/ctr" --address "$SOCK" --namespace k8s.io)
  [ -z "$("${ctr[@]}" images list -q "name==$USERNS_IMAGE" 2>/dev/null)" ] || return 0
  local work container
  work=$(mktemp -d)
  gcc -Wall -Wextra -Werror -Os -static -s -o "$work/userns-check" "$here/userns-check.c"
  container=$(buildah from scratch)
  buildah copy --quiet "$container" "$work/userns-check" /userns-check >/dev/null
  buildah config --entrypoint '["/userns-check"]' --cmd serve "$container"
  buildah commit --quiet --format oci --rm "$container" "$USERNS_IMAGE" >/dev/null
  buildah push --quiet "$USERNS_IMAGE" "oci-archive:$work/image.tar:$USERNS_IMAGE" >/dev/null
  "${ctr[@]}" images import --platform linux/amd64 "$work/image.tar" >/dev/null 2>&1
  rm -rf "$work"
  log "image $USERNS_IMAGE imported"
}

cleanup() {
  k delete namespace "$CHECK_NS" --ignore-not-found --wait=false >/dev/null 2>&1 || true
  k delete clusterrolebinding "$CHECK_NS" --ignore-not-found >/dev/null 2>&1 || true
  rm -rf "$kube_cache"
}
trap cleanup EXIT

node_ready() { [ "$(k get node krt-node -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}')" = True ]; }
wait_until "node Ready" 60 node_ready
ensure_check_image
ensure_userns_image
# A namespace of an earlier, interrupted run must be gone before this one is made.
k delete namespace "$CHECK_NS" --ignore-not-found --timeout=60s >/dev/null
k apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Namespace
metadata: {name: $CHECK_NS}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: corefiles, namespace: $CHECK_NS}
data:
  server: |
    .:1053 {
        whoami
    }
  forwarder: |
    cluster.local:1053 {
        forward . /etc/resolv.conf
    }
    .:1053 {
        forward . $SERVICE_IP:53
    }
  incluster: |
    .:1053 {
        kubernetes cluster.local
    }
---
# What the node's CoreDNS may read, for the in-cluster one (deleted again by cleanup).
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: $CHECK_NS}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:coredns"}
subjects: [{kind: ServiceAccount, name: default, namespace: $CHECK_NS}]
---
apiVersion: v1
kind: Service
metadata: {name: dns-server, namespace: $CHECK_NS}
spec:
  clusterIP: $SERVICE_IP
  selector: {app: dns-server}
  ports:
    - {name: udp, port: 53, targetPort: 1053, protocol: UDP}
    - {name: tcp, port: 53, targetPort: 1053, protocol: TCP}
EOF
pause_pod() { # name, args (JSON), restartPolicy
  k apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $1, namespace: $CHECK_NS, labels: {app: $1}}
spec:
  terminationGracePeriodSeconds: 1
  restartPolicy: $3
  containers:
    - {name: main, image: registry.k8s.io/pause:3.10.1, imagePullPolicy: Never, args: $2}
EOF
}
pause_pod pause '[]' Always
pause_pod version '["-v"]' Never # prints its version and ends: its log
corefile_pod() { # name, ConfigMap key
  k apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $1, namespace: $CHECK_NS, labels: {app: $1}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
    - name: main
      image: "$CHECK_IMAGE"
      imagePullPolicy: Never
      args: ["-conf", "/etc/coredns/Corefile"]
      volumeMounts: [{name: corefile, mountPath: /etc/coredns}]
  volumes:
    - name: corefile
      configMap: {name: corefiles, items: [{key: $2, path: Corefile}]}
EOF
}
# uid 0 in its own user namespace: no securityContext but hostUsers (the image's user is 0).
k apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: userns, namespace: $CHECK_NS, labels: {app: userns}}
spec:
  hostUsers: false
  terminationGracePeriodSeconds: 1
  containers:
    - name: main
      image: "$USERNS_IMAGE"
      imagePullPolicy: Never
      volumeMounts:
        - {name: scratch, mountPath: /scratch}
        - {name: memory, mountPath: /memory}
        - {name: config, mountPath: /config}
  volumes:
    - {name: scratch, emptyDir: {}}
    - {name: memory, emptyDir: {medium: Memory, sizeLimit: 1Mi}}
    - {name: config, configMap: {name: corefiles, items: [{key: server, path: Corefile}]}}
EOF
corefile_pod dns-server server
corefile_pod dns-forwarder forwarder
corefile_pod dns-incluster incluster

phase() { [ "$(k -n "$CHECK_NS" get pod "$1" -o 'jsonpath={.status.phase}')" = "$2" ]; }
ready() { [ "$(k -n "$CHECK_NS" get pod "$1" -o 'jsonpath={.status.containerStatuses[0].ready}')" = true ]; }
PODS=(pause dns-server dns-forwarder dns-incluster userns)
all_running() { local p; for p in "${PODS[@]}"; do phase "$p" Running || return 1; done; }
wait_until "Pods running" 90 all_running
wait_until "Pod version completed" 60 phase version Succeeded

ip_of() { k -n "$CHECK_NS" get pod "$1" -o 'jsonpath={.status.podIP}'; }
pause_ip=$(ip_of pause)
case $pause_ip in 10.204.0.*) log "pause Pod Running at $pause_ip" ;; *) fail "pause Pod address '$pause_ip' is not in 10.204.0.0/24" ;; esac

out=$(k -n "$CHECK_NS" logs version || true)
[ "$out" = "kruntimes pause 3.10.1" ] || fail "kubectl logs printed '$out'"
log "kubectl logs: $out"
out=$(k -n "$CHECK_NS" exec pause -- /pause -v || true)
[ "$out" = "kruntimes pause 3.10.1" ] || fail "kubectl exec printed '$out'"
log "kubectl exec: $out"
port=$((20000 + RANDOM % 10000))
k -n "$CHECK_NS" port-forward pod/dns-server "$port:1053" >/dev/null 2>&1 &
forward=$!
wait_until "kubectl port-forward listening on $port" 20 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port"
out=$(python3 "$here/dns-query.py" "127.0.0.1:$port" check.example --tcp 2>&1 || true)
kill "$forward" 2>/dev/null || true
case $out in NOERROR*) log "kubectl port-forward (DNS over TCP to the Pod): $out" ;; *) fail "through port-forward: $out" ;; esac

# The user namespace: inside (the probe's log and a report through kubectl exec) and on the
# host (the container's process in containerd's task list: /proc/PID/status and uid_map).
fstype_of() { awk -v m="$1" '$5 == m {for (i = 7; $i != "-"; i++); print $(i + 1)}'; } # mountinfo on stdin
check_userns() {
  local out uid_map host_uid pid cid status mountinfo m
  [ "$(k -n "$CHECK_NS" get pod userns -o 'jsonpath={.spec.hostUsers}')" = false ] || fail "userns Pod: spec.hostUsers is not false"
  out=$(k -n "$CHECK_NS" logs userns)
  grep -qx 'ids uid=0 euid=0 gid=0 egid=0' <<<"$out" || fail "userns Pod: not uid 0 inside: $out"
  uid_map=$(sed -n 's/^uid_map //p' <<<"$out")
  read -r _ host_uid _ <<<"$uid_map"
  [[ $uid_map =~ ^0\ [0-9]+\ 65536$ ]] && [ "$host_uid" -ge 65536 ] ||
    fail "userns Pod: /proc/self/uid_map inside is '$uid_map', expected '0 <65536 or more> 65536'"
  [ "$(sed -n 's/^gid_map //p' <<<"$out")" = "$uid_map" ] || fail "userns Pod: gid_map differs from uid_map: $out"
  log "userns Pod inside: uid 0, /proc/self/uid_map '$uid_map'"
  cid=$(k -n "$CHECK_NS" get pod userns -o 'jsonpath={.status.containerStatuses[0].containerID}')
  cid=${cid#containerd://}
  pid=$("$BIN/ctr" --address "$SOCK" --namespace k8s.io tasks list 2>/dev/null | awk -v id="$cid" '$1 == id {print $2}')
  [ -n "$pid" ] && [ -r "/proc/$pid/status" ] || fail "userns Pod: no host process for container $cid"
  status=$(grep -E '^(Uid|Gid):' "/proc/$pid/status" | tr -s '\t ' ' ')
  [ "$status" = "Uid: $host_uid $host_uid $host_uid $host_uid"$'\n'"Gid: $host_uid $host_uid $host_uid $host_uid" ] ||
    fail "userns Pod: host pid $pid has '$status', expected uid and gid $host_uid"
  [ "$(tr -s ' ' <"/proc/$pid/uid_map" | sed 's/^ //')" = "$uid_map" ] || fail "userns Pod: the host's /proc/$pid/uid_map: $(cat "/proc/$pid/uid_map")"
  log "userns Pod on the host: pid $pid, $(tr '\n' ' ' <<<"$status")(uid 0 inside is $host_uid outside)"
  # Every volume an idmapped mount (the kernel's mountinfo says so), on the filesystem it
  # lives on: the kubelet's root dir (ext4 here) for emptyDir, ConfigMap and the projected
  # token, tmpfs for medium Memory.
  mountinfo=$(cat "/proc/$pid/mountinfo")
  for m in /scratch /memory /config /var/run/secrets/kubernetes.io/serviceaccount; do
    out=$(awk -v m="$m" '$5 == m' <<<"$mountinfo")
    [ -n "$out" ] || fail "userns Pod: no mount at $m: $mountinfo"
    grep -qw 'idmapped' <<<"$out" || fail "userns Pod: $m is not an idmapped mount: $out"
    log "userns Pod: $m idmapped, $(fstype_of "$m" <<<"$mountinfo")"
  done
  [ "$(fstype_of /memory <<<"$mountinfo")" = tmpfs ] || fail "userns Pod: /memory (emptyDir medium Memory) is not tmpfs"
  out=$(k -n "$CHECK_NS" exec userns -- /userns-check report /scratch /memory /config/Corefile \
    /var/run/secrets/kubernetes.io/serviceaccount/token)
  for m in "dir /scratch wrote uid=0 gid=0" "dir /memory wrote uid=0 gid=0" \
    "file /config/Corefile uid=0 gid=0 read=ok" "file /var/run/secrets/kubernetes.io/serviceaccount/token uid=0 gid=0 read=ok"; do
    grep -qxF "$m" <<<"$out" || fail "userns Pod: expected '$m' in: $out"
  done
  log "userns Pod: emptyDir, emptyDir (Memory), ConfigMap and the token written or read as uid 0 inside"
}
check_userns

server_ip=$(ip_of dns-server)
rules=$(ip netns exec "$NS" iptables-save -t nat)
grep -q -- "-A KUBE-SERVICES -d $SERVICE_IP/32 .* -j KUBE-SVC-" <<<"$rules" || fail "no KUBE-SVC rule for $SERVICE_IP"
grep -q -- "-j DNAT --to-destination $server_ip:1053" <<<"$rules" || fail "no DNAT rule to $server_ip:1053"
log "kube-proxy: KUBE-SVC chain for $SERVICE_IP, DNAT to $server_ip:1053"

expect_dns() { # what, server, name, expected answer (a glob): retried for 15 s (a Pod's
  # CoreDNS serves once its first sync with the API is done, a Service once its rules are)
  local what=$1 out attempt
  for attempt in $(seq 1 15); do
    out=$(dns "$2" "$3")
    # shellcheck disable=SC2053 # $4 is a glob on purpose
    if [[ $out == $4 ]]; then log "$what: $3 -> $out"; return 0; fi
    [ "$attempt" -eq 15 ] || sleep 1
  done
  fail "$what: $3 -> $out, expected $4"
}

check_dns() {
  expect_dns "node CoreDNS" 10.203.0.2 kubernetes.default.svc.cluster.local "NOERROR 10.255.0.1"
  expect_dns "node CoreDNS" 10.203.0.2 "dns-server.$CHECK_NS.svc.cluster.local" "NOERROR $SERVICE_IP"
  expect_dns "node CoreDNS, no name outside the cluster" 10.203.0.2 example.com REFUSED
  local forwarder_ip
  forwarder_ip=$(ip_of dns-forwarder)
  # Pod -> ClusterIP -> Pod on the same bridge: the forwarder's answer comes from the server.
  expect_dns "Pod -> ClusterIP $SERVICE_IP -> Pod" "$forwarder_ip:1053" check.example "NOERROR*"
  expect_dns "Pod -> its resolv.conf -> node CoreDNS" "$forwarder_ip:1053" kubernetes.default.svc.cluster.local "NOERROR 10.255.0.1"
  expect_dns "Pod -> kubernetes Service -> kube-apiserver (in-cluster CoreDNS, ServiceAccount token)" \
    "$(ip_of dns-incluster):1053" kubernetes.default.svc.cluster.local "NOERROR 10.255.0.1"
  curl -sk -m 5 https://10.255.0.1/livez | grep -qx ok || fail "host -> the kubernetes Service (10.255.0.1:443)"
  log "host -> ClusterIP 10.255.0.1:443 -> kube-apiserver: ok"
}
check_dns

if $restart; then
  before=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  "$here/node.sh" stop
  "$here/node.sh" start
  started_after() { # the Pod's container (re)started after the node restart, and is ready
    local at
    at=$(k -n "$CHECK_NS" get pod "$1" -o 'jsonpath={.status.containerStatuses[0].state.running.startedAt}')
    [ -n "$at" ] && ! [[ "$at" < "$before" ]] && ready "$1"
  }
  for p in "${PODS[@]}"; do wait_until "$p running again after the restart" 120 started_after "$p"; done
  check_dns
  check_userns
fi
log "all passed"
