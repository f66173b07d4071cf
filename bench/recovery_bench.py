#!/usr/bin/env python3
"""Recovery times of a real Muster cluster on this machine (server and
agents with fake GPUs, real processes in cgroups; run as root).

  node-loss:  a 2-replica gang on two of three one-GPU nodes; the node of
              replica 0 dies (its agent and its task killed with SIGKILL).
              Measured: from the kill until every replica of the next
              attempt runs on the surviving nodes.
  partition:  a job on an agent in its own network namespace (veth); the
              link is cut. Measured: until the job's process on the cut-off
              node is gone (self-fence), and until the job runs again on the
              other node.
  restart:    the server is killed (SIGKILL) with QUEUE pending jobs in its
              store and restarted at once. Measured: until it answers, and
              until a job submitted right then runs on an agent.

Timings are the configured ones (the defaults unless --fast: unreachableAfter
1 s, lease 2 s, lostAfter 5 s, grace 1 s); what they add beyond the
configured timeouts is the overhead Muster itself adds.

Usage: sudo bench/recovery_bench.py BINARY [--fast] [--queue 10000]
"""
import argparse
import os
import signal
import subprocess
import sys
import time

from local_cluster import LocalCluster


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


class Cluster(LocalCluster):
    """A LocalCluster whose agents have one fake GPU each, with a wait helper."""

    def __init__(self, binary, config, listen="127.0.0.1"):
        super().__init__(binary, config, listen, prefix="muster-recovery-")

    def job(self, id):
        return self.get(f"/v1/jobs/{id}")

    def wait(self, what, timeout=600, step=0.01):
        deadline = time.time() + timeout
        while time.time() < deadline:
            v = what()
            if v:
                return v
            time.sleep(step)
        raise SystemExit("timed out")


def pids_of(path):
    try:
        with open(path) as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def node_loss(binary, config):
    c = Cluster(binary, config)
    try:
        for i in range(3):
            c.add_agent(f"n{i}")
        c.wait_nodes(3)
        d = f"{c.dir}/pids"
        os.makedirs(d)
        id = c.submit("name: gang\nreplicas: 2\nresources: {gpus: 1}\n"
                      f"command: [/bin/sh, -c, 'echo $$ >> {d}/a$MUSTER_ATTEMPT.r$MUSTER_REPLICA_INDEX; exec sleep 3600']\n")["id"]
        c.wait(lambda: len(pids_of(f"{d}/a1.r0")) and len(pids_of(f"{d}/a1.r1")))
        victim = c.job(id)["allocations"][0]["node"]
        t0 = time.time()
        c.agents[victim].kill()
        for pid in pids_of(f"{d}/a1.r0"):
            os.kill(pid, signal.SIGKILL)
        c.wait(lambda: pids_of(f"{d}/a2.r0") and pids_of(f"{d}/a2.r1"))
        took = time.time() - t0
        print(f"node-loss: gang restarted on the surviving nodes {took:.2f} s after the node died")
        c.request("POST", f"/v1/jobs/{id}/cancel", "")
        return took
    finally:
        c.close()


def partition(binary, config):
    tag = f"rb{os.getpid() % 100000}"
    ns, host_if, ns_if = f"{tag}n", f"{tag}h", f"{tag}a"
    net = f"10.199.{os.getpid() % 250}."
    sh = lambda cmd: subprocess.run(cmd, shell=True, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    sh(f"ip netns add {ns}; ip link add {host_if} type veth peer name {ns_if}; ip link set {ns_if} netns {ns}; "
       f"ip addr add {net}1/24 dev {host_if}; ip link set {host_if} up; "
       f"ip netns exec {ns} ip addr add {net}2/24 dev {ns_if}; ip netns exec {ns} ip link set {ns_if} up; "
       f"ip netns exec {ns} ip link set lo up")
    c = None
    try:
        c = Cluster(binary, config, listen="0.0.0.0")
        c.add_agent("cut", wrapper=["nsenter", f"--net=/run/netns/{ns}"], server=f"http://{net}1:{c.port}")
        c.wait_nodes(1)
        d = f"{c.dir}/pids"
        os.makedirs(d)
        id = c.submit("name: cutoff\nresources: {gpus: 1}\n"
                      f"command: [/bin/sh, -c, 'echo $$ >> {d}/a$MUSTER_ATTEMPT; exec sleep 3600']\n")["id"]
        c.wait(lambda: pids_of(f"{d}/a1"))
        c.add_agent("other")
        c.wait_nodes(2)
        pid = pids_of(f"{d}/a1")[0]
        t0 = time.time()
        sh(f"ip link set {host_if} down")
        c.wait(lambda: not alive(pid))
        fenced = time.time() - t0
        c.wait(lambda: pids_of(f"{d}/a2"))
        moved = time.time() - t0
        print(f"partition: the cut-off node's task was gone {fenced:.2f} s after the cut (self-fence); "
              f"the job ran on another node after {moved:.2f} s")
        c.request("POST", f"/v1/jobs/{id}/cancel", "")
        return fenced, moved
    finally:
        if c:
            c.close()
        subprocess.run(f"ip link del {host_if}; ip netns del {ns}", shell=True, stderr=subprocess.DEVNULL)


def restart(binary, config, queue):
    c = Cluster(binary, config)
    try:
        c.add_agent("r0")
        c.wait_nodes(1)
        # A queue that cannot run (2 GPUs each on a one-GPU node), in arrays.
        left = queue
        while left > 0:
            n = min(1000, left)
            c.submit(f"name: backlog\narray: {n}\nresources: {{gpus: 2}}\ncommand: [/bin/true]\n")
            left -= n
        d = f"{c.dir}/pids"
        os.makedirs(d)
        t0 = time.time()
        c.server.kill()
        c.server.wait()
        c.start_server()
        up = time.time() - t0
        id = c.submit(f"name: after\nresources: {{gpus: 1}}\ncommand: [/bin/sh, -c, 'echo $$ >> {d}/a; exec sleep 3600']\n")["id"]
        c.wait(lambda: pids_of(f"{d}/a"))
        runs = time.time() - t0
        print(f"restart: with {queue} jobs queued the server answered {up:.2f} s after the kill; "
              f"a job submitted then was running on its node at {runs:.2f} s")
        c.request("POST", f"/v1/jobs/{id}/cancel", "")
        return up, runs
    finally:
        c.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--fast", action="store_true", help="shrunk failure timings")
    ap.add_argument("--queue", type=int, default=10000)
    ap.add_argument("--only", choices=["node-loss", "partition", "restart"])
    a = ap.parse_args()
    config = ("agents: {defaultGrace: 1s, unreachableAfter: 1s, lease: 2s, lostAfter: 5s}\n" if a.fast
              else "agents: {defaultGrace: 30s}\n")
    print("timings: " + ("fast (unreachableAfter 1s, lease 2s, lostAfter 5s, grace 1s)" if a.fast
                         else "defaults (unreachableAfter 20s, lease 60s, lostAfter 120s, grace 30s)"))
    if a.only in (None, "node-loss"):
        node_loss(a.binary, config)
    if a.only in (None, "partition"):
        if os.geteuid() != 0:
            print("partition: skipped (needs root for ip netns)")
        else:
            partition(a.binary, config)
    if a.only in (None, "restart"):
        restart(a.binary, config, a.queue)


if __name__ == "__main__":
    sys.exit(main())
