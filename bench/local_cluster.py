"""A real Muster cluster on this machine for the benchmarks: `muster server`
with its own store and port, plus `muster agent` processes with fake GPUs.
Shared by start_bench.py and recovery_bench.py."""
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request


class LocalCluster:
    def __init__(self, binary, config="", listen="127.0.0.1", prefix="muster-bench-"):
        """`config`: YAML lines added to the server's file (listen, store and
        an unlimited rate are set here)."""
        self.binary = binary
        self.dir = tempfile.mkdtemp(prefix=prefix)
        self.listen = listen
        self.config = config
        self.port = 0  # the first start binds any free port; restarts come back on it
        self.agents = {}
        # Agents start at once here (no start jitter); binaries from before
        # --start-jitter (compared in docs/benchmarks.md) know no such flag.
        help_text = subprocess.run([binary, "agent", "--help"], capture_output=True, text=True).stdout
        self.agent_flags = ["--start-jitter", "0"] if "--start-jitter" in help_text else []
        if "--shared-tmp" in help_text:
            self.agent_flags.append("--shared-tmp")  # the benchmarks' jobs keep their files under /tmp
        # Binaries with authentication get an admin token in the store before
        # the server starts, and a node token per agent; older ones named
        # the user in a header.
        self.token = None
        self.env = dict(os.environ, MUSTER_MUNGE_SOCKET="none", MUSTER_TOKEN_FILE="/nonexistent")
        if subprocess.run([binary, "token", "--help"], capture_output=True).returncode == 0:
            self.token = subprocess.run([binary, "token", "create", "--store", f"{self.dir}/muster.db", "--user", "root",
                                         "--expires", "never"], capture_output=True, text=True,
                                        check=True, env=self.env).stdout.strip()
            self.env["MUSTER_TOKEN"] = self.token
        self.start_server()

    def start_server(self):
        """Starts the server and waits until it serves. The bound port is read
        from its port file (no free port is picked first and bound later: that
        races with every other process on the machine)."""
        with open(f"{self.dir}/server.yaml", "w") as f:
            f.write(f"store: {self.dir}/muster.db\nlisten: {self.listen}:{self.port}\n"
                    "rateLimit: {perSecond: 1000000, burst: 1000000}\n"
                    "limits: {pendingJobsPerUser: 100000000}\n" + self.config)
        port_file = f"{self.dir}/port"
        if os.path.exists(port_file):
            os.remove(port_file)
        self.server = subprocess.Popen([self.binary, "server", "-c", f"{self.dir}/server.yaml",
                                        "--port-file", port_file],
                                       stdout=open(f"{self.dir}/server.log", "a"), stderr=subprocess.STDOUT)
        deadline = time.time() + 60
        while time.time() < deadline:
            if self.server.poll() is not None:
                raise SystemExit(f"the server exited with {self.server.returncode}; see {self.dir}/server.log")
            try:
                with open(port_file) as f:
                    self.port = int(f.read())
                self.url = f"http://127.0.0.1:{self.port}"
                self.get("/healthz")
                return
            except (OSError, ValueError):
                time.sleep(0.01)
        raise SystemExit("the server did not start")

    def add_agent(self, name, flags=("--fake-gpus", "1xH100"), wrapper=(), server=None):
        """Starts an agent (under `wrapper`, e.g. nsenter, reaching the server
        at `server` when given)."""
        credential = []
        if self.token:
            token_file = f"{self.dir}/{name}.token"
            if not os.path.exists(token_file):
                token = subprocess.run([self.binary, "token", "create", "--server", self.url, "--node", name],
                                       capture_output=True, text=True, check=True, env=self.env).stdout.strip()
                with open(os.open(token_file, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
                    f.write(token + "\n")
            credential = ["--token-file", token_file]
        self.agents[name] = subprocess.Popen(
            list(wrapper) + [self.binary, "agent", "--server", server or self.url, "--name", name,
                             "--state-dir", f"{self.dir}/{name}", "--stop-tasks-on-exit"]
            + credential + self.agent_flags + list(flags),
            stdout=open(f"{self.dir}/{name}.log", "w"), stderr=subprocess.STDOUT)

    def wait_nodes(self, n):
        deadline = time.time() + 60
        while len(self.get("/v1/nodes")["items"]) < n:
            if time.time() > deadline:
                raise SystemExit("agents did not register")
            time.sleep(0.05)

    def request(self, method, path, body=None):
        data = body.encode() if body is not None else None
        who = {"Authorization": "Bearer " + self.token} if self.token else {"X-Muster-User": "root"}
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers=dict({"Content-Type": "application/yaml"}, **who))
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
