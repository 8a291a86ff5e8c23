"""What `elk-opt reproduce` writes: fig17.csv, fig18.csv, exact.csv, reproduction.md, two plots.

Ratios as the paper defines them: a throughput ratio is the inverse makespan ratio, computed
per configuration and averaged over the grid with the arithmetic mean (the geometric mean is
shown beside it). "% of Ideal" is the Ideal roofline bound over Elk-Full's makespan.
"""

from __future__ import annotations

import csv
import statistics
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from elk_opt.files import write_atomic
from elk_opt.studies import gap, paper
from elk_opt.studies.reproduce import IDEAL, SETTINGS, Cell

FIG17_FIELDS = ("source", "model", "batch", "kv_len", "layers", "cost_model", "setting",
                "timing", "noc_occupancy", "method", "status", "time_ns", "makespan_ns",
                "lower_bound_ns", "speedup_over_basic", "speedup_over_static",
                "fraction_of_ideal", "verified", "sim_ns", "full_ns", "solve_s", "error", "plan")
FIG18_FIELDS = ("source", "model", "batch", "kv_len", "layers", "cost_model", "setting",
                "method", "status", "time_ns", "overlapped_ns", "exec_only_ns",
                "preload_only_ns", "stall_ns", "hbm_util", "noc_util", "tflops", "full_ns",
                "full_hbm_util", "full_noc_util", "full_tflops")
EXACT_FIELDS = ("model", "batch", "kv_len", "layers", "cost_model", "setting", "method",
                "exec_order", "status", "makespan_ns", "lower_bound_ns", "model_timing",
                "reference_ns", "reference_kind", "gap", "verified", "solve_s", "warm_start",
                "error", "plan")
OURS = "ours"


def group_by(cells: Sequence[Cell], key: Callable[[Cell], object]) -> dict[object, list[Cell]]:
    """The cells by `key`, in first-seen order (shared with reproduce_plots, as the three
    below are)."""
    groups: dict[object, list[Cell]] = {}
    for c in cells:
        groups.setdefault(key(c), []).append(c)
    return groups


def setting_of(c: Cell) -> tuple[str, str]:
    return c.cost_model, c.setting


def method_time(cells: Sequence[Cell], method: str) -> int | None:
    """The method's makespan among one configuration's cells (None if it did not succeed)."""
    found = [c.time_ns for c in cells if c.method == method and c.ok]
    return found[0] if found else None


@dataclass(frozen=True)
class SettingSummary:
    """Figure 17's averages for one (cost model, setting) over the configurations run."""

    cost_model: str
    setting: str
    configs: int  # configurations with Elk-Full and Basic both available
    unavailable: int  # cells
    errors: int  # cells
    over_basic: float | None
    over_basic_geo: float | None
    over_static: float | None
    over_static_geo: float | None
    pct_of_ideal: float | None


def _means(values: Sequence[float]) -> tuple[float | None, float | None]:
    if not values:
        return None, None
    return statistics.fmean(values), statistics.geometric_mean(values)


def summaries(cells: Sequence[Cell]) -> list[SettingSummary]:
    out = []
    for (cost, setting), mine in group_by(cells, setting_of).items():
        per_config = list(group_by(mine, lambda c: c.config_key).values())
        basic, static, ideal = [], [], []
        for group in per_config:
            full = method_time(group, "elk-full")
            for target, method in ((basic, "basic"), (static, "static")):
                ratio = paper.ratio(method_time(group, method), full)
                if ratio is not None:
                    target.append(ratio)
            share = paper.ratio(method_time(group, IDEAL), full)
            if share is not None:
                ideal.append(100 * share)
        over_basic, over_basic_geo = _means(basic)
        over_static, over_static_geo = _means(static)
        out.append(SettingSummary(
            cost, setting, len(basic), sum(c.status == "unavailable" for c in mine),
            sum(c.status == "error" for c in mine), over_basic, over_basic_geo, over_static,
            over_static_geo, statistics.fmean(ideal) if ideal else None))
    return out


@dataclass(frozen=True)
class MethodMeans:
    """Figure 18 for one method: means over the configurations of one setting."""

    method: str
    configs: int
    overlapped: float | None  # fractions of the makespan
    exec_only: float | None
    preload_only: float | None
    stall: float | None
    hbm_util: float | None
    noc_util: float | None
    tflops: float | None
    full_slowdown: float | None  # full-contention replay over the analytic makespan
    full_hbm_util: float | None


def _mean(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.fmean(present) if present else None


def method_means(cells: Sequence[Cell]) -> dict[tuple[str, str], list[MethodMeans]]:
    out = {}
    for key, mine in group_by(cells, setting_of).items():
        rows = []
        for method, group in group_by([c for c in mine if c.ok], lambda c: c.method).items():
            def share(field: str, g: list[Cell] = group) -> float | None:
                return _mean([getattr(c, field) / c.sim_ns for c in g
                              if getattr(c, field) is not None and c.sim_ns])

            rows.append(MethodMeans(
                str(method), len(group), share("overlapped_ns"), share("exec_only_ns"),
                share("preload_only_ns"), share("stall_ns"), _mean([c.hbm_util for c in group]),
                _mean([c.noc_util for c in group]), _mean([c.tflops for c in group]),
                _mean([c.full_ns / c.makespan_ns for c in group
                       if c.full_ns and c.makespan_ns]),
                _mean([c.full_hbm_util for c in group])))
        out[key] = rows
    return out


def gap_rows(cells: Sequence[Cell]) -> list[tuple[Cell, gap.Row]]:
    """Each plan of the exact slices with its gap to the slice's proven optimum (else to its
    best bound: a certified upper bound on the gap), through the gap study's `with_gaps`."""
    plans = [c for c in cells if c.method != IDEAL and c.status != "unavailable"]
    gap_cells = [_as_gap_cell(c) for c in plans]
    by_gap_cell = {id(g): c for g, c in zip(gap_cells, plans, strict=True)}
    return [(by_gap_cell[id(row.cell)], row) for row in gap.with_gaps(gap_cells)]


def _as_gap_cell(c: Cell) -> gap.Cell:
    return gap.Cell(instance=c.config_key, ops=c.ops or 0, method=c.method, family=c.family,
                    status=c.status, makespan_ns=c.makespan_ns, lower_bound_ns=c.lower_bound_ns,
                    solve_s=c.solve_s or 0.0, verified=c.verified, sim_ns=c.sim_ns,
                    sim_contention_ns=c.full_ns, error=c.error)


def problems(figure: Sequence[Cell], exact: Sequence[Cell]) -> list[str]:
    """Facts that can only be bugs: the gap study's checks, replays that disagree with a
    plan's claim, plans below the Ideal bound."""
    cells = list(dict.fromkeys([*figure, *exact]))
    found = gap.conflicts([row for _c, row in gap_rows(cells)])
    for c in cells:
        if c.ok and c.method != IDEAL and c.sim_ns != c.makespan_ns:
            found.append(f"{c.config_key} {c.method}: exact replay {c.sim_ns} differs from "
                         f"the claimed makespan {c.makespan_ns}")
    for group in group_by(cells, lambda c: c.config_key).values():
        ideal = method_time(group, IDEAL)
        for c in group:
            if ideal and c.ok and c.method != IDEAL and c.makespan_ns < ideal:
                found.append(f"{c.config_key} {c.method}: {c.makespan_ns} below the Ideal "
                             f"bound {ideal}")
    return found


# ---- files ----------------------------------------------------------------------------------

def write_report(figure: Sequence[Cell], exact: Sequence[Cell], out: Path) -> str:
    """Write the tables and the report (the plots: `reproduce_plots.write_plots`); return the
    compact table to print."""
    write_atomic(out / "fig17.csv", lambda f: _write_rows(f, FIG17_FIELDS, _fig17_rows(figure)))
    write_atomic(out / "fig18.csv", lambda f: _write_rows(f, FIG18_FIELDS, _fig18_rows(figure)))
    write_atomic(out / "exact.csv", lambda f: _write_rows(f, EXACT_FIELDS, _exact_rows(exact)))
    text = markdown(figure, exact)
    write_atomic(out / "reproduction.md", lambda f: f.write(text))
    return compact_table(figure)


def _write_rows(f, names: Sequence[str], rows: Sequence[dict]) -> None:
    writer = csv.DictWriter(f, fieldnames=names, lineterminator="\n", extrasaction="ignore")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: _csv_value(row.get(k)) for k in names})


def _csv_value(v: object) -> object:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.6g}"
    return v


def _fig17_rows(cells: Sequence[Cell]) -> list[dict]:
    rows = []
    for group in group_by(cells, lambda c: c.config_key).values():
        basic, static, ideal = (method_time(group, m) for m in ("basic", "static", IDEAL))
        for c in group:
            rows.append({**asdict(c), "source": OURS, "time_ns": c.time_ns,
                         "speedup_over_basic": paper.ratio(basic, c.time_ns) if c.ok else None,
                         "speedup_over_static": paper.ratio(static, c.time_ns) if c.ok else None,
                         "fraction_of_ideal": paper.ratio(ideal, c.time_ns) if c.ok else None})
    for run in paper.ARTIFACT_RUNS:
        for method, ns in run.makespan_ns:
            rows.append({"source": run.label, "model": run.model, "batch": run.batch,
                         "kv_len": run.kv_len, "layers": run.layers, "method": method,
                         "time_ns": ns, "speedup_over_basic": paper.ratio(run.of("basic"), ns),
                         "speedup_over_static": paper.ratio(run.of("static"), ns),
                         "fraction_of_ideal": paper.ratio(run.of(IDEAL), ns)})
    p = paper.PAPER
    rows.append({"source": paper.PAPER_SOURCE, "method": "elk-full",
                 "speedup_over_basic": p.elk_full_over_basic,
                 "speedup_over_static": p.elk_full_over_static,
                 "fraction_of_ideal": p.elk_full_pct_of_ideal / 100})
    return rows


def _fig18_rows(cells: Sequence[Cell]) -> list[dict]:
    rows = [{**asdict(c), "source": OURS, "time_ns": c.time_ns} for c in cells]
    p = paper.PAPER
    hbm, noc, tflops = dict(p.hbm_util_pct), dict(p.noc_util_pct), dict(p.tflops)
    for method in paper.PAPER_METHODS:
        rows.append({"source": paper.PAPER_SOURCE, "method": method,
                     "hbm_util": hbm[method] / 100 if method in hbm else None,
                     "noc_util": noc[method] / 100 if method in noc else None,
                     "tflops": tflops.get(method)})
    return rows


def _exact_rows(cells: Sequence[Cell]) -> list[dict]:
    return [{**asdict(c), "reference_ns": row.reference_ns, "reference_kind": row.reference_kind,
             "gap": row.gap} for c, row in gap_rows(cells)]


# ---- Markdown -------------------------------------------------------------------------------

def _x(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}x"


def _pct(v: float | None, scale: float = 100) -> str:
    return "-" if v is None else f"{scale * v:.2f}%"


def _num(v: float | None, digits: int = 2) -> str:
    return "-" if v is None else f"{v:,.{digits}f}"


def _setting_label(cost: str, setting: str) -> str:
    return f"{cost} cost model, {setting}: {SETTINGS[setting].label}"


def compact_table(figure: Sequence[Cell]) -> str:
    p = paper.PAPER
    lines = [f"{'cost model':<11} {'setting':<13} {'configs':>7} {'EF/Basic':>9} "
             f"{'EF/Static':>9} {'EF %Ideal':>9}"]
    for s in summaries(figure):
        if not s.configs:
            why = "unavailable" if s.unavailable else "no complete configuration"
            lines.append(f"{s.cost_model:<11} {s.setting:<13} {'-':>7} {why}")
            continue
        lines.append(f"{s.cost_model:<11} {s.setting:<13} {s.configs:>7} {_x(s.over_basic):>9} "
                     f"{_x(s.over_static):>9} {_pct(s.pct_of_ideal, 1):>9}")
    lines.append(f"{'paper':<11} {'(grid avg)':<13} {24:>7} {_x(p.elk_full_over_basic):>9} "
                 f"{_x(p.elk_full_over_static):>9} {_pct(p.elk_full_pct_of_ideal, 1):>9}")
    for run in paper.ARTIFACT_RUNS:
        full = run.of("elk-full")
        lines.append(f"{'artifact':<11} {'l' + str(run.layers):<13} {1:>7} "
                     f"{_x(paper.ratio(run.of('basic'), full)):>9} "
                     f"{_x(paper.ratio(run.of('static'), full)):>9} "
                     f"{_pct(paper.ratio(run.of(IDEAL), full)):>9}  ({run.label})")
    return "\n".join(lines)


def markdown(figure: Sequence[Cell], exact: Sequence[Cell]) -> str:
    p = paper.PAPER
    configs = len({c.config_key for c in figure})
    with_results = len({c.config_key for c in figure if c.ok})
    lines = ["# Reproduction of the Elk paper's Figures 17-18", "",
             f"{configs} configurations (model, batch, KV length, layers, cost model, setting) "
             f"on the figure grid, {with_results} with results. Ratios are throughput ratios "
             "(inverse makespan ratios) per configuration, averaged over the grid with the "
             "arithmetic mean (geometric mean in brackets); the paper does not say which mean "
             "it used. Ideal is the Ideal roofline bound (`elk_opt.bounds.ideal_bound`), valid "
             "for every plan under both timings. Figure 18's breakdown and utilisations come "
             "from the simulator's exact replay of each plan under its own timing (sharing "
             "`none` for separate-noc, `port` for shared-noc); the full-contention replay is "
             "given for reference.", "",
             f"Every plan behind these numbers is kept, gzipped, under `plans/` "
             f"({sum(c.plan is not None for c in (*figure, *exact))} files; the `plan` column "
             "of fig17.csv and exact.csv names each): `verify` on this folder re-checks them "
             "all.", "",
             "## Figure 17: Elk-Full's speedups, averaged over the grid", "",
             "| source | configs | Elk-Full / Basic | Elk-Full / Static | Elk-Full % of Ideal |",
             "| --- | ---: | ---: | ---: | ---: |"]
    for s in summaries(figure):
        label = _setting_label(s.cost_model, s.setting)
        if not s.configs:
            why = "unavailable" if s.unavailable else "no complete configuration"
            lines.append(f"| ours: {label} | - | {why} | | |")
            continue
        lines.append(f"| ours: {label} | {s.configs} | {_x(s.over_basic)} "
                     f"({_x(s.over_basic_geo)}) | {_x(s.over_static)} ({_x(s.over_static_geo)}) "
                     f"| {_pct(s.pct_of_ideal, 1)} |")
    lines.append(f"| {paper.PAPER_SOURCE} | 24 | {_x(p.elk_full_over_basic)} | "
                 f"{_x(p.elk_full_over_static)} | {_pct(p.elk_full_pct_of_ideal, 1)} |")
    for run in paper.ARTIFACT_RUNS:
        full = run.of("elk-full")
        lines.append(f"| {run.label} ({run.model} b{run.batch} KV{run.kv_len}) | 1 | "
                     f"{_x(paper.ratio(run.of('basic'), full))} | "
                     f"{_x(paper.ratio(run.of('static'), full))} | "
                     f"{_pct(paper.ratio(run.of(IDEAL), full))} |")
    lines += _per_config_tables(figure)
    lines += _figure18_tables(figure)
    lines += _artifact_table(figure, exact)
    lines += _exact_tables(exact)
    lines += _unavailable(figure, exact)
    lines += ["", "## Checks", ""]
    lines += [f"- PROBLEM: {x}" for x in problems(figure, exact)] or [
        "- every plan verifies, its exact replay equals its claimed makespan, no plan is "
        "below the Ideal bound or a proven optimum, and no bound is above a plan."]
    return "\n".join(lines) + "\n"


def methods_in(cells: Sequence[Cell]) -> list[str]:
    """The methods the cells ran, in first-seen order."""
    return list(dict.fromkeys(c.method for c in cells))


def _per_config_tables(figure: Sequence[Cell]) -> list[str]:
    lines = ["", "## Figure 17 per configuration: throughput normalised to Basic", ""]
    for (cost, setting), mine in group_by(figure, setting_of).items():
        if not any(c.ok for c in mine):
            continue
        methods = methods_in(mine)
        lines += [f"### {_setting_label(cost, setting)}", "",
                  "| configuration | " + " | ".join(methods) + " | Elk-Full % of Ideal |",
                  "| --- |" + " ---: |" * (len(methods) + 1)]
        for group in group_by(mine, lambda c: c.config_key).values():
            c0 = group[0]
            basic = method_time(group, "basic")
            cols = [_x(paper.ratio(basic, method_time(group, m))) for m in methods]
            share = paper.ratio(method_time(group, IDEAL), method_time(group, "elk-full"))
            lines.append(f"| {c0.model} b{c0.batch} KV{c0.kv_len} l{c0.layers} | "
                         + " | ".join(cols) + f" | {_pct(share)} |")
        lines.append("")
    return lines


def _figure18_tables(figure: Sequence[Cell]) -> list[str]:
    p = paper.PAPER
    hbm, noc, tflops = dict(p.hbm_util_pct), dict(p.noc_util_pct), dict(p.tflops)
    lines = ["## Figure 18: time breakdown and utilisation, means over the grid", "",
             "Breakdown columns are shares of the makespan. Paper columns: its averages "
             "(HBM for every method; NoC and TFLOPS for Elk-Full only). Ideal's HBM "
             "utilisation and TFLOPS are the model's HBM bytes and FLOPs over the Ideal bound. "
             "Full contention: the full-contention replay over the analytic makespan, and its "
             "HBM utilisation; it models bytes only (a plan's `noc_ns` does not enter it), so "
             "under `bsp` occupancy it can be faster than the section-5b replay.", ""]
    for (cost, setting), rows in method_means(figure).items():
        if not rows:
            continue
        lines += [f"### {_setting_label(cost, setting)}", "",
                  "| method | overlapped | exec only | preload only | stall | HBM util | "
                  "paper HBM | NoC util | paper NoC | TFLOPS | paper TFLOPS | full-contention "
                  "slowdown | full-contention HBM |",
                  "| --- |" + " ---: |" * 12]
        for m in rows:
            lines.append(
                f"| {m.method} | {_pct(m.overlapped)} | {_pct(m.exec_only)} | "
                f"{_pct(m.preload_only)} | {_pct(m.stall)} | {_pct(m.hbm_util)} | "
                f"{_pct(hbm.get(m.method), 1)} | {_pct(m.noc_util)} | "
                f"{_pct(noc.get(m.method), 1)} | {_num(m.tflops)} | "
                f"{_num(tflops.get(m.method))} | {_x(m.full_slowdown)} | "
                f"{_pct(m.full_hbm_util)} |")
        lines.append("")
    return lines


def _artifact_table(figure: Sequence[Cell], exact: Sequence[Cell]) -> list[str]:
    """Our Llama2-13B b32 KV2048 beside the Elk implementation's own results on it."""
    methods = paper.PAPER_METHODS
    lines = ["## Beside the Elk implementation on Llama2-13B, batch 32, KV 2048", "",
             "The artifact's makespans are its own timing on its own cost model "
             "(docs/calibration.md in elk-opt); ours are each setting's makespans (Ideal: the "
             "bound). Times in microseconds.", "",
             "| source | layers | " + " | ".join(methods) + " | Elk-Full / Basic | "
             "Elk-Full / Static | Elk-Full % of Ideal |",
             "| --- | ---: |" + " ---: |" * (len(methods) + 3)]

    def row(label: str, layers: int, times: dict[str, int | None]) -> str:
        full = times.get("elk-full")
        cols = [_num(None if times.get(m) is None else times[m] / 1000, 1) for m in methods]
        return (f"| {label} | {layers} | " + " | ".join(cols) +
                f" | {_x(paper.ratio(times.get('basic'), full))} | "
                f"{_x(paper.ratio(times.get('static'), full))} | "
                f"{_pct(paper.ratio(times.get(IDEAL), full))} |")

    for run in paper.ARTIFACT_RUNS:
        lines.append(row(run.label, run.layers, dict(run.makespan_ns)))
    ours = [c for c in dict.fromkeys([*figure, *exact])
            if (c.model, c.batch, c.kv_len) == ("llama2-13b", 32, 2048)]
    for group in group_by(ours, lambda c: c.config_key).values():
        c0 = group[0]
        if any(c.ok for c in group):
            times = {m: method_time(group, m) for m in methods}
            lines.append(row(f"ours: {c0.cost_model}, {c0.setting}", c0.layers, times))
    return lines + [""]


def _exact_tables(exact: Sequence[Cell]) -> list[str]:
    rows = gap_rows(exact)
    if not rows:
        return []
    lines = ["## Exact optimum on few-layer slices", "",
             "Each heuristic's gap = makespan / reference - 1. The reference is the proven "
             "optimum under the slice's timing when an exact method proved one; otherwise the "
             "best valid lower bound (the exact model's, or the Ideal bound), and the gap is "
             "then a certified upper bound on the true gap. `model timing` is the timing the "
             "exact model optimized when it says (a section-5 model under shared-noc returns "
             "a valid plan and a section-5 bound, never a 5b optimum). Per-slice rows: "
             "exact.csv.", ""]
    for (cost, setting), mine in group_by(rows, lambda r: setting_of(r[0])).items():
        slices = len({c.config_key for c, _r in mine})
        proven = len({c.config_key for c, r in mine if r.reference_kind == "optimum"})
        lines += [f"### {_setting_label(cost, setting)}", "",
                  f"{slices} slices, {proven} with a proven optimum.", "",
                  "| layers | method | slices | statuses | model timing | median gap to "
                  "optimum | worst gap to optimum | median certified gap | worst certified "
                  "gap |", "| ---: | --- | ---: | --- | --- | ---: | ---: | ---: | ---: |"]
        for (layers, method), group in group_by(mine, lambda r: (r[0].layers, r[0].method)
                                              ).items():
            to_opt = [r.gap for _c, r in group if r.reference_kind == "optimum"
                      and r.gap is not None]
            to_bound = [r.gap for _c, r in group if r.reference_kind == "bound"
                        and r.gap is not None]
            statuses = ", ".join(f"{n} {k}" for k, n in sorted(Counter(
                c.status for c, _r in group).items()))
            timings = ", ".join(sorted({c.model_timing for c, _r in group if c.model_timing}))
            lines.append(f"| {layers} | {method} | {len(group)} | {statuses} | "
                         f"{timings or '-'} | {_pct(_median(to_opt))} | "
                         f"{_pct(max(to_opt, default=None))} | {_pct(_median(to_bound))} | "
                         f"{_pct(max(to_bound, default=None))} |")
        lines.append("")
        if slices <= 4:
            lines += ["| slice | method | makespan ns | status | model timing | reference | "
                      "gap |", "| --- | --- | ---: | --- | --- | --- | ---: |"]
            for c, r in mine:
                shown = c.error if c.status == "error" else f"{c.makespan_ns:,}"
                ref = ("-" if r.reference_ns is None
                       else f"{r.reference_ns:,} ({r.reference_kind})")
                lines.append(f"| {c.model} b{c.batch} KV{c.kv_len} l{c.layers} | {c.method} | "
                             f"{shown} | {c.status} | {c.model_timing or '-'} | {ref} | "
                             f"{_pct(r.gap)} |")
            lines.append("")
    return lines


def _median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def _unavailable(figure: Sequence[Cell], exact: Sequence[Cell]) -> list[str]:
    """Cells without a result, one row per cost model, setting, status and reason."""
    missing = [c for c in dict.fromkeys([*figure, *exact]) if c.status in ("unavailable",
                                                                           "error")]
    if not missing:
        return []
    lines = ["## Cells without a result", "",
             "| cost model | setting | status | cells | configurations | why |",
             "| --- | --- | --- | ---: | --- | --- |"]
    for (cost, setting, status, why), group in group_by(
            missing, lambda c: (c.cost_model, c.setting, c.status, c.error)).items():
        keys = list(dict.fromkeys(f"{c.model} b{c.batch} KV{c.kv_len} l{c.layers}"
                                  for c in group))
        shown = ", ".join(keys[:4]) + (f" and {len(keys) - 4} more" if len(keys) > 4 else "")
        lines.append(f"| {cost} | {setting} | {status} | {len(group)} | {shown} | {why} |")
    return lines
