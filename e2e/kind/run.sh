#!/usr/bin/env bash
# End-to-end on a real cluster, for a host with a Docker engine (it cannot run on the
# development machine of this repository, which has none; it is kept correct by reading):
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

log() { printf '\n[kind-e2e] %s\n' "$*" >&2; }
fail() { printf '[kind-e2e] FAILED: %s\n' "$*" >&2; exit 1; }
cleanup() {
  local status=$?
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  if [ "$status" -ne 0 ]; then
    log "diagnostics"
    kubectl get pods -A -o wide || true
    kubectl -n "$demo" get runtimes,runs -o wide || true
    kubectl -n "$system" logs deploy/kruntimes-controller-manager --tail=50 || true
    kubectl -n "$system" logs deploy/runtime-gateway --tail=50 || true
  fi
  if [ "${KEEP_CLUSTER:-0}" != 1 ]; then kind delete cluster --name "$cluster" >/dev/null 2>&1 || true; fi
  rm -rf "$work"
  exit "$status"
}
trap cleanup EXIT

for tool in docker kind kubectl openssl curl go; do command -v "$tool" >/dev/null || fail "$tool is not installed"; done
docker info >/dev/null 2>&1 || fail "no Docker engine answers"
helm=$("$root/tools/chart-checks/scripts/build-helm.sh")

log "1. kind cluster $cluster"
kind create cluster --name "$cluster" --wait 180s
kubectl config use-context "kind-$cluster"

log "2. images (tag $tag)"
for app in "${apps[@]}"; do
  "$root/deploy/docker/build.sh" "$app" "$tag"
  kind load docker-image "kruntimes/$app:$tag" --name "$cluster"
done

log "3. certificates and the chart"
kubectl create namespace "$system"
kubectl create namespace "$demo"
# Internal CA: ECDSA P-256, key in PKCS#8 (what the controller-manager reads from --internal-ca-dir).
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$work/ca.key"
openssl req -x509 -new -key "$work/ca.key" -subj "/CN=kruntimes internal CA" -days 365 \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" -out "$work/ca.crt"
kubectl -n "$system" create secret generic kruntimes-internal-ca --from-file=ca.crt="$work/ca.crt" --from-file=ca.key="$work/ca.key"
# The gateway's serving certificate, from a CA of its own; localhost for the port-forward.
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$work/gw-ca.key"
openssl req -x509 -new -key "$work/gw-ca.key" -subj "/CN=kruntimes gateway CA" -days 365 \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign" -out "$work/gw-ca.crt"
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$work/gw.key"
openssl req -new -key "$work/gw.key" -subj "/CN=runtime-gateway" -out "$work/gw.csr"
printf 'subjectAltName=DNS:localhost,DNS:runtime-gateway.%s.svc,DNS:runtime-gateway.%s.svc.cluster.local\nextendedKeyUsage=serverAuth\n' "$system" "$system" > "$work/gw.ext"
openssl x509 -req -in "$work/gw.csr" -CA "$work/gw-ca.crt" -CAkey "$work/gw-ca.key" -CAcreateserial -days 30 -extfile "$work/gw.ext" -out "$work/gw.crt"
kubectl -n "$system" create secret generic runtime-gateway-tls --type=kubernetes.io/tls \
  --from-file=tls.crt="$work/gw.crt" --from-file=tls.key="$work/gw.key" --from-file=ca.crt="$work/gw-ca.crt"
"$helm" install kruntimes "$root/deploy/charts/kruntimes" --namespace "$system" --wait --timeout 5m \
  --set global.image.tag="$tag" \
  --set "runtimes.namespaces={$demo}" \
  --set "gateway.networkPolicy.allowedNamespaces={$demo}" \
  --set "global.networkPolicy.metricsNamespaces={$system}" \
  --set-json 'runtimes.healthProbeFrom=[{"ipBlock":{"cidr":"0.0.0.0/0"}}]'
# kind's kindnet enforces NetworkPolicies; whether node-to-Pod traffic (kubelet probes of
# runtimed's plaintext health port) is subject to them depends on the CNI, so the e2e opens
# that port (health only, never a token) rather than guess the node CIDR.

log "4. a python Runtime, a function Run and a task Run"
kubectl -n "$demo" apply -f - <<YAML
apiVersion: kruntimes.io/v1alpha1
kind: Runtime
metadata: { name: py }
spec: { language: python, replicas: 2, runs: 4 }
---
apiVersion: kruntimes.io/v1alpha1
kind: Run
metadata: { name: hello }
spec:
  runtime: py
  mode: { function: { handler: "main:handle" } }
  source:
    inline: |
      def handle(event, context):
          return {"hello": event.get("name"), "invocation": context.invocation_id}
---
apiVersion: kruntimes.io/v1alpha1
kind: Run
metadata: { name: once }
spec:
  runtime: py
  mode: { task: {} }
  source:
    inline: |
      print("task ran")
YAML
kubectl -n "$demo" wait --for=condition=Available runtime/py --timeout=300s
kubectl -n "$demo" wait --for=condition=Ready run/hello --timeout=300s
kubectl -n "$demo" wait --for=jsonpath='{.status.phase}'=Succeeded run/once --timeout=300s
uid=$(kubectl -n "$demo" get run hello -o jsonpath='{.metadata.uid}')

log "5. invoke through the gateway Service"
# A caller with exactly `get` on that Run (the gateway's runtimed authorizes it by SelfSubjectAccessReview).
kubectl -n "$demo" create serviceaccount invoker
kubectl -n "$demo" create role invoke-hello --verb=get --resource=runs.kruntimes.io --resource-name=hello
kubectl -n "$demo" create rolebinding invoke-hello --role=invoke-hello --serviceaccount="$demo:invoker"
token=$(kubectl -n "$demo" create token invoker --duration=10m)
kubectl -n "$system" port-forward svc/runtime-gateway 18443:443 >"$work/port-forward.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 30); do curl -s --cacert "$work/gw-ca.crt" -o /dev/null https://localhost:18443/ && break; sleep 1; done
answer=$(curl -sS --fail-with-body --cacert "$work/gw-ca.crt" \
  -H "Authorization: Bearer $token" -H 'Content-Type: application/json' -H 'X-Kruntime-Invocation-ID: kind-e2e-1' \
  --data '{"name":"kind"}' "https://localhost:18443/v1/namespaces/$demo/runtimes/py/functions/$uid:invoke")
echo "$answer"
case "$answer" in *'"hello":"kind"'*'"invocationId":"kind-e2e-1"'*|*'"invocationId":"kind-e2e-1"'*'"hello":"kind"'*) ;; *) fail "unexpected answer: $answer" ;; esac
status=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$work/gw-ca.crt" -H 'Content-Type: application/json' --data '{}' \
  "https://localhost:18443/v1/namespaces/$demo/runtimes/py/functions/$uid:invoke")
[ "$status" = 401 ] || fail "an invoke without a token answered $status, not 401"

log "6. every exported metric is on a /metrics endpoint"
scrape() { # pod or service, local port (the services listen on all interfaces: port-forward reaches them)
  kubectl -n "$system" port-forward "$1" "$2:9464" >/dev/null 2>&1 &
  local pid=$!
  for _ in $(seq 1 30); do curl -sf "http://localhost:$2/metrics" && break; sleep 1; done
  kill "$pid" 2>/dev/null || true
}
{
  scrape svc/kruntimes-scheduler-metrics 19464
  scrape svc/kruntimes-stale-recovery-metrics 19465
  # Every replica declares the controller-manager's families; only the leader has series.
  scrape svc/kruntimes-controller-manager-metrics 19460
  # Every gateway replica: only the one that served the invoke has its request histograms.
  port=19466
  for pod in $(kubectl -n "$system" get pods -l app.kubernetes.io/name=runtime-gateway -o name); do
    scrape "$pod" "$port"
    port=$((port + 1))
  done
  # runtimed listens on its Pod IP only (port-forward dials the Pod's localhost), and the
  # Runtime namespace's NetworkPolicy lets only global.networkPolicy.metricsNamespaces in:
  # scrape from a Pod in the release namespace.
  for ip in $(kubectl -n "$demo" get pods -l kruntimes.io/runtime=py -o jsonpath='{.items[*].status.podIP}'); do
    kubectl -n "$system" run "scrape-${ip//./-}" --image=curlimages/curl --restart=Never --rm -i --quiet \
      --overrides='{"spec":{"securityContext":{"runAsNonRoot":true,"runAsUser":65532,"seccompProfile":{"type":"RuntimeDefault"}}}}' \
      -- curl -sf "http://$ip:9464/metrics"
  done
} > "$work/metrics.txt"
missing=()
while read -r name _; do
  case "$name" in ''|'#'*) continue ;; esac
  grep -q "^# TYPE $name " "$work/metrics.txt" || missing+=("$name")
done < "$root/tools/chart-checks/exported-metrics.txt"
# The hand-written expositions (scheduler, stale-recovery, controller-manager, runtimed's
# per-function families) name every family at all times;
# an OpenTelemetry family (gateway, runtimed) appears with its first data point, which the
# steps above give each of them: a registration, a task, an invoke that reached runtimed,
# an authorization, Lease renewals.
[ "${#missing[@]}" -eq 0 ] || fail "metrics not exported by the running services: ${missing[*]}"

log "passed"
