"""The fluid bound with SRAM as a mixed-integer program: pairs and pending loads whole.

Valid for every plan that executes in the instance's order (any pair choice, preload order,
issue points and releases), under the timing it is built for. It is elk_opt.bounds.fluid_sram's
LP, whose notation this follows, with two things a plan cannot do taken away:
- an op runs one pair, not a blend of its pairs: the pair columns lambda[j, a] are 0 or 1;
- a load that has made any progress before S_k, or while E<k> runs, is pending at E<k>, and
  R5 charges its whole preload space there, not the fraction done (the LP's charge is the
  convex hull of that step, the best an LP over these columns can do).
For the second, per op j and execute k in j's band a 0/1 column u[j, k] with
    sum over j's loading pairs a of (F[j, a, k + 1] - wz[j, a, k + 1]) <= u[j, k],
    u[j, k] <= u[j, k + 1],
    charge[j, k] >= sum_a space_a lambda[j, a] - (largest space_a) (1 - u[j, k]),
and R5 at k charges charge[j, k]. For a plan, take u[j, k] = 1 exactly when j is pending at
E<k>: progress by then makes j pending (fluid_sram), and pending is monotone (P<j> before
E<k> is before E<k + 1>, and E<j> after E<k + 1> when k + 1 < j); the charge is then j's
preload space, which R5 counts in full. Every row holds for the plan's point and the
objective is the fluid LP's, so the program's optimum bounds the makespan from below, and so
does any bound on it: HiGHS's dual bound, when the time limit stops the search, is still one.
Interval 0, [0, S_0), is the only one before the first execute starts: with its columns out
of the objective the rest sum, for a plan, to at most T - S_0, so the program then bounds
that span (a layer window's objective, whose loads may lie before it at no cost:
elk_opt.bounds.layers).

The LP's rounded R5 rows stay in: they hold at every point of the program, and they are cuts
HiGHS would otherwise have to find (OPT-30B b64 KV4096, two layers: 1,324,102 ns in 100 s
with them, 1,312,026 without; BENCHMARKS.md, "Rounded R5 rows").

The integers make it strong where a blend of pairs or a fraction of a load is what the LP
leans on (execute-bound layers choosing between fast pairs and small ones), and slow: it is
for slices and small models (up to about a hundred ops), not whole decoders. Repeated layers
are not summed (elk_opt.bounds.periodic): a sum of 0/1 columns is no longer 0/1.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import highspy
import numpy as np

from elk_opt.bounds.contiguous import add_one_load_running
from elk_opt.bounds.fluid import FluidBound, FluidModel, _Lp
from elk_opt.bounds.fluid_sram import DEFAULT_BAND, build_fluid_sram, spaced_costs
from elk_opt.bounds.limits import DEFAULT_CLASSES
from elk_opt.bounds.whole_ns import add_whole_intervals
from elk_opt.problem import Instance, Timing
from formulations.highs_run import run_interruptible

STOPPED = (highspy.HighsModelStatus.kTimeLimit, highspy.HighsModelStatus.kInterrupt,
           highspy.HighsModelStatus.kSolutionLimit, highspy.HighsModelStatus.kIterationLimit)


@dataclass(frozen=True)
class SolvedMilp:
    """The program's bound, the model it was built as, and the best solution HiGHS found
    (None if it found none): a timeline a plan can be read from (formulations.fluid_replay)."""

    bound: FluidBound
    model: FluidModel | None
    solution: np.ndarray | None


def fluid_milp_bound(instance: Instance, timing: Timing, time_limit_s: float | None = None,
                     band: int = DEFAULT_BAND, max_classes: int = DEFAULT_CLASSES,
                     threads: int = 1, contiguous: bool = False,
                     from_first_start: bool = False, whole_ns: bool = False) -> FluidBound:
    """The program's bound (module docstring), loads tracked `band` intervals back;
    `contiguous`: with one load running at each execute start (elk_opt.bounds.contiguous);
    `whole_ns`: with every interval a whole number of ns (elk_opt.bounds.whole_ns);
    `from_first_start`: a bound on the makespan less the first execute's start, for plans
    whose loads before it cost nothing (elk_opt.bounds.layers' middle windows). Stopped by
    `time_limit_s`, the best dual bound so far (`complete` False); None if not even the root
    relaxation was solved."""
    return solve_fluid_milp(instance, timing, time_limit_s, band, max_classes, threads,
                            contiguous, from_first_start, whole_ns).bound


def solve_fluid_milp(instance: Instance, timing: Timing, time_limit_s: float | None = None,
                     band: int = DEFAULT_BAND, max_classes: int = DEFAULT_CLASSES,
                     threads: int = 1, contiguous: bool = False,
                     from_first_start: bool = False, whole_ns: bool = False) -> SolvedMilp:
    """As `fluid_milp_bound`, with the model and its best solution."""
    if band < 0:
        raise ValueError(f"band must be >= 0, got {band}")
    started = time.perf_counter()
    costs = spaced_costs(instance)
    if not costs:
        return SolvedMilp(FluidBound(0, 0, 0, 0, time.perf_counter() - started), None, None)
    model = build_fluid_sram(costs, instance.chip.sram_bytes, timing, band, max_classes,
                             whole=True)
    if contiguous:
        add_one_load_running(model)
    if from_first_start:  # interval 0, [0, S_0), is the only one before the first start
        for col in model.phases[0]:
            model.lp.cost[col] = 0.0
    lengths = add_whole_intervals(model) if whole_ns else []
    left = None if time_limit_s is None else max(0.0, time_limit_s - (time.perf_counter()
                                                                       - started))
    mip = branch_and_bound(model.lp, model.integers, left, threads, lengths)
    bound = None if mip.dual is None else max(0, math.ceil(mip.dual))
    return SolvedMilp(
        FluidBound(bound, len(model.lp.cost), len(model.lp.row_lower), len(model.reps),
                   time.perf_counter() - started, complete=mip.proven),
        model, mip.solution)


@dataclass(frozen=True)
class Mip:
    """What HiGHS's branch and bound gave: its dual bound less a margin for its tolerances
    (None unless it finished or a limit stopped it), whether it proved the optimum, and its
    best solution (None if none) with that solution's objective."""

    dual: float | None
    proven: bool
    solution: np.ndarray | None
    objective: float | None


def branch_and_bound(lp: _Lp, integers: Sequence[int], time_limit_s: float | None,
                     threads: int, general: Sequence[int] = ()) -> Mip:
    """Minimise `lp` with `integers` 0 or 1 and `general` any integer >= 0, to a gap of 0,
    on a HiGHS that has solved nothing before: run after a solve of the relaxation on the
    same object (to skip branching when the relaxation comes out whole), HiGHS 1.16 claimed
    an optimum below that relaxation (Llama2-13B b32 KV4096, two layers: 538,040 ns against
    554,132; solved afresh, 554,164)."""
    h = lp.highs(time_limit_s, threads, integers, general)
    h.setOptionValue("mip_rel_gap", 0.0)
    if run_interruptible(h):
        raise KeyboardInterrupt
    status = h.getModelStatus()
    proven = status == highspy.HighsModelStatus.kOptimal
    info = h.getInfo()
    raw = info.mip_dual_bound if proven or status in STOPPED else math.nan
    # the dual bound comes from LPs solved to HiGHS's tolerances (1e-7 to 1e-6), whose
    # residuals a MIP does not report: a margin of a millionth of it, one ns per ms
    dual = raw - 1e-6 * abs(raw) - 1e-6 if math.isfinite(raw) else None
    found = info.primal_solution_status == highspy.SolutionStatus.kSolutionStatusFeasible
    return Mip(dual, proven, np.asarray(h.getSolution().col_value) if found else None,
               info.objective_function_value if found else None)

