#!/usr/bin/python3
"""A test training job that uses python/muster_job.py.

It counts steps from the checkpoint it resumes from (or 0), writes a
checkpoint every EVERY steps and commits it, reports progress each step,
and ends at STEPS. Behaviour for the tests, from the environment:
  CRASH_AT=N     attempt 1 exits 1 at step N (a crash)
  CORRUPT=1      ... after flipping a byte of its newest checkpoint
  WAIT_STOP=1    attempt 1 loops until a checkpoint is requested (signal or
                 poll), then checkpoints its current step and exits 0
  LOG=path       appends "attempt A start S" and "attempt A end S" lines
  POLL=seconds   with WAIT_STOP: how often the server is asked (default 0.2)
  STOP_TIME=path where the wall time (ns) the checkpoint signal arrived is
                 written
"""
import os
import signal
import sys
import time

sys.path.insert(0, os.environ["MUSTER_PYTHON"])
import muster_job as mj  # noqa: E402

steps = int(os.environ.get("STEPS", "40"))
every = int(os.environ.get("EVERY", "10"))
log = os.environ["LOG"]


def note(text):
    with open(log, "a") as f:
        f.write("attempt %d %s\n" % (mj.attempt, text))


def save(step):
    path = mj.new_checkpoint_dir(step)
    with open(os.path.join(path, "state.txt"), "w") as f:
        f.write("step=%d\n" % step)
    os.makedirs(os.path.join(path, "shards"), exist_ok=True)
    with open(os.path.join(path, "shards", "weights.bin"), "wb") as f:
        f.write(bytes(range(256)) * 64)
    mj.commit_checkpoint(path, step)
    return path


mj.install_signal_handler()
if os.environ.get("STOP_TIME"):
    signum = getattr(signal, os.environ.get("MUSTER_CHECKPOINT_SIGNAL", "SIGUSR1"), signal.SIGUSR1)
    flag = signal.getsignal(signum)

    def timed(num, frame):
        arrived = time.time_ns()
        with open(os.environ["STOP_TIME"], "w") as f:
            f.write("%d\n" % arrived)
        flag(num, frame)

    signal.signal(signum, timed)
step = 0
if mj.resume_from():
    with open(os.path.join(mj.resume_from(), "state.txt")) as f:
        step = int(f.read().strip().split("=")[1])
    assert step == mj.resume_step(), (step, mj.resume_step())
note("start %d" % step)

if os.environ.get("WAIT_STOP") and mj.attempt == 1:
    poll = float(os.environ.get("POLL", "0.2"))
    while not mj.checkpoint_requested(poll_seconds=poll):
        step += 1
        if step == 1:
            note("waiting 1")  # the test's witness: it has asked once and steps on
        time.sleep(0.05)
    save(step)
    note("stopped %d" % step)
    sys.exit(0)

last = None
while step < steps:
    step += 1
    time.sleep(0.02)
    mj.report(step=step, loss=1.0 / step)
    if step % every == 0:
        last = save(step)
    if mj.attempt == 1 and step == int(os.environ.get("CRASH_AT", "0")):
        if os.environ.get("CORRUPT") and last:
            with open(os.path.join(last, "shards", "weights.bin"), "r+b") as f:
                f.seek(100)
                f.write(b"X")
        note("crash %d" % step)
        sys.exit(1)
note("end %d" % step)
