"""A sandbox session: a function Run of the stock sandbox handler, used as an agent's tools
(exec, write_file, read_file, list_files) over one kept-open HTTPS connection to the gateway.

    with kruntimes.Sandbox("demo", "sandbox") as sb:
        sb.write_file("data/in.csv", "a,b\\n1,2\\n")
        sb.exec("python3 -c 'print(open(\\"data/in.csv\\").read())'").stdout

The session creates the Run (generateName ``sandbox-``), waits with a watch until it is
Ready, and on leaving deletes it and waits, bounded, until it is gone. Its idle timeout
(600 s unless told) ends a sandbox whose agent died; the TTL then removes the Run."""

import base64
import contextlib
import http.client
import json
import math
import os
import time
import urllib.parse
import uuid
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple, Union

from .errors import (InvalidInvocation, KruntimesError, KubernetesApiError, RuntimeNotExclusive, SandboxClosed, SandboxEnded,
                     SandboxTimeout, sandbox_tool_error)
from .invoke import (DEFAULT_TIMEOUT_SECONDS, GatewayConnection, _body, _https_url, _request_path, _tls_context, _valid_token,
                     _via_gateway)
from .kube import ConfigurationError, KubeAccess

SANDBOX_HANDLER = "kruntimes_sandbox:handle"
#: A Run needs a source: the stock handler, shipped with the Python Runtime Server, imported.
SANDBOX_SOURCE = "from kruntimes_sandbox import handle\n"
DEFAULT_IDLE_TIMEOUT_SECONDS = 600
DEFAULT_TTL_SECONDS_AFTER_FINISHED = 600
DEFAULT_READY_TIMEOUT_SECONDS = 180.0
DEFAULT_CLOSE_TIMEOUT_SECONDS = 60.0
#: The API server timeout of one request of the session (not of a watch).
API_TIMEOUT_SECONDS = 30.0
#: Watches restarted (the server ends each after its timeout, or on 410 Gone) at most this often per wait.
MAX_WATCHES = 100
#: A tool's time limit must leave room for the handler to answer within the invocation timeout.
TOOL_TIMEOUT_MARGIN_SECONDS = 5

_API = "/apis/kruntimes.io/v1alpha1/namespaces/{namespace}/{plural}"
_TERMINAL_PHASES = ("Succeeded", "Failed", "Timeout", "Cancelled", "Interrupted")
#: Held while the Run's Pod-local registration (its workspace) is not released yet.
_REGISTRATION_CLEANUP_FINALIZER = "kruntimes.io/registration-cleanup"


class NotExclusiveWarning(UserWarning):
    """The sandbox's Runtime runs more than one Run per Pod: other Runs share its Pod
    (processes, CPU, memory), though never its workspace. Scheduling is unchanged."""


class RuntimeUnreadableWarning(NotExclusiveWarning):
    """The Runtime could not be read (no ``get`` right, an API error), so whether the sandbox
    has a Pod of its own was not checked."""


@dataclass(frozen=True)
class ExecResult:
    exit_code: int
    stdout: str
    stderr: str
    stdout_truncated: bool
    stderr_truncated: bool
    duration_ms: int
    invocation_id: str


@dataclass(frozen=True)
class FileEntry:
    name: str
    #: ``file``, ``dir`` or ``symlink``.
    type: str
    size: int


class Sandbox:
    """A sandbox Run on ``runtime`` in ``namespace``, for one agent.

    ``exclusive=True`` refuses (RuntimeNotExclusive, nothing created) a Runtime whose
    ``spec.runs`` is not 1; otherwise such a Runtime gets a NotExclusiveWarning.
    ``idle_timeout_seconds`` ends the Run after that long without a tool call;
    ``ttl_seconds_after_finished`` removes a Run that ended without ``close()``.
    ``kubeconfig``, ``token``, ``gateway`` and ``ca_file`` are as for ``kruntimes.invoke``.
    ``handler`` and ``source`` replace the stock sandbox handler by one of your own that
    answers the same tools.

    One thread at a time: a function Run serves one invocation at a time (a second one is
    InvocationInFlight), and the session's connection is not shared.
    """

    def __init__(self, namespace: str, runtime: str, *, exclusive: bool = False,
                 idle_timeout_seconds: Optional[int] = DEFAULT_IDLE_TIMEOUT_SECONDS,
                 ttl_seconds_after_finished: Optional[int] = DEFAULT_TTL_SECONDS_AFTER_FINISHED,
                 invocation_timeout_seconds: Optional[int] = None,
                 ready_timeout: float = DEFAULT_READY_TIMEOUT_SECONDS, close_timeout: float = DEFAULT_CLOSE_TIMEOUT_SECONDS,
                 kubeconfig: Optional[str] = None, token: Optional[str] = None, gateway: Optional[str] = None,
                 ca_file: Optional[str] = None, handler: str = SANDBOX_HANDLER, source: str = SANDBOX_SOURCE) -> None:
        self.namespace = namespace
        self.runtime = runtime
        self.exclusive = exclusive
        self.idle_timeout_seconds = idle_timeout_seconds
        self.ttl_seconds_after_finished = ttl_seconds_after_finished
        self.invocation_timeout_seconds = invocation_timeout_seconds
        self.ready_timeout = ready_timeout
        self.close_timeout = close_timeout
        self._kubeconfig = kubeconfig
        self._token = token
        self._gateway = gateway if gateway is not None else os.environ.get("KRT_GATEWAY_URL")
        self._ca_file = ca_file if ca_file is not None else (os.environ.get("KRT_GATEWAY_CA_FILE") or None)
        self._handler = handler
        self._source = source
        self._access: Optional[KubeAccess] = None
        self._connection: Optional[GatewayConnection] = None
        self._path = ""
        #: The Run's name and UID once created; its last state seen.
        self.name: Optional[str] = None
        self.uid: Optional[str] = None
        self.run: Optional[dict] = None
        self._ended = False

    # ------------------------------------------------------------------ life

    def __enter__(self) -> "Sandbox":
        # A session started with start() is entered as it is.
        if self.name is None or self._ended:
            self._start(stacklevel=3)
        return self

    def __exit__(self, *_: Any) -> None:
        self.close()

    def start(self) -> "Sandbox":
        """Creates the Run and waits until it is Ready (what ``with`` does)."""
        self._start(stacklevel=3)
        return self

    def _start(self, stacklevel: int) -> None:
        if self.name is not None or self._ended:
            raise SandboxClosed("SandboxStarted", "a Sandbox is started once", run=self.name)
        access = KubeAccess.from_environment(self._kubeconfig)
        token = self._token if self._token is not None else access.token
        if token is None:
            raise ConfigurationError("the gateway needs a bearer token: the kubeconfig's user has none (pass token=...)")
        self._access, self._token = access, token
        self._check_runtime(stacklevel + 1)
        status, run = access.request("POST", self._collection("runs"), API_TIMEOUT_SECONDS, self._run_body())
        if status != 201:
            raise _api_error(status, run, f"creating a sandbox Run on Runtime {self.namespace}/{self.runtime}")
        self.run, self.name, self.uid = run, run["metadata"]["name"], run["metadata"]["uid"]
        try:
            ready = self._watch(run, self.ready_timeout, f"Ready within {self.ready_timeout} s", self._decide_ready)
            self._open(ready)
        except BaseException as error:
            # The Run is this session's: it never outlives a start that failed.
            try:
                self._remove()
            except Exception as cleanup:  # noqa: BLE001 - reported, and the start's own error raised
                warnings.warn(f"sandbox Run {self.namespace}/{self.name} was not removed after a failed start: {cleanup}",
                              RuntimeWarning, stacklevel=stacklevel)
            raise error

    def close(self) -> None:
        """Deletes the Run and waits until it is gone (its finalizer removed, the workspace
        with it); bounded by ``close_timeout``. Closing again does nothing."""
        if self._ended:
            return
        self._ended = True
        self._remove()

    def cancel(self) -> dict:
        """Asks the platform to cancel the Run (``spec.cancelRequested``) and waits, bounded by
        ``close_timeout``, until it ended and its workspace was released; the Run stays, with
        its status, until its TTL (``ttl_seconds_after_finished``) or a delete removes it.
        Returns the ended Run."""
        if self._ended:
            raise SandboxClosed("SandboxClosed", "the sandbox was closed or cancelled", run=self.name)
        self._ended = True
        self._close_connection()
        if self.name is None:
            raise SandboxClosed("SandboxNotStarted", "the sandbox was never started")
        access = self._api()
        status, run = access.request("PATCH", self._item("runs"), API_TIMEOUT_SECONDS, {"spec": {"cancelRequested": True}},
                                     content_type="application/merge-patch+json")
        if status != 200:
            raise _api_error(status, run, f"cancelling sandbox Run {self.namespace}/{self.name}")
        return self._watch(run, self.close_timeout, f"ended within {self.close_timeout} s", _decide_ended)

    # ------------------------------------------------------------------ tools

    def exec(self, command: Optional[str] = None, *, python: Optional[str] = None,
             timeout_seconds: Optional[int] = None) -> ExecResult:
        """Runs a shell command (``/bin/sh -c``) or, with ``python=``, a Python snippet
        (``python3 -c``) in the workspace. A non-zero exit is a result, not an error; an
        overrun raises ExecTimeout (the sandbox stays Ready)."""
        if (command is None) == (python is None):
            raise InvalidInvocation("InvalidRequest", "exec needs exactly one of command and python=", invocation_id="")
        arguments: Dict[str, Any] = {"command": command} if command is not None else {"python": python}
        if timeout_seconds is not None:
            arguments["timeoutSeconds"] = timeout_seconds
        answer = self.call("exec", **arguments)
        return ExecResult(exit_code=answer.result["exitCode"], stdout=answer.result.get("stdout", ""),
                          stderr=answer.result.get("stderr", ""),
                          stdout_truncated=bool(answer.result.get("stdoutTruncated")),
                          stderr_truncated=bool(answer.result.get("stderrTruncated")),
                          duration_ms=answer.result.get("durationMs", 0), invocation_id=answer.invocation_id)

    def write_file(self, path: str, content: Union[str, bytes]) -> int:
        """Writes ``content`` (text as UTF-8, bytes as they are) to ``path`` in the workspace,
        creating its parents; returns the bytes written."""
        if isinstance(content, str):
            answer = self.call("write_file", path=path, content=content, encoding="utf-8")
        else:
            answer = self.call("write_file", path=path, content=base64.b64encode(content).decode("ascii"), encoding="base64")
        return answer.result["bytes"]

    def read_file(self, path: str, *, binary: bool = False) -> Union[str, bytes]:
        """The file at ``path`` in the workspace: text (UTF-8), or bytes with ``binary=True``."""
        answer = self.call("read_file", path=path, encoding="base64" if binary else "utf-8")
        content = answer.result["content"]
        return base64.b64decode(content) if binary else content

    def list_files(self, path: str = ".") -> List[FileEntry]:
        """The entries of the directory ``path`` in the workspace, sorted by name."""
        answer = self.call("list_files", path=path)
        return [FileEntry(name=entry["name"], type=entry["type"], size=entry.get("size", 0))
                for entry in answer.result["entries"]]

    def call(self, tool: str, **arguments: Any):
        """One tool call as the contract names it (``call("exec", command="ls")``): the
        Invocation, or a typed error (PathOutsideWorkspace, InvalidToolCall, ExecTimeout,
        the invoke contract's errors). Never retried."""
        if self._connection is None or self._ended:
            raise SandboxClosed("SandboxClosed", "the sandbox is not open (not started, closed or cancelled)", run=self.name)
        invocation_id = str(uuid.uuid4())
        body = _body({"tool": tool, **arguments}, invocation_id)
        try:
            return self._connection.post(self._path, body, self._token or "", invocation_id, self._call_timeout())
        except KruntimesError as error:
            typed = sandbox_tool_error(error)
            if typed is error:
                raise
            raise typed from None

    # ------------------------------------------------------------------ internals

    def _check_runtime(self, stacklevel: int) -> None:
        status, runtime = self._api().request("GET", self._collection("runtimes") + "/" + _quote(self.runtime),
                                              API_TIMEOUT_SECONDS)
        if status == 404:
            raise KubernetesApiError("RuntimeNotFound", f"no Runtime {self.namespace}/{self.runtime}", http_status=404)
        if status != 200:
            # Creating a Run needs no `get` on its Runtime: unchecked, the session goes on unless exclusive.
            message = (f"cannot read Runtime {self.namespace}/{self.runtime} to check its runs "
                       f"({_api_error(status, runtime, 'reading it').message})")
            if self.exclusive:
                raise RuntimeNotExclusive("RuntimeUnreadable", message + "; exclusive=True refuses, nothing was created",
                                          http_status=status)
            warnings.warn(message + "; not checked", RuntimeUnreadableWarning, stacklevel=stacklevel)
            return
        runs = (runtime.get("spec") or {}).get("runs", 1)
        if runs == 1:
            return
        message = (f"Runtime {self.namespace}/{self.runtime} has runs: {runs}: the sandbox shares its Pod with up to "
                   f"{runs - 1} other Runs (its workspace stays its own); a Runtime with runs: 1 gives it a Pod of its own")
        if self.exclusive:
            raise RuntimeNotExclusive("RuntimeNotExclusive", message + "; exclusive=True refuses it, nothing was created")
        warnings.warn(message, NotExclusiveWarning, stacklevel=stacklevel)

    def _run_body(self) -> dict:
        function: Dict[str, Any] = {"handler": self._handler}
        if self.idle_timeout_seconds is not None:
            function["idleTimeoutSeconds"] = self.idle_timeout_seconds
        if self.invocation_timeout_seconds is not None:
            function["invocationTimeoutSeconds"] = self.invocation_timeout_seconds
        spec: Dict[str, Any] = {"runtime": self.runtime, "source": {"inline": self._source}, "mode": {"function": function}}
        if self.ttl_seconds_after_finished is not None:
            spec["ttlSecondsAfterFinished"] = self.ttl_seconds_after_finished
        return {"apiVersion": "kruntimes.io/v1alpha1", "kind": "Run", "metadata": {"generateName": "sandbox-"}, "spec": spec}

    def _decide_ready(self, kind: str, run: dict) -> Optional[dict]:
        self.run = run
        status = run.get("status") or {}
        phase = status.get("phase", "Pending")
        if kind == "DELETED" or (run.get("metadata") or {}).get("deletionTimestamp"):
            raise SandboxEnded("SandboxDeleted", f"sandbox Run {self.namespace}/{self.name} was deleted before it became Ready",
                               run=self.name, phase=phase, reason=status.get("reason", ""))
        if phase in _TERMINAL_PHASES:
            raise SandboxEnded("SandboxEnded", f"sandbox Run {self.namespace}/{self.name} ended {phase} "
                               f"({status.get('reason', '')}: {status.get('message', '')}) instead of becoming Ready",
                               run=self.name, phase=phase, reason=status.get("reason", ""))
        ready = any(condition.get("type") == "Ready" and condition.get("status") == "True"
                    for condition in status.get("conditions") or [])
        # The endpoint is read once Ready says so (never taken as readiness itself).
        return run if phase == "Ready" and ready and (status.get("endpoint") or {}).get("url") else None

    def _open(self, run: dict) -> None:
        endpoint = run["status"]["endpoint"]
        url = _via_gateway(endpoint["url"], self._gateway, "")
        parsed = _https_url(url, "")
        _valid_token(self._token, "")
        context = _tls_context(None if self._ca_file is not None else endpoint.get("caBundle"), self._ca_file, "")
        self._path = _request_path(parsed)
        self._connection = GatewayConnection(parsed.hostname or "", parsed.port or 443, context)

    def _call_timeout(self) -> float:
        if self.invocation_timeout_seconds is None:
            return DEFAULT_TIMEOUT_SECONDS
        return self.invocation_timeout_seconds + 10.0

    def _remove(self) -> None:
        self._ended = True
        self._close_connection()
        if self.name is None:
            return
        access = self._api()
        # The UID precondition: never a Run of the same name created after this one was gone.
        status, answer = access.request("DELETE", self._item("runs"), API_TIMEOUT_SECONDS,
                                        {"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"uid": self.uid}})
        if status == 404 or (status == 409 and self._gone()):
            return
        if status not in (200, 202):
            raise _api_error(status, answer, f"deleting sandbox Run {self.namespace}/{self.name}")
        status, run = access.request("GET", self._item("runs"), API_TIMEOUT_SECONDS)
        if status == 404 or (status == 200 and run["metadata"]["uid"] != self.uid):
            return
        if status != 200:
            raise _api_error(status, run, f"reading sandbox Run {self.namespace}/{self.name}")
        self._watch(run, self.close_timeout, f"gone within {self.close_timeout} s", _decide_gone)

    def _gone(self) -> bool:
        status, run = self._api().request("GET", self._item("runs"), API_TIMEOUT_SECONDS)
        return status == 404 or (status == 200 and run["metadata"]["uid"] != self.uid)

    def _close_connection(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def _watch(self, run: dict, timeout: float, what: str, decide: Callable[[str, dict], Optional[dict]]) -> dict:
        """Watches this Run from ``run`` (its last state seen, decided first) until ``decide``
        returns it, raises, or ``timeout`` seconds pass (SandboxTimeout). A watch that the
        server ends is started again from the last resourceVersion; one that is too old
        (410 Gone) from a fresh read."""
        deadline = time.monotonic() + timeout
        decided = decide("ADDED", run)
        if decided is not None:
            return decided
        version = run["metadata"]["resourceVersion"]
        access = self._api()
        for _ in range(MAX_WATCHES):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            query = urllib.parse.urlencode({"watch": "1", "fieldSelector": f"metadata.name={self.name}",
                                            "resourceVersion": version, "allowWatchBookmarks": "true",
                                            "timeoutSeconds": str(max(1, math.ceil(remaining)))})
            try:
                with contextlib.closing(access.watch(f"{self._collection('runs')}?{query}", timeout=remaining + 5)) as events:
                    decided, version = self._consume(events, version, run, decide)
                if decided is not None:
                    return decided
            except (OSError, http.client.HTTPException):
                # A watch connection that failed is started again from the last version seen, within the deadline.
                time.sleep(min(1.0, max(0.0, deadline - time.monotonic())))
        phase = ((self.run or run).get("status") or {}).get("phase", "Pending")
        raise SandboxTimeout("SandboxTimeout", f"sandbox Run {self.namespace}/{self.name} was not {what} (phase {phase})",
                             run=self.name)

    def _consume(self, events: Iterator[dict], version: str, run: dict,
                 decide: Callable[[str, dict], Optional[dict]]) -> Tuple[Optional[dict], str]:
        """Reads one watch until it ends: (what ``decide`` returned, the version to watch from next)."""
        for event in events:
            kind, obj = event.get("type"), event.get("object") or {}
            if kind == "BOOKMARK":
                version = obj["metadata"]["resourceVersion"]
            elif kind == "ERROR":
                if obj.get("code") != 410:
                    raise _api_error(obj.get("code", 500), obj, f"watching sandbox Run {self.namespace}/{self.name}")
                # Too old to continue: decided on a fresh read, watched again from it.
                status, fresh = self._api().request("GET", self._item("runs"), API_TIMEOUT_SECONDS)
                if status == 404 or (status == 200 and fresh["metadata"]["uid"] != self.uid):
                    return decide("DELETED", self.run or run), version
                if status != 200:
                    raise _api_error(status, fresh, f"reading sandbox Run {self.namespace}/{self.name}")
                return decide("MODIFIED", fresh), fresh["metadata"]["resourceVersion"]
            elif obj.get("metadata", {}).get("uid") == self.uid:
                version = obj["metadata"]["resourceVersion"]
                decided = decide(kind, obj)
                if decided is not None:
                    return decided, version
        return None, version

    def _api(self) -> KubeAccess:
        if self._access is None:
            raise SandboxClosed("SandboxNotStarted", "the sandbox was never started")
        return self._access

    def _collection(self, plural: str) -> str:
        return _API.format(namespace=_quote(self.namespace), plural=plural)

    def _item(self, plural: str) -> str:
        return f"{self._collection(plural)}/{_quote(self.name or '')}"


def _decide_gone(kind: str, _run: dict) -> Optional[dict]:
    return _run if kind == "DELETED" else None


def _decide_ended(kind: str, run: dict) -> Optional[dict]:
    phase = (run.get("status") or {}).get("phase", "Pending")
    released = _REGISTRATION_CLEANUP_FINALIZER not in ((run.get("metadata") or {}).get("finalizers") or [])
    return run if kind == "DELETED" or (phase in _TERMINAL_PHASES and released) else None


def _quote(segment: str) -> str:
    return urllib.parse.quote(segment, safe="")


def _api_error(status: int, answer: Any, doing: str) -> KubernetesApiError:
    message = answer.get("message") if isinstance(answer, dict) else None
    reason = answer.get("reason") if isinstance(answer, dict) else None
    code = {401: "Unauthenticated", 403: "Forbidden", 404: "NotFound", 409: "Conflict", 422: "Invalid"}.get(status, "ApiError")
    detail = message or json.dumps(answer)[:512]
    return KubernetesApiError(code, f"{doing}: the Kubernetes API answered {status} {reason or ''}: {detail}",
                              http_status=status)
