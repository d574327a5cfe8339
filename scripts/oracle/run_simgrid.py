#!/usr/bin/python3
"""Finish times of a flow-set case computed by SimGrid 3.32 (the differential oracle).

Needs Debian's python3-simgrid, so run it with Debian's interpreter, /usr/bin/python3.

Usage:
    run_simgrid.py CASE.json [-o OUT.json] [--latency-mode sleep|native] [--cfg KEY:VALUE ...]
    run_simgrid.py --batch CASES_DIR OUT_DIR [-j N] [--latency-mode sleep|native] [--cfg ...]

Output: one JSON object {"flow_id": absolute_finish_time_s, ...} (on stdout, or in OUT.json;
in batch mode OUT_DIR/NAME.json for every CASES_DIR/NAME.json).

Latency modes (see scripts/oracle/README.md):
  sleep   every SimGrid link gets latency 0; a flow's actor sleeps until
          start + (sum of its route's link latencies), then sends. This is plain max-min
          sharing with a per-flow latency phase: the reference for `hetsim net --sharing plain`.
  native  the latencies are given to SimGrid, which then also weights each flow's share by
          1/(route latency) (CM02's RTT unfairness; weight 1 for a zero-latency route):
          the reference for `hetsim net --sharing simgrid`.

SimGrid is configured as a pure fluid model (FLUID_CONFIG below); --cfg adds or overrides
settings, e.g. --cfg network/TCP-gamma:4194304.

SimGrid allows one Engine per process, so --batch runs each case in its own child process,
N at a time. The Python binding may crash while tearing down: results are written and flushed
first and the process then leaves through os._exit.
"""

import argparse
import json
import os
import subprocess
import sys
import traceback
from concurrent.futures import ThreadPoolExecutor

LATENCY_MODES = ("sleep", "native")

FLUID_CONFIG = (
    "network/model:CM02",
    "network/crosstraffic:0",         # no 5% reverse-direction load
    "network/latency-factor:1",
    "network/bandwidth-factor:1",
    "network/weight-S:0",             # penalty = route latency only
    "network/TCP-gamma:0",            # no TCP window bound on the rate
    "network/optim:Full",             # Lazy mis-allocates when weighted flows start together
    "surf/precision:1e-13",           # do not merge events closer than 1e-9 s
)

SIDES = {"_UP": "UP", "_DOWN": "DOWN"}


class CaseError(Exception):
    """The case file is not a valid case."""


def physical_name(hop):
    """'x_UP' -> ('x', 'UP'); 'x' -> ('x', None)."""
    for suffix, side in SIDES.items():
        if hop.endswith(suffix):
            return hop[: -len(suffix)], side
    return hop, None


def route_table(case):
    return {(r["src"], r["dst"]): list(r["links"]) for r in case["routes"]}


def path_latency(case, hops):
    by_name = {link["name"]: link for link in case["links"]}
    total = 0.0
    for hop in hops:
        name, _side = physical_name(hop)
        total += float(by_name[name]["latency"])
    return total


def check_case(case):
    """Catch what would otherwise be an obscure SimGrid or KeyError failure."""
    links = {}
    for link in case["links"]:
        if link["sharing"] not in ("SHARED", "FATPIPE", "SPLITDUPLEX"):
            raise CaseError("link %s: unknown sharing %r" % (link["name"], link["sharing"]))
        links[link["name"]] = link["sharing"]
    hosts = set(case["hosts"])
    for route in case["routes"]:
        for end in (route["src"], route["dst"]):
            if end not in hosts:
                raise CaseError("route %s->%s: unknown host %s" % (route["src"], route["dst"], end))
        for hop in route["links"]:
            name, side = physical_name(hop)
            split = links.get(name) == "SPLITDUPLEX"
            if name not in links or split != (side is not None):
                raise CaseError("route %s->%s: unknown link %s" % (route["src"], route["dst"], hop))
    table = route_table(case)
    for flow in case["flows"]:
        if (flow["src"], flow["dst"]) not in table:
            raise CaseError("flow %s: no route %s->%s" % (flow["id"], flow["src"], flow["dst"]))


def simulate(case, latency_mode, extra_config=()):
    """Run one case in SimGrid; returns {flow_id: finish_time}. Once per process."""
    import simgrid as sg

    args = ["hetsim-oracle"]
    args += ["--cfg=" + item for item in FLUID_CONFIG + tuple(extra_config)]
    args.append("--log=root.thres:error")
    engine = sg.Engine(args)

    zone = sg.NetZone.create_full_zone("oracle")
    hosts = {name: zone.create_host(name, 1e9).seal() for name in case["hosts"]}

    use_latency = latency_mode == "native"
    hops = {}
    for spec in case["links"]:
        name = spec["name"]
        latency = float(spec["latency"]) if use_latency else 0.0
        if spec["sharing"] == "SPLITDUPLEX":
            pair = zone.create_split_duplex_link(name, float(spec["bandwidth"]))
            pair.set_latency(latency)
            pair.seal()
            hops[name + "_UP"] = sg.LinkInRoute(pair, sg.LinkInRoute.Direction.UP)
            hops[name + "_DOWN"] = sg.LinkInRoute(pair, sg.LinkInRoute.Direction.DOWN)
        else:
            link = zone.create_link(name, float(spec["bandwidth"]))
            policy = getattr(sg.Link.SharingPolicy, spec["sharing"])
            link.set_sharing_policy(policy, None)
            link.set_latency(latency)
            link.seal()
            hops[name] = sg.LinkInRoute(link, sg.LinkInRoute.Direction.NONE)

    for route in case["routes"]:
        zone.add_route(hosts[route["src"]].netpoint, hosts[route["dst"]].netpoint,
                       None, None, [hops[h] for h in route["links"]], False)
    zone.seal()

    table = route_table(case)
    finish = {}

    def sender(flow):
        src, dst = hosts[flow["src"]], hosts[flow["dst"]]
        size = int(flow["bytes"])
        begin = float(flow["start"])
        if not use_latency:
            begin += path_latency(case, table[flow["src"], flow["dst"]])

        def body():
            sg.this_actor.sleep_until(begin)
            sg.Comm.sendto(src, dst, size)
            finish[flow["id"]] = sg.Engine.clock

        return body

    for flow in case["flows"]:
        sg.Actor.create("flow-" + str(flow["id"]), hosts[flow["src"]], sender(flow))
    engine.run()

    missing = [f["id"] for f in case["flows"] if f["id"] not in finish]
    if missing:
        raise RuntimeError("SimGrid finished without completing flows %s" % missing)
    return {f["id"]: finish[f["id"]] for f in case["flows"]}


def write_atomically(path, text):
    tmp = path + ".part"
    with open(tmp, "w") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def run_one(args):
    try:
        with open(args.case) as fh:
            case = json.load(fh)
        check_case(case)
        text = json.dumps(simulate(case, args.latency_mode, args.cfg)) + "\n"
        if args.output:
            write_atomically(args.output, text)
        else:
            sys.stdout.write(text)
        status = 0
    except (OSError, ValueError, KeyError, TypeError, CaseError) as err:
        sys.stderr.write("run_simgrid: %s: %s: %s\n" % (args.case, type(err).__name__, err))
        status = 2
    except Exception:  # SimGrid failures: show everything
        traceback.print_exc()
        status = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


def run_batch(args):
    cases_dir, out_dir = args.batch
    names = sorted(n for n in os.listdir(cases_dir) if n.endswith(".json"))
    if not names:
        sys.stderr.write("run_simgrid: no *.json case in %s\n" % cases_dir)
        return 2
    os.makedirs(out_dir, exist_ok=True)

    def child(name):
        out = os.path.join(out_dir, name)
        if os.path.exists(out):
            os.remove(out)
        cmd = [sys.executable, os.path.abspath(__file__), os.path.join(cases_dir, name),
               "-o", out, "--latency-mode", args.latency_mode]
        for item in args.cfg:
            cmd += ["--cfg", item]
        try:
            proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True, timeout=args.timeout)
        except subprocess.TimeoutExpired:
            return name, "timed out after %ss" % args.timeout
        if proc.returncode != 0 or not os.path.exists(out):
            tail = "\n".join(proc.stderr.strip().splitlines()[-15:])
            return name, "exit status %d\n%s" % (proc.returncode, tail)
        return name, None

    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        failures = [(n, why) for n, why in pool.map(child, names) if why is not None]
    for name, why in failures:
        sys.stderr.write("run_simgrid: %s failed: %s\n" % (name, why))
    if failures:
        sys.stderr.write("run_simgrid: %d of %d cases failed\n" % (len(failures), len(names)))
        return 1
    return 0


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("case", nargs="?", help="case file (single-case mode)")
    parser.add_argument("-o", "--output", help="write the result here instead of stdout")
    parser.add_argument("--batch", nargs=2, metavar=("CASES_DIR", "OUT_DIR"),
                        help="run every CASES_DIR/*.json, results to OUT_DIR/*.json")
    parser.add_argument("-j", "--jobs", type=int, default=2, help="parallel cases in --batch")
    parser.add_argument("--latency-mode", choices=LATENCY_MODES, default="native")
    parser.add_argument("--cfg", action="append", default=[], metavar="KEY:VALUE",
                        help="extra SimGrid setting (repeatable)")
    parser.add_argument("--timeout", type=float, default=300.0,
                        help="seconds allowed per case in --batch")
    args = parser.parse_args()

    if args.batch:
        if args.case or args.output:
            parser.error("--batch takes no CASE and no -o")
        return run_batch(args)
    if not args.case:
        parser.error("give a CASE file or --batch CASES_DIR OUT_DIR")
    run_one(args)  # does not return


if __name__ == "__main__":
    sys.exit(main())
