"""Unit tests of the user-code helper module krt (run by krt-helper.test.ts)."""

import os
import subprocess
import sys
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


if __name__ == "__main__":
    unittest.main()
