"""Benchmark driver (not a test): started by tools/benchmarks/src/sandbox-bench.ts,
which starts the system and sets KUBECONFIG (a user who may read and use the Runtime and
create, watch and delete Runs), KRT_GATEWAY_URL, KRT_GATEWAY_CA_FILE and the KRT_BENCH_*
variables read here.

One kruntimes.Sandbox session; its tool call (list_files) against the raw gateway request
with the same payload on one kept-open http.client.HTTPSConnection, call by call alternately
in rounds whose first path alternates; then sandboxes started and closed one after another.
Prints one JSON line of the samples (ms) on stdout; the bench summarizes them."""

import http.client
import json
import os
import ssl
import sys
import time
import urllib.parse
from typing import Callable, Dict, List

import kruntimes
from kruntimes.kube import KubeAccess

TOOL = {"tool": "list_files", "path": "."}


def timed(samples: List[float], one: Callable[[], object]) -> None:
    started = time.perf_counter()
    one()
    samples.append((time.perf_counter() - started) * 1000)


def main() -> None:
    namespace, runtime = os.environ["KRT_BENCH_NAMESPACE"], os.environ["KRT_BENCH_RUNTIME"]
    calls, rounds = int(os.environ["KRT_BENCH_CALLS"]), int(os.environ["KRT_BENCH_ROUNDS"])
    sandboxes, warmup = int(os.environ["KRT_BENCH_SANDBOXES"]), int(os.environ["KRT_BENCH_WARMUP"])
    token = KubeAccess.from_environment().token or ""
    samples: Dict[str, List[float]] = {"raw": [], "session": [], "ready": [], "close": []}

    with kruntimes.Sandbox(namespace, runtime, exclusive=True) as sandbox:
        # The raw request goes where the session's does: the Run's endpoint path at the gateway's origin.
        path = urllib.parse.urlsplit(sandbox.run["status"]["endpoint"]["url"]).path
        origin = urllib.parse.urlsplit(os.environ["KRT_GATEWAY_URL"])
        context = ssl.create_default_context(cafile=os.environ["KRT_GATEWAY_CA_FILE"])
        connection = http.client.HTTPSConnection(origin.hostname or "", origin.port or 443, context=context, timeout=30)
        body = json.dumps(TOOL, separators=(",", ":")).encode("utf-8")
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}

        def raw() -> None:
            connection.request("POST", path, body=body, headers=headers)
            answer = connection.getresponse()
            answer.read()
            if answer.status != 200:
                raise RuntimeError(f"raw gateway request answered {answer.status}")

        def session() -> None:
            sandbox.call("list_files", path=".")

        try:
            for _ in range(warmup):
                raw()
                session()
            per_round = -(-calls // rounds)
            for round_index in range(rounds):
                order = (("raw", raw), ("session", session))
                for _ in range(per_round):
                    for name, one in order if round_index % 2 == 0 else order[::-1]:
                        timed(samples[name], one)
        finally:
            connection.close()

    for _ in range(sandboxes):
        sandbox = kruntimes.Sandbox(namespace, runtime, exclusive=True)
        try:
            timed(samples["ready"], sandbox.start)
        finally:
            timed(samples["close"], sandbox.close)
    sys.stdout.write(json.dumps(samples) + "\n")


if __name__ == "__main__":
    main()
