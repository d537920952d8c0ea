"""Sandbox sessions against a live system: run by e2e/test/python-client.int.test.ts, which
starts the system, creates a Runtime with runs: 1 (KRT_TEST_SANDBOX_RUNTIME) and one with
runs > 1 (KRT_TEST_SHARED_RUNTIME), and gives the user of KRT_TEST_SANDBOX_KUBECONFIG what a
session needs (get Runtimes, use them, create, watch and delete Runs)."""

import os
import time
import warnings

import pytest

import kruntimes
from kruntimes.kube import KubeAccess

pytestmark = pytest.mark.skipif("KRT_TEST_SANDBOX_RUNTIME" not in os.environ,
                                reason="needs a live system: run through e2e/test/python-client.int.test.ts")


@pytest.fixture
def env():
    return {name[len("KRT_TEST_"):].lower(): value for name, value in os.environ.items() if name.startswith("KRT_TEST_")}


def session(env, runtime=None, **options):
    """A Sandbox as the tests' user, with the stock handler."""
    return kruntimes.Sandbox(env["namespace"], runtime or env["sandbox_runtime"], kubeconfig=env["sandbox_kubeconfig"],
                             **options)


def run_status(env, name):
    access = KubeAccess.from_environment(env["sandbox_kubeconfig"])
    return access.get_run(env["namespace"], name, 30)


def sandbox_runs(env):
    access = KubeAccess.from_environment(env["sandbox_kubeconfig"])
    status, runs = access.request("GET", f"/apis/kruntimes.io/v1alpha1/namespaces/{env['namespace']}/runs", 30)
    assert status == 200
    return [run["metadata"]["name"] for run in runs["items"] if run["metadata"]["name"].startswith("sandbox-")]


def test_a_session_creates_a_ready_run_serves_tools_and_leaves_no_run(env):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # runs: 1: no warning
        with session(env) as sb:
            assert sb.name.startswith("sandbox-")
            status, run = run_status(env, sb.name)
            assert (status, run["status"]["phase"]) == (200, "Ready")
            function = run["spec"]["mode"]["function"]
            assert function["idleTimeoutSeconds"] == 600
            assert sb.write_file("data/in.csv", "a,b\n1,2\n3,4\n") == 12
            done = sb.exec(python="import csv\nrows = list(csv.DictReader(open('data/in.csv')))\n"
                                  "open('data/out.txt', 'w').write(str(sum(int(r['b']) for r in rows)))\nprint(len(rows))")
            assert (done.exit_code, done.stdout, done.stderr_truncated) == (0, "2\n", False)
            assert sb.read_file("data/out.txt") == "6"
            assert sb.write_file("blob.bin", b"\x00\xff\x10") == 3
            assert sb.read_file("blob.bin", binary=True) == b"\x00\xff\x10"
            entries = {entry.name: entry for entry in sb.list_files("data")}
            assert (entries["in.csv"].type, entries["in.csv"].size) == ("file", 12)
            assert "data" in [entry.name for entry in sb.list_files()]
            failed = sb.exec("echo out; echo err >&2; exit 3")
            assert (failed.exit_code, failed.stdout, failed.stderr) == (3, "out\n", "err\n")
            name = sb.name
    # Closed: the Run was deleted and is gone (its finalizer removed), not merely deleting.
    assert run_status(env, name)[0] == 404
    with pytest.raises(kruntimes.SandboxClosed):
        sb.exec("true")


def test_tools_refuse_path_escapes_and_bad_calls_with_typed_errors_over_one_connection(env):
    with session(env) as sb:
        sb.exec("mkdir -p inside && ln -s /etc outside && ln -s .. up")
        sock = sb._connection._connection.sock
        for call in (lambda: sb.read_file("../secret"), lambda: sb.read_file("/etc/hostname"),
                     lambda: sb.write_file("inside/../../x", "no"), lambda: sb.read_file("outside/hostname"),
                     lambda: sb.list_files("up"), lambda: sb.list_files("outside")):
            with pytest.raises(kruntimes.PathOutsideWorkspace) as raised:
                call()
            error = raised.value
            assert isinstance(error, kruntimes.FunctionFailed)
            assert (error.code, error.source, error.http_status) == ("FunctionFailed", "function", 500)
            assert error.invocation_id
        with pytest.raises(kruntimes.InvalidToolCall) as raised:
            sb.call("format_disk")
        assert raised.value.source == "function"
        # Every call went over the same kept-open connection.
        assert sb._connection._connection.sock is sock
        assert sb.exec("ls ..").exit_code == 0  # a command is not a path: it runs where the workspace is


def test_a_command_over_its_time_limit_is_a_bounded_error_and_the_sandbox_stays_ready(env):
    with session(env) as sb:
        with pytest.raises(kruntimes.ExecTimeout) as raised:
            sb.exec("echo started; sleep 30", timeout_seconds=1)
        assert "timed out after 1 s" in raised.value.message
        assert "started" in raised.value.message
        status, run = run_status(env, sb.name)
        assert run["status"]["phase"] == "Ready"
        assert sb.exec("echo still here").stdout == "still here\n"


def test_a_runtime_with_more_than_one_run_per_pod_warns_and_exclusive_refuses(env):
    before = sandbox_runs(env)
    with pytest.raises(kruntimes.RuntimeNotExclusive) as raised:
        session(env, env["shared_runtime"], exclusive=True).start()
    assert raised.value.code == "RuntimeNotExclusive"
    assert "runs: 3" in raised.value.message
    assert sandbox_runs(env) == before  # nothing was created
    with pytest.raises(kruntimes.KubernetesApiError) as raised:
        session(env, "no-such-runtime").start()
    assert (raised.value.code, raised.value.http_status) == ("RuntimeNotFound", 404)
    with pytest.warns(kruntimes.NotExclusiveWarning, match="runs: 3"):
        sb = session(env, env["shared_runtime"]).start()
    with sb:
        assert sb.exec("echo shared").stdout == "shared\n"
    assert sandbox_runs(env) == before


def test_cancel_ends_the_run_which_stays_until_deleted(env):
    sb = session(env, idle_timeout_seconds=120, ttl_seconds_after_finished=30).start()
    ended = sb.cancel()
    assert ended["status"]["phase"] == "Cancelled"
    status, run = run_status(env, sb.name)
    assert (status, run["status"]["phase"], run["spec"]["ttlSecondsAfterFinished"]) == (200, "Cancelled", 30)
    with pytest.raises(kruntimes.SandboxClosed):
        sb.exec("true")
    sb.close()  # after cancel: nothing more
    access = KubeAccess.from_environment(env["sandbox_kubeconfig"])
    assert access.request("DELETE", f"/apis/kruntimes.io/v1alpha1/namespaces/{env['namespace']}/runs/{sb.name}", 30)[0] == 200


def test_a_tool_call_on_a_sandbox_deleted_behind_its_back_is_a_typed_platform_error(env):
    with session(env) as sb:
        access = KubeAccess.from_environment(env["sandbox_kubeconfig"])
        assert access.request("DELETE", f"/apis/kruntimes.io/v1alpha1/namespaces/{env['namespace']}/runs/{sb.name}", 30)[0] == 200
        # A call in the moment before runtimed's cache saw the deletion is still served:
        # call until refused, at most 10 s.
        deadline = time.monotonic() + 10
        with pytest.raises((kruntimes.RunNotReady, kruntimes.RunNotFound)) as raised:
            while time.monotonic() < deadline:
                sb.exec("true")
                time.sleep(0.05)
        assert (raised.value.source, raised.value.sent) == ("platform", True)
        assert raised.value.invocation_id
