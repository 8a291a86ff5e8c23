"""Where `polish` looks: windows aligned to layers, their twins, and how much each can gain.

A window is a run of consecutive ops. When ops carry a `layer`, windows are aligned to the
layers: a layer cut into equal pieces of at most `width` ops, or `layers` whole consecutive
layers once the search grows its windows (on a straddling pass the cuts move by half a piece,
or half a layer: moves across a boundary); ops without a layer (embedding, head, hand-made
instances) are cut into runs of at most `width`. Two windows are twins when their
ops have the same undominated pairs offset by offset (identical layers of a model: same plans
and costs up to renaming), so one window's solution applies to the other.

A window's score is what the plan spends on it beyond a local lower bound: the span of its
executes (from the end of the execute before it to the end of its last) minus the larger of
its fastest executes' total and its smallest loads' total. Where the execute chain stalls on
a load, or an execute is stretched or slow, the score is high; windows are solved in
decreasing score, so time goes where the plan and the bound disagree most.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from elk_opt.evaluate import Schedule
from elk_opt.problem import Instance
from formulations.common import Pair


@dataclass(frozen=True)
class Window:
    first: int
    stop: int  # one past the last op

    def __len__(self) -> int:
        return self.stop - self.first


def layer_runs(instance: Instance) -> list[tuple[int, int]]:
    """Maximal runs [first, stop) of consecutive ops with the same non-null `layer`."""
    runs: list[tuple[int, int]] = []
    ops = instance.ops
    i = 0
    while i < len(ops):
        k = i + 1
        if ops[i].layer is not None:
            while k < len(ops) and ops[k].layer == ops[i].layer:
                k += 1
        runs.append((i, k) if ops[i].layer is not None else (i, i + 1))
        i = k
    return runs


def windows(instance: Instance, layers: int, width: int, stride: int,
            straddle: bool) -> list[Window]:
    """The pass's windows, covering every op once.

    With `layers` = 0, each layer run is cut into equal pieces of at most `width` ops
    (shifted by half a piece when `straddle`); with `layers` >= 1, windows are that many
    whole layer runs (cut at the middle of a run when `straddle`). Ops without a layer are
    cut every `width` (shifted by `stride` when `straddle`).
    """
    n = len(instance.ops)
    cuts = {0, n}
    counted = 0
    for first, stop in _runs_with_loose(instance):
        size = stop - first
        if instance.ops[first].layer is None:
            cuts.update(range(first + (stride % width if straddle else 0), stop, width))
            cuts.add(stop)
        elif layers == 0:
            pieces = -(-size // width)
            step = size / pieces
            shift = step / 2 if straddle else 0.0
            cuts.update(first + round(k * step + shift) for k in range(pieces))
        else:
            if counted % layers == 0:
                cuts.add((first + stop) // 2 if straddle else first)
            counted += 1
    edges = sorted(c for c in cuts if 0 <= c <= n)
    return [Window(a, b) for a, b in zip(edges, edges[1:], strict=False)]


def _runs_with_loose(instance: Instance) -> list[tuple[int, int]]:
    """Layer runs, and maximal runs of consecutive ops without a layer, in order."""
    out: list[tuple[int, int]] = []
    for first, stop in layer_runs(instance):
        loose = instance.ops[first].layer is None
        if loose and out and instance.ops[out[-1][0]].layer is None and out[-1][1] == first:
            out[-1] = (out[-1][0], stop)
        else:
            out.append((first, stop))
    return out


def signature(pairs: Sequence[Sequence[Pair]], first: int, stop: int) -> tuple:
    """What makes two windows twins: their ops' pair numbers, offset by offset."""
    return tuple(tuple((a.load_ns, a.load_space, a.run_ns, a.run_space, a.load_d, a.run_d)
                       for a in pairs[j]) for j in range(first, stop))


def score(pairs: Sequence[Sequence[Pair]], schedule: Schedule, w: Window) -> int:
    """The window's span in the plan minus a local lower bound on it (see the module doc)."""
    before = schedule.exec_end[w.first - 1] if w.first else 0
    span = schedule.exec_end[w.stop - 1] - before
    runs = sum(min(a.run_ns for a in pairs[j]) for j in range(w.first, w.stop))
    loads = sum(min(a.load_ns for a in pairs[j]) for j in range(w.first, w.stop))
    return span - max(runs, loads)


def ranked(pairs: Sequence[Sequence[Pair]], schedule: Schedule,
           ws: Sequence[Window]) -> list[tuple[int, Window]]:
    """Windows with their scores, twin class by twin class in decreasing total score (a
    class's gain is applied to every member), each class's members from its middle out (an
    interior member's neighbourhood is the common one, so its solution fits its twins)."""
    classes: dict[tuple, list[tuple[int, Window]]] = {}
    for w in ws:
        classes.setdefault(signature(pairs, w.first, w.stop), []).append(
            (score(pairs, schedule, w), w))
    out: list[tuple[int, Window]] = []
    order = sorted(classes.values(), key=lambda c: (-sum(max(0, s) for s, _w in c),
                                                    c[0][1].first))
    for members in order:
        mid = len(members) // 2
        out += [m for _k, m in sorted(enumerate(members), key=lambda km: (abs(km[0] - mid),
                                                                           km[0]))]
    return out
