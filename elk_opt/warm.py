"""Warm starts for the exact methods of a study: the best heuristic plan, unless told cold.

An exact solver started cold spends most of its budget finding what a heuristic finds in a
fraction of a second (cold CP-SAT under 5b on the small suite's bsp slices ended its 20 s a
median 15% above the best heuristic plan; BENCHMARKS.md). A warm start is only a hint and an
upper bound the solver may use: the plan it returns is re-timed and its claims are checked
as for a cold run, so `optimal` still means proven. A study records the heuristic it offered
(the plan's `claims.params.warm_start` names it when the solver hinted with it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from elk_opt.errors import UsageError
from elk_opt.methods import METHODS, heuristics, solve
from elk_opt.problem import Instance, Plan, Timing
from elk_opt.solution import SolveOptions


def in_instance_order(plan: Plan) -> bool:
    """Whether the plan executes in the instance's order (what the exact models can hint)."""
    return [j for kind, j in plan.program if kind == "E"] == list(range(len(plan.choice)))


def best_heuristic(instance: Instance, timing: Timing,
                   plans: Mapping[str, Plan] | None = None) -> tuple[str, Plan] | None:
    """The heuristic plan with the least makespan under `timing` (ties: the earlier heuristic
    in the registry), among those that execute in the instance's order; `plans` are reused
    (they must be under `timing`), the other heuristics are run. None if none is usable."""
    best: tuple[int, str, Plan] | None = None
    for name in heuristics():
        plan = (plans or {}).get(name)
        if plan is None:
            try:
                plan = solve(instance, name, SolveOptions(timing=timing))
            except UsageError:  # a heuristic that cannot plan this instance hints nothing
                continue
        assert plan.claims is not None and plan.timing == timing
        if in_instance_order(plan) and (best is None or plan.claims.makespan_ns < best[0]):
            best = (plan.claims.makespan_ns, name, plan)
    return None if best is None else (best[1], best[2])


def warm_options(instance: Instance, method: str, options: SolveOptions, *, cold: bool = False,
                 plans: Mapping[str, Plan] | None = None) -> SolveOptions:
    """The options an exact method runs with in a study: warm-started from the best
    heuristic plan, unless `cold`, a warm start is already chosen, or the method is no
    exact one."""
    if cold or METHODS[method].family != "exact" or options.warm_plan is not None:
        return options
    found = best_heuristic(instance, options.timing, plans)
    if found is None:
        return options
    name, plan = found
    return replace(options, warm_start=name, warm_plan=plan)
