#!/usr/bin/env python3
"""Draws the benchmark chart from larder-bench's results JSON.

usage: bench_chart.py results.json out.png

Three panels: throughput (requests/s, keys/s for multi-get) and p99 latency of the timed
scenarios, memcached next to larder; then memory utilization and trace hit ratios.
Medians over the rounds, as in BENCHMARKS.md. Needs matplotlib (pip install matplotlib).
"""
import json
import math
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLORS = {"memcached": "#4c72b0", "larder": "#dd8452"}


def val(x):
    return x if isinstance(x, (int, float)) and not (isinstance(x, float) and math.isnan(x)) else 0.0


def grouped(ax, names, servers, series, title, ylabel, log=False):
    width = 0.8 / max(1, len(servers))
    for i, srv in enumerate(servers):
        xs = [j + (i - (len(servers) - 1) / 2) * width for j in range(len(names))]
        ys = [val(series[srv][j]) for j in range(len(names))]
        ax.bar(xs, ys, width, label=srv, color=COLORS.get(srv))
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names, rotation=30, ha="right", fontsize=8)
    ax.set_title(title, fontsize=10)
    ax.set_ylabel(ylabel)
    if log:
        ax.set_yscale("log")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8)


def main():
    data = json.load(open(sys.argv[1]))
    scen = data["scenarios"]
    servers = [s for s in ("memcached", "larder") if any(s in sc["medians"] for sc in scen)]
    timed = [sc for sc in scen if sc["kind"] in ("closed-loop", "open-loop")]
    ratios = [sc for sc in scen if sc["kind"] in ("memory", "trace")]
    fig, axes = plt.subplots(1, 3, figsize=(17, 5.2))

    def med(sc, srv, metric):
        return sc["medians"].get(srv, {}).get(metric)

    names = [sc["name"] + (" (keys/s)" if "mget" in sc["name"] else "") for sc in timed]
    tput = {srv: [med(sc, srv, "keys_per_sec" if "mget" in sc["name"] else "ops_per_sec") for sc in timed] for srv in servers}
    grouped(axes[0], names, servers, tput, "throughput (median)", "per second", log=True)
    p99 = {srv: [med(sc, srv, "p99_us") for sc in timed] for srv in servers}
    grouped(axes[1], [sc["name"] for sc in timed], servers, p99, "p99 latency per request (median)", "microseconds", log=True)
    rnames = [sc["name"] for sc in ratios]
    rvals = {srv: [med(sc, srv, "utilization" if sc["kind"] == "memory" else "hit_ratio") for sc in ratios] for srv in servers}
    grouped(axes[2], rnames, servers, rvals, "memory utilization / trace hit ratio (higher is better)", "ratio")
    m = data.get("machine", {})
    fig.suptitle(f"larder-bench: {m.get('nproc')} x {m.get('cpu')}, kernel {m.get('kernel')}, {data.get('rounds')} round(s)", fontsize=10)
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=90)


if __name__ == "__main__":
    main()
