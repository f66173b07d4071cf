#!/usr/bin/python3
"""Unit tests of python/muster_job.py against a small local HTTP server that
answers as the Muster API would (the end-to-end tests use the real one)."""
import http.server
import json
import os
import socket
import sys
import tempfile
import threading
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))


class Api(http.server.BaseHTTPRequestHandler):
    status = 200
    answer = {"attempt": 1, "checkpointRequested": False}
    seen = []

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        Api.seen.append((self.path, self.headers["Authorization"], body))
        data = json.dumps(Api.answer if Api.status < 400 else
                          {"error": {"code": "Conflict", "message": "attempt 1 is not running"}})
        self.send_response(Api.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data.encode())

    def log_message(self, *args):
        pass


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


class MusterJobTest(unittest.TestCase):
    def setUp(self):
        self.server = http.server.HTTPServer(("127.0.0.1", 0), Api)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        os.environ.update({"MUSTER_JOB_ID": "7", "MUSTER_ATTEMPT": "2", "MUSTER_REPLICA_INDEX": "1", "MUSTER_TOKEN": "msj_7_2_ab",
                           "MUSTER_SERVER": "http://127.0.0.1:%d" % self.server.server_port})
        import importlib
        import muster_job
        self.mj = importlib.reload(muster_job)
        Api.status, Api.seen = 200, []
        Api.answer = {"attempt": 2, "checkpointRequested": False}

    def tearDown(self):
        self.server.shutdown()
        self.server.server_close()

    def test_report_sends_progress_and_passes_on_a_checkpoint_request(self):
        self.assertFalse(self.mj.report(step=5, loss=0.5, message="warm"))
        path, authorization, body = Api.seen[-1]
        self.assertEqual(path, "/v1/jobs/7/progress")
        self.assertEqual(authorization, "Bearer msj_7_2_ab")
        self.assertEqual(body, {"attempt": 2, "replica": 1, "step": 5, "message": "warm", "metrics": {"loss": 0.5}})
        Api.answer = {"attempt": 2, "checkpointRequested": True}
        self.assertTrue(self.mj.report(step=6))
        self.assertTrue(self.mj.checkpoint_requested())

    def test_a_replaced_attempt_is_told_to_stop(self):
        Api.status = 409
        self.assertTrue(self.mj.report(step=1))

    def test_an_error_carries_the_servers_message(self):
        Api.status = 409
        with tempfile.TemporaryDirectory() as path:
            with open(os.path.join(path, "w.bin"), "wb") as f:
                f.write(b"x")
            with self.assertRaises(self.mj.MusterError) as caught:
                self.mj.commit_checkpoint(path, 1)
        self.assertIn("attempt 1 is not running", str(caught.exception))

    def test_several_servers_the_one_that_answers_is_used(self):
        # The agent passes every server of an HA cluster; the first is down
        # (a port nothing listens on), the second a standby's 503.
        standby = http.server.HTTPServer(("127.0.0.1", 0), Standby)
        threading.Thread(target=standby.serve_forever, daemon=True).start()
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        dead = probe.getsockname()[1]
        probe.close()
        try:
            os.environ["MUSTER_SERVER"] = "http://127.0.0.1:%d, http://127.0.0.1:%d,http://127.0.0.1:%d" % (
                dead, standby.server_port, self.server.server_port)
            self.assertFalse(self.mj.report(step=3))
            self.assertEqual(Api.seen[-1][0], "/v1/jobs/7/progress")
            self.assertEqual(self.mj._current, 2, "the next call starts at the server that answered")
        finally:
            standby.shutdown()
            standby.server_close()

    def test_an_unreachable_server_does_not_stop_training(self):
        self.server.shutdown()  # nothing listens on its port any more
        self.server.server_close()
        self.assertFalse(self.mj.report(step=1))

    def test_commit_writes_a_manifest_and_registers_it(self):
        with tempfile.TemporaryDirectory() as root:
            os.environ["MUSTER_CHECKPOINT_DIR"] = root
            path = self.mj.new_checkpoint_dir(12)
            self.assertTrue(path.startswith(root) and path.endswith("step-000000012.a2"))
            os.makedirs(os.path.join(path, "sub"))
            with open(os.path.join(path, "sub", "w.bin"), "wb") as f:
                f.write(b"abc")
            Api.answer = {"seq": 1}
            self.assertEqual(self.mj.commit_checkpoint(path, 12), {"seq": 1})
            with open(os.path.join(path, "MANIFEST.json"), "rb") as f:
                text = f.read()
            manifest = json.loads(text)
            self.assertEqual(manifest["files"], [{"path": "sub/w.bin", "size": 3, "sha256":
                             "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"}])
            self.assertEqual((manifest["job"], manifest["attempt"], manifest["step"]), (7, 2, 12))
            _, _, body = Api.seen[-1]
            import hashlib
            self.assertEqual(body["manifestSha256"], hashlib.sha256(text).hexdigest())
            self.assertEqual((body["files"], body["bytes"], body["location"]), (1, 3, path))
            with self.assertRaises(self.mj.MusterError):  # committed once
                self.mj.commit_checkpoint(path, 12)

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
    unittest.main()
