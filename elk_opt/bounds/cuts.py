"""Lower bounds from cuts at an execute's start: HBM and NoC-port work that must precede it.

Notation, for a plan that executes in the instance's order (R2's default, every method here):
S_k = start of E<k>, T = makespan, and per op its chosen pair's execute duration `run`
(time + warm-up), load duration `load`, and port units `port_load`, `port_exec` (docs/spec.md 5b:
duration x demand in permille-ns; 0 for an instruction of demand 0, which uses no port).
Section 5b only slows instructions (a shared port never gives one more than its demand), so
every duration below is at least its section-5 value under either timing.

HBM cut (both timings). Every load of an op j <= k ends by S_j <= S_k (E<j> waits for P<j>
and precedes E<k>), and data loads are serial on the HBM from time 0, so
S_k >= sum_{j<=k} load_j. The executes k..n-1 follow S_k one after another, so
    T >= sum_{j<k} load_j + (load_k + run_k) + sum_{i>k} run_i.
Port cut (5b). The port does at most 1000 units per ns, and an instruction's port units are
all spent while it is active. In [0, S_k] lie every load of an op j <= k and every execute
i < k, so 1000 S_k >= sum_{j<=k} port_load_j + sum_{i<k} port_exec_i, and as above
    1000 T >= sum_{j<k} (port_load_j + port_exec_j) + (port_load_k + 1000 run_k)
              + 1000 sum_{i>k} run_i.
Port total (5b, any execution order). All instructions lie in [0, T]:
    1000 T >= sum_i (port_load_i + port_exec_i).
Any-order cuts (R2 free). In every topological order, what precedes E<k> includes its
ancestors A(k) (the ops it depends on, directly or not) and what follows includes its
descendants D(k). So the two cuts hold for every order with j < k read as j in A(k) and i > k
as i in D(k):
    T >= sum_{A(k)} load_j + (load_k + run_k) + sum_{D(k)} run_i,
    1000 T >= sum_{A(k)} (port_load_j + port_exec_j) + (port_load_k + 1000 run_k)
              + 1000 sum_{D(k)} run_i.
On a chain they are the instance-order cuts; wherever ops are independent they are weaker.
Quadratic (a dense ancestor matrix): up to ANY_ORDER_MAX_OPS ops.
Pairs are decisions: each right-hand side is a sum of per-op terms, each depending on its own
op's pair only, so its least value over all choices is the sum of per-op minima (over the
pairs R5 allows, as for the Ideal). Each bound is that minimum, maximised over k. Linear time.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from elk_opt.bounds.ideal import allowed_pairs
from elk_opt.noc import PORT, PortUse, exec_use, load_use
from elk_opt.problem import Chip, ExecPlan, Instance, Op, PreloadPlan


@dataclass(frozen=True)
class PairCost:
    """One pair's durations alone and port demands (permille), as the timings see them."""

    run: int
    load: int
    exec_demand: int
    load_demand: int

    @property
    def port_exec(self) -> int:
        return self.run * self.exec_demand

    @property
    def port_load(self) -> int:
        return self.load * self.load_demand


def pair_uses(op: Op, chip: Chip) -> Iterator[tuple[PreloadPlan, ExecPlan, PortUse, PortUse]]:
    """Each pair R5 allows for `op`, with its execute's and its load's use of time and port."""
    for q, p, t in allowed_pairs(op, chip.sram_bytes):
        yield q, p, exec_use(chip, p, t), load_use(chip, q)


def pair_cost(q: PreloadPlan, p: ExecPlan, run: PortUse, load: PortUse) -> PairCost:
    """The costs of running an op with preload layout q and execute layout p (a `pair_uses`
    row), as the timings see them."""
    return PairCost(run.duration_ns, load.duration_ns, run.demand, load.demand)


def with_pairs_costing(op: Op, chip: Chip, cost: PairCost,
                       cost_of: Callable[..., PairCost] = pair_cost) -> Op:
    """`op` with its compatible pairs cut to those whose cost (`cost_of` of a `pair_uses`
    row) is `cost`: a guide for a heuristic, which then plans only those."""
    keep = {(use[0].id, use[1].id) for use in pair_uses(op, chip) if cost_of(*use) == cost}
    return dataclasses.replace(
        op, warmup=tuple(w for w in op.warmup if (w.preload, w.exec) in keep))


def pair_costs(instance: Instance) -> list[list[PairCost]]:
    """Per op, the distinct costs of the pairs R5 allows."""
    out = []
    for op in instance.ops:
        costs = {pair_cost(*use) for use in pair_uses(op, instance.chip)}
        out.append(sorted(costs, key=lambda c: (c.run, c.load, c.exec_demand, c.load_demand)))
    return out


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _cut(before: list[int], at: list[int], after: list[int]) -> int:
    """max over k of sum_{j<k} before_j + at_k + sum_{i>k} after_i."""
    best = 0
    prefix = 0
    suffix = sum(after)
    for b, a, s in zip(before, at, after, strict=True):
        suffix -= s
        best = max(best, prefix + a + suffix)
        prefix += b
    return best


def hbm_cut_bound(instance: Instance) -> int:
    """The HBM cut (module docstring); both timings, instance order."""
    costs = pair_costs(instance)
    return _cut([min(c.load for c in cs) for cs in costs],
                [min(c.load + c.run for c in cs) for cs in costs],
                [min(c.run for c in cs) for cs in costs])


def port_cut_bound(instance: Instance) -> int:
    """The port cut (module docstring); section 5b, instance order."""
    costs = pair_costs(instance)
    units = _cut([min(c.port_load + c.port_exec for c in cs) for cs in costs],
                 [min(c.port_load + PORT * c.run for c in cs) for cs in costs],
                 [PORT * min(c.run for c in cs) for cs in costs])
    return _ceil_div(units, PORT)


def port_total_bound(instance: Instance) -> int:
    """The port total (module docstring); section 5b, any execution order."""
    units = sum(min(c.port_load + c.port_exec for c in cs) for cs in pair_costs(instance))
    return _ceil_div(units, PORT)


ANY_ORDER_MAX_OPS = 5000  # the ancestor matrix takes n^2 bytes


def _ancestors(instance: Instance) -> np.ndarray:
    """reach[k, j]: op j is an ancestor of op k (the ops are in a topological order)."""
    n = len(instance.ops)
    reach = np.zeros((n, n), dtype=bool)
    for k, op in enumerate(instance.ops):
        for p in op.inputs:
            reach[k] |= reach[p]
            reach[k, p] = True
    return reach


def _cut_any(reach: np.ndarray, before: Sequence[int], at: Sequence[int],
             after: Sequence[int]) -> int:
    """max over k of sum_{A(k)} before_j + at_k + sum_{D(k)} after_i."""
    if not len(at):
        return 0
    matrix = reach.astype(np.int64)
    total = (matrix @ np.asarray(before, dtype=np.int64) + np.asarray(at, dtype=np.int64)
             + matrix.T @ np.asarray(after, dtype=np.int64))
    return int(total.max())


def hbm_cut_any_bound(instance: Instance) -> int:
    """The HBM cut over ancestors and descendants (module docstring); both timings, any
    execution order."""
    costs = pair_costs(instance)
    return _cut_any(_ancestors(instance), [min(c.load for c in cs) for cs in costs],
                    [min(c.load + c.run for c in cs) for cs in costs],
                    [min(c.run for c in cs) for cs in costs])


def port_cut_any_bound(instance: Instance) -> int:
    """The port cut over ancestors and descendants (module docstring); section 5b, any
    execution order."""
    costs = pair_costs(instance)
    units = _cut_any(_ancestors(instance),
                     [min(c.port_load + c.port_exec for c in cs) for cs in costs],
                     [min(c.port_load + PORT * c.run for c in cs) for cs in costs],
                     [PORT * min(c.run for c in cs) for cs in costs])
    return _ceil_div(units, PORT)
