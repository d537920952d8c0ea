"""One invocation of a function Run through the runtime-gateway: one HTTPS POST, never
repeated by this client (docs/invoke-contract.md, "Delivery")."""

import base64
import http.client
import json
import os
import re
import select
import socket
import ssl
import time
import urllib.parse
import uuid
from dataclasses import dataclass, field
from typing import Any, Optional, Tuple, Union

from .errors import (Forbidden, InvalidInvocation, PlatformError, RunNotFound, RunNotReady, TransportError, Unauthenticated,
                     error_from_answer)
from .kube import KubeAccess

#: The gateway's default invocation timeout (60 s) plus room for its own 504 to arrive first.
DEFAULT_TIMEOUT_SECONDS = 70.0
MAX_REQUEST_BYTES = 1024 * 1024
#: Far above what the gateway answers (result, outputs and two captured streams, bounded).
MAX_RESPONSE_BYTES = 64 * 1024 * 1024
INVOCATION_ID_HEADER = "X-Kruntime-Invocation-ID"
#: Below the gateway's keep-alive timeout (Node's 5 s): a request written on a connection the
#: gateway is closing would fail after it was sent, ambiguous although the function never ran.
IDLE_CONNECTION_SECONDS = 4.0
_VALID_INVOCATION_ID = re.compile(r"[\x21-\x7e]{1,128}")
_VALID_TOKEN = re.compile(r"[\x21-\x7e]+")


@dataclass(frozen=True)
class Invocation:
    """What a successful invocation returned."""

    invocation_id: str
    #: The handler's return value (JSON).
    result: Any
    #: The Run attempt that served it.
    attempt: int
    outputs: dict = field(default_factory=dict)
    #: ``{"data": ..., "truncated": ..., "totalBytes": ...}`` when the handler wrote to it.
    stdout: Optional[dict] = None
    stderr: Optional[dict] = None


Target = Union[str, Tuple[str, str]]


def invoke(target: Target, payload: Any = None, *, token: Optional[str] = None, invocation_id: Optional[str] = None,
           timeout: float = DEFAULT_TIMEOUT_SECONDS, ca_bundle: Optional[str] = None, ca_file: Optional[str] = None,
           gateway: Optional[str] = None, kubeconfig: Optional[str] = None) -> Invocation:
    """Invokes a function Run and returns its result, or raises a KruntimesError.

    ``target`` is the Run's ``status.endpoint.url``, or ``(namespace, run_name)``: then the
    Run is read through the Kubernetes API with the caller's credentials (a Pod's
    ServiceAccount, else the current kubeconfig context), and its endpoint and CA bundle are
    taken from its status. ``token`` defaults to that same credential's token.

    ``payload`` is any JSON value, or the bytes of a JSON document (sent as they are).
    ``gateway`` (default: the environment's KRT_GATEWAY_URL) is an https origin that replaces
    the origin of a Run's endpoint read by name, for a caller outside the cluster (a port
    forward, an ingress, ``npm run dev``); ``ca_file`` (default: KRT_GATEWAY_CA_FILE) is the
    CA to verify the gateway with, instead of the Run's ``caBundle``.

    ``invocation_id`` (1-128 visible ASCII characters, a UUID by default) names the
    invocation in every log line and answer; a handler that must not run twice for one
    request can key on it. ``timeout`` bounds the whole call in seconds.

    Never retried: after a TransportError with ``request_may_have_been_sent`` the function
    may have run; repeating it is the caller's decision.
    """
    invocation_id = str(uuid.uuid4()) if invocation_id is None else invocation_id
    if not isinstance(invocation_id, str) or _VALID_INVOCATION_ID.fullmatch(invocation_id) is None:
        raise InvalidInvocation("InvalidInvocationId", "the invocation ID must be 1-128 bytes of visible ASCII",
                                invocation_id=str(invocation_id))
    body = _body(payload, invocation_id)
    if isinstance(target, tuple):
        url, ca_bundle, token = _resolve(target, token, ca_bundle, kubeconfig, timeout, invocation_id)
        url = _via_gateway(url, gateway if gateway is not None else os.environ.get("KRT_GATEWAY_URL"), invocation_id)
    else:
        url = target
    if ca_file is None:
        ca_file = os.environ.get("KRT_GATEWAY_CA_FILE") or None
    token = _valid_token(token, invocation_id)
    parsed = _https_url(url, invocation_id)
    context = _tls_context(ca_bundle, ca_file, invocation_id)
    connection = GatewayConnection(parsed.hostname or "", parsed.port or 443, context)
    try:
        return connection.post(_request_path(parsed), body, token, invocation_id, timeout)
    finally:
        connection.close()


def _body(payload: Any, invocation_id: str) -> bytes:
    if isinstance(payload, (bytes, bytearray, memoryview)):
        body = bytes(payload)
        try:
            json.loads(body.decode("utf-8"))
        except ValueError:
            raise InvalidInvocation("InvalidRequest", "the payload bytes are not a UTF-8 JSON document",
                                    invocation_id=invocation_id) from None
    else:
        try:
            body = json.dumps(payload, allow_nan=False, separators=(",", ":")).encode("utf-8")
        except (TypeError, ValueError) as error:
            raise InvalidInvocation("InvalidRequest", f"the payload is not a JSON value: {error}",
                                    invocation_id=invocation_id) from None
    if len(body) > MAX_REQUEST_BYTES:
        raise InvalidInvocation("PayloadTooLarge", f"the payload is {len(body)} bytes, over the {MAX_REQUEST_BYTES}-byte limit",
                                invocation_id=invocation_id)
    return body


def _resolve(target: Tuple[str, str], token: Optional[str], ca_bundle: Optional[str], kubeconfig: Optional[str],
             timeout: float, invocation_id: str) -> Tuple[str, Optional[str], Optional[str]]:
    namespace, name = target
    access = KubeAccess.from_environment(kubeconfig)
    status, run = access.get_run(namespace, name, timeout)
    if status == 404:
        raise RunNotFound("RunNotFound", f"no Run {namespace}/{name} (the Kubernetes API answered 404)",
                          invocation_id=invocation_id)
    if status != 200:
        message = run.get("message") if isinstance(run, dict) else None
        kind, code = {401: (Unauthenticated, "Unauthenticated"), 403: (Forbidden, "Forbidden")}.get(status, (PlatformError, "Internal"))
        raise kind(code, f"reading Run {namespace}/{name}: the Kubernetes API answered {status}: {message}",
                   invocation_id=invocation_id)
    endpoint = (run.get("status") or {}).get("endpoint") or {}
    url = endpoint.get("url")
    if not isinstance(url, str) or url == "":
        phase = (run.get("status") or {}).get("phase", "Pending")
        raise RunNotReady("RunNotReady", f"Run {namespace}/{name} has no endpoint (phase {phase})",
                          invocation_id=invocation_id)
    return url, ca_bundle if ca_bundle is not None else endpoint.get("caBundle"), token if token is not None else access.token


def _via_gateway(url: str, gateway: Optional[str], invocation_id: str) -> str:
    """The endpoint with its origin replaced: the path (namespace, Runtime, Run UID) always comes from the Run."""
    if not gateway:
        return url
    origin = urllib.parse.urlsplit(gateway)
    if origin.scheme != "https" or not origin.netloc or origin.path not in ("", "/"):
        raise InvalidInvocation("InvalidRequest", f"the gateway must be an https origin without a path, not {gateway!r}",
                                invocation_id=invocation_id)
    endpoint = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit(("https", origin.netloc, endpoint.path, endpoint.query, ""))


def _tls_context(ca_bundle: Optional[str], ca_file: Optional[str], invocation_id: str) -> ssl.SSLContext:
    if ca_file is not None:
        return ssl.create_default_context(cafile=ca_file)
    if ca_bundle is None:
        return ssl.create_default_context()
    try:
        pem = base64.b64decode(ca_bundle, validate=True).decode("ascii")
        return ssl.create_default_context(cadata=pem)
    except (ValueError, ssl.SSLError) as error:
        raise InvalidInvocation("InvalidRequest", f"the CA bundle is not base64 of PEM certificates: {error}",
                                invocation_id=invocation_id) from None


def _https_url(url: str, invocation_id: str) -> urllib.parse.SplitResult:
    parsed = urllib.parse.urlsplit(url)
    if parsed.scheme != "https" or not parsed.hostname:
        raise InvalidInvocation("InvalidRequest", f"the endpoint URL must be https, not {url!r}", invocation_id=invocation_id)
    return parsed


def _request_path(url: urllib.parse.SplitResult) -> str:
    return url.path + (f"?{url.query}" if url.query else "")


def _valid_token(token: Optional[str], invocation_id: str) -> str:
    if token is None or _VALID_TOKEN.fullmatch(token) is None:
        raise InvalidInvocation("InvalidRequest", "a bearer token is needed (token=...) and must be visible ASCII",
                                invocation_id=invocation_id)
    return token


class GatewayConnection:
    """One HTTPS connection to the gateway, kept open between invocations (HTTP keep-alive),
    so that a session's tool calls pay for TCP and TLS once.

    Exact about whether a request may have been sent: the connection is (re)opened, and a
    failure there reported as not sent, before anything is written; an idle connection the
    gateway already closed is noticed before writing and opened again. A failure after the
    request was written is ambiguous and never repeated. A connection idle for
    IDLE_CONNECTION_SECONDS is not used again: the gateway may be closing it just then."""

    def __init__(self, host: str, port: int, context: ssl.SSLContext) -> None:
        self._netloc = f"{host}:{port}"
        self._connection = http.client.HTTPSConnection(host, port, context=context)
        self._last_answer = 0.0

    def post(self, path: str, body: bytes, token: str, invocation_id: str, timeout: float) -> Invocation:
        connection = self._connection
        idle = time.monotonic() - self._last_answer
        if connection.sock is not None and (idle >= IDLE_CONNECTION_SECONDS or _closed_by_peer(connection.sock)):
            connection.close()
        connection.timeout = timeout
        if connection.sock is None:
            # The request is written only after the TCP connection and the TLS handshake: a
            # failure up to here proves that the function did not run.
            try:
                connection.connect()
            except ssl.SSLError as error:
                connection.close()
                raise TransportError(f"TLS handshake with {self._netloc} failed: {error}", invocation_id=invocation_id,
                                     request_may_have_been_sent=False, kind="tls") from None
            except OSError as error:
                connection.close()
                raise TransportError(f"cannot connect to {self._netloc}: {error}", invocation_id=invocation_id,
                                     request_may_have_been_sent=False, kind="connect") from None
        else:
            connection.sock.settimeout(timeout)
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json", "Accept": "application/json",
                   INVOCATION_ID_HEADER: invocation_id}
        try:
            connection.request("POST", path, body=body, headers=headers)
            answer = connection.getresponse()
            text = answer.read(MAX_RESPONSE_BYTES + 1)
        except (socket.timeout, TimeoutError):
            connection.close()
            raise TransportError(f"no answer within {timeout} s; the function may have run", invocation_id=invocation_id,
                                 request_may_have_been_sent=True, kind="timeout") from None
        except (OSError, http.client.HTTPException) as error:
            connection.close()
            raise TransportError(f"the connection failed after the request was sent; the function may have run: {error}",
                                 invocation_id=invocation_id, request_may_have_been_sent=True, kind="connection") from None
        except BaseException:
            # Interrupted mid-exchange (KeyboardInterrupt): the connection is in no state to be used again.
            connection.close()
            raise
        if len(text) > MAX_RESPONSE_BYTES:
            connection.close()
            raise TransportError(f"the answer is over {MAX_RESPONSE_BYTES} bytes", invocation_id=invocation_id,
                                 request_may_have_been_sent=True, kind="response")
        self._last_answer = time.monotonic()
        return _answer(answer, text, invocation_id)

    def close(self) -> None:
        self._connection.close()


def _closed_by_peer(sock: socket.socket) -> bool:
    """Whether an idle keep-alive connection is readable: the peer closed it (or sent what
    nobody asked for); either way it is not used again."""
    try:
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)


def _answer(answer: http.client.HTTPResponse, text: bytes, invocation_id: str) -> Invocation:
    try:
        document = json.loads(text)
    except ValueError:
        document = None
    if answer.status != 200:
        raise error_from_answer(answer.status, document, answer.getheader(INVOCATION_ID_HEADER) or invocation_id)
    if not isinstance(document, dict) or "result" not in document:
        raise TransportError("HTTP 200 without the result body of the invoke contract", invocation_id=invocation_id,
                             request_may_have_been_sent=True, kind="response")
    return Invocation(invocation_id=document.get("invocationId", invocation_id), result=document["result"],
                      attempt=document.get("attempt", 0), outputs=document.get("outputs") or {},
                      stdout=document.get("stdout"), stderr=document.get("stderr"))
