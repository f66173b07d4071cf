"""Muster job helpers for training scripts: progress, checkpoints, stop requests.

Standard library only: copy this file next to a training script, or put
this directory on PYTHONPATH. Inside a Muster job the agent sets the
environment this module reads (MUSTER_JOB_ID, MUSTER_ATTEMPT,
MUSTER_SERVER, MUSTER_TOKEN: the job's own credential, MUSTER_CA: the CAs
that vouch for an https:// server (else the system's), MUSTER_CHECKPOINT_DIR,
MUSTER_RESUME_FROM, ...); outside
one, progress reports do nothing and checkpoints cannot be committed.

    import muster_job as mj

    mj.install_signal_handler()          # the job's checkpoint signal sets a flag
    state = load(mj.resume_from()) if mj.resume_from() else fresh()
    for step in range(start, steps):
        train_one_step()
        if mj.report(step=step, loss=loss):      # True: checkpoint and exit now
            save_and_commit(step); sys.exit(0)
        if step % 100 == 0:
            path = mj.new_checkpoint_dir(step)   # write files into it ...
            save(path)
            mj.commit_checkpoint(path, step)     # ... then commit (one replica)

A checkpoint is committed by writing MANIFEST.json (every file with its
size and SHA-256, written to a temporary name, fsync'ed, renamed) and then
registering it with the server, which refuses a commit from an attempt
that is no longer current. In a gang, every replica writes its part into
the same directory; after a barrier, one replica (rank 0) commits it.
"""

import hashlib
import json
import os
import signal
import ssl
import stat
import time
import urllib.error
import urllib.request

MANIFEST = "MANIFEST.json"
_TEMP = ".MANIFEST.json.tmp"


class MusterError(Exception):
    """The server refused a request, or this process is not in a Muster job."""


def _env_int(name):
    value = os.environ.get(name, "")
    return int(value) if value.isdigit() else 0


job_id = _env_int("MUSTER_JOB_ID")
attempt = _env_int("MUSTER_ATTEMPT")
replica = _env_int("MUSTER_REPLICA_INDEX")
_stop_requested = False
_last_poll = 0.0


def in_job():
    """Whether this process runs inside a Muster job."""
    return job_id > 0 and attempt > 0


def resume_from():
    """The verified checkpoint directory to resume from, or None."""
    return os.environ.get("MUSTER_RESUME_FROM") or None


def resume_step():
    """The step of that checkpoint, or None."""
    step = os.environ.get("MUSTER_RESUME_STEP", "")
    return int(step) if step.isdigit() else None


def latest_checkpoint():
    """The newest checkpoint to resume from, as (directory, step), or
    (None, None): MUSTER_RESUME_FROM, or a newer one this attempt committed
    itself. An elastic job under torchrun restarts its workers within one
    attempt whenever replicas come or go, and they resume from the newest."""
    best = (resume_from(), resume_step())
    root = os.environ.get("MUSTER_CHECKPOINT_DIR", "")
    job_dir = os.path.join(root, "job-%d" % job_id) if root and in_job() else ""
    if job_dir and os.path.isdir(job_dir):
        suffix = ".a%d" % attempt
        for name in os.listdir(job_dir):
            if not (name.startswith("step-") and name.endswith(suffix)):
                continue
            step = name[len("step-"):-len(suffix)]
            path = os.path.join(job_dir, name)
            # Committed: its manifest is written last, by a rename.
            if step.isdigit() and os.path.isfile(os.path.join(path, MANIFEST)) and \
                    (best[1] is None or int(step) > best[1]):
                best = (path, int(step))
    return best if best[0] else (None, None)


def checkpoint_interval():
    """The spec's checkpoint.interval in seconds, or None."""
    return _env_int("MUSTER_CHECKPOINT_INTERVAL") or None


def install_signal_handler(signum=None):
    """Makes the job's checkpoint signal (MUSTER_CHECKPOINT_SIGNAL, default
    SIGUSR1) set the flag that checkpoint_requested() returns."""
    if signum is None:
        signum = getattr(signal, os.environ.get("MUSTER_CHECKPOINT_SIGNAL", "SIGUSR1"), signal.SIGUSR1)

    def handler(_signum, _frame):
        global _stop_requested
        _stop_requested = True

    signal.signal(signum, handler)


class Unreachable(MusterError):
    """The server did not answer (it may be restarting): try again later."""


_current = 0  # the server of MUSTER_SERVER's list that answered last
_tls = None  # the TLS context for https:// servers, made once


def _tls_context():
    global _tls
    if _tls is None:
        _tls = ssl.create_default_context(cafile=os.environ.get("MUSTER_CA") or None)
    return _tls


def _request(method, path, body=None, tries=1):
    """One API call. HTTP errors raise MusterError with the server's message
    and `.status`; no answer (connection refused, timeout, 5xx, 429) raises
    Unreachable after `tries` attempts a few seconds apart. MUSTER_SERVER may
    list several servers (comma-separated, high availability): each attempt
    asks them in turn until one answers as the leader."""
    global _current
    server = os.environ.get("MUSTER_SERVER", "")
    servers = [s.strip() for s in server.split(",") if s.strip()]
    if not servers:
        raise MusterError("MUSTER_SERVER is not set: not inside a Muster job")
    data = json.dumps(body).encode() if body is not None else None
    why = "no answer"
    for attempt_no in range(tries):
        if attempt_no:
            time.sleep(min(2 ** attempt_no, 10))
        for k in range(len(servers)):
            one = servers[(_current + k) % len(servers)]
            req = urllib.request.Request(one.rstrip("/") + path, data=data, method=method)
            req.add_header("Content-Type", "application/json")
            # The job's own credential, which the agent sets: it may report
            # progress and checkpoints of this job and nothing else.
            token = os.environ.get("MUSTER_TOKEN", "")
            if token:
                req.add_header("Authorization", "Bearer " + token)
            try:
                tls = _tls_context() if one.startswith("https://") else None
                with urllib.request.urlopen(req, timeout=30, context=tls) as resp:
                    _current = (_current + k) % len(servers)
                    return json.loads(resp.read() or b"{}")
            except urllib.error.HTTPError as err:
                try:
                    answer = json.loads(err.read())
                    # Errors come as {"error": {"code", "message", "field"}}.
                    message = (answer.get("error") or {}).get("message", "") if isinstance(answer, dict) else ""
                except (ValueError, AttributeError):
                    message = ""
                if err.code >= 500 or err.code == 429:
                    # A standby, one taking over, or a busy server: the next one.
                    why = "HTTP %d from %s: %s" % (err.code, one, message)
                    continue
                error = MusterError("%s %s: HTTP %d: %s" % (method, path, err.code, message))
                error.status = err.code
                raise error from None
            except (urllib.error.URLError, OSError) as err:
                why = getattr(err, "reason", err)  # a refused connection, a certificate not verified, ...
                continue
    raise Unreachable("%s %s: the server at %s did not answer (%s)" % (method, path, server, why))


def report(step=None, message=None, **metrics):
    """Reports progress (step, numeric metrics, a short message). Returns
    True when the job should checkpoint and exit now (also when this attempt
    has been replaced). Outside a job: False. When the server does not
    answer (a restart), training goes on. A job with stallTimeout must
    report more often than that."""
    global _stop_requested
    if not in_job():
        return _stop_requested
    body = {"attempt": attempt, "replica": replica}  # the server compares replicas' step rates
    if step is not None:
        body["step"] = int(step)
    if message:
        body["message"] = str(message)[:1024]
    if metrics:
        body["metrics"] = {k: float(v) for k, v in metrics.items()}
    try:
        answer = _request("POST", "/v1/jobs/%d/progress" % job_id, body)
    except Unreachable:
        return _stop_requested  # a server restart must not stop training
    except MusterError as err:
        if getattr(err, "status", 0) == 409:
            _stop_requested = True  # this attempt is no longer the current one: stop
            return True
        raise
    if answer.get("checkpointRequested"):
        _stop_requested = True
    return _stop_requested


def checkpoint_requested(poll_seconds=30.0):
    """True once the checkpoint signal arrived or the server asked for a
    checkpoint (asked at most every poll_seconds)."""
    global _last_poll
    if _stop_requested or not in_job():
        return _stop_requested
    now = time.monotonic()
    if now - _last_poll >= poll_seconds:
        _last_poll = now
        return report()
    return False


def new_checkpoint_dir(step):
    """Creates and returns a fresh directory for the checkpoint of `step`
    below MUSTER_CHECKPOINT_DIR (one name per step and attempt). The job's
    directory (job-ID) is its user's alone (mode 700): other users' jobs
    sharing the checkpoint root cannot read its checkpoints. One that is not
    a directory of this user (another user made it first, or a link) is
    refused."""
    root = os.environ.get("MUSTER_CHECKPOINT_DIR", "")
    if not root:
        raise MusterError("MUSTER_CHECKPOINT_DIR is not set: the job's spec has no checkpoint.dir")
    job_dir = os.path.join(root, "job-%d" % job_id)
    os.makedirs(job_dir, mode=0o700, exist_ok=True)
    st = os.lstat(job_dir)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
        raise MusterError("%s is not a directory of uid %d (the job's user): refusing to write checkpoints "
                          "into it" % (job_dir, os.getuid()))
    if st.st_mode & 0o077:
        os.chmod(job_dir, 0o700)
    path = os.path.join(job_dir, "step-%09d.a%d" % (int(step), attempt))
    os.makedirs(path, mode=0o700, exist_ok=True)
    return path


def _sha256(path):
    digest = hashlib.sha256()
    size = 0
    with open(path, "rb") as f:
        while True:
            chunk = f.read(1 << 20)
            if not chunk:
                break
            size += len(chunk)
            digest.update(chunk)
    return digest.hexdigest(), size


def _fsync(path, directory=False):
    fd = os.open(path, os.O_RDONLY | (os.O_DIRECTORY if directory else 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_manifest(path, step):
    """Writes MANIFEST.json for the files under `path` durably and returns
    (the manifest's SHA-256, number of files, bytes)."""
    if os.path.exists(os.path.join(path, MANIFEST)):
        raise MusterError("%s already has a manifest: a checkpoint directory is committed once" % path)
    files = []
    for base, dirs, names in os.walk(path):
        dirs.sort()
        for name in sorted(names):
            full = os.path.join(base, name)
            rel = os.path.relpath(full, path).replace(os.sep, "/")
            if rel in (MANIFEST, _TEMP):
                continue
            if os.path.islink(full) or not os.path.isfile(full):
                raise MusterError("%s is not a regular file" % full)
            sha, size = _sha256(full)
            _fsync(full)
            files.append({"path": rel, "size": size, "sha256": sha})
    if not files:
        raise MusterError("%s holds no file to checkpoint" % path)
    files.sort(key=lambda f: f["path"])
    text = json.dumps({"job": job_id, "attempt": attempt, "step": int(step),
                       "createdMs": int(time.time() * 1000), "files": files}, indent=1).encode() + b"\n"
    temp = os.path.join(path, _TEMP)
    with open(temp, "wb") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.rename(temp, os.path.join(path, MANIFEST))
    _fsync(path, directory=True)
    return hashlib.sha256(text).hexdigest(), len(files), sum(f["size"] for f in files)


def commit_checkpoint(path, step):
    """Commits the checkpoint in `path` (its manifest, then the catalog).
    Returns the catalog entry; raises MusterError when the server refuses it
    (for example, this attempt was replaced by a newer one)."""
    if not in_job():
        raise MusterError("not inside a Muster job: MUSTER_JOB_ID and MUSTER_ATTEMPT are not set")
    path = os.path.abspath(path)
    sha, count, size = write_manifest(path, step)
    # Retried through a server restart: the same location and manifest
    # again is answered with the first entry.
    return _request("POST", "/v1/jobs/%d/checkpoints" % job_id,
                    {"attempt": attempt, "step": int(step), "location": path,
                     "manifestSha256": sha, "files": count, "bytes": size}, tries=6)
