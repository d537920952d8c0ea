"""kruntimes: invoke function Runs from Python.

    import kruntimes
    answer = kruntimes.invoke(("demo", "add"), {"a": 1, "b": 2})   # endpoint and CA read from the Run
    answer.result                                                   # {"sum": 3}

Errors are typed (``kruntimes.Forbidden``, ``kruntimes.FunctionFailed``, ...) and carry the
contract's ``code``, ``source`` and the ``invocation_id``; nothing is retried after send.

    with kruntimes.Sandbox("demo", "sandbox") as sb:                # a sandbox Run, Ready, deleted on leaving
        sb.exec("python3 -c 'print(1)'").stdout                     # "1\n"
"""

from .errors import (
    AuthorizationUnavailable,
    ExecTimeout,
    Forbidden,
    FunctionFailed,
    InvalidInvocation,
    InvalidToolCall,
    InvocationInFlight,
    InvocationTimeout,
    KruntimesError,
    KubernetesApiError,
    PathOutsideWorkspace,
    PlatformError,
    RunNotFound,
    RunNotReady,
    RuntimeNotExclusive,
    SandboxClosed,
    SandboxEnded,
    SandboxError,
    SandboxTimeout,
    SandboxToolError,
    TransportError,
    Unauthenticated,
)
from .invoke import DEFAULT_TIMEOUT_SECONDS, Invocation, invoke
from .kube import ConfigurationError, KubeAccess
from .sandbox import ExecResult, FileEntry, NotExclusiveWarning, RuntimeUnreadableWarning, Sandbox

__all__ = [
    "AuthorizationUnavailable",
    "ConfigurationError",
    "DEFAULT_TIMEOUT_SECONDS",
    "ExecResult",
    "ExecTimeout",
    "FileEntry",
    "Forbidden",
    "FunctionFailed",
    "InvalidInvocation",
    "InvalidToolCall",
    "Invocation",
    "InvocationInFlight",
    "InvocationTimeout",
    "KruntimesError",
    "KubeAccess",
    "KubernetesApiError",
    "NotExclusiveWarning",
    "PathOutsideWorkspace",
    "PlatformError",
    "RunNotFound",
    "RunNotReady",
    "RuntimeNotExclusive",
    "RuntimeUnreadableWarning",
    "Sandbox",
    "SandboxClosed",
    "SandboxEnded",
    "SandboxError",
    "SandboxTimeout",
    "SandboxToolError",
    "TransportError",
    "Unauthenticated",
    "invoke",
]
