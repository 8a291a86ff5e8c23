"""Probing the makespan up from the lower bound before the 5b search (`cpsat` under 5b).

Under 5b the fluid floor sits within a fraction of a percent of the optimum on the layers we
prove, while the start plans sit percents above it; CP-SAT's search from the start then spends
most of its time creeping down a few ns per solution. With the makespan capped just above
the bound, the chain of executes leaves every instruction a narrow window and propagation
does the work: a capped model is proven infeasible, or solved, far faster than the open one
(calibration layer: cap 193,400 infeasible in 1.2 deterministic s, cap 193,500 solved and
proven optimal in 3.8, against 10.7 for the open search).

Each probe builds its model afresh with the cap as its horizon, rather than capping the
open model: every time and every port-work total is bounded by the horizon, and with the cap
there CP-SAT searches far better (the demo's slice: the probe that proves the optimum took
2.3-3.4 s against 4.6-9.3 s capped, over three seeds). What the probes before refuted is a
lower bound in the model too.

So probe caps lower + ceil(f x lower) for f = 1/2000, doubling up to 1/500, the first
from lower + 1 (`first_cap`), never above the start's makespan - 1 (where the start lies
within reach, the last probe asks whether anything beats it: on a zoo slice whose start was
4 ns above its bound, the cap start - 1 was solved to the optimum and proven in 0.8
deterministic s): a probe proven infeasible raises the lower bound to its cap + 1; the first
probe with a solution keeps minimising under its cap. Each conclusion is exact for the model:
the capped model holds every solution of makespan <= cap, so its optimum, when it has one, is
the model's, and its bound (at most its best makespan <= cap) bounds the model's solutions,
those above the cap included. The steps stop at 0.2%: where the floor lies further below the
optimum (synthetic instances, 5-12% below) every probe is infeasible and slows the proof the
open search makes (the small gap suite: 6-op proofs in 10 s instead of 3 with steps up to
6.25%).

The first probe holds the floor and the step above it. It used to be two probes, the floor
alone and then the step: one probe fewer saves a presolve and a refutation, and with its cap
where the second one's was, every later cap is the same. The calibration layer is proven in
4.6 s instead of 5.5 (median of eight seeds, two threads); cold two-layer slices, 60 s, were
proven about as often (Llama2-13B 14 of 16 against 15 of 16, OPT-30B and Llama2-7B 5 of 6
both; BENCHMARKS.md, "The floor probe merged into the next").

A probe that stops with its bound above its cap is refuted as surely as one proven
infeasible, and the next cap is probed. Without a warm start the probes above the floor get
twice the share: the open search would start from the section-5 plan re-timed, percents
above the floor, and rarely gets near it in time, while a cap just above the floor finds the
first plan close to it (two-layer slices cold, 60 s, two threads: Llama2-13B and Llama2-7B
proven in 32-41 s instead of stopping 5-8% above their bounds, OPT-30B in 34 s instead of
49-56; BENCHMARKS.md, "Cold probes"). The first probe has that slack too, so it gets the
larger share: with the smaller one it lost a Llama2-13B and all three Llama2-7B two-layer
runs. (When the floor had a probe of its own, with no slack at all, the smaller share was
right there: OPT-30B's two layers were proven in 2 of 4 runs with the larger one.)
Warm-started, the start hints the open search and every probe keeps the smaller share, but
for the one at the start's makespan - 1 where the start lies within a ns per interval of the
bound, which gets all the time left (`_share`: a Llama2-7B b64 KV2048 slice, its 229,801 ns
start floored at 229,800, is proven in 48 s of 60 instead of not in 60; BENCHMARKS.md, "The
last probe below a start within reach").
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

from ortools.sat.python import cp_model

from elk_opt.bounds.whole_ns import within_reach
from elk_opt.interrupts import stop_requested
from elk_opt.solution import SolveOptions
from formulations.common import ceil_integer, remaining
from formulations.cpsat_model import CpsatModel, solver_for
from formulations.cpsat_run import solve as run_cpsat
from formulations.deadline import OutOfTime

PROBE_SHARE = 0.2  # of the time (and work) left, per probe, when a warm start hints the search
COLD_PROBE_SHARE = 0.4  # per probe without one (module docstring)
FIRST_STEP = 1 / 2000  # of the lower bound, the first probe's step above it (then doubling)
LAST_STEP = 1 / 500  # no probe steps further: a floor that far below is the open search's


@dataclass(frozen=True)
class Probed:
    """What the probes found: a valid lower bound, and the model and solver of the probe that
    found a solution (None if none did: its model holds every solution up to its cap, so the
    optimum); `status` is that probe's (OPTIMAL: nothing left to do); `work` is the
    deterministic time the probes used (so a work limit covers them too)."""

    lower: int
    status: int
    solver: cp_model.CpSolver | None
    cm: CpsatModel | None = None
    work: float = 0.0


def next_cap(lower: int, upper: int | None, fraction: float) -> int | None:
    """The next cap above `lower`, at most the start's makespan - 1 (a probe there asks
    whether anything beats the start at all); None once the step is past LAST_STEP or the
    probes have shown nothing beats the start."""
    if fraction > LAST_STEP or (upper is not None and lower >= upper):
        return None
    cap = lower + math.ceil(fraction * lower)
    return cap if upper is None else min(cap, upper - 1)


def first_cap(lower: int, upper: int | None) -> int | None:
    """The first probe's cap: the floor and the first step above it in one probe, the cap a
    second probe would have after the floor alone was refuted (module docstring); the floor
    itself when the start lies one ns above it, None when nothing can beat the start."""
    cap = next_cap(lower + 1, upper, FIRST_STEP)
    return next_cap(lower, upper, 0.0) if cap is None else cap


def _share(options: SolveOptions, fraction: float, cap: int, lower: int, upper: int | None,
           ops: int) -> float:
    """A probe's share of the time and work left (module docstring): all of it for the probe
    that asks whether anything beats a start within reach of the lower bound (at most a ns
    per interval above it, `whole_ns.within_reach`): the open search after it could only look
    for the same plans, in a looser model, and cannot prove the start optimal sooner."""
    if upper is not None and cap == upper - 1 and within_reach(ops, upper, lower):
        return 1.0
    above_floor = fraction > 0 or cap > lower
    return COLD_PROBE_SHARE if options.warm_plan is None and above_floor else PROBE_SHARE


def refuted(solver: cp_model.CpSolver, status: int, cap: int) -> bool:
    """A probe stopped without a solution whose bound is already above its cap: nothing in
    its model (every makespan <= cap) is left, so it is as good as proven infeasible."""
    return status == cp_model.UNKNOWN and solver.best_objective_bound > cap


def probe(capped: Callable[[int, int], CpsatModel], options: SolveOptions, started: float,
          lower: int, upper: int | None, ops: int) -> Probed:
    """Probe caps up from `lower` (module docstring) while each probe ends within its share;
    `capped(cap, lower)` builds the model with makespans in [lower, cap] of the instance's
    `ops` ops."""
    fraction = 0.0
    used = 0.0
    while not stop_requested():
        cap = first_cap(lower, upper) if fraction == 0 else next_cap(lower, upper, fraction)
        if cap is None:
            break
        try:
            cm = capped(cap, lower)
        except OutOfTime:
            break
        left = remaining(options.time_limit_s, started)
        share = _share(options, fraction, cap, lower, upper, ops)
        work = None if options.work_limit is None else share * (options.work_limit - used)
        solver = solver_for(replace(options, work_limit=work),
                            None if left is None else share * left, "shared-noc")
        status = run_cpsat(solver, cm.model)
        used += solver.deterministic_time
        if status == cp_model.INFEASIBLE or refuted(solver, status, cap):
            lower = cap + 1
            fraction = 2 * (fraction or FIRST_STEP)
            continue
        if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            return Probed(max(lower, ceil_integer(solver.best_objective_bound)), status, solver,
                          cm, used)
        # stopped without a solution: its bound holds below the cap, the cap + 1 above it
        bound = solver.best_objective_bound
        if math.isfinite(bound):
            lower = max(lower, min(cap + 1, ceil_integer(bound)))
        return Probed(lower, status, None, None, used)
    return Probed(lower, cp_model.UNKNOWN, None, None, used)
