"""`elk-opt sweep --figure 19 -o DIR`: design-space sweeps, on a process pool or a cluster."""

from __future__ import annotations

import argparse
import csv
import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict
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
from elk_opt.interrupts import Terminated
from elk_opt.io import ensure_dir, write_atomic
from elk_opt.progress import report_progress
from elk_opt.studies.executors import EXECUTORS, run_all
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
              "hbm_util", "noc_util", "tflops", "solve_s", "verified")


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
        points = _run(stem, cells, args, out)
        order = {c: k for k, c in enumerate(cells)}
        points.sort(key=lambda p: order[p.cell])
        norm = normalised(points)
        write_csv(points, norm, out / f"{stem}.csv")
        plot(points, norm, figure, out / f"{stem}.png")
        print(f"{stem}: {figure.title}: {len(points)} points under {args.timing} -> "
              f"{out}/{stem}.csv, {stem}.png")
        failed = [p for p in points if not p.verified]
        if failed:
            print(f"{stem}: {len(failed)} plans fail verify (see the verified column)",
                  file=sys.stderr)
            return 1
    return 0


def _run(stem: str, cells: Sequence[SweepCell], args: argparse.Namespace,
         out: Path) -> list[SweepPoint]:
    points: list[SweepPoint] = []
    try:
        with report_progress(len(cells), stem, unit="point", enabled=not args.quiet) as shown, \
                run_all(run_sweep_cell, cells, args.executor, args.workers,
                        args.address) as results:
            for _cell, point in results:
                points.append(point)
                shown.advance(note=f"[{stem} {len(points)}/{len(cells)}] {point.cell.chip} "
                                   f"{point.cell.mode} {point.cell.axis}x{point.cell.value:g} "
                                   f"{point.cell.method}: {point.simulated_ns:,} ns simulated"
                                   f"{'' if point.verified else ', PLAN FAILS VERIFY'}")
    except (KeyboardInterrupt, Terminated) as e:
        kept = ""
        if points:  # what finished is kept; a sweep still restarts from its first point
            order = {c: k for k, c in enumerate(cells)}
            points.sort(key=lambda p: order[p.cell])
            try:
                norm = normalised(points)
            except ValueError:  # the yardstick point of some mode did not finish
                norm = dict.fromkeys(points, math.nan)
            write_csv(points, norm, out / f"{stem}.partial.csv")
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


def plot(points: Sequence[SweepPoint], norm: Mapping[SweepPoint, float], figure: Figure,
         path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2))
    series = dict.fromkeys((p.cell.chip, p.cell.mode, p.cell.method) for p in points)
    for chip, mode, method in series:
        mine = sorted((p for p in points if (p.cell.chip, p.cell.mode, p.cell.method)
                       == (chip, mode, method)), key=lambda p: p.cell.value)
        label = method + (f" {chip}" if len(figure.chips) > 1 else "") + \
            (f" {mode}" if len(figure.modes) > 1 else "")
        ax.plot([p.cell.value for p in mine], [norm[p] for p in mine], marker="o", label=label)
    ax.set_xscale("log", base=2)
    ax.set_xlabel(f"{figure.axis} scale (1 = the preset chip)")
    ref = points[0].cell
    ax.set_ylabel(f"throughput ({ref.method}, {ref.chip}, x1 = 1)")
    ax.set_title(figure.title)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    write_atomic(path, lambda f: fig.savefig(f, format="png"), mode="wb")
    plt.close(fig)
