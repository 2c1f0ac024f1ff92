#!/usr/bin/python3
"""Draws the benchmarks' charts for docs/performance.md from the CSV their --csv flag writes.

    docs/perf/plot.py docs/perf/reservation.csv docs/perf/occupancy.csv --out docs/img

(Debian's /usr/bin/python3, whose python3-matplotlib deploy/install-deps installs.)

Per benchmark, two charts against the number of clients: p50 and p99 latency, and calls/s as a
share of the one-row INSERT ceiling measured beside it in the same run. Where a file holds several
measurements of one run (benchmark, scenario, run, clients), the newest is drawn. A file that lacks
the columns bench_csv.h writes is refused (exit 2), naming it: a chart from the wrong data is worse
than none.
"""
import argparse
import csv
import os
import sys

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402

COLUMNS = ["measured_at", "benchmark", "scenario", "run", "clients", "calls_per_second", "p50_ms",
           "p95_ms", "p99_ms", "ceiling_tx_per_second", "cpu_client_ms", "cpu_postgres_ms"]

# What each benchmark's charts show: the runs drawn as lines, keyed by (scenario part, run).
CHARTS = {
    "reservation": {
        "title": "Reserve",
        "lines": lambda r: r["run"] in ("service", "echo-insert floor", "database alone",
                                        "gRPC only")
        and "throughput" in r["scenario"],
        "label": lambda r: {"service": "Reserve through gRPC",
                            "echo-insert floor": "echo-insert floor (one INSERT through gRPC)",
                            "database alone": "dcl_reserve alone",
                            "gRPC only": "gRPC only (refused at the gate)"}[r["run"]],
    },
    "occupancy": {
        "title": "PlaceDevice",
        "lines": lambda r: r["run"] in ("PlaceDevice", "echo-insert floor"),
        "label": lambda r: ("PlaceDevice, " if r["run"] == "PlaceDevice"
                            else "echo-insert floor beside ") + r["scenario"],
    },
}


def read_rows(paths):
    newest = {}
    for path in paths:
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            if reader.fieldnames != COLUMNS:
                sys.exit(f"plot.py: {path}: not a benchmark CSV (columns {reader.fieldnames})")
            for row in reader:
                key = (row["benchmark"], row["scenario"], row["run"], int(row["clients"]))
                if key not in newest or row["measured_at"] > newest[key]["measured_at"]:
                    newest[key] = row
    return list(newest.values())


def number(row, column):
    return float(row[column]) if row[column] != "" else None


def draw(benchmark, rows, out_dir):
    spec = CHARTS[benchmark]
    lines = {}
    for row in rows:
        if row["benchmark"] == benchmark and spec["lines"](row):
            lines.setdefault(spec["label"](row), []).append(row)
    if not lines:
        return []
    written = []
    for kind in ("latency", "ratio"):
        fig, ax = plt.subplots(figsize=(7.5, 4.2), dpi=100)
        for label, points in sorted(lines.items()):
            points.sort(key=lambda r: int(r["clients"]))
            clients = [int(r["clients"]) for r in points]
            if kind == "latency":
                line, = ax.plot(clients, [number(r, "p50_ms") for r in points], marker="o",
                                label=label + " p50")
                ax.plot(clients, [number(r, "p99_ms") for r in points], marker="^", linestyle="--",
                        color=line.get_color(), label=label + " p99")
            else:
                ratios = [number(r, "calls_per_second") / number(r, "ceiling_tx_per_second")
                          if number(r, "ceiling_tx_per_second") else None for r in points]
                ax.plot(clients, ratios, marker="o", label=label)
        ax.set_xscale("log", base=2)
        xs = sorted({int(r["clients"]) for pts in lines.values() for r in pts})
        ax.set_xticks(xs)
        ax.set_xticklabels([str(x) for x in xs])
        ax.set_xlabel("clients")
        if kind == "latency":
            ax.set_yscale("log")
            ax.set_ylabel("latency, ms (log scale)")
            ax.set_title(f"{spec['title']}: latency against clients")
        else:
            ax.set_ylabel("calls/s ÷ one-row INSERT ceiling")
            ax.set_ylim(bottom=0)
            ax.set_title(f"{spec['title']}: share of the commit ceiling, same run")
        when = max(r["measured_at"] for pts in lines.values() for r in pts)
        fig.text(0.99, 0.01, f"measured {when}", ha="right", va="bottom", fontsize=7,
                 color="#666666")
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        path = os.path.join(out_dir, f"perf-{benchmark}-{kind}.png")
        fig.savefig(path, metadata={"Software": None})
        plt.close(fig)
        written.append(path)
    return written


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv", nargs="+", help="CSV files written by the benchmarks' --csv")
    parser.add_argument("--out", default="docs/img", help="folder for the PNG charts")
    args = parser.parse_args()
    rows = read_rows(args.csv)
    written = []
    for benchmark in CHARTS:
        written += draw(benchmark, rows, args.out)
    if not written:
        sys.exit("plot.py: no rows to draw in " + ", ".join(args.csv))
    for path in written:
        print(path)


if __name__ == "__main__":
    main()
