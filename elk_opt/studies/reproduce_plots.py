"""fig17.png and fig18.png of `elk-opt reproduce`: one panel per (cost model, setting).

Every panel shows the same methods in the same colours, so each figure has one legend, below
the panels (constrained layout puts a legend above them on top of the figure title), in type a
reader can read; matplotlib's constrained layout keeps titles, panels and
legend apart however many configurations the grid has.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from elk_opt.files import write_atomic
from elk_opt.studies import paper
from elk_opt.studies.reproduce import Cell
from elk_opt.studies.reproduce_report import (
    group_by,
    method_means,
    method_time,
    methods_in,
    setting_of,
)

LEGEND_SIZE = 10
TICK_SIZE = 9
PARTS = (("overlapped", "overlapped (execute and preload)", "tab:blue"),
         ("exec_only", "execute only", "tab:orange"),
         ("preload_only", "preload only", "tab:green"),
         ("stall", "stall", "tab:red"))
OURS_COLOR, PAPER_COLOR = "#4d4d4d", "#b3b3b3"


def write_plots(figure: Sequence[Cell], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [(key, mine) for key, mine in group_by(figure, setting_of).items()
              if any(c.ok for c in mine)]
    for name, draw in (("fig17.png", _fig17), ("fig18.png", _fig18)):
        fig = draw(plt, panels, figure)
        write_atomic(out / name, lambda f, fig=fig: fig.savefig(f, format="png", dpi=100),
                     mode="wb")
        plt.close(fig)


def _fig17(plt, panels: list, figure: Sequence[Cell]):
    """Throughput over Basic per configuration, one panel per (cost model, setting)."""
    configs = max((len({c.config_key for c in mine}) for _k, mine in panels), default=1)
    fig, axes = plt.subplots(max(1, len(panels)), 1, squeeze=False, layout="constrained",
                             figsize=(max(9.0, 0.6 * configs + 3),
                                      (2.6 if configs <= 3 else 3.4) * max(1, len(panels)) + 1))
    methods = methods_in([c for _k, mine in panels for c in mine])
    colors = {m: f"C{k}" for k, m in enumerate(methods)}
    target = paper.PAPER.elk_full_over_basic
    width = 0.8 / max(1, len(methods))
    for ax, ((cost, setting), mine) in zip(axes[:, 0], panels, strict=False):
        groups = list(group_by(mine, lambda c: c.config_key).values())
        for k, m in enumerate(methods):
            heights = [paper.ratio(method_time(g, "basic"), method_time(g, m)) or 0.0
                       for g in groups]
            ax.bar([i + k * width for i in range(len(groups))], heights, width, label=m,
                   color=colors[m])
        ax.axhline(target, color="black", linestyle="--", linewidth=1,
                   label=f"paper: Elk-Full {target}x over Basic (grid average)")
        ax.set_xticks([i + 0.4 - width / 2 for i in range(len(groups))],
                      [f"{g[0].model} b{g[0].batch} KV{g[0].kv_len}" for g in groups],
                      fontsize=TICK_SIZE, rotation=30 if len(groups) > 3 else 0,
                      ha="right" if len(groups) > 3 else "center")
        ax.set_ylabel("throughput / Basic", fontsize=TICK_SIZE)
        ax.set_ylim(0, max(target, *(p.get_height() for p in ax.patches)) * 1.1)
        ax.tick_params(axis="y", labelsize=TICK_SIZE)
        ax.set_title(f"{cost} cost model, {setting}", fontsize=LEGEND_SIZE)
    if not panels:
        axes[0, 0].text(0.5, 0.5, "no results", ha="center")
    else:
        handles, labels = axes[0, 0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="outside lower center", fontsize=LEGEND_SIZE,
                   ncols=min(len(labels), 4), frameon=False)
    fig.suptitle("Figure 17: throughput normalised to Basic, per configuration",
                 fontsize=LEGEND_SIZE + 2)
    return fig


def _fig18(plt, panels: list, figure: Sequence[Cell]):
    """Per (cost model, setting): the time breakdown over methods (means over the grid), and
    HBM utilisation beside the paper's. Settings are columns; each cost model two rows."""
    means = method_means(figure)
    costs = list(dict.fromkeys(cost for (cost, _s), _m in panels))
    settings = list(dict.fromkeys(setting for (_c, setting), _m in panels))
    rows, cols = 2 * max(1, len(costs)), max(1, len(settings))
    fig, axes = plt.subplots(rows, cols, squeeze=False, layout="constrained",
                             figsize=(4.3 * cols, 2.9 * rows + 1))
    for ax in axes.flat:
        ax.set_visible(False)
    hbm = dict(paper.PAPER.hbm_util_pct)
    for (cost, setting), _mine in panels:
        row, col = 2 * costs.index(cost), settings.index(setting)
        every = means[(cost, setting)]
        parts = [m for m in every if m.overlapped is not None]
        ax = axes[row, col]
        ax.set_visible(True)
        bottom = [0.0] * len(parts)
        for field, label, color in PARTS:
            heights = [100 * (getattr(m, field) or 0.0) for m in parts]
            ax.bar([m.method for m in parts], heights, bottom=bottom, label=label, color=color)
            bottom = [b + h for b, h in zip(bottom, heights, strict=True)]
        ax.set_ylim(0, 100)
        ax.set_ylabel("% of makespan", fontsize=TICK_SIZE)
        ax.set_title(f"{cost}, {setting}: time breakdown", fontsize=LEGEND_SIZE)
        ax.tick_params(labelsize=TICK_SIZE)
        ax = axes[row + 1, col]
        ax.set_visible(True)
        xs = range(len(every))
        ax.bar([x - 0.2 for x in xs], [100 * (m.hbm_util or 0.0) for m in every], 0.4,
               label="HBM utilisation: ours", color=OURS_COLOR)
        ax.bar([x + 0.2 for x in xs], [hbm.get(m.method, 0.0) for m in every], 0.4,
               label="HBM utilisation: paper (grid average; none for LHS)", color=PAPER_COLOR)
        ax.set_xticks(list(xs), [m.method for m in every])
        ax.set_ylim(0, max(100.0, *(p.get_height() * 1.05 for p in ax.patches)))
        ax.set_ylabel("HBM utilisation (%)", fontsize=TICK_SIZE)
        ax.set_title(f"{cost}, {setting}: HBM utilisation", fontsize=LEGEND_SIZE)
        ax.tick_params(labelsize=TICK_SIZE)
    if not panels:
        axes[0, 0].set_visible(True)
        axes[0, 0].text(0.5, 0.5, "no results", ha="center")
    else:
        (cost, setting), _m = panels[0]
        row, col = 2 * costs.index(cost), settings.index(setting)
        handles, labels = [], []
        for ax in (axes[row, col], axes[row + 1, col]):
            h, lab = ax.get_legend_handles_labels()
            handles += h
            labels += lab
        fig.legend(handles, labels, loc="outside lower center", fontsize=LEGEND_SIZE,
                   ncols=3, frameon=False)
    fig.suptitle("Figure 18: time breakdown and HBM utilisation (means over the grid)",
                 fontsize=LEGEND_SIZE + 2)
    return fig
