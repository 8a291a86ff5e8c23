"""Per-op Pareto ladders: the plans a memory allocator steps down, largest and fastest first.

A preload ladder lists the preload plans compatible with one execute plan by decreasing space
and increasing cost, the cost being `load_weight` x load time + warm-up. The weight prices HBM
time against execute time: where the HBM is the bottleneck a plan that doubles a load to save a
warm-up is a bad trade, where compute is the bottleneck a good one; callers try several.
An execute ladder lists execute plans, each with the preload ladder it steps down from (the
plan's own, possibly from a lower rung), by decreasing space and increasing cost, the cost
being the execute time plus the cost of the top of that preload ladder; its `run` is the
execute time plus that preload's warm-up, its space what rule R5 charges the op at its own
execute: the larger of the execute layout and that top preload layout (an allocator that later
steps the preload down only frees bytes). Dominated plans are dropped, so every step down
frees bytes and costs time. Identical ops (same plans) share one ladder.
Under section 5b, costs add each plan's port price (heuristics.climate): a load's expected
stretch and the execute time it takes from its neighbours, an execute's expected loss to the
loads beside it; so a replicated layout that saves warm-up but holds the port pays for it.
"""

from __future__ import annotations

from dataclasses import dataclass

from elk_opt.noc import exec_use, load_use
from elk_opt.problem import Chip, ExecPlan, Instance, Op, PreloadPlan
from heuristics.climate import Climate


@dataclass(frozen=True)
class Ladder:
    space: tuple[int, ...]  # strictly decreasing
    cost: tuple[float, ...]  # strictly increasing
    ids: tuple[int, ...]  # plan id of each rung
    load: tuple[int, ...]  # load_ns of the (best) preload plan of each rung
    warm: tuple[int, ...]  # warm-up of the (best) preload plan of each rung
    run: tuple[int, ...]  # execute ladders: time_ns + warm-up of each rung
    demand: tuple[int, ...]  # port demand of the rung's load or execute (0 without a climate)
    preloads: tuple[Ladder, ...] = ()  # execute ladders: the preload ladder of each rung

    def below(self, rung: int) -> Ladder:
        """The ladder from `rung` down."""
        return Ladder(self.space[rung:], self.cost[rung:], self.ids[rung:], self.load[rung:],
                      self.warm[rung:], self.run[rung:], self.demand[rung:])


Item = tuple[int, float, int, int, int, int, int, Ladder | None]


def _pareto(items: list[Item]) -> Ladder:
    """Items (space, cost, id, load, warm, run, demand, preloads) -> the non-dominated ones."""
    kept: list[Item] = []
    for item in sorted(items, key=lambda it: (it[1], it[0], it[2])):
        if not kept or item[0] < kept[-1][0]:
            kept.append(item)
    fields = [tuple(k[f] for k in kept) for f in range(7)]
    preloads = tuple(k[7] for k in kept if k[7] is not None)
    return Ladder(*fields, preloads=preloads)  # type: ignore[arg-type]


@dataclass(frozen=True)
class OpLadders:
    """One op class: its execute ladder (whose rungs carry their preload ladders)."""

    execute: Ladder

    @property
    def least_preload(self) -> int:
        return min(lad.space[-1] for lad in self.execute.preloads)


def _load_item(chip: Chip, q: PreloadPlan, warm: int, load_weight: float,
               climate: Climate | None, demands: bool) -> Item:
    demand = load_use(chip, q).demand if demands else 0
    if climate is None:
        cost = load_weight * q.load_ns + warm
    else:
        duration, lost = climate.load_price(q.load_ns, demand)
        cost = load_weight * duration + warm + lost
    return (q.space_bytes, cost, q.id, q.load_ns, warm, 0, demand, None)


def _exec_item(chip: Chip, p: ExecPlan, lad: Ladder, climate: Climate | None,
               demands: bool) -> Item:
    """Execute plan p whose preload starts at the top of `lad`."""
    run = p.time_ns + lad.warm[0]
    space = max(p.space_bytes, lad.space[0])  # what R5 charges the op at its own execute
    use = exec_use(chip, p, lad.warm[0])
    demand = use.demand if demands else 0
    cost = p.time_ns + lad.cost[0]
    if climate is not None:
        cost += climate.exec_price(use.duration_ns, demand)
    return (space, cost, p.id, lad.load[0], lad.warm[0], run, demand, lad)


def _op_ladders(op: Op, chip: Chip, load_weight: float, climate: Climate | None,
                demands: bool) -> OpLadders:
    items: list[Item] = []
    for p in op.exec_plans:
        loads = [_load_item(chip, q, t, load_weight, climate, demands)
                 for q, pp, t in op.pairs() if pp.id == p.id]
        if loads:
            lad = _pareto(loads)
            # every rung of p's preload ladder may start it: a smaller preload layout lowers
            # the op's own R5 charge where it is larger than the execute layout
            items += [_exec_item(chip, p, lad.below(r), climate, demands)
                      for r in range(len(lad.space))]
    return OpLadders(execute=_pareto(items))


def op_classes(instance: Instance, load_weight: float = 1.0, climate: Climate | None = None,
               demands: bool = False) -> tuple[list[int], list[OpLadders]]:
    """Class index of every op (ops with equal plans share one) and each class's ladders.

    With a `climate` (section 5b), every rung's cost includes its expected port price; with
    `demands`, rungs carry their port demands (else 0).
    """
    index: dict[tuple, int] = {}
    classes: list[OpLadders] = []
    of_op: list[int] = []
    for op in instance.ops:
        key = (op.exec_plans, op.preload_plans, op.warmup)
        if key not in index:
            index[key] = len(classes)
            classes.append(_op_ladders(op, instance.chip, load_weight, climate, demands))
        of_op.append(index[key])
    return of_op, classes
