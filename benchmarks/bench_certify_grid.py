"""Certified gaps on the paper's Figure 17 grid, whole models, shared-noc with bsp occupancy.

For each configuration (model x batch x KV length x cost model) it builds the whole-model
instance, times Elk-Full alone, then runs `elk-opt certify` (the API's `certify`) with one
wall-clock budget and records: the best plan and the method that found it, the best bound and
its name, the certified gap, certify's wall time, and Elk-Full's own gap to that bound (what the
paper's "94.84% of Ideal" stands for). Each finished configuration is saved at once under
`DIR/cells/` with its certificate (gzipped), so a stopped run resumes; the table is written to
`DIR/certify_grid.md` and `.csv`.

    python benchmarks/bench_certify_grid.py -o DIR [--time-limit 120] [--threads 2]
        [--models llama2-13b,...] [--batches 16,32,64] [--kv 2048,4096]
        [--cost-models elk-paper,analytic]
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import os
import platform
import statistics
import time
from pathlib import Path

from elk_opt.api import certify, solve
from elk_opt.frontend.chips import DEFAULT_CHIP
from elk_opt.frontend.zoo import model_instance
from elk_opt.io import plan_to_dict
from elk_opt.solution import SolveOptions
from elk_opt.studies.paper import BATCHES, KV_LENS, MODELS

FIELDS = ("model", "batch", "kv", "cost_model", "ops", "plan_ns", "plan_method", "bound_ns",
          "bound_name", "bound_order", "gap", "elk_full_ns", "elk_full_gap", "certify_s",
          "budget_s")


def _csv_list(text: str, kind: type = str) -> list:
    return [kind(x) for x in text.split(",") if x]


def run_cell(model: str, batch: int, kv: int, cost_model: str, budget: float,
             threads: int, cells: Path) -> dict:
    key = f"{model}-b{batch}-kv{kv}-{cost_model}"
    done = cells / f"{key}.json"
    if done.exists():
        return json.loads(done.read_text())
    instance = model_instance(model, DEFAULT_CHIP, batch=batch, kv_len=kv, cost_model=cost_model,
                              noc_occupancy="bsp")
    elk_full = solve(instance, "elk-full", SolveOptions(timing="shared-noc"))
    started = time.perf_counter()
    cert = certify(instance, timing="shared-noc", time_limit_s=budget, threads=threads)
    wall = time.perf_counter() - started
    best = max((b for b in cert["bounds"] if b["ns"] is not None), key=lambda b: b["ns"])
    row = {"model": model, "batch": batch, "kv": kv, "cost_model": cost_model,
           "ops": len(instance.ops), "plan_ns": cert["makespan_ns"],
           "plan_method": cert["plan"]["claims"]["method"], "bound_ns": cert["lower_bound_ns"],
           "bound_name": best["name"], "bound_order": best["exec_order"], "gap": cert["gap"],
           "elk_full_ns": elk_full.claims.makespan_ns,
           "elk_full_gap": elk_full.claims.makespan_ns / cert["lower_bound_ns"] - 1,
           "certify_s": round(wall, 1), "budget_s": budget}
    with gzip.open(cells / f"{key}.cert.json.gz", "wt") as out:
        json.dump(cert, out)
    with gzip.open(cells / f"{key}.elk-full.plan.json.gz", "wt") as out:
        json.dump(plan_to_dict(elk_full), out)
    tmp = done.with_suffix(".tmp")
    tmp.write_text(json.dumps(row))
    os.replace(tmp, done)
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
            f"{r['certify_s']:.0f} |")
    gaps = [r["gap"] for r in rows]
    ef = [r["elk_full_gap"] for r in rows]
    lines.append("")
    lines.append(f"{len(rows)} configurations; certified gap median "
                 f"{100 * statistics.median(gaps):.2f}%, worst {100 * max(gaps):.2f}%; "
                 f"Elk-Full's gap to the best bound median "
                 f"{100 * statistics.median(ef):.2f}%, worst {100 * max(ef):.2f}%")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-o", "--output", required=True, type=Path)
    p.add_argument("--time-limit", type=float, default=120.0)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--batches", default=",".join(map(str, BATCHES)))
    p.add_argument("--kv", default=",".join(map(str, KV_LENS)))
    p.add_argument("--cost-models", default="elk-paper,analytic")
    args = p.parse_args()
    cells = args.output / "cells"
    cells.mkdir(parents=True, exist_ok=True)
    rows = []
    for cost_model in _csv_list(args.cost_models):
        for model in _csv_list(args.models):
            for batch in _csv_list(args.batches, int):
                for kv in _csv_list(args.kv, int):
                    row = run_cell(model, batch, kv, cost_model, args.time_limit, args.threads,
                                   cells)
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
    (args.output / "certify_grid.md").write_text(
        f"Machine: {platform.machine()}, {os.cpu_count()} cores; budget {args.time_limit:g} s "
        f"per configuration, {args.threads} threads\n\n{text}\n")
    print(text)


if __name__ == "__main__":
    main()
