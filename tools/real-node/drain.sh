# shellcheck shell=bash
# shellcheck disable=SC2154 # system, demo, work, here, pids and gateway_ip are the caller's
# A second node and a node drain (issue 42), as functions for tools/real-node/run.sh (sourced
# after e2e/cluster-steps.sh and checks.sh: uses system, demo, work, here, pids, kubectl, fail).
#
#   rn_drain_prepare     on the first node alone: Runtime `drainer` (2 Pods, both on krt-node),
#                        two function Runs on it, an invoker with `get` on the demo Runs
#   rn_second_node_up    krt-node2 (net.sh and node.sh with KRT_NODE_INDEX=2, the images
#                        imported before its kubelet starts), Ready
#   rn_check_across_nodes  from a Pod on krt-node2: CoreDNS (on krt-node), the gateway's
#                        ClusterIP and a gateway Pod IP (both on krt-node)
#   rn_check_drain       tasks that fit the drain window, invokes in a loop through the
#                        gateway, `kubectl drain krt-node`: checked and measured (below),
#                        then `kubectl uncordon krt-node`

rn_drain_runtime=drainer
rn_drain_seconds=90
# A task sleeps this long; started just before the drain, it fits the window.
rn_drain_task_seconds=40
rn_drain_functions=(drain-fn-a drain-fn-b)
rn_drain_tasks=(drain-task-1 drain-task-2 drain-task-3 drain-task-4)

rn_run_field() { kubectl -n "$demo" get run "$1" -o jsonpath="$2"; }
rn_pod_node() { kubectl -n "$demo" get pod "$1" -o jsonpath='{.spec.nodeName}' 2>/dev/null || true; }

rn_drain_prepare() {
  kubectl -n "$demo" apply -f - >/dev/null <<YAML
apiVersion: kruntimes.io/v1alpha1
kind: Runtime
metadata: { name: $rn_drain_runtime }
spec: { language: python, replicas: 2, runs: 8, drainSeconds: $rn_drain_seconds }
YAML
  local fn
  for fn in "${rn_drain_functions[@]}"; do
    kubectl -n "$demo" apply -f - >/dev/null <<YAML
apiVersion: kruntimes.io/v1alpha1
kind: Run
metadata: { name: $fn }
spec:
  runtime: $rn_drain_runtime
  mode: { function: { handler: "main:handle" } }
  source:
    inline: |
      def handle(event, context):
          return {"echo": event, "invocation": context.invocation_id}
YAML
  done
  kubectl -n "$demo" wait --for=condition=Available "runtime/$rn_drain_runtime" --timeout=300s >/dev/null
  for fn in "${rn_drain_functions[@]}"; do kubectl -n "$demo" wait --for=condition=Ready "run/$fn" --timeout=300s >/dev/null; done
  # Removed again at the end of rn_check_drain (the uninstall check lists what is left).
  kubectl -n "$demo" create serviceaccount drain-invoker >/dev/null
  kubectl -n "$demo" create role drain-invoke --verb=get --resource=runs.kruntimes.io >/dev/null
  kubectl -n "$demo" create rolebinding drain-invoke --role=drain-invoke --serviceaccount="$demo:drain-invoker" >/dev/null
  kubectl -n "$demo" get pods -l "kruntimes.io/runtime=$rn_drain_runtime" -o wide >&2
}

rn_second_node_up() {
  KRT_NODE_INDEX=2 "$here/net.sh" up
  # The images before the kubelet: no Pod may land on a node that lacks them.
  KRT_NODE_INDEX=2 KRT_IMPORT_IMAGES=1 KRT_CLUSTER_DIR="$work/cluster" "$here/node.sh" up
  kubectl wait --for=condition=Ready node/krt-node2 --timeout=180s
  kubectl get nodes -o wide >&2
}

# A client Pod on krt-node2 (runtimed's image: node, uid 65532, read-only root) resolves the
# gateway's name through CoreDNS (on krt-node, 10.203.0.2), connects to the gateway's
# ClusterIP (node 2's kube-proxy, a backend on krt-node) and to a gateway Pod IP on krt-node
# (Pod to Pod through the host), in the demo namespace, which the gateway's policy admits.
# Retried until they connect (10 s at most: kube-router's ipset lag for a new Pod).
rn_check_across_nodes() { # image with node
  local image=$1 gateway_pod pod_ip pod_port cluster_ip out
  cluster_ip=$(kubectl -n "$system" get service runtime-gateway -o jsonpath='{.spec.clusterIP}')
  gateway_pod=$(kubectl -n "$system" get pods -l app.kubernetes.io/name=runtime-gateway --field-selector spec.nodeName=krt-node -o jsonpath='{.items[0].metadata.name}')
  [ -n "$gateway_pod" ] || fail "no gateway Pod on krt-node"
  pod_ip=$(kubectl -n "$system" get pod "$gateway_pod" -o jsonpath='{.status.podIP}')
  pod_port=$(kubectl -n "$system" get pod "$gateway_pod" -o jsonpath='{.spec.containers[0].ports[0].containerPort}')
  # shellcheck disable=SC2016 # JavaScript, not shell
  local script='const net = require("node:net"), dns = require("node:dns").promises;
const connect = (host, port) => new Promise((resolve) => {
  const socket = net.connect({ host, port, timeout: 3000 });
  const done = (result) => { socket.destroy(); resolve(result); };
  socket.once("connect", () => done("connected"));
  socket.once("timeout", () => done("timeout"));
  socket.once("error", (e) => done(e.code || "error"));
});
const retry = async (what, fn, ok) => {
  const started = Date.now(); let result, attempts = 0;
  do {
    if (attempts > 0) await new Promise((r) => setTimeout(r, 250));
    attempts += 1;
    result = await fn().catch((e) => e.code || String(e));
  } while (!ok(result) && Date.now() - started < 10000);
  console.log(`${what} ${result} ${attempts} ${Date.now() - started}`);
};
(async () => {
  const [name, clusterIp, podIp, podPort] = process.argv.slice(1);
  await retry(`dns:${name}`, async () => (await dns.lookup(name)).address, (a) => a === clusterIp);
  await retry(`service:${clusterIp}:443`, () => connect(clusterIp, 443), (r) => r === "connected");
  await retry(`pod:${podIp}:${podPort}`, () => connect(podIp, Number(podPort)), (r) => r === "connected");
})();'
  kubectl -n "$demo" apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: { name: across-nodes-client }
spec:
  nodeName: krt-node2
  restartPolicy: Never
  automountServiceAccountToken: false
  securityContext: { runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532, seccompProfile: { type: RuntimeDefault } }
  containers:
    - name: client
      image: $image
      imagePullPolicy: Never
      command: [node, -e, $(rn_json "$script")]
      args: $(rn_json_list "runtime-gateway.$system.svc.cluster.local" "$cluster_ip" "$pod_ip" "$pod_port")
      securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: [ALL] } }
YAML
  kubectl -n "$demo" wait --for=jsonpath='{.status.phase}'=Succeeded pod/across-nodes-client --timeout=90s >/dev/null ||
    { kubectl -n "$demo" describe pod across-nodes-client >&2; fail "the client Pod on krt-node2 did not complete within 90 s"; }
  out=$(kubectl -n "$demo" logs across-nodes-client)
  kubectl -n "$demo" delete pod across-nodes-client --wait --timeout=60s >/dev/null
  printf 'from a Pod on krt-node2 (target, result, attempts, ms):\n%s\n' "$out" >&2
  grep -q "^dns:runtime-gateway.$system.svc.cluster.local $cluster_ip " <<<"$out" || fail "the gateway's name did not resolve to $cluster_ip from krt-node2"
  grep -q "^service:$cluster_ip:443 connected " <<<"$out" || fail "the gateway's ClusterIP is not reachable from krt-node2"
  grep -q "^pod:$pod_ip:$pod_port connected " <<<"$out" || fail "the gateway Pod $pod_ip on krt-node is not reachable from krt-node2"
}

# One function invoked through the gateway's ClusterIP from the host (via krt-node's
# kube-proxy) every half second until $work/drain-stop exists (bounded: 20 min): a line
# "epoch-ms http-code curl-exit-code seconds-to-connect seconds-in-all" each (code 000: no
# answer; curl's exit code says why: 7 refused, 28 the 10 s timeout, 52/56 closed or reset).
rn_invoke_loop() { # run name, runtime, token file, output file
  local name=$1 runtime=$2 token=$3 out=$4 uid i code rc
  uid=$(rn_run_field "$name" '{.metadata.uid}')
  for i in $(seq 1 2400); do
    [ -e "$work/drain-stop" ] && break
    rc=0
    code=$(curl -s -o /dev/null -w '%{http_code} %{time_connect} %{time_total}' --max-time 10 \
      --resolve "runtime-gateway.$system.svc:443:$gateway_ip" --cacert "$work/gw-ca.crt" \
      -H "Authorization: Bearer $(cat "$token")" -H 'Content-Type: application/json' \
      -H "X-Kruntime-Invocation-ID: $name-drain-$i" --data "{\"name\":\"$name-$i\"}" \
      "https://runtime-gateway.$system.svc/v1/namespaces/$demo/runtimes/$runtime/functions/$uid:invoke") || rc=$?
    read -r code connect total <<<"${code:-000 0 0}"
    echo "$(date +%s%3N) $code $rc $connect $total" >>"$out"
    sleep 0.5
  done
}

# The longest time without a 200 from the drain's start on (ms), the 200s and the others
# (a 000 with curl's exit code: 000/28 a call that got no answer within 10 s).
rn_gap_stats() { # file, drain start (epoch ms)
  python3 - "$1" "$2" <<'PY'
import sys
rows = [line.split() for line in open(sys.argv[1]) if line.strip()]
start = int(sys.argv[2])
oks = [int(r[0]) for r in rows if r[1] == "200"]
before = [t for t in oks if t <= start]
after = [t for t in oks if t > start]
points = ([before[-1]] if before else [start]) + after
gap = max((b - a for a, b in zip(points, points[1:])), default=0)
others = {}
for r in rows:
    if r[1] != "200" and int(r[0]) > start:
        key = r[1] if r[1] != "000" else f"000/{r[2]}"
        others[key] = others.get(key, 0) + 1
print(gap, len(after), ",".join(f"{c}x{n}" for c, n in sorted(others.items())) or "none")
PY
}

# The calls that got no answer, from the drain's start on: when (s after the start), curl's
# exit code, seconds to connect (0: never connected) and in all; and the gateway Service's
# endpoints (address:ready/serving/terminating@node) as they were when the call was sent,
# and their next change.
rn_unanswered() { # file, drain start (epoch ms), function, endpoints timeline ("epoch-ms endpoints...")
  python3 - "$@" <<'PY'
import sys
path, start, fn, timeline = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
try:
    changes = [(int(l.split(" ", 1)[0]), l.split(" ", 1)[1].strip() if " " in l.strip() else "") for l in open(timeline) if l.strip()]
except OSError:
    changes = []
for row in (l.split() for l in open(path) if l.strip()):
    t, code, rc, connect, total = int(row[0]), row[1], row[2], row[3], float(row[4])
    if t <= start or code != "000":
        continue
    sent = t - total * 1000
    print(f"  {fn}: no answer at +{(t - start) / 1000:.1f} s (sent at +{(sent - start) / 1000:.1f} s): curl exit {rc}, connected after {connect} s, gave up after {total:.1f} s")
    then = [c for c in changes if c[0] <= sent]
    after = [c for c in changes if c[0] > sent]
    if then:
        print(f"    gateway endpoints when sent: {then[-1][1]}")
    if after:
        print(f"    next change at +{(after[0][0] - start) / 1000:.1f} s: {after[0][1]}")
PY
}

# From the drainer's Pod watch ("epoch-ms name deletionTimestamp ready" a line, in the API's
# order): each Pod's eviction (its first line with a deletionTimestamp) and how many other
# Pods were Ready and not deleting then; readiness dips of Pods not deleting. Ends with
# "evictions: N, each with >= DESIRED other Pods Ready" when every eviction kept the budget.
rn_evictions() { # file, drain start (epoch ms), desiredHealthy
  python3 - "$@" <<'PY'
import sys
path, start, desired = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
state, evictions, dips = {}, [], []
for line in open(path):
    parts = line.rstrip("\n").split(" ")
    if len(parts) < 4 or not parts[1]:
        continue
    t, name, deleting, ready = int(parts[0]), parts[1], parts[2] != "", parts[3] == "True"
    before = state.get(name)
    if deleting and not (before and before[0]):
        others = sum(1 for n, (d, r) in state.items() if n != name and not d and r)
        evictions.append((t, name, others))
    if not deleting and before and before[1] and not ready:
        dips.append((t, name))
    state[name] = (deleting, ready)
for t, name, others in evictions:
    print(f"  evicted {name} at +{(t - start) / 1000:.1f} s with {others} other Pod(s) Ready")
for t, name in dips:
    print(f"  readiness dip (no eviction): {name} not Ready at +{(t - start) / 1000:.1f} s")
ok = evictions and all(o >= desired for _, _, o in evictions)
print(f"evictions: {len(evictions)}, " + (f"each with >= {desired} other Pods Ready" if ok else "NOT each with enough other Pods Ready"))
PY
}

# A Service's endpoints (address:ready/serving/terminating@node ...) every half second until
# $work/drain-stop exists (bounded: 20 min), a line "epoch-ms endpoints" at each change.
# Polled: `kubectl get endpointslices --watch -o jsonpath` printed the first state only.
rn_poll_endpoints() { # service in the release namespace, output file
  local last='' now i
  for i in $(seq 1 2400); do
    [ -e "$work/drain-stop" ] && break
    now=$(kubectl -n "$system" get endpointslices -l "kubernetes.io/service-name=$1" \
      -o jsonpath='{range .items[*].endpoints[*]}{.addresses[0]}:{.conditions.ready}/{.conditions.serving}/{.conditions.terminating}@{.nodeName} {end}' 2>/dev/null || true)
    if [ "$now" != "$last" ]; then echo "$(date +%s%3N) $now" >>"$2"; last=$now; fi
    sleep 0.5
  done
}

rn_check_drain() {
  local fn task name started drain_ms drain_start refused pod node before_attempt before_moves attempt moves phase reason
  local functions=(hello "${rn_drain_functions[@]}") failed=0
  declare -A runtime_of attempt_before moves_before
  for fn in "${functions[@]}"; do
    runtime_of[$fn]=$(rn_run_field "$fn" '{.spec.runtime}')
    attempt_before[$fn]=$(rn_run_field "$fn" '{.status.attempt}')
    moves_before[$fn]=$(rn_run_field "$fn" '{.status.plannedMoves}')
    pod=$(rn_run_field "$fn" '{.status.assignedPod}')
    [ "$(rn_pod_node "$pod")" = krt-node ] || fail "function $fn is on $pod of $(rn_pod_node "$pod"), not on krt-node before the drain"
  done
  for task in "${rn_drain_tasks[@]}"; do
    kubectl -n "$demo" apply -f - >/dev/null <<YAML
apiVersion: kruntimes.io/v1alpha1
kind: Run
metadata: { name: $task }
spec:
  runtime: $rn_drain_runtime
  mode: { task: {} }
  source:
    inline: |
      import time
      time.sleep($rn_drain_task_seconds)
      print("done")
YAML
  done
  for task in "${rn_drain_tasks[@]}"; do
    kubectl -n "$demo" wait --for=jsonpath='{.status.phase}'=Running "run/$task" --timeout=180s >/dev/null
  done

  # Invokes in a loop, one per function, with a token of an invoker that may get the Runs.
  kubectl -n "$demo" create token drain-invoker --duration=30m >"$work/drain-token"
  rm -f "$work/drain-stop"
  for fn in "${functions[@]}"; do
    rn_invoke_loop "$fn" "${runtime_of[$fn]}" "$work/drain-token" "$work/drain-invoke-$fn.txt" &
    pids+=($!)
  done
  # The drainer's budget as the disruption controller sees it, all along, and its Pods (one
  # watch: its events come in the order the API server made the changes).
  kubectl -n "$demo" get pdb "$rn_drain_runtime" --watch \
    -o jsonpath='{.status.currentHealthy} {.status.desiredHealthy} {.status.disruptionsAllowed}{"\n"}' >"$work/drain-pdb.txt" 2>/dev/null &
  pids+=($!)
  kubectl -n "$demo" get pods -l "kruntimes.io/runtime=$rn_drain_runtime" --watch \
    -o jsonpath='{.metadata.name} {.metadata.deletionTimestamp} {.status.conditions[?(@.type=="Ready")].status}{"\n"}' \
    2>/dev/null > >(while IFS= read -r line; do printf '%s %s\n' "$(date +%s%3N)" "$line"; done >"$work/drain-pods.txt") &
  pids+=($!)
  # The gateway Service's endpoints through the drain, each change with its time.
  rn_poll_endpoints runtime-gateway "$work/drain-gateway-endpoints.txt" &
  pids+=($!)
  # The gateway Pods' logs through the drain (an evicted Pod's go with it).
  for pod in $(kubectl -n "$system" get pods -l app.kubernetes.io/name=runtime-gateway -o jsonpath='{.items[*].metadata.name}'); do
    kubectl -n "$system" logs -f "$pod" >"$work/drain-gateway-$pod.log" 2>&1 &
    pids+=($!)
  done
  sleep 5
  for fn in "${functions[@]}"; do
    awk '$2 == 200' "$work/drain-invoke-$fn.txt" | grep -q . || fail "function $fn does not answer 200 before the drain: $(tail -n 3 "$work/drain-invoke-$fn.txt" | xargs)"
  done

  drain_start=$(date +%s%3N)
  started=$SECONDS
  kubectl drain krt-node --ignore-daemonsets --delete-emptydir-data --timeout=600s >"$work/drain.log" 2>&1 ||
    { cat "$work/drain.log" >&2; fail "kubectl drain krt-node failed"; }
  drain_ms=$(($(date +%s%3N) - drain_start))
  # kubectl drain retries an eviction the API refuses with 429 (a PodDisruptionBudget).
  refused=$(grep -c 'violate the pod.s disruption budget' "$work/drain.log" || true)

  # Tasks: each fit its window, so each ends Succeeded (none Interrupted).
  printf '%-14s %-10s %-20s %s\n' TASK PHASE REASON POD >&2
  for task in "${rn_drain_tasks[@]}"; do
    kubectl -n "$demo" wait --for=jsonpath='{.status.phase}'=Succeeded "run/$task" --timeout=180s >/dev/null 2>&1 || true
    phase=$(rn_run_field "$task" '{.status.phase}')
    reason=$(rn_run_field "$task" '{.status.reason}')
    printf '%-14s %-10s %-20s %s\n' "$task" "$phase" "${reason:--}" "$(rn_run_field "$task" '{.status.assignedPod}')" >&2
    [ "$phase" = Succeeded ] || failed=1
  done
  [ "$failed" = 0 ] || fail "a task that fit the drain window did not end Succeeded (table above)"

  # Functions: moved (plannedMoves + 1 at least), no attempt spent, Ready on krt-node2, and
  # answering 200 again through the gateway.
  for fn in "${functions[@]}"; do kubectl -n "$demo" wait --for=condition=Ready "run/$fn" --timeout=180s >/dev/null; done
  local deadline=$((SECONDS + 120)) all
  until [ "$SECONDS" -ge "$deadline" ]; do
    all=1
    for fn in "${functions[@]}"; do
      [ "$(awk -v s="$((drain_start + drain_ms))" '$1 > s && $2 == 200' "$work/drain-invoke-$fn.txt" | wc -l)" -ge 3 ] || all=0
    done
    [ "$all" = 1 ] && break
    sleep 1
  done
  touch "$work/drain-stop"
  sleep 11 # the loops' last calls (10 s at most)
  printf '%-12s %-9s %-8s %-12s %-42s %-10s %-14s %-6s %s\n' FUNCTION ATTEMPT MOVES 'RUNTIME' POD NODE 'LONGEST GAP' '200s' 'OTHER CODES (after the start)' >&2
  local gap oks others
  for fn in "${functions[@]}"; do
    attempt=$(rn_run_field "$fn" '{.status.attempt}')
    moves=$(rn_run_field "$fn" '{.status.plannedMoves}')
    pod=$(rn_run_field "$fn" '{.status.assignedPod}')
    node=$(rn_pod_node "$pod")
    read -r gap oks others < <(rn_gap_stats "$work/drain-invoke-$fn.txt" "$drain_start")
    printf '%-12s %-9s %-8s %-12s %-42s %-10s %-14s %-6s %s\n' "$fn" "${attempt_before[$fn]}->$attempt" "${moves_before[$fn]:-0}->$moves" \
      "${runtime_of[$fn]}" "$pod" "$node" "$((gap / 1000)).$((gap % 1000 / 100)) s" "$oks" "$others" >&2
    before_attempt=${attempt_before[$fn]}
    before_moves=${moves_before[$fn]:-0}
    [ "${moves:-0}" -ge $((before_moves + 1)) ] || { failed=1; echo "$fn: plannedMoves did not grow" >&2; }
    # A planned move spends no attempt: the attempts added are the moves added.
    [ "$((attempt - before_attempt))" = "$((moves - before_moves))" ] || { failed=1; echo "$fn: an attempt was spent" >&2; }
    case " ${rn_drain_functions[*]} " in *" $fn "*) [ "$attempt" = "$((1 + moves))" ] || { failed=1; echo "$fn: attempt $attempt != 1 + plannedMoves $moves" >&2; } ;; esac
    [ "$node" = krt-node2 ] || { failed=1; echo "$fn: on $node, not krt-node2" >&2; }
    [ "$(awk -v s="$((drain_start + drain_ms))" '$1 > s && $2 == 200' "$work/drain-invoke-$fn.txt" | wc -l)" -ge 1 ] ||
      { failed=1; echo "$fn: no 200 after the drain" >&2; }
  done
  for fn in "${functions[@]}"; do rn_unanswered "$work/drain-invoke-$fn.txt" "$drain_start" "$fn" "$work/drain-gateway-endpoints.txt" >&2; done
  # What the evicted gateway Pods logged at warn or above (pino level >= 40), for the calls
  # above that got no answer.
  grep -h '"level":[45][0-9]' "$work"/drain-gateway-*.log 2>/dev/null | tail -n 8 | cut -c1-300 | sed 's/^/  gateway: /' >&2 || true
  [ "$failed" = 0 ] || fail "a function did not move as a planned move (above)"

  # The budget held: each drainer Pod was evicted (its deletion) while the other Pods Ready
  # and not deleting were at least desiredHealthy (maxUnavailable 1 of 2: 1), i.e. one at a
  # time, the second only once the first one's replacement was Ready. A Pod's readiness may
  # still dip for a moment without any eviction (the kubelet's probe, 1 s timeout, on a loaded
  # machine): printed, not a budget's doing.
  local min_healthy desired evictions
  read -r min_healthy desired < <(awk 'NF >= 2 { if (min == "" || $1 < min) min = $1; d = $2 } END { print min, d }' "$work/drain-pdb.txt")
  evictions=$(rn_evictions "$work/drain-pods.txt" "$drain_start" "${desired:-1}")
  printf 'kubectl drain krt-node: %s.%s s (drainSeconds %s, tasks of %s s); evictions refused by a PodDisruptionBudget (429, retried by kubectl drain): %s\n' \
    "$((drain_ms / 1000))" "$((drain_ms % 1000 / 100))" "$rn_drain_seconds" "$rn_drain_task_seconds" "$refused" >&2
  grep 'violate the pod.s disruption budget' "$work/drain.log" | sed -E 's/.*pods\/"([^"]+)" -n "([^"]+)".*/\2\/\1/' | sort | uniq -c |
    awk '{ printf "  refused %s time(s): %s\n", $1, $2 }' >&2
  printf 'PodDisruptionBudget %s: desiredHealthy %s, currentHealthy at least %s all along\n' "$rn_drain_runtime" "${desired:-?}" "${min_healthy:-?}" >&2
  echo "$evictions" >&2
  grep -q '^evictions: 2, each with' <<<"$evictions" || fail "the drainer's PodDisruptionBudget did not hold (above; PDB status: $(xargs <"$work/drain-pdb.txt"))"
  [ "$refused" -ge 1 ] || fail "no eviction was refused: the budgets were not tested (two Pods of a Runtime on krt-node)"
  kubectl get pods -A -o wide --field-selector spec.nodeName=krt-node 2>/dev/null | sed 's/^/  left on krt-node: /' >&2

  kubectl uncordon krt-node
  kubectl -n "$demo" delete runs "${rn_drain_tasks[@]}" --wait --timeout=120s >/dev/null
  kubectl -n "$demo" delete rolebinding drain-invoke >/dev/null
  kubectl -n "$demo" delete role drain-invoke >/dev/null
  kubectl -n "$demo" delete serviceaccount drain-invoker >/dev/null
}
