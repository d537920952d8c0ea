# shellcheck shell=bash
# shellcheck disable=SC2154 # system, demo and work are the caller's
# What only a real node shows, as functions for tools/real-node/run.sh (sourced after
# e2e/cluster-steps.sh: uses system, demo, work, kubectl and fail).

rn_services=(kruntimes-scheduler kruntimes-stale-recovery kruntimes-controller-manager runtime-gateway)

# Runs JavaScript in a container of a Pod with the image's own node (no shell needed).
rn_exec_node() { # namespace, pod, container, script
  kubectl -n "$1" exec "$2" -c "$3" -- node -e "$4"
}

# The host's pid of a container of a Pod (containerd's task list on the Pod's node).
rn_host_pid() { # namespace, pod, container
  local node sock cid
  node=$(kubectl -n "$1" get pod "$2" -o jsonpath='{.spec.nodeName}')
  sock=/run/krt-real-node${node#krt-node}/containerd/containerd.sock
  cid=$(kubectl -n "$1" get pod "$2" -o jsonpath="{.status.containerStatuses[?(@.name==\"$3\")].containerID}")
  ctr --address "$sock" --namespace k8s.io tasks list 2>/dev/null | awk -v id="${cid#containerd://}" '$1 == id {print $2}'
}
rn_host_uid() { awk '$1 == "Uid:" {print $2}' "/proc/$1/status"; } # pid -> its real uid on the host
rn_pid_inside() { awk '$1 == "NSpid:" {print $NF}' "/proc/$1/status"; } # host pid -> its pid in its own PID namespace

# Every container of the service Pods runs as uid/gid 65532 on a read-only root filesystem
# (what the chart's securityContext asks); Runtime Pods' runtimed as 65532 (the images'
# USER) and, in their own user namespace (hostUsers: false), the Runtime Server as uid 0 of
# it, which is a uid of the kubelet's range (65536 and above) on the host. Printed as a
# table; any difference fails.
rn_check_pod_security() {
  local probe pod container answer
  # Writing to / must fail with EROFS; /tmp is the chart's emptyDir and must be writable.
  # shellcheck disable=SC2016 # JavaScript, not shell
  probe='const fs = require("node:fs"); let root = "writable";
try { fs.writeFileSync("/.krt-probe", "x"); } catch (e) { root = e.code; }
let tmp = "writable"; try { fs.writeFileSync("/tmp/.krt-probe", "x"); fs.rmSync("/tmp/.krt-probe"); } catch (e) { tmp = e.code; }
console.log(`${process.getuid()}:${process.getgid()} root=${root} tmp=${tmp}`);'
  printf '%-58s %-18s %s\n' POD CONTAINER 'UID:GID, ROOT FS, /tmp' >&2
  for deployment in "${rn_services[@]}"; do
    for pod in $(kubectl -n "$system" get pods -l "app.kubernetes.io/name=$deployment" -o jsonpath='{.items[*].metadata.name}'); do
      for container in $(kubectl -n "$system" get pod "$pod" -o jsonpath='{.spec.containers[*].name}'); do
        answer=$(rn_exec_node "$system" "$pod" "$container" "$probe")
        printf '%-58s %-18s %s\n' "$pod" "$container" "$answer" >&2
        [ "$answer" = "65532:65532 root=EROFS tmp=writable" ] || fail "$pod/$container: $answer"
      done
    done
  done
  local host_users pid host_uid
  for pod in $(kubectl -n "$demo" get pods -l kruntimes.io/runtime=py -o jsonpath='{.items[*].metadata.name}'); do
    host_users=$(kubectl -n "$demo" get pod "$pod" -o jsonpath='{.spec.hostUsers}')
    [ "$host_users" = false ] || fail "$pod: spec.hostUsers is '$host_users', not false (Runtime Pods run in user namespaces by default)"
    for container in $(kubectl -n "$demo" get pod "$pod" -o jsonpath='{.spec.containers[*].name}'); do
      answer=$(rn_exec_node "$demo" "$pod" "$container" "$probe")
      pid=$(rn_host_pid "$demo" "$pod" "$container")
      [ -n "$pid" ] || fail "$pod/$container: no host process"
      host_uid=$(rn_host_uid "$pid")
      printf '%-58s %-18s %s, on the host uid %s\n' "$pod" "$container" "$answer" "$host_uid" >&2
      [ "$host_uid" -ge 65536 ] || fail "$pod/$container: uid $host_uid on the host, not one of the kubelet's user namespace range"
      case "$container:$answer" in runtimed:65532:65532\ * | runtime-server:0:0\ *) ;; *) fail "$pod/$container: $answer" ;; esac
    done
  done
}

# The controller-manager issues a new workload certificate when the Runtime's Secret is
# deleted; the kubelet updates every Runtime Pod's Secret volume, and each runtimed must
# load the new version without a restart.
rn_check_certificate_rotation() {
  local secret=py-runtimed-tls before after pods pod loaded
  before=$(kubectl -n "$demo" get secret "$secret" -o jsonpath='{.data.tls\.crt}')
  pods=$(kubectl -n "$demo" get pods -l kruntimes.io/runtime=py -o jsonpath='{.items[*].metadata.name}')
  kubectl -n "$demo" delete secret "$secret"
  for _ in $(seq 1 60); do
    after=$(kubectl -n "$demo" get secret "$secret" -o jsonpath='{.data.tls\.crt}' 2>/dev/null || true)
    [ -n "$after" ] && [ "$after" != "$before" ] && break
    sleep 1
  done
  if [ -z "$after" ] || [ "$after" = "$before" ]; then fail "the controller-manager did not issue a new $secret"; fi
  # The kubelet refreshes Secret volumes on its sync period (1 min by default) plus its cache TTL.
  for pod in $pods; do
    for _ in $(seq 1 90); do
      loaded=$(kubectl -n "$demo" logs "$pod" -c runtimed | grep -c '"workload certificate loaded"' || true)
      [ "$loaded" -ge 2 ] && break
      sleep 2
    done
    [ "$loaded" -ge 2 ] || fail "$pod: runtimed did not load the rotated certificate within 180 s"
    printf '%s: certificate versions loaded: %s, restarts: %s\n' "$pod" "$loaded" \
      "$(kubectl -n "$demo" get pod "$pod" -o jsonpath='{.status.containerStatuses[*].restartCount}')" >&2
  done
}

# The containers' exit codes in a stream of watch events (kubectl --output-watch-events -o json).
rn_exit_codes() {
  python3 -c '
import json, sys
codes, text, decoder = [], sys.stdin.read(), json.JSONDecoder()
i = 0
while i < len(text):
    if text[i].isspace():
        i += 1
        continue
    event, i = decoder.raw_decode(text, i)
    for status in event["object"].get("status", {}).get("containerStatuses", []):
        code = status.get("state", {}).get("terminated", {}).get("exitCode")
        if code is not None:
            codes.append(str(code))
print(" ".join(codes))'
}

# One Pod of each service deleted: it must log its orderly stop, end within its grace
# period with exit code 0, and its Deployment must be Available again.
rn_check_graceful_termination() {
  local deployment pod grace started took events exit_codes
  for deployment in "${rn_services[@]}"; do
    pod=$(kubectl -n "$system" get pods -l "app.kubernetes.io/name=$deployment" -o jsonpath='{.items[0].metadata.name}')
    grace=$(kubectl -n "$system" get pod "$pod" -o jsonpath='{.spec.terminationGracePeriodSeconds}')
    kubectl -n "$system" logs -f "$pod" >"$work/$pod.log" 2>&1 &
    pids+=($!)
    # The Pod's status as the kubelet reports it while it stops: the containers' exit codes.
    kubectl -n "$system" get pod "$pod" --watch --output-watch-events -o json >"$work/$pod.status" 2>/dev/null &
    pids+=($!)
    sleep 1
    started=$SECONDS
    kubectl -n "$system" delete pod "$pod" --wait --timeout="$((grace + 30))s" >/dev/null
    took=$((SECONDS - started))
    exit_codes=$(rn_exit_codes <"$work/$pod.status")
    events=$(grep -c '"shutting down"' "$work/$pod.log" || true)
    printf '%-58s grace %3ss, gone after %3ss, exit codes seen: [%s], "shutting down" logged: %s\n' \
      "$pod" "$grace" "$took" "$exit_codes" "$events" >&2
    [ "$events" -ge 1 ] || fail "$pod did not log an orderly stop"
    ! grep -q '"shutdown failed"' "$work/$pod.log" || fail "$pod: shutdown failed"
    [ "$took" -le "$grace" ] || fail "$pod took ${took}s, longer than its grace period (${grace}s)"
    case " $exit_codes " in *" 0 "*) ;; *) fail "$pod: no exit code 0 seen ([$exit_codes])" ;; esac
    kubectl -n "$system" rollout status "deployment/$deployment" --timeout=120s >/dev/null
  done
}

# After the node restart: the Runtime is Available, the function Run Ready, and a new task
# Run succeeds.
rn_check_after_restart() {
  kubectl -n "$demo" wait --for=condition=Available runtime/py --timeout=300s
  kubectl -n "$demo" wait --for=condition=Ready run/hello --timeout=300s
  kubectl -n "$demo" apply -f - <<YAML
apiVersion: kruntimes.io/v1alpha1
kind: Run
metadata: { name: after-restart }
spec:
  runtime: py
  mode: { task: {} }
  source:
    inline: |
      print("task ran after the node restart")
YAML
  kubectl -n "$demo" wait --for=jsonpath='{.status.phase}'=Succeeded run/after-restart --timeout=300s
  kubectl -n "$demo" get runs -o wide >&2
}

# As a user uninstalls: the Runs and Runtimes first (their Pods are the controller-manager's
# to remove), then the release. Nothing the chart or the controllers made may remain but
# what README.md lists (the CRDs, kept by Helm by design, and the leader-election Leases).
rn_check_uninstall() { # helm binary
  local helm=$1 left
  kubectl -n "$demo" delete runs --all --wait --timeout=180s
  kubectl -n "$demo" delete runtimes --all --wait --timeout=180s
  kubectl -n "$demo" wait --for=delete pods -l kruntimes.io/runtime --timeout=180s 2>/dev/null || true
  "$helm" uninstall kruntimes --namespace "$system" --wait --timeout 5m
  kubectl -n "$system" wait --for=delete pods --all --timeout=180s 2>/dev/null || true
  left=$(
    kubectl get pods,deployments,replicasets,services,endpointslices,configmaps,secrets,serviceaccounts,roles,rolebindings,networkpolicies,poddisruptionbudgets \
      -n "$system" -o name 2>/dev/null
    kubectl get pods,deployments,services,secrets,serviceaccounts,roles,rolebindings,networkpolicies \
      -n "$demo" -o name 2>/dev/null
    kubectl get clusterroles,clusterrolebindings -o name | grep kruntimes || true
    kubectl get mutatingadmissionpolicies,mutatingadmissionpolicybindings,validatingadmissionpolicies,validatingadmissionpolicybindings -o name | grep kruntimes || true
  )
  # What the user made by hand (the CA and the gateway certificate, the invoker, run.sh's
  # policy for the host's calls to the gateway) and what Kubernetes itself puts in every
  # namespace.
  left=$(grep -vE '^(secret/(kruntimes-internal-ca|runtime-gateway-tls)|serviceaccount/(default|invoker)|role\.rbac\.authorization\.k8s\.io/invoke-hello|rolebinding\.rbac\.authorization\.k8s\.io/invoke-hello|configmap/kube-root-ca\.crt)$' <<<"$left" || true)
  echo "left after uninstall (besides what the user made): ${left:-nothing}" >&2
  echo "leases: $(kubectl get leases -n "$system" -o name | xargs) $(kubectl get leases -n "$demo" -o name | xargs)" >&2
  [ -z "$left" ] || fail "helm uninstall left: $left"
}

# NetworkPolicies, as kube-router enforces them on the node (README.md): client Pods of our
# own image (non-root, read-only root, no capabilities) connect with a bounded timeout to
# (a) the gateway's HTTPS port through its Service, from a namespace not in
#     gateway.networkPolicy.allowedNamespaces (blocked) and from the demo namespace (allowed);
# (b) runtimed's grpc port 7443 of a Runtime Pod from Pods that are not a gateway, in the
#     demo namespace and in the release namespace (blocked; the invoke steps prove the
#     gateway's path), and runtimed's metrics port from the release namespace (allowed: the
#     metrics step's scrape) and from the demo namespace (blocked: no metrics namespace).
# Blocked is a REJECT (ECONNREFUSED) or a timeout, allowed a completed TCP handshake;
# anything else (a name that does not resolve ...) fails. Kubelet probes from the node must
# still pass: the Runtime Pods stay Ready.
rn_netpol_outside=krt-netpol-outside
rn_json() { python3 -c 'import json, sys; print(json.dumps(sys.argv[1]))' "$1"; }
rn_json_list() { python3 -c 'import json, sys; print(json.dumps(sys.argv[1:]))' "$@"; }
rn_check_network_policy() { # image with node (runtimed's)
  local image=$1 gateway runtime_ip ns probe expect target result failed=0 namespaces targets
  gateway="runtime-gateway.$system.svc:443"
  runtime_ip=$(kubectl -n "$demo" get pods -l kruntimes.io/runtime=py -o jsonpath='{.items[0].status.podIP}')
  [ -n "$runtime_ip" ] || fail "no Runtime Pod IP"
  # "client namespace|expected|target", in the table's order.
  local probes=(
    "$rn_netpol_outside|blocked|$gateway"
    "$demo|allowed|$gateway"
    "$rn_netpol_outside|blocked|$runtime_ip:7443"
    "$demo|blocked|$runtime_ip:7443"
    "$system|blocked|$runtime_ip:7443"
    "$system|allowed|$runtime_ip:9464"
    "$demo|blocked|$runtime_ip:9464"
  )
  # Argument "allowed|blocked:target"; prints "target result attempts milliseconds" a line.
  # A new Pod's address joins the ipsets of the policies that admit it only with kube-router's
  # next sync (triggered by the Pod's update, a fraction of a second later): an allowed target
  # is retried until it connects (10 s at most), and tried first, so that the blocked ones
  # are tried from a Pod the policies know. Blocked is ECONNREFUSED (kube-router's REJECT) or
  # a timeout.
  # shellcheck disable=SC2016 # JavaScript, not shell
  local script='const net = require("node:net");
const connect = (host, port) => new Promise((resolve) => {
  const socket = net.connect({ host, port, timeout: 3000 });
  const done = (result) => { socket.destroy(); resolve(result); };
  socket.once("connect", () => done("connected"));
  socket.once("timeout", () => done("timeout"));
  socket.once("error", (e) => done(e.code || "error"));
});
const probe = async (arg) => {
  const [expect, target] = arg.split("|"), i = target.lastIndexOf(":"), started = Date.now();
  let result, attempts = 0;
  do {
    if (attempts > 0) await new Promise((r) => setTimeout(r, 250));
    attempts += 1;
    result = await connect(target.slice(0, i), Number(target.slice(i + 1)));
  } while (expect === "allowed" && result !== "connected" && Date.now() - started < 10000);
  return `${target} ${result} ${attempts} ${Date.now() - started}`;
};
(async () => { for (const arg of process.argv.slice(1)) console.log(await probe(arg)); })();'
  kubectl create namespace "$rn_netpol_outside" >/dev/null
  namespaces=$(printf '%s\n' "${probes[@]}" | cut -d'|' -f1 | sort -u)
  # One client Pod per namespace, all at once: each probes its targets in turn.
  for ns in $namespaces; do
    mapfile -t targets < <(printf '%s\n' "${probes[@]}" | awk -F'|' -v ns="$ns" '$1 == ns { print $2 "|" $3 }' | sort)
    kubectl -n "$ns" apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: { name: netpol-client, labels: { app.kubernetes.io/name: netpol-client } }
spec:
  restartPolicy: Never
  automountServiceAccountToken: false
  securityContext: { runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532, seccompProfile: { type: RuntimeDefault } }
  containers:
    - name: client
      image: $image
      imagePullPolicy: Never
      command: [node, -e, $(rn_json "$script")]
      args: $(rn_json_list "${targets[@]}")
      securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: [ALL] } }
YAML
  done
  for ns in $namespaces; do
    kubectl -n "$ns" wait --for=jsonpath='{.status.phase}'=Succeeded pod/netpol-client --timeout=90s >/dev/null ||
      { kubectl -n "$ns" describe pod netpol-client >&2; fail "the client Pod in $ns did not complete within 90 s"; }
    kubectl -n "$ns" logs netpol-client >"$work/netpol-$ns.txt"
  done
  printf '%-20s %-42s %-9s %s\n' FROM TO EXPECTED RESULT >&2
  for probe in "${probes[@]}"; do
    IFS='|' read -r ns expect target <<<"$probe"
    result=$(awk -v t="$target" '$1 == t { print $2 " (" ($3 > 1 ? $3 " attempts, " : "") $4 " ms)" }' "$work/netpol-$ns.txt")
    printf '%-20s %-42s %-9s %s\n' "$ns" "$target" "$expect" "${result:-no answer}" >&2
    case "$expect:$result" in
      allowed:connected*|blocked:ECONNREFUSED*|blocked:timeout*) ;;
      *) failed=1 ;;
    esac
  done
  for ns in $namespaces; do kubectl -n "$ns" delete pod netpol-client --wait --timeout=60s >/dev/null; done
  kubectl delete namespace "$rn_netpol_outside" --wait --timeout=120s >/dev/null
  [ "$failed" = 0 ] || fail "a NetworkPolicy is not enforced as the chart says (table above)"
  # The kubelet's probes come from the node's own address: kube-router accepts traffic from
  # a local address to the node's Pods before any policy, so the health port needs no opening.
  kubectl -n "$demo" wait --for=condition=Ready pods -l kruntimes.io/runtime=py --timeout=60s >/dev/null ||
    fail "Runtime Pods not Ready with the policies enforced (the kubelet's probes)"
  kubectl -n "$demo" get pods -l kruntimes.io/runtime=py \
    -o jsonpath='{range .items[*]}{.metadata.name}: Ready {.status.conditions[?(@.type=="Ready")].status}, restarts {.status.containerStatuses[*].restartCount}{"\n"}{end}' >&2
}

# The chart's admission policies, as `helm install` put them (the control plane here starts
# without any): the MutatingAdmissionPolicy stamps spec.creator on the demo Runs; a user
# who may create Runs but lacks the verb `use` on the Runtime is refused at create with the
# policy's message; granted `use` (the chart's ClusterRole kruntimes-runtime-user, bound in
# the namespace), the same create passes and the Run carries that user as its creator and
# runs (the scheduler's SubjectAccessReview at assignment allows it).
rn_check_admission() {
  local kind name creator refusal
  for kind in mutatingadmissionpolicy mutatingadmissionpolicybinding; do
    kubectl get "$kind" kruntimes.io-run-creator -o name >&2 || fail "helm install did not create $kind kruntimes.io-run-creator"
  done
  for name in kruntimes.io-run-admission kruntimes.io-runschedule-admission; do
    for kind in validatingadmissionpolicy validatingadmissionpolicybinding; do
      kubectl get "$kind" "$name" -o name >&2 || fail "helm install did not create $kind $name"
    done
  done
  creator=$(kubectl -n "$demo" get run hello -o jsonpath='{.spec.creator.username}')
  echo "run hello: spec.creator.username=$creator" >&2
  [ -n "$creator" ] || fail "run hello has no spec.creator: the MutatingAdmissionPolicy did not stamp it"

  kubectl -n "$demo" create role krt-admission-runs --verb=create,get --resource=runs.kruntimes.io >&2
  kubectl -n "$demo" create rolebinding krt-admission-runs --role=krt-admission-runs --user=krt-admission-user >&2
  local manifest='{"apiVersion":"kruntimes.io/v1alpha1","kind":"Run","metadata":{"name":"by-user"},"spec":{"runtime":"py","mode":{"task":{}},"source":{"inline":"print(\"admitted\")"}}}'
  if refusal=$(kubectl -n "$demo" --as=krt-admission-user create -f - <<<"$manifest" 2>&1); then
    fail "a user without use on Runtime py created a Run: $refusal"
  fi
  echo "without use: $refusal" >&2
  case "$refusal" in
    *"ValidatingAdmissionPolicy 'kruntimes.io-run-admission'"*"user krt-admission-user may not create this Run: it names Runtime $demo/py"*) ;;
    *) fail "the refusal is not the policy's: $refusal" ;;
  esac

  kubectl -n "$demo" create rolebinding krt-admission-use --clusterrole=kruntimes-runtime-user --user=krt-admission-user >&2
  # RBAC changes reach the authorizer within moments; bounded.
  for _ in $(seq 1 20); do
    kubectl -n "$demo" --as=krt-admission-user create -f - <<<"$manifest" >&2 2>"$work/admission.err" && break
    sleep 0.5
  done
  kubectl -n "$demo" get run by-user -o name >/dev/null 2>&1 || fail "granted use, the create still failed: $(cat "$work/admission.err")"
  creator=$(kubectl -n "$demo" get run by-user -o jsonpath='{.spec.creator.username}')
  [ "$creator" = krt-admission-user ] || fail "run by-user: spec.creator.username=$creator, expected krt-admission-user"
  kubectl -n "$demo" wait --for=jsonpath='{.status.phase}'=Succeeded run/by-user --timeout=120s >&2
  echo "with use: run by-user created by $creator, Succeeded" >&2
  kubectl -n "$demo" delete run by-user --wait --timeout=60s >&2
  kubectl -n "$demo" delete rolebinding krt-admission-use krt-admission-runs >&2
  kubectl -n "$demo" delete role krt-admission-runs >&2
}

# The leader-elected services (scheduler, stale-recovery, controller-manager) as the chart
# probes them (issue 45): each container has the liveness probe /healthz and the readiness
# probe /readyz on its port `health`, each Pod is Ready (the kubelet's probes pass: a
# standby replica is ready too; restarts are printed, a node restart counts one), and both paths answer 200 when called the way the
# kubelet calls them, from the Pod's node (its network namespace, krt-node or krt-nodeN: the
# node's own address, which the NetworkPolicies let through) to the Pod IP. A table; any
# difference fails.
rn_probed_services=(kruntimes-scheduler kruntimes-stale-recovery kruntimes-controller-manager)
rn_check_health_probes() {
  local deployment pod line node ip port live ready cond restarts healthz readyz failed=0 n=0
  # After a node restart or a drain the replicas may still be starting: every one Ready first.
  for deployment in "${rn_probed_services[@]}"; do
    kubectl -n "$system" rollout status "deployment/$deployment" --timeout=180s >/dev/null ||
      fail "deployment $deployment not rolled out within 180 s"
  done
  printf '%-50s %-10s %-28s %-5s %-8s %-8s %s\n' POD NODE 'PROBES (liveness, readiness)' READY RESTARTS /healthz /readyz >&2
  for deployment in "${rn_probed_services[@]}"; do
    for pod in $(kubectl -n "$system" get pods -l "app.kubernetes.io/name=$deployment" --field-selector=status.phase=Running -o jsonpath='{.items[*].metadata.name}'); do
      # One line: node, Pod IP, health port, liveness path:port, readiness path:port, Ready, restarts.
      line=$(kubectl -n "$system" get pod "$pod" -o jsonpath='{.spec.nodeName} {.status.podIP} {.spec.containers[0].ports[?(@.name=="health")].containerPort} {.spec.containers[0].livenessProbe.httpGet.path}:{.spec.containers[0].livenessProbe.httpGet.port} {.spec.containers[0].readinessProbe.httpGet.path}:{.spec.containers[0].readinessProbe.httpGet.port} {.status.conditions[?(@.type=="Ready")].status} {.status.containerStatuses[0].restartCount}')
      read -r node ip port live ready cond restarts <<<"$line"
      healthz=$(ip netns exec "$node" curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://$ip:$port/healthz" || true)
      readyz=$(ip netns exec "$node" curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://$ip:$port/readyz" || true)
      printf '%-50s %-10s %-28s %-5s %-8s %-8s %s\n' "$pod" "$node" "$live $ready" "$cond" "$restarts" "$healthz" "$readyz" >&2
      [ "$live" = /healthz:health ] && [ "$ready" = /readyz:health ] && [ "$cond" = True ] &&
        [ "$healthz" = 200 ] && [ "$readyz" = 200 ] || failed=1
      n=$((n + 1))
    done
  done
  [ "$n" -ge "${#rn_probed_services[@]}" ] || fail "found $n Pods of ${rn_probed_services[*]}"
  [ "$failed" = 0 ] || fail "a service Pod lacks its probes, is not Ready, or does not answer /healthz or /readyz (table above)"
  echo "health probes: $n Pods of ${rn_probed_services[*]}: liveness /healthz and readiness /readyz on port health, Ready, both answer 200 from their node" >&2
}

# The wall around every Run (issue 51) on a Runtime Pod with hostUsers: false: a victim task
# Run with a secret in its environment, then an attacker task Run on the same Pod
# (wall/attacker.py) trying each way in: the victim's and the Runtime Server's environ and
# signals, runtimed's token (not mounted; the host's paths; through /proc/1/root), the API
# token, the Runtime Server's gRPC API without it, the cloud metadata address. Each must be
# refused; the Health check (no token needed) and DNS (allowed egress) must answer, so that a
# refusal is the wall's and not a dead port. The victim must end as it would alone. On the
# host, the Runs' processes are uids of the Pod's range (the user namespace's 20000-29999).
rn_check_run_wall() {
  local secret pod server_pid base listen pids pid uid outputs key value expected run r failed=0 victim_pids='' server_pids='' pidns p
  secret="wall-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
  kubectl -n "$demo" apply -f - <<YAML
apiVersion: kruntimes.io/v1alpha1
kind: Runtime
metadata: { name: wall }
spec: { language: python, replicas: 1, runs: 4 }
YAML
  kubectl -n "$demo" wait --for=condition=Available runtime/wall --timeout=300s
  pod=$(kubectl -n "$demo" get pods -l kruntimes.io/runtime=wall -o jsonpath='{.items[0].metadata.name}')
  listen=$(kubectl -n "$demo" get pod "$pod" -o jsonpath='{.spec.containers[?(@.name=="runtime-server")].env[?(@.name=="KRT_LISTEN")].value}')
  [ -n "$listen" ] || fail "wall: no KRT_LISTEN in $pod's runtime-server"
  kubectl -n "$demo" apply -f - <<YAML
apiVersion: kruntimes.io/v1alpha1
kind: Run
metadata: { name: wall-victim }
spec:
  runtime: wall
  mode: { task: {} }
  timeout: 120s
  env: [{ name: VICTIM_SECRET, value: "$secret" }]
  source:
    inline: |
      import json, os, time
      with open("secret.txt", "w") as f:
          f.write(os.environ["VICTIM_SECRET"])
      time.sleep(40)
      with open("secret.txt") as f:
          same = f.read() == os.environ["VICTIM_SECRET"]
      with open(os.environ["KRT_OUTPUTS_FILE"], "w") as f:
          json.dump({"ended": "alone" if same else "its file was changed"}, f)
YAML
  kubectl -n "$demo" wait --for=jsonpath='{.status.phase}'=Running run/wall-victim --timeout=120s
  # On the host: the Runtime Server is uid 0 of the Pod's range, each Run a uid in it.
  server_pid=$(rn_host_pid "$demo" "$pod" runtime-server)
  [ -n "$server_pid" ] || fail "wall: no host process for $pod's runtime-server"
  read -r _ base _ <"/proc/$server_pid/uid_map"
  [ "$(rn_host_uid "$server_pid")" = "$base" ] || fail "wall: the Runtime Server's host uid $(rn_host_uid "$server_pid"), not $base"
  for _ in $(seq 1 20); do
    pids=$(for p in /proc/[0-9]*; do
      uid=$(awk '$1 == "Uid:" {print $2}' "$p/status" 2>/dev/null) || continue
      if [ -n "$uid" ] && [ "$uid" -ge $((base + 20000)) ] && [ "$uid" -le $((base + 29999)) ]; then echo "${p#/proc/}:$uid"; fi
    done)
    [ -n "$pids" ] && break
    sleep 0.5
  done
  [ -n "$pids" ] || fail "wall: no process of the victim Run on the host in uids $((base + 20000))-$((base + 29999))"
  printf 'the Pod %s: uid_map 0 %s 65536; the Runtime Server host uid %s (0 inside)\n' "$pod" "$base" "$base" >&2
  for pid in $pids; do
    printf '  a Run process on the host: pid %s uid %s (%s inside), %s\n' "${pid%%:*}" "${pid#*:}" "$((${pid#*:} - base))" "$(cat "/proc/${pid%%:*}/comm" 2>/dev/null)" >&2
    victim_pids+=" $(rn_pid_inside "${pid%%:*}")"
  done
  # The Runtime Server's processes (uid 0 of the Pod) in its PID namespace, as the attacker names them.
  pidns=$(readlink "/proc/$server_pid/ns/pid")
  for p in /proc/[0-9]*; do
    [ "$(readlink "$p/ns/pid" 2>/dev/null)" = "$pidns" ] && [ "$(rn_host_uid "${p#/proc/}" 2>/dev/null)" = "$base" ] &&
      server_pids+=" $(rn_pid_inside "${p#/proc/}")"
  done
  kubectl -n "$demo" apply -f - <<YAML
apiVersion: kruntimes.io/v1alpha1
kind: Run
metadata: { name: wall-attacker }
spec:
  runtime: wall
  mode: { task: {} }
  timeout: 60s
  env:
    - { name: ATTACK_SECRET, value: "$secret" }
    - { name: ATTACK_API, value: "$listen" }
    - { name: ATTACK_DNS, value: "${rn_cluster_dns:-10.203.0.2}" }
    - { name: ATTACK_VICTIM_PIDS, value: "${victim_pids# }" }
    - { name: ATTACK_SERVER_PIDS, value: "${server_pids# }" }
  source:
    inline: |
$(sed 's/^/      /' "$here/wall/attacker.py")
YAML
  kubectl -n "$demo" wait --for=jsonpath='{.status.phase}'=Succeeded run/wall-attacker --timeout=120s ||
    fail "wall: the attacker did not succeed: $(kubectl -n "$demo" get run wall-attacker -o jsonpath='{.status}')"
  for run in wall-victim wall-attacker; do
    [ "$(kubectl -n "$demo" get run "$run" -o jsonpath='{.status.assignedPod}')" = "$pod" ] || fail "wall: $run did not run on $pod"
  done
  outputs=$(kubectl -n "$demo" get run wall-attacker -o jsonpath='{.status.outputs}')
  printf '%-20s %-10s %s\n' 'ATTACK' EXPECTED RESULT >&2
  while IFS=$'\t' read -r key expected; do
    value=$(python3 -c 'import json, sys; print(json.loads(sys.argv[1]).get(sys.argv[2], "missing"))' "$outputs" "$key")
    # shellcheck disable=SC2053 # a glob on purpose
    if [[ $value == $expected ]]; then r=ok; else r=FAILED; failed=$((failed + 1)); fi
    printf '%-20s %-10s %s%s\n' "$key" "${expected%%[: ]*}" "$value" "$([ $r = ok ] || echo "   <- expected $expected")" >&2
  done <<'EXPECT'
uid	2[0-9][0-9][0-9][0-9] *
visible-processes	denied: only its own uid's
victim-environ	denied: ENOENT (*
victim-cmdline	denied: ENOENT (*
victim-signal	denied: EPERM (*
server-environ	denied: ENOENT (*
server-signal	denied: EPERM (*
sa-token	denied: ENOENT
api-token	denied: EACCES
host-paths	denied: ENOENT
server-root	denied: ENOENT
grpc-health	answered: status 0
grpc-no-token	GetExecution=16 CancelExecution=16 RegisterFunction=16 InvokeFunction=16 UnregisterFunction=16 Execute=16
metadata	denied: *
dns-allowed	OPEN: connected
user-namespace	denied: ENOSPC
EXPECT
  kubectl -n "$demo" wait --for=jsonpath='{.status.phase}'=Succeeded run/wall-victim --timeout=120s ||
    fail "wall: the victim did not succeed: $(kubectl -n "$demo" get run wall-victim -o jsonpath='{.status}')"
  value=$(kubectl -n "$demo" get run wall-victim -o jsonpath='{.status.outputs.ended}')
  printf '%-20s %-10s %s\n' victim-ended alone "$value" >&2
  [ "$value" = alone ] || failed=$((failed + 1))
  [ "$failed" -eq 0 ] || fail "wall: $failed of the attacks above were not refused as expected"
  kubectl -n "$demo" delete run wall-victim wall-attacker --wait=false >&2
  kubectl -n "$demo" delete runtime wall --wait=false >&2
}
