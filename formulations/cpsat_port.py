"""The section-5b layer of the CP-SAT model: overlaps, port losses and work (see contention.py).

Per candidate (load j, execute i), i.e. per pair that may overlap and lose port time (the
others need no variables: side by side they run as under section 5), two order literals:
`early` (the load starts no later than E<i>) and `late` (it ends no earlier), monotone in i
since executes are chained. Each of their four combinations makes the overlap one linear
expression (the execute's length, the load's, or an end minus a start), and `o` is at least
that (0 when P<j> is issued after E<i>). A loss variable per side pays `loss x o` when the
two ops' demand literals say the combination loses. Per instruction and demand value:
d x length - its losses >= d x duration. Then the cuts of `_cover`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from ortools.sat.python import cp_model

from elk_opt.evaluate import Schedule
from formulations.common import Pair
from formulations.contention import Candidate, losses
from formulations.deadline import NO_DEADLINE, Deadline


@dataclass
class PortVars:
    """Handles for hints: demand literals, and per candidate (j, i) its overlap terms."""

    load_lit: dict[tuple[int, int], cp_model.IntVar]  # (op, demand)
    exec_lit: dict[tuple[int, int], cp_model.IntVar]
    overlap: dict[tuple[int, int], tuple[cp_model.IntVar, ...]]  # (o, [early, late])
    load_loss: dict[tuple[int, int], cp_model.IntVar]  # (j, i): port time load j loses to E<i>
    exec_loss: dict[tuple[int, int], cp_model.IntVar]
    candidates: list[Candidate]
    # (k, i): fixed load k's overlap with E<i> (min of ends, max of starts, overlap) and loss
    fixed: dict[tuple[int, int], tuple[cp_model.IntVar, ...]] = field(default_factory=dict)
    fixed_loads: Sequence[FixedLoad] = ()


@dataclass(frozen=True)
class FixedLoad:
    """A load outside the model at fixed times (polish's region model: a later op's load as
    the incumbent runs it). It keeps its own time, but an execute beside it loses port time."""

    start: int
    end: int
    demand: int


@dataclass(frozen=True)
class Span:
    """An instruction's start, end and length in the model."""

    start: cp_model.IntVar
    end: cp_model.IntVar
    length: cp_model.LinearExprT
    longest: int  # the length's upper bound


def _literals(m: cp_model.CpModel, pairs: Sequence[Pair], pick: Sequence[cp_model.IntVar],
              attr: str, values: set[int], name: str) -> dict[int, cp_model.IntVar]:
    """One literal per demand value: true when the chosen pair has that demand."""
    out = {}
    for d in sorted(values):
        lit = out[d] = m.new_bool_var(f"{name}_d{d}")
        m.add(sum(b for a, b in zip(pairs, pick, strict=True) if getattr(a, attr) == d) == lit)
    return out


def add_port(m: cp_model.CpModel, pairs: Sequence[Sequence[Pair]],
             pick: Sequence[Sequence[cp_model.IntVar]], loads: Mapping[int, Span],
             execs: Sequence[Span], issued: Mapping[tuple[int, int], cp_model.IntVar],
             found: list[Candidate], lowest: Callable[[int], int], big: int,
             deadline: Deadline = NO_DEADLINE, ordered: bool = True,
             fixed_loads: Sequence[FixedLoad] = ()) -> PortVars:
    """Charge every candidate overlap its port losses and require each instruction's work,
    then add the cuts of `_cover`. OutOfTime once `deadline` passes (checked per candidate).
    `ordered`: the executes run in the instance's order (the free-order model passes False,
    leaving out what only holds in that order). `fixed_loads`: loads outside the model whose
    port losses its executes pay too (`fixed_losers` says which)."""
    load_vals: dict[int, set[int]] = {}
    exec_vals: dict[int, set[int]] = {}
    for c in found:
        load_vals.setdefault(c.load, set()).update(x.load_d for x in c.combos)
        exec_vals.setdefault(c.exec, set()).update(x.exec_d for x in c.combos)
    beside = fixed_losers(pairs, fixed_loads)
    for (_k, i), ds in beside.items():
        exec_vals.setdefault(i, set()).update(ds)
    load_lit = {(j, d): v for j, ds in load_vals.items()
                for d, v in _literals(m, pairs[j], pick[j], "load_d", ds, f"ld{j}").items()}
    exec_lit = {(i, d): v for i, ds in exec_vals.items()
                for d, v in _literals(m, pairs[i], pick[i], "run_d", ds, f"ed{i}").items()}
    overlap: dict[tuple[int, int], tuple] = {}
    load_loss: dict[tuple[int, int], cp_model.IntVar] = {}
    exec_loss: dict[tuple[int, int], cp_model.IntVar] = {}
    previous: dict[int, tuple] = {}  # per load, the order literals at its last candidate
    for c in found:
        deadline.check()
        j, i = c.load, c.exec
        load, run = loads[j], execs[i]
        top = min(load.longest, run.longest)
        o = m.new_int_var(0, top, f"o{j}_{i}")
        m.add(o <= load.length)
        m.add(o <= run.length)
        if (j, i) in issued:
            m.add(o == 0).only_enforce_if(~issued[j, i])
        early = m.new_bool_var(f"early{j}_{i}")  # the load starts no later than E<i>
        late = m.new_bool_var(f"late{j}_{i}")  # the load ends no earlier than E<i>
        m.add(load.start <= run.start).only_enforce_if(early)
        m.add(load.start >= run.start).only_enforce_if(~early)
        m.add(load.end >= run.end).only_enforce_if(late)
        m.add(load.end <= run.end).only_enforce_if(~late)
        m.add(o >= run.length).only_enforce_if([early, late])
        m.add(o >= load.end - run.start).only_enforce_if([early, ~late])
        m.add(o >= run.end - load.start).only_enforce_if([~early, late])
        m.add(o >= load.length).only_enforce_if([~early, ~late])
        before = previous.get(j)
        if before is not None and ordered:  # executes are chained: monotone in i
            m.add_implication(before[0], early)
            m.add_implication(late, before[1])
        previous[j] = (early, late)
        overlap[j, i] = (o, early, late)
        for side, attr, store in ((c.load_loses, "load_loss", load_loss),
                                  (c.exec_loses, "exec_loss", exec_loss)):
            if not side:
                continue
            worst = max(getattr(x, attr) for x in c.combos)
            lost = store[j, i] = m.new_int_var(0, worst * top, f"{attr}{j}_{i}")
            for x in c.combos:
                if getattr(x, attr):
                    m.add(lost >= getattr(x, attr) * o).only_enforce_if(
                        [load_lit[j, x.load_d], exec_lit[i, x.exec_d]])
            least = _least_loss(pairs[j], pairs[i], attr)
            if least:
                m.add(lost >= least * o)
    fixed: dict[tuple[int, int], tuple] = {}
    fixed_loss: dict[tuple[int, int], cp_model.IntVar] = {}
    for (k, i), ds in beside.items():
        deadline.check()
        f, run = fixed_loads[k], execs[i]
        first_end = m.new_int_var(0, big, f"fe{k}_{i}")
        m.add_min_equality(first_end, [f.end, run.end])
        last_start = m.new_int_var(0, big, f"fs{k}_{i}")
        m.add_max_equality(last_start, [f.start, run.start])
        top = min(run.longest, f.end - f.start)
        o = m.new_int_var(0, top, f"fo{k}_{i}")
        m.add(o >= first_end - last_start)
        lost = fixed_loss[-1 - k, i] = m.new_int_var(0, max(ds.values()) * top, f"fl{k}_{i}")
        for d, loss in ds.items():
            m.add(lost >= loss * o).only_enforce_if(exec_lit[i, d])
        fixed[k, i] = (first_end, last_start, o, lost)
    _work(m, pairs, pick, loads, load_lit, load_loss, "load_ns", "load_d", 0)
    _work(m, pairs, pick, dict(enumerate(execs)), exec_lit, exec_loss | fixed_loss, "run_ns",
          "run_d", 1)
    whole = {j for j in loads if all((j, i) in overlap for i in range(lowest(j), j))}
    _cover(m, pairs, pick, loads, execs, overlap, whole, big, ordered)
    return PortVars(load_lit, exec_lit, overlap, load_loss, exec_loss, found, fixed,
                    fixed_loads)


def fixed_losers(pairs: Sequence[Sequence[Pair]], fixed_loads: Sequence[FixedLoad]
                 ) -> dict[tuple[int, int], dict[int, int]]:
    """Per (fixed load k, execute i) that can lose port time beside it: the loss per ns of
    overlap for each demand of i's pairs that loses."""
    out: dict[tuple[int, int], dict[int, int]] = {}
    for k, f in enumerate(fixed_loads):
        for i, ps in enumerate(pairs):
            ds = {a.run_d: losses(f.demand, a.run_d)[1] for a in ps if a.run_ns}
            ds = {d: loss for d, loss in ds.items() if loss}
            if ds:
                out[k, i] = ds
    return out


def _least_loss(load_pairs: Sequence[Pair], exec_pairs: Sequence[Pair], attr: str) -> int:
    """The least loss per ns of overlap over every demand combination the two ops can pick."""
    side = 0 if attr == "load_loss" else 1
    return min(losses(a.load_d if a.load_ns else 0, b.run_d if b.run_ns else 0)[side]
               for a in load_pairs for b in exec_pairs)


def _cover(m: cp_model.CpModel, pairs: Sequence[Sequence[Pair]],
           pick: Sequence[Sequence[cp_model.IntVar]], loads: Mapping[int, Span],
           execs: Sequence[Span], overlap: Mapping[tuple[int, int], tuple], whole: set[int],
           big: int, ordered: bool = True) -> None:
    """Cuts for the LP, which alone would let every overlap be 0 (all valid for every true
    schedule with o = the true overlap, hence exact):
    - loads and executes are each serial, so one instruction's overlaps sum to at most its
      length;
    - before E<k> starts, the executes before it and the loads of ops up to k have run: the
      time they cover is the executes' lengths plus each load's time beside no execute. That
      needs every overlap of the load, so only loads whose every possible overlap is a
      candidate (`whole`) count (a subset of the loads covers no more time);
    - the port delivers at most 1000 permille per ns, so the same instructions' port work
      (demand x duration) is done by then.
    Each is a running sum over k, so the rows stay linear in size. The last two need the
    instance's order (`ordered`); the first holds in any.
    """
    n = len(execs)
    per_load: dict[int, list] = {}
    per_exec: dict[int, list] = {}
    for (j, i), (o, *_rest) in overlap.items():
        per_load.setdefault(j, []).append(o)
        per_exec.setdefault(i, []).append(o)
    for j, os in per_load.items():
        m.add(sum(os) <= loads[j].length)
    for i, os in per_exec.items():
        m.add(sum(os) <= execs[i].length)
    if not ordered:
        return

    def units(op: int, attr: str, demand: str) -> cp_model.LinearExprT:
        return sum(getattr(a, attr) * getattr(a, demand) * b
                   for a, b in zip(pairs[op], pick[op], strict=True))

    covered = work = 0
    for k in range(n):
        if k in whole:
            covered += loads[k].length - sum(per_load.get(k, []))
        if k in loads:
            work += units(k, "load_ns", "load_d")
        if k:
            covered += execs[k - 1].length
            work += units(k - 1, "run_ns", "run_d")
        time_k = m.new_int_var(0, big, f"covered{k}")
        m.add(time_k == covered)
        m.add(execs[k].start >= time_k)
        port_k = m.new_int_var(0, 1000 * big, f"portwork{k}")
        m.add(port_k == work)
        m.add(1000 * execs[k].start >= port_k)
        covered, work = time_k, port_k
    m.add(1000 * execs[-1].end >= work + units(n - 1, "run_ns", "run_d"))


def _work(m: cp_model.CpModel, pairs: Sequence[Sequence[Pair]],
          pick: Sequence[Sequence[cp_model.IntVar]], spans: Mapping[int, Span],
          lits: Mapping[tuple[int, int], cp_model.IntVar],
          lost: Mapping[tuple[int, int], cp_model.IntVar], attr: str, demand: str,
          side: int) -> None:
    """d x length - losses >= d x duration for each demand literal of each instruction, and
    for the LP the same with the op's highest demand, unconditionally (valid: d <= it)."""
    terms: dict[int, list[cp_model.IntVar]] = {}
    for key, v in lost.items():
        terms.setdefault(key[side], []).append(v)
    for op, lost_by in terms.items():
        duration = sum(getattr(a, attr) * b for a, b in zip(pairs[op], pick[op], strict=True))
        for (k, d), lit in lits.items():
            if k == op:
                m.add(d * spans[op].length - sum(lost_by) >= d * duration).only_enforce_if(lit)
        top = max(getattr(a, demand) for a in pairs[op])
        m.add(top * (spans[op].length - duration) >= sum(lost_by))


def hint_port(hint, port: PortVars, picked: Sequence[Pair], schedule: Schedule) -> None:
    """Hint the port layer with the values a true 5b schedule of the picked pairs gives."""
    for (j, d), lit in port.load_lit.items():
        hint(lit, picked[j].load_d == d)
    for (i, d), lit in port.exec_lit.items():
        hint(lit, picked[i].run_d == d)
    combos = {(c.load, c.exec): c.combos for c in port.candidates}
    for (j, i), handles in port.overlap.items():
        first_end = min(schedule.load_end[j], schedule.exec_end[i])
        last_start = max(schedule.load_start[j], schedule.exec_start[i])
        o = max(0, first_end - last_start)
        values = (o, schedule.load_start[j] <= schedule.exec_start[i],
                  schedule.load_end[j] >= schedule.exec_end[i])
        for v, value in zip(handles, values, strict=False):
            hint(v, value)
        combo = next((x for x in combos.get((j, i), ()) if (x.load_d, x.exec_d) ==
                      (picked[j].load_d, picked[i].run_d)), None)
        if (j, i) in port.load_loss:
            hint(port.load_loss[j, i], combo.load_loss * o if combo else 0)
        if (j, i) in port.exec_loss:
            hint(port.exec_loss[j, i], combo.exec_loss * o if combo else 0)
    for (k, i), (first_end, last_start, o, lost) in port.fixed.items():
        f = port.fixed_loads[k]
        ends, starts = min(f.end, schedule.exec_end[i]), max(f.start, schedule.exec_start[i])
        hint(first_end, ends)
        hint(last_start, starts)
        hint(o, max(0, ends - starts))
        hint(lost, losses(f.demand, picked[i].run_d)[1] * max(0, ends - starts))
