#!/usr/bin/env python3
"""Prints one Markdown table row from `muster sim -o json` on stdin.

Usage: muster sim ... -o json | bench/sim_row.py POLICY SECONDS
"""
import json
import sys

d = json.load(sys.stdin)
policy, secs = sys.argv[1], float(sys.argv[2])


def h(key):
    return f"{d[key] / 3600:.2f}"


cells = [policy] + [h(k) for k in ("mean_jct_s", "p50_jct_s", "p99_jct_s", "mean_wait_s",
                                   "p50_wait_s", "p99_wait_s", "max_wait_s", "mean_queued_s",
                                   "max_queued_s")]
cells += [f"{d.get('preemptions', 0):,}", f"{d.get('lost_gpu_hours', 0):,.0f}", h("makespan_s")]
cells += [f"{100 * d['utilization']:.1f}%", str(d["unschedulable"]), f"{secs:.1f}"]
print("| " + " | ".join(cells) + " |")
