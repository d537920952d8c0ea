"""Warm worker of kruntimes' Python Runtime Server: one process per registration.

Standard library only. Imports the user's module once, then serves invocations one at
a time. The protocol uses its own file descriptors, so that nothing the user's code
prints can corrupt it:
  fd 3 (in):  one JSON request per line  {"id", "payload", "deadline"}
  fd 4 (out): first {"ready": true} or {"ready": false, "error": ...},
              then one JSON response per request line.
While a handler runs, sys.stdout and sys.stderr are bounded in-memory writers whose
head is returned with the response; the real fds 1 and 2 (subprocesses, C code) go to
the server's log.

Usage: krt_worker.py WORKDIR HANDLER LIMITS_JSON
       krt_worker.py --spare LIMITS_JSON
A spare is started before any registration, so that the interpreter's start is already
paid when one comes: its first line on fd 3 assigns it (see `assigned`). It exits when
fd 3 closes before that (the server stopped).
"""

import contextlib
import importlib
import io
import json
import os
import re
import sys
import time
import traceback

REQUEST_FD = 3
RESPONSE_FD = 4
TRACEBACK_CHARS = 4000


class BoundedWriter(io.TextIOBase):
    """Keeps the first `limit` bytes written and counts the rest."""

    def __init__(self, limit):
        super().__init__()
        self._limit = limit
        self._parts = []
        self._kept = 0
        self._total = 0

    def writable(self):
        return True

    def write(self, text):
        data = text.encode("utf-8", "replace")
        self._total += len(data)
        room = self._limit - self._kept
        if room > 0:
            piece = data[:room]
            self._parts.append(piece)
            self._kept += len(piece)
        return len(text)

    def captured(self):
        # "ignore" drops a character cut in half at the bound.
        data = b"".join(self._parts).decode("utf-8", "ignore")
        return {"data": data, "truncated": self._total > self._kept, "totalBytes": self._total}


class Context:
    """The second argument of every handler."""

    def __init__(self, invocation_id, deadline, limits):
        self.invocation_id = invocation_id
        #: Seconds since the epoch after which the invocation is killed.
        self.deadline = deadline
        self._limits = limits
        self._outputs = {}

    def remaining_time(self):
        return max(0.0, self.deadline - time.time())

    def set_output(self, key, value):
        """Sets an invocation output; raises ValueError outside the outputs bounds."""
        if not isinstance(key, str) or not re.fullmatch(self._limits["outputKeyPattern"], key) \
                or len(key.encode()) > self._limits["outputKeyBytes"]:
            raise ValueError(f"output key {key!r} must match {self._limits['outputKeyPattern']} "
                             f"and be at most {self._limits['outputKeyBytes']} bytes")
        if not isinstance(value, str):
            raise ValueError(f"output {key!r} must be a string")
        if len(value.encode()) > self._limits["outputValueBytes"]:
            raise ValueError(f"output {key!r} exceeds {self._limits['outputValueBytes']} bytes")
        if key not in self._outputs and len(self._outputs) >= self._limits["outputCount"]:
            raise ValueError(f"at most {self._limits['outputCount']} outputs")
        self._outputs[key] = value


def summary(error):
    text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    return text if len(text) <= TRACEBACK_CHARS else "..." + text[-TRACEBACK_CHARS:]


def load(workdir, handler):
    module_name, _, function_name = handler.rpartition(":")
    os.chdir(workdir)
    sys.path.insert(0, workdir)
    module = importlib.import_module(module_name or "main")
    function = getattr(module, function_name, None)
    if not callable(function):
        raise AttributeError(f"{module_name or 'main'} has no function {function_name!r}")
    return function


def invoke(function, request, limits):
    stdout = BoundedWriter(limits["capturedStreamBytes"])
    stderr = BoundedWriter(limits["capturedStreamBytes"])
    context = Context(request["id"], request["deadline"], limits)

    def failure(kind, message):
        return {"ok": False, "kind": kind, "message": message,
                "stdout": stdout.captured(), "stderr": stderr.captured()}

    try:
        event = json.loads(request["payload"])
    except ValueError as error:
        return failure("bad_payload", str(error))
    try:
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            value = function(event, context)
    except (Exception, SystemExit) as error:  # noqa: BLE001 - the handler's error is the result
        return failure("raised", summary(error))
    try:
        result = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError) as error:
        return failure("result_invalid", f"result is not JSON serializable: {error}")
    size = len(result.encode())
    if size > limits["resultBytes"]:
        return failure("result_too_large", f"result is {size} bytes, at most {limits['resultBytes']} allowed")
    return {"ok": True, "result": result, "outputs": context._outputs,
            "stdout": stdout.captured(), "stderr": stderr.captured()}


def assigned(line):
    """What a cold start gets from its command line and environment, given to a spare:
    {"workdir", "handler", "env", "pythonpath"}. `env` goes into os.environ (the spare
    started with the server's base environment, the cold start's before its additions) and
    `pythonpath` into sys.path where the interpreter puts PYTHONPATH (after the script's
    directory, made absolute from the working directory, which a cold start has as cwd)."""
    assignment = json.loads(line)
    workdir = assignment["workdir"]
    os.environ.update(assignment["env"])
    entries = [entry for entry in assignment["pythonpath"].split(os.pathsep) if entry]
    sys.path[1:1] = [os.path.normpath(os.path.join(workdir, entry)) for entry in entries]
    return workdir, assignment["handler"]


def main():
    spare = sys.argv[1] == "--spare"
    limits_json = sys.argv[2] if spare else sys.argv[3]
    limits = json.loads(limits_json)
    for fd in (REQUEST_FD, RESPONSE_FD):
        os.set_inheritable(fd, False)
    requests = os.fdopen(REQUEST_FD, "rb")
    responses = os.fdopen(RESPONSE_FD, "wb")
    if spare:
        line = requests.readline()
        if not line:
            return 0
        workdir, handler = assigned(line)
    else:
        workdir, handler = sys.argv[1:3]

    def send(message):
        responses.write(json.dumps(message, ensure_ascii=False).encode() + b"\n")
        responses.flush()

    try:
        function = load(workdir, handler)
    except BaseException as error:  # noqa: BLE001 - reported to the server, which exits us
        send({"ready": False, "error": summary(error)})
        return 1
    send({"ready": True})
    for line in requests:
        send(invoke(function, json.loads(line), limits))
    return 0


if __name__ == "__main__":
    sys.exit(main())
