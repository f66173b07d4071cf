#!/usr/bin/env python3
"""Spot reclaims on a real Muster cluster on this machine: how soon after the
cloud's notice each job on the reclaimed nodes gets its checkpoint signal.

A `muster server` and 2N agents with 8 fake GPUs each: N spot nodes
(`--spot`), filled with 8 one-GPU spot jobs each, then N on-demand nodes for
the jobs to move to. Each job is a shell that writes the wall time (ns) when
its checkpoint signal (SIGUSR1) arrives and exits. Three notices:

  one node:  an operator's notice for one node (`POST /v1/nodes/X/reclaim`,
             what `muster reclaim` sends), 8 jobs;
  burst:     notices for a fifth of the cluster's nodes sent back to back,
             as clouds reclaim a fifth of a pool at once; the server spreads
             the signals at checkpoints.signalsPerSecond (20 here, the
             default) so checkpoint storage is not flooded;
  metadata:  the cloud's own notice on one node, as EC2 serves it
             (spot/instance-action, from an HTTP server in this script) and
             its agent reads it every --reclaim-poll (1 s here; 5 s by
             default): the poll's wait is part of the latency.
Latency is from the notice (the operator's request sent, or the metadata
answer switched on) to the signal's arrival in the job.

Usage: bench/reclaim_bench.py BINARY [--nodes 5]
"""
import argparse
import datetime
import http.server
import os
import threading
import time

from local_cluster import LocalCluster


class Metadata(http.server.BaseHTTPRequestHandler):
    answer = None  # None: no notice (404)

    def do_GET(self):
        body = Metadata.answer
        self.send_response(404 if body is None else 200)
        self.end_headers()
        if body is not None:
            self.wfile.write(body.encode())

    def log_message(self, *args):
        pass


def percentile(values, p):
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--nodes", type=int, default=5, help="spot nodes (and as many on-demand)")
    args = ap.parse_args()

    meta = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Metadata)
    threading.Thread(target=meta.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{meta.server_address[1]}/latest/meta-data/spot/instance-action"

    cluster = LocalCluster(args.binary, "agents: {defaultGrace: 2s}\nauth: {rootJobs: [root]}\n",
                           prefix="muster-reclaim-")
    try:
        spot = [f"s{i:02d}" for i in range(args.nodes)]
        for i, name in enumerate(spot):
            flags = ["--fake-gpus", "8xH100", "--cpus", "64", "--memory", "512Gi", "--spot"]
            if i == 0:  # the node whose agent watches the metadata endpoint
                flags += ["--reclaim-notice-url", url, "--reclaim-poll", "1s"]
            cluster.add_agent(name, flags)
        cluster.wait_nodes(len(spot))
        marks = f"{cluster.dir}/marks"
        os.makedirs(marks)
        command = ("[/bin/sh, -c, 'trap \"date +%s%N > " + marks +
                   "/$MUSTER_JOB_ID.$MUSTER_ATTEMPT; exit 0\" USR1; while :; do sleep 1; done']")
        ids = [cluster.submit("name: spot\nspot: true\nresources: {gpus: 1}\n"
                              "checkpoint: {dir: /tmp, gracePeriod: 30s}\ncommand: " + command + "\n")["id"]
               for _ in range(8 * len(spot))]
        node_of = {}
        deadline = time.time() + 120
        while len(node_of) < len(ids):
            if time.time() > deadline:
                raise SystemExit("the spot jobs did not all start")
            for j in cluster.get("/v1/jobs?state=RUNNING&limit=1000")["items"]:
                if j.get("allocations"):
                    node_of[j["id"]] = j["allocations"][0]["node"]
            time.sleep(0.2)
        time.sleep(2)  # every shell has set its trap
        for i in range(args.nodes):
            cluster.add_agent(f"d{i:02d}", ["--fake-gpus", "8xH100", "--cpus", "64", "--memory", "512Gi"])
        cluster.wait_nodes(2 * len(spot))

        def signals(nodes, since_ns):
            jobs = [j for j, n in node_of.items() if n in nodes]
            out, deadline = {}, time.time() + 60
            while len(out) < len(jobs) and time.time() < deadline:
                for j in jobs:
                    try:
                        with open(f"{marks}/{j}.1") as f:
                            out[j] = (int(f.read()) - since_ns) / 1e6
                    except (OSError, ValueError):
                        pass
                time.sleep(0.05)
            if len(out) < len(jobs):
                raise SystemExit(f"{len(jobs) - len(out)} jobs on {nodes} never got their signal")
            return list(out.values())

        def report(what, ms):
            print(f"{what}: {len(ms)} jobs, notice -> checkpoint signal min {min(ms):.1f} ms, "
                  f"p50 {percentile(ms, 50):.1f} ms, "
                  f"p90 {percentile(ms, 90):.1f} ms, max {max(ms):.1f} ms")

        t = time.time_ns()
        cluster.request("POST", f"/v1/nodes/{spot[1]}/reclaim", '{"deadlineSeconds": 120}')
        report("one node (operator)", signals({spot[1]}, t))

        burst = spot[2:2 + max(1, (2 * len(spot)) // 5)]
        t = time.time_ns()
        for name in burst:
            cluster.request("POST", f"/v1/nodes/{name}/reclaim", '{"deadlineSeconds": 120}')
        report(f"burst of {len(burst)} nodes, a fifth of {2 * len(spot)} (operator)", signals(set(burst), t))

        at = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(minutes=2)
        t = time.time_ns()
        Metadata.answer = '{"action": "terminate", "time": "' + at.strftime("%Y-%m-%dT%H:%M:%SZ") + '"}'
        report("one node (cloud metadata, polled every 1 s)", signals({spot[0]}, t))

        moved = cluster.get("/v1/jobs?state=RUNNING&limit=1000")["items"]
        on_demand = sum(1 for j in moved if j.get("allocations") and j["allocations"][0]["node"].startswith("d"))
        print(f"jobs running on on-demand nodes afterwards: {on_demand}")
    finally:
        cluster.close()
        meta.shutdown()


if __name__ == "__main__":
    main()
