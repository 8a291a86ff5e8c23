"""Fluid LPs on models whose layers repeat: the repeats summed into one block of columns.

The fluid LPs (elk_opt.bounds.fluid, fluid_sram) grow with the model: one block of columns
and rows per op. A decoder is a prefix, a block of ops repeated C times (one or more layers)
and a suffix, and each LP row couples only ops a few places apart. Write x_p for the columns
of repeat p (p = 0..C-1). When every row inside a repeat is the same row shifted (A x_p <= b)
and every row between neighbours too (L x_p + U x_{p+1} <= e), the sums of those rows hold
for every solution of the full LP:
    A X <= (C - 2) b                          with X = x_1 + ... + x_{C-2},
    L (x_0 + X) + U (X + x_{C-1}) <= (C - 1) e,
and its objective, a sum of per-column costs, is the same linear function of (x_0, X,
x_{C-1}) and the prefix and suffix columns. So the LP over those columns, with the rows of
the prefix, x_0, x_{C-1} and the suffix kept as they are and the summed rows above, is a
relaxation of the full LP: its optimum is at most the full LP's, hence a lower bound on the
makespan for the plans the full LP bounds. Its size is that of the prefix, three repeats
and the suffix, at any depth. It is built from the LP of a shortened model (the prefix, four
repeats, the suffix): every row of the full LP touching only x_0, x_{C-1}, the prefix and the
suffix is a row of the shortened one, because the builders are local (a row couples ops at
most `reach` apart, and the load classes come from the set of distinct ops, which shortening
keeps). That the rows of repeats 1 and 2 and of the three neighbour pairs coincide is checked,
not assumed: where it fails, the full LP is solved instead.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from elk_opt.bounds.fluid import FluidBound, FluidModel, _Lp

Cost = TypeVar("Cost", bound=Hashable)
EXPLICIT = 4  # repeats the shortened model keeps: x_0, the summed block, a check copy, x_{C-1}


@dataclass(frozen=True)
class Period:
    start: int  # first op of repeat 0
    length: int  # ops per repeat
    count: int  # repeats, C


def find_period(keys: Sequence[Hashable], min_length: int) -> Period | None:
    """The repeated block that removes the most ops when summed (at least `min_length` ops
    long, so that no row spans more than two repeats), or None if none removes any."""
    ids: dict[Hashable, int] = {}
    seq = [ids.setdefault(k, len(ids)) for k in keys]
    n = len(seq)
    best: Period | None = None
    for length in range(max(1, min_length), n // (EXPLICIT + 1) + 1):
        run = start = 0
        for i in range(n - length):
            if seq[i] == seq[i + length]:
                if run == 0:
                    start = i
                run += 1
                count = run // length + 1
                saved = (count - EXPLICIT) * length
                if saved > 0 and (best is None or saved > (best.count - EXPLICIT) * best.length):
                    best = Period(start, length, count)
            else:
                run = 0
    return best


def solved_ops(costs: Sequence[Sequence[Hashable]], reach: int | None) -> int:
    """How many ops' worth of LP `solve_fluid` builds: the shortened model's when the ops
    repeat (whether its rows then check out is known only once it is built)."""
    tried = _candidates(costs, reach)
    if not tried:
        return len(costs)
    p = tried[0]
    return len(costs) - (p.count - EXPLICIT) * p.length


def solve_fluid(costs: list[list[Cost]], build: Callable[[list[list[Cost]]], FluidModel],
                time_limit_s: float | None, threads: int, reach: int | None) -> FluidBound:
    """The bound of the LP `build` makes over `costs` (per op), summed over repeats when the
    ops repeat and `reach` (the widest span of a row, in ops) is given."""
    started = time.perf_counter()
    if not costs:
        return FluidBound(0, 0, 0, 0, time.perf_counter() - started)
    model, bound, summed = _solved(costs, build, time_limit_s, threads, reach)
    return FluidBound(bound, len(model.lp.cost), len(model.lp.row_lower), len(model.reps),
                      time.perf_counter() - started,
                      repeats=0 if summed is None else summed.period.count)


def solve_fluid_picks(costs: list[list[Cost]], build: Callable[[list[list[Cost]]], FluidModel],
                      time_limit_s: float | None, threads: int, reach: int | None
                      ) -> tuple[int, list[Cost]] | None:
    """As `solve_fluid`, the bound and, per op, the cost the optimum weighs most (None if the
    LP did not finish). In the middle repeats that is the summed block's heaviest: the
    pair the relaxation gives most of those repeats' weight, the same for each of them."""
    if not costs:
        return None
    model, bound, summed = _solved(costs, build, time_limit_s, threads, reach)
    x = model.lp.solution
    if bound is None or x is None:
        return None
    picks = []
    for op, cs in enumerate(costs):
        columns = model.pick[op if summed is None else shortened_op(op, summed.period)]
        if summed is not None:
            columns = [summed.kept[c] for c in columns]
        picks.append(cs[max(range(len(cs)), key=lambda a: x[columns[a]])])
    return bound, picks


def _solved(costs: list[list[Cost]], build: Callable[[list[list[Cost]]], FluidModel],
            time_limit_s: float | None, threads: int, reach: int | None
            ) -> tuple[FluidModel, int | None, Summed | None]:
    """The model solved (its LP the summed one where the repeats check out), its bound, and
    the summing (None if the full LP was solved)."""
    for p in _candidates(costs, reach):
        cut = p.start + EXPLICIT * p.length
        model = build(costs[:cut] + costs[p.start + p.count * p.length:])
        summed = summed_lp(model.lp, p)
        if summed is not None:
            model.lp = summed.lp
            # a summed column is at most C times a column of the full LP, whose loads are
            # at most C times the shortened model's
            return model, model.solve(time_limit_s, threads, scale=p.count * p.count), summed
    model = build(costs)
    return model, model.solve(time_limit_s, threads), None


def shortened_op(op: int, period: Period) -> int:
    """The op of the shortened model (prefix, EXPLICIT repeats, suffix) whose columns in the
    summed LP stand for the full model's `op`: repeat 0 and the last repeat are kept as they
    are, the middle repeats are summed into repeat 1."""
    s, n, count = period.start, period.length, period.count
    if op < s:
        return op
    if op >= s + count * n:
        return op - (count - EXPLICIT) * n
    repeat, offset = divmod(op - s, n)
    kept = 0 if repeat == 0 else EXPLICIT - 1 if repeat == count - 1 else 1
    return s + kept * n + offset


def _candidates(costs: Sequence[Sequence[Hashable]], reach: int | None) -> list[Period]:
    """The periods tried, in order: the best repeated block (`find_period`) with its first
    repeats dropped until it starts `reach` ops in (rows near the model's ends are cut short),
    then one repeat fewer at either end. None without a `reach`."""
    if reach is None:
        return []
    period = find_period([tuple(cs) for cs in costs], reach)
    if period is None:
        return []
    skip = max(0, -(-(reach - period.start) // period.length))
    p = Period(period.start + skip * period.length, period.length, period.count - skip)
    out = [p, Period(p.start, p.length, p.count - 1),
           Period(p.start + p.length, p.length, p.count - 1)]
    return [q for q in out if q.count > EXPLICIT]


@dataclass(frozen=True)
class Summed:
    lp: _Lp
    period: Period
    kept: dict[int, int]  # a column of the shortened model's LP -> its column in `lp`
    # a row of the shortened model's LP between two neighbouring repeats -> the summed row
    # of its kind in `lp` (rows of one kind: the same row shifted by whole repeats)
    links: dict[int, int] = field(default_factory=dict)


def summed_lp(lp: _Lp, period: Period) -> Summed | None:
    """The LP with repeats summed (module docstring), from the LP of the shortened model whose
    columns carry their op as anchor; None when its rows are not the same in every repeat.
    Every column but those of repeat 2 is kept (`kept`); repeat 1's stand for the sum."""
    s, n = period.start, period.length

    def block(anchor: int) -> int:  # -1 prefix, 0..3 the repeats, 4 the suffix
        return -1 if anchor < s else min((anchor - s) // n, EXPLICIT)

    if min(lp.anchor, default=0) < 0:  # a column of no op: the builder is not local
        return None
    blocks = [block(a) for a in lp.anchor]
    seen: Counter[int] = Counter()
    local: list[tuple[int, int]] = []  # per column: (its op's place in its repeat, ordinal)
    for a, b in zip(lp.anchor, blocks, strict=True):
        offset = a - s - b * n
        local.append((offset, seen[a]))
        seen[a] += 1

    def signature(row: dict[int, float], lower: float, upper: float) -> tuple:
        first = min(blocks[c] for c in row)
        return (tuple(sorted((blocks[c] - first, local[c], v) for c, v in row.items())),
                lower, upper)

    by_key = [{local[c]: c for c in range(len(blocks)) if blocks[c] == b} for b in range(4)]
    if any(by_key[b].keys() != by_key[1].keys() for b in (0, 2, 3)) or any(
            lp.cost[c] != lp.cost[by_key[2][k]] for k, c in by_key[1].items()):
        return None
    out = _Lp()
    new: dict[int, int] = {}
    for c, b in enumerate(blocks):
        if b != 2:
            new[c] = out.column(lp.cost[c], lp.anchor[c])
    inner: list[Counter] = [Counter(), Counter()]
    links: list[Counter] = [Counter(), Counter(), Counter()]
    kinds: list[dict[tuple, list[int]]] = [{}, {}, {}]  # per link, signature -> its rows
    summed_rows: dict[tuple, list[int]] = {}  # signature -> the summed rows made of its kind
    middle = period.count - 2
    for r, (row, lower, upper) in enumerate(lp.rows()):
        touched = {blocks[c] for c in row}
        if not touched & {1, 2}:
            out.row({new[c]: v for c, v in row.items()}, lower, upper)
        elif touched in ({1}, {2}):
            (b,) = touched
            inner[b - 1][signature(row, lower, upper)] += 1
            if b == 1:
                out.row({new[c]: v for c, v in row.items()}, lower * middle, upper * middle)
        elif touched in ({0, 1}, {1, 2}, {2, 3}):
            first = min(touched)
            kind = signature(row, lower, upper)
            links[first][kind] += 1
            kinds[first].setdefault(kind, []).append(r)
            if first == 1:
                summed_rows.setdefault(kind, []).append(len(out.row_lower))
                summed: dict[int, float] = {}
                for c, v in row.items():
                    if blocks[c] == 1:  # L: on x_0 + X
                        targets = (new[by_key[0][local[c]]], new[c])
                    else:  # U: on X + x_{C-1}
                        targets = (new[by_key[1][local[c]]], new[by_key[3][local[c]]])
                    for t in targets:
                        summed[t] = summed.get(t, 0.0) + v
                out.row(summed, lower * (middle + 1), upper * (middle + 1))
        else:
            return None
    if inner[0] != inner[1] or not links[0] == links[1] == links[2]:
        return None
    linked = {r: summed_rows[kind][i] for rows in kinds
              for kind, members in rows.items() for i, r in enumerate(members)}
    return Summed(out, period, new, linked)
