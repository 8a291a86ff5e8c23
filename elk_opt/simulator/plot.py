"""A timeline figure of a simulation: Gantt chart, SRAM occupancy, bandwidth.

The title names the plan's method, the timing it was planned under and the replay's sharing,
each number once. Gantt: the preload and execute tracks (warm-up lighter than local execution,
stalls visible as gaps). Then per-core SRAM occupancy against capacity, and HBM and NoC
bandwidth in use as a share of their capacities (without full contention a plan may ask for
more than 100%).

Past AGGREGATE_OPS ops one bar per op is thinner than a pixel (a barcode): the figure then
opens with an overview strip of the whole run, one bar per layer, and the panels below zoom on
one layer in the middle of the model (marked on the strip), where each op is a readable bar.
Written atomically as PNG.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402

from elk_opt.files import write_atomic  # noqa: E402
from elk_opt.problem import Chip  # noqa: E402
from elk_opt.simulator.metrics import OpTimes, SimResult  # noqa: E402

AGGREGATE_OPS = 300  # more ops than this: overview by layer, detail on one layer
WINDOW_OPS = 24  # ops in the detail window when the ops carry no layer
AXIS_PX = 1250  # the Gantt's width in pixels (13 in at 110 dpi, less the margins)
CHAR_PX = 5.5  # one character of a 7-point label, in pixels (DejaVu Sans averages 5)
US = 1e-3
SECTION = {"shared-noc": "spec 5b", "separate-noc": "spec 5"}
LOAD, RUN, WARM = "tab:orange", "tab:blue", "lightskyblue"


def plot_timeline(result: SimResult, chip: Chip, path: str | Path, *, method: str | None = None,
                  name: str | None = None,
                  layers: Sequence[int | None] | None = None) -> None:
    """Write the figure. `method`, `name`: the plan's method and instance, for the title;
    `layers`: each op's layer (the instance's), to aggregate a large plan by layer."""
    zoom = len(result.ops) > AGGREGATE_OPS
    if layers is not None and all(x is None for x in layers):
        layers = None  # no layer known (an ONNX graph without layer names): windows of ops
    rows = [0.55, 2, 1.1, 1.3] if zoom else [2, 1.2, 1.4]
    fig, axes = plt.subplots(len(rows), 1, figsize=(13, 8.6 if zoom else 7.5),
                             gridspec_kw={"height_ratios": rows})
    start, end = 0.0, float(result.makespan_ns)
    if zoom:
        first, last = _window(result.ops, layers)
        start = min(o.exec_start_ns for o in result.ops[first:last])
        end = max(o.exec_end_ns for o in result.ops[first:last])
        _overview(axes[0], result, layers, (start, end), what=_what(layers, first, last))
    gantt, sram, bw = axes[-3:]
    _gantt(gantt, result, (start, end))
    _sram(sram, result, chip)
    _bandwidth(bw, result, chip)
    for ax in (gantt, sram, bw):
        ax.set_xlim(start * US, end * US)
    for ax in (gantt, sram):
        ax.tick_params(labelbottom=False)
    bw.set_xlabel("time (us)")
    fig.suptitle(_title(result, method, name), fontsize=10, x=0.01, ha="left")
    fig.tight_layout()
    write_atomic(path, lambda f: fig.savefig(f, format="png", dpi=110), mode="wb")
    plt.close(fig)


def _title(r: SimResult, method: str | None, name: str | None) -> str:
    who = f"the {method} plan" if method else "a plan"
    head = f"{name + ': ' if name else ''}{who}, planned under {r.timing} ({SECTION[r.timing]})"
    ms = r.makespan_ns / 1e3
    if r.makespan_ns == r.analytic_makespan_ns:
        replay = f"{ms:,.1f} us, as its analytic makespan"
    else:
        replay = (f"{ms:,.1f} us, {r.slowdown:.3f}x its analytic "
                  f"{r.analytic_makespan_ns / 1e3:,.1f} us")
    if r.timing != "shared-noc" and r.shared_noc_makespan_ns not in (r.makespan_ns,
                                                                    r.analytic_makespan_ns):
        replay += f" (spec 5b: {r.shared_noc_makespan_ns / 1e3:,.1f} us)"
    b = r.breakdown
    return (f"{head}\nsimulated on {r.chip} ({r.topology}) with {r.label}: {replay}\n"
            f"overlapped {b.overlapped_ns / 1e3:,.0f} us, execute only "
            f"{b.exec_only_ns / 1e3:,.0f} us, preload only {b.preload_only_ns / 1e3:,.0f} us, "
            f"stall {b.stall_ns / 1e3:,.0f} us")


def _window(ops: Sequence[OpTimes], layers: Sequence[int | None] | None) -> tuple[int, int]:
    """The ops [first, last) of the detail: the middle layer, else WINDOW_OPS in the middle."""
    if layers:
        named = sorted({x for x in layers if x is not None})
        middle = named[len(named) // 2]
        members = [i for i, x in enumerate(layers) if x == middle]
        return members[0], members[-1] + 1
    mid = len(ops) // 2
    return max(0, mid - WINDOW_OPS // 2), min(len(ops), mid + WINDOW_OPS // 2)


def _what(layers: Sequence[int | None] | None, first: int, last: int) -> str:
    return f"layer {layers[first]}" if layers else f"ops {first}-{last - 1}"


def _overview(ax: Axes, r: SimResult, layers: Sequence[int | None] | None,
              window: tuple[float, float], what: str) -> None:
    """The whole run: executes one bar per layer (shades alternate, ops without a layer in
    grey), preloads as the time the HBM is busy (gaps are idle HBM)."""
    groups: dict[int | None, list[OpTimes]] = {}
    for i, o in enumerate(r.ops):
        groups.setdefault(layers[i] if layers else i // WINDOW_OPS, []).append(o)
    step = max(1, len(groups) // 10)
    for k, (layer, ops) in enumerate(groups.items()):
        lo = min(o.exec_start_ns for o in ops)
        hi = max(o.exec_end_ns for o in ops)
        ax.broken_barh([(lo * US, (hi - lo) * US)], (0.1, 0.8), edgecolors="none",
                       facecolors="lightgrey" if layer is None else RUN,
                       alpha=0.55 if k % 2 else 1.0)
        if layer is not None and layers and layer % step == 0:
            ax.text((lo + hi) / 2 * US, 0.5, str(layer), ha="center", va="center", fontsize=6,
                    color="white")
    ax.broken_barh(_busy([(o.load_start_ns, o.load_end_ns) for o in r.ops],
                         r.makespan_ns / 2000), (1.1, 0.8), facecolors=LOAD, edgecolors="none")
    ax.axvspan(window[0] * US, window[1] * US, color="black", alpha=0.3, linewidth=0)
    ax.set_xlim(0, r.makespan_ns * US)
    ax.set_ylim(0, 2.0)
    ax.set_yticks([0.5, 1.5], ["execute", "preload"])
    unit = "layer, numbered" if layers else f"{WINDOW_OPS} ops"
    ax.set_title(f"the whole run, {len(r.ops)} ops (time in us): executes one bar per {unit}, "
                 f"preloads where the HBM is busy; dark band: {what}, shown below", fontsize=8,
                 loc="left")
    ax.tick_params(labelsize=8)


def _busy(spans: list[tuple[float, float]], merge_ns: float) -> list[tuple[float, float]]:
    """The union of `spans` as (start, width) in us, gaps shorter than `merge_ns` closed
    (they would be under a pixel)."""
    merged: list[list[float]] = []
    for lo, hi in sorted(s for s in spans if s[1] > s[0]):
        if merged and lo - merged[-1][1] <= merge_ns:
            merged[-1][1] = max(merged[-1][1], hi)
        else:
            merged.append([lo, hi])
    return [(lo * US, (hi - lo) * US) for lo, hi in merged]


def _gantt(ax: Axes, r: SimResult, window: tuple[float, float]) -> None:
    loads = [(o.load_start_ns * US, (o.load_end_ns - o.load_start_ns) * US)
             for o in r.ops if o.load_end_ns > o.load_start_ns]
    warm = [(o.exec_start_ns * US, (o.distribute_end_ns - o.exec_start_ns) * US)
            for o in r.ops if o.distribute_end_ns > o.exec_start_ns]
    local = [(o.distribute_end_ns * US, (o.exec_end_ns - o.distribute_end_ns) * US)
             for o in r.ops if o.exec_end_ns > o.distribute_end_ns]
    style = {"edgecolors": "black", "linewidth": 0.3}
    ax.broken_barh(loads, (1.1, 0.8), facecolors=LOAD, label="preload", **style)
    ax.broken_barh(local, (0.1, 0.8), facecolors=RUN, label="execute", **style)
    ax.broken_barh(warm, (0.1, 0.8), facecolors=WARM, label="warm-up (redistribution)",
                   **style)
    px_per_ns = AXIS_PX / max(1.0, window[1] - window[0])
    for i, o in enumerate(r.ops):
        label = _short(o.name, i)
        for lo, hi, y, color in ((o.exec_start_ns, o.exec_end_ns, 0.5, "white"),
                                 (o.load_start_ns, o.load_end_ns, 1.5, "black")):
            fits = (hi - lo) * px_per_ns >= (len(label) + 0.5) * CHAR_PX
            if fits and lo >= window[0] and hi <= window[1]:
                ax.text((lo + hi) / 2 * US, y, label, ha="center", va="center", fontsize=7,
                        color=color, clip_on=True)
    ax.set_yticks([0.5, 1.5], ["execute", "preload"])
    ax.set_ylim(0, 2.6)  # room for the legend
    ax.legend(loc="upper right", fontsize=8, ncols=3, frameon=False)


def _short(name: str, index: int) -> str:
    """`layers.20.self_attn.q_proj/MatMul` -> `q_proj`; `op12` style names stay whole."""
    return name.split("/")[0].split(".")[-1] or str(index)


def _sram(ax: Axes, r: SimResult, chip: Chip) -> None:
    times = [t * US for t, _ in r.sram_timeline] + [r.makespan_ns * US]
    levels = [v / 1024 for _, v in r.sram_timeline]
    ax.stairs(levels, times, fill=True, color="tab:green", alpha=0.6, label="in use")
    ax.axhline(chip.sram_bytes / 1024, color="black", linestyle="--", linewidth=0.8,
               label=f"capacity {chip.sram_bytes / 1024:,.0f} KiB")
    ax.set_ylabel("SRAM per core\n(KiB)")
    ax.set_ylim(0, chip.sram_bytes / 1024 * 1.3)  # room for the legend
    ax.legend(loc="upper right", fontsize=8, ncols=2, frameon=False)


def _bandwidth(ax: Axes, r: SimResult, chip: Chip) -> None:
    peaks: list[float] = []
    for column, label, color, capacity in (
            (2, "HBM", "tab:red", chip.hbm_bytes_per_s),
            (3, "NoC into cores", "tab:purple", chip.cores * chip.noc.link_bytes_per_s)):
        edges, values = [], []
        last = 0.0
        for seg in r.bandwidth:
            if seg[0] > last:
                edges.append(last)
                values.append(0.0)
            edges.append(seg[0])
            values.append(100 * seg[column] / capacity)
            last = seg[1]
        peaks += values
        if edges:
            ax.stairs(values, [e * US for e in edges] + [last * US], color=color,
                      label=f"{label} (of {capacity / 1e9:,.0f} GB/s)")
    ax.axhline(100, color="black", linestyle="--", linewidth=0.8)
    ax.set_ylim(0, max([110.0, *peaks]) * 1.3)  # room for the legend
    ax.set_ylabel("bandwidth in use\n(% of capacity)")
    ax.legend(loc="upper right", fontsize=8, ncols=2, frameon=False)
