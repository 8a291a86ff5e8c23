"""The fluid bound with SRAM: the fluid LP plus rule R5 over the loads each execute sees.

Valid for every plan that executes in the instance's order (any pair choice, preload order,
issue points and releases), under the timing it is built for (the fluid LP's, see
elk_opt.bounds.fluid, whose notation this follows: interval b is [S_{b-1}, S_b), E<b-1> the
only execute that can be active in it).

What the fluid LP misses: a load that makes progress early holds SRAM from its issue until its
op executes. Precisely, if load j (j > k) does any work before S_k, or while E<k> is active,
then P<j> precedes E<k> in the program (a preload listed after E<k> starts no earlier than
E<k> ends, docs/spec.md 5 and 5b), and E<j> follows E<k>, so j is pending at E<k> and R5 at k
charges its preload space in full.

Per op j and each of its pairs a whose load moves data, the LP gets cumulative fractions
F[j, a, b] in [0, 1] of that load's work (in alone time, as the fluid LP counts it) done in
intervals up to b, for b in a band j - band .. j (F[j, a, j - band - 1] is the work done before
the band, one column), and wz[j, a, b], the fraction done in interval b while no execute is
active. For the true plan with pair a chosen (lambda = 1 there, 0 for the op's other pairs,
all of whose columns are 0), these satisfy:
- F[j, a, j] = lambda[j, a]: the load is done by S_j; F is non-decreasing in b; and
  0 <= wz[j, a, b] <= F[j, a, b] - F[j, a, b - 1];
- interval capacity: for each interval b and load class k, the class-k loads' work in b,
  sum load_a (F[j, a, b] - F[j, a, b - 1]), is at most the work the fluid LP credits class k
  in b (which is at least the true work: the LP's speeds are never below the true ones), and
  their work while no execute is active, sum load_a wz[j, a, b], is at most the class's z;
- R5 at k: held(k) + sum over j > k, j - band - 1 <= k, loading pairs a of
  space_a (F[j, a, k + 1] - wz[j, a, k + 1]) <= sram. The charged fraction is the work done
  before S_k or while E<k> is active (the work of interval k + 1 not done alone); it is
  positive only if j is pending at k, and at most lambda[j, a], so the row is implied by R5.
  Pending loads outside the band, and loads of pairs that move no data, are not charged
  (dropping a charge only relaxes).
- rounded R5 at k, per divisor D (the distinct preload spaces of at least SRAM_SHARE of the
  SRAM, the MAX_DIVISORS largest; a row another divisor already gave is not repeated): sum
  over the same j and a of
  floor(space_a / D) (F[j, a, k + 1] - wz[j, a, k + 1]) <= sum over k's pairs c of
  floor((sram - held_c) / D) lambda[k, c]. For the plan, with k's pair c: each term's
  fraction is at most the 0/1 "j pending at k with pair a", and the floors of the pending
  spaces sum to at most the floor of their sum, which R5 keeps within sram - held_c. These
  are Chvatal-Gomory cuts of R5 over the pending indicators. The LP's R5 row lets a pending
  load count the fraction done: 2.47 loads of 131,072 B beside a 314,480 B execute, where a
  plan pends 2. On OPT-30B b64 KV4096 under `bsp` they raise the bound 3.1% (BENCHMARKS.md,
  "Rounded R5 rows"). The grid's whole models have 8-22 such spaces; with only the 8 largest,
  Llama2-13B b64 KV4096 (153-223 kB) had no rows for its nine smaller ones (36-153 kB), and
  its bound was 0.56% lower (BENCHMARKS.md, "Every divisor"). Spaces below a twentieth of the
  SRAM added nothing on its five-layer slice.
Every row holds for the true plan and the objective is the fluid LP's, at most the makespan,
so the optimum is a lower bound. The band is sparsity only: work before it stays in one
column. Pairs are kept when no other is at least as good in every number the LP uses (times,
demands, both spaces).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from elk_opt.bounds.cuts import PairCost, pair_uses
from elk_opt.bounds.fluid import FluidBound, FluidModel, build_fluid
from elk_opt.bounds.limits import DEFAULT_CLASSES, FLUID_BAND
from elk_opt.bounds.periodic import solve_fluid, solve_fluid_picks, solved_ops
from elk_opt.noc import PortUse
from elk_opt.problem import ExecPlan, Instance, PreloadPlan, Timing

DEFAULT_BAND = FLUID_BAND
SRAM_SHARE = 1 / 20  # smallest divisor of the rounded R5 rows, as a share of the SRAM
MAX_DIVISORS = 24  # rounded R5 rows per execute at most, the largest divisors kept
# the guide (`fluid_sram_pairs`) keeps the 8 it had: with every divisor its picks made
# elk-full-lp slower on 6 of the regression suite's instances (BENCHMARKS.md, "Every divisor")
GUIDE_DIVISORS = 8


@dataclass(frozen=True)
class SpacedCost(PairCost):
    """A pair's costs with the SRAM R5 charges for it: pending, and at its own execute."""

    load_space: int
    held_space: int


def spaced_cost(q: PreloadPlan, p: ExecPlan, run: PortUse, load: PortUse) -> SpacedCost:
    """The costs of running an op with preload layout q and execute layout p."""
    return SpacedCost(run.duration_ns, load.duration_ns, run.demand, load.demand,
                      q.space_bytes, max(q.space_bytes, p.space_bytes))


def spaced_costs(instance: Instance) -> list[list[SpacedCost]]:
    """Per op, the pairs R5 allows, undominated in every number (times, demands, spaces)."""
    out = []
    for op in instance.ops:
        costs = {spaced_cost(*use) for use in pair_uses(op, instance.chip)}
        out.append(_undominated(sorted(costs, key=cost_numbers)))
    return out


def cost_numbers(c: SpacedCost) -> tuple[int, ...]:
    """Every number of a pair the LP uses, each the smaller the better: one pair no worse
    than another in each of them is at least as good for the LP and for a plan."""
    return (c.run, c.load, c.exec_demand, c.load_demand, c.load_space, c.held_space)


def _undominated(costs: list[SpacedCost]) -> list[SpacedCost]:
    keys = [cost_numbers(c) for c in costs]
    return [c for c, k in zip(costs, keys, strict=True)
            if not any(o != k and all(x <= y for x, y in zip(o, k, strict=True))
                       for o in keys)]


def fluid_sram_bound(instance: Instance, timing: Timing, time_limit_s: float | None = None,
                     band: int = DEFAULT_BAND, max_classes: int = DEFAULT_CLASSES,
                     threads: int = 1, periodic: bool = True) -> FluidBound:
    """The fluid LP with R5 rows (module docstring), loads tracked `band` intervals back.
    `periodic`: where a block of ops repeats, solve the LP with the repeats summed
    (elk_opt.bounds.periodic), a relaxation of the same LP that stays small at any depth."""
    return solve_fluid(spaced_costs(instance), _builder(instance, timing, band, max_classes),
                       time_limit_s, threads, reach=band + 2 if periodic else None)


def fluid_sram_pairs(instance: Instance, timing: Timing, time_limit_s: float | None = None,
                     threads: int = 1, band: int = DEFAULT_BAND, max_classes: int = DEFAULT_CLASSES
                     ) -> tuple[int, list[SpacedCost]] | None:
    """The bound of `fluid_sram_bound` with GUIDE_DIVISORS rounded rows (at most its bound)
    and, per op, the pair that LP's optimum weighs most (None if the LP did not finish): as
    `fluid.fluid_pairs`, a guide for heuristics (heuristics.lp_pairs), here with SRAM
    counted."""
    return solve_fluid_picks(spaced_costs(instance),
                             _builder(instance, timing, band, max_classes, GUIDE_DIVISORS),
                             time_limit_s, threads, reach=band + 2)


def _builder(instance: Instance, timing: Timing, band: int, max_classes: int,
             divisors: int | None = None) -> Callable[[list[list[SpacedCost]]], FluidModel]:
    if band < 0:
        raise ValueError(f"band must be >= 0, got {band}")
    sram = instance.chip.sram_bytes

    def build(costs: list[list[SpacedCost]]) -> FluidModel:
        return build_fluid_sram(costs, sram, timing, band, max_classes, divisors=divisors)

    return build


def fluid_sram_ops(instance: Instance, band: int = DEFAULT_BAND) -> int:
    """The ops the LP of `fluid_sram_bound` covers, repeats summed: what its cost grows with."""
    return solved_ops(spaced_costs(instance), band + 2)


@dataclass(frozen=True)
class Carry:
    """Prices on the load work a window carries across its ends (elk_opt.bounds.carry): per
    load class (demand `reps[k]`), `before[k]` per ns of alone time of its own loads done
    before its first execute (in interval 0), and `price[k]` earned per ns of later ops'
    loads done in it (columns g[b, k] in intervals `first`..n, none where `density[k]` is
    None); such a load is pending at every execute after its work, and pends at least
    `density[k]` bytes per ns of that work."""

    reps: tuple[int, ...]
    before: tuple[float, ...]
    price: tuple[float, ...]
    density: tuple[float | None, ...]
    first: int = 1  # the first interval of the window's time: 0 for a model's first window


def build_fluid_sram(costs: list[list[SpacedCost]], sram_bytes: int, timing: Timing,
                     band: int, max_classes: int, whole: bool = False,
                     divisors: int | None = None, carry: Carry | None = None,
                     both: bool = False) -> FluidModel:
    """The fluid LP over `costs` with the R5 rows of the module docstring, not yet solved.
    `whole`: R5 charges pending loads whole, through 0/1 columns (elk_opt.bounds.fluid_milp),
    listed with the pair columns in `model.integers`. `divisors`: of the rounded R5 rows at
    most (None: MAX_DIVISORS). `carry`: with the columns and prices of `Carry` (the later
    ops' work in `model.later`). `both` (with `whole`): R5 rows with the LP's charges too,
    the LP's columns and rows first and in the LP's order (elk_opt.bounds.split)."""
    n = len(costs)
    model = build_fluid(costs, timing, max_classes,  # type: ignore[arg-type]
                        reps=None if carry is None else carry.reps, tail=carry is not None)
    lp = model.lp
    sram = float(sram_bytes)
    # per interval b and class k: {column: coefficient} of the tracked loads' work (and
    # alone work) in b; per execute k: the charges of the loads pending at it; per (op j,
    # execute k): for each loading pair, its progress by E<k>'s end less its alone work there
    done: dict[tuple[int, int], dict[int, float]] = {}
    alone: dict[tuple[int, int], dict[int, float]] = {}
    charged: list[dict[int, float]] = [{} for _ in range(n)]
    progress: dict[tuple[int, int], list[tuple[int, int, int]]] = {}
    for j, cs in enumerate(costs):
        first = max(0, j - band)
        for a, c in enumerate(cs):
            if c.load == 0:
                continue
            k = model.load_class(c)
            before = lp.column(anchor=j) if first > 0 else None  # the fraction done before the band
            if before is not None:
                model.fractions.setdefault((j, first - 1), []).append(before)
            previous = before
            for b in range(first, j + 1):
                f = lp.column(anchor=j)
                model.fractions.setdefault((j, b), []).append(f)
                if b == j:
                    lp.row({f: 1.0, model.pick[j][a]: -1.0}, 0.0, 0.0)
                step = {f: 1.0} if previous is None else {f: 1.0, previous: -1.0}
                if previous is not None:
                    lp.row(step, 0.0, float("inf"))
                cell = done.setdefault((b, k), {})
                for col, v in step.items():
                    cell[col] = cell.get(col, 0.0) + v * c.load
                if b == 0 and carry is not None:  # own work before the first execute
                    lp.cost[f] += carry.before[k] * c.load
                wz = None
                if b >= 1:
                    wz = lp.column(anchor=j)
                    lp.row({wz: 1.0, **{col: -v for col, v in step.items()}},
                           float("-inf"), 0.0)
                    alone.setdefault((b, k), {})[wz] = float(c.load)
                    # the charge at E<b-1>: work before S_{b-1} or while E<b-1> runs
                    progress.setdefault((j, b - 1), []).append((a, f, wz))
                previous = f
    if carry is not None:
        _later_loads(model, carry, done, charged, sram)
    for (b, k), cell in done.items():
        row = dict(cell)
        for col, v in model.work[b][k].items():
            row[col] = row.get(col, 0.0) - v
        lp.row(row, float("-inf"), 0.0)
    for (b, k), cell in alone.items():
        lp.row({**cell, model.alone[b][k]: -1.0}, float("-inf"), 0.0)
    if whole and not both:
        model.integers = [col for row in model.pick for col in row]
        _whole_charges(model, costs, progress, charged, sram)
    else:  # the LP's charges: the fraction of each pending load's space it has loaded
        for (j, k), pairs in progress.items():
            for a, f, wz in pairs:
                charged[k][f] = costs[j][a].load_space / sram
                charged[k][wz] = -costs[j][a].load_space / sram
    _rounded_r5(model, costs, progress, sram_bytes,
                MAX_DIVISORS if divisors is None else divisors)
    for k in range(n):
        _r5_row(model, costs, k, charged[k], sram)
    if whole and both:  # after every column and row of the LP, which keep their places
        model.integers = [col for row in model.pick for col in row]
        whole_charged: list[dict[int, float]] = [{} for _ in range(n)]
        _whole_charges(model, costs, progress, whole_charged, sram)
        for k in range(n):
            _r5_row(model, costs, k, whole_charged[k], sram)
    return model


def _r5_row(model: FluidModel, costs: list[list[SpacedCost]], k: int,
            charged: dict[int, float], sram: float) -> None:
    """R5 at E<k>: its held space and the charges of the loads pending there fit the SRAM."""
    row = dict(charged)
    for a, c in enumerate(costs[k]):
        row[model.pick[k][a]] = c.held_space / sram
    model.lp.row(row, float("-inf"), 1.0)


def _later_loads(model: FluidModel, carry: Carry, done: dict[tuple[int, int], dict[int, float]],
                 charged: list[dict[int, float]], sram: float) -> None:
    """The columns g[b, k] of `Carry`: class-k work of later ops' loads in interval b, in
    that interval's class-k capacity, earning the class's price, and charged at every
    execute E<i> with i >= b (interval b ends at S_b: the load did work before S_i, so it
    is pending at E<i>)."""
    lp = model.lp
    n = len(model.costs)
    for b in range(carry.first, n + 1):
        for k, density in enumerate(carry.density):
            if density is None:
                continue
            g = lp.column(-carry.price[k], b)
            model.later.append((g, k))
            done.setdefault((b, k), {})[g] = 1.0
            for i in range(b, n):
                charged[i][g] = density / sram


def _whole_charges(model: FluidModel, costs: list[list[SpacedCost]],
                   progress: dict[tuple[int, int], list[tuple[int, int, int]]],
                   charged: list[dict[int, float]], sram: float) -> None:
    """R5 charges of whole loads (elk_opt.bounds.fluid_milp): per op j and execute k, a 0/1
    u at least j's progress by E<k>'s end, u non-decreasing in k, and a charge at least
    j's chosen preload space when u is 1."""
    lp = model.lp
    previous: dict[int, int] = {}
    for (j, k), pairs in sorted(progress.items()):
        u = lp.column(anchor=j)
        model.integers.append(u)
        row = {u: -1.0}
        for _a, f, wz in pairs:
            row[f], row[wz] = 1.0, -1.0
        lp.row(row, float("-inf"), 0.0)
        if j in previous:
            lp.row({previous[j]: 1.0, u: -1.0}, float("-inf"), 0.0)
        previous[j] = u
        most = max(costs[j][a].load_space for a, _f, _wz in pairs) / sram
        charge = lp.column(anchor=j)
        # charge >= sum_a space_a lambda[j, a] - most (1 - u)
        lp.row({charge: 1.0, u: -most,
                **{model.pick[j][a]: -costs[j][a].load_space / sram for a, _f, _wz in pairs}},
               -most, float("inf"))
        charged[k][charge] = 1.0


def _rounded_r5(model: FluidModel, costs: list[list[SpacedCost]],
                progress: dict[tuple[int, int], list[tuple[int, int, int]]],
                sram_bytes: int, most: int) -> None:
    """The rounded R5 rows of the module docstring, one per execute and divisor, the `most`
    largest divisors."""
    spaces = {c.load_space for cs in costs for c in cs if c.load > 0}
    divisors = sorted((d for d in spaces if d >= SRAM_SHARE * sram_bytes),
                      reverse=True)[:most]
    pending: dict[int, list[tuple[int, list[tuple[int, int, int]]]]] = {}
    for (j, k), pairs in progress.items():
        pending.setdefault(k, []).append((j, pairs))
    for k, loads in sorted(pending.items()):
        seen: set[tuple[tuple[int, float], ...]] = set()
        for d in divisors:
            row: dict[int, float] = {}
            for j, pairs in loads:
                for a, f, wz in pairs:
                    units = costs[j][a].load_space // d
                    if units:
                        row[f] = row.get(f, 0.0) + units
                        row[wz] = row.get(wz, 0.0) - units
            if not row:
                continue
            for c, cost in enumerate(costs[k]):
                row[model.pick[k][c]] = -float((sram_bytes - cost.held_space) // d)
            key = tuple(row.items())  # a divisor close to another often gives the same row
            if key not in seen:
                seen.add(key)
                model.lp.row(row, float("-inf"), 0.0)
