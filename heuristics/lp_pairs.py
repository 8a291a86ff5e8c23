"""`elk-full-lp`: Elk-Full at the pairs a fluid LP relaxation picks.

Elk-Full chooses each op's pair (layouts) greedily, op by op. The fluid LPs
(elk_opt.bounds.fluid, fluid_sram) choose them for the whole model at once, weighing each
pair's execute time against how its load and execute share the HBM and, under 5b, the NoC
port; the one with SRAM also charges each pending load's preload space to the executes it
waits through (rule R5). Their optima put almost all weight on one pair per op (on Figure 17
models, all but 2-7% of the ops); this method keeps that pair (the heaviest, where the weight
is split; in repeated layers summed into one block, the block's heaviest for every repeat)
and lets Elk-Full decide the rest (preload counts, order, issue points) on the instance
narrowed to it.

Which LPs (`--param lp=`): by default (`auto`) both, `fluid-sram` only where its model,
repeated layers summed, has at most FLUID_SRAM_MAX_OPS ops, and the faster of the two plans
is kept; `fluid` or `fluid-sram` asks for one. Neither LP's pairs are better everywhere
(BENCHMARKS.md, "Elk-Full at the pairs of the fluid LP with SRAM"): the plain LP ignores SRAM,
and its pairs make Llama2-70B b64 17-21% slower than Elk-Full's own, where those of the LP
with SRAM are 4.5-4.8% faster; on Gemma2-27B b64 KV4096 the plain LP's are the faster. The
faster of the two beats Elk-Full in 10 of the 24 elk-paper configurations (by up to 5.7%)
and loses in 5 (by at most 0.76%). It is another start, not a replacement: `certify` runs it
beside Elk-Full and keeps the faster.

The LPs get LP_SHARE of a time limit; if neither finishes, the plan is Elk-Full's on the
whole instance, and its params say so. The claimed lower bound is the higher LP bound, which
holds for the instance's execution order, the only order this method plans in.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence

from elk_opt.bounds.cuts import PairCost, pair_cost, with_pairs_costing
from elk_opt.bounds.fluid import fluid_pairs
from elk_opt.bounds.fluid_sram import DEFAULT_BAND, fluid_sram_ops, fluid_sram_pairs, spaced_cost
from elk_opt.bounds.limits import FLUID_SRAM_MAX_OPS
from elk_opt.errors import UsageError
from elk_opt.problem import Instance, Plan
from elk_opt.solution import SolveOptions, make_plan
from heuristics import elk_full

LP_SHARE = 0.5  # of a time limit, for the fluid LP
LPS = ("fluid-sram", "fluid")  # `--param lp=`, besides "auto"


COSTS: dict[str, Callable[..., PairCost]] = {"fluid-sram": spaced_cost, "fluid": pair_cost}


def narrowed(instance: Instance, picks: Sequence[PairCost],
             cost_of: Callable[..., PairCost] = pair_cost) -> Instance:
    """`instance` with each op's compatible pairs cut to those whose cost (`cost_of` of a
    `pair_uses` row) is its pick."""
    return dataclasses.replace(instance, ops=tuple(
        with_pairs_costing(op, instance.chip, pick, cost_of)
        for op, pick in zip(instance.ops, picks, strict=True)))


def which_lps(instance: Instance, options: SolveOptions) -> tuple[str, ...]:
    """The LPs whose pairs the method tries (module docstring)."""
    unknown = set(options.params) - {"lp"}
    if unknown:
        raise UsageError(f"elk-full-lp: unknown parameter {sorted(unknown)[0]!r}; known: lp")
    lp = options.params.get("lp", "auto")
    if lp not in (*LPS, "auto"):
        raise UsageError(f"elk-full-lp: parameter lp must be auto, {' or '.join(LPS)}, "
                         f"got {lp!r}")
    if lp != "auto":
        return (lp,)
    if fluid_sram_ops(instance, DEFAULT_BAND) <= FLUID_SRAM_MAX_OPS:
        return LPS
    return ("fluid",)


def solve(instance: Instance, options: SolveOptions) -> Plan:
    started = time.perf_counter()
    lps = which_lps(instance, options)
    deadline = None if options.time_limit_s is None else started + options.time_limit_s
    found: dict[str, tuple[int, list[PairCost]] | None] = {}
    for k, lp in enumerate(lps):
        share = None if deadline is None else \
            LP_SHARE * (deadline - time.perf_counter()) / (len(lps) - k)
        if share is not None and share <= 0:
            found[lp] = None
        elif lp == "fluid-sram":
            found[lp] = fluid_sram_pairs(instance, options.timing, share, options.threads)
        else:
            found[lp] = fluid_pairs(instance, options.timing, share, options.threads)
    solved = {lp: f for lp, f in found.items() if f is not None}
    if not solved:
        rest = None if deadline is None else max(0.0, deadline - time.perf_counter())
        plan = elk_full.solve(instance, dataclasses.replace(
            options, time_limit_s=rest, exec_order="instance", params={}))
        assert plan.claims is not None
        return dataclasses.replace(plan, claims=dataclasses.replace(
            plan.claims, method="elk-full-lp", wall_s=time.perf_counter() - started,
            params={**plan.claims.params, "lp": "none",
                    "pairs": f"elk-full's own: the {' and '.join(lps)} LP did not finish "
                             "within its share of the limit"}))
    bound = max(b for b, _picks in solved.values())
    best: tuple[str, Plan] | None = None
    for k, (lp, (_b, picks)) in enumerate(solved.items()):
        rest = None if deadline is None else \
            max(0.0, deadline - time.perf_counter()) / (len(solved) - k)
        plan = elk_full.solve(narrowed(instance, picks, COSTS[lp]), dataclasses.replace(
            options, time_limit_s=rest, exec_order="instance", params={}))
        assert plan.claims is not None
        if best is None or plan.claims.makespan_ns < best[1].claims.makespan_ns:
            best = lp, plan
    assert best is not None
    lp, plan = best
    assert plan.claims is not None
    makespan = plan.claims.makespan_ns
    return make_plan(instance, plan.choice, plan.program, method="elk-full-lp", started=started,
                     timing=options.timing, release_ns=plan.release_ns,
                     status="optimal" if bound == makespan else "heuristic",
                     lower_bound_ns=bound,
                     params={**plan.claims.params, "lp": lp, "pairs": f"the {lp} LP's",
                             "lps_tried": list(lps), "exec_order": "instance",
                             "fluid_bound_ns": bound})
