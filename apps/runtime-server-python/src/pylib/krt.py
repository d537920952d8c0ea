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
"""

import hashlib
import http.client
import json
import os
import urllib.error
import urllib.parse
import urllib.request

__all__ = ["artifacts", "attempt", "idempotency_key", "run_uid"]


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


def _endpoint(path, body):
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
        with opener.open(request, timeout=_ENDPOINT_TIMEOUT_S) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as error:
        text = error.read(4096).decode("utf-8", "replace")
        try:
            parsed = json.loads(text)
            code, message = parsed["code"], parsed["message"]
        except (ValueError, KeyError, TypeError):
            code, message = "Internal", text[:500]
        raise ArtifactError(code, message, error.code) from None
    except urllib.error.URLError as error:
        raise ArtifactError("Internal", f"cannot reach the artifacts endpoint: {error.reason}") from error


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
