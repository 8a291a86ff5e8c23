"""Lower bounds: memory of the Ideal at training scale, and what each bound proves under 5b.

PYTHONPATH=. python benchmarks/bench_bounds.py [--sizes 20000,100000]
                                              [--dense-sizes 2000,5000] [--repeats 3]
PYTHONPATH=. python benchmarks/bench_bounds.py --table
PYTHONPATH=. python benchmarks/bench_bounds.py --scale [--baseline OTHER_CHECKOUT]
PYTHONPATH=. python benchmarks/bench_bounds.py --settings [--limit 10]
PYTHONPATH=. python benchmarks/bench_bounds.py --sram
PYTHONPATH=. python benchmarks/bench_bounds.py --slices INSTANCE.json -o DIR [--limit 90]
PYTHONPATH=. python benchmarks/bench_bounds.py --budget 20 --instances A.json,B.json --baseline BASE

Memory: synthetic decoder instances (elk_opt.frontend.synthetic, 4 plans per op). Peak memory is
tracemalloc's peak during the call (numpy's buffers included), above what the instance
already holds; times are medians. The baseline, in the same run, is the first implementation
of the Ideal (an n x n descendant matrix, kept as tests.test_bounds.dense_ideal), at sizes
where it still fits.

--table: every cheap bound and the fluid LP under both timings, on the Elk artifact's layer,
synthetic decoders and full zoo models, against the best heuristic plan under shared-noc (the
baseline: a bound can only be compared with plans).

--scale: the issue-17 instances (default chip, elk-paper cost model, bsp occupancy, 5b) and the
Elk artifact's layer: every bound of `elk-opt bound` (the LP relaxation aside), value and wall
time, before (the `elk-opt bound` of the checkout given by --baseline, run in a subprocess on
the same instance in the same run) and after (this checkout), against Elk-Full's 5b plan.
One thread per solver.

--settings: which CP-SAT parameters raise a layer window's bound (elk_opt.bounds.layers,
free time origin) within --limit seconds: the default portfolio against linearization level 2,
the LP-based tree search, and LP-heavy worker pairs, on one Llama2-70B layer (elk-paper, bsp)
under 5b and one synthetic decoder layer under both timings. The bound is CP-SAT's
best_objective_bound when it stops.

--sram: the fluid LP against the fluid LP with SRAM (elk_opt.bounds.fluid_sram) on synthetic
decoders (96 ops, 5 plans) where SRAM binds, under both timings, against Elk-Full's plan.

--slices: which side of a whole model's gap is loose (issue 17). Slices of 1, 2 and 3
consecutive middle decoder layers (from the middle layer window on, as instances of their own:
elk_opt.bounds.window.window_instance) are written to DIR; on each, through the CLI with one
thread: Elk-Full, polish warm-started from Elk-Full (--limit s), CP-SAT warm-started from
polish (--limit s plus 60), and `elk-opt bound` (--layers-time 20). The table gives the best
plan and best bound per slice, their differences from one slice to the next (what one more
layer costs, the start-up and the tail cancelled), and the whole model's Elk-Full span per
middle layer, which the slices' marginal costs are to be read against.

--budget: the solver-backed bounds of `elk-opt certify` under one time budget
(`lower_bounds(instance, threads=1, time_budget_s=...)`, as certify's bound round calls it),
this tree against the checkout given by --baseline, each in a fresh process (imports paid, as
in certify's worker), alternating baseline and this tree per instance: each row's value, its
per-window time limit and status.
"""

from __future__ import annotations

import argparse
import statistics
import time
import tracemalloc
from collections.abc import Callable
from functools import partial

from elk_opt.bounds.ideal import ideal_bound
from elk_opt.frontend.synthetic import synthetic_instance
from elk_opt.methods import solve
from tests.test_bounds import dense_ideal


def measure(call: Callable[[], object], repeats: int) -> tuple[float, float]:
    """(median seconds, peak MiB) of `call`."""
    call()  # warm the instance's cached lookups, as a method's second call would find them
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    tracemalloc.start()
    call()
    _now, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return statistics.median(times), peak / 2**20


def table() -> None:
    from pathlib import Path

    from elk_opt.bounds.cheap import cheap_bounds
    from elk_opt.bounds.fluid import fluid_bound
    from elk_opt.frontend.zoo import DEFAULT_CHIP, model_instance
    from elk_opt.io import load_instance
    from elk_opt.methods import heuristics
    from elk_opt.solution import SolveOptions

    data = Path(__file__).parent.parent / "tests" / "data"
    cases = {
        "Elk artifact Llama2-13B layer (48 ops)": partial(
            load_instance, data / "elk-artifact-llama2-13b-b32-kv2048-layer.json"),
        "synthetic 48 ops, tightness 0.6": partial(synthetic_instance, 48, 4, 0, 0.6),
        "synthetic 400 ops": partial(synthetic_instance, 400, 4, 0),
        "llama2-13b decode (723 ops)": partial(model_instance, "llama2-13b", DEFAULT_CHIP),
        "llama2-70b decode (1,443 ops)": partial(model_instance, "llama2-70b", DEFAULT_CHIP),
    }
    print("| instance | best 5b heuristic | section-5 best bound | ideal | hbm-cut | port-cut "
          "| fluid 5b | fluid 5b s | 5b bound / heuristic |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for label, build in cases.items():
        instance = build()
        best = min(solve(instance, m, SolveOptions(timing="shared-noc")).claims.makespan_ns
                   for m in heuristics())
        cheap = cheap_bounds(instance, "shared-noc")
        separate = max(max(cheap_bounds(instance, "separate-noc").values()),
                       fluid_bound(instance, "separate-noc").bound_ns)
        fluid = fluid_bound(instance, "shared-noc")
        bound = max(max(cheap.values()), fluid.bound_ns)
        print(f"| {label} | {best:,} | {separate:,} | {cheap['ideal']:,} | "
              f"{cheap['hbm-cut']:,} | {cheap['port-cut']:,} | {fluid.bound_ns:,} | "
              f"{fluid.wall_s:.2f} | {bound / best:.3f} |", flush=True)


SCALE = {  # name: (model, batch, kv_len)
    "opt-30b b16 kv2048": ("opt-30b", 16, 2048),
    "gemma2-27b b64 kv4096": ("gemma2-27b", 64, 4096),
    "llama2-70b b64 kv4096": ("llama2-70b", 64, 4096),
}


def scale(baseline: str | None) -> None:
    import json
    import os
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    from elk_opt.bounds.run_all import lower_bounds
    from elk_opt.frontend.zoo import DEFAULT_CHIP, model_instance
    from elk_opt.io import load_instance, save_instance
    from elk_opt.solution import SolveOptions

    data = Path(__file__).parent.parent / "tests" / "data"
    cases = {"Elk artifact Llama2-13B layer": partial(
        load_instance, data / "elk-artifact-llama2-13b-b32-kv2048-layer.json")}
    for label, (model, batch, kv) in SCALE.items():
        cases[label] = partial(model_instance, model, DEFAULT_CHIP, batch=batch, kv_len=kv,
                               cost_model="elk-paper", noc_occupancy="bsp")
    print("| instance | ops | Elk-Full 5b ns | bound | before ns | before s | after ns | "
          "after s | Elk-Full / after - 1 |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for label, build in cases.items():
        instance = build()
        plan = solve(instance, "elk-full", SolveOptions(timing="shared-noc"))
        makespan = plan.claims.makespan_ns
        before: dict[str, dict] = {}
        if baseline:
            with tempfile.TemporaryDirectory() as tmp:
                path, out = Path(tmp) / "i.json", Path(tmp) / "b.json"
                save_instance(path, instance)
                # run in the baseline's directory: `python -m` puts the cwd first on the path
                subprocess.run([sys.executable, "-m", "elk_opt.cli", "bound", str(path),
                                "--lp-max-ops", "0", "--threads", "1", "-q", "-o", str(out)],
                               check=True, cwd=baseline, stdout=subprocess.DEVNULL,
                               env={**os.environ, "PYTHONPATH": baseline})
                before = {r["bound"]: r for r in json.loads(out.read_text())["bounds"]}
        after = {r["bound"]: r for r in lower_bounds(instance, lp_max_ops=0,
                                                     threads=1)["bounds"]}
        rows = list(before) + [name for name in after if name not in before]
        for name in rows + ["best"]:
            cells = []
            for report in (before, after):
                if name == "best":
                    ns = max((r["ns"] or 0 for r in report.values()), default=None)
                    cells += [f"{ns:,}" if report else "-", ""]
                    continue
                r = report.get(name)
                cells += [f"{r['ns']:,}" if r and r["ns"] is not None else "-",
                          f"{r['wall_s']:.1f}" if r else "-"]
            ns_after = (max(r["ns"] or 0 for r in after.values()) if name == "best"
                        else (after.get(name) or {}).get("ns"))
            gap = f"{makespan / ns_after - 1:.2%}" if ns_after else "-"
            print(f"| {label} | {len(instance.ops):,} | {makespan:,} | {name} | "
                  + " | ".join(cells) + f" | {gap} |", flush=True)


SETTINGS = {  # name: SatParameters fields
    "default, 2 workers": {"num_workers": 2},
    "linearization 2, 2 workers": {"num_workers": 2, "linearization_level": 2},
    "lb_tree_search, 1 worker (layers.py, --threads 1)": {
        "num_workers": 1, "optimize_with_lb_tree_search": True, "linearization_level": 2},
    "lb_tree_search + max_lp (layers.py, --threads 2)": {
        "num_workers": 2, "subsolvers": ["lb_tree_search", "max_lp"], "linearization_level": 2},
    "default_lp + max_lp (cpsat's 5b workers)": {
        "num_workers": 2, "subsolvers": ["default_lp", "max_lp"]},
    "objective_shaving + max_lp": {
        "num_workers": 2, "subsolvers": ["objective_shaving", "max_lp"]},
}


def settings(limit: float) -> None:
    from ortools.sat.python import cp_model

    from elk_opt.bounds.window import window_instance
    from elk_opt.frontend.zoo import DEFAULT_CHIP, model_instance
    from formulations.common import Restrictions
    from formulations.cpsat_model import build

    llama = model_instance("llama2-70b", DEFAULT_CHIP, batch=64, kv_len=4096, layers=3,
                           cost_model="elk-paper", noc_occupancy="bsp")
    first = next(i for i, op in enumerate(llama.ops) if op.layer == 1)
    synthetic = synthetic_instance(36, 2, 3, 0.3)
    cases = {"Llama2-70B b64 kv4096 layer, 5b": (window_instance(llama, first, first + 18),
                                                   "shared-noc"),
             "synthetic layer (12 ops, 2 plans), section 5": (
                 window_instance(synthetic, 12, 24), "separate-noc"),
             "synthetic layer (12 ops, 2 plans), 5b": (window_instance(synthetic, 12, 24),
                                                      "shared-noc")}
    print("| window | CP-SAT settings | status | bound ns | s |")
    print("| --- | --- | --- | --- | --- |")
    for label, (window, timing) in cases.items():
        for name, fields in SETTINGS.items():
            cm = build(window, Restrictions(), timing=timing)
            cm.model.minimize(cm.exec_end[-1] - cm.exec_start[0])
            solver = cp_model.CpSolver()
            solver.parameters.max_time_in_seconds = limit
            for key, value in fields.items():
                if key == "subsolvers":
                    solver.parameters.subsolvers.extend(value)
                else:
                    setattr(solver.parameters, key, value)
            started = time.perf_counter()
            status = solver.solve(cm.model)
            print(f"| {label} | {name} | {solver.status_name(status).lower()} | "
                  f"{solver.best_objective_bound:,.0f} | {time.perf_counter() - started:.1f} |",
                  flush=True)


def sram() -> None:
    from elk_opt.bounds.fluid import fluid_bound
    from elk_opt.bounds.fluid_sram import fluid_sram_bound
    from elk_opt.solution import SolveOptions

    print("| seed | tightness | timing | Elk-Full ns | fluid ns | fluid-sram ns | fluid s | "
          "fluid-sram s | Elk-Full / fluid - 1 | Elk-Full / fluid-sram - 1 |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for seed in (0, 1):
        for tightness in (0.6, 1.0):
            instance = synthetic_instance(96, 5, seed, tightness)
            for timing in ("separate-noc", "shared-noc"):
                plan = solve(instance, "elk-full", SolveOptions(timing=timing))
                best = plan.claims.makespan_ns
                fluid = fluid_bound(instance, timing)
                with_sram = fluid_sram_bound(instance, timing)
                print(f"| {seed} | {tightness} | {timing} | {best:,} | {fluid.bound_ns:,} | "
                      f"{with_sram.bound_ns:,} | {fluid.wall_s:.2f} | {with_sram.wall_s:.2f} | "
                      f"{best / fluid.bound_ns - 1:.2%} | {best / with_sram.bound_ns - 1:.2%} |",
                      flush=True)


def slices(path: str, out: str, limit: float) -> None:
    import json
    import subprocess
    from pathlib import Path

    from elk_opt.bounds.layers import layer_windows
    from elk_opt.bounds.window import window_instance
    from elk_opt.evaluate import evaluate_plan
    from elk_opt.io import load_instance, load_plan, save_instance

    whole = load_instance(path)
    windows = layer_windows(whole)
    mid = len(windows) // 2
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)

    def run(*argv: str) -> None:
        subprocess.run(["elk-opt", *argv, "-q", "--threads", "1"], check=True,
                       stdout=subprocess.DEVNULL)

    plan = folder / "whole.elk-full.json"
    if not plan.exists():
        run("solve", path, "--method", "elk-full", "-o", str(plan))
    schedule = evaluate_plan(load_plan(plan))
    a, b = windows[mid][0], windows[mid + 1][0]
    print(f"whole model: Elk-Full {schedule.makespan_ns:,} ns, span of layer window {mid} "
          f"(E<{a}> start to E<{b}> start) {schedule.exec_start[b] - schedule.exec_start[a]:,} ns")
    print("| layers | ops | Elk-Full ns | polish ns | CP-SAT ns (its bound) | best plan ns | "
          "best bound ns (which) | gap | plan - previous | bound - previous |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    previous = None
    for k in (1, 2, 3):
        start, stop = windows[mid][0], windows[mid + k - 1][1]
        sliced = folder / f"slice{k}.json"
        save_instance(sliced, window_instance(whole, start, stop))
        found = {}
        for method, extra in (("elk-full", ()), ("polish", ("--warm-start", "elk-full",
                                                             "--time-limit", f"{limit:g}")),
                              ("cpsat", ("--warm-start", "polish",
                                         "--time-limit", f"{limit + 60:g}"))):
            target = folder / f"slice{k}.{method}.json"
            if not target.exists():
                run("solve", str(sliced), "--method", method, *extra, "-o", str(target))
            found[method] = load_plan(target).claims
        bounds = folder / f"slice{k}.bounds.json"
        if not bounds.exists():
            run("bound", str(sliced), "--layers-time", "20", "-o", str(bounds))
        best_bound = json.loads(bounds.read_text())["best"]
        plan_ns = min(c.makespan_ns for c in found.values())
        bound_ns = max(best_bound["ns"], found["cpsat"].lower_bound_ns or 0)
        which = best_bound["bound"] if best_bound["ns"] >= bound_ns else "cpsat"
        steps = ("-", "-") if previous is None else (f"{plan_ns - previous[0]:,}",
                                                     f"{bound_ns - previous[1]:,}")
        print(f"| {k} | {stop - start} | {found['elk-full'].makespan_ns:,} | "
              f"{found['polish'].makespan_ns:,} | {found['cpsat'].makespan_ns:,} "
              f"({found['cpsat'].lower_bound_ns:,}) | {plan_ns:,} | {bound_ns:,} ({which}) | "
              f"{plan_ns / bound_ns - 1:.2%} | {steps[0]} | {steps[1]} |", flush=True)
        previous = (plan_ns, bound_ns)


_BUDGET_RUN = """
import json, sys, time
from elk_opt.bounds.run_all import lower_bounds
from elk_opt.io import load_instance
instance = load_instance(sys.argv[1])
started = time.perf_counter()
report = lower_bounds(instance, threads=1, time_budget_s=float(sys.argv[2]))
print(json.dumps({"rows": report["bounds"], "best": report["best"],
                  "wall_s": time.perf_counter() - started}))
"""


def budget(seconds: float, instances: str, baseline: str) -> None:
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    print("| instance | tree | row | ns | per-window limit s | status | wall s |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    here = str(Path(__file__).resolve().parent.parent)
    for path in instances.split(","):
        for tree, root in (("baseline", baseline), ("this", here)):
            env = {**os.environ, "PYTHONPATH": root}
            # run in the tree (`python -c` puts the working directory first on sys.path)
            done = subprocess.run([sys.executable, "-c", _BUDGET_RUN,
                                   str(Path(path).resolve()), str(seconds)],
                                  env=env, cwd=root, capture_output=True, text=True,
                                  check=True)
            report = json.loads(done.stdout)
            for row in report["rows"]:
                if row["bound"] in ("ideal", "hbm-cut", "port-total", "port-cut"):
                    continue
                ns = f"{row['ns']:,}" if row["ns"] is not None else "-"
                print(f"| {Path(path).stem} | {tree} | {row['bound']} | {ns} | "
                      f"{row['params'].get('time_limit_s', '-')} | {row['status']} | "
                      f"{row['wall_s']:.1f} |", flush=True)
            best = report["best"]
            print(f"| {Path(path).stem} | {tree} | best: {best['bound']} | {best['ns']:,} | | | "
                  f"{report['wall_s']:.1f} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="20000,100000")
    ap.add_argument("--dense-sizes", default="2000,5000")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--table", action="store_true")
    ap.add_argument("--scale", action="store_true")
    ap.add_argument("--settings", action="store_true")
    ap.add_argument("--sram", action="store_true")
    ap.add_argument("--slices", metavar="INSTANCE", help="a whole model's instance JSON")
    ap.add_argument("-o", "--out", help="--slices: folder for the slices and their plans")
    ap.add_argument("--budget", type=float, help="seconds for the solver-backed bounds")
    ap.add_argument("--instances", help="--budget: instance JSON files, comma-separated")
    ap.add_argument("--limit", type=float, default=None,
                    help="--settings: seconds per solve (10); --slices: polish's (90)")
    ap.add_argument("--baseline", help="--scale, --budget: a checkout whose bounds are the "
                                       "baseline (e.g. the main branch's worktree)")
    args = ap.parse_args()
    if args.table:
        table()
        return
    if args.scale:
        scale(args.baseline)
        return
    if args.settings:
        settings(args.limit or 10.0)
        return
    if args.budget is not None:
        budget(args.budget, args.instances, args.baseline)
        return
    if args.slices:
        slices(args.slices, args.out or "slices", args.limit or 90.0)
        return
    if args.sram:
        sram()
        return
    print("| ops | what | median s | peak MiB |")
    print("| --- | --- | --- | --- |")
    dense = [int(x) for x in args.dense_sizes.split(",") if x]
    sizes = [int(x) for x in args.sizes.split(",") if x]
    for n in sorted(set(dense) | set(sizes)):
        instance = synthetic_instance(ops=n, plans=4, seed=0)
        rows = [("ideal_bound", partial(ideal_bound, instance))]
        if n in dense:
            assert dense_ideal(instance) == ideal_bound(instance)
            rows.append(("dense reference (baseline)", partial(dense_ideal, instance)))
        if n in sizes:
            rows.append(("solve basic (reports the bound)", partial(solve, instance, "basic")))
        for what, call in rows:
            seconds, mib = measure(call, args.repeats)
            print(f"| {n:,} | {what} | {seconds:.3f} | {mib:,.1f} |", flush=True)


if __name__ == "__main__":
    main()
