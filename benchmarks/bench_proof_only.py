"""The 5b proof in isolation: the model `cpsat` builds (after its section-5 solve and the
re-timing of its starts), hinted with a given plan, solved once; its work to the proof.

python benchmarks/bench_proof_only.py INSTANCE.json --hint PLAN.json [--floor fluid|section5]
    [--threads 2] [--limit 120] [--work W]

`--floor section5` builds the model as before the fluid floor (the makespan floored at the
section-5 model's bound only), for a same-session comparison. Prints one line: status,
objective, bound, wall seconds, CP-SAT's deterministic time and branches of the solve (the
preparation before it is not counted).
"""

from __future__ import annotations

import argparse
import os
import time

from elk_opt.io import load_instance, load_plan
from elk_opt.solution import SolveOptions
from formulations import cpsat_prepare
from formulations.cpsat_model import solver_for


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("instance")
    ap.add_argument("--hint", required=True, help="a plan of the instance (any timing)")
    ap.add_argument("--floor", choices=("fluid", "section5"), default="fluid")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--limit", type=float, default=120)
    ap.add_argument("--work", type=float, default=None, help="deterministic budget")
    args = ap.parse_args()
    if args.floor == "section5":
        cpsat_prepare._fluid = lambda *_args: None  # the floor as it was: section 5's bound only
    instance = load_instance(args.instance)
    options = SolveOptions(time_limit_s=args.limit, threads=args.threads, timing="shared-noc",
                           warm_plan=load_plan(args.hint), work_limit=args.work)
    ready = cpsat_prepare.prepare(instance, options)
    solver = solver_for(options, args.limit, "shared-noc")
    started = time.perf_counter()
    status = solver.solve(ready.cm.model)
    print(f"{instance.name}: floor {args.floor} ({ready.floor:,}), start {ready.upper:,}: "
          f"{solver.status_name(status)} {solver.objective_value:,.0f} bound "
          f"{solver.best_objective_bound:,.0f}, wall {time.perf_counter() - started:.1f} s, "
          f"det {solver.deterministic_time:.2f}, branches {solver.num_branches:,}, "
          f"load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
