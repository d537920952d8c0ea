"""Helpers for user code on kruntimes' Python Runtime Server (tasks and functions).

Standard library only; importable as `import krt` (the server puts this directory on
PYTHONPATH ahead of the Run's own).

Fencing keeps a stale attempt from writing the Run's status, but it neither stops an old
process on an unreachable machine nor makes a third-party API exactly-once: an attempt
may repeat what an earlier attempt of the same Run already did. Guard such actions with
an idempotency key that the other side deduplicates on:

    import krt
    requests.post(url, json=charge, headers={"Idempotency-Key": krt.idempotency_key("charge")})
"""

import hashlib
import os

__all__ = ["attempt", "idempotency_key", "run_uid"]


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
