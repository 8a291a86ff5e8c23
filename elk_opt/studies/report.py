"""What a gap study writes: `gap.csv`, `summary.md` and two plots."""

from __future__ import annotations

import csv
import statistics
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

from elk_opt.files import write_atomic
from elk_opt.studies.gap import Cell, Row, conflicts, with_gaps

TIMING_NAMES = {"shared-noc": "shared-noc (docs/spec.md section 5b)",
                "separate-noc": "separate-noc (docs/spec.md section 5)"}
CSV_FIELDS = ("instance", "ops", "method", "family", "timing", "exec_order", "status",
              "makespan_ns",
              "lower_bound_ns", "reference_ns", "reference_kind", "gap", "sim_ns",
              "sim_contention_ns", "solve_s", "time_limit_s", "warm_start", "verified", "error",
              "plan")



def write_report(cells: Sequence[Cell], out: Path) -> list[Row]:
    rows = with_gaps(cells)
    write_atomic(out / "gap.csv", lambda f: _write_csv(rows, f), mode="w")
    summary = summary_markdown(rows, conflicts(rows))
    write_atomic(out / "summary.md", lambda f: f.write(summary))
    _plots(rows, out)
    return rows


def _write_csv(rows: Sequence[Row], f) -> None:
    writer = csv.DictWriter(f, fieldnames=CSV_FIELDS, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        record = asdict(row.cell)
        record.update(reference_ns=row.reference_ns, reference_kind=row.reference_kind,
                      gap="" if row.gap is None else f"{row.gap:.6f}")
        writer.writerow({k: ("" if record[k] is None else record[k]) for k in CSV_FIELDS})


def gap_table(rows: Sequence[Row]) -> list[tuple[str, int, int, float | None, float | None,
                                                  int]]:
    """Per method: (method, instances, proven-optimum instances, median gap, worst gap,
    errors), gaps measured against proven optima only."""
    methods = list(dict.fromkeys(r.cell.method for r in rows))
    table = []
    for m in methods:
        mine = [r for r in rows if r.cell.method == m]
        gaps = [r.gap for r in mine if r.reference_kind == "optimum" and r.gap is not None]
        table.append((m, len(mine), len(gaps),
                      statistics.median(gaps) if gaps else None, max(gaps) if gaps else None,
                      sum(r.cell.status == "error" for r in mine)))
    return table


def summary_markdown(rows: Sequence[Row], problems: Sequence[str]) -> str:
    instances = len({r.cell.instance for r in rows})
    proven = len({r.cell.instance for r in rows if r.reference_kind == "optimum"})
    timings = sorted({TIMING_NAMES.get(str(r.cell.timing), str(r.cell.timing)) for r in rows})
    limits = sorted({r.cell.time_limit_s for r in rows if r.cell.time_limit_s is not None})
    orders = sorted({r.cell.exec_order or "instance" for r in rows})
    lines = ["# Optimality-gap study", "",
             f"Timing: {'; '.join(timings)}. Execution order (R2): {', '.join(orders)}. "
             "Exact methods' time limit: "
             f"{', '.join(f'{t:g} s' for t in limits) or '-'} per solve.", "",
             f"{instances} instances, {proven} with a proven optimum. Gap = makespan / proven "
             "optimum - 1 (instances without a proven optimum are left out of these columns; "
             "gap.csv gives their gap to the best bound).", "",
             "| method | instances | with optimum | median gap | worst gap | errors |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for method, n, k, median, worst, errors in gap_table(rows):
        lines.append(f"| {method} | {n} | {k} | {_pct(median)} | {_pct(worst)} | {errors} |")
    sims = [r.cell for r in rows if r.cell.sim_contention_ns and r.cell.makespan_ns]
    if sims:
        slow = statistics.median(c.sim_contention_ns / c.makespan_ns for c in sims)
        lines += ["", f"Simulated with contention, plans run {slow:.3f}x their analytic "
                      "makespan (median over all plans)."]
    kept = sum(r.cell.plan is not None for r in rows)
    lines += ["", f"Every plan is kept, gzipped, under `plans/` ({kept} files; the `plan` column "
                  "of gap.csv names each): `verify` on this folder re-checks them all."]
    lines += ["", "## Checks", ""]
    lines += [f"- PROBLEM: {p}" for p in problems] or ["- every plan verifies; no plan beats "
                                                       "a proven optimum; exact methods agree."]
    return "\n".join(lines) + "\n"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.2f}%"


def _plots(rows: Sequence[Row], out: Path) -> None:
    """Heuristics' gaps to proven optima: per method (every instance a dot over its box) and
    against instance size (methods side by side at each size, so equal gaps do not hide one
    another). Titles say the timing and how many instances had no proven optimum."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    heuristics = list(dict.fromkeys(r.cell.method for r in rows if r.cell.family == "heuristic"))
    who = "Heuristics'"
    if not heuristics:  # a study of exact methods only (say, in an order no heuristic solves in)
        heuristics, who = list(dict.fromkeys(r.cell.method for r in rows)), "Methods'"
    proven = [r for r in rows if r.reference_kind == "optimum" and r.gap is not None]
    instances = {r.cell.instance for r in rows}
    with_optimum = {r.cell.instance for r in proven}
    timings = ", ".join(sorted({str(r.cell.timing) for r in rows}))
    note = (f"{len(with_optimum)} of {len(instances)} instances have a proven optimum"
            + (" (the others are left out)" if len(with_optimum) < len(instances) else "")
            + f"; {timings} timing")

    fig, ax = plt.subplots(figsize=(8, 4.5), layout="constrained")
    gaps = {m: [100 * r.gap for r in proven if r.cell.method == m] for m in heuristics}
    ax.boxplot([gaps[m] or [float("nan")] for m in heuristics], tick_labels=heuristics,
               showfliers=False, widths=0.5)
    for k, m in enumerate(heuristics):
        spread = [k + 1 + 0.18 * ((j % 7) - 3) / 3 for j in range(len(gaps[m]))]
        ax.scatter(spread, gaps[m], s=12, alpha=0.6, color="tab:blue", zorder=3)
    ax.set_ylabel("gap to the proven optimum (%)")
    ax.set_title(f"{who} gaps, one dot per instance\n{note}", fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    write_atomic(out / "gap_by_method.png", lambda f: fig.savefig(f, format="png"), mode="wb")
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(8, 4.5), layout="constrained")
    sizes = sorted({r.cell.ops for r in proven})
    slot = {n: k for k, n in enumerate(sizes)}
    width = 0.7 / max(1, len(heuristics))
    for k, m in enumerate(heuristics):
        pts = [(slot[r.cell.ops] + (k - (len(heuristics) - 1) / 2) * width, 100 * r.gap)
               for r in proven if r.cell.method == m]
        if pts:
            ax.scatter(*zip(*pts, strict=True), label=m, s=16, marker="osD^v<>"[k % 7])
    ax.set_xticks(range(len(sizes)), [str(n) for n in sizes])
    for k in range(1, len(sizes)):
        ax.axvline(k - 0.5, color="grey", linewidth=0.5, alpha=0.5)
    ax.set_xlabel("ops in the instance (at each size, the methods side by side)")
    ax.set_ylabel("gap to the proven optimum (%)")
    ax.set_title(f"Gap against instance size\n{note}", fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    if proven:
        fig.legend(loc="outside right upper", fontsize=9)
    write_atomic(out / "gap_by_size.png", lambda f: fig.savefig(f, format="png"), mode="wb")
    plt.close(fig)
