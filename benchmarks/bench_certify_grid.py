"""Certified gaps on the paper's Figure 17 grid, whole models, shared-noc with bsp occupancy.

For each configuration (model x batch x KV length x cost model) it builds the whole-model
instance, times Elk-Full alone, then runs `elk-opt certify` (the API's `certify`) with one
wall-clock budget and records: the best plan and the method that found it, the best bound and
its name, the certified gap, certify's wall time, and Elk-Full's own gap to that bound (what the
paper's "94.84% of Ideal" stands for). Each finished configuration is saved at once under
`DIR/cells/` with its certificate (gzipped), so a stopped run resumes; the table is written to
`DIR/certify_grid.md` and `.csv`. With `--continue`, each configuration already in DIR is
certified again from its saved certificate for another budget (`certify` continuing it: never
worse), so a folder run again and again keeps every configuration's best certificate; the row
then counts the runs and their total time. `--start PLAN` (one configuration only) offers a
plan from elsewhere as one more start (`elk-opt certify --start`); the certificate's phases
name it.

    python benchmarks/bench_certify_grid.py -o DIR [--time-limit 120] [--threads 2]
        [--models llama2-13b,...] [--batches 16,32,64] [--kv 2048,4096]
        [--cost-models elk-paper,analytic] [--continue] [--start PLAN]
"""

from __future__ import annotations

import argparse
import csv
import os
import platform
import statistics
import time
from pathlib import Path

from elk_opt.api import certify, solve
from elk_opt.certification.certificate import read_plan_or_certificate
from elk_opt.files import save_json
from elk_opt.frontend.chips import DEFAULT_CHIP
from elk_opt.frontend.zoo import model_instance
from elk_opt.io import save_plan
from elk_opt.json_input import read_json
from elk_opt.problem import Instance, Plan
from elk_opt.solution import SolveOptions
from elk_opt.studies.paper import BATCHES, KV_LENS, MODELS

FIELDS = ("model", "batch", "kv", "cost_model", "ops", "plan_ns", "plan_method", "bound_ns",
          "bound_name", "bound_order", "gap", "elk_full_ns", "elk_full_gap", "certify_s",
          "budget_s", "runs")


def _csv_list(text: str, kind: type = str) -> list:
    return [kind(x) for x in text.split(",") if x]


def run_cell(model: str, batch: int, kv: int, cost_model: str, budget: float,
             threads: int, cells: Path, again: bool = False,
             starts: tuple[Plan, ...] = ()) -> dict:
    key = f"{model}-b{batch}-kv{kv}-{cost_model}"
    done = cells / f"{key}.json"
    saved = cells / f"{key}.cert.json.gz"
    before = read_json(done) if done.exists() else None
    if before is not None and not again:
        return before
    if before is None:
        instance = model_instance(model, DEFAULT_CHIP, batch=batch, kv_len=kv,
                                  cost_model=cost_model, noc_occupancy="bsp")
        elk_full = solve(instance, "elk-full", SolveOptions(timing="shared-noc"))
        save_plan(cells / f"{key}.elk-full.plan.json.gz", elk_full)
        elk_full_ns, ops = elk_full.claims.makespan_ns, len(instance.ops)
        source: Instance | dict = instance
    else:
        source = read_json(saved)
        elk_full_ns, ops = before["elk_full_ns"], before["ops"]
    started = time.perf_counter()
    cert = certify(source, timing="shared-noc", time_limit_s=budget, threads=threads,
                   starts=starts)
    wall = time.perf_counter() - started
    best = max((b for b in cert["bounds"] if b["ns"] is not None), key=lambda b: b["ns"])
    row = {"model": model, "batch": batch, "kv": kv, "cost_model": cost_model,
           "ops": ops, "plan_ns": cert["makespan_ns"],
           "plan_method": cert["plan"]["claims"]["method"], "bound_ns": cert["lower_bound_ns"],
           "bound_name": best["name"], "bound_order": best["exec_order"], "gap": cert["gap"],
           "elk_full_ns": elk_full_ns,
           "elk_full_gap": elk_full_ns / cert["lower_bound_ns"] - 1,
           "certify_s": round(wall + (before["certify_s"] if before else 0.0), 1),
           "budget_s": budget, "runs": 1 + (before.get("runs", 1) if before else 0)}
    save_json(saved, cert)  # each written whole or not at all: a stopped run resumes
    save_json(done, row)
    return row


def table(rows: list[dict]) -> str:
    head = ("| model | batch | KV | cost model | ops | best plan (ms) | found by | best bound "
            "(ms) | bound | gap | Elk-Full (ms) | Elk-Full gap | certify (s) |")
    lines = [head, "|" + " --- |" * 13]
    for r in rows:
        lines.append(
            f"| {r['model']} | {r['batch']} | {r['kv']} | {r['cost_model']} | {r['ops']} | "
            f"{r['plan_ns'] / 1e6:.3f} | {r['plan_method']} | {r['bound_ns'] / 1e6:.3f} | "
            f"{r['bound_name']} ({r['bound_order']}) | {100 * r['gap']:.2f}% | "
            f"{r['elk_full_ns'] / 1e6:.3f} | {100 * r['elk_full_gap']:.2f}% | "
            f"{r['certify_s']:.0f}" + (f" ({r['runs']} runs)" if r.get("runs", 1) > 1 else "")
            + " |")
    for cost_model in dict.fromkeys(r["cost_model"] for r in rows):
        lines += ["", summary([r for r in rows if r["cost_model"] == cost_model])]
    return "\n".join(lines)


def summary(rows: list[dict]) -> str:
    """One cost model's line: the certified gaps against the issue's targets, and Elk-Full's."""
    gaps = [r["gap"] for r in rows]
    ef = [r["elk_full_gap"] for r in rows]
    return (f"{rows[0]['cost_model']}: {len(rows)} configurations; certified gap median "
            f"{100 * statistics.median(gaps):.2f}%, worst {100 * max(gaps):.2f}%, "
            f"{sum(g <= 0.01 for g in gaps)} within 1%, {sum(g <= 0.005 for g in gaps)} within "
            f"0.5%; Elk-Full's gap to the best bound median {100 * statistics.median(ef):.2f}%, "
            f"worst {100 * max(ef):.2f}%")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-o", "--output", required=True, type=Path)
    p.add_argument("--time-limit", type=float, default=120.0)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--batches", default=",".join(map(str, BATCHES)))
    p.add_argument("--kv", default=",".join(map(str, KV_LENS)))
    p.add_argument("--cost-models", default="elk-paper,analytic")
    p.add_argument("--continue", dest="again", action="store_true",
                   help="certify the configurations already in DIR again, from their saved "
                        "certificates, for another budget")
    p.add_argument("--start", type=Path, default=None,
                   help="a plan (or certificate) of the one configuration chosen, offered as "
                        "one more start")
    args = p.parse_args()
    starts: tuple[Plan, ...] = ()
    if args.start is not None:
        chosen = [_csv_list(x) for x in (args.cost_models, args.models, args.batches, args.kv)]
        if any(len(c) != 1 for c in chosen):
            p.error("--start takes one configuration: one model, batch, KV and cost model")
        starts = (read_plan_or_certificate(str(args.start))[0],)
    cells = args.output / "cells"
    cells.mkdir(parents=True, exist_ok=True)
    rows = []
    for cost_model in _csv_list(args.cost_models):
        for model in _csv_list(args.models):
            for batch in _csv_list(args.batches, int):
                for kv in _csv_list(args.kv, int):
                    row = run_cell(model, batch, kv, cost_model, args.time_limit, args.threads,
                                   cells, args.again, starts)
                    print(f"{model} b{batch} kv{kv} {cost_model}: plan {row['plan_ns']:,} "
                          f"({row['plan_method']}), bound {row['bound_ns']:,} "
                          f"({row['bound_name']}), gap {100 * row['gap']:.2f}%, "
                          f"Elk-Full {100 * row['elk_full_gap']:.2f}%, {row['certify_s']} s",
                          flush=True)
                    rows.append(row)
    with open(args.output / "certify_grid.csv", "w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=FIELDS)
        writer.writeheader()
        writer.writerows(rows)
    text = table(rows)
    budgets = ", ".join(f"{b:g}" for b in sorted({r["budget_s"] for r in rows}))
    (args.output / "certify_grid.md").write_text(
        f"Machine: {platform.machine()}, {os.cpu_count()} cores; the rows' last budgets: "
        f"{budgets} s per configuration (certify (s): the total over a row's runs)\n\n"
        f"{text}\n")
    print(text)


if __name__ == "__main__":
    main()
