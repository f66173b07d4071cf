#!/usr/bin/env python3
"""Start latency and short-job throughput of a real Muster cluster on this
machine: `muster server` plus N `muster agent` processes with fake GPUs, all
on loopback, running real processes (in cgroups when run as root).

  latency:    on an idle cluster, submit one job at a time (a GAP apart); each
              job runs `date +%s%N`. Latency = the time the job's process
              printed minus the time the client sent the submit.
  throughput: submit JOBS one-GPU jobs of `sleep 1` at once (as one array, or
              from 4 parallel submitters of single jobs) and time the makespan:
              from the first submit to the end of the last job (the server's
              record of the end). Ideal = ceil(JOBS / GPU slots) x 1 s.

  --image IMAGE: the latency probes alternate between a process and a
              container of IMAGE (cached on the node), each running
              python3 printing time.time_ns(), so both pay the same
              interpreter start; the GPUs are fake ones with device files
              (made here, as root) so containers get them. Podman settings
              for the agents go in BENCH_AGENT_FLAGS.

Usage: bench/start_bench.py BINARY [--agents 32] [--gpus 8xH100] [--latency-jobs 200]
       [--gap 0.1] [--jobs 1000] [--mode array|par4|both|none] [--image IMAGE]
Prints one summary line per measurement (the same lines docs/benchmarks.md quotes).

Environment: BENCH_CMD, a job command (YAML list) that prints its start and
end in ns (e.g. [/bin/sh, -c, 'date +%s%N; sleep 1; date +%s%N']): also
prints bind -> process start, process end -> recorded end, and a task's end
-> the next start on its node's GPUs. BENCH_VERBOSE: starts and ends per
half second. BENCH_KEEP: keep the cluster's directory (logs, agent state).
"""
import argparse
import concurrent.futures
import datetime
import json
import math
import os
import stat
import time

from local_cluster import LocalCluster


class Cluster(LocalCluster):
    def __init__(self, binary, agents, gpus, devices=False):
        super().__init__(binary, "agents: {defaultGrace: 2s}\nauth: {rootJobs: [root]}\n")
        if devices:
            gpus = self.device_gpus(gpus)
        for i in range(agents):
            self.add_agent(f"b{i:03d}", ["--fake-gpus", gpus, "--cpus", "64", "--memory", "512Gi"]
                           + os.environ.get("BENCH_AGENT_FLAGS", "").split())

    def device_gpus(self, gpus):
        """A fake GPU file for COUNTxTYPE whose GPUs have device files (major
        195, as /dev/nvidiaN), for container jobs."""
        count, kind = gpus.split("x")
        entries = []
        for i in range(int(count)):
            path = f"{self.dir}/nvidia{i}"
            os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(195, i))
            entries.append({"name": f"NVIDIA {kind}", "minor": i, "device": path})
        with open(f"{self.dir}/gpus.json", "w") as f:
            json.dump({"gpus": entries}, f)
        return f"{self.dir}/gpus.json"
        self.wait_nodes(agents)

    def jobs(self):
        items, cont = [], ""
        while True:
            page = self.get("/v1/jobs?limit=1000" + (f"&continue={cont}" if cont else ""))
            items += page["items"]
            cont = page.get("continue", "")
            if not cont:
                return items

    def cpu(self):
        """CPU seconds: (server, agents, the whole machine: shims, jobs and all)."""
        def times(pid):
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            tick = os.sysconf("SC_CLK_TCK")
            return (int(fields[11]) + int(fields[12])) / tick, (int(fields[13]) + int(fields[14])) / tick
        server = times(self.server.pid)[0]
        agents = [times(p.pid)[0] for p in self.agents.values()]
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
        busy = sum(fields) - fields[3] - fields[4]  # all but idle and iowait
        return server, sum(agents), busy / os.sysconf("SC_CLK_TCK")

def pct(values, p):
    s = sorted(values)
    return s[min(len(s) - 1, max(0, math.ceil(p / 100 * len(s)) - 1))]


def rfc3339_ms(text):
    fmt = "%Y-%m-%dT%H:%M:%S.%fZ" if "." in text else "%Y-%m-%dT%H:%M:%SZ"
    return datetime.datetime.strptime(text, fmt).replace(tzinfo=datetime.timezone.utc).timestamp()


def latency(cluster, n, gap, image=None):
    """Without `image`: every probe a process running date. With it: probes
    alternate process and container, both running python3."""
    lat, boxed = [], []
    for i in range(n):
        container = image is not None and i % 2 == 1
        if image is None:
            command = "[/bin/date, '+%s%N']"
        else:
            command = "[/usr/bin/python3, -c, 'import time; print(time.time_ns())']"
        t0 = time.time_ns()
        job = cluster.submit("name: probe\nresources: {gpus: 1}\ncommand: " + command + "\n" +
                             (f"image: {image}\n" if container else ""))
        jid = job["id"]
        log = None
        deadline = time.time() + 30
        while time.time() < deadline:
            for node in os.listdir(cluster.dir):
                path = f"{cluster.dir}/{node}/logs/j{jid}.a1.r0.log"
                if os.path.exists(path):
                    with open(path) as f:
                        text = f.read().strip()
                    if text:
                        log = text
            if log:
                break
            time.sleep(0.0005)
        if not log:
            raise SystemExit(f"job {jid} did not run")
        (boxed if container else lat).append((int(log.split()[-1]) - t0) / 1e6)
        time.sleep(gap)
    for name, values in (("process", lat), ("container", boxed)):
        if not values:
            continue
        label = "latency" if image is None else f"latency ({name}, python3)"
        print(f"{label}: n={len(values)} p50={pct(values, 50):.1f} ms p90={pct(values, 90):.1f} ms "
              f"p99={pct(values, 99):.1f} ms max={max(values):.1f} ms min={min(values):.1f} ms "
              f"(submit sent -> job process running, idle cluster)")
    if boxed:
        print(f"container / process at p50: {pct(boxed, 50) / pct(lat, 50):.2f}")


def throughput(cluster, jobs, mode, slots, per_node):
    spec = "name: short\nresources: {gpus: 1}\ncommand: " + os.environ.get("BENCH_CMD", "[/bin/sleep, '1']") + "\n"
    t0 = time.time()
    if mode == "array":
        first = cluster.submit(spec + f"array: {jobs}\n")["id"]
    else:
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            ids = list(pool.map(lambda _: cluster.submit(spec)["id"], range(jobs)))
        first = min(ids)
    submitted = time.time() - t0
    deadline = time.time() + 600
    while time.time() < deadline:
        # The queue counts are cheap to serve; the jobs are read once, at the end.
        queues = cluster.get("/v1/queues")["items"]
        if sum(q["pending"] + q["running"] for q in queues) == 0:
            break
        time.sleep(0.25)
    items = [j for j in cluster.jobs() if j["id"] >= first]
    done = [j for j in items if j["state"] not in ("PENDING", "RUNNING", "COMPLETING")]
    failed = [j for j in done if j["state"] != "COMPLETED"]
    ends = [rfc3339_ms(j["endTime"]) for j in done if j.get("endTime")]
    starts = [rfc3339_ms(j["startTime"]) for j in done if j.get("startTime")]
    makespan = max(ends) - t0
    if os.environ.get("BENCH_CMD"):
        # The command printed its own start and end (ns): where the time goes.
        delays, reports, gaps = [], [], []
        by_id = {j["id"]: j for j in done}
        for node in os.listdir(cluster.dir):
            logs = f"{cluster.dir}/{node}/logs"
            if not os.path.isdir(logs):
                continue
            node_starts, node_ends = [], []
            for name in os.listdir(logs):
                jid = int(name.split(".")[0][1:])
                if jid not in by_id:
                    continue
                with open(f"{logs}/{name}") as f:
                    stamps = [int(x) / 1e9 for x in f.read().split()]
                if len(stamps) == 2:
                    delays.append(stamps[0] - rfc3339_ms(by_id[jid]["startTime"]))
                    reports.append(rfc3339_ms(by_id[jid]["endTime"]) - stamps[1])
                    node_starts.append(stamps[0])
                    node_ends.append(stamps[1])
            # The k-th end on a node frees the GPU the (k + GPUs)-th start takes.
            node_starts.sort()
            node_ends.sort()
            gaps += [node_starts[k + per_node] - node_ends[k] for k in range(len(node_starts) - per_node)]
        print(f"bind -> process start: p50 {pct(delays, 50)*1000:.0f} ms p90 {pct(delays, 90)*1000:.0f} ms max {max(delays)*1000:.0f} ms; "
              f"process end -> recorded end: p50 {pct(reports, 50)*1000:.0f} ms p90 {pct(reports, 90)*1000:.0f} ms max {max(reports)*1000:.0f} ms")
        if gaps:
            print(f"task end -> next start on its node: p50 {pct(gaps, 50)*1000:.0f} ms p90 {pct(gaps, 90)*1000:.0f} ms "
                  f"max {max(gaps)*1000:.0f} ms")
    ideal = math.ceil(jobs / slots) * 1.0
    if os.environ.get("BENCH_VERBOSE"):
        for name, ts in (("starts", starts), ("ends", ends)):
            hist = {}
            for t in ts:
                hist[int((t - t0) * 2) / 2] = hist.get(int((t - t0) * 2) / 2, 0) + 1
            print(name, " ".join(f"{k:.1f}:{v}" for k, v in sorted(hist.items())))
    print(f"throughput ({mode}): {jobs} x 1-GPU 1 s jobs on {slots} GPUs: submit {submitted:.2f} s, "
          f"makespan {makespan:.2f} s (ideal {ideal:.1f} s, {100 * (makespan / ideal - 1):+.1f}%), "
          f"first start +{min(starts) - t0:.2f} s, completed {len(done) - len(failed)}, failed {len(failed)}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--agents", type=int, default=32)
    ap.add_argument("--gpus", default="8xH100")
    ap.add_argument("--latency-jobs", type=int, default=200)
    ap.add_argument("--gap", type=float, default=0.1)
    ap.add_argument("--jobs", type=int, default=1000)
    ap.add_argument("--mode", default="both", choices=["array", "par4", "both", "none"])
    ap.add_argument("--image")
    a = ap.parse_args()
    cluster = Cluster(a.binary, a.agents, a.gpus, devices=a.image is not None)
    try:
        slots = a.agents * int(a.gpus.split("x")[0])
        if a.latency_jobs:
            latency(cluster, a.latency_jobs, a.gap, a.image)
        for mode in (["array", "par4"] if a.mode == "both" else [] if a.mode == "none" else [a.mode]):
            before = cluster.cpu()
            throughput(cluster, a.jobs, mode, slots, int(a.gpus.split("x")[0]))
            after = cluster.cpu()
            print("  CPU: server {:.1f} s, agents {:.1f} s, the whole machine {:.1f} s".format(
                *[y - x for x, y in zip(before, after)]))
    finally:
        cluster.close()


if __name__ == "__main__":
    main()
