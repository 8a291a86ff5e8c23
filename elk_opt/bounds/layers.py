"""Layer windows: CP-SAT on each decoder layer's ops under the timing asked for (5b included),
each distinct layer solved once.

Valid for every plan that executes in the instance's order (R2's default), under the timing
of the model (`shared-noc`: docs/spec.md 5b, `separate-noc`: section 5), at any pair choice,
preload order, issue points and releases.

Windows. The ops are cut where the `layer` field changes (runs longer than `max_width` are cut
into pieces of that size), and `per` consecutive runs make a window. Cutting the ops into
consecutive windows [a, b) and writing S_i for the start of E<i>, executes are serial, so
    T = end of E<n-1> >= end of E<b_0 - 1> + sum over later windows of (end of E<b-1> - S_a).
Each term is bounded below by the optimum of the window's relaxation:
- the window's own ops only: the loads, executes and pending space of every other op are
  dropped. Each dropped constraint relaxes. Under 5b a dropped instruction also drops its
  port losses: the exact 5b model (formulations.contention) requires of each instruction
  `d x length - sum of its losses >= its units`, every loss >= 0, so dropping partners only
  weakens the rows that remain;
- the window's time origin is free: its model measures times from its earliest instruction
  and its objective is end of E<b-1> - S_a (the first window: end of E<b-1>, from 0, since
  nothing precedes it). The plan's own schedule of the window's ops, shifted, satisfies the
  model: the executes stay chained, the loads apart on the HBM, a load issued after E<i>
  starts after it ends (the model's issue literals), R5 holds with fewer pending ops, and
  under 5b the lengths and overlaps keep their values. A load issued before E<a> may lie
  wholly before S_a and costs the objective nothing then, as in the plan; a window's
  schedule with idle time (no window instruction active) squeezed out is no longer and
  still feasible, so the model's horizon (the sum of every instruction's longest length)
  loses nothing;
- the cover cuts of the 5b model (work of the executes before E<k> and of the loads of ops
  up to k fits before S_k) count only the window's instructions, which all lie after the
  origin, so they hold.
Each window's relaxation is bounded twice, and the larger value counts: by CP-SAT (its bound,
proven or not) and by the fluid MIP with loads run whole (elk_opt.bounds.fluid_milp with
elk_opt.bounds.contiguous) on the window's ops, counted from the first execute's start for
every window but the first. Both are at most the relaxation's optimum (the MIP relaxes every
plan of the window's ops, the relaxation's own plans included), so the sum is a lower bound on
T. They see different things: CP-SAT's LP does not see that a load runs whole and one at a
time, the MIP does, while it splits the window's time into fluid phases; on a Gemma2-27B b64
KV2048 middle layer CP-SAT's bound stops at 272,459 ns where the MIP proves the optimum,
279,025, in 11 s (BENCHMARKS.md, "Loads run whole in the layer windows"). The MIP runs only
where CP-SAT did not prove the window. A window's relaxation depends only on its ops' plans
and warm-ups and on whether it is first (elk_opt.bounds.window.window_key): identical layers
are solved once and their bound counted once per occurrence.

What it sees: SRAM (R5 within the window), the HBM order of the window's loads, that each runs
whole, and under 5b the port the window's own loads share with its executes. What it does
not: the loads of later windows during this one (they are dropped), so in steady state the
next layer's preloads cost a window nothing; see the module's benchmark in BENCHMARKS.md.
"""

from __future__ import annotations

import contextlib
import math
import time
from dataclasses import dataclass

from ortools.sat.python import cp_model

from elk_opt.bounds.fluid_milp import fluid_milp_bound
from elk_opt.bounds.window import window_instance, window_key
from elk_opt.deadline import share
from elk_opt.errors import UsageError
from elk_opt.problem import Instance, Timing
from elk_opt.progress import report_progress
from formulations.common import Restrictions, ceil_integer
from formulations.cpsat_model import build
from formulations.cpsat_run import Interrupt

DEFAULT_MAX_WIDTH = 32
MIN_MIP_S = 0.05  # below this much time a window's fluid MIP is not started


@dataclass(frozen=True)
class LayerBound:
    bound_ns: int
    windows: int
    distinct: int  # windows handed to CP-SAT (the others repeat one of them)
    proven: int  # windows whose relaxation was solved to optimality (a plan meets a bound)
    solved: int  # windows counted: all of them unless a SIGINT stopped the search early
    wall_s: float
    spans: tuple[tuple[int, int, int], ...] = ()  # per window counted: (a, b, its bound)
    mip_time_s: float = 0.0  # the longest limit a window's fluid MIP had (0: none ran)
    interrupted: bool = False  # a SIGINT stopped it (every window may still be counted)


def layer_windows(instance: Instance, per: int = 1,
                  max_width: int = DEFAULT_MAX_WIDTH) -> list[tuple[int, int]]:
    """[a, b) windows: runs of equal `layer`, longer ones cut at `max_width`, `per` runs each."""
    if per < 1 or max_width < 1:
        raise ValueError(f"per and max_width must be >= 1, got {per} and {max_width}")
    runs: list[tuple[int, int]] = []
    ops = instance.ops
    first = 0
    for i in range(1, len(ops) + 1):
        if i == len(ops) or ops[i].layer != ops[first].layer or i - first == max_width:
            runs.append((first, i))
            first = i
    return [(runs[k][0], runs[min(k + per, len(runs)) - 1][1]) for k in range(0, len(runs), per)]


def solver_for_bound(time_limit_s: float, threads: int,
                     deterministic: bool = False) -> cp_model.CpSolver:
    """CP-SAT set to raise the lower bound, not to find plans (BENCHMARKS.md, "Layer windows":
    the LP-based tree search proves a 5b layer's relaxation where the default portfolio does
    not move its bound above the exec chain). `deterministic`: one worker stops on its
    deterministic limit only, with no wall-clock cap (for recomputing a recorded bound)."""
    solver = cp_model.CpSolver()
    prm = solver.parameters
    prm.max_time_in_seconds = time_limit_s
    prm.num_workers = threads
    prm.linearization_level = 2
    if threads == 1:
        prm.optimize_with_lb_tree_search = True
        # One worker under a deterministic limit reaches the same bound on any machine, so a
        # certificate's row recomputes to its recorded value (wall time: a safety cap).
        # A run the cap stopped early (a starved machine) followed the same search for less
        # work, so its bound is at most the uncapped one: a deterministic recompute is never
        # below the recorded value.
        prm.max_deterministic_time = time_limit_s
        prm.max_time_in_seconds = 4 * time_limit_s + 1
        if deterministic:
            prm.max_time_in_seconds = math.inf  # CP-SAT's own default: no wall limit
    else:  # two threads: `lb_tree_search` and CP-SAT's helpers; more: the others too
        prm.subsolvers.extend(["lb_tree_search", "max_lp", "default_lp"][:threads])
    return solver


def _whole_loads(window: Instance, timing: Timing, later: bool, time_limit_s: float,
                 threads: int, deterministic: bool) -> int:
    """The fluid MIP with loads run whole on a window's ops (module docstring), from its first
    execute's start when `later`. `deterministic`: one thread, whose search does not depend
    on the clock, with four times the limit (as the CP-SAT windows' safety cap), so a recorded
    bound recomputes at least to its value unless the machine is four times slower."""
    limit = 4 * time_limit_s + 1 if deterministic else time_limit_s
    solved = fluid_milp_bound(window, timing, limit, band=len(window.ops),
                              threads=1 if deterministic else threads, contiguous=True,
                              from_first_start=later)
    return solved.bound_ns or 0


def layer_bound(instance: Instance, timing: Timing, per: int = 1, time_limit_s: float = 10.0,
                threads: int = 1, max_width: int = DEFAULT_MAX_WIDTH,
                progress: bool = False, deterministic: bool = False,
                mip_time_s: float | None = None, ends: float | None = None) -> LayerBound:
    """The sum of the layer windows' relaxation bounds (module docstring) under `timing`:
    CP-SAT on each distinct window (`time_limit_s`), then the fluid MIP on those it did not
    prove (`mip_time_s` each, None: `time_limit_s`; before `ends`, a perf_counter time, they
    share what is left evenly).

    A SIGINT stops at once: the windows bounded so far still sum to a lower bound, since
    every window's span is non-negative.
    """
    started = time.perf_counter()
    windows = layer_windows(instance, per, max_width)
    keys = [window_key(instance, a, b) for a, b in windows]
    first: dict[tuple, tuple[int, int]] = {}
    for key, window in zip(keys, windows, strict=True):
        first.setdefault(key, window)
    bounds: dict[tuple, int] = {}
    best: dict[tuple, float] = {}  # the least span of a plan CP-SAT found
    most_mip_s = 0.0
    with Interrupt() as interrupt:
        with report_progress(len(first), "layer windows", unit="window",
                             enabled=progress) as shown:
            for key, (a, b) in first.items():
                bounds[key], best[key] = _cpsat_window(instance, a, b, timing, time_limit_s,
                                                       threads, deterministic, interrupt)
                shown.advance(status=f"ops {a}-{b - 1}: {bounds[key]:,} ns")
                if interrupt.seen:
                    break
        open_ = [key for key in bounds if best[key] > bounds[key]]
        with report_progress(len(open_), "layer windows, loads run whole", unit="window",
                             enabled=progress and bool(open_)) as shown:
            for k, key in enumerate(open_):
                limit = share(ends, time_limit_s if mip_time_s is None else mip_time_s,
                              len(open_) - k)
                if interrupt.seen or limit < MIN_MIP_S:
                    break
                most_mip_s = max(most_mip_s, limit)
                a, b = first[key]
                with contextlib.suppress(KeyboardInterrupt):  # a SIGINT: CP-SAT's bound stays
                    bounds[key] = max(bounds[key], _whole_loads(
                        window_instance(instance, a, b), timing, a > 0, limit, threads,
                        deterministic))
                shown.advance(status=f"ops {a}-{b - 1}: {bounds[key]:,} ns")
        counted = [(key, a, b) for key, (a, b) in zip(keys, windows, strict=True)
                   if key in bounds]
        spans = tuple((a, b, bounds[key]) for key, a, b in counted)
        proven = sum(best[key] <= bounds[key] for key, _a, _b in counted)
        stopped = interrupt.seen
    return LayerBound(sum(value for _a, _b, value in spans), len(windows), len(bounds),
                      proven, len(spans), time.perf_counter() - started, spans,
                      round(most_mip_s, 3), stopped)


def _cpsat_window(instance: Instance, a: int, b: int, timing: Timing, time_limit_s: float,
                  threads: int, deterministic: bool, interrupt: Interrupt) -> tuple[int, float]:
    """CP-SAT's bound on window [a, b)'s relaxation and the least span of a plan it found
    (inf if none)."""
    cm = build(window_instance(instance, a, b), Restrictions(), timing=timing)
    if a > 0:
        cm.model.minimize(cm.exec_end[-1] - cm.exec_start[0])
    solver = solver_for_bound(time_limit_s, threads, deterministic)
    status = interrupt.solve(solver, cm.model)
    if status == cp_model.INFEASIBLE:
        raise UsageError(f"instance {instance.name!r} is infeasible (ops {a}-{b - 1} "
                         "cannot be scheduled within SRAM)")
    found = status in (cp_model.OPTIMAL, cp_model.FEASIBLE)
    return (max(0, ceil_integer(solver.best_objective_bound)),
            solver.objective_value if found else math.inf)
