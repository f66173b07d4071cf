"""A Python client for Muster's API: submit jobs, list and follow them, read
their logs, cancel them. Standard library only, so any site's Python 3 runs
it; put this directory (the one holding `muster/`) on PYTHONPATH, or
install the Debian package.

    import muster

    c = muster.Client()                     # $MUSTER_SERVER, the CLI's credentials
    job = c.submit(command=["python", "train.py"], gpus=1, replicas=2,
                   name="digits", time_limit="1h")
    done = c.wait(job["id"], timeout=3600)  # the job's JSON once it has ended
    print(done["state"], c.logs(job["id"], replica=0))
    try:
        c.submit(command=["true"], gpus=-1)
    except muster.MusterError as e:         # the server's code, message and field
        print(e.code, e.field, e.message)

Where it finds the server and who it speaks as, as the `muster` command
does: the `server` argument, else $MUSTER_SERVER (several, comma-separated:
a standby's "not the leader" answer moves on to the next), else
http://127.0.0.1:8470; a `token` argument, else inside a job the job's own
token ($MUSTER_TOKEN), else the token file ($MUSTER_TOKEN_FILE, else
$XDG_CONFIG_HOME/muster/token, else ~/.config/muster/token: lines "TOKEN"
or "SERVER TOKEN", readable by its owner alone), else $MUSTER_TOKEN.
MUNGE is the `muster` command's: on a MUNGE site, make a token once with
`muster token create` for Python to use. An https:// server is checked
against $MUSTER_CA (a PEM file) or the `ca` argument, else the system's CAs.

Jobs are the API's JSON objects (dicts), as docs/api.md describes them.
"""

import json
import os
import ssl
import stat
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid

__all__ = ["Client", "MusterError", "WaitTimeout", "TERMINAL_STATES"]

DEFAULT_SERVER = "http://127.0.0.1:8470"

# The states a job does not leave.
TERMINAL_STATES = frozenset(
    ["COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "PREEMPTED"])


class MusterError(Exception):
    """The server refused a request, or could not be reached.

    status: the HTTP status (0 when no server answered); code: the server's
    error code ("Invalid", "NotFound", "Conflict", ...: docs/api.md,
    "Errors"); message: its words; field: the request field it names
    ("spec.resources.gpus"), or "".
    """

    def __init__(self, message, status=0, code="", field=""):
        self.message = message
        self.status = status
        self.code = code
        self.field = field
        text = message
        if field and not message.startswith(field):
            text = "%s: %s" % (field, text)
        if code:
            text = "%s: %s" % (code, text)
        if status:
            text = "HTTP %d %s" % (status, text)
        super().__init__(text)


class WaitTimeout(MusterError):
    """wait() gave up before the job ended; `job` is its last JSON."""

    def __init__(self, message, job):
        super().__init__(message, code="Timeout")
        self.job = job


def _servers(server):
    text = server or os.environ.get("MUSTER_SERVER") or DEFAULT_SERVER
    servers = [s.strip().rstrip("/") for s in text.split(",") if s.strip()]
    if not servers:
        raise MusterError("no server given")
    return servers


def _token_file():
    if os.environ.get("MUSTER_TOKEN_FILE"):
        return os.environ["MUSTER_TOKEN_FILE"]
    if os.environ.get("XDG_CONFIG_HOME"):
        return os.path.join(os.environ["XDG_CONFIG_HOME"], "muster", "token")
    if os.environ.get("HOME"):
        return os.path.join(os.environ["HOME"], ".config", "muster", "token")
    return ""


def _read_token_file(path, servers):
    """The token for `servers` in `path`, None when it holds none or is
    absent; MusterError when it is unsafe or malformed (as the CLI)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise MusterError("token file %s: not a regular file" % path)
        if st.st_mode & 0o077:
            raise MusterError("token file %s: readable by others; run chmod 600 %s" % (path, path))
        text = os.read(fd, 65536).decode("utf-8", "replace")
    finally:
        os.close(fd)
    bare = None
    for line in text.splitlines():
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        if len(words) > 2:
            raise MusterError("token file %s: a line has more than SERVER TOKEN" % path)
        if len(words) == 1:
            bare = bare or words[0]
        elif words[0].rstrip("/") in servers:
            return words[1]
    return bare


def _find_token(servers):
    env = os.environ.get("MUSTER_TOKEN", "")
    if env.startswith("msj_"):  # inside a job: speak as the job
        return env
    path = _token_file()
    if path:
        token = _read_token_file(path, servers)
        if token:
            return token
    return env or None


def _error_from(status, body):
    """A MusterError from an error answer ({"error": {code, message, field}})."""
    try:
        answer = json.loads(body.decode("utf-8", "replace"))
    except ValueError:
        answer = None
    error = answer.get("error") if isinstance(answer, dict) else None
    if isinstance(error, dict):
        return MusterError(str(error.get("message", "")), status, str(error.get("code", "")),
                           str(error.get("field", "") or ""))
    text = body.decode("utf-8", "replace").strip()[:500]
    return MusterError(text or "no message", status)


def _spec_from(spec, command, fields):
    """The spec to send: `spec` (a dict) with the keyword fields over it."""
    out = dict(spec or {})
    if command is not None:
        if isinstance(command, str):
            raise MusterError("command: give a list of words, e.g. [\"python\", \"train.py\"]", field="command")
        out["command"] = list(command)
    resources = dict(out.get("resources") or {})
    names = {"gpus": "gpus", "gpu_type": "gpuType", "cpus": "cpus", "memory": "memory"}
    for key in list(fields):
        if key in names:
            resources[names[key]] = fields.pop(key)
    if resources:
        out["resources"] = resources
    for key, value in fields.items():
        # snake_case keywords are the spec's camelCase fields.
        parts = key.split("_")
        out[parts[0] + "".join(p[:1].upper() + p[1:] for p in parts[1:])] = value
    return out


class Client:
    """One server (or an HA set of them) as one user."""

    def __init__(self, server=None, token=None, ca=None, timeout=30.0):
        self.servers = _servers(server)
        self.token = token if token is not None else _find_token(self.servers)
        self.timeout = timeout
        cafile = ca or os.environ.get("MUSTER_CA") or None
        self._ssl = ssl.create_default_context(cafile=cafile) if any(
            s.startswith("https://") for s in self.servers) else None
        self._current = 0  # the server that answered last

    # --- requests -------------------------------------------------------

    def _request(self, method, path, body=None, content_type="application/json", headers=None, raw=False, attempt=0):
        """The answer's (status, headers, bytes) for raw, else its JSON. Errors
        raise MusterError with the server's code, message and field. A server
        that cannot be reached, or answers that it is a standby, passes the
        request to the next one."""
        data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
        last = None
        for i in range(len(self.servers)):
            server = self.servers[(self._current + i) % len(self.servers)]
            request = urllib.request.Request(server + path, data=data, method=method)
            if data is not None:
                request.add_header("Content-Type", content_type)
            if self.token:
                request.add_header("Authorization", "Bearer " + self.token)
            for key, value in (headers or {}).items():
                request.add_header(key, value)
            try:
                with urllib.request.urlopen(request, timeout=self.timeout, context=self._ssl) as answer:
                    self._current = (self._current + i) % len(self.servers)
                    payload = answer.read()
                    if raw:
                        return answer.status, dict(answer.headers), payload
                    return json.loads(payload.decode("utf-8")) if payload else None
            except urllib.error.HTTPError as err:
                error = _error_from(err.code, err.read())
                if err.code == 503 and error.code == "NotLeader" and len(self.servers) > 1:
                    last = error
                    continue
                # Busy (rate limit, a leader taking over): again after Retry-After.
                if (err.code == 429 or (err.code == 503 and error.code == "Unavailable")) and attempt < 3:
                    wait = err.headers.get("Retry-After") or "1"
                    time.sleep(min(5.0, float(wait)) if wait.replace(".", "", 1).isdigit() else 1.0)
                    return self._request(method, path, body, content_type, headers, raw, attempt + 1)
                raise error from None
            except (urllib.error.URLError, OSError) as err:
                last = MusterError("%s: cannot reach the server: %s" % (server, getattr(err, "reason", err)))
        raise last

    # --- jobs -------------------------------------------------------------

    def submit(self, spec=None, *, command=None, **fields):
        """Submits a job; its JSON (with "id"; for an array, its first task and
        "arrayFirstId"/"arrayLastId"). `spec`: the spec as a dict; keyword
        fields go over it: command=[...], gpus, gpu_type, cpus, memory (into
        resources) and any other spec field in snake_case (replicas,
        time_limit="1h", name, queue, priority, env={...}, labels={...},
        dependencies="afterok:12", ...). A retry after a lost answer is safe:
        every submit carries an idempotency key."""
        body = _spec_from(spec, command, fields)
        key = {"Idempotency-Key": str(uuid.uuid4())}
        try:
            return self._request("POST", "/v1/jobs", body, headers=key)
        except MusterError as err:
            if err.status:
                raise
            return self._request("POST", "/v1/jobs", body, headers=key)  # once more, the same key

    def submit_file(self, path):
        """Submits a spec file (YAML or JSON), as `muster submit FILE`."""
        with open(path, "rb") as f:
            text = f.read()
        kind = "application/json" if path.endswith(".json") else "application/yaml"
        return self._request("POST", "/v1/jobs", text, content_type=kind,
                             headers={"Idempotency-Key": str(uuid.uuid4())})

    def get(self, job_id):
        """The job's JSON, with its reason, planned start and priority."""
        return self._request("GET", "/v1/jobs/%d" % int(job_id))

    def jobs(self, state=None, queue=None, user=None, name=None, selector=None, limit=None):
        """The jobs this user may see (every page), in id order. `state`: a
        state or a list of them; `selector`: on their labels, as kubectl's
        -l ("team=vision,tier!=batch"); `limit`: at most that many."""
        query = {}
        if selector:
            query["labelSelector"] = selector
        if state:
            query["state"] = state if isinstance(state, str) else ",".join(state)
        for key, value in (("queue", queue), ("user", user), ("name", name)):
            if value:
                query[key] = value
        out, token = [], ""
        while True:
            query["continue"] = token
            query["limit"] = str(min(1000, limit - len(out))) if limit else "1000"
            page = self._request("GET", "/v1/jobs?" + urllib.parse.urlencode(query))
            out.extend(page.get("items", []))
            token = page.get("continue", "")
            if not token or (limit and len(out) >= limit):
                return out[:limit] if limit else out

    def wait(self, job_id, timeout=None, poll=1.0):
        """Waits until the job has ended; its JSON then. WaitTimeout after
        `timeout` seconds (None: no limit)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            job = self.get(job_id)
            if job.get("state") in TERMINAL_STATES:
                return job
            if deadline is not None and time.monotonic() >= deadline:
                raise WaitTimeout("job %d is still %s after %g s" % (int(job_id), job.get("state"), timeout), job)
            time.sleep(poll if deadline is None else max(0.0, min(poll, deadline - time.monotonic())))

    def cancel(self, job_id):
        """Cancels the job; its JSON (CANCELLED, or COMPLETING while its
        replicas stop)."""
        return self._request("POST", "/v1/jobs/%d/cancel" % int(job_id), b"")

    def logs(self, job_id, replica=0, attempt=None, tail=None):
        """A replica's output (stdout and stderr) as text: the current or last
        attempt's, or `attempt`'s; `tail`: its last lines only."""
        return self._logs(job_id, replica, attempt, tail, 0)[1].decode("utf-8", "replace")

    def follow_logs(self, job_id, replica=0, attempt=None, poll=1.0):
        """Yields the replica's output as it comes (text pieces) until the job
        has ended and all of it was read, as `muster logs -f`."""
        offset = 0
        while True:
            ended = self.get(job_id).get("state") in TERMINAL_STATES
            try:
                offset, piece = self._logs(job_id, replica, attempt, None, offset)
            except MusterError as err:
                if err.status != 404 or ended:  # 404: the replica has not started yet
                    raise
                piece = b""
            if piece:
                yield piece.decode("utf-8", "replace")
            elif ended:
                return
            else:
                time.sleep(poll)

    def _logs(self, job_id, replica, attempt, tail, offset):
        query = {"replica": str(int(replica))}
        if attempt is not None:
            query["attempt"] = str(int(attempt))
        if tail is not None:
            query["tail"] = str(int(tail))
        if offset:
            query["offset"] = str(int(offset))
        _, headers, body = self._request("GET", "/v1/jobs/%d/logs?%s" % (int(job_id), urllib.parse.urlencode(query)),
                                         raw=True)
        lowered = {k.lower(): v for k, v in headers.items()}
        next_offset = int(lowered.get("x-muster-log-offset", offset + len(body)))
        return next_offset, body
