"""The fluid bound: a linear program over how load work and execute work can overlap.

Valid for every plan that executes in the instance's order (any pair choice, preload order,
issue points and releases), under the timing it is built for; SRAM is ignored.

Cut the timeline of a plan at the execute starts S_0 <= ... <= S_{n-1}: interval 0 is
[0, S_0), interval b (1 <= b < n) is [S_{b-1}, S_b) and interval n is [S_{n-1}, T]. Exactly
one execute can be active in interval b >= 1, E<b-1> (executes are serial and E<b-1> ends
before S_b); none in interval 0. At most one data load is active at any time (the HBM is
serial), and the load of op j ends by S_j, so within intervals 0..j. Measure each
instruction's progress in ns of its own uncontended duration ("alone time"): a load of
duration l has l of work, an execute of duration r has r. Under section 5b, when a load of
demand c and an execute of demand e overlap they progress at speeds sL(c, e) = gL / c and
sE(c, e) = gE / e per ns, (gL, gE) = shares(c, e), both <= 1; speed 1 when either demand is 0
or under section 5. Alone, each progresses at speed 1.

Record, for a plan: in interval b, for every load demand class c, the time x[b, c] a class-c
load overlaps the execute and the time z[b, c] it is active while no execute is; and the
time y[b] the execute is active alone. These phases are disjoint, so
    T = sum of interval lengths >= sum_b (y[b] + sum_c x[b, c] + sum_c z[b, c]),
and the plan satisfies, with lambda the (0/1) pair choice:
- execute work: y[b] + sum_c sE(c, e) x[b, c] = run of op b-1's chosen pair (split by the
  execute demand e of its pairs, each split weighted by lambda);
- load work by its deadline: for every class c and cut k, the class-c work done in intervals
  0..k, sum_{b<=k} (z[b, c] + sum sL(c, e) x[b, c]), is at least the alone time of the class-c
  loads of ops 0..k (kept as a running backlog variable, so the rows stay sparse).
Minimising the right-hand side over every such (x, y, z) and every fractional lambda in the
simplex of each op's pairs is a relaxation, hence a lower bound on T; its optimum, rounded up
with a margin for the solver's tolerance, is the bound. The LP sees what the cut bounds see
(the HBM cut is the load rows, the exec chain the execute rows) and, under 5b, what they do
not: a load kept off a NoC-heavy execute must run during another execute or while none runs,
and a load that overlaps it slows one of the two.

Demand classes: with more distinct load demands than `max_classes`, each demand is rounded
down to one of `max_classes` representatives. Rounding a load's demand down never lowers
sL or sE (the port leaves at least as much to each), so the rounded LP is a relaxation too.
The bounds' rows (elk_opt.bounds.rows) ask for `limits.BOUND_CLASSES`, which keeps every
class of the zoo's models exact (at most 19 distinct demands on the Figure 17 grid): with 16,
the LP of Gemma2-27B b64 KV2048 `analytic` sat 9,848 ns lower (BENCHMARKS.md, "Every load
demand its own class"). Other callers keep `limits.DEFAULT_CLASSES` (the reasons there).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import highspy
import numpy as np

from elk_opt.bounds.cuts import PairCost, pair_costs
from elk_opt.bounds.limits import DEFAULT_CLASSES
from elk_opt.noc import shares
from elk_opt.problem import Instance, Timing
from formulations.highs_run import new_highs, run_interruptible


@dataclass(frozen=True)
class FluidBound:
    bound_ns: int | None  # None when the LP did not finish in time
    columns: int
    rows: int
    classes: int
    wall_s: float
    repeats: int = 0  # repeats of a block of ops summed into one (elk_opt.bounds.periodic)
    complete: bool = True  # False: a search stopped by its limit (the bound still holds)


def speeds(load_demand: int, exec_demand: int, timing: Timing) -> tuple[float, float]:
    """(load, execute) progress per ns, in alone time, while the two overlap."""
    if timing == "separate-noc" or load_demand == 0 or exec_demand == 0:
        return 1.0, 1.0
    gl, ge = shares(load_demand, exec_demand)
    return gl / load_demand, ge / exec_demand


def representatives(demands: set[int], max_classes: int) -> list[int]:
    """At most `max_classes` demands, the least always among them, evenly spread in rank."""
    if max_classes < 1:
        raise ValueError(f"max_classes must be at least 1, got {max_classes}")
    ordered = sorted(demands)
    if len(ordered) <= max_classes:
        return ordered
    if max_classes == 1:
        return ordered[:1]
    step = (len(ordered) - 1) / (max_classes - 1)
    return sorted({ordered[round(k * step)] for k in range(max_classes)})


def _class_of(demand: int, reps: list[int]) -> int:
    """Index of the largest representative not above `demand`."""
    k = 0
    while k + 1 < len(reps) and reps[k + 1] <= demand:
        k += 1
    return k


def _undominated(costs: list[PairCost]) -> list[PairCost]:
    """Drop pairs no better than another in every number: the LP never needs them, since it
    is monotone in each (less time or demand never slows anything)."""
    def dominates(a: PairCost, b: PairCost) -> bool:
        return (a.run <= b.run and a.load <= b.load and a.exec_demand <= b.exec_demand
                and a.load_demand <= b.load_demand)
    return [c for c in costs if not any(o != c and dominates(o, c) for o in costs)]


def fluid_costs(instance: Instance) -> list[list[PairCost]]:
    """Per op, the pair costs the fluid LP is built over (the undominated ones)."""
    return [_undominated(cs) for cs in pair_costs(instance)]


class _Lp:
    """Columns with costs and rows with bounds, gathered sparsely and passed to HiGHS once."""

    def __init__(self) -> None:
        self.cost: list[float] = []
        self.row_lower: list[float] = []
        self.row_upper: list[float] = []
        self.start: list[int] = [0]
        self.index: list[int] = []
        self.value: list[float] = []
        self.anchor: list[int] = []  # per column, the op it belongs to (elk_opt.bounds.periodic)
        self.solution: np.ndarray | None = None  # the column values, once solved to optimum

    def column(self, cost: float = 0.0, anchor: int = -1) -> int:
        self.cost.append(cost)
        self.anchor.append(anchor)
        return len(self.cost) - 1

    def rows(self) -> Iterator[tuple[dict[int, float], float, float]]:
        """Each row as ({column: coefficient}, lower, upper)."""
        for r, (lower, upper) in enumerate(zip(self.row_lower, self.row_upper, strict=True)):
            span = range(self.start[r], self.start[r + 1])
            yield {self.index[k]: self.value[k] for k in span}, lower, upper

    def row(self, entries: dict[int, float], lower: float, upper: float) -> None:
        for col, v in entries.items():
            if v:
                self.index.append(col)
                self.value.append(v)
        self.start.append(len(self.index))
        self.row_lower.append(lower)
        self.row_upper.append(upper)

    def append(self, other: _Lp, scale: float = 1.0) -> int:
        """Add `other`'s columns (costs times `scale`) and rows beside this LP's, sharing
        none of them: a block of a joint LP. The offset of `other`'s columns here."""
        offset = len(self.cost)
        for cost, anchor in zip(other.cost, other.anchor, strict=True):
            self.column(scale * cost, anchor)
        for row, lower, upper in other.rows():
            self.row({offset + col: v for col, v in row.items()}, lower, upper)
        return offset

    def solve(self, time_limit_s: float | None, threads: int) -> tuple[float, float] | None:
        """(optimum, sum of dual infeasibilities) of the minimisation, None if not solved."""
        h = self.highs(time_limit_s, threads)
        if run_interruptible(h):
            raise KeyboardInterrupt
        if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
            return None
        self.solution = np.asarray(h.getSolution().col_value)
        info = h.getInfo()
        return info.objective_function_value, max(0.0, info.sum_dual_infeasibilities)

    def highs(self, time_limit_s: float | None, threads: int,
              integers: Sequence[int] = (), general: Sequence[int] = ()) -> highspy.Highs:
        """A quiet HiGHS holding the minimisation, `integers` the columns that are 0 or 1,
        `general` those that are any integer >= 0."""
        h = new_highs(verbose=False)
        h.setOptionValue("threads", threads)
        if time_limit_s is not None:
            h.setOptionValue("time_limit", float(time_limit_s))
        lp = highspy.HighsLp()
        lp.num_col_ = len(self.cost)
        lp.num_row_ = len(self.row_lower)
        lp.col_cost_ = np.array(self.cost)
        lp.col_lower_ = np.zeros(lp.num_col_)
        upper = np.full(lp.num_col_, highspy.kHighsInf)
        upper[list(integers)] = 1.0
        lp.col_upper_ = upper
        lp.row_lower_ = np.array(self.row_lower)
        lp.row_upper_ = np.array(self.row_upper)
        matrix = lp.a_matrix_
        matrix.format_ = highspy.MatrixFormat.kRowwise
        matrix.num_col_, matrix.num_row_ = lp.num_col_, lp.num_row_
        matrix.start_ = np.array(self.start, dtype=np.int32)
        matrix.index_ = np.array(self.index, dtype=np.int32)
        matrix.value_ = np.array(self.value)
        if integers or general:
            kinds = [highspy.HighsVarType.kContinuous] * lp.num_col_
            for col in (*integers, *general):
                kinds[col] = highspy.HighsVarType.kInteger
            lp.integrality_ = kinds
        h.passModel(lp)
        return h


@dataclass
class FluidModel:
    """The fluid LP before solving, with the handles an extension adds rows to: the pair
    columns, per interval b and load class k the column of z (class-k load work while no
    execute is active) and the class-k load work done in b as {column: speed}, and per
    interval its phase columns (x, y, z: the time of the interval they account for)."""

    lp: _Lp
    costs: list[list[PairCost]]
    pick: list[list[int]]
    reps: list[int]
    alone: list[list[int]]  # alone[b][k]: the z column
    work: list[list[dict[int, float]]]
    timing: Timing
    phases: list[list[int]] = field(default_factory=list)
    solo: list[list[int]] = field(default_factory=list)  # per interval: y, the execute alone
    integers: list[int] = field(default_factory=list)  # columns that are 0 or 1 (a MIP)
    # (op j, interval b): the columns of j's fraction of load done by S_b, one per pair
    # (elk_opt.bounds.fluid_sram tracks them; elk_opt.bounds.contiguous reads them)
    fractions: dict[tuple[int, int], list[int]] = field(default_factory=dict)
    # (column, class) of the later ops' load work in an interval (elk_opt.bounds.carry)
    later: list[tuple[int, int]] = field(default_factory=list)

    def load_class(self, c: PairCost) -> int:
        return _class_of(c.load_demand if self.timing == "shared-noc" else 0, self.reps)

    def solve(self, time_limit_s: float | None, threads: int, scale: int = 1) -> int | None:
        """The LP's optimum rounded up with a margin for the solver's tolerance (None if it
        did not finish). A column whose reduced cost is negative by d lets the reported
        optimum exceed the true one by at most d times its value; every column is at most the
        optimum (those with a cost) or the total load time (the others; picks are at most 1),
        times `scale` when a column stands for the sum of that many (elk_opt.bounds.periodic)."""
        solved = self.lp.solve(time_limit_s, threads)
        if solved is None:
            return None
        value, infeasible = solved
        loads = sum(max(c.load for c in cs) for cs in self.costs)
        most = max(value, scale * max(loads, 1.0))
        margin = infeasible * most + 1e-9 * abs(value) + 1e-6
        return max(0, math.ceil(value - margin))


def build_fluid(costs: list[list[PairCost]], timing: Timing, max_classes: int = DEFAULT_CLASSES,
                reps: Sequence[int] | None = None, tail: bool = False) -> FluidModel:
    """The fluid LP (module docstring) over per-op pair costs, not yet solved. `costs` may
    be any PairCost (sub)class instances: an extension keeps more numbers per pair.
    `reps`: the load classes' demands, least first (None: chosen from `costs`; a load's
    demand must not be below the least). `tail`: the last interval gets load columns too,
    for loads of later ops (elk_opt.bounds.carry)."""
    n = len(costs)
    loaded = {c.load_demand if timing == "shared-noc" else 0
              for cs in costs for c in cs if c.load > 0}
    if reps is None:
        reps = representatives(loaded, max_classes) if loaded else []
    reps = list(reps)
    lp = _Lp()
    pick = [[lp.column(anchor=j) for _ in cs] for j, cs in enumerate(costs)]
    for row in pick:
        lp.row(dict.fromkeys(row, 1.0), 1.0, 1.0)
    model = FluidModel(lp, costs, pick, reps, [], [], timing)
    phases: list[list[int]] = [[] for _ in range(n + 1)]
    solo: list[list[int]] = [[] for _ in range(n + 1)]

    # work[b][k]: the class-k load work done in interval b, as {column: speed}
    loading = n + 1 if tail else n  # the intervals with load columns
    work: list[list[dict[int, float]]] = [[{} for _ in reps] for _ in range(loading)]
    alone: list[list[int]] = [[] for _ in range(loading)]
    for b in range(n + 1):
        if b < loading:
            for k in range(len(reps)):
                z = lp.column(1.0, b)  # z: loading while no execute is active
                work[b][k][z] = 1.0
                alone[b].append(z)
                phases[b].append(z)
        if b == 0:
            continue
        i = b - 1
        by_demand: dict[int, list[int]] = {}
        for a, c in enumerate(costs[i]):
            by_demand.setdefault(c.exec_demand if timing == "shared-noc" else 0, []).append(a)
        for demand, members in by_demand.items():
            y = lp.column(1.0, b)  # y: the execute alone
            row = {y: 1.0}
            phases[b].append(y)
            solo[b].append(y)
            if b < loading:  # own loads overlapping the last execute would be too late
                for k, rep in enumerate(reps):
                    x = lp.column(1.0, b)
                    phases[b].append(x)
                    s_load, s_exec = speeds(rep, demand, timing)
                    row[x] = s_exec
                    work[b][k][x] = s_load
            for a in members:
                row[pick[i][a]] = -float(costs[i][a].run)
            lp.row(row, 0.0, 0.0)
    for k in range(len(reps)):
        backlog = None
        for j in range(n):
            row = dict(work[j][k])
            if backlog is not None:
                row[backlog] = 1.0
            for a, c in enumerate(costs[j]):
                if c.load > 0 and model.load_class(c) == k:
                    row[pick[j][a]] = row.get(pick[j][a], 0.0) - c.load
            backlog = lp.column(anchor=j)
            row[backlog] = -1.0
            lp.row(row, 0.0, 0.0)
    model.alone, model.work, model.phases, model.solo = alone, work, phases, solo
    return model


def fluid_pairs(instance: Instance, timing: Timing, time_limit_s: float | None = None,
                threads: int = 1, max_classes: int = DEFAULT_CLASSES
                ) -> tuple[int, list[PairCost]] | None:
    """The fluid LP's bound and, per op, the pair cost its optimum weighs most (None if the
    LP did not finish): the pairs the relaxation finds cheapest for the whole model, a guide
    for heuristics (heuristics.lp_pairs)."""
    costs = fluid_costs(instance)
    model = build_fluid(costs, timing, max_classes)
    bound = model.solve(time_limit_s, threads)
    x = model.lp.solution
    if bound is None or x is None:
        return None
    return bound, [cs[max(range(len(cs)), key=lambda a: x[picks[a]])]
                   for cs, picks in zip(costs, model.pick, strict=True)]


def fluid_bound(instance: Instance, timing: Timing, time_limit_s: float | None = None,
                max_classes: int = DEFAULT_CLASSES, threads: int = 1) -> FluidBound:
    """The fluid LP's bound (module docstring) for plans under `timing`."""
    started = time.perf_counter()
    costs = fluid_costs(instance)
    if not costs:
        return FluidBound(0, 0, 0, 0, time.perf_counter() - started)
    model = build_fluid(costs, timing, max_classes)
    bound = model.solve(time_limit_s, threads)
    return FluidBound(bound, len(model.lp.cost), len(model.lp.row_lower), len(model.reps),
                      time.perf_counter() - started)
