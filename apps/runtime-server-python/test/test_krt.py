"""Unit tests of the user-code helper module krt (run by krt-helper.test.ts)."""

import base64
import hashlib
import http.server
import json
import os
import subprocess
import sys
import tempfile
import threading
import unittest
from unittest import mock

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src", "pylib"))

import krt  # noqa: E402

UID = "3f1c2b9e-8d7a-4c61-9b2e-0a1b2c3d4e5f"


class IdempotencyKeyTest(unittest.TestCase):
    def test_stable_across_attempts_of_one_run(self):
        with mock.patch.dict(os.environ, {"KRT_RUN_UID": UID, "KRT_ATTEMPT": "1"}):
            first = krt.idempotency_key("charge")
        with mock.patch.dict(os.environ, {"KRT_RUN_UID": UID, "KRT_ATTEMPT": "2"}):
            second = krt.idempotency_key("charge")
        self.assertEqual(first, second)
        self.assertRegex(first, r"^[0-9a-f]{64}$")

    def test_differs_by_step_and_by_run(self):
        with mock.patch.dict(os.environ, {"KRT_RUN_UID": UID}):
            self.assertNotEqual(krt.idempotency_key("charge"), krt.idempotency_key("refund"))
        other = "00000000-0000-4000-8000-000000000000"
        self.assertNotEqual(krt.idempotency_key("charge", uid=UID), krt.idempotency_key("charge", uid=other))

    def test_matches_the_documented_bash_equivalent(self):
        out = subprocess.run(
            ["bash", "-c", "printf '%s:%s' \"$KRT_RUN_UID\" charge | sha256sum | cut -d' ' -f1"],
            env={**os.environ, "KRT_RUN_UID": UID},
            capture_output=True,
            text=True,
            check=True,
        )
        self.assertEqual(out.stdout.strip(), krt.idempotency_key("charge", uid=UID))

    def test_outside_a_run_or_without_a_step_it_refuses(self):
        env = {k: v for k, v in os.environ.items() if k not in ("KRT_RUN_UID", "KRT_ATTEMPT")}
        with mock.patch.dict(os.environ, env, clear=True):
            with self.assertRaises(RuntimeError):
                krt.idempotency_key("charge")
            with self.assertRaises(RuntimeError):
                krt.attempt()
        with self.assertRaises(ValueError):
            krt.idempotency_key("", uid=UID)

    def test_run_uid_and_attempt_come_from_the_environment(self):
        with mock.patch.dict(os.environ, {"KRT_RUN_UID": UID, "KRT_ATTEMPT": "3"}):
            self.assertEqual(krt.run_uid(), UID)
            self.assertEqual(krt.attempt(), 3)


class _Fake(http.server.BaseHTTPRequestHandler):
    """The local endpoint and the store in one: grants point back at this server's /store."""

    def log_message(self, *args):
        pass

    def _body(self):
        return self.rfile.read(int(self.headers.get("Content-Length", "0")))

    def _send(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        body = json.loads(self._body())
        self.server.calls.append((self.path, self.headers.get("Authorization"), body))
        if body["artifactId"] == "refused":
            self._send(409, {"code": "StaleAttempt", "message": "attempt 1 is no longer current"})
        elif self.path == "/v1/grants":
            headers = {"Content-Length": str(body["size"]), "Content-Type": "text/csv", "x-amz-checksum-sha256": "c2ln"}
            store = "/store/bad" if body["artifactId"] == "bad-store" else "/store/ok?X-Amz-Expires=60"
            url = f"http://127.0.0.1:{self.server.server_port}{store}"
            self._send(200, {"url": url, "method": "PUT", "headers": headers, "expiresAt": "2030-01-01T00:00:00.000Z"})
        else:
            self._send(200, {**body, "mediaType": body.get("mediaType", "text/csv")})

    def do_PUT(self):
        self.server.puts.append((self.path, dict(self.headers.items()), self._body()))
        if self.path.startswith("/store/bad"):
            self.send_response(403)
            self.send_header("Content-Length", "22")
            self.end_headers()
            self.wfile.write(b"<Error>Denied</Error>\n")
        else:
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()


class ArtifactsTest(unittest.TestCase):
    def setUp(self):
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Fake)
        self.server.calls, self.server.puts = [], []
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{self.server.server_port}"
        # A proxy in the environment must not capture calls to the loopback endpoint.
        env = {"KRT_ARTIFACTS_URL": url, "KRT_ARTIFACTS_TOKEN": "tok", "http_proxy": "http://127.0.0.1:9", "no_proxy": ""}
        self.env = mock.patch.dict(os.environ, env)
        self.env.start()
        self.dir = tempfile.TemporaryDirectory()
        self.file = os.path.join(self.dir.name, "report.csv")
        self.data = b"a,b\n" * 100_000
        with open(self.file, "wb") as f:
            f.write(self.data)

    def tearDown(self):
        self.env.stop()
        self.server.shutdown()
        self.server.server_close()
        self.dir.cleanup()

    def test_put_hashes_grants_uploads_with_exactly_the_grant_headers_and_records(self):
        entry = krt.artifacts.put("report.csv", self.file)
        sha = hashlib.sha256(self.data).hexdigest()
        self.assertEqual(entry, {"artifactId": "report.csv", "size": len(self.data), "sha256": sha, "mediaType": "text/csv"})
        self.assertEqual([c[0] for c in self.server.calls], ["/v1/grants", "/v1/manifest"])
        self.assertEqual(self.server.calls[0][1], "Bearer tok")
        self.assertEqual(self.server.calls[0][2], {"artifactId": "report.csv", "size": len(self.data), "sha256": sha})
        [(path, headers, body)] = self.server.puts
        self.assertEqual(path, "/store/ok?X-Amz-Expires=60")
        self.assertEqual(body, self.data)
        sent = {k.lower(): v for k, v in headers.items() if k.lower() != "host"}
        self.assertEqual(sent, {"content-length": str(len(self.data)), "content-type": "text/csv", "x-amz-checksum-sha256": "c2ln"})

    def test_the_media_type_is_passed_on_when_given(self):
        krt.artifacts.record("report.csv", 3, "a" * 64, "text/csv")
        self.assertEqual(self.server.calls[0][2]["mediaType"], "text/csv")

    def test_a_refusal_of_the_endpoint_raises_its_code(self):
        with self.assertRaises(krt.artifacts.ArtifactError) as raised:
            krt.artifacts.put("refused", self.file)
        self.assertEqual((raised.exception.code, raised.exception.status), ("StaleAttempt", 409))
        self.assertIn("no longer current", str(raised.exception))
        self.assertEqual(self.server.puts, [])

    def test_a_refusal_of_the_store_raises_store_rejected_and_records_nothing(self):
        with self.assertRaises(krt.artifacts.ArtifactError) as raised:
            krt.artifacts.put("bad-store", self.file)
        self.assertEqual((raised.exception.code, raised.exception.status), ("StoreRejected", 403))
        self.assertIn("Denied", str(raised.exception))
        self.assertEqual([c[0] for c in self.server.calls], ["/v1/grants"])

    def test_an_unreachable_store_raises_store_unreachable(self):
        with mock.patch.object(krt, "_grant", return_value={"url": "http://127.0.0.1:9/k", "method": "PUT", "headers": {}}):
            with self.assertRaises(krt.artifacts.ArtifactError) as raised:
                krt.artifacts.put("report.csv", self.file)
        self.assertEqual(raised.exception.code, "StoreUnreachable")

    def test_grant_returns_the_grant(self):
        grant = krt.artifacts.grant("report.csv", 4, "b" * 64)
        self.assertEqual(grant["method"], "PUT")
        self.assertEqual(grant["headers"]["Content-Length"], "4")

    def test_without_declared_artifacts_it_refuses(self):
        with mock.patch.dict(os.environ, {"KRT_ARTIFACTS_URL": ""}):
            with self.assertRaises(krt.artifacts.ArtifactError) as raised:
                krt.artifacts.put("report.csv", self.file)
        self.assertEqual(raised.exception.code, "ArtifactNotDeclared")


class _FakeWaits(http.server.BaseHTTPRequestHandler):
    """The local endpoint's wait route: answers what the test set in `server.answer`."""

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.server.calls.append((self.path, self.headers.get("Authorization"), json.loads(body)))
        status, answer = self.server.answer
        data = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class _Ended(Exception):
    pass


class WaitForInputTest(unittest.TestCase):
    SCHEMA = {"type": "object", "properties": {"approved": {"type": "boolean"}}}

    def setUp(self):
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _FakeWaits)
        self.server.calls, self.server.answer = [], (200, {"attempt": 2})
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        env = {"KRT_ARTIFACTS_URL": f"http://127.0.0.1:{self.server.server_port}", "KRT_ARTIFACTS_TOKEN": "tok"}
        self.env = mock.patch.dict(os.environ, env)
        self.env.start()
        # The Runtime Server would end the process here; the test only needs to see it reached.
        self.ending = mock.patch.object(krt, "_end_attempt", side_effect=_Ended)
        self.ending.start()

    def tearDown(self):
        self.ending.stop()
        self.env.stop()
        self.server.shutdown()
        self.server.server_close()

    def test_posts_the_schema_and_the_json_checkpoint_then_never_returns(self):
        with self.assertRaises(_Ended):
            krt.wait_for_input(self.SCHEMA, {"step": 3, "name": "Zoë"})
        [(path, auth, body)] = self.server.calls
        self.assertEqual((path, auth), ("/v1/wait-for-input", "Bearer tok"))
        self.assertEqual(body["schema"], self.SCHEMA)
        self.assertEqual(base64.b64decode(body["checkpoint"]), '{"step":3,"name":"Zoë"}'.encode("utf-8"))

    def test_bytes_are_the_checkpoint_as_they_are(self):
        with self.assertRaises(_Ended):
            krt.wait_for_input(True, b"\x00\xffraw")
        self.assertEqual(base64.b64decode(self.server.calls[0][2]["checkpoint"]), b"\x00\xffraw")
        self.assertIs(self.server.calls[0][2]["schema"], True)

    def test_a_refusal_raises_input_error_with_its_code_and_status(self):
        self.server.answer = (409, {"code": "StaleAttempt", "message": "attempt 1 is no longer current"})
        with self.assertRaises(krt.InputError) as raised:
            krt.wait_for_input(self.SCHEMA, {"step": 3})
        self.assertEqual((raised.exception.code, raised.exception.status), ("StaleAttempt", 409))
        self.assertIn("no longer current", str(raised.exception))

    def test_bounds_and_types_are_refused_before_asking(self):
        cases = [
            (lambda: krt.wait_for_input(self.SCHEMA, b"x" * (1024 * 1024 + 1)), "CheckpointTooLarge"),
            (lambda: krt.wait_for_input({"description": "x" * 16384}, {}), "InputSchemaInvalid"),
            (lambda: krt.wait_for_input([], {}), "InputSchemaInvalid"),
            (lambda: krt.wait_for_input(True, {"nan": float("nan")}), "InvalidRequest"),
            (lambda: krt.wait_for_input(True, object()), "InvalidRequest"),
        ]
        for call, code in cases:
            with self.assertRaises(krt.InputError) as raised:
                call()
            self.assertEqual(raised.exception.code, code)
        self.assertEqual(self.server.calls, [])

    def test_without_the_endpoint_it_is_unsupported(self):
        with mock.patch.dict(os.environ, {"KRT_ARTIFACTS_URL": ""}):
            with self.assertRaises(krt.InputError) as raised:
                krt.wait_for_input(True, {})
        self.assertEqual(raised.exception.code, "CheckpointUnsupported")
        self.assertIn("spec.artifacts", raised.exception.message)
        self.assertIn("checkpoint-v1", raised.exception.message)


class ResumedTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.dir.cleanup()

    def _env(self, checkpoint, data):
        checkpoint_file = os.path.join(self.dir.name, "checkpoint")
        input_file = os.path.join(self.dir.name, "input.json")
        with open(checkpoint_file, "wb") as f:
            f.write(checkpoint)
        with open(input_file, "w") as f:
            f.write(data)
        names = {"KRT_CHECKPOINT_FILE": checkpoint_file, "KRT_INPUT_FILE": input_file}
        return {**names, "KRT_RESPONSE_ID": "resp-1", "KRT_RESUMED_FROM_ATTEMPT": "2"}

    def test_none_on_a_first_attempt(self):
        env = {k: v for k, v in os.environ.items() if not k.startswith("KRT_")}
        with mock.patch.dict(os.environ, env, clear=True):
            self.assertIsNone(krt.resumed())

    def test_a_json_checkpoint_and_the_response(self):
        with mock.patch.dict(os.environ, self._env(b'{"step":3}', '{"approved": true}')):
            state = krt.resumed()
        self.assertEqual(state.checkpoint, {"step": 3})
        self.assertEqual(state.checkpoint_bytes, b'{"step":3}')
        self.assertEqual(state.input, {"approved": True})
        self.assertEqual((state.response_id, state.resumed_from_attempt), ("resp-1", 2))

    def test_a_checkpoint_that_is_not_json_is_its_bytes(self):
        with mock.patch.dict(os.environ, self._env(b"\x00\xff", "null")):
            state = krt.resumed()
        self.assertEqual(state.checkpoint, b"\x00\xff")
        self.assertIsNone(state.input)


if __name__ == "__main__":
    unittest.main()
