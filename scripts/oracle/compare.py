#!/usr/bin/env python3
"""Compare two directories of flow finish times, flow by flow.

Usage:
    compare.py EXPECTED_DIR GOT_DIR [--rtol 1e-9] [--label NAME]

Both directories hold NAME.json files of the form {"flow_id": finish_time_s, ...}
(run_simgrid.py output, or `hetsim net` output). Every file of EXPECTED_DIR must have a
counterpart in GOT_DIR with exactly the same flow ids, and each finish time must satisfy

    |got - expected| <= rtol * |expected|

Prints the number of cases and flows compared, the worst relative error (and where), and
every mismatch as case / flow / expected / got / relative error. Exit status: 0 when all
agree, 1 on any mismatch or missing/extra/unreadable result, 2 on bad usage.
"""

import argparse
import json
import math
import os
import sys


def relative_error(expected, got):
    if not (math.isfinite(expected) and math.isfinite(got)):
        return 0.0 if expected == got else math.inf
    if expected == got:
        return 0.0
    return abs(got - expected) / max(abs(expected), sys.float_info.min)


def load(path):
    with open(path) as fh:
        data = json.load(fh)
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    out = {}
    for key, value in data.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError("flow %s: %r is not a number" % (key, value))
        out[key] = float(value)
    return out


def compare_dirs(expected_dir, got_dir, rtol):
    """Returns (report lines, number of problems, cases, flows, worst error, where)."""
    problems = []
    cases = flows = 0
    worst, worst_at = 0.0, None
    names = sorted(n for n in os.listdir(expected_dir) if n.endswith(".json"))
    if not names:
        problems.append("no *.json result in %s" % expected_dir)
    for name in names:
        try:
            expected = load(os.path.join(expected_dir, name))
        except (OSError, ValueError) as err:
            problems.append("%s: unreadable expected result: %s" % (name, err))
            continue
        try:
            got = load(os.path.join(got_dir, name))
        except (OSError, ValueError) as err:
            problems.append("%s: unreadable result: %s" % (name, err))
            continue
        cases += 1
        for fid in sorted(set(got) - set(expected)):
            problems.append("%s: flow %s: unexpected (got %r)" % (name, fid, got[fid]))
        for fid, want in expected.items():
            if fid not in got:
                problems.append("%s: flow %s: missing (expected %r)" % (name, fid, want))
                continue
            flows += 1
            err = relative_error(want, got[fid])
            if err > worst or worst_at is None:
                worst, worst_at = max(err, worst), (name, fid)
            if not err <= rtol:
                problems.append("%s: flow %s: expected %r got %r (rel err %.3e)"
                                % (name, fid, want, got[fid], err))
    extra = sorted(n for n in os.listdir(got_dir)
                   if n.endswith(".json") and n not in names) if os.path.isdir(got_dir) else []
    for name in extra:
        problems.append("%s: result without an expected counterpart" % name)
    return problems, cases, flows, worst, worst_at


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("expected_dir")
    parser.add_argument("got_dir")
    parser.add_argument("--rtol", type=float, default=1e-9)
    parser.add_argument("--label", default="", help="prefix for the summary line")
    args = parser.parse_args()
    for d in (args.expected_dir, args.got_dir):
        if not os.path.isdir(d):
            parser.error("%s is not a directory" % d)

    problems, cases, flows, worst, where = compare_dirs(args.expected_dir, args.got_dir, args.rtol)
    for line in problems:
        print("MISMATCH " + line)
    label = (args.label + ": ") if args.label else ""
    at = " (%s flow %s)" % where if where and worst > 0 else ""
    print("%s%d cases, %d flows compared, worst relative error %.3e%s, %d problem(s), rtol %g"
          % (label, cases, flows, worst, at, len(problems), args.rtol))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
