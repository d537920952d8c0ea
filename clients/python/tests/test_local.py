"""What the client decides on its own, before or without a gateway."""

import socket

import pytest

import kruntimes
from kruntimes.errors import error_from_answer, sandbox_tool_error
from kruntimes.invoke import _closed_by_peer
from kruntimes.kube import ConfigurationError, KubeAccess

URL = "https://127.0.0.1:9/v1/namespaces/demo/runtimes/py/functions/uid:invoke"


@pytest.mark.parametrize("invocation_id", ["", "with space", "x" * 129, "ünicode"])
def test_an_invalid_invocation_id_is_refused_before_sending(invocation_id):
    with pytest.raises(kruntimes.InvalidInvocation) as raised:
        kruntimes.invoke(URL, {}, token="t", invocation_id=invocation_id)
    assert raised.value.code == "InvalidInvocationId"
    assert not raised.value.sent


@pytest.mark.parametrize("payload, code", [
    ("x" * (1024 * 1024), "PayloadTooLarge"),
    (b"not json", "InvalidRequest"),
    (float("nan"), "InvalidRequest"),
    (object(), "InvalidRequest"),
])
def test_a_payload_the_gateway_would_refuse_is_refused_before_sending(payload, code):
    with pytest.raises(kruntimes.InvalidInvocation) as raised:
        kruntimes.invoke(URL, payload, token="t", invocation_id="local-1")
    assert (raised.value.code, raised.value.invocation_id, raised.value.http_status) == (code, "local-1", None)


@pytest.mark.parametrize("url, token", [("http://127.0.0.1:9/x", "t"), (URL, None), (URL, "two words")])
def test_a_plain_http_url_or_a_missing_token_is_refused(url, token):
    with pytest.raises(kruntimes.InvalidInvocation):
        kruntimes.invoke(url, {}, token=token)


def test_a_connection_that_fails_proves_nothing_was_sent():
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    with pytest.raises(kruntimes.TransportError) as raised:
        kruntimes.invoke(f"https://127.0.0.1:{port}/v1/x:invoke", {}, token="t", invocation_id="refused-1", timeout=5)
    assert (raised.value.kind, raised.value.request_may_have_been_sent, raised.value.invocation_id) == (
        "connect", False, "refused-1")


@pytest.mark.parametrize("status, body, kind, code, source", [
    (403, {"invocationId": "a", "error": {"code": "Forbidden", "message": "no", "source": "platform"}},
     kruntimes.Forbidden, "Forbidden", "platform"),
    (500, {"invocationId": "a", "error": {"code": "FunctionFailed", "message": "raised", "source": "function"}},
     kruntimes.FunctionFailed, "FunctionFailed", "function"),
    (503, {"invocationId": "a", "error": {"code": "OwnerUnavailable", "message": "", "source": "platform"}},
     kruntimes.RunNotReady, "OwnerUnavailable", "platform"),
    (503, {"invocationId": "a", "error": {"code": "AuthorizationUnavailable", "message": "", "source": "platform"}},
     kruntimes.AuthorizationUnavailable, "AuthorizationUnavailable", "platform"),
    (429, {"invocationId": "a", "error": {"code": "InvocationInFlight", "message": "", "source": "platform"}},
     kruntimes.InvocationInFlight, "InvocationInFlight", "platform"),
    (400, {"invocationId": "a", "error": {"code": "InvalidRequest", "message": "", "source": "platform"}},
     kruntimes.PlatformError, "InvalidRequest", "platform"),
    (502, "<html>bad gateway</html>", kruntimes.PlatformError, "Internal", "platform"),
])
def test_an_answer_becomes_the_error_of_its_code_and_source(status, body, kind, code, source):
    error = error_from_answer(status, body, "sent-id")
    assert type(error) is kind
    assert (error.code, error.source, error.http_status, error.sent) == (code, source, status, True)


@pytest.mark.parametrize("code, retryable", [
    ("AuthorizationUnavailable", True), ("RunNotReady", False), ("OwnerUnavailable", False), ("Forbidden", False)])
def test_only_a_refusal_before_the_handler_ran_that_may_pass_is_retryable(code, retryable):
    body = {"invocationId": "a", "error": {"code": code, "message": "", "source": "platform"}}
    assert error_from_answer(503, body, "sent-id").retryable is retryable


def test_a_kubeconfig_it_cannot_use_says_why():
    base = {
        "clusters": [{"cluster": {"server": "https://127.0.0.1:6443"}}],
        "contexts": [{"context": {}}],
        "users": [{"user": {"token": "t"}}],
    }
    assert KubeAccess.from_config(base).token == "t"
    with pytest.raises(ConfigurationError, match="skips TLS verification"):
        KubeAccess.from_config({**base, "clusters": [{"cluster": {"server": "https://x", "insecure-skip-tls-verify": True}}]})
    with pytest.raises(ConfigurationError, match="neither a token nor a client certificate"):
        KubeAccess.from_config({**base, "users": [{"user": {"exec": {"command": "aws"}}}]})
    with pytest.raises(ConfigurationError, match="not an https URL"):
        KubeAccess.from_config({**base, "clusters": [{"cluster": {"server": "http://127.0.0.1:8080"}}]})


TRACEBACK = ('Traceback (most recent call last):\n  File "/w/main.py", line 9, in handle\n    raise ValueError(m)\n'
             'ValueError: {}\n')


@pytest.mark.parametrize("message, kind", [
    (TRACEBACK.format("PathOutsideWorkspace: '../x' resolves outside the workspace"), kruntimes.PathOutsideWorkspace),
    (TRACEBACK.format("InvalidToolCall: unknown tool 'rm'"), kruntimes.InvalidToolCall),
    ("...ne 9, in handle\n    raise X\nTimeoutError: ExecTimeout: timed out after 2 s; stdout: 'x'", kruntimes.ExecTimeout),
    # The stock handler raises without a traceback: its message is the exception line.
    ("kruntimes_sandbox.SandboxError: PathOutsideWorkspace: '/etc' is absolute\n", kruntimes.PathOutsideWorkspace),
    ("kruntimes_sandbox.SandboxError: ExecTimeout: timed out after 1 s\n--- stdout (3 bytes) ---\nInvalidToolCall: x\n",
     kruntimes.ExecTimeout),
    # A tool's output quoted in the message never decides the type.
    (TRACEBACK.format("ExecTimeout: timed out after 3 s; stdout: 'PathOutsideWorkspace: no'"), kruntimes.ExecTimeout),
    (TRACEBACK.format("timed out after 3 s"), kruntimes.FunctionFailed),
    (TRACEBACK.format("KeyError: 'content'"), kruntimes.FunctionFailed),
])
def test_a_sandbox_handler_failure_is_typed_by_the_prefix_of_its_message(message, kind):
    error = error_from_answer(500, {"invocationId": "i-1", "error": {"code": "FunctionFailed", "message": message,
                                                                    "source": "function"}}, "i-1")
    typed = sandbox_tool_error(error)
    assert type(typed) is kind
    assert (typed.code, typed.source, typed.invocation_id, typed.http_status) == ("FunctionFailed", "function", "i-1", 500)


def test_a_platform_error_is_never_taken_for_a_tool_error():
    error = error_from_answer(503, {"error": {"code": "RunNotReady", "message": "PathOutsideWorkspace: x"}}, "i-2")
    assert sandbox_tool_error(error) is error


def test_an_idle_connection_the_peer_closed_is_noticed_before_anything_is_written():
    mine, theirs = socket.socketpair()
    try:
        assert not _closed_by_peer(mine)
        theirs.close()
        assert _closed_by_peer(mine)
    finally:
        mine.close()


def test_exclusive_and_warning_need_nothing_of_a_sandbox_that_was_never_started():
    sandbox = kruntimes.Sandbox("demo", "sandbox")
    with pytest.raises(kruntimes.SandboxClosed):
        sandbox.exec("true")
    sandbox.close()  # nothing was created: nothing to delete
