#!/usr/bin/env python3
"""Markdown tables from a `hetsim sweep` CSV, as docs/schedulers.md shows them.

Usage:  scripts/sweep-tables.py SWEEP.csv [--at N] [--key workload.n]

Prints, per scheduler (rows, in the CSV's order) and value of the varied key (columns):
GFlop/s counted as StarPU's example counts them (`gflops_starpu`, mean over seeds), the bytes
moved (fetch + prefetch + write-back, GB, mean over seeds), and, at `--at N` (default: the
largest value), the traffic by kind with evictions and write-backs.
"""

import argparse
import csv
from collections import OrderedDict


def mean(xs):
    return sum(xs) / len(xs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv")
    ap.add_argument("--key", default="workload.n", help="the varied column (default workload.n)")
    ap.add_argument("--at", type=float, help="value of KEY for the traffic table (default: largest)")
    args = ap.parse_args()

    rows = list(csv.DictReader(open(args.csv, newline="")))
    if not rows:
        raise SystemExit(f"{args.csv}: no runs")
    scheds = list(OrderedDict.fromkeys(r["sched"] for r in rows))
    values = sorted({float(r[args.key]) for r in rows})
    cell = {}
    for r in rows:
        cell.setdefault((r["sched"], float(r[args.key])), []).append(r)

    def fmt_key(v):
        return str(int(v)) if v == int(v) else str(v)

    def table(title, f, digits):
        print(title)
        print()
        print("| scheduler | " + " | ".join(fmt_key(v) for v in values) + " |")
        print("|---|" + "---:|" * len(values))
        for s in scheds:
            cells = []
            for v in values:
                runs = cell.get((s, v))
                cells.append(f"{mean([f(r) for r in runs]):.{digits}f}" if runs else "-")
            print(f"| {s} | " + " | ".join(cells) + " |")
        print()

    table("GFlop/s (n³/3 / makespan, mean over seeds):", lambda r: float(r["gflops_starpu"]), 0)
    table("Bytes moved, GB (fetch + prefetch + write-back):",
          lambda r: float(r["bytes_transferred"]) / 1e9, 1)

    at = args.at if args.at is not None else values[-1]
    print(f"At {args.key} = {fmt_key(at)}, the traffic by kind (mean over seeds):")
    print()
    print("| scheduler | GFlop/s | fetch GB | prefetch GB | write-back GB | evictions | write-backs |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for s in scheds:
        runs = cell.get((s, at))
        if not runs:
            continue
        m = lambda k: mean([float(r[k]) for r in runs])
        print(f"| {s} | {m('gflops_starpu'):.0f} | {m('fetch_bytes') / 1e9:.1f} | "
              f"{m('prefetch_bytes') / 1e9:.1f} | {m('writeback_bytes') / 1e9:.1f} | "
              f"{m('evictions'):.0f} | {m('writebacks'):.0f} |")


if __name__ == "__main__":
    main()
