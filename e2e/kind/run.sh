#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# End-to-end on a real cluster, for a host with a Docker engine (the development machines
# of this repository have none; its steps 3-6, e2e/cluster-steps.sh, run on the real node
# of tools/real-node/run.sh, which builds the same images with buildah):
#   1. creates a kind cluster,
#   2. builds the seven images (deploy/docker/*.Dockerfile) and loads them into it,
#   3. creates the internal CA and the gateway's serving certificate (openssl), installs the chart,
#   4. creates a python Runtime, a function Run and a task Run, waits for them,
#   5. invokes the function through the gateway Service (kubectl port-forward) as a
#      ServiceAccount that may only `get` that Run, and checks the answer,
#   6. scrapes /metrics of every service and of runtimed and checks that every metric of
#      tools/chart-checks/exported-metrics.txt (the dashboards use only those) is there,
#   7. deletes the cluster (KEEP_CLUSTER=1 keeps it).
# Needs: docker, kind, kubectl, openssl, curl, Go (helm is built like the tests build it).
# Usage: e2e/kind/run.sh        Env: KIND_CLUSTER (default kruntimes-e2e), TAG (default e2e)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cluster=${KIND_CLUSTER:-kruntimes-e2e}
tag=${TAG:-e2e}
system=kruntimes-system
demo=kruntimes-demo
apps=(scheduler stale-recovery controller-manager runtime-gateway runtimed runtime-server-python runtime-server-bash)
work=$(mktemp -d)
pids=()
KRT_E2E_NAME=kind-e2e
# shellcheck source=../cluster-steps.sh
. "$root/e2e/cluster-steps.sh"

cleanup() {
  local status=$?
  krt_finish "$status"
  if [ "${KEEP_CLUSTER:-0}" != 1 ]; then kind delete cluster --name "$cluster" >/dev/null 2>&1 || true; fi
  rm -rf "$work"
  exit "$status"
}
trap cleanup EXIT

for tool in docker kind kubectl openssl curl go; do command -v "$tool" >/dev/null || fail "$tool is not installed"; done
docker info >/dev/null 2>&1 || fail "no Docker engine answers"
helm=$("$root/tools/chart-checks/scripts/build-helm.sh")

krt_log "1. kind cluster $cluster"
kind create cluster --name "$cluster" --wait 180s
kubectl config use-context "kind-$cluster"

krt_log "2. images (tag $tag)"
for app in "${apps[@]}"; do
  "$root/deploy/docker/build.sh" "$app" "$tag"
  kind load docker-image "kruntimes/$app:$tag" --name "$cluster"
done

krt_log "3. certificates and the chart"
# kind's kindnet enforces NetworkPolicies; whether node-to-Pod traffic (kubelet probes of
# runtimed's plaintext health port) is subject to them depends on the CNI, so the e2e opens
# that port (health only, never a token) rather than guess the node CIDR.
krt_install_chart --set-json 'runtimes.healthProbeFrom=[{"ipBlock":{"cidr":"0.0.0.0/0"}}]'

krt_log "4. a python Runtime, a function Run and a task Run"
krt_create_demo

krt_log "5. invoke through the gateway Service"
krt_invoke_port_forward 18443 kind-e2e-1

krt_log "6. every exported metric is on a /metrics endpoint"
krt_check_metrics "kruntimes/runtimed:$tag"

krt_log "passed"
