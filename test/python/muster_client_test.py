"""Tests of the Python client (python/muster) against a real server: a
`muster dev` cluster of two nodes, started here with its own token file.
Usage: muster_client_test.py MUSTER_BINARY
"""

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.join(HERE, "..", "..", "python")
sys.path.insert(0, PYTHON_DIR)

import muster  # noqa: E402

BINARY = ""


class Cluster:
    """`muster dev --nodes 2` in a directory of its own."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="muster-pyclient-")
        self.token_file = os.path.join(self.dir, "token")
        self.env = dict(os.environ, MUSTER_TOKEN_FILE=self.token_file, MUSTER_MUNGE_SOCKET="none")
        self.env.pop("MUSTER_TOKEN", None)
        self.env.pop("MUSTER_SERVER", None)
        self.out = open(os.path.join(self.dir, "dev.out"), "w")
        self.process = subprocess.Popen([BINARY, "dev", "--nodes", "2", "--port", "0", "--dir",
                                         os.path.join(self.dir, "cluster")],
                                        env=self.env, stdout=self.out, stderr=subprocess.STDOUT)
        port = None
        for _ in range(3000):
            try:
                with open(os.path.join(self.dir, "cluster", "port")) as f:
                    port = int(f.read().strip() or 0) or None
            except (OSError, ValueError):
                pass
            if port:
                break
            time.sleep(0.01)
        if not port:
            self.stop()
            raise RuntimeError("muster dev did not start: " + self.output())
        self.url = "http://127.0.0.1:%d" % port
        self.env["MUSTER_SERVER"] = self.url
        for _ in range(1000):  # its nodes
            try:
                nodes = muster.Client(self.url, token=self.token())._request("GET", "/v1/nodes")
                if len(nodes.get("items", [])) == 2:
                    return
            except (muster.MusterError, OSError):
                pass
            time.sleep(0.05)
        self.stop()
        raise RuntimeError("muster dev's nodes did not join: " + self.output())

    def token(self):
        try:
            with open(self.token_file) as f:
                for line in f:
                    words = line.split()
                    if len(words) == 2 and words[0] == self.url:
                        return words[1]
        except OSError:
            pass
        return None

    def output(self):
        with open(os.path.join(self.dir, "dev.out")) as f:
            return f.read()

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.out.close()
        shutil.rmtree(self.dir, ignore_errors=True)


class ClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cluster = Cluster()

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
