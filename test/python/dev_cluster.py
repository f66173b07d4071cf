"""A `muster dev` cluster for the Python tests: started in a directory of
its own, with its own token file (muster_client_test.py, muster_job_test.py).
"""

import os
import shutil
import signal
import subprocess
import tempfile
import time

import muster


class Cluster:
    """`muster dev --nodes 2` of `binary`, in a directory of its own."""

    def __init__(self, binary):
        self.dir = tempfile.mkdtemp(prefix="muster-pyclient-")
        self.token_file = os.path.join(self.dir, "token")
        self.env = dict(os.environ, MUSTER_TOKEN_FILE=self.token_file, MUSTER_MUNGE_SOCKET="none")
        self.env.pop("MUSTER_TOKEN", None)
        self.env.pop("MUSTER_SERVER", None)
        self.out = open(os.path.join(self.dir, "dev.out"), "w")
        self.process = subprocess.Popen([binary, "dev", "--nodes", "2", "--port", "0", "--dir",
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
