"""One `polish` move: re-solve a window of a whole plan with a model of its neighbourhood only.

The model covers the region [lo, hi): the window's ops (free: pair, issue slot and HBM
order) and `margin` ops on each side (pinned: the incumbent's pair, issue slot and HBM
order), as a sub-instance of its own, so its size does not grow with the model. What lies
outside enters as boundary conditions taken from the incumbent's schedule: the region's first
execute starts no earlier than the execute before it ended; loads of region ops issued before
the region (incoming) start no earlier than they did; loads issued inside the region start no
earlier than the region's first execute may, and the region reaches on to every op whose load
is issued inside it (pinned); loads of later ops still pending in the region (issued by those
pinned ops) take their SRAM from every rule-R5 row they are pending at. Loads of later ops
issued before the region ends keep their HBM time as in the incumbent, and under 5b their port
share too: an execute of the region beside one loses port time as beside a load of its own
(`cpsat_port.FixedLoad`). Times are relative to the region's base (the earliest of those
boundary times) so the model's horizon stays small; the horizon is counted from the latest
of them. The incumbent's value in the model is its
region's end as the whole plan runs it, and the hint is its own times there.

Before the later loads' port share was modelled, the model under 5b promised gains the whole
plan did not give: on a Gemma2-27B b64 KV2048 plan a window it solved 10.8 us faster ran
9.4 us slower when spliced (BENCHMARKS.md, "Region models that see the later loads"). The
splice that follows the model's HBM timeline (`model_loads`) keeps the later loads where the
model held them, so the region ends in the whole plan where the model said (to the ns there).

The boundary is still an approximation (an incoming load's port sharing with executes before
the region, and what the loads of later ops do after it, are not modelled): the model
proposes, the whole plan decides. `splice` writes the model's solution back into the whole
program, and `polish` keeps it only if the whole plan's evaluated makespan is lower and it
obeys R5. With the window covering every op the model is the whole problem, exactly.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from elk_opt.evaluate import Schedule
from elk_opt.problem import Choice, Instance, Instr, Plan, Timing
from formulations.common import Pair, Restrictions
from formulations.cpsat_model import CpsatModel, add_hint, build
from formulations.cpsat_port import FixedLoad


@dataclass(frozen=True)
class Incumbent:
    """The plan being improved, read as the models' decisions."""

    plan: Plan
    pick: tuple[int, ...]  # pair index per op
    slot: tuple[int, ...]  # executes listed before the op's preload
    schedule: Schedule  # under the timing polished for


def move_key(schedule: Schedule) -> tuple[int, int]:
    """What a move must lower: the makespan, then the sum of execute ends (plateau moves)."""
    return schedule.makespan_ns, sum(schedule.exec_end)


@dataclass(frozen=True)
class Region:
    lo: int
    hi: int
    first: int  # the free window [first, stop) inside [lo, hi)
    stop: int
    base: int  # absolute time of the model's time 0
    sub: Instance


def region_of(instance: Instance, inc: Incumbent, first: int, stop: int,
              margin: int, depth: int = 1) -> Region:
    """The region around window [first, stop): `margin` pinned ops each side, far enough back
    that every window op's incumbent preload is issued inside it, and (`depth` times) on to
    every op whose load is issued inside it."""
    n = len(instance.ops)
    lo = max(0, min(first - margin, *(inc.slot[j] for j in range(first, stop))))
    hi = min(n, stop + margin)
    # later ops whose loads are issued inside the region come in pinned: their HBM and port
    # time is the region's business (loads they issue in turn are left out)
    for _ in range(depth):
        hi = max([hi] + [j + 1 for j in range(hi, n) if inc.slot[j] < hi])
    return region_at(instance, inc, lo, hi, first, stop)


def region_at(instance: Instance, inc: Incumbent, lo: int, hi: int, first: int,
              stop: int) -> Region:
    """The region [lo, hi) around window [first, stop), with its base in the incumbent."""
    prev_end = inc.schedule.exec_end[lo - 1] if lo else 0
    incoming = [inc.schedule.load_start[j] for j in range(lo, hi) if inc.slot[j] < lo]
    base = min(prev_end, *incoming) if incoming else prev_end
    ops = tuple(dataclasses.replace(op, inputs=tuple(k - lo for k in op.inputs if k >= lo))
                for op in instance.ops[lo:hi])
    sub = dataclasses.replace(instance, name=f"{instance.name}[{lo}:{hi}]", ops=ops)
    return Region(lo, hi, first, stop, base, sub)


def _sub_plan(inc: Incumbent, r: Region, timing: Timing) -> Plan:
    """The incumbent restricted to the region, timed from its base with every instruction
    released at its start in the incumbent (for the hint: the incumbent's own timeline, so
    it keeps clear of the other loads' HBM time as the incumbent did)."""
    lo, hi = r.lo, r.hi
    program = tuple((kind, j - lo) for kind, j in inc.plan.program if lo <= j < hi)
    s = inc.schedule
    release = {}
    for kind, j in program:
        at = s.exec_start[j + lo] if kind == "E" else s.load_start[j + lo]
        release[kind, j] = max(0, at - r.base)
    return Plan(instance=r.sub, choice=inc.plan.choice[lo:hi], program=program,
                release_ns=release, timing=timing)


def _later_loads(instance: Instance, inc: Incumbent, r: Region) -> list[tuple[int, int, int]]:
    """(op, start, end) of each load of a later op issued before the region ends, in the
    incumbent and relative to the region's base (its part before the base cut off)."""
    s = inc.schedule
    out = []
    for x in range(r.hi, len(instance.ops)):
        start, end = s.load_start[x] - r.base, s.load_end[x] - r.base
        if inc.slot[x] < r.hi and end > max(0, start):
            out.append((x, max(0, start), end))
    return out


def _others_on_the_hbm(cm: CpsatModel, later: Sequence[tuple[int, int, int]]) -> None:
    """Loads of later ops issued before the region ends keep their HBM time as in the
    incumbent: the region's loads go around them (a second no-overlap with them fixed)."""
    m = cm.model
    fixed = [m.new_fixed_size_interval_var(start, end - start, f"other{x}")
             for x, start, end in later]
    if not fixed:
        return
    own = []
    for k, size in cm.aux["len"].items():
        start, end = cm.load_start[k], cm.aux["end"][k]
        on = cm.aux["on"].get(k)
        own.append(m.new_interval_var(start, size, end, f"again{k}") if on is None else
                   m.new_optional_interval_var(start, size, end, on, f"again{k}"))
    m.add_no_overlap(own + fixed)


def region_model(instance: Instance, pairs: Sequence[Sequence[Pair]], inc: Incumbent,
                 r: Region, timing: Timing) -> tuple[CpsatModel, int]:
    """The region's model, hinted with the incumbent, and the incumbent's value in it: the
    time from the region's base to its last execute's end, as the whole plan runs it."""
    lo, hi = r.lo, r.hi
    sub_pairs = [list(pairs[j]) if r.first <= j < r.stop else [pairs[j][inc.pick[j]]]
                 for j in range(lo, hi)]
    fixed = {j - lo: (0, max(0, inc.slot[j] - lo)) for j in range(lo, hi)
             if not r.first <= j < r.stop}
    s = inc.schedule
    chain = sorted((j - lo for j in range(lo, hi) if j - lo in fixed
                    and sub_pairs[j - lo][0].load_ns > 0),
                   key=lambda k: (s.load_start[k + lo], k))
    later = _later_loads(instance, inc, r)
    # under 5b the later loads also slow the executes beside them (their port share)
    fixed_loads = [FixedLoad(start, end, pairs[x][inc.pick[x]].load_d)
                   for x, start, end in later] if timing == "shared-noc" else []
    prev_end = (s.exec_end[lo - 1] if lo else 0) - r.base
    # the region's work begins by then: its first execute may, its incoming loads did, and the
    # later loads have left the HBM
    begins = max([prev_end] + [s.load_start[j] - r.base for j in range(lo, hi)
                               if inc.slot[j] < lo] + [end for _x, _start, end in later])
    cm = build(r.sub, Restrictions(), fixed=fixed, pairs=sub_pairs, chain=chain, timing=timing,
               fixed_loads=fixed_loads, offset=begins)
    m = cm.model
    m.add(cm.exec_start[0] >= prev_end)
    for j in range(lo, hi):
        start = cm.load_start[j - lo]
        if isinstance(start, int):
            continue
        if inc.slot[j] < lo:
            m.add(start >= s.load_start[j] - r.base)
        else:
            m.add(start >= prev_end)
    _later_pending_space(instance, cm, inc, r)
    _others_on_the_hbm(cm, later)
    # the hint: the incumbent's own times, beside the loads the model holds fixed
    add_hint(cm, r.sub, _sub_plan(inc, r, timing), _region_times(inc, r))
    return cm, s.exec_end[hi - 1] - r.base


def _region_times(inc: Incumbent, r: Region) -> Schedule:
    """The incumbent's schedule of the region's ops, relative to its base."""
    s, lo, hi = inc.schedule, r.lo, r.hi

    def shifted(times: Sequence[int]) -> tuple[int, ...]:
        return tuple(max(0, t - r.base) for t in times[lo:hi])

    return Schedule(makespan_ns=s.exec_end[hi - 1] - r.base, load_start=shifted(s.load_start),
                    load_end=shifted(s.load_end), exec_start=shifted(s.exec_start),
                    exec_end=shifted(s.exec_end), preload_count=s.preload_count[lo:hi],
                    sram_bytes=s.sram_bytes[lo:hi])


def _later_pending_space(instance: Instance, cm: CpsatModel, inc: Incumbent,
                         r: Region) -> None:
    """Rule R5 rows charging what ops after the region hold pending at its executes."""
    lo, hi = r.lo, r.hi
    held = [0] * (hi - lo)
    for j in range(hi, len(instance.ops)):
        if inc.slot[j] >= hi:
            continue
        c = inc.plan.choice[j]
        space = instance.ops[j].preload_by_id[c.preload].space_bytes
        for i in range(max(lo, inc.slot[j]), hi):
            held[i - lo] += space
    pend: dict[int, list] = {}
    for (_j, i), v in cm.aux["pend"].items():
        pend.setdefault(i, []).append(v)
    sram = instance.chip.sram_bytes
    for i, extra in enumerate(held):
        if extra:
            own = sum(a.held_space * b for a, b in zip(cm.pairs[i], cm.pick[i], strict=True))
            cm.model.add(own + sum(pend.get(i, [])) + extra <= sram)


def splice(inc: Incumbent, r: Region, sub_choice: Sequence[Choice],
           sub_program: Sequence[Instr], sub_release: Mapping[Instr, int],
           shift_after: int, keep_gap: bool = False,
           model_loads: Mapping[int, int] | None = None
           ) -> tuple[tuple[Choice, ...], tuple[Instr, ...], dict[Instr, int]]:
    """The whole plan with the region's instructions replaced by the model's.

    The prefix (everything up to E<lo-1>, incoming preloads included) and the suffix (after
    E<hi-1>) stay. A preload of a later op issued inside the region (which the model did not
    see) goes as early as it may: in its own gap or after, after every region preload that
    preceded it (so the HBM keeps serving region loads first, as the model assumed), and in
    its old order. Releases after the region move by `shift_after` (the region's gain, <= 0).

    `model_loads` (op -> the model's start of its load, for the region's loads that take
    time) places the later preloads by the model's HBM timeline instead, where the model held
    them at their incumbent starts (`region_model`: their HBM time, and under 5b their port
    share): each after every region load
    the model starts no later, and released at its incumbent start. The HBM serves loads in
    program order, so a later preload issued ahead of a region load the model started first
    would delay that load.
    """
    lo, hi = r.lo, r.hi
    slot = inc.slot
    program = inc.plan.program
    at_lo = program.index(("E", lo - 1)) + 1 if lo else 0
    at_hi = program.index(("E", hi - 1)) + 1
    incoming = {j for j in range(lo, hi) if slot[j] < lo}
    middle = [(kind, k + lo) for kind, k in sub_program
              if not (kind == "P" and k + lo in incoming)]
    where = {ins: x for x, ins in enumerate(middle)}
    placed: list[tuple[int, int, Instr]] = []  # (position in middle, order, instruction)
    floor = 0
    seen: list[Instr] = []  # region preloads before this one in the incumbent
    for ins in program[at_lo:at_hi]:
        kind, j = ins
        if kind == "P" and j < hi:
            seen.append(ins)
        elif kind == "P":
            gap = where["E", slot[j] - 1] + 1 if slot[j] > lo else 0
            if model_loads is not None:
                at = inc.schedule.load_start[j]
                ahead = [where["P", k] + 1 for k, t in model_loads.items()
                         if t <= at and ("P", k) in where]
            else:
                ahead = [] if keep_gap else [where[p] + 1 for p in seen if p in where]
            floor = max([floor, gap] + ahead)
            placed.append((floor, len(placed), ins))
    out: list[Instr] = []
    queue = iter(sorted(placed))
    nxt = next(queue, None)
    for x, ins in enumerate(middle):
        while nxt is not None and nxt[0] <= x:
            out.append(nxt[2])
            nxt = next(queue, None)
        out.append(ins)
    if nxt is not None:
        raise AssertionError("a later op's preload was placed after the region")
    new_program = program[:at_lo] + tuple(out) + program[at_hi:]
    later = {ins for _x, _k, ins in placed}
    release = {ins: t for ins, t in inc.plan.release_ns.items()
               if not lo <= ins[1] < hi}
    after = set(program[at_hi:]) | later
    for ins in list(release):
        if ins in after:
            release[ins] = max(0, release[ins] + shift_after)
    if model_loads is not None:
        for ins in later:
            release[ins] = max(release.get(ins, 0), inc.schedule.load_start[ins[1]])
    for (kind, k), t in sub_release.items():
        if not (kind == "P" and k + lo in incoming):
            release[kind, k + lo] = t + r.base
    for j in incoming:  # the incumbent's own, unchanged
        if ("P", j) in inc.plan.release_ns:
            release["P", j] = inc.plan.release_ns["P", j]
    choice = inc.plan.choice[:lo] + tuple(sub_choice) + inc.plan.choice[hi:]
    return choice, new_program, release
