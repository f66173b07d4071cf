#!/usr/bin/python3
"""Tests of the in-job helpers (python/muster_job.py): run inside a real job
on a `muster dev` cluster, against its real server; and the checkpoint
directories' permissions, which need no server.
Usage: muster_job_test.py MUSTER_BINARY
"""
import http.server
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.join(HERE, "..", "..", "python")
sys.path.insert(0, PYTHON_DIR)

import muster  # noqa: E402
from dev_cluster import Cluster  # noqa: E402

BINARY = ""

# What the job runs: every helper, against the server that started it.
JOB_SCRIPT = r"""
import importlib
import json
import os
import sys

import muster_job as mj

out = {"report": mj.report(step=5, loss=0.5, message="warm"),
       "env": {k: v for k, v in os.environ.items() if k.startswith("MUSTER_")}}
path = mj.new_checkpoint_dir(5)
with open(os.path.join(path, "w.bin"), "wb") as f:
    f.write(b"abc")
out["commit"] = mj.commit_checkpoint(path, 5)
try:
    mj.commit_checkpoint(path, 5)
    out["again"] = ""
except mj.MusterError as e:
    out["again"] = str(e)
# Every server of an HA cluster, as an agent passes them: one down, a
# standby, then this one.
os.environ["MUSTER_SERVER"] = sys.argv[2] + "," + os.environ["MUSTER_SERVER"]
mj = importlib.reload(mj)
out["failover"] = mj.report(step=6)
out["current"] = mj._current
with open(sys.argv[1], "w") as f:
    json.dump(out, f)
"""


class Standby(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        data = b'{"error": {"code": "NotLeader", "message": "this server is a standby"}}'
        self.send_response(503)
        self.send_header("X-Muster-Role", "standby")
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


class InJobTest(unittest.TestCase):
    """The helpers in a real job, against the server that runs it."""

    @classmethod
    def setUpClass(cls):
        cls.cluster = Cluster(BINARY)

    @classmethod
    def tearDownClass(cls):
        cls.cluster.stop()

    def test_a_job_reports_commits_and_hears_the_servers_errors(self):
        standby = http.server.HTTPServer(("127.0.0.1", 0), Standby)
        threading.Thread(target=standby.serve_forever, daemon=True).start()
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        dead = probe.getsockname()[1]
        probe.close()
        work = tempfile.mkdtemp(prefix="muster-injob-")
        try:
            script = os.path.join(work, "job.py")
            with open(script, "w") as f:
                f.write(JOB_SCRIPT)
            result = os.path.join(work, "result.json")
            client = muster.Client(self.cluster.url, token=self.cluster.token())
            job = client.submit(command=["/usr/bin/python3", script, result,
                                         "http://127.0.0.1:%d, http://127.0.0.1:%d" % (dead, standby.server_port)],
                                env={"PYTHONPATH": os.path.abspath(PYTHON_DIR)}, resources={"gpus": 1},
                                checkpoint={"dir": os.path.join(work, "ckpt")}, retry={"limit": 0})
            done = client.wait(job["id"], timeout=120)
            with open(result) if os.path.exists(result) else open(os.devnull) as f:
                text = f.read()
            self.assertEqual(done["state"], "COMPLETED", (done, client.logs(job["id"]), text))
            out = json.loads(text)
            self.assertFalse(out["report"], "no checkpoint asked: go on")
            self.assertEqual(out["commit"]["seq"], 1, out)
            self.assertIn("already", out["again"], out)
            self.assertFalse(out["failover"])
            self.assertEqual(out["current"], 2, "the next call starts at the server that answered")
            # What the server kept: the attempt's last step, the checkpoint.
            self.assertEqual(done["attemptHistory"][0].get("lastStep"), 6, done)
            checkpoints = client._request("GET", "/v1/jobs/%d/checkpoints" % job["id"])["items"]
            self.assertEqual([(c["seq"], c["step"], c["state"]) for c in checkpoints], [(1, 5, "COMMITTED")])
            # Its attempt ended: what still runs with its credentials (a
            # process it left behind, a replaced attempt) is told to stop,
            # and hears why from the server.
            saved = dict(os.environ)
            try:
                os.environ.update(out["env"])
                import importlib
                import muster_job
                mj = importlib.reload(muster_job)
                self.assertTrue(mj.report(step=7))
                stale = mj.new_checkpoint_dir(7)
                with open(os.path.join(stale, "w.bin"), "wb") as f:
                    f.write(b"x")
                with self.assertRaises(mj.MusterError) as refused:
                    mj.commit_checkpoint(stale, 7)
                self.assertIn("is not the current one", str(refused.exception))
                self.assertEqual(refused.exception.status, 409)
            finally:
                os.environ.clear()
                os.environ.update(saved)
        finally:
            standby.shutdown()
            standby.server_close()
            import shutil
            shutil.rmtree(work, ignore_errors=True)


class CheckpointDirTest(unittest.TestCase):
    """The job's checkpoint directories: its user's alone. No server."""

    def setUp(self):
        os.environ.update({"MUSTER_JOB_ID": "7", "MUSTER_ATTEMPT": "2", "MUSTER_REPLICA_INDEX": "1",
                           "MUSTER_TOKEN": "msj_7_2_ab", "MUSTER_SERVER": "http://127.0.0.1:1"})
        import importlib
        import muster_job
        self.mj = importlib.reload(muster_job)

    def test_a_jobs_checkpoints_are_its_users_alone(self):
        with tempfile.TemporaryDirectory() as root:
            os.chmod(root, 0o755)
            os.environ["MUSTER_CHECKPOINT_DIR"] = root
            path = self.mj.new_checkpoint_dir(3)
            job_dir = os.path.join(root, "job-7")
            self.assertEqual(os.stat(job_dir).st_mode & 0o777, 0o700)
            self.assertEqual(os.stat(path).st_mode & 0o077, 0)
            # One loosened (an older helper, another umask) is tightened.
            os.chmod(job_dir, 0o755)
            self.mj.new_checkpoint_dir(4)
            self.assertEqual(os.stat(job_dir).st_mode & 0o777, 0o700)

    def test_a_job_directory_someone_else_made_is_refused(self):
        with tempfile.TemporaryDirectory() as root:
            os.environ["MUSTER_CHECKPOINT_DIR"] = root
            # A link planted where the job's directory goes.
            os.makedirs(os.path.join(root, "elsewhere"))
            os.symlink(os.path.join(root, "elsewhere"), os.path.join(root, "job-7"))
            with self.assertRaises(self.mj.MusterError) as refused:
                self.mj.new_checkpoint_dir(1)
            self.assertIn("refusing", str(refused.exception))
            self.assertEqual(os.listdir(os.path.join(root, "elsewhere")), [])
            if os.getuid() == 0:  # a directory of another user, open to all
                os.remove(os.path.join(root, "job-7"))
                os.makedirs(os.path.join(root, "job-7"))
                os.chmod(os.path.join(root, "job-7"), 0o777)
                os.chown(os.path.join(root, "job-7"), 65534, 65534)
                with self.assertRaises(self.mj.MusterError):
                    self.mj.new_checkpoint_dir(1)
                self.assertEqual(os.listdir(os.path.join(root, "job-7")), [])


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: muster_job_test.py MUSTER_BINARY")
    BINARY = os.path.abspath(sys.argv.pop(1))
    unittest.main()
