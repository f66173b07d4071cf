"""Tests of the Python client (python/muster) against a real server: a
`muster dev` cluster of two nodes, started here with its own token file.
Usage: muster_client_test.py MUSTER_BINARY
"""

import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.join(HERE, "..", "..", "python")
sys.path.insert(0, PYTHON_DIR)

import muster  # noqa: E402
from dev_cluster import Cluster  # noqa: E402

BINARY = ""


class ClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cluster = Cluster(BINARY)

    @classmethod
    def tearDownClass(cls):
        cls.cluster.stop()

    def client(self, **kwargs):
        return muster.Client(self.cluster.url, token=self.cluster.token(), **kwargs)

    def test_the_notebook_session_runs_with_debians_python(self):
        env = dict(self.cluster.env, PYTHONPATH=PYTHON_DIR)
        r = subprocess.run(["/usr/bin/python3", os.path.join(HERE, "notebook_session.py")], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertIn("log 1: replica 1 of 2", r.stdout)
        self.assertIn("refused 400 Invalid spec.resources.gpus - spec.resources.gpus: must be an integer", r.stdout)
        self.assertTrue(r.stdout.endswith("ok\n"), r.stdout)

    def test_errors_carry_the_servers_code_message_and_field(self):
        c = self.client()
        with self.assertRaises(muster.MusterError) as e:
            c.get(999999)
        self.assertEqual((e.exception.status, e.exception.code), (404, "NotFound"))
        with self.assertRaises(muster.MusterError) as e:
            c.submit({"command": ["true"], "replicas": 0})
        self.assertEqual(e.exception.field, "spec.replicas")
        self.assertIn("spec.replicas", str(e.exception))
        with self.assertRaises(muster.MusterError) as e:
            muster.Client(self.cluster.url, token="mst_not-a-token").jobs()
        self.assertEqual(e.exception.status, 401)
        with self.assertRaises(muster.MusterError) as e:
            muster.Client("http://127.0.0.1:1", token="x", timeout=2).jobs()
        self.assertEqual(e.exception.status, 0)
        self.assertIn("cannot reach the server", e.exception.message)

    def test_wait_gives_up_at_its_timeout_and_cancel_ends_the_job(self):
        c = self.client()
        job = c.submit(command=["sleep", "300"], name="long")
        with self.assertRaises(muster.WaitTimeout) as e:
            c.wait(job["id"], timeout=1, poll=0.2)
        self.assertIn(e.exception.job["state"], ("PENDING", "STARTING", "RUNNING"))
        c.cancel(job["id"])
        self.assertEqual(c.wait(job["id"], timeout=60, poll=0.2)["state"], "CANCELLED")
        self.assertIn(job["id"], [j["id"] for j in c.jobs(state=["CANCELLED"], name="long")])

    def test_follow_logs_streams_until_the_job_ends(self):
        c = self.client()
        job = c.submit(command=["/bin/sh", "-c", "for i in 1 2 3; do echo line $i; sleep 0.5; done"], name="lines")
        text = "".join(c.follow_logs(job["id"], poll=0.2))
        self.assertEqual(text, "line 1\nline 2\nline 3\n")

    def test_the_token_file_is_found_as_the_cli_finds_it_and_must_be_private(self):
        saved = dict(os.environ)
        try:
            os.environ["MUSTER_TOKEN_FILE"] = self.cluster.token_file
            os.environ.pop("MUSTER_TOKEN", None)
            self.assertEqual(muster.Client(self.cluster.url).token, self.cluster.token())
            open_file = os.path.join(self.cluster.dir, "open-token")
            with open(open_file, "w") as f:
                f.write("mst_x\n")
            os.chmod(open_file, 0o644)
            os.environ["MUSTER_TOKEN_FILE"] = open_file
            with self.assertRaises(muster.MusterError) as e:
                muster.Client(self.cluster.url)
            self.assertIn("readable by others; run chmod 600", str(e.exception))
        finally:
            os.environ.clear()
            os.environ.update(saved)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: muster_client_test.py MUSTER_BINARY")
    BINARY = os.path.abspath(sys.argv.pop(1))
    unittest.main()
