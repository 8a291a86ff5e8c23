"""`elk-opt reproduce -o DIR [--quick]`: the paper's Figures 17-18 beside ours."""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from elk_opt.commands.flags import (
    add_cold,
    add_exec_order,
    add_executor,
    add_quiet,
    default_methods_in_order,
    output_dir,
    positive_float,
    positive_int,
    thread_count,
)
from elk_opt.errors import UsageError
from elk_opt.studies import paper
from elk_opt.studies.executors import EXECUTORS
from elk_opt.studies.reproduce import COST_MODELS, DEFAULT_METHODS, QUICK, SETTINGS, Grid


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "reproduce", help="the paper's Figures 17-18 grid, with its published figures beside",
        description="Run every method on the paper's Figure 17 grid (Llama2-13B, Gemma2-27B, "
                    "OPT-30B, Llama2-70B; batch 16/32/64; KV 2048/4096) under each cost model "
                    "and setting (" + ", ".join(SETTINGS) + "), verify and simulate every "
                    "plan, solve few-layer slices exactly, and write fig17.csv, fig18.csv, "
                    "exact.csv, reproduction.md, fig17.png and fig18.png with the paper's "
                    "figures beside ours, and keep every plan, gzipped, under DIR/plans/ "
                    "(`verify DIR` re-checks them). Re-running resumes.")
    p.add_argument("-o", "--output", required=True, type=output_dir, metavar="DIR")
    p.add_argument("--quick", action="store_true",
                   help="Llama2-13B, batch 32, KV 2048, 2 layers, every setting, a 1-layer "
                        "exact slice, 10 s per exact solve (the options below override)")
    p.add_argument("--models", help=f"comma-separated (default {','.join(paper.MODELS)})")
    p.add_argument("--batches", help="comma-separated (default 16,32,64)")
    p.add_argument("--kv", help="comma-separated KV lengths (default 2048,4096)")
    p.add_argument("--layers", type=positive_int, default=None,
                   help="first N decoder layers of each model (default: the whole model)")
    p.add_argument("--settings", help=f"comma-separated (default {','.join(SETTINGS)})")
    p.add_argument("--cost-models", help=f"comma-separated (default {','.join(COST_MODELS)})")
    p.add_argument("--methods", help=f"comma-separated (default {','.join(DEFAULT_METHODS)})")
    p.add_argument("--exact-layers",
                   help="slice sizes solved exactly, comma-separated, or 'none' (default 1,2)")
    p.add_argument("--exact-methods", help="comma-separated (default cpsat)")
    p.add_argument("--time-limit", type=positive_float, default=None, metavar="S",
                   help="per exact solve (default 30; 10 with --quick); resuming with a "
                        "longer one re-runs the exact cells that ran out of time")
    p.add_argument("--threads", type=thread_count, default=None,
                   help="per exact solve (default 1)")
    p.add_argument("--chip", default=None, help="chip preset or TOML file (default "
                                                "ipu-pod4-hbm3e)")
    add_exec_order(p, study=True)
    add_cold(p)
    add_executor(p, EXECUTORS)
    add_quiet(p)
    p.set_defaults(func=run)


def _words(text: str) -> tuple[str, ...]:
    return tuple(w.strip() for w in text.split(",") if w.strip())


def _ints(text: str, option: str) -> tuple[int, ...]:
    try:
        return tuple(int(w) for w in _words(text))
    except ValueError:
        raise UsageError(f"{option}: not a comma-separated list of integers: {text!r}") from None


def grid_from_args(args: argparse.Namespace) -> Grid:
    grid = QUICK if args.quick else Grid()
    changes: dict[str, object] = {}
    for option, field in (("models", "models"), ("settings", "settings"),
                          ("cost_models", "cost_models"), ("methods", "methods"),
                          ("exact_methods", "exact_methods")):
        if getattr(args, option):
            changes[field] = _words(getattr(args, option))
    if args.batches:
        changes["batches"] = _ints(args.batches, "--batches")
    if args.kv:
        changes["kv_lens"] = _ints(args.kv, "--kv")
    if args.exact_layers:
        changes["exact_layers"] = (() if args.exact_layers.strip() == "none"
                                   else _ints(args.exact_layers, "--exact-layers"))
    for option in ("layers", "threads", "chip"):
        if getattr(args, option) is not None:
            changes[option] = getattr(args, option)
    if args.time_limit is not None:
        changes["time_limit_s"] = args.time_limit
    if args.cold:
        changes["cold"] = True
    if args.exec_order is not None:
        changes["exec_order"] = args.exec_order
        for option, field in (("methods", "methods"), ("exact_methods", "exact_methods")):
            if not getattr(args, option):  # a default list drops what cannot solve in it
                listed = changes.get(field, getattr(grid, field))
                changes[field] = tuple(default_methods_in_order(listed, args.exec_order))
    grid = replace(grid, **changes)
    grid.validate()
    return grid


def run(args: argparse.Namespace) -> int:
    from elk_opt.studies.reproduce import run_reproduction
    from elk_opt.studies.reproduce_plots import write_plots
    from elk_opt.studies.reproduce_report import problems, write_report

    grid = grid_from_args(args)
    out = Path(args.output)
    figure, exact = run_reproduction(grid, out, executor=args.executor, workers=args.workers,
                                     address=args.address, progress=not args.quiet)
    table = write_report(figure, exact, out)
    write_plots(figure, out)
    print(f"{len(figure)} figure cells, {len(exact)} exact-slice cells -> {out}/fig17.csv, "
          "fig18.csv, exact.csv, reproduction.md, fig17.png, fig18.png, plans/")
    print(table)
    found = problems(figure, exact)
    for line in found:
        print(f"PROBLEM: {line}")
    return 1 if found else 0
