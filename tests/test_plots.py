"""The figures say what they show: the timeline names its plan's method and timing and gives each
number once, and aggregates a large plan by layer; Figures 17-18 carry one legend each."""

from __future__ import annotations

from dataclasses import replace

import matplotlib

matplotlib.use("Agg")

import elk_opt
from elk_opt.simulator import simulate
from elk_opt.simulator.plot import AGGREGATE_OPS, WINDOW_OPS, _title, _window, plot_timeline
from elk_opt.solution import SolveOptions
from elk_opt.studies.reproduce import Cell
from elk_opt.studies.reproduce_plots import _fig17, _fig18

PNG = b"\x89PNG\r\n\x1a\n"


def test_the_timeline_title_names_method_and_timing_and_each_number_once():
    plan = elk_opt.solve(elk_opt.synthetic_instance(ops=8, seed=2), "elk-full",
                         timing="shared-noc")
    result = simulate(plan, sharing="port")  # section 5b exactly: the three makespans agree
    assert result.makespan_ns == result.analytic_makespan_ns == result.shared_noc_makespan_ns
    title = _title(result, "elk-full", "inst")
    assert "the elk-full plan" in title and "planned under shared-noc" in title
    assert title.count(f"{result.makespan_ns / 1e3:,.1f} us") == 1
    other = elk_opt.solve(plan.instance, "basic", timing="separate-noc")
    shown = _title(simulate(other), "basic", "inst")
    assert "the basic plan, planned under separate-noc" in shown and "with full contention" in shown


def test_a_large_plan_is_shown_by_layer_with_one_layer_zoomed(tmp_path):
    instance = elk_opt.synthetic_instance(ops=AGGREGATE_OPS + 20, plans=2, seed=1)
    plan = elk_opt.solve(instance, "basic", SolveOptions())
    layers = [op.layer for op in instance.ops]
    first, last = _window(simulate(plan).ops, layers)
    middle = sorted({x for x in layers if x is not None})
    assert set(layers[first:last]) == {middle[len(middle) // 2]}
    assert first == layers.index(layers[first])  # the whole layer, from its first op
    path = tmp_path / "timeline.png"
    plot_timeline(simulate(plan), instance.chip, path, method="basic", name=instance.name,
                  layers=layers)
    assert path.read_bytes()[:8] == PNG
    first, last = _window(simulate(plan).ops, None)  # no layers known: the middle ops
    assert last - first == WINDOW_OPS and first <= len(layers) // 2 < last


def _cells() -> list[Cell]:
    base = Cell(model="llama2-13b", batch=32, kv_len=2048, layers=2, cost_model="analytic",
                setting="separate-noc", timing="separate-noc", method="", family="heuristic",
                status="heuristic", sim_ns=100, overlapped_ns=50, exec_only_ns=20,
                preload_only_ns=30, stall_ns=0, hbm_util=0.5)
    cells = []
    for cost in ("analytic", "elk-paper"):
        for setting in ("separate-noc", "shared-bsp"):
            for k, method in enumerate(("basic", "static", "elk-full")):
                cells.append(replace(base, cost_model=cost, setting=setting, method=method,
                                     makespan_ns=200 - 30 * k))
            cells.append(replace(base, cost_model=cost, setting=setting, method="ideal",
                                 family="bound", status="bound", lower_bound_ns=100))
    return cells


def test_figures_17_and_18_have_one_legend_each_naming_every_method():
    import matplotlib.pyplot as plt

    cells = _cells()
    panels = [((c.cost_model, c.setting), [d for d in cells if (d.cost_model, d.setting)
                                            == (c.cost_model, c.setting)])
              for c in cells if c.method == "basic"]
    for draw in (_fig17, _fig18):
        fig = draw(plt, panels, cells)
        assert len(fig.legends) == 1
        assert all(ax.get_legend() is None for ax in fig.axes)
        labels = [t.get_text() for t in fig.legends[0].get_texts()]
        if draw is _fig17:
            assert {"basic", "static", "elk-full", "ideal"} <= set(labels)
            assert any(label.startswith("paper:") for label in labels)
        else:
            assert "stall" in labels and any("paper" in label for label in labels)
        plt.close(fig)
