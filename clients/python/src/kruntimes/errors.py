"""Typed errors of an invocation: every one carries the stable code of the invoke contract
(docs/invoke-contract.md), where it came from, and the invocation ID."""

import re
from typing import Optional


class KruntimesError(Exception):
    """An invocation that did not return a result.

    ``code`` is the stable error code of the contract (``Forbidden``, ``FunctionFailed``,
    ...); ``source`` is ``function`` when the user's handler failed and ``platform``
    otherwise; ``http_status`` is the gateway's answer, or None when nothing was answered
    (refused before sending, or no answer at all).
    """

    def __init__(self, code: str, message: str, *, invocation_id: str, source: str = "platform",
                 http_status: Optional[int] = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.source = source
        self.invocation_id = invocation_id
        self.http_status = http_status

    #: Whether the function certainly did not run and the same call may succeed later.
    retryable = False

    @property
    def sent(self) -> bool:
        """Whether the gateway answered (the request certainly reached it)."""
        return self.http_status is not None


class InvalidInvocation(KruntimesError):
    """Refused by this client before anything was sent (a bad invocation ID, a payload that
    is not JSON or is over 1 MiB, a URL that is not https): repeating it cannot help."""


class FunctionFailed(KruntimesError):
    """The handler raised or exited non-zero (``source`` is ``function``)."""


class PlatformError(KruntimesError):
    """The platform refused or could not serve the invocation (``source`` is ``platform``)."""


class Unauthenticated(PlatformError):
    """No token, or one the API server does not accept (401)."""


class Forbidden(PlatformError):
    """The caller may not ``get`` this Run (403)."""


class RunNotFound(PlatformError):
    """No such Run (404), or a UID that is not the current object of its name."""


class InvocationInFlight(PlatformError):
    """Another invocation of this Run is running (429): a function Run serves one at a time."""


class RunNotReady(PlatformError):
    """The Run is not Ready, is recovering or terminating, or its owner is unreachable (503)."""


class AuthorizationUnavailable(PlatformError):
    """The API server could not be asked whether the caller may ``get`` the Run (503): it was
    unreachable, overloaded or restarting. Refused before the handler ran: repeating is safe."""

    retryable = True


class InvocationTimeout(PlatformError):
    """The invocation did not finish in time (504): the handler may have run, or still run."""


class TransportError(KruntimesError):
    """No answer from the gateway. ``request_may_have_been_sent`` is False only when the
    connection or its TLS handshake failed (the request is written only after it): then the
    function certainly did not run and repeating the call is safe. When True, the function
    may have run: this client never repeats it on its own."""

    def __init__(self, message: str, *, invocation_id: str, request_may_have_been_sent: bool, kind: str) -> None:
        super().__init__("Transport", message, invocation_id=invocation_id)
        self.request_may_have_been_sent = request_may_have_been_sent
        self.kind = kind


_BY_CODE = {
    "Unauthenticated": Unauthenticated,
    "Forbidden": Forbidden,
    "RunNotFound": RunNotFound,
    "InvocationInFlight": InvocationInFlight,
    "AuthorizationUnavailable": AuthorizationUnavailable,
    "RunNotReady": RunNotReady,
    "OwnerUnavailable": RunNotReady,
    "EpochMismatch": RunNotReady,
    "RegistrationLost": RunNotReady,
    "InvocationTimeout": InvocationTimeout,
}


def error_from_answer(status: int, body: object, invocation_id: str) -> KruntimesError:
    """The error a gateway answer describes (its JSON ``error``), typed by code and source."""
    error = body.get("error") if isinstance(body, dict) else None
    answered_id = body.get("invocationId") if isinstance(body, dict) else None
    invocation_id = answered_id if isinstance(answered_id, str) else invocation_id
    if not isinstance(error, dict) or not isinstance(error.get("code"), str):
        return PlatformError("Internal", f"HTTP {status} without the error body of the invoke contract",
                             invocation_id=invocation_id, http_status=status)
    code = error["code"]
    source = error.get("source") if error.get("source") in ("function", "platform") else "platform"
    message = error.get("message") if isinstance(error.get("message"), str) else ""
    kind = FunctionFailed if source == "function" else _BY_CODE.get(code, PlatformError)
    return kind(code, message, invocation_id=invocation_id, source=source, http_status=status)


class SandboxToolError(FunctionFailed):
    """A sandbox tool refused the call or did not finish (``source`` is ``function``): the
    sandbox handler's message, whose ``reason`` is the contract's prefix."""

    #: The prefix the sandbox handler's message starts with.
    reason = ""


class PathOutsideWorkspace(SandboxToolError):
    """The path is absolute, climbs out with ``..``, or resolves (symlinks followed) outside
    the sandbox's workspace: nothing was read or written."""

    reason = "PathOutsideWorkspace"


class InvalidToolCall(SandboxToolError):
    """An unknown tool or a bad argument."""

    reason = "InvalidToolCall"


class ExecTimeout(SandboxToolError):
    """The command overran its ``timeout_seconds`` and its process group was killed; the
    message (``timed out after N s``) carries the head of its output. The sandbox stays Ready."""

    reason = "ExecTimeout"


#: The handler's ``kruntimes_sandbox.SandboxError: <Kind>: ...`` (any exception type, or none, before the kind).
_TOOL_ERROR = re.compile(r"^(?:[A-Za-z_][\w.]*: )?(PathOutsideWorkspace|InvalidToolCall|ExecTimeout):")
_TOOL_ERRORS = {"PathOutsideWorkspace": PathOutsideWorkspace, "InvalidToolCall": InvalidToolCall, "ExecTimeout": ExecTimeout}


def _raised_text(message: str) -> str:
    """The exception line of a Python traceback (``Type: message...``, the first line that is
    neither its header nor indented), so that a tool's own output quoted further down never
    decides the type; a message that is not a traceback as it is."""
    lines = message.splitlines()
    if message.startswith("..."):
        # The worker keeps the end of a long traceback: its first line is cut anywhere.
        lines = lines[1:]
    elif not lines or not lines[0].startswith("Traceback"):
        return message
    for index, line in enumerate(lines):
        if line and not line.startswith((" ", "Traceback")):
            return "\n".join(lines[index:])
    return message


def sandbox_tool_error(error: KruntimesError) -> KruntimesError:
    """A FunctionFailed of the sandbox handler as its typed tool error; any other error as it is."""
    if type(error) is not FunctionFailed:
        return error
    found = _TOOL_ERROR.search(_raised_text(error.message))
    if found is None:
        return error
    kind = _TOOL_ERRORS[found.group(1)]
    return kind(error.code, error.message, invocation_id=error.invocation_id, source=error.source,
                http_status=error.http_status)

class SandboxError(Exception):
    """A sandbox session that could not be started or ended: ``code`` is stable, ``run`` names
    the Run when one was created, ``http_status`` is the Kubernetes API's answer when it refused."""

    def __init__(self, code: str, message: str, *, run: Optional[str] = None, http_status: Optional[int] = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.run = run
        self.http_status = http_status


class RuntimeNotExclusive(SandboxError):
    """``exclusive=True`` on a Runtime whose ``spec.runs`` is not 1 (code ``RuntimeNotExclusive``)
    or that could not be read to check it (code ``RuntimeUnreadable``): nothing was created."""


class SandboxEnded(SandboxError):
    """The Run ended (a terminal phase, or deleted) before it became Ready; ``phase`` and
    ``reason`` are its status."""

    def __init__(self, code: str, message: str, *, run: Optional[str] = None, phase: str = "", reason: str = "") -> None:
        super().__init__(code, message, run=run)
        self.phase = phase
        self.reason = reason


class SandboxTimeout(SandboxError):
    """A bounded wait (Ready after create, gone after delete) ran out."""


class KubernetesApiError(SandboxError):
    """The Kubernetes API refused a request of the session (``http_status``, the Status message)."""


class SandboxClosed(SandboxError):
    """A tool call on a session that was closed or cancelled."""
