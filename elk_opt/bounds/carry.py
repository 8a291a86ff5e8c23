"""Layer windows that pay for the loads they carry: a Lagrangian split of the makespan.

Valid for every plan that executes in the instance's order (any pair choice, preload order,
issue points and releases), under the timing it is built for.

Cut the ops into consecutive windows (elk_opt.bounds.layers.layer_windows), write s_w for
the start of window w's first execute (s_0 = 0 for the first window) and s_W = T. Then
    T = sum over w of (s_{w+1} - s_w)
exactly. The layer bound drops what a window's loads did before s_w (free) and the later
windows' loads in it (dropped), so in steady state the next layer's loads cost nobody. Count
them instead: per load class c (a load's demand rounded down to one of a set of
representatives every window shares), D_w,c is the alone time of window w's own class-c load
work done before s_w (0 for the first window) and E_w,c that of later windows' class-c loads
done in [s_w, s_{w+1}). Every unit of work done before its window is done in exactly one
earlier window, so sum_w D_w,c = sum_w E_w,c, and for any prices mu_c >= 0
    T = sum over w of (s_{w+1} - s_w + sum_c mu_c (D_w,c - E_w,c)).
Each term is at least the optimum of window w's program: elk_opt.bounds.fluid_milp's MIP
(pairs and pending loads whole, one load running at each execute start) over the window's
ops, with the `Carry` columns of elk_opt.bounds.fluid_sram:
- interval 0, [0, S_0), costs no time (but for the first window) and the window's own load
  work there costs mu_c per ns, mu made non-decreasing in the class (`monotone`: the
  program's pairs are the undominated ones; work before the band, were the band shorter
  than the window, is not priced: pricing less only lowers the optimum);
- later windows' loads are columns g in intervals 1..n (0..n for the first window, whose
  time starts at 0), the last interval reaching to s_{w+1}: they use the interval's class
  capacity, earn mu_c per ns, and are charged in R5 at every later execute of the window at
  the least bytes per ns of any load of their class (a later load that worked before S_i
  is pending at E<i> and holds its whole space, at least that density times its work).
The plan's own timeline is a point of each program with those values, so the sum of the
programs' optima, or of any lower bounds on them (HiGHS's dual bound when a limit stops the
search), is a lower bound on T for every mu >= 0; identical windows are solved once. With
mu = 0 it is the fluid part of the layer bound (elk_opt.bounds.layers).

Prices. The programs' LP relaxations joined into one LP with the coupling rows
sum_w (D_w,c - E_w,c) <= 0 give, as the rows' duals, the prices that maximise the sum of the
relaxed optima (LP duality; columns that move a class's slack to the class above keep the
duals non-decreasing in the class). The MIPs at those prices can only be higher, and the
prices are then moved by Kelley's cutting planes: each MIP solution found is a plane above
its window's optimum as a function of mu (that solution's objective at mu), and the LP over
the least of each window's planes, in a box around the best prices, picks the next prices.
Prices stay within [0, MAX_PRICE]: above 1 a window's program is unbounded (a ns of later
load work alone after its last execute costs 1 ns and earns more).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import highspy
import numpy as np

from elk_opt.bounds.contiguous import add_one_load_running
from elk_opt.bounds.fluid import FluidModel, _class_of, _Lp, representatives
from elk_opt.bounds.fluid_milp import branch_and_bound
from elk_opt.bounds.fluid_sram import Carry, build_fluid_sram, spaced_costs
from elk_opt.bounds.layers import DEFAULT_MAX_WIDTH, MIN_MIP_S, layer_windows
from elk_opt.bounds.limits import DEFAULT_CLASSES
from elk_opt.bounds.window import window_instance, window_key
from elk_opt.deadline import share
from elk_opt.noc import load_use
from elk_opt.problem import Instance, Timing
from elk_opt.progress import report_progress
from formulations.highs_run import run_interruptible

MAX_PRICE = 1.0
ROUNDS = 4  # price vectors tried, at most, the first two included
BOX = 0.1  # half-width of the box the next prices are chosen in, around the best so far


@dataclass(frozen=True)
class Classes:
    """The load classes every window shares, and per class the least pending bytes per ns of
    load alone time of any load in it (None: no load of the class)."""

    reps: tuple[int, ...]
    density: tuple[float | None, ...]


def load_classes(instance: Instance, timing: Timing, max_classes: int = DEFAULT_CLASSES) -> Classes:
    """Over every preload plan of every op (dominated ones included: a plan may load them)."""
    least: dict[int, float] = {}
    for op in instance.ops:
        for q in op.preload_plans:
            use = load_use(instance.chip, q)
            if use.duration_ns > 0:
                d = use.demand if timing == "shared-noc" else 0
                least[d] = min(least.get(d, math.inf), q.space_bytes / use.duration_ns)
    reps = representatives(set(least), max_classes) if least else []
    density: list[float | None] = [None] * len(reps)
    for d, ratio in least.items():
        k = _class_of(d, reps)
        density[k] = min(ratio, density[k] or math.inf)
    return Classes(tuple(reps), tuple(density))


@dataclass(frozen=True)
class Window:
    ops: Instance
    count: int  # identical windows it stands for
    first: bool  # the instance's first window: from time 0, nothing carried in


@dataclass(frozen=True)
class Plane:
    """A window program's solution as a function of the prices: span + mu . (D - E)."""

    span: float
    carried: tuple[float, ...]  # D - E per class


def program(window: Window, classes: Classes, prices: Sequence[float], timing: Timing,
            whole: bool) -> FluidModel:
    """The window's program (module docstring); `whole`: the MIP, else its LP relaxation."""
    before = tuple(0.0 for _ in prices) if window.first else monotone(prices)
    # the first window's time starts at 0: later loads may work in its interval 0 too
    carry = Carry(classes.reps, before, tuple(prices), classes.density,
                  first=0 if window.first else 1)
    model = build_fluid_sram(spaced_costs(window.ops), window.ops.chip.sram_bytes, timing,
                             band=len(window.ops.ops), max_classes=len(classes.reps),
                             whole=whole, carry=carry)
    if whole:
        add_one_load_running(model)
    if not window.first:  # interval 0 lies before the window
        for col in model.phases[0]:
            model.lp.cost[col] = 0.0
    return model


def monotone(prices: Sequence[float]) -> tuple[float, ...]:
    """Per class, the least price of it and every class of a higher demand: what a window's
    own work before it is charged. The programs keep only undominated pairs, and a plan's
    dominated pair stands there as one no worse in every number: a load of less (or equal)
    time and demand, so of a class no higher. Charged at these prices its work before the
    window costs the program no more than the plan's own pair would at the plan's class."""
    out = list(prices)
    for k in range(len(out) - 2, -1, -1):
        out[k] = min(out[k], out[k + 1])
    return tuple(out)


def carried(model: FluidModel, first: bool) -> list[tuple[int, int, float]]:
    """The terms of D - E: (column, class, coefficient), alone time per unit of the column."""
    terms: list[tuple[int, int, float]] = []
    if not first:
        for j, cs in enumerate(model.costs):
            cols = model.fractions.get((j, 0), [])
            loading = [c for c in cs if c.load > 0]
            if len(cols) == len(loading):  # the band reaches interval 0 (always, band = n)
                terms += [(col, model.load_class(c), float(c.load))
                          for col, c in zip(cols, loading, strict=True)]
    terms += [(col, k, -1.0) for col, k in model.later]
    return terms


@dataclass(frozen=True)
class Solved:
    bound: float  # at most the program's optimum (-inf: nothing known)
    proven: bool
    plane: Plane | None  # from the best solution found, if any


def solve_window(window: Window, classes: Classes, prices: Sequence[float], timing: Timing,
                 time_limit_s: float | None, threads: int = 1) -> Solved:
    """The window's MIP at `prices`: HiGHS's dual bound (less its margin,
    fluid_milp.branch_and_bound) and the plane of its best solution."""
    model = program(window, classes, prices, timing, whole=True)
    mip = branch_and_bound(model.lp, model.integers, time_limit_s, threads)
    plane = None
    if mip.solution is not None and mip.objective is not None:
        total = [0.0] * len(prices)
        for col, k, v in carried(model, window.first):
            total[k] += v * mip.solution[col]
        plane = Plane(mip.objective - float(np.dot(prices, total)), tuple(total))
    return Solved(-math.inf if mip.dual is None else mip.dual, mip.proven, plane)


def lp_prices(windows: Sequence[Window], classes: Classes, timing: Timing,
              time_limit_s: float | None, threads: int = 1) -> tuple[float, ...] | None:
    """The prices, non-decreasing in the class (`monotone`), that maximise the sum of the
    windows' LP relaxations: the duals of the coupling rows of their joint LP (module
    docstring), with columns that move a class's slack to the next class up. None if it did
    not finish."""
    joint = _Lp()
    coupling: list[dict[int, float]] = [{} for _ in classes.reps]
    zero = [0.0] * len(classes.reps)
    for window in windows:
        model = program(window, classes, zero, timing, whole=False)
        offset = joint.append(model.lp, window.count)
        for col, k, v in carried(model, window.first):
            coupling[k][offset + col] = coupling[k].get(offset + col, 0.0) + window.count * v
    for k in range(len(coupling) - 1):  # slack moved up a class: duals non-decreasing
        moved = joint.column(0.0)
        coupling[k][moved] = -1.0
        coupling[k + 1][moved] = 1.0
    first_coupling = len(joint.row_lower)
    for row in coupling:
        joint.row(row, float("-inf"), 0.0)
    h = joint.highs(time_limit_s, threads)
    if run_interruptible(h):
        raise KeyboardInterrupt
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None
    duals = h.getSolution().row_dual[first_coupling:]
    return tuple(min(MAX_PRICE, max(0.0, -d)) for d in duals)


def next_prices(windows: Sequence[Window], planes: Sequence[Sequence[Plane]],
                best: Sequence[float]) -> tuple[float, ...] | None:
    """Kelley's step: the prices within BOX of `best`, non-decreasing in the class, that
    maximise the sum over windows of the least of each window's planes (None if a window has
    no plane)."""
    if any(not p for p in planes):
        return None
    lp = _Lp()
    k = len(best)
    mu = [lp.column(0.0) for _ in range(k)]
    theta = [lp.column(-float(w.count)) for w in windows]
    for c in range(k):
        lp.row({mu[c]: 1.0}, max(0.0, best[c] - BOX), min(MAX_PRICE, best[c] + BOX))
        if c:
            lp.row({mu[c]: 1.0, mu[c - 1]: -1.0}, 0.0, float("inf"))
    for t, ps in zip(theta, planes, strict=True):
        for p in ps:
            lp.row({t: 1.0, **{mu[c]: -p.carried[c] for c in range(k)}}, float("-inf"), p.span)
    h = lp.highs(None, 1)
    h.run()
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None
    x = h.getSolution().col_value
    return tuple(min(MAX_PRICE, max(0.0, x[c])) for c in mu)


@dataclass(frozen=True)
class CarryBound:
    bound_ns: int
    prices: tuple[float, ...]  # where the bound was found
    windows: int
    distinct: int
    proven: int  # distinct windows whose MIP was solved at those prices
    rounds: int  # price vectors tried
    wall_s: float
    mip_time_s: float  # the longest limit a window's MIP had
    sums: tuple[int, ...] = ()  # per price vector tried, in order, the sum (0: cut short)


def distinct_windows(instance: Instance, per: int = 1,
                     max_width: int = DEFAULT_MAX_WIDTH) -> list[Window]:
    counts: dict[tuple, int] = {}
    spans: dict[tuple, tuple[int, int]] = {}
    for a, b in layer_windows(instance, per, max_width):
        key = window_key(instance, a, b)
        counts[key] = counts.get(key, 0) + 1
        spans.setdefault(key, (a, b))
    return [Window(window_instance(instance, a, b), counts[key], a == 0)
            for key, (a, b) in spans.items()]


def carry_bound(instance: Instance, timing: Timing, per: int = 1,
                max_width: int = DEFAULT_MAX_WIDTH, mip_time_s: float = 60.0,
                rounds: int = ROUNDS, threads: int = 1, ends: float | None = None,
                prices: Sequence[float] | None = None, max_classes: int = DEFAULT_CLASSES,
                progress: bool = False) -> CarryBound:
    """The bound of the module docstring: the windows' MIPs (`mip_time_s` each, at most;
    before `ends`, a perf_counter time, they share what is left) at the joint LP's prices,
    and at prices 0, then up to `rounds` Kelley steps from the better. `prices`: evaluate at
    these only (a recorded row)."""
    started = time.perf_counter()
    classes = load_classes(instance, timing, max_classes)
    windows = distinct_windows(instance, per, max_width)
    fixed = prices is not None
    if prices is None:
        prices = lp_prices(windows, classes, timing,
                           max(MIN_MIP_S, share(ends, mip_time_s)), threads)
    if prices is None or len(prices) != len(classes.reps):
        prices = tuple(0.0 for _ in classes.reps)
    planes: list[list[Plane]] = [[] for _ in windows]
    best, best_prices, best_proven, tried, longest = -math.inf, tuple(prices), 0, 0, 0.0
    # the joint LP's prices, then none (the layer windows' terms: the MIPs at the LP's prices
    # can come out lower), then Kelley's steps from the better
    queue = ([tuple(prices)] if fixed
             else [tuple(prices), tuple(0.0 for _ in prices)][:max(1, rounds)])
    sums: list[int] = []
    with report_progress(1 if fixed else rounds, "carrying windows", unit="price vector",
                         enabled=progress) as shown:
        while queue:
            current = queue.pop(0)
            total, proven = 0.0, 0
            for k, window in enumerate(windows):
                limit = share(ends, mip_time_s, len(windows) - k)
                if limit < MIN_MIP_S:
                    total = -math.inf
                    break
                longest = max(longest, limit)
                solved = solve_window(window, classes, current, timing, limit, threads)
                total += window.count * solved.bound
                proven += solved.proven
                if solved.plane is not None:
                    planes[k].append(solved.plane)
            tried += 1
            sums.append(max(0, math.floor(total)) if math.isfinite(total) else 0)
            if total > best:
                best, best_prices, best_proven = total, current, proven
            shown.advance(status=f"best {best:,.0f} ns" if math.isfinite(best) else "")
            if fixed or queue or tried >= rounds or not math.isfinite(total):
                continue
            following = next_prices(windows, planes, best_prices)
            if following is not None and not np.allclose(following, best_prices, atol=1e-4):
                queue.append(following)
    return CarryBound(max(0, math.floor(best)) if math.isfinite(best) else 0, best_prices,
                      sum(w.count for w in windows), len(windows), best_proven, tried,
                      time.perf_counter() - started, round(longest, 3), tuple(sums))
