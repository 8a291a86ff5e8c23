"""Heuristics on full models: this tree against a baseline commit, in the same run.

    python benchmarks/bench_heuristics_against.py --baseline af578de [--ref HEAD] [--runs 1]
        [--methods elk-dyn,elk-full,elk-full-lp] [--models llama2-13b:32:2048,...]
        [--cost-model elk-paper] [--noc-occupancy bsp] [--timing shared-noc]

Each tree is exported as `bench_tests.export` does; every (model, method) runs in a fresh
process per tree, in that tree's folder (so its packages come first on the path, before an
editable install's), the trees alternating, baseline first, so both see the same load. The child
builds the zoo instance (decode, default chip), times `methods.solve` alone (wall and CPU of
the process) and prints the plan's makespan and a digest of its choices and program. Per
row: both makespans and the change, the median CPU time per tree and its ratio, and whether
both trees made the same plan (a change meant only to be faster must leave every plan as it
was). `--models all` is the Figure 17 grid (4 models x batch 16/32/64 x KV 2048/4096).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_tests import export  # noqa: E402  (the same export of a tree as the suite's bench)

GRID = [f"{m}:{b}:{kv}" for m in ("llama2-13b", "llama2-70b", "opt-30b", "gemma2-27b")
        for b in (16, 32, 64) for kv in (2048, 4096)]

CHILD = """
import hashlib, json, sys, time
from elk_opt.frontend.zoo import DEFAULT_CHIP, model_instance
from elk_opt.methods import solve
from elk_opt.solution import SolveOptions
model, batch, kv, cost_model, occupancy, method, timing = sys.argv[1:8]
instance = model_instance(model, DEFAULT_CHIP, batch=int(batch), kv_len=int(kv),
                          cost_model=cost_model, noc_occupancy=occupancy or None)
cpu0, wall0 = time.process_time(), time.perf_counter()
plan = solve(instance, method, SolveOptions(timing=timing))
wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
digest = hashlib.sha1(repr((plan.choice, plan.program, sorted(plan.release_ns.items())))
                      .encode()).hexdigest()[:12]
print(json.dumps({"wall": wall, "cpu": cpu, "ops": len(instance.ops),
                  "makespan": plan.claims.makespan_ns, "digest": digest}))
"""


def timed(tree: Path, model: str, method: str, args: argparse.Namespace) -> dict:
    name, batch, kv = model.split(":")
    done = subprocess.run([sys.executable, "-c", CHILD, name, batch, kv, args.cost_model,
                           args.noc_occupancy, method, args.timing],
                          env={**os.environ, "PYTHONPATH": str(tree)}, cwd=tree,
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", required=True, help="commit to compare against")
    ap.add_argument("--ref", default=None, help="commit to measure (default: the working tree)")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--methods", default="elk-dyn,elk-full,elk-full-lp")
    ap.add_argument("--models", default="llama2-13b:32:2048,llama2-70b:64:4096,"
                                        "gemma2-27b:64:4096",
                    help="model:batch:kv, comma-separated, or 'all' (the Figure 17 grid)")
    ap.add_argument("--cost-model", default="analytic")
    ap.add_argument("--noc-occupancy", default="", help="bytes or bsp (default: the model's)")
    ap.add_argument("--timing", default="shared-noc")
    args = ap.parse_args()
    models = GRID if args.models == "all" else args.models.split(",")
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python "
          f"{platform.python_version()}; {args.cost_model} costs, occupancy "
          f"{args.noc_occupancy or 'default'}, timing {args.timing}; {args.runs} run(s) per tree")
    print("\n| model | ops | method | baseline ns | this ns | change | baseline CPU s | "
          "this CPU s | CPU ratio | same plan |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|---|")
    ratios: dict[str, list[float]] = {}
    changes: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        base = export(args.baseline, Path(tmp) / "base")
        this = export(args.ref, Path(tmp) / "this")
        for model in models:
            for method in args.methods.split(","):
                runs: dict[str, list[dict]] = {"base": [], "this": []}
                for _ in range(args.runs):
                    runs["base"].append(timed(base, model, method, args))
                    runs["this"].append(timed(this, model, method, args))
                cpu = {k: statistics.median(r["cpu"] for r in v) for k, v in runs.items()}
                ns = {k: v[0]["makespan"] for k, v in runs.items()}
                same = len({r["digest"] for v in runs.values() for r in v}) == 1
                ratios.setdefault(method, []).append(cpu["this"] / cpu["base"])
                changes.setdefault(method, []).append(ns["this"] / ns["base"] - 1)
                print(f"| {model} | {runs['this'][0]['ops']} | {method} | {ns['base']:,} | "
                      f"{ns['this']:,} | {100 * changes[method][-1]:+.2f}% | "
                      f"{cpu['base']:.2f} | {cpu['this']:.2f} | {ratios[method][-1]:.2f} | "
                      f"{'yes' if same else 'no'} |", flush=True)
    for method in ratios:
        print(f"\n{method}: makespan change median {100 * statistics.median(changes[method]):+.2f}%"
              f", best {100 * min(changes[method]):+.2f}%, worst "
              f"{100 * max(changes[method]):+.2f}%; CPU ratio median "
              f"{statistics.median(ratios[method]):.2f}, worst {max(ratios[method]):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
