"""Against a live system's gateway: run by e2e/test/python-client.int.test.ts, which starts
the system, creates the Runs and sets the environment read here."""

import os
import pathlib
import threading
import time

import pytest

import kruntimes

pytestmark = pytest.mark.skipif("KRT_TEST_NAMESPACE" not in os.environ,
                                reason="needs a live system: run through e2e/test/python-client.int.test.ts")


@pytest.fixture
def env():
    return {name[len("KRT_TEST_"):].lower(): value for name, value in os.environ.items() if name.startswith("KRT_TEST_")}


def test_invoke_by_name_reads_the_endpoint_and_ca_from_the_run(env):
    answer = kruntimes.invoke((env["namespace"], env["run"]), {"n": 1}, invocation_id="py-by-name-1")
    assert answer.result == {"echo": {"n": 1}, "id": "py-by-name-1"}
    assert (answer.invocation_id, answer.attempt) == ("py-by-name-1", 1)
    assert answer.stdout["data"] == "handled\n"


def test_invoke_by_url_with_a_token_and_a_ca_file(env):
    answer = kruntimes.invoke(env["url"], [1, 2, 3], token=env["token"], ca_file=env["gateway_ca_file"])
    assert answer.result["echo"] == [1, 2, 3]


def test_a_raising_handler_is_function_failed_with_its_invocation_id(env):
    with pytest.raises(kruntimes.FunctionFailed) as raised:
        kruntimes.invoke((env["namespace"], env["run"]), {"fail": True}, invocation_id="py-fail-1")
    error = raised.value
    assert (error.code, error.source, error.http_status, error.invocation_id) == ("FunctionFailed", "function", 500, "py-fail-1")
    assert "the handler refuses" in error.message


def test_a_run_the_caller_may_not_get_is_forbidden_at_the_gateway(env):
    with pytest.raises(kruntimes.Forbidden) as raised:
        kruntimes.invoke(env["forbidden_url"], {}, token=env["token"], ca_file=env["gateway_ca_file"], invocation_id="py-403")
    assert (raised.value.http_status, raised.value.invocation_id) == (403, "py-403")


def test_a_run_the_caller_may_not_read_is_forbidden_before_anything_is_invoked(env):
    with pytest.raises(kruntimes.Forbidden) as raised:
        kruntimes.invoke((env["namespace"], env["forbidden_run"]), {})
    assert not raised.value.sent


def test_a_run_that_does_not_exist_is_run_not_found_and_nothing_is_invoked(env):
    # A caller who may read the namespace's Runs learns that this one does not exist.
    with pytest.raises(kruntimes.RunNotFound) as raised:
        kruntimes.invoke((env["namespace"], "no-such-run"), {}, kubeconfig=env["reader_kubeconfig"])
    assert not raised.value.sent


def test_a_second_invocation_while_one_is_in_flight_is_refused_not_queued(env):
    scratch = pathlib.Path(env["scratch"])
    marker, release = scratch / "held.started", scratch / "held.release"
    held = {}
    first = threading.Thread(target=lambda: held.setdefault("answer", kruntimes.invoke(
        (env["namespace"], env["run"]), {"marker": str(marker), "release": str(release)})))
    first.start()
    deadline = time.monotonic() + 30
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert marker.exists()
    with pytest.raises(kruntimes.InvocationInFlight) as raised:
        kruntimes.invoke((env["namespace"], env["run"]), {})
    assert raised.value.http_status == 429
    release.touch()
    first.join(30)
    assert held["answer"].result["echo"]["release"] == str(release)


def test_a_client_timeout_after_sending_says_the_function_may_have_run_and_is_not_retried(env):
    scratch = pathlib.Path(env["scratch"])
    with pytest.raises(kruntimes.TransportError) as raised:
        kruntimes.invoke((env["namespace"], env["run"]), {"sleep": 3, "count": str(scratch / "slow.count")}, timeout=1)
    assert (raised.value.kind, raised.value.request_may_have_been_sent) == ("timeout", True)
    # The handler ran once: the client did not send it again.
    time.sleep(3)
    assert (scratch / "slow.count").read_text() == "x"
