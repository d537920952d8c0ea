#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# The chart and the images on a real node, as a user would run them (issue 19; README.md):
#   1. binaries: the control plane, kubelet, kube-proxy, kubectl, containerd, coredns,
#      kube-router, helm,
#   2. the node's network namespace and veth pair, then the control plane on the veth's host end,
#   3. the node (containerd, kubelet, kube-proxy, kube-router's network policy controller,
#      CoreDNS in the namespace), Ready,
#   4. every image built here (debootstrap + buildah) and imported into containerd,
#   5.-8. the steps of e2e/kind/run.sh (e2e/cluster-steps.sh): certificates, `helm install`
#      with the CRDs and the admission policies (checked: spec.creator stamped, a user without
#      `use` refused at create, granted it admitted), a Runtime, a function Run and a task Run, an invoke through the
#      gateway Service (port-forward, and its ClusterIP through the veth), every exported
#      metric scraped,
#   9.-13. what only a real node shows: the chart's NetworkPolicies enforced, each service's
#      user and read-only root, Runtime Pods in user namespaces (hostUsers: false) and the
#      wall around their Runs attacked from user code (10b), runtimed reloading a rotated certificate, graceful
#      termination, a node restart,
#   14. the chart's liveness and readiness probes of the scheduler, stale-recovery and the
#      controller-manager (/healthz, /readyz on the health port) answering on the node,
#   15. a second node krt-node2 (its own namespace, veth, Pod CIDR, state; drain.sh), Pod to
#      Pod, Pod to Service and DNS across the nodes, then `kubectl drain krt-node`: the
#      PodDisruptionBudgets hold, tasks that fit the drain window Succeed, function Runs move
#      to krt-node2 without spending an attempt and answer again through the gateway,
#   16. the Runs deleted and `helm uninstall`, checked to leave nothing of the release.
# Needs root, go, openssl, curl, python3 and Debian's containernetworking-plugins, iptables,
# ipset, buildah, debootstrap and libseccomp-dev (installed with apt-get when missing). The
# node and images.sh's checks run kube-binaries' runc (first on PATH below), not Debian's.
# Usage: tools/real-node/run.sh      Env: TAG (default real-node), KEEP_NODE=1 keeps
# everything running at the end (tools/real-node/run.sh down removes it).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
here="$root/tools/real-node"
tag=${TAG:-real-node}
system=kruntimes-system
demo=kruntimes-demo
state=${KRT_REAL_NODE_DIR:-/var/lib/krt-real-node}
api_address=10.203.0.1
api_port=6443
nodes_cidr=10.203.0.0/24 # node-env.sh: every node's veth pair
work=$(mktemp -d)
pids=()
KRT_E2E_NAME=real-node
# shellcheck source=../../e2e/cluster-steps.sh
. "$root/e2e/cluster-steps.sh"
# shellcheck source=checks.sh
. "$here/checks.sh"
# shellcheck source=drain.sh
. "$here/drain.sh"
export PATH="$root/node_modules/.bin:$PATH"

teardown() {
  # The second node first: the last node down puts the host's sysctls back.
  KRT_NODE_INDEX=2 "$here/node.sh" down || true
  "$here/node.sh" down || true
  if [ -f "$state/control-plane.pid" ]; then
    local pid
    pid=$(cat "$state/control-plane.pid")
    kill "$pid" 2>/dev/null || true
    # The control plane stops etcd and kube-apiserver and removes their state on SIGTERM.
    for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    rm -f "$state/control-plane.pid"
  fi
  KRT_NODE_INDEX=2 "$here/net.sh" down || true
  "$here/net.sh" down || true
}

if [ "${1:-}" = down ]; then teardown; exit 0; fi
[ "$#" -eq 0 ] || { echo "usage: tools/real-node/run.sh [down]" >&2; exit 2; }
[ "$(id -u)" = 0 ] || fail "run as root: the node needs a network namespace, mounts and cgroups"

cleanup() {
  local status=$?
  krt_finish "$status"
  if [ "$status" -ne 0 ]; then
    for log in logs/kubelet logs/containerd logs/kube-proxy logs/kube-router logs/coredns node2/logs/kubelet node2/logs/containerd node2/logs/kube-router; do
      [ -f "$state/$log.log" ] || continue
      echo "--- $state/$log.log (tail)"
      tail -n 30 "$state/$log.log" 2>/dev/null || true
    done
  fi
  if [ "${KEEP_NODE:-0}" = 1 ]; then
    krt_log "kept running: KUBECONFIG=$work/cluster/admin.kubeconfig; tools/real-node/run.sh down removes it"
  else
    teardown
    rm -rf "$work"
  fi
  exit "$status"
}
trap cleanup EXIT

krt_log "1. binaries"
for tool in go openssl curl python3; do command -v "$tool" >/dev/null || fail "$tool is not installed"; done
bin=$("$root/tools/kube-binaries/build.sh" --node)
# node.sh and the control plane take these binaries as they are instead of verifying them again.
export KRT_KUBE_BIN_DIR=$bin PATH="$bin:$PATH"
helm=$("$root/tools/chart-checks/scripts/build-helm.sh")

krt_log "2. network namespace and control plane"
teardown # what an interrupted earlier run left
"$here/net.sh" up
mkdir -p "$state"
# --no-crds: the chart installs them, as it does for a user.
# Two kubelets join: krt-node now, krt-node2 for the drain (step 15).
node "$root/tools/local-cluster/src/main.ts" --dir "$work/cluster" --no-crds \
  --bind-address "$api_address" --secure-port "$api_port" --node krt-node --node krt-node2 >"$work/control-plane.log" 2>&1 &
echo $! >"$state/control-plane.pid"
for _ in $(seq 1 240); do [ -f "$work/cluster/cluster.json" ] && break; kill -0 "$(cat "$state/control-plane.pid")" || break; sleep 0.5; done
[ -f "$work/cluster/cluster.json" ] || { cat "$work/control-plane.log" >&2; fail "the control plane did not start"; }
export KUBECONFIG="$work/cluster/admin.kubeconfig"

krt_log "3. the node"
KRT_CLUSTER_DIR="$work/cluster" "$here/node.sh" up
kubectl wait --for=condition=Ready node/krt-node --timeout=180s

krt_log "4. images (tag $tag)"
"$here/images.sh" "$tag"

krt_log "5. certificates and the chart"
# kube-router enforces the chart's NetworkPolicies (README.md). The kubelet's probes of
# runtimed's health port come from the node's own address, which kube-router lets reach the
# node's Pods before any policy: runtimes.healthProbeFrom stays empty.
#
# The gateway admits Pods of gateway.networkPolicy.allowedNamespaces; step 7 also calls its
# ClusterIP from this host through the veth (source 10.203.0.1, no Pod of any namespace), a
# caller outside the Pod network like a load balancer: gateway.networkPolicy.allowedFrom.
# The nodes' network, not the host's address alone: krt-node's kube-proxy masquerades such a
# call to a gateway Pod on krt-node2 (step 15) with its own address, 10.203.0.2.
krt_install_chart --set global.image.pullPolicy=Never \
  --set-json "gateway.networkPolicy.allowedFrom=[{\"ipBlock\":{\"cidr\":\"$nodes_cidr\"}}]"

krt_log "6. a python Runtime, a function Run and a task Run"
krt_create_demo

krt_log "6b. the chart's admission policies: spec.creator stamped, a user without use refused at create"
rn_check_admission

krt_log "7. invoke through the gateway Service"
krt_invoke_port_forward 18443 real-node-port-forward
# The Service's ClusterIP exists inside the node's namespace (kube-proxy's rules), routed
# there from the host through the veth; the name resolves as the certificate says.
gateway_ip=$(kubectl -n "$system" get service runtime-gateway -o jsonpath='{.spec.clusterIP}')
krt_invoke "https://runtime-gateway.$system.svc" real-node-cluster-ip --resolve "runtime-gateway.$system.svc:443:$gateway_ip"

krt_log "8. every exported metric is on a /metrics endpoint"
krt_check_metrics "docker.io/kruntimes/runtimed:$tag"

krt_log "9. NetworkPolicies enforced (kube-router)"
rn_check_network_policy "docker.io/kruntimes/runtimed:$tag"

krt_log "10. each service as its chart says: user 65532, read-only root; Runtime Pods in user namespaces"
rn_check_pod_security

krt_log "10b. the wall around every Run: a Run's user code attacks another Run, the Runtime Server and runtimed"
rn_check_run_wall

krt_log "11. runtimed reloads a rotated certificate"
rn_check_certificate_rotation
krt_invoke "https://runtime-gateway.$system.svc" real-node-after-rotation --resolve "runtime-gateway.$system.svc:443:$gateway_ip"

krt_log "12. graceful termination"
rn_check_graceful_termination

krt_log "13. node restart: kubelet and containerd stopped and started"
"$here/node.sh" stop
"$here/node.sh" start
kubectl wait --for=condition=Ready node/krt-node --timeout=180s
rn_check_after_restart
krt_invoke "https://runtime-gateway.$system.svc" real-node-after-restart --resolve "runtime-gateway.$system.svc:443:$gateway_ip"

krt_log "14. health probes: scheduler, stale-recovery, controller-manager (/healthz, /readyz)"
rn_check_health_probes

krt_log "15. a second node, then kubectl drain krt-node"
rn_drain_prepare
rn_second_node_up
rn_check_across_nodes "docker.io/kruntimes/runtimed:$tag"
rn_check_drain
# The services moved to krt-node2 with the drain: their probes there.
rn_check_health_probes
krt_invoke "https://runtime-gateway.$system.svc" real-node-after-drain --resolve "runtime-gateway.$system.svc:443:$gateway_ip"

krt_log "16. uninstall"
rn_check_uninstall "$helm"

krt_log "passed"
