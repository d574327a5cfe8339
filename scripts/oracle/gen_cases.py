#!/usr/bin/env python3
"""Deterministic random flow-set cases for the SimGrid differential oracle.

A case is the input of `hetsim net` (format: scripts/oracle/README.md):

    {"hosts": [...], "links": [...], "routes": [...], "flows": [...]}

Usage:
    gen_cases.py --seed 17                    # print case 17 on stdout
    gen_cases.py --seeds 1..120 --out DIR     # write DIR/001.json ... DIR/120.json
    gen_cases.py --seeds 3,9,40..42 --out DIR # lists and ranges mix

Everything is drawn from one `random.Random(seed)`, so a seed gives the same case on every
machine and Python 3 version. Floats are written by the json module, i.e. with repr(): the
shortest text that reads back to the same double, so the case is exact for every reader.

What the cases exercise:
  * size tiers: 3-10 hosts, 3-14 links, 2-40 flows;
  * SHARED, FATPIPE and SPLITDUPLEX links (a split-duplex link `x` is used as `x_UP` or
    `x_DOWN`; the mirrored reverse route uses the other direction);
  * bandwidths log-uniform in [1e8, 5e10] B/s, with exact ties (1e9, 1e10, ...);
  * latencies uniform in [0, 1e-5] s, some exactly 0 (so some routes have zero latency,
    which is weight 1 in SimGrid's CM02) and some tied at 1e-6;
  * one route of 1-4 distinct links per ordered host pair, usually the mirror of the
    opposite direction, sometimes unrelated; some cases have a "backbone" link that many
    routes cross (heavy sharing);
  * bytes log-uniform integers in [1e3, 1e9]; a few "twin" flows (same pair, size, start);
  * starts uniform in [0, 0.05] s with exact ties at 0.0 and at one shared value.
"""

import argparse
import json
import math
import os
import sys

from random import Random

BW_LO, BW_HI = 1e8, 5e10
ROUND_BANDWIDTHS = (1e8, 1e9, 2.5e9, 1e10, 2.5e10)
LAT_HI = 1e-5
ROUND_LATENCY = 1e-6
BYTES_LO, BYTES_HI = 1e3, 1e9
START_HI = 0.05
MAX_ROUTE_LEN = 4

# (hosts, links, flows) ranges, inclusive
TIERS = {
    "tiny": ((3, 4), (3, 5), (2, 8)),
    "mid": ((4, 7), (5, 10), (8, 24)),
    "big": ((7, 10), (9, 14), (20, 40)),
}


def log_uniform(rng, lo, hi):
    return math.exp(rng.uniform(math.log(lo), math.log(hi)))


def draw_links(rng, count):
    p_fatpipe = rng.choice((0.0, 0.15, 0.35))
    p_split = rng.choice((0.0, 0.2, 0.4))
    links = []
    for idx in range(count):
        if rng.random() < 0.2:
            bandwidth = rng.choice(ROUND_BANDWIDTHS)
        else:
            bandwidth = log_uniform(rng, BW_LO, BW_HI)
        u = rng.random()
        if u < 0.15:
            latency = 0.0
        elif u < 0.25:
            latency = ROUND_LATENCY
        else:
            latency = rng.uniform(0.0, LAT_HI)
        u = rng.random()
        if u < p_fatpipe:
            sharing = "FATPIPE"
        elif u < p_fatpipe + p_split:
            sharing = "SPLITDUPLEX"
        else:
            sharing = "SHARED"
        links.append({"name": "l%d" % idx, "bandwidth": bandwidth,
                      "latency": latency, "sharing": sharing})
    return links


def hop(link, forward):
    """Name of `link` as it appears in a route (direction matters for split-duplex only)."""
    if link["sharing"] == "SPLITDUPLEX":
        return link["name"] + ("_UP" if forward else "_DOWN")
    return link["name"]


def mirror_hop(name):
    if name.endswith("_UP"):
        return name[:-3] + "_DOWN"
    if name.endswith("_DOWN"):
        return name[:-5] + "_UP"
    return name


def draw_path(rng, links, backbone):
    """A route: 1..4 distinct physical links, split-duplex ones in a random direction."""
    length = rng.randint(1, min(MAX_ROUTE_LEN, len(links)))
    chosen = rng.sample(range(len(links)), length)
    if backbone is not None and backbone not in chosen and rng.random() < 0.6:
        chosen[rng.randrange(length)] = backbone
    return [hop(links[i], rng.random() < 0.5) for i in chosen]


def draw_routes(rng, hosts, links):
    backbone = rng.randrange(len(links)) if rng.random() < 0.5 else None
    p_mirror = rng.choice((0.6, 0.8, 1.0))
    table = {}
    for a in range(len(hosts)):
        for b in range(a + 1, len(hosts)):
            there = draw_path(rng, links, backbone)
            table[a, b] = there
            if rng.random() < p_mirror:
                table[b, a] = [mirror_hop(n) for n in reversed(there)]
            else:
                table[b, a] = draw_path(rng, links, backbone)
    return [{"src": hosts[a], "dst": hosts[b], "links": table[a, b]}
            for a in range(len(hosts)) for b in range(len(hosts)) if a != b]


def draw_flows(rng, hosts, count):
    shared_start = round(rng.uniform(0.0, START_HI), 5)
    flows = []
    for idx in range(count):
        if flows and rng.random() < 0.07:
            twin = dict(flows[-1])
            twin["id"] = "f%d" % idx
            flows.append(twin)
            continue
        src, dst = rng.sample(hosts, 2)
        nbytes = int(round(log_uniform(rng, BYTES_LO, BYTES_HI)))
        u = rng.random()
        if u < 0.2:
            start = 0.0
        elif u < 0.32:
            start = shared_start
        else:
            start = rng.uniform(0.0, START_HI)
        flows.append({"id": "f%d" % idx, "src": src, "dst": dst,
                      "bytes": nbytes, "start": start})
    return flows


def make_case(seed):
    rng = Random(seed)
    tier = rng.choices(("tiny", "mid", "big"), weights=(3, 4, 3))[0]
    (h_lo, h_hi), (l_lo, l_hi), (f_lo, f_hi) = TIERS[tier]
    hosts = ["h%d" % i for i in range(rng.randint(h_lo, h_hi))]
    links = draw_links(rng, rng.randint(l_lo, l_hi))
    routes = draw_routes(rng, hosts, links)
    flows = draw_flows(rng, hosts, rng.randint(f_lo, f_hi))
    return {"hosts": hosts, "links": links, "routes": routes, "flows": flows}


def seed_list(text):
    """'1..120' or '3,9,40..42' -> list of ints (ranges inclusive)."""
    seeds = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        if ".." in item:
            lo, hi = (int(x) for x in item.split("..", 1))
            if hi < lo:
                raise argparse.ArgumentTypeError("empty range %r" % item)
            seeds.extend(range(lo, hi + 1))
        else:
            seeds.append(int(item))
    if not seeds:
        raise argparse.ArgumentTypeError("no seeds in %r" % text)
    return seeds


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--seed", type=int, help="print this one case on stdout")
    what.add_argument("--seeds", type=seed_list, help="seeds to write, e.g. 1..120 or 1,4,7..9")
    parser.add_argument("--out", help="directory for --seeds (created if missing)")
    args = parser.parse_args(argv)

    if args.seed is not None:
        if args.out:
            parser.error("--out goes with --seeds, not --seed")
        json.dump(make_case(args.seed), sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0

    if not args.out:
        parser.error("--seeds needs --out DIR")
    os.makedirs(args.out, exist_ok=True)
    for seed in args.seeds:
        path = os.path.join(args.out, "%03d.json" % seed)
        with open(path, "w") as fh:
            json.dump(make_case(seed), fh, separators=(",", ":"))
            fh.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
