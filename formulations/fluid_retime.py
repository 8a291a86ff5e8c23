"""The fluid MIP's plan re-timed exactly (`cpsat`): its pairs and HBM load order kept.

The plan read from the fluid MIP's timeline (`fluid_replay`) takes its issue points and
releases from a relaxation, so under 5b it loses time the relaxation does not see. Its pairs
and its load order are what CP-SAT's search finds hardest on the mesh slices: with both held,
the 5b model (`cpsat_model`) is small, the replayed plan is a solution of it, and CP-SAT finds
the issue points and releases that serve them best. On the small suite's OPT-30B b16 KV2048
mesh slice (bound 208,320 ns) the replay gives 208,869 and the suite's 20 s cells end at
208,536-208,604; held to the MIP's pairs and order, CP-SAT reaches 208,339 in 10 s and 208,328
in 30 s, where held to the pairs alone it finds nothing below the replay in 30 s (BENCHMARKS.md,
"The fluid MIP's plan re-timed"). The LNS helpers run beside the full search (`interleave`):
alone, the full search gained nothing on the replay in 10 s on the Llama2-7B b16 KV2048 mesh
slice and 18 ns on Llama2-13B's, where with them it gained 139 and 113 ns in 8 s.
"""

from __future__ import annotations

from dataclasses import replace

from ortools.sat.python import cp_model

from elk_opt.problem import Instance, Plan
from elk_opt.solution import SolveOptions
from formulations.common import Restrictions, feasible_pairs, hint_index
from formulations.cpsat_model import add_hint, build, shared_plan, solver_for
from formulations.cpsat_run import solve as run_cpsat


def retimed(instance: Instance, plan: Plan, lower: int | None, time_limit_s: float,
            options: SolveOptions, method: str, started: float) -> Plan | None:
    """The best 5b timing CP-SAT finds in `time_limit_s` for `plan`'s pairs and load order
    (issue points and releases free), if faster than the plan; None otherwise. `lower`: a
    valid lower bound, which only prunes."""
    assert plan.claims is not None
    pairs = feasible_pairs(instance, "shared-noc")
    picked = [hint_index(instance, j, c, pairs[j], "shared-noc")
              for j, c in enumerate(plan.choice)]
    position = {op: k for k, (kind, op) in enumerate(plan.program) if kind == "P"}
    chain = sorted((j for j, k in enumerate(picked) if pairs[j][k].load_ns),
                   key=lambda j: position[j])
    cm = build(instance, Restrictions(), pairs=pairs, chain=chain, timing="shared-noc",
               upper=plan.claims.makespan_ns, lower=lower)
    for j, k in enumerate(picked):
        cm.model.add(cm.pick[j][k] == 1)
    add_hint(cm, instance, plan)
    solver = solver_for(replace(options, verbose=False, gap=None, work_limit=None),
                        time_limit_s, "shared-noc", interleave=True)
    if run_cpsat(solver, cm.model) not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    found = shared_plan(instance, cm, solver, method, started,
                        {"plan_source": "fluid MIP re-timed"})
    assert found.claims is not None
    return found if found.claims.makespan_ns < plan.claims.makespan_ns else None
