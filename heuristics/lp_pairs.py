"""`elk-full-lp`: Elk-Full at the pairs the fluid LP relaxation picks.

Elk-Full chooses each op's pair (layouts) greedily, op by op. The fluid LP
(elk_opt.bounds.fluid) chooses them for the whole model at once, weighing each pair's
execute time against how its load and execute share the HBM and, under 5b, the NoC port. Its
optimum puts almost all weight on one pair per op (on Figure 17 models, all but 2-7% of the
ops); this method keeps that pair (the heaviest, where the weight is split) and lets Elk-Full
decide the rest (preload counts, order, issue points) on the instance narrowed to it.

Measured (elk-paper, `bsp`, shared-noc; BENCHMARKS.md, "Elk-Full at the fluid LP's pairs"):
Gemma2-27B b64 KV2048, 13.386 ms against Elk-Full's 14.115; on Llama2-13B b64 KV4096 and
OPT-30B b64 KV2048 it is 0.8-1.1% slower than Elk-Full. It is another start, not a
replacement: `certify` runs both and keeps the faster.

The LP gets LP_SHARE of a time limit; if it does not finish, the plan is Elk-Full's on the
whole instance, and its params say so. The claimed lower bound is the LP's, which holds for
the instance's execution order, the only order this method plans in.
"""

from __future__ import annotations

import dataclasses
import time

from elk_opt.bounds.cuts import PairCost, pair_uses
from elk_opt.bounds.fluid import fluid_pairs
from elk_opt.problem import Instance, Plan
from elk_opt.solution import SolveOptions, make_plan
from heuristics import elk_full

LP_SHARE = 0.5  # of a time limit, for the fluid LP


def narrowed(instance: Instance, picks: list[PairCost]) -> Instance:
    """`instance` with each op's compatible pairs cut to those of its picked cost."""
    ops = []
    for op, pick in zip(instance.ops, picks, strict=True):
        keep = {(q.id, p.id) for q, p, run, load in pair_uses(op, instance.chip)
                if PairCost(run.duration_ns, load.duration_ns, run.demand, load.demand) == pick}
        ops.append(dataclasses.replace(
            op, warmup=tuple(w for w in op.warmup if (w.preload, w.exec) in keep)))
    return dataclasses.replace(instance, ops=tuple(ops))


def solve(instance: Instance, options: SolveOptions) -> Plan:
    started = time.perf_counter()
    limit = options.time_limit_s
    found = fluid_pairs(instance, options.timing, None if limit is None else LP_SHARE * limit,
                        options.threads)
    rest = None if limit is None else max(0.0, limit - (time.perf_counter() - started))
    options = dataclasses.replace(options, time_limit_s=rest, exec_order="instance")
    if found is None:
        plan = elk_full.solve(instance, options)
        assert plan.claims is not None
        return dataclasses.replace(plan, claims=dataclasses.replace(
            plan.claims, method="elk-full-lp", wall_s=time.perf_counter() - started,
            params={**plan.claims.params, "pairs": "elk-full's own: the fluid LP did not "
                                                   "finish within its share of the limit"}))
    bound, picks = found
    plan = elk_full.solve(narrowed(instance, picks), options)
    assert plan.claims is not None
    makespan = plan.claims.makespan_ns
    return make_plan(instance, plan.choice, plan.program, method="elk-full-lp", started=started,
                     timing=options.timing, release_ns=plan.release_ns,
                     status="optimal" if bound == makespan else "heuristic",
                     lower_bound_ns=bound,
                     params={**plan.claims.params, "pairs": "the fluid LP's", "exec_order":
                             "instance", "fluid_bound_ns": bound})
