"""A timeline figure of a simulation: Gantt chart, SRAM occupancy, bandwidth.

Top: the preload and execute tracks (warm-up lighter than local execution, stalls visible as
gaps). Middle: per-core SRAM occupancy against capacity. Bottom: HBM and NoC bandwidth in use as
a share of their capacities (without full contention a plan may ask for more than 100%). Written
atomically as PNG.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from elk_opt.io import write_atomic  # noqa: E402
from elk_opt.problem import Chip  # noqa: E402
from elk_opt.simulator.metrics import SimResult  # noqa: E402

LABELLED_OPS = 24  # name the bars when there are at most this many ops


def plot_timeline(result: SimResult, chip: Chip, path: str | Path) -> None:
    fig, (gantt, sram, bw) = plt.subplots(
        3, 1, figsize=(13, 7.5), sharex=True, gridspec_kw={"height_ratios": [2, 1.2, 1.4]})
    us = 1e-3
    loads = [(o.load_start_ns * us, (o.load_end_ns - o.load_start_ns) * us)
             for o in result.ops if o.load_end_ns > o.load_start_ns]
    warm = [(o.exec_start_ns * us, (o.distribute_end_ns - o.exec_start_ns) * us)
            for o in result.ops if o.distribute_end_ns > o.exec_start_ns]
    local = [(o.distribute_end_ns * us, (o.exec_end_ns - o.distribute_end_ns) * us)
             for o in result.ops if o.exec_end_ns > o.distribute_end_ns]
    gantt.broken_barh(loads, (1.1, 0.8), facecolors="tab:orange", edgecolors="black",
                      linewidth=0.3, label="preload")
    gantt.broken_barh(local, (0.1, 0.8), facecolors="tab:blue", edgecolors="black",
                      linewidth=0.3, label="local_execute")
    gantt.broken_barh(warm, (0.1, 0.8), facecolors="lightskyblue", edgecolors="black",
                      linewidth=0.3, label="distribute_data (warm-up)")
    if len(result.ops) <= LABELLED_OPS:
        for i, o in enumerate(result.ops):
            gantt.text((o.exec_start_ns + o.exec_end_ns) / 2 * us, 0.5, f"E{i}",
                       ha="center", va="center", fontsize=7, color="white")
            if o.load_end_ns > o.load_start_ns:
                gantt.text((o.load_start_ns + o.load_end_ns) / 2 * us, 1.5, f"P{i}",
                           ha="center", va="center", fontsize=7)
    gantt.set_yticks([0.5, 1.5], ["execute", "preload"])
    gantt.set_ylim(0, 2.5)  # room for the legend
    b = result.breakdown
    gantt.set_title(
        f"{result.chip} ({result.topology}, {result.label}): makespan "
        f"{result.makespan_ns / 1e3:,.1f} us (analytic {result.timing} "
        f"{result.analytic_makespan_ns / 1e3:,.1f} us, shared-noc "
        f"{result.shared_noc_makespan_ns / 1e3:,.1f} us)\noverlapped "
        f"{b.overlapped_ns / 1e3:,.0f} us, exec only {b.exec_only_ns / 1e3:,.0f} us, "
        f"preload only {b.preload_only_ns / 1e3:,.0f} us, stall {b.stall_ns / 1e3:,.0f} us",
        fontsize=9)
    gantt.legend(loc="upper right", fontsize=7, ncols=3, frameon=False)

    times = [t * us for t, _ in result.sram_timeline] + [result.makespan_ns * us]
    levels = [v / 1024 for _, v in result.sram_timeline]
    sram.stairs(levels, times, fill=True, color="tab:green", alpha=0.6, label="in use")
    sram.axhline(chip.sram_bytes / 1024, color="black", linestyle="--", linewidth=0.8,
                 label=f"capacity {chip.sram_bytes / 1024:,.0f} KiB")
    sram.set_ylabel("SRAM per core\n(KiB)")
    sram.set_ylim(0, chip.sram_bytes / 1024 * 1.1)
    sram.legend(loc="upper right", fontsize=7)

    peaks: list[float] = []
    for column, name, color, capacity in (
            (2, "HBM", "tab:red", chip.hbm_bytes_per_s),
            (3, "NoC into cores", "tab:purple", chip.cores * chip.noc.link_bytes_per_s)):
        edges, values = [], []
        last = 0.0
        for seg in result.bandwidth:
            if seg[0] > last:
                edges.append(last)
                values.append(0.0)
            edges.append(seg[0])
            values.append(100 * seg[column] / capacity)
            last = seg[1]
        peaks += values
        if edges:
            bw.stairs(values, [e * us for e in edges] + [last * us], color=color,
                      label=f"{name} (of {capacity / 1e9:,.0f} GB/s)")
    bw.axhline(100, color="black", linestyle="--", linewidth=0.8)
    bw.set_ylim(0, max([110.0, *peaks]) * 1.3)  # room for the legend
    bw.set_ylabel("bandwidth in use\n(% of capacity)")
    bw.set_xlabel("time (us)")
    bw.legend(loc="upper right", fontsize=7)
    bw.set_xlim(0, result.makespan_ns * us)
    fig.tight_layout()
    write_atomic(path, lambda f: fig.savefig(f, format="png", dpi=110), mode="wb")
    plt.close(fig)
