#!/usr/bin/env python3
"""Writes a spot reclaim trace for `muster sim --reclaims`: lines time_s,node.

Single reclaims arrive at random (Poisson, --per-day on average) on a random
spot node; each burst takes --burst-fraction of the spot nodes within one
minute. Seeded, so the same arguments give the same trace.

  bench/reclaim_trace.py --spot-nodes 20 --prefix spot- --days 150 --per-day 2 \
      --burst 4320000 --burst-fraction 0.4 --seed 1 > reclaims.csv
"""
import argparse
import random
import sys


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--spot-nodes", type=int, required=True, help="spot nodes, named PREFIX0 .. PREFIXn-1")
    p.add_argument("--prefix", default="spot-")
    p.add_argument("--days", type=float, required=True, help="length of the trace")
    p.add_argument("--per-day", type=float, default=1.0, help="single reclaims per day on average")
    p.add_argument("--burst", type=int, action="append", default=[], help="time of a burst, in seconds (repeatable)")
    p.add_argument("--burst-fraction", type=float, default=0.2, help="fraction of the spot nodes a burst takes")
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    if a.spot_nodes <= 0 or a.days <= 0 or a.per_day < 0 or not 0 < a.burst_fraction <= 1:
        sys.exit("reclaim_trace.py: --spot-nodes and --days must be positive, --per-day >= 0, --burst-fraction in (0, 1]")
    rng = random.Random(a.seed)
    events = []
    t = 0.0
    while a.per_day > 0:
        t += rng.expovariate(a.per_day / 86400.0)
        if t >= a.days * 86400:
            break
        events.append((int(t), rng.randrange(a.spot_nodes)))
    for at in a.burst:
        for n in rng.sample(range(a.spot_nodes), round(a.burst_fraction * a.spot_nodes)):
            events.append((at + rng.randrange(60), n))
    print("time_s,node")
    for at, n in sorted(events):
        print(f"{at},{a.prefix}{n}")


if __name__ == "__main__":
    main()
