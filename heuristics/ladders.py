"""Per-op Pareto ladders: the plans a memory allocator steps down, largest and fastest first.

An execute ladder lists an op's execute plans by decreasing space and increasing run time,
where the run time counts the warm-up of the best preload plan for that execute plan. A preload
ladder lists the preload plans compatible with one execute plan by decreasing space and
increasing cost, the cost being load time plus warm-up. Dominated plans are dropped, so every
step down frees bytes and costs time. Identical ops (same plans) share one ladder.
"""

from __future__ import annotations

from dataclasses import dataclass

from elk_opt.problem import Instance, Op


@dataclass(frozen=True)
class Ladder:
    space: tuple[int, ...]  # strictly decreasing
    cost: tuple[int, ...]  # strictly increasing
    ids: tuple[int, ...]  # plan id of each rung
    load: tuple[int, ...] = ()  # preload ladders only: load_ns of each rung
    warm: tuple[int, ...] = ()  # preload ladders only: warm-up of each rung


def _pareto(items: list[tuple[int, int, int, int, int]]) -> Ladder:
    """Items (space, cost, id, load, warm) -> the ladder of non-dominated ones."""
    kept: list[tuple[int, int, int, int, int]] = []
    for item in sorted(items, key=lambda it: (it[1], it[0], it[2])):
        if not kept or item[0] < kept[-1][0]:
            kept.append(item)
    return Ladder(space=tuple(k[0] for k in kept), cost=tuple(k[1] for k in kept),
                  ids=tuple(k[2] for k in kept), load=tuple(k[3] for k in kept),
                  warm=tuple(k[4] for k in kept))


@dataclass(frozen=True)
class OpLadders:
    """One op class: its execute ladder and, per execute plan id, its preload ladder."""

    execute: Ladder
    preload: dict[int, Ladder]


def _op_ladders(op: Op) -> OpLadders:
    preload: dict[int, Ladder] = {}
    for p in op.exec_plans:
        items = [(q.space_bytes, q.load_ns + t, q.id, q.load_ns, t)
                 for q, pp, t in op.pairs() if pp.id == p.id]
        if items:
            preload[p.id] = _pareto(items)
    execute = _pareto([(p.space_bytes, p.time_ns + preload[p.id].warm[0], p.id, 0, 0)
                       for p in op.exec_plans if p.id in preload])
    return OpLadders(execute=execute, preload=preload)


def op_classes(instance: Instance) -> tuple[list[int], list[OpLadders]]:
    """Class index of every op (ops with equal plans share one) and each class's ladders."""
    index: dict[tuple, int] = {}
    classes: list[OpLadders] = []
    of_op: list[int] = []
    for op in instance.ops:
        key = (op.exec_plans, op.preload_plans, op.warmup)
        if key not in index:
            index[key] = len(classes)
            classes.append(_op_ladders(op))
        of_op.append(index[key])
    return of_op, classes
