"""Helpers for user code on kruntimes' Python Runtime Server (tasks and functions).

Standard library only; importable as `import krt` (the server puts this directory on
PYTHONPATH ahead of the Run's own).

Fencing keeps a stale attempt from writing the Run's status, but it neither stops an old
process on an unreachable machine nor makes a third-party API exactly-once: an attempt
may repeat what an earlier attempt of the same Run already did. Guard such actions with
an idempotency key that the other side deduplicates on:

    import krt
    requests.post(url, json=charge, headers={"Idempotency-Key": krt.idempotency_key("charge")})

Artifacts (tasks whose Run declares spec.artifacts): upload a declared output and record
it in the ResultManifest; the Run succeeds only once runtimed has found every required
artifact in the store with the recorded size and digest:

    krt.artifacts.put("report.csv", "/tmp/report.csv")   # -> {"artifactId", "size", "sha256", "mediaType"}

`put` hashes the file, asks the Runtime Server's local endpoint ($KRT_ARTIFACTS_URL) for an
upload grant, uploads the file with exactly the grant's headers and records it. The low
level steps are `krt.artifacts.grant(...)` and `krt.artifacts.record(...)`. Refusals raise
`krt.artifacts.ArtifactError` with `.code` (a kruntimes error code such as
ArtifactNotDeclared, ArtifactTooLarge or StaleAttempt; StoreRejected when the store
answered the upload with an HTTP error, `.status` and an excerpt of its body in the
message; StoreUnreachable when the upload's connection failed).

Waiting for input (a task Run with spec.artifacts, on a Runtime that declares
capability checkpoint-v1): hand over the state to continue from and stop; the Run
becomes WaitingInput, and a response (a RunInput) starts a new attempt of the same
code, which finds the checkpoint and the response with `krt.resumed()`:

    state = krt.resumed()
    if state is None:                                  # the first attempt
        draft = prepare()
        krt.wait_for_input({"type": "object", "properties": {"approved": {"type": "boolean"}},
                            "required": ["approved"]}, {"draft": draft})   # never returns
    else:                                              # a continuation
        publish(state.checkpoint["draft"]) if state.input["approved"] else discard()

`wait_for_input(schema, checkpoint)`: `schema` is the JSON Schema (a dict, or True) the
response must satisfy, at most 16 KiB as JSON; `checkpoint` is any JSON-serialisable
value (stored as its JSON text) or bytes, at most 1 MiB. It flushes stdout and stderr and
asks the Runtime Server ($KRT_ARTIFACTS_URL), which stores the checkpoint as the
attempt's object and has runtimed record the wait. On success it does not return: the
Runtime Server ends every process of the attempt (nothing after the call runs, not even
`finally` blocks or atexit handlers). A refusal raises `krt.InputError` with `.code` and
`.status`, and the task goes on: CheckpointUnsupported (no spec.artifacts or no
checkpoint-v1; also raised without asking when $KRT_ARTIFACTS_URL is unset),
CheckpointTooLarge, InputSchemaInvalid (also raised without asking when the schema is
over its bound), StaleAttempt, OwnerUnavailable, ArtifactStoreUnavailable, CheckpointNotStored.
One wait per execution: a second one while the first is in flight is refused.

`resumed()` is None on a first attempt (no checkpoint), else an object with
`.checkpoint` (the checkpoint decoded as JSON; its bytes when they are not JSON),
`.checkpoint_bytes`, `.input` (the response data, decoded JSON), `.response_id` and
`.resumed_from_attempt` (the attempt that stored the checkpoint). The files behind it
are $KRT_CHECKPOINT_FILE and $KRT_INPUT_FILE, in a directory private to the execution.
"""

import base64
import hashlib
import http.client
import json
import os
import signal
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

__all__ = ["InputError", "artifacts", "attempt", "idempotency_key", "resumed", "run_uid", "wait_for_input"]


def run_uid():
    """metadata.uid of the Run ($KRT_RUN_UID): the same for every attempt."""
    value = os.environ.get("KRT_RUN_UID", "")
    if value == "":
        raise RuntimeError("KRT_RUN_UID is not set: not running as a kruntimes Run")
    return value


def attempt():
    """status.attempt of the Run ($KRT_ATTEMPT, >= 1): a new one for every retry."""
    value = os.environ.get("KRT_ATTEMPT", "")
    if not value.isdigit() or int(value) < 1:
        raise RuntimeError(f"KRT_ATTEMPT is {value!r}: not running as a kruntimes Run")
    return int(value)


def idempotency_key(step, uid=None):
    """A key for one external action of this Run, stable across its attempts.

    64 hex characters: SHA-256 of "<run UID>:<step>". `step` names the action within the
    Run ("charge", "email-42"); the attempt is deliberately not part of it, so a retry
    sends the same key and the receiver can drop the repeat. Bash computes the same:
        printf '%s:%s' "$KRT_RUN_UID" charge | sha256sum | cut -d' ' -f1
    """
    if not isinstance(step, str) or step == "":
        raise ValueError("step must be a non-empty string")
    uid = run_uid() if uid is None else uid
    return hashlib.sha256(f"{uid}:{step}".encode("utf-8")).hexdigest()


_CHUNK = 1024 * 1024
_ENDPOINT_TIMEOUT_S = 30
_UPLOAD_TIMEOUT_S = 600


class ArtifactError(Exception):
    """An artifact request was refused: `.code` is the kruntimes error code, `.status` the HTTP status."""

    def __init__(self, code, message, status=None):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.status = status


def _endpoint(path, body, error_class=ArtifactError, timeout=_ENDPOINT_TIMEOUT_S):
    url = os.environ.get("KRT_ARTIFACTS_URL", "")
    token = os.environ.get("KRT_ARTIFACTS_TOKEN", "")
    if url == "" or token == "":
        raise ArtifactError("ArtifactNotDeclared", "KRT_ARTIFACTS_URL is not set: this Run declares no artifacts")
    request = urllib.request.Request(
        url + path,
        data=json.dumps(body).encode("utf-8"),
        method="POST",
        headers={"Authorization": "Bearer " + token, "Content-Type": "application/json"},
    )
    try:
        # The endpoint is on loopback: never through a proxy from the Run's environment.
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(request, timeout=timeout) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as failure:
        text = failure.read(4096).decode("utf-8", "replace")
        try:
            parsed = json.loads(text)
            code, message = parsed["code"], parsed["message"]
        except (ValueError, KeyError, TypeError):
            code, message = "Internal", text[:500]
        raise error_class(code, message, failure.code) from None
    except urllib.error.URLError as failure:
        raise error_class("Internal", f"cannot reach the artifacts endpoint: {failure.reason}") from failure
    except (OSError, http.client.HTTPException) as failure:
        raise error_class("Internal", f"the artifacts endpoint did not answer: {failure}") from failure


def _claim(artifact_id, size, sha256, media_type):
    body = {"artifactId": artifact_id, "size": size, "sha256": sha256}
    if media_type is not None:
        body["mediaType"] = media_type
    return body


def _grant(artifact_id, size, sha256, media_type=None):
    """Asks for an upload grant of exactly `size` bytes with this lowercase hex SHA-256.

    Returns {"url", "method", "headers", "expiresAt"}: send exactly those headers.
    """
    return _endpoint("/v1/grants", _claim(artifact_id, size, sha256, media_type))


def _record(artifact_id, size, sha256, media_type=None):
    """Records the artifact in the ResultManifest (the last record of an ID wins)."""
    return _endpoint("/v1/manifest", _claim(artifact_id, size, sha256, media_type))


def _digest(path):
    digest = hashlib.sha256()
    size = 0
    with open(path, "rb") as file:
        while chunk := file.read(_CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return size, digest.hexdigest()


def _upload(grant, path, size):
    """PUTs the file to the grant's URL with exactly its headers (no others added but Host)."""
    url = urllib.parse.urlsplit(grant["url"])
    if url.scheme not in ("http", "https"):
        raise ArtifactError("InvalidRequest", f"the grant's URL has scheme {url.scheme!r}")
    connection_class = http.client.HTTPSConnection if url.scheme == "https" else http.client.HTTPConnection
    connection = connection_class(url.hostname, url.port, timeout=_UPLOAD_TIMEOUT_S)
    try:
        with open(path, "rb") as file:
            status, body = _send(connection, grant, url, file, size)
    except (OSError, http.client.HTTPException) as error:
        raise ArtifactError("StoreUnreachable", f"the upload to {url.hostname} failed: {error}") from error
    finally:
        connection.close()
    if status >= 300:
        excerpt = body[:500].decode("utf-8", "replace")
        raise ArtifactError("StoreRejected", f"the store answered {status}: {excerpt}", status)


def _send(connection, grant, url, file, size):
    target = url.path + ("?" + url.query if url.query else "")
    connection.putrequest(grant.get("method", "PUT"), target, skip_accept_encoding=True)
    for name, value in grant.get("headers", {}).items():
        connection.putheader(name, value)
    connection.endheaders()
    sent = 0
    while sent < size and (chunk := file.read(min(_CHUNK, size - sent))):
        connection.send(chunk)
        sent += len(chunk)
    if sent != size:
        raise ArtifactError("InvalidRequest", f"the file changed while uploading: {sent} of {size} bytes")
    response = connection.getresponse()
    return response.status, response.read(4096)


def _put(artifact_id, path, media_type=None):
    """Uploads the file at `path` as a declared artifact and records it in the manifest.

    Returns the manifest entry {"artifactId", "size", "sha256", "mediaType"}.
    """
    size, sha256 = _digest(path)
    grant = _grant(artifact_id, size, sha256, media_type)
    # A file that changes after hashing fails the store's signed checksum or runtimed's check.
    _upload(grant, path, size)
    return _record(artifact_id, size, sha256, media_type)


class _Artifacts:
    """`krt.artifacts`: uploads of the Run's declared outputs (see the module docstring)."""

    ArtifactError = ArtifactError
    put = staticmethod(_put)
    grant = staticmethod(_grant)
    record = staticmethod(_record)


artifacts = _Artifacts()


# Waiting for input (see the module docstring).

_CHECKPOINT_BYTES = 1024 * 1024
_INPUT_SCHEMA_BYTES = 16 * 1024
# The Runtime Server grants, uploads and has runtimed verify and record: up to a minute or so.
_WAIT_TIMEOUT_S = 180
# After a successful wait the Runtime Server ends the group at once; this is the fallback.
_ENDING_WAIT_S = 60


class InputError(Exception):
    """A wait for input was refused: `.code` is the kruntimes error code, `.status` the HTTP status."""

    def __init__(self, code, message, status=None):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.status = status


def _json_bytes(value, what):
    try:
        return json.dumps(value, allow_nan=False, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    except (TypeError, ValueError) as error:
        raise InputError("InvalidRequest", f"{what} is not JSON-serialisable: {error}") from None


def wait_for_input(schema, checkpoint):
    """Stores `checkpoint`, makes the Run wait for a response satisfying `schema`, and ends the attempt.

    Never returns on success; raises InputError when refused (see the module docstring).
    """
    if not isinstance(schema, (dict, bool)):
        raise InputError("InputSchemaInvalid", "the input schema must be a JSON Schema: a dict or a bool")
    schema_size = len(_json_bytes(schema, "the input schema"))
    if schema_size > _INPUT_SCHEMA_BYTES:
        raise InputError("InputSchemaInvalid", f"the input schema is {schema_size} bytes as JSON, over {_INPUT_SCHEMA_BYTES}")
    if isinstance(checkpoint, (bytes, bytearray, memoryview)):
        data = bytes(checkpoint)
    else:
        data = _json_bytes(checkpoint, "the checkpoint")
    if len(data) > _CHECKPOINT_BYTES:
        raise InputError("CheckpointTooLarge", f"the checkpoint is {len(data)} bytes, over {_CHECKPOINT_BYTES}")
    if os.environ.get("KRT_ARTIFACTS_URL", "") == "" or os.environ.get("KRT_ARTIFACTS_TOKEN", "") == "":
        raise InputError(
            "CheckpointUnsupported",
            "KRT_ARTIFACTS_URL is not set: waiting for input needs a task Run with spec.artifacts (an ArtifactStore) "
            "on a Runtime that declares capability checkpoint-v1",
        )
    # Whatever the attempt printed must be out before its processes are ended.
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    body = {"schema": schema, "checkpoint": base64.b64encode(data).decode("ascii")}
    _endpoint("/v1/wait-for-input", body, InputError, _WAIT_TIMEOUT_S)
    _end_attempt()


def _end_attempt():
    """The Runtime Server is ending this process group; never let the attempt go on meanwhile."""
    deadline = time.monotonic() + _ENDING_WAIT_S
    while time.monotonic() < deadline:
        time.sleep(1)
    os.killpg(os.getpgrp(), signal.SIGKILL)


class Resumed:
    """What a continuation attempt starts from (see `resumed()`)."""

    def __init__(self, checkpoint_bytes, input_data, response_id, resumed_from_attempt):
        self.checkpoint_bytes = checkpoint_bytes
        self.input = input_data
        self.response_id = response_id
        self.resumed_from_attempt = resumed_from_attempt

    @property
    def checkpoint(self):
        """The checkpoint decoded as JSON, or its bytes when they are not JSON."""
        try:
            return json.loads(self.checkpoint_bytes.decode("utf-8"))
        except ValueError:
            return self.checkpoint_bytes

    def __repr__(self):
        return f"Resumed(response_id={self.response_id!r}, resumed_from_attempt={self.resumed_from_attempt})"


def resumed():
    """None on a first attempt; on a continuation, its checkpoint and response (a `Resumed`)."""
    checkpoint_file = os.environ.get("KRT_CHECKPOINT_FILE", "")
    if checkpoint_file == "":
        return None
    with open(checkpoint_file, "rb") as file:
        checkpoint_bytes = file.read()
    with open(os.environ["KRT_INPUT_FILE"], "rb") as file:
        input_data = json.loads(file.read().decode("utf-8"))
    from_attempt = os.environ.get("KRT_RESUMED_FROM_ATTEMPT", "")
    return Resumed(
        checkpoint_bytes,
        input_data,
        os.environ.get("KRT_RESPONSE_ID", ""),
        int(from_attempt) if from_attempt.isdigit() else None,
    )
