"""The section-5b rows of the ILP: the relaxation of contention.py in big-M form.

A different encoding from the CP-SAT layer, so each checks the other. Per lossy (load j,
execute i): overlap o >= min(load end, execute end) - max(load start, execute start), written
as four rows of which two free binaries `(z, w)` pick one: each row is one end minus one
start, at least the true min minus max, so whichever the solver picks keeps o at or above the
true overlap. Losses `loss >= rate x o`, relaxed by big-M unless both ops' chosen pairs have
the combination's demands; work `d x length - losses >= d x duration`, relaxed unless the op's
chosen pair has demand d. Times are integers here (the 5b evaluator's are), so a solution
decodes exactly as the CP-SAT model's does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pulp

from elk_opt.evaluate import Schedule
from formulations.common import Pair
from formulations.contention import Candidate
from formulations.deadline import NO_DEADLINE, Deadline


@dataclass
class PortRows:
    overlap: dict[tuple[int, int], pulp.LpVariable]
    choose: dict[tuple[int, int], tuple[pulp.LpVariable, pulp.LpVariable]]  # (z, w)
    load_loss: dict[tuple[int, int], pulp.LpVariable]
    exec_loss: dict[tuple[int, int], pulp.LpVariable]
    candidates: list[Candidate]


def _with(pairs: Sequence[Pair], pick: Sequence[pulp.LpVariable], attr: str,
          value: int) -> pulp.LpAffineExpression:
    """1 when the op's chosen pair has `attr` == value."""
    return pulp.lpSum(v for a, v in zip(pairs, pick, strict=True) if getattr(a, attr) == value)


def add_port_rows(prob: pulp.LpProblem, pairs: Sequence[Sequence[Pair]],
                  pick: Sequence[Sequence[pulp.LpVariable]],
                  load_start: Sequence[pulp.LpVariable | None],
                  load_len: dict[int, pulp.LpAffineExpression],
                  exec_start: Sequence[pulp.LpVariable],
                  exec_len: Sequence[pulp.LpAffineExpression], found: list[Candidate],
                  longest: dict[tuple[str, int], int], big: int,
                  deadline: Deadline = NO_DEADLINE) -> PortRows:
    """Add the overlap, loss and work rows; `longest[("L"|"E", op)]` bounds lengths.
    OutOfTime once `deadline` passes (checked per candidate)."""
    rows = PortRows({}, {}, {}, {}, found)
    lost_by: dict[tuple[str, int], list[pulp.LpVariable]] = {}
    for c in found:
        deadline.check()
        j, i = c.load, c.exec
        ls, le = load_start[j], load_start[j] + load_len[j]
        es, ee = exec_start[i], exec_start[i] + exec_len[i]
        top = min(longest["L", j], longest["E", i])
        o = rows.overlap[j, i] = pulp.LpVariable(f"o_{j}_{i}", 0, top)
        z = pulp.LpVariable(f"z_{j}_{i}", cat=pulp.LpBinary)  # 1: the execute's end is taken
        w = pulp.LpVariable(f"w_{j}_{i}", cat=pulp.LpBinary)  # 1: the execute's start is taken
        rows.choose[j, i] = (z, w)
        prob += o >= le - ls - big * (z + w), f"ov_ll_{j}_{i}"
        prob += o >= le - es - big * (z + 1 - w), f"ov_le_{j}_{i}"
        prob += o >= ee - ls - big * (1 - z + w), f"ov_el_{j}_{i}"
        prob += o >= ee - es - big * (2 - z - w), f"ov_ee_{j}_{i}"
        for side, attr, store, key in ((c.load_loses, "load_loss", rows.load_loss, ("L", j)),
                                       (c.exec_loses, "exec_loss", rows.exec_loss, ("E", i))):
            if not side:
                continue
            worst = max(getattr(x, attr) for x in c.combos) * top
            lost = store[j, i] = pulp.LpVariable(f"{attr}_{j}_{i}", 0, worst)
            lost_by.setdefault(key, []).append(lost)
            for x in c.combos:
                rate = getattr(x, attr)
                if rate:
                    both = (_with(pairs[j], pick[j], "load_d", x.load_d)
                            + _with(pairs[i], pick[i], "run_d", x.exec_d))
                    prob += (lost >= rate * o - rate * top * (2 - both),
                             f"{attr}_{j}_{i}_{x.load_d}_{x.exec_d}")
    for (kind, op), lost in lost_by.items():
        attr, demand, length = (("load_ns", "load_d", load_len[op]) if kind == "L"
                                else ("run_ns", "run_d", exec_len[op]))
        duration = pulp.lpSum(getattr(a, attr) * v for a, v in zip(pairs[op], pick[op],
                                                                     strict=True))
        slack = sum(v.upBound for v in lost)
        for d in sorted({getattr(a, demand) for a in pairs[op] if getattr(a, demand)}):
            most = d * max(getattr(a, attr) for a in pairs[op]) + slack
            prob += (d * length - pulp.lpSum(lost) >= d * duration
                     - most * (1 - _with(pairs[op], pick[op], demand, d)),
                     f"work_{kind}{op}_{d}")
    return rows


def warm_port_rows(rows: PortRows, picked: Sequence[Pair], schedule: Schedule) -> None:
    """Give the port rows' variables the values of a true 5b schedule of the picked pairs."""
    for c in rows.candidates:
        j, i = c.load, c.exec
        le, ee = schedule.load_end[j], schedule.exec_end[i]
        ls, es = schedule.load_start[j], schedule.exec_start[i]
        o = max(0, min(le, ee) - max(ls, es))
        rows.overlap[j, i].setInitialValue(o)
        z, w = rows.choose[j, i]
        z.setInitialValue(int(ee < le))
        w.setInitialValue(int(es > ls))
        combo = next((x for x in c.combos if (x.load_d, x.exec_d) ==
                      (picked[j].load_d, picked[i].run_d)), None)
        if (j, i) in rows.load_loss:
            rows.load_loss[j, i].setInitialValue(combo.load_loss * o if combo else 0)
        if (j, i) in rows.exec_loss:
            rows.exec_loss[j, i].setInitialValue(combo.exec_loss * o if combo else 0)
