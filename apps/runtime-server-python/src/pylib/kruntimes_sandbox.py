"""The sandbox function: tools an agent calls in a function Run's workspace.

A stock handler of the Python Runtime Server (standard library only). A Run uses it with
`spec.mode.function.handler: "kruntimes_sandbox:handle"` and the inline source
`from kruntimes_sandbox import handle`. The workspace is the registration's working
directory: one per registration, removed with it, never shared between Runs.

One JSON object per invocation, `{"tool": ..., ...}`:
  exec        {"command": "ls -l"} (/bin/sh -c) or {"python": "print(1)"} (python3 -c),
              "timeoutSeconds" (default 30, at most the invocation's remaining time minus
              a margin) -> {"exitCode", "stdout", "stderr", "stdoutTruncated",
              "stderrTruncated", "durationMs"}
  write_file  {"path", "content", "encoding": "utf-8"|"base64"} -> {"path", "bytes"}
  read_file   {"path", "encoding"} -> {"path", "content", "encoding", "bytes"}
  list_files  {"path": "."} -> {"path", "entries": [{"name", "type", "size"}], "truncated"}

Errors are raised, and reach the caller as FunctionFailed with the message's last line
`kruntimes_sandbox.SandboxError: <Kind>: ...`, Kind one of PathOutsideWorkspace (an
absolute path, a `..` escaping, a symlink resolving outside), InvalidToolCall (unknown tool,
bad argument, a file that cannot be read or written) and ExecTimeout (`timed out after N
s`, with the head of the output). The path check is about the file tools' arguments; what
a command may do is bounded by the Pod, not by this module.

An exec runs in its own process group (session), which is killed when the command's
process exits (nothing it started in the background outlives the call) or when its time
limit passes.
"""

import base64
import binascii
import json
import os
import selectors
import signal
import subprocess
import sys
import time

__all__ = ["SandboxError", "handle"]

#: The invoke contract's bound of each captured stream (BOUNDS.capturedStreamBytes).
CAPTURED_STREAM_BYTES = 64 * 1024
#: The invoke contract's bound of a result (BOUNDS.resultBytes).
RESULT_BYTES = 1024 * 1024
DEFAULT_TIMEOUT_SECONDS = 30
#: Room left before the invocation's own deadline, so that an overrun is answered by this
#: module (the bounded error, the worker kept) and not by the worker's restart.
DEADLINE_MARGIN_SECONDS = 2
#: After the command's process exited, how long output still open in a background process is read.
DRAIN_AFTER_EXIT_SECONDS = 0.5
#: Head of each stream carried by a timeout's message: the whole message stays under the
#: worker's 4000-character error summary and the gRPC status message bound.
TIMEOUT_OUTPUT_BYTES = 1024
LIST_ENTRIES = 1000
MARKER = "\n[kruntimes: output truncated: {shown} of {total} bytes shown]\n"
#: Room for the marker inside the stream bound.
MARKER_ROOM = 128
ENCODINGS = ("utf-8", "base64")


class SandboxError(Exception):
    """A refused or failed tool call; the message starts with its kind."""

    def __init__(self, kind, message):
        super().__init__(f"{kind}: {message}")
        self.kind = kind


def invalid(message):
    return SandboxError("InvalidToolCall", message)


def handle(event, context):
    """The Run's handler: one tool call."""
    try:
        return call_tool(os.path.realpath(os.getcwd()), event, context.remaining_time())
    except SandboxError as error:
        # Only the caller's error matters, not this module's frames: a short traceback
        # leaves the message (and a timeout's output) whole within the error bound.
        raise error.with_traceback(None) from None


def call_tool(workspace, event, remaining_seconds):
    if not isinstance(event, dict):
        raise invalid("the payload must be a JSON object with a \"tool\"")
    tool = event.get("tool")
    if tool == "exec":
        return exec_tool(workspace, event, remaining_seconds)
    if tool == "write_file":
        return write_file(workspace, event)
    if tool == "read_file":
        return read_file(workspace, event)
    if tool == "list_files":
        return list_files(workspace, event)
    raise invalid(f"unknown tool {tool!r}: exec, write_file, read_file or list_files")


# ---------------------------------------------------------------------------- paths


def inside(path, workspace):
    return path == workspace or path.startswith(workspace + os.sep)


def resolve(workspace, path):
    """The real path of `path` (relative to the workspace), refused when it is not inside."""
    if not isinstance(path, str) or path == "" or "\0" in path:
        raise invalid("path must be a non-empty string")
    if os.path.isabs(path):
        raise SandboxError("PathOutsideWorkspace", f"{path!r} is absolute; paths are relative to the workspace")
    joined = os.path.normpath(os.path.join(workspace, path))
    if not inside(joined, workspace):
        raise SandboxError("PathOutsideWorkspace", f"{path!r} leaves the workspace")
    # Symlinks followed, the last one too (a dangling one resolves to its target).
    real = os.path.realpath(joined)
    if not inside(real, workspace):
        raise SandboxError("PathOutsideWorkspace", f"{path!r} resolves (through a symlink) outside the workspace")
    return real


def relative(workspace, real):
    rel = os.path.relpath(real, workspace)
    return "." if rel == os.curdir else rel


def encoding_of(event):
    encoding = event.get("encoding", "utf-8")
    if encoding not in ENCODINGS:
        raise invalid(f"encoding must be one of {', '.join(ENCODINGS)}, not {encoding!r}")
    return encoding


def os_failure(what, path, error):
    return invalid(f"cannot {what} {path!r}: {error.strerror or error}")


# ---------------------------------------------------------------------------- files


def write_file(workspace, event):
    path = event.get("path")
    real = resolve(workspace, path)
    encoding = encoding_of(event)
    content = event.get("content")
    if not isinstance(content, str):
        raise invalid("content must be a string")
    if encoding == "base64":
        try:
            data = base64.b64decode(content, validate=True)
        except (binascii.Error, ValueError) as error:
            raise invalid(f"content is not base64: {error}") from None
    else:
        data = content.encode("utf-8", "surrogatepass")
    try:
        os.makedirs(os.path.dirname(real), exist_ok=True)
        with open(real, "wb") as file:
            file.write(data)
    except OSError as error:
        raise os_failure("write", path, error) from None
    return {"path": relative(workspace, real), "bytes": len(data)}


def read_file(workspace, event):
    path = event.get("path")
    real = resolve(workspace, path)
    encoding = encoding_of(event)
    try:
        with open(real, "rb") as file:
            data = file.read(RESULT_BYTES + 1)
    except OSError as error:
        raise os_failure("read", path, error) from None
    if len(data) > RESULT_BYTES:
        raise invalid(f"{path!r} is over {RESULT_BYTES} bytes, more than a result can carry; read it in parts with exec")
    if encoding == "base64":
        content = base64.b64encode(data).decode("ascii")
    else:
        try:
            content = data.decode("utf-8")
        except UnicodeDecodeError:
            raise invalid(f"{path!r} is not UTF-8; read it with encoding base64") from None
    result = {"path": relative(workspace, real), "content": content, "encoding": encoding, "bytes": len(data)}
    size = len(json.dumps(result, ensure_ascii=False).encode("utf-8"))
    if size > RESULT_BYTES:
        raise invalid(f"{path!r} as a result is {size} bytes, over the {RESULT_BYTES}-byte result bound; read it in parts with exec")
    return result


def entry_type(entry):
    if entry.is_symlink():
        return "symlink"
    if entry.is_dir(follow_symlinks=False):
        return "dir"
    return "file"


def list_files(workspace, event):
    path = event.get("path", ".")
    real = resolve(workspace, path)
    try:
        with os.scandir(real) as found:
            entries = sorted(found, key=lambda entry: entry.name)
        listed = [{"name": entry.name, "type": entry_type(entry), "size": entry.stat(follow_symlinks=False).st_size}
                  for entry in entries[:LIST_ENTRIES]]
    except OSError as error:
        raise os_failure("list", path, error) from None
    return {"path": relative(workspace, real), "entries": listed, "truncated": len(entries) > LIST_ENTRIES}


# ---------------------------------------------------------------------------- exec


class Capture:
    """The head of a stream, up to `limit` bytes; the rest is counted."""

    def __init__(self, limit):
        self.limit = limit
        self.kept = bytearray()
        self.total = 0

    def add(self, data):
        self.total += len(data)
        room = self.limit - len(self.kept)
        if room > 0:
            self.kept += data[:room]

    @property
    def truncated(self):
        return self.total > len(self.kept)

    def text(self, limit=None):
        """The kept head as text, cut to `limit` bytes, with the marker when anything was cut."""
        limit = len(self.kept) if limit is None else min(limit, len(self.kept))
        head = bytes(self.kept[:limit])
        if self.total <= limit:
            return head.decode("utf-8", "replace")
        return trim_partial(head) + MARKER.format(shown=limit, total=self.total)


def trim_partial(head):
    """A character cut in half at the bound is dropped; other bytes that are not UTF-8 are replaced."""
    for cut in range(4):
        try:
            return head[:len(head) - cut].decode("utf-8")
        except UnicodeDecodeError:
            continue
    return head.decode("utf-8", "replace")


def exec_argv(event):
    command, snippet = event.get("command"), event.get("python")
    if (command is None) == (snippet is None):
        raise invalid("exec needs exactly one of \"command\" (a shell command) and \"python\" (a Python snippet)")
    if command is not None:
        if not isinstance(command, str) or command == "":
            raise invalid("command must be a non-empty string")
        return ["/bin/sh", "-c", command]
    if not isinstance(snippet, str) or snippet == "":
        raise invalid("python must be a non-empty string")
    return [sys.executable, "-c", snippet]


def exec_timeout(event, remaining_seconds):
    most = remaining_seconds - DEADLINE_MARGIN_SECONDS
    if most <= 0:
        raise invalid(f"the invocation has {remaining_seconds:.1f} s left, too little for a command")
    value = event.get("timeoutSeconds")
    if value is None:
        return min(DEFAULT_TIMEOUT_SECONDS, most)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise invalid("timeoutSeconds must be a positive number")
    if value > most:
        raise invalid(f"timeoutSeconds {value} is over what this invocation allows ({most:.0f} s: its timeout minus "
                      f"{DEADLINE_MARGIN_SECONDS} s); raise the Run's invocationTimeoutSeconds")
    return value


def exited(pid):
    """Whether the process exited, without reaping it: its PID (the group's ID) stays taken."""
    info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    return info is not None and info.si_pid == pid


def exec_tool(workspace, event, remaining_seconds):
    argv = exec_argv(event)
    timeout = exec_timeout(event, remaining_seconds)
    limit = CAPTURED_STREAM_BYTES - MARKER_ROOM
    stdout, stderr = Capture(limit), Capture(limit)
    started = time.monotonic()
    deadline = started + timeout
    try:
        process = subprocess.Popen(argv, cwd=workspace, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, start_new_session=True)
    except OSError as error:
        raise invalid(f"cannot start {argv[0]}: {error.strerror or error}") from None
    timed_out = False
    try:
        with selectors.DefaultSelector() as selector:
            captures = {process.stdout.fileno(): stdout, process.stderr.fileno(): stderr}
            for fd in captures:
                selector.register(fd, selectors.EVENT_READ)
            drain_until = None
            pause = 0.0005
            # Ends: both streams closed and the process exited, the drain after its exit, or the deadline.
            while True:
                now = time.monotonic()
                if drain_until is None and exited(process.pid):
                    drain_until = now + DRAIN_AFTER_EXIT_SECONDS
                if drain_until is not None and (not selector.get_map() or now >= drain_until):
                    break
                if now >= deadline:
                    timed_out = True
                    break
                wait = min(deadline, drain_until or deadline) - now
                if selector.get_map():
                    # Short while the process runs: its exit is noticed by polling.
                    ready = selector.select(wait if drain_until is not None else min(wait, 0.02))
                    for key, _ in ready:
                        data = os.read(key.fd, 65536)
                        if data:
                            captures[key.fd].add(data)
                        else:
                            selector.unregister(key.fd)
                else:
                    # Streams closed, process not exited yet (usually a moment): polled,
                    # sooner first.
                    time.sleep(min(wait, pause))
                    pause = min(pause * 2, 0.02)
    finally:
        # The whole group, while the leader is not reaped yet (its ID cannot be reused).
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait()
        process.stdout.close()
        process.stderr.close()
    duration_ms = round((time.monotonic() - started) * 1000)
    if timed_out:
        raise SandboxError(
            "ExecTimeout",
            f"timed out after {timeout:g} s; the process group was killed\n"
            f"--- stdout ({stdout.total} bytes) ---\n{stdout.text(TIMEOUT_OUTPUT_BYTES)}\n"
            f"--- stderr ({stderr.total} bytes) ---\n{stderr.text(TIMEOUT_OUTPUT_BYTES)}",
        )
    return {
        "exitCode": process.returncode,
        "stdout": stdout.text(),
        "stderr": stderr.text(),
        "stdoutTruncated": stdout.truncated,
        "stderrTruncated": stderr.truncated,
        "durationMs": duration_ms,
    }
