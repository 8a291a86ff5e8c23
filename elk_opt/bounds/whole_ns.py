"""Intervals of whole ns: the fluid MIP with each interval's length an integer.

Columns for the fluid MIP (elk_opt.bounds.fluid_milp, notation of elk_opt.bounds.fluid).
Valid for every plan that executes in the instance's order, under either timing.

Every start and end in a plan is a whole ns (docs/spec.md 5b: each instruction ends at its
start plus the ceiling of its units over its share). So the execute starts S_0 <= ... <=
S_{n-1} and the makespan T are integers, and so is the length of every interval the fluid
models cut the timeline into: [0, S_0), [S_{b-1}, S_b), [S_{n-1}, T]. Per interval b an
integer column L[b] >= the sum of b's phase columns (x, y, z: disjoint parts of the
interval, so at most its length), with L[b] taking the phases' place in the objective, keeps
every row true at the plan's point (L[b] its interval's length) and the objective T. The
fluid models let each interval end at a fraction of a ns; here each rounds up on its own,
which is what the timing does to each end. The gain is at most one ns per interval (the
fluid optimum with every L[b] rounded up is a solution), so this is for the last ns between
a bound and a plan: on a Llama2-7B b64 KV4096 slice (default chip, 25 ops) the fluid MIP with
loads run whole is 365,201.29 ns and with whole intervals 365,203, the makespan CP-SAT and
`polish` find, in 12 s against 7 (BENCHMARKS.md, "Intervals of whole ns").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # HiGHS loads only when a bound needs it
    from elk_opt.bounds.fluid import FluidModel


def within_reach(ops: int, makespan: int, bound: int) -> bool:
    """Whether a plan of `makespan` lies above a fluid MIP's `bound` by no more than rounding
    each of the `ops` + 1 intervals up can add: only there can the MIP with whole intervals
    close the gap, and only there is it worth its time (1.7-3.1 times the MIP's)."""
    return 0 < makespan - bound <= ops + 1


def add_whole_intervals(model: FluidModel) -> list[int]:
    """The columns L[b] of the module docstring, added to `model`; their indices (integers
    with no upper bound, unlike `model.integers`' 0/1 columns)."""
    lp = model.lp
    phased = {col for phases in model.phases for col in phases}
    if any(cost and col not in phased for col, cost in enumerate(lp.cost)):
        raise ValueError("a column outside the intervals' phases is in the objective")
    lengths = []
    for phases in model.phases:
        costs = {lp.cost[col] for col in phases}
        if len(costs) > 1:  # an interval is in the objective whole or not at all
            raise ValueError(f"an interval's phase columns cost {sorted(costs)}: expected one")
        length = lp.column(costs.pop() if costs else 0.0)
        for col in phases:
            lp.cost[col] = 0.0
        lp.row({length: 1.0, **dict.fromkeys(phases, -1.0)}, 0.0, float("inf"))
        lengths.append(length)
    return lengths
