#!/usr/bin/env python3
"""Interactive jobs on a real Muster cluster on this machine: how soon
`muster run --interactive` gets its terminal, on an idle cluster and on a
busy one, measured in the same run.

A `muster server` and two agents with 8 fake GPUs each. Each session is
`muster run --interactive --gpus 1 -- /bin/echo ready`, its stdin empty:
submit, wait for the relay, connect (TLS keyed by the job's secret), run
the command on the job's terminal, exit with its status. Two numbers per
session:

  start:    the job's startTime minus its submitTime, as the server
            recorded them (the scheduler's part: a cycle, a preemption);
  session:  the wall time of the whole `muster run`, from its launch to its
            exit (the user's wait for a prompt, and the command's run).

Idle: nothing else runs or waits. Busy: one node runs 8 one-GPU jobs of
class normal, the other 8 of class low (best-effort, 30-minute limits;
they exit on their stop signal and, requeued, backfill the GPU a session
frees), and --queued batch jobs (4 GPUs, 2 h) plus a 16-GPU gang
with a reservation wait ahead of the sessions; each session has to preempt
a best-effort job, well inside its 5-minute minimum run time.

Usage: bench/interactive_bench.py BINARY [--sessions 20] [--queued 1000]
"""
import argparse
import datetime
import os
import subprocess
import time

from local_cluster import LocalCluster


def percentile(values, p):
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


def millis(text):
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000


def sessions(cluster, n, label):
    env = dict(cluster.env, MUSTER_SERVER=cluster.url)
    starts, walls = [], []
    for i in range(n):
        name = f"{label}-{i}"
        began = time.monotonic()
        r = subprocess.run([cluster.binary, "run", "--interactive", "--gpus", "1", "--name", name, "--",
                            "/bin/echo", "ready"], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           env=env, timeout=120)
        walls.append((time.monotonic() - began) * 1000)
        if r.returncode != 0 or "ready" not in r.stdout:
            raise SystemExit(f"session {name} failed ({r.returncode}): {r.stdout} {r.stderr}")
        job = cluster.get(f"/v1/jobs?name={name}&limit=1")["items"][0]
        starts.append(millis(job["startTime"]) - millis(job["submitTime"]))
    return starts, walls


def row(label, values):
    return (f"| {label} | {percentile(values, 50):,.0f} ms | {percentile(values, 90):,.0f} ms | "
            f"{max(values):,.0f} ms |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--sessions", type=int, default=20)
    ap.add_argument("--queued", type=int, default=1000)
    args = ap.parse_args()

    cluster = LocalCluster(os.path.abspath(args.binary), config="agents: {defaultGrace: 1s}\nauth: {rootJobs: [root]}\n")
    try:
        for name in ("a", "b"):
            cluster.add_agent(name, flags=("--fake-gpus", "8xH100"))
        cluster.wait_nodes(2)
        idle_start, idle_wall = sessions(cluster, args.sessions, "idle")

        for i in range(8):
            cluster.submit("name: normal\nresources: {gpus: 1}\ncommand: [sleep, '3600']\n")
        for i in range(8):
            cluster.submit("name: low\npriority: low\nresources: {gpus: 1}\n"
                           "command: [/bin/sh, -c, 'trap \"exit 0\" TERM; while :; do sleep 0.05; done']\n")
        deadline = time.time() + 60
        while len(cluster.get("/v1/jobs?state=RUNNING&limit=100")["items"]) < 16:
            if time.time() > deadline:
                raise SystemExit("the cluster did not fill")
            time.sleep(0.1)
        cluster.submit("name: gang\nreplicas: 2\nresources: {gpus: 8}\ntimeLimit: 1h\ncommand: [sleep, '1']\n")
        cluster.submit(f"name: queued\nresources: {{gpus: 4}}\ntimeLimit: 2h\narray: {args.queued}\n"
                       "command: [sleep, '1']\n")
        busy_start, busy_wall = sessions(cluster, args.sessions, "busy")

        pending = len(cluster.get("/v1/jobs?state=PENDING&limit=1000&name=queued")["items"])
        preempted = sum(1 for j in cluster.get("/v1/jobs?name=low&limit=1000")["items"]
                        for e in cluster.get(f"/v1/jobs/{j['id']}/events")["items"] if e["type"] == "Preempted")
    finally:
        cluster.close()

    print(f"{args.sessions} sessions each; busy: {pending}+ batch jobs still pending after, "
          f"{preempted} preemptions of best-effort jobs")
    print("| cluster, measure | p50 | p90 | max |")
    print("|---|---|---|---|")
    print(row("idle, start (server)", idle_start))
    print(row("busy, start (server)", busy_start))
    print(row("idle, whole session", idle_wall))
    print(row("busy, whole session", busy_wall))
    print(f"busy / idle, p50 of the whole session: {percentile(busy_wall, 50) / percentile(idle_wall, 50):.2f}")


if __name__ == "__main__":
    main()
