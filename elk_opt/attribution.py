"""Where a plan's makespan goes: each execute's share of it, split by cause.

Executes are serial, so the makespan is the sum, over executes in program order, of the wait
before each (from the previous execute's end to its start) and its length. Each part splits
exactly, in integer ns:
- length = fastest + pair choice + stretch: `fastest` is the op's quickest execute (time and
  warm-up) over the pairs R5 allows, the term the Ideal's execute chain sums
  (elk_opt.bounds.ideal), so for a plan that obeys R5 the fastest column over all ops is
  that bound on every plan (a plan that breaks R5 with a pair R5 forbids counts that pair
  too, so no part is negative); `pair choice` is what the chosen pair adds; `stretch` is
  what a load sharing the NoC port adds (section 5b; 0 under section 5);
- wait = load wait or release wait: an execute starts at the latest of the previous end, its
  own load's end and its release (docs/spec.md 5), so a wait is the load's when the load ends
  last (ties included: moving the release alone would not start it sooner) and the release's
  otherwise.
A group (a run of one layer's executes, or one op) also reports how long the HBM was busy
within its span, so HBM idle time shows where the loads could have run and did not.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from itertools import groupby
from typing import Any

from elk_opt.bounds.ideal import allowed_pairs
from elk_opt.evaluate import Schedule, evaluate
from elk_opt.problem import Plan, Timing


@dataclass(frozen=True)
class TimeShare:
    """One group's span and its causes: span = the five causes; hbm_busy_ns <= span."""

    name: str  # "layer 5", "no layer", or an op's name
    first_op: int  # the first op of the group in program order
    ops: int
    span_ns: int  # from the previous group's last execute end to this group's
    fastest_ns: int
    pair_choice_ns: int
    stretch_ns: int
    load_wait_ns: int
    release_wait_ns: int
    hbm_busy_ns: int

    @property
    def hbm_idle_ns(self) -> int:
        return self.span_ns - self.hbm_busy_ns

    def costs(self) -> tuple[int, ...]:
        """The numbers, without name and place: equal for twin layers."""
        return tuple(getattr(self, f.name) for f in fields(self)[2:])


@dataclass(frozen=True)
class Attribution:
    makespan_ns: int
    timing: Timing
    groups: tuple[TimeShare, ...]

    def total(self) -> TimeShare:
        return _sum("total", self.groups)

    def summary(self) -> dict[str, Any]:
        """What `elk-opt profile --json` prints: the totals and every group."""
        total = _row(self.total())
        del total["name"], total["first_op"]
        return {"makespan_ns": self.makespan_ns, "timing": self.timing, "total": total,
                "groups": [_row(g) for g in self.groups]}


def _row(group: TimeShare) -> dict[str, Any]:
    return {**{f.name: getattr(group, f.name) for f in fields(group)},
            "hbm_idle_ns": group.hbm_idle_ns}


def attribute(plan: Plan, timing: Timing | None = None, by: str = "layer") -> Attribution:
    """The plan's makespan under `timing` (its own by default) split by cause, per layer run
    (`by="layer"`: consecutive executes of one layer) or per op (`by="op"`)."""
    if by not in ("layer", "op"):
        raise ValueError(f"by must be 'layer' or 'op', got {by!r}")
    timing = timing or plan.timing
    instance = plan.instance
    schedule = evaluate(instance, plan.choice, plan.program, plan.release_ns, timing=timing)
    order = [j for kind, j in plan.program if kind == "E"]
    per_op = _per_op(plan, schedule, order)
    if by == "op":
        return Attribution(schedule.makespan_ns, timing, tuple(per_op))
    layers = (instance.ops[i].layer for i in order)
    runs = groupby(zip(layers, per_op, strict=True), key=lambda pair: pair[0])
    return Attribution(schedule.makespan_ns, timing, tuple(
        _sum("no layer" if layer is None else f"layer {layer}", [share for _, share in run])
        for layer, run in runs))


def _per_op(plan: Plan, schedule: Schedule, order: list[int]) -> list[TimeShare]:
    instance = plan.instance
    sram = instance.chip.sram_bytes
    # data loads are serial on the HBM: sorted by start, they do not overlap
    loads = sorted((s, e) for s, e in zip(schedule.load_start, schedule.load_end, strict=True)
                   if e > s)
    k = 0  # the first load that may still run after the previous execute's end
    out = []
    previous = 0
    for i in order:
        op, c = instance.ops[i], plan.choice[i]
        chosen = op.exec_by_id[c.exec].time_ns + op.warmup_ns[(c.preload, c.exec)]
        fastest = min(chosen, *(p.time_ns + warm for _q, p, warm in allowed_pairs(op, sram)))
        start, end = schedule.exec_start[i], schedule.exec_end[i]
        wait = start - previous
        by_load = schedule.load_end[i] >= max(previous, plan.release_ns.get(("E", i), 0))
        busy = 0
        while k < len(loads) and loads[k][0] < end:
            busy += min(loads[k][1], end) - max(loads[k][0], previous)
            if loads[k][1] > end:
                break
            k += 1
        out.append(TimeShare(
            op.name, i, 1, end - previous, fastest, chosen - fastest, end - start - chosen,
            wait if by_load else 0, 0 if by_load else wait, busy))
        previous = end
    return out


def _sum(name: str, shares: Sequence[TimeShare]) -> TimeShare:
    """One share for `shares` (none: a plan of no ops), numbers summed."""
    columns = len(fields(TimeShare)) - 2  # ops and the causes
    totals = [sum(s.costs()[k] for s in shares) for k in range(columns)]
    return TimeShare(name, shares[0].first_op if shares else 0, *totals)
