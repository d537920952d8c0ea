"""Typed errors of an invocation: every one carries the stable code of the invoke contract
(docs/invoke-contract.md), where it came from, and the invocation ID."""

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
