# A Run's user code attacking the wall around the other Runs of its Runtime Pod (checks.sh
# rn_check_run_wall, on the real node with hostUsers: false). Each way in is tried once;
# its result, "denied: <errno or status>" or "OPEN: <what it got>", is an output of this
# task (16 at most). Never prints a secret it may have found: only that it found one.
import errno, json, os, signal, socket, subprocess

SECRET = os.environ.get("ATTACK_SECRET", "")  # the victim's, to recognise it (never printed)
API = os.environ["ATTACK_API"]                # the Runtime Server's listen address
me = os.getuid()

def name(e):
    return errno.errorcode.get(e.errno, str(e.errno))

def uid_of(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("Uid:"):
                return int(line.split()[1])

others = {}
for entry in os.listdir("/proc"):
    if entry.isdigit() and int(entry) != os.getpid():
        try:
            others[int(entry)] = uid_of(entry)
        except OSError:
            pass
visible = sorted({u for u in others.values() if u != me})   # uids of other processes this Run can see

# Where to aim, from the host (the pids in the Pod's PID namespace): /proc may hide them.
def pids_of(variable):
    return [int(p) for p in os.environ.get(variable, "").split()]

runs = pids_of("ATTACK_VICTIM_PIDS")       # the other Run's processes
servers = pids_of("ATTACK_SERVER_PIDS")    # the Runtime Server's (uid 0 of the Pod)

def each(pids, attempt):
    if not pids:
        return "not tried: no pid given"
    results = set()
    for pid in pids:
        try:
            results.add("OPEN: " + attempt(pid))
        except OSError as e:
            results.add("denied: " + name(e))
    return f"{' | '.join(sorted(results))} ({len(pids)} pids)"

def cmdline(pid):
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        return f"read {len(f.read())} bytes"

def user_namespace():
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(0x10000000) == 0:  # CLONE_NEWUSER
        return "OPEN: made a user namespace"
    return "denied: " + errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))

def environ(pid):
    with open(f"/proc/{pid}/environ", "rb") as f:
        data = f.read()
    return "read it" + (", the victim's secret in it" if SECRET and SECRET.encode() in data else "")

def kill(pid):
    os.kill(pid, signal.SIGTERM)
    return "SIGTERM sent"

def read(path):
    try:
        if os.path.isdir(path):
            return "OPEN: listed " + str(len(os.listdir(path))) + " entries"
        with open(path, "rb") as f:
            return f"OPEN: read {len(f.read())} bytes"
    except OSError as e:
        return "denied: " + name(e)

def connect(host, port):
    s = socket.socket()
    s.settimeout(3)
    try:
        s.connect((host, port))
        return "OPEN: connected"
    except socket.timeout:
        return "denied: timeout (3 s)"
    except OSError as e:
        return "denied: " + name(e)
    finally:
        s.close()

# gRPC without the API token, over node's own http2 (the image's node; no gRPC library needed):
# an empty request message each; the answer's grpc-status (16 is UNAUTHENTICATED).
GRPC = r"""
const http2 = require('node:http2');
const [address, ...paths] = process.argv.slice(1);
const session = http2.connect('http://' + address);
session.on('error', (e) => { console.log(JSON.stringify({ error: e.code })); process.exit(0); });
const out = {};
let left = paths.length;
for (const path of paths) {
  const req = session.request({ ':method': 'POST', ':path': path, 'content-type': 'application/grpc', te: 'trailers' });
  let status;
  const done = () => { out[path.split('/').pop()] = status ?? 'none'; if (--left === 0) { console.log(JSON.stringify(out)); process.exit(0); } };
  req.on('response', (h) => { if (h['grpc-status'] !== undefined) status = h['grpc-status']; });
  req.on('trailers', (h) => { status = h['grpc-status']; });
  req.on('data', () => {});
  req.on('end', done);
  req.on('error', (e) => { status = e.code; done(); });
  req.end(Buffer.from([0, 0, 0, 0, 0]));
}
setTimeout(() => { console.log(JSON.stringify({ error: 'timeout', ...out })); process.exit(0); }, 5000);
"""
methods = ["GetExecution", "CancelExecution", "RegisterFunction", "InvokeFunction", "UnregisterFunction", "Execute"]
paths = ["/grpc.health.v1.Health/Check"] + [f"/kruntimes.runtimeserver.v1.RuntimeServer/{m}" for m in methods]
try:
    answer = subprocess.run(["node", "-e", GRPC, API, *paths], capture_output=True, text=True, timeout=15)
    grpc = json.loads((answer.stdout.strip().splitlines() or ["{}"])[-1])
except Exception as e:  # noqa: BLE001 - reported, not raised
    grpc = {"error": repr(e)}

out = {
    "uid": f"{me} (aimed at: the Runtime Server's {len(servers)} pids, the other Run's {len(runs)})",
    "visible-processes": "OPEN: processes of uids " + str(visible) if visible else "denied: only its own uid's",
    "victim-environ": each(runs, environ),
    "victim-cmdline": each(runs, cmdline),
    "victim-signal": each(runs, kill),
    "server-environ": each(servers, environ),
    "server-signal": each(servers, kill),
    "sa-token": read("/var/run/secrets/kubernetes.io/serviceaccount/token"),
    "api-token": read("/var/run/kruntimes/api/token"),
    "host-paths": " | ".join(sorted({read(p) for p in ["/var/lib/krt-real-node", "/var/lib/kubelet/pods"]})),
    "server-root": read("/proc/1/root/var/run/kruntimes/api"),
    "grpc-health": ("answered: status " + str(grpc.get("Check"))) if "Check" in grpc else "no answer: " + json.dumps(grpc),
    "grpc-no-token": " ".join(f"{m}={grpc.get(m)}" for m in methods) + (" " + grpc["error"] if "error" in grpc else ""),
    "metadata": connect("169.254.169.254", 80),
    "dns-allowed": connect(os.environ.get("ATTACK_DNS", "10.203.0.2"), 53),
    "user-namespace": user_namespace(),
}
with open(os.environ["KRT_OUTPUTS_FILE"], "w") as f:
    json.dump(out, f)
for k, v in out.items():
    print(f"{k}: {v}")
