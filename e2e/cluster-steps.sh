# shellcheck shell=bash
# shellcheck disable=SC2154 # root, work, tag, helm, system and demo are the caller's (below)
# The steps a user takes on a real cluster, shared by e2e/kind/run.sh (kind, for hosts with
# a Docker engine) and tools/real-node/run.sh (a kubelet node built on this machine).
# Source it after setting: root (repository), work (a scratch directory), tag (image tag),
# helm (the helm binary), system and demo (namespaces), pids (an array the caller kills on
# exit); `kubectl` on the PATH talks to the cluster. Every function fails through `fail`.

krt_log() { printf '\n[%s] %s (%ss)\n' "${KRT_E2E_NAME:-e2e}" "$*" "$SECONDS" >&2; }
fail() { printf '[%s] FAILED: %s\n' "${KRT_E2E_NAME:-e2e}" "$*" >&2; exit 1; }

# Certificates as an operator makes them, then `helm install` with the caller's extra values.
krt_install_chart() { # extra helm arguments...
  kubectl create namespace "$system"
  kubectl create namespace "$demo"
  # Internal CA: ECDSA P-256, key in PKCS#8 (what the controller-manager reads from --internal-ca-dir).
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$work/ca.key"
  openssl req -x509 -new -key "$work/ca.key" -subj "/CN=kruntimes internal CA" -days 365 \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" -out "$work/ca.crt"
  kubectl -n "$system" create secret generic kruntimes-internal-ca --from-file=ca.crt="$work/ca.crt" --from-file=ca.key="$work/ca.key"
  # The gateway's serving certificate, from a CA of its own; localhost for a port-forward.
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
    "$@"
}

# A python Runtime, a function Run `hello` and a task Run `once`; waits for them.
krt_create_demo() {
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
}

# A caller with exactly `get` on Run hello (the gateway's runtimed authorizes it by
# SelfSubjectAccessReview); prints its token.
krt_invoker_token() {
  if ! kubectl -n "$demo" get serviceaccount invoker >/dev/null 2>&1; then
    kubectl -n "$demo" create serviceaccount invoker >&2
    kubectl -n "$demo" create role invoke-hello --verb=get --resource=runs.kruntimes.io --resource-name=hello >&2
    kubectl -n "$demo" create rolebinding invoke-hello --role=invoke-hello --serviceaccount="$demo:invoker" >&2
  fi
  kubectl -n "$demo" create token invoker --duration=10m
}

# Invokes hello through the gateway at BASE (https://host:port) and checks the answer and
# that a request without a token is refused. Extra arguments go to curl (e.g. --resolve).
krt_invoke() { # base url, invocation id, curl arguments...
  local base=$1 id=$2 token uid answer status
  shift 2
  token=$(krt_invoker_token)
  uid=$(kubectl -n "$demo" get run hello -o jsonpath='{.metadata.uid}')
  for _ in $(seq 1 30); do curl -s "$@" --cacert "$work/gw-ca.crt" -o /dev/null "$base/" && break; sleep 1; done
  answer=$(curl -sS --fail-with-body --max-time 30 "$@" --cacert "$work/gw-ca.crt" \
    -H "Authorization: Bearer $token" -H 'Content-Type: application/json' -H "X-Kruntime-Invocation-ID: $id" \
    --data "{\"name\":\"$id\"}" "$base/v1/namespaces/$demo/runtimes/py/functions/$uid:invoke") ||
    fail "the invoke through $base failed: $answer"
  echo "$answer"
  case "$answer" in *"\"hello\":\"$id\""*"\"invocationId\":\"$id\""*|*"\"invocationId\":\"$id\""*"\"hello\":\"$id\""*) ;;
    *) fail "unexpected answer: $answer" ;;
  esac
  status=$(curl -s -o /dev/null -w '%{http_code}' --max-time 30 "$@" --cacert "$work/gw-ca.crt" -H 'Content-Type: application/json' --data '{}' \
    "$base/v1/namespaces/$demo/runtimes/py/functions/$uid:invoke")
  [ "$status" = 401 ] || fail "an invoke without a token answered $status, not 401"
}

# Invokes through `kubectl port-forward` of the gateway Service (as a user without a route
# to the cluster network would).
krt_invoke_port_forward() { # local port, invocation id
  kubectl -n "$system" port-forward svc/runtime-gateway "$1:443" >"$work/port-forward.log" 2>&1 &
  local pid=$!
  pids+=("$pid")
  krt_invoke "https://localhost:$1" "$2"
  kill "$pid" 2>/dev/null || true
}

# Every metric of tools/chart-checks/exported-metrics.txt (the dashboards use only those)
# is on some service's or runtimed's /metrics.
krt_check_metrics() { # scrape image: any image with node (runtimed's)
  local image=$1 port pod ip missing=() name
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
    # scrape from a Pod in the release namespace, with an image of ours (node's fetch). A new
    # Pod's address is admitted only once the policy enforcer has seen it (kube-router on the
    # real node: its next sync, a fraction of a second): a failed connection is retried (10 s
    # at most).
    for ip in $(kubectl -n "$demo" get pods -l kruntimes.io/runtime=py -o jsonpath='{.items[*].status.podIP}'); do
      kubectl -n "$system" run "scrape-${ip//./-}" --image="$image" --image-pull-policy=IfNotPresent --restart=Never --rm -i --quiet \
        --overrides='{"spec":{"securityContext":{"runAsNonRoot":true,"runAsUser":65532,"seccompProfile":{"type":"RuntimeDefault"}}}}' \
        --command -- node -e '
const get = (url, left) => fetch(url).catch(async (e) => {
  if (left === 0) throw e;
  await new Promise((resolve) => setTimeout(resolve, 250));
  return get(url, left - 1);
});
get(process.argv[1], 40).then(async (r) => { if (!r.ok) process.exit(1); process.stdout.write(await r.text()); })' \
        "http://$ip:9464/metrics"
    done
  } > "$work/metrics.txt"
  while read -r name _; do
    case "$name" in ''|'#'*) continue ;; esac
    grep -q "^# TYPE $name " "$work/metrics.txt" || missing+=("$name")
  done < "$root/tools/chart-checks/exported-metrics.txt"
  # The hand-written expositions (scheduler, stale-recovery, controller-manager, runtimed's
  # per-function families) name every family at all times;
  # an OpenTelemetry family (gateway, runtimed) appears with its first data point, which the
  # steps before give each of them: a registration, a task, an invoke that reached runtimed,
  # an authorization, Lease renewals.
  [ "${#missing[@]}" -eq 0 ] || fail "metrics not exported by the running services: ${missing[*]}"
}

# On exit: stops the background commands (port-forwards, log followers) and, when the run
# failed, prints what it needs to be understood.
krt_finish() { # exit status of the run
  local pid
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  [ "$1" -ne 0 ] || return 0
  krt_log "diagnostics"
  kubectl get nodes -o wide || true
  kubectl get pods -A -o wide || true
  kubectl -n "$demo" get runtimes,runs -o wide || true
  kubectl get events -A --sort-by=.lastTimestamp | tail -n 40 || true
  kubectl -n "$system" logs deploy/kruntimes-controller-manager --tail=50 || true
  kubectl -n "$system" logs deploy/runtime-gateway --tail=50 || true
}
