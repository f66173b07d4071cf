"""A real Muster cluster on this machine for the benchmarks: `muster server`
with its own store and port, plus `muster agent` processes with fake GPUs.
Shared by start_bench.py and recovery_bench.py."""
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class LocalCluster:
    def __init__(self, binary, config="", listen="127.0.0.1", prefix="muster-bench-"):
        """`config`: YAML lines added to the server's file (listen, store and
        an unlimited rate are set here)."""
        self.binary = binary
        self.dir = tempfile.mkdtemp(prefix=prefix)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        with open(f"{self.dir}/server.yaml", "w") as f:
            f.write(f"store: {self.dir}/muster.db\nlisten: {listen}:{self.port}\n"
                    "rateLimit: {perSecond: 1000000, burst: 1000000}\n" + config)
        self.agents = {}
        self.start_server()

    def start_server(self):
        self.server = subprocess.Popen([self.binary, "server", "-c", f"{self.dir}/server.yaml"],
                                       stdout=open(f"{self.dir}/server.log", "a"), stderr=subprocess.STDOUT)
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                self.get("/healthz")
                return
            except OSError:
                time.sleep(0.01)
        raise SystemExit("the server did not start")

    def add_agent(self, name, flags=("--fake-gpus", "1xH100"), wrapper=(), server=None):
        """Starts an agent (under `wrapper`, e.g. nsenter, reaching the server
        at `server` when given)."""
        self.agents[name] = subprocess.Popen(
            list(wrapper) + [self.binary, "agent", "--server", server or self.url, "--name", name,
                             "--state-dir", f"{self.dir}/{name}", "--stop-tasks-on-exit"] + list(flags),
            stdout=open(f"{self.dir}/{name}.log", "w"), stderr=subprocess.STDOUT)

    def wait_nodes(self, n):
        deadline = time.time() + 60
        while len(self.get("/v1/nodes")["items"]) < n:
            if time.time() > deadline:
                raise SystemExit("agents did not register")
            time.sleep(0.05)

    def request(self, method, path, body=None):
        data = body.encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Content-Type": "application/yaml", "X-Muster-User": "root"})
        with urllib.request.urlopen(req, timeout=60) as r:
            return json.loads(r.read())

    def get(self, path):
        return self.request("GET", path)

    def submit(self, yaml):
        return self.request("POST", "/v1/jobs", yaml)

    def close(self):
        """Stops the agents (they stop their tasks), then the server."""
        for procs in (list(self.agents.values()), [self.server]):
            for p in procs:
                if p.poll() is None:
                    p.send_signal(signal.SIGTERM)
            for p in procs:
                try:
                    p.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    p.kill()
        if not os.environ.get("BENCH_KEEP"):
            shutil.rmtree(self.dir, ignore_errors=True)
