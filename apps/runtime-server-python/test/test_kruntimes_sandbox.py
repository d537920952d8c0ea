"""Unit tests of the sandbox handler kruntimes_sandbox (run by sandbox-handler.test.ts)."""

import base64
import os
import shutil
import sys
import tempfile
import time
import types
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src", "pylib"))

import kruntimes_sandbox as sandbox  # noqa: E402


class Workspace(unittest.TestCase):
    def setUp(self):
        self.root = os.path.realpath(tempfile.mkdtemp(prefix="sandbox-test-"))
        self.workspace = os.path.join(self.root, "ws")
        self.outside = os.path.join(self.root, "outside")
        os.mkdir(self.workspace)
        os.mkdir(self.outside)
        with open(os.path.join(self.outside, "secret.txt"), "w") as file:
            file.write("secret")

    def tearDown(self):
        shutil.rmtree(self.root)

    def call(self, event, remaining=60.0):
        return sandbox.call_tool(self.workspace, event, remaining)

    def refused(self, kind, event, remaining=60.0):
        with self.assertRaises(sandbox.SandboxError) as caught:
            self.call(event, remaining)
        self.assertEqual(caught.exception.kind, kind)
        self.assertTrue(str(caught.exception).startswith(kind + ": "), str(caught.exception))
        return str(caught.exception)


class FilesTest(Workspace):
    def test_write_read_list_round_trip_with_parents_created(self):
        self.assertEqual(self.call({"tool": "write_file", "path": "data/in.csv", "content": "a,b\n1,2\n"}),
                         {"path": "data/in.csv", "bytes": 8})
        self.assertEqual(self.call({"tool": "read_file", "path": "data/in.csv"}),
                         {"path": "data/in.csv", "content": "a,b\n1,2\n", "encoding": "utf-8", "bytes": 8})
        self.call({"tool": "write_file", "path": "b.txt", "content": "é"})
        os.symlink("b.txt", os.path.join(self.workspace, "link"))
        listing = self.call({"tool": "list_files", "path": "."})
        self.assertEqual(listing, {"path": ".", "truncated": False, "entries": [
            {"name": "b.txt", "type": "file", "size": 2},
            {"name": "data", "type": "dir", "size": os.lstat(os.path.join(self.workspace, "data")).st_size},
            {"name": "link", "type": "symlink", "size": 5},
        ]})
        self.assertEqual(self.call({"tool": "list_files"})["path"], ".")

    def test_base64_both_ways(self):
        raw = bytes(range(256))
        self.call({"tool": "write_file", "path": "bin", "content": base64.b64encode(raw).decode(), "encoding": "base64"})
        read = self.call({"tool": "read_file", "path": "bin", "encoding": "base64"})
        self.assertEqual(base64.b64decode(read["content"]), raw)
        self.assertEqual(read["bytes"], 256)
        self.assertIn("not UTF-8", self.refused("InvalidToolCall", {"tool": "read_file", "path": "bin"}))
        self.refused("InvalidToolCall", {"tool": "write_file", "path": "x", "content": "!!", "encoding": "base64"})

    def test_read_over_the_result_bound_is_refused(self):
        with open(os.path.join(self.workspace, "big"), "wb") as file:
            file.write(b"x" * (sandbox.RESULT_BYTES + 1))
        self.assertIn("over", self.refused("InvalidToolCall", {"tool": "read_file", "path": "big"}))
        # Under the bound in bytes, over it once JSON-escaped.
        with open(os.path.join(self.workspace, "controls"), "wb") as file:
            file.write(b"\x01" * (sandbox.RESULT_BYTES // 2))
        self.assertIn("result bound", self.refused("InvalidToolCall", {"tool": "read_file", "path": "controls"}))

    def test_listing_is_bounded(self):
        for i in range(sandbox.LIST_ENTRIES + 5):
            open(os.path.join(self.workspace, f"f{i:05d}"), "w").close()
        listing = self.call({"tool": "list_files", "path": "."})
        self.assertEqual(len(listing["entries"]), sandbox.LIST_ENTRIES)
        self.assertTrue(listing["truncated"])
        self.assertEqual(listing["entries"][0]["name"], "f00000")

    def test_missing_files_and_bad_arguments(self):
        self.refused("InvalidToolCall", {"tool": "read_file", "path": "nope"})
        self.refused("InvalidToolCall", {"tool": "list_files", "path": "nope"})
        self.refused("InvalidToolCall", {"tool": "write_file", "path": ".", "content": "x"})
        self.refused("InvalidToolCall", {"tool": "write_file", "path": "x", "content": 3})
        self.refused("InvalidToolCall", {"tool": "write_file", "path": "x", "content": "x", "encoding": "latin-1"})
        self.refused("InvalidToolCall", {"tool": "read_file", "path": ""})
        self.refused("InvalidToolCall", {"tool": "read_file"})
        self.refused("InvalidToolCall", {"tool": "rm", "path": "x"})
        self.refused("InvalidToolCall", {"path": "x"})
        with self.assertRaises(sandbox.SandboxError):
            self.call(["exec"])


class PathEscapeTest(Workspace):
    def escapes(self, path):
        for event in ({"tool": "read_file", "path": path}, {"tool": "write_file", "path": path, "content": "x"},
                      {"tool": "list_files", "path": path}):
            self.refused("PathOutsideWorkspace", event)

    def test_absolute(self):
        self.escapes(os.path.join(self.outside, "secret.txt"))
        self.escapes("/etc")

    def test_dot_dot(self):
        self.escapes("../outside/secret.txt")
        self.escapes("a/../../outside")
        self.escapes("..")
        # A `..` that stays inside is a path like any other.
        self.call({"tool": "write_file", "path": "a/../inside.txt", "content": "x"})
        self.assertTrue(os.path.exists(os.path.join(self.workspace, "inside.txt")))

    def test_symlinks_out(self):
        os.symlink(self.outside, os.path.join(self.workspace, "out"))
        os.symlink(os.path.join(self.outside, "secret.txt"), os.path.join(self.workspace, "secret"))
        os.symlink(os.path.join(self.outside, "new.txt"), os.path.join(self.workspace, "dangling"))
        self.escapes("out")
        self.escapes("out/secret.txt")
        self.escapes("secret")
        self.escapes("dangling")
        self.assertFalse(os.path.exists(os.path.join(self.outside, "new.txt")))
        with open(os.path.join(self.outside, "secret.txt")) as file:
            self.assertEqual(file.read(), "secret")

    def test_a_symlink_inside_is_followed(self):
        os.mkdir(os.path.join(self.workspace, "real"))
        os.symlink("real", os.path.join(self.workspace, "alias"))
        self.assertEqual(self.call({"tool": "write_file", "path": "alias/f", "content": "x"}), {"path": "real/f", "bytes": 1})


class ExecTest(Workspace):
    def test_shell_and_python_run_in_the_workspace(self):
        self.call({"tool": "write_file", "path": "in.txt", "content": "21"})
        shell = self.call({"tool": "exec", "command": "cat in.txt; echo oops >&2; exit 3"})
        self.assertEqual((shell["exitCode"], shell["stdout"], shell["stderr"]), (3, "21", "oops\n"))
        self.assertEqual((shell["stdoutTruncated"], shell["stderrTruncated"]), (False, False))
        self.assertIsInstance(shell["durationMs"], int)
        py = self.call({"tool": "exec", "python": "import os; print(int(open('in.txt').read()) * 2, os.getcwd())"})
        self.assertEqual(py["stdout"], f"42 {self.workspace}\n")
        self.assertEqual(py["exitCode"], 0)

    def test_output_is_bounded_with_a_marker(self):
        result = self.call({"tool": "exec", "python": "import sys; sys.stdout.write('é' * 100000); sys.stderr.write('e' * 10)"})
        self.assertTrue(result["stdoutTruncated"])
        self.assertFalse(result["stderrTruncated"])
        self.assertLessEqual(len(result["stdout"].encode()), sandbox.CAPTURED_STREAM_BYTES)
        self.assertRegex(result["stdout"], r"\[kruntimes: output truncated: \d+ of 200000 bytes shown\]\n$")
        self.assertNotIn("\ufffd", result["stdout"])

    def test_overrun_kills_the_process_group_and_carries_the_head_of_the_output(self):
        marker = os.path.join(self.workspace, "survived")
        started = time.monotonic()
        message = self.refused("ExecTimeout", {
            "tool": "exec", "timeoutSeconds": 1,
            "command": f"echo started; (sleep 3; touch {marker}) & python3 -c 'print(\"x\" * 5000)'; sleep 30",
        })
        self.assertLess(time.monotonic() - started, 10)
        self.assertIn("timed out after 1 s", message)
        self.assertIn("started", message)
        self.assertIn("output truncated: 1024 of", message)
        self.assertLess(len(message), 3000)
        time.sleep(3.5)
        self.assertFalse(os.path.exists(marker), "a process of the group outlived the timeout")

    def test_a_background_process_ends_with_its_command(self):
        marker = os.path.join(self.workspace, "survived")
        result = self.call({"tool": "exec", "command": f"(sleep 2; touch {marker}) & echo done"})
        self.assertEqual(result["stdout"], "done\n")
        self.assertLess(result["durationMs"], 2000)
        time.sleep(2.5)
        self.assertFalse(os.path.exists(marker))

    def test_time_limit_within_the_invocation(self):
        self.assertIn("over what this invocation allows",
                      self.refused("InvalidToolCall", {"tool": "exec", "command": "true", "timeoutSeconds": 59}, remaining=60))
        self.refused("InvalidToolCall", {"tool": "exec", "command": "true"}, remaining=1)
        self.assertEqual(self.call({"tool": "exec", "command": "true"}, remaining=5)["exitCode"], 0)
        for bad in (0, -1, "5", True):
            self.refused("InvalidToolCall", {"tool": "exec", "command": "true", "timeoutSeconds": bad})

    def test_exactly_one_of_command_and_python(self):
        self.refused("InvalidToolCall", {"tool": "exec"})
        self.refused("InvalidToolCall", {"tool": "exec", "command": "true", "python": "pass"})
        self.refused("InvalidToolCall", {"tool": "exec", "command": ""})
        self.refused("InvalidToolCall", {"tool": "exec", "python": 1})


class HandleTest(Workspace):
    def test_uses_the_working_directory_and_keeps_the_traceback_short(self):
        context = types.SimpleNamespace(remaining_time=lambda: 60.0)
        cwd = os.getcwd()
        os.chdir(self.workspace)
        try:
            self.assertEqual(sandbox.handle({"tool": "exec", "command": "pwd"}, context)["stdout"], self.workspace + "\n")
            # Not assertRaises: it drops the traceback.
            try:
                sandbox.handle({"tool": "read_file", "path": "../outside/secret.txt"}, context)
                caught = None
            except sandbox.SandboxError as error:
                caught = error
        finally:
            os.chdir(cwd)
        self.assertIsNotNone(caught)
        # This frame and handle's: none of the module's inner frames.
        frames = 0
        tb = caught.__traceback__
        while tb is not None:
            frames += 1
            tb = tb.tb_next
        self.assertEqual(frames, 2)
        self.assertIsNone(caught.__cause__)


if __name__ == "__main__":
    unittest.main()
