"""kruntimes: invoke function Runs from Python.

    import kruntimes
    answer = kruntimes.invoke(("demo", "add"), {"a": 1, "b": 2})   # endpoint and CA read from the Run
    answer.result                                                   # {"sum": 3}

Errors are typed (``kruntimes.Forbidden``, ``kruntimes.FunctionFailed``, ...) and carry the
contract's ``code``, ``source`` and the ``invocation_id``; nothing is retried after send.
"""

from .errors import (
    AuthorizationUnavailable,
    Forbidden,
    FunctionFailed,
    InvalidInvocation,
    InvocationInFlight,
    InvocationTimeout,
    KruntimesError,
    PlatformError,
    RunNotFound,
    RunNotReady,
    TransportError,
    Unauthenticated,
)
from .invoke import DEFAULT_TIMEOUT_SECONDS, Invocation, invoke
from .kube import ConfigurationError, KubeAccess

__all__ = [
    "AuthorizationUnavailable",
    "DEFAULT_TIMEOUT_SECONDS",
    "ConfigurationError",
    "Forbidden",
    "FunctionFailed",
    "InvalidInvocation",
    "Invocation",
    "InvocationInFlight",
    "InvocationTimeout",
    "KruntimesError",
    "KubeAccess",
    "PlatformError",
    "RunNotFound",
    "RunNotReady",
    "TransportError",
    "Unauthenticated",
    "invoke",
]
