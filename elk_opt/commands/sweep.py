"""`elk-opt sweep --figure 19 -o DIR`: design-space sweeps, on a process pool or a cluster."""

from __future__ import annotations

import argparse
import csv
import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict, replace
from pathlib import Path

from elk_opt.commands.flags import (
    add_executor,
    add_quiet,
    add_timing,
    output_dir,
    positive_float,
    positive_int,
)
from elk_opt.errors import UsageError
from elk_opt.files import ensure_dir, write_atomic
from elk_opt.interrupts import Terminated
from elk_opt.progress import report_progress
from elk_opt.studies.executors import EXECUTORS, run_all
from elk_opt.studies.plans import PLANS_DIR, Outcome, keep
from elk_opt.studies.sweep import (
    AXES,
    FIGURES,
    Figure,
    SweepCell,
    SweepPoint,
    normalised,
    run_sweep_cell,
    sweep_cells,
)

CSV_FIELDS = ("model", "mode", "batch", "kv_len", "layers", "chip", "axis", "value", "method",
              "timing", "ops", "makespan_ns", "simulated_ns", "throughput", "normalised",
              "hbm_util", "noc_util", "tflops", "solve_s", "verified", "plan")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sweep", help="design-space sweeps (the paper's Figures 19-24)",
                       description="Vary one chip parameter, re-plan and simulate the model at "
                                   "every point. Presets: " + "; ".join(
                                       f"{n}: {f.title}" for n, f in FIGURES.items()))
    p.add_argument("--figure", default=None,
                   help="preset number(s), comma-separated, or 'all'")
    p.add_argument("--axis", choices=AXES, help="custom sweep: the parameter to scale")
    p.add_argument("--values", help="custom sweep: comma-separated scale factors")
    p.add_argument("--chips", default="ipu-pod4-hbm3e", help="custom sweep: chip presets/files")
    p.add_argument("--modes", default="decode", help="custom sweep: decode, prefill, forward")
    p.add_argument("--model", default="llama2-13b")
    p.add_argument("--batch", type=positive_int, default=32)
    p.add_argument("--kv-len", type=positive_int, default=2048)
    p.add_argument("--layers", type=positive_int, default=None,
                   help="first N decoder layers only")
    p.add_argument("--methods", default="elk-full,static,basic")
    add_timing(p)
    p.add_argument("-o", "--output", required=True, type=output_dir, metavar="DIR")
    add_executor(p, EXECUTORS)
    add_quiet(p)
    p.set_defaults(func=run)


def _figures(args: argparse.Namespace) -> dict[str, Figure]:
    if args.figure and args.axis:
        raise UsageError("give either --figure or --axis/--values, not both")
    if args.axis:
        if not args.values:
            raise UsageError("--axis needs --values, e.g. --values 0.5,1,2")
        try:
            values = tuple(positive_float(v) for v in args.values.split(","))
        except argparse.ArgumentTypeError as e:
            raise UsageError(f"--values: {e}") from None
        return {"sweep": Figure(f"Throughput against {args.axis}", args.axis, values,
                                tuple(args.chips.split(",")), tuple(args.modes.split(",")))}
    if not args.figure:
        raise UsageError("give --figure N (19-24 or all) or --axis with --values")
    wanted = list(FIGURES) if args.figure == "all" else args.figure.split(",")
    out = {}
    for w in wanted:
        if not str(w).isdigit() or int(w) not in FIGURES:
            raise UsageError(f"--figure: no preset {w!r}; presets {', '.join(map(str, FIGURES))}")
        out[f"fig{int(w)}"] = FIGURES[int(w)]
    return out


def run(args: argparse.Namespace) -> int:
    from elk_opt.methods import METHODS

    methods = args.methods.split(",")
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise UsageError(f"unknown methods {', '.join(unknown)}")
    figures = _figures(args)
    out = ensure_dir(args.output)
    for stem, figure in figures.items():
        cells = sweep_cells(args.model, figure, methods, batch=args.batch, kv_len=args.kv_len,
                            layers=args.layers, timing=args.timing)
        outcomes = _run(stem, cells, args, out)
        order = {c: k for k, c in enumerate(cells)}
        outcomes.sort(key=lambda o: order[o.cell.cell])
        points = [replace(o.cell, plan=keep(out, o.cell.cell.name, o.plan, f"{PLANS_DIR}/{stem}"))
                  for o in outcomes]  # kept with the figure: an interrupted sweep writes nothing
        norm = normalised(points)
        write_csv(points, norm, out / f"{stem}.csv")
        plot(points, norm, figure, out / f"{stem}.png")
        print(f"{stem}: {figure.title}: {len(points)} points under {args.timing} -> "
              f"{out}/{stem}.csv, {stem}.png, plans/{stem}/")
        failed = [p for p in points if not p.verified]
        if failed:
            print(f"{stem}: {len(failed)} plans fail verify (see the verified column)",
                  file=sys.stderr)
            return 1
    return 0


def _run(stem: str, cells: Sequence[SweepCell], args: argparse.Namespace,
         out: Path) -> list[Outcome[SweepPoint]]:
    """Every point of a figure, each with its plan packed; on an interrupt the points done are
    written to a partial CSV (without their plans) before the interrupt goes on."""
    points: list[Outcome[SweepPoint]] = []
    try:
        with report_progress(len(cells), stem, unit="point", enabled=not args.quiet) as shown, \
                run_all(run_sweep_cell, cells, args.executor, args.workers,
                        args.address) as results:
            for _cell, outcome in results:
                point = outcome.cell
                points.append(outcome)
                shown.advance(note=f"[{stem} {len(points)}/{len(cells)}] {point.cell.chip} "
                                   f"{point.cell.mode} {point.cell.axis}x{point.cell.value:g} "
                                   f"{point.cell.method}: {point.simulated_ns:,} ns simulated"
                                   f"{'' if point.verified else ', PLAN FAILS VERIFY'}")
    except (KeyboardInterrupt, Terminated) as e:
        kept = ""
        if points:  # what finished is kept; a sweep still restarts from its first point
            order = {c: k for k, c in enumerate(cells)}
            done = sorted((o.cell for o in points), key=lambda p: order[p.cell])
            try:
                norm = normalised(done)
            except ValueError:  # the yardstick point of some mode did not finish
                norm = dict.fromkeys(done, math.nan)
            write_csv(done, norm, out / f"{stem}.partial.csv")
            kept = f", written to {out / f'{stem}.partial.csv'}"
        e.add_note(f"{stem}: {len(points)} of {len(cells)} points done{kept} (a sweep "
                   "restarts from its first point)")
        raise
    return points


def write_csv(points: Sequence[SweepPoint], norm: Mapping[SweepPoint, float],
              path: Path) -> None:
    def write(f) -> None:
        writer = csv.DictWriter(f, fieldnames=CSV_FIELDS, lineterminator="\n")
        writer.writeheader()
        for p in points:
            row = {**asdict(p.cell), **{k: v for k, v in asdict(p).items() if k != "cell"}}
            row["normalised"] = round(norm[p], 6)
            row["throughput"] = round(p.throughput, 3)
            writer.writerow({k: ("" if row[k] is None else row[k]) for k in CSV_FIELDS})

    write_atomic(path, write)


AXIS_NAMES = {"hbm": "HBM bandwidth", "noc": "NoC bandwidth", "cores": "core count",
              "compute": "per-core compute", "sram": "SRAM per core"}
LINESTYLES = ("-", "--", ":", "-.")
MARKERS = "osD^v<>"


def plot(points: Sequence[SweepPoint], norm: Mapping[SweepPoint, float], figure: Figure,
         path: Path) -> None:
    """Normalised throughput against the scale: a colour and marker per method, a line style
    per chip (and mode), so series that coincide still show; the subtitle says what was
    planned, under which timing, and how it was timed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5.4), layout="constrained")
    methods = list(dict.fromkeys(p.cell.method for p in points))
    variants = list(dict.fromkeys((p.cell.chip, p.cell.mode) for p in points))
    for chip, mode in variants:
        for k, method in enumerate(methods):
            mine = sorted((p for p in points if (p.cell.chip, p.cell.mode, p.cell.method)
                           == (chip, mode, method)), key=lambda p: p.cell.value)
            label = method + (f", {chip}" if len(figure.chips) > 1 else "") + \
                (f", {mode}" if len(figure.modes) > 1 else "")
            ax.plot([p.cell.value for p in mine], [norm[p] for p in mine], label=label,
                    color=f"C{k}", marker=MARKERS[k % len(MARKERS)],
                    markersize=max(3, 9 - 2 * k), markerfacecolor="none",  # coinciding show
                    linestyle=LINESTYLES[variants.index((chip, mode)) % len(LINESTYLES)])
    values = sorted({p.cell.value for p in points})
    ax.set_xscale("log", base=2)
    ax.set_xticks(values, [f"{v:g}x" for v in values])
    ax.minorticks_off()
    ax.set_xlabel(f"{AXIS_NAMES.get(figure.axis, figure.axis)}, relative to the preset chip")
    ref = points[0].cell
    ax.set_ylabel(f"throughput relative to {ref.method}\non {ref.chip} at 1x")
    layers = "whole model" if ref.layers is None else f"first {ref.layers} layers"
    ax.set_title(f"{figure.title}\n{ref.model} {ref.mode}, batch {ref.batch}, KV {ref.kv_len}, "
                 f"{layers}\nplanned under {ref.timing}, simulated with full contention",
                 fontsize=10)
    ax.grid(True, alpha=0.3)
    fig.legend(loc="outside lower center", fontsize=9, ncols=min(3, len(methods)),
               frameon=False)
    write_atomic(path, lambda f: fig.savefig(f, format="png"), mode="wb")
    plt.close(fig)
