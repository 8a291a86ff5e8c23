"""A resumable section-5b replay, so that a heuristic can price many small program edits.

`elk_opt.evaluate` is the judge of every plan; this module times the same programs by the same
rules (docs/spec.md section 5b: one load and one execute active at most, the port split max-min
fairly when their demands exceed it), but keeps, at the start of every execute, the little
state the rest of the replay depends on. An edit that leaves the program unchanged before some
execute can then be re-timed from that execute on, and the re-timing stops as soon as it
reaches an execute where the state matches the old replay up to a shift in time: with no
releases, the rest of the replay is the old one shifted, so the makespan is known exactly.

A program is seen as its execution order plus the loads that move data, in program order,
each with its gate: the number of executes listed before its `P`. Preloads with `load_ns` = 0
neither wait nor occupy anything (without releases), so they play no part in the timing.
Separate-noc timing is the same replay with every demand 0 (nothing is ever shared).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

from elk_opt.noc import PORT, exec_use, load_use, shares
from elk_opt.problem import Choice, Instance, Instr, Timing


@dataclass(frozen=True)
class Costs:
    """Per op: load and execute durations alone, and their port demands (permille)."""

    load_ns: tuple[int, ...]
    load_demand: tuple[int, ...]
    run_ns: tuple[int, ...]
    run_demand: tuple[int, ...]

    @classmethod
    def of(cls, instance: Instance, choice: Sequence[Choice], timing: Timing) -> Costs:
        shared = timing == "shared-noc"
        cols: list[list[int]] = [[], [], [], []]
        for op, c in zip(instance.ops, choice, strict=True):
            q, p = op.preload_by_id[c.preload], op.exec_by_id[c.exec]
            warm = op.warmup_ns[(c.preload, c.exec)]
            cols[0].append(q.load_ns)
            cols[1].append(load_use(instance.chip, q).demand if shared else 0)
            cols[2].append(p.time_ns + warm)
            cols[3].append(exec_use(instance.chip, p, warm).demand if shared else 0)
        return cls(*(tuple(c) for c in cols))


@dataclass(frozen=True)
class Issue:
    """A program as the replay sees it."""

    execs: tuple[int, ...]  # ops in execution order
    loads: tuple[int, ...]  # ops whose preload moves data, in program order
    gates: tuple[int, ...]  # per load: executes listed before its P (non-decreasing)
    slot: tuple[int, ...]  # per op: its index in `loads`, or -1

    @classmethod
    def of(cls, program: Sequence[Instr], costs: Costs) -> Issue:
        execs: list[int] = []
        loads: list[int] = []
        gates: list[int] = []
        for kind, j in program:
            if kind == "E":
                execs.append(j)
            elif costs.load_ns[j] > 0:
                loads.append(j)
                gates.append(len(execs))
        slot = [-1] * len(costs.load_ns)
        for x, j in enumerate(loads):
            slot[j] = x
        return cls(tuple(execs), tuple(loads), tuple(gates), tuple(slot))

    def moved(self, x: int, gate: int, last: bool = False) -> tuple[Issue, int]:
        """Load x issued after `gate` executes instead, first of that group (the loads it
        passes go before it), or with `last` last of it; its new index."""
        loads, gates = list(self.loads), list(self.gates)
        j = loads.pop(x)
        gates.pop(x)
        y = bisect_right(gates, gate) if last else bisect_left(gates, gate)
        loads.insert(y, j)
        gates.insert(y, gate)
        slot = list(self.slot)
        for z in range(min(x, y), max(x, y) + 1):
            slot[loads[z]] = z
        return Issue(self.execs, tuple(loads), tuple(gates), tuple(slot)), y

    def held(self, x: int, gate: int) -> tuple[Issue, int]:
        """Load x and every later load issued after `gate` executes at the earliest (the queue
        held, its order kept); the index of the last load that moved."""
        gates = list(self.gates)
        z = x
        while z < len(gates) and gates[z] < gate:
            gates[z] = gate
            z += 1
        return Issue(self.execs, self.loads, tuple(gates), self.slot), z - 1

    def advanced(self, x: int, gate: int) -> tuple[Issue, int]:
        """Load x and every load before it issued after `gate` executes at the latest (the
        queue advanced, its order kept); the index of the first load that moved."""
        gates = list(self.gates)
        first = bisect_right(gates, gate)
        gates[first:x + 1] = [gate] * (x + 1 - first)
        return Issue(self.execs, self.loads, tuple(gates), self.slot), first

    def program(self, like: Sequence[Instr]) -> tuple[Instr, ...]:
        """This issue as a program. Preloads that move no data keep their place in `like`'s
        preload order where they can: no earlier than there, after every data load listed before
        them (so they move with a held queue) unless that passes their own execute, and before
        the data loads listed after them where the gates allow."""
        free: list[list[tuple[int, int]]] = [[] for _ in range(len(self.execs) + 1)]
        position = {op: p for p, op in enumerate(self.execs)}
        listed = {}
        seen = held = 0
        for at, (kind, j) in enumerate(like):
            if kind == "E":
                seen += 1
            elif self.slot[j] < 0:
                free[max(seen, min(held, position[j]))].append((at, j))
            else:
                listed[j] = at
                held = max(held, self.gates[self.slot[j]])
        out: list[Instr] = []
        k = 0
        for pos in range(len(self.execs) + 1):
            waiting = free[pos]
            f = 0
            while k < len(self.loads) and self.gates[k] == pos:
                j = self.loads[k]
                while f < len(waiting) and waiting[f][0] < listed[j]:
                    out.append(("P", waiting[f][1]))
                    f += 1
                out.append(("P", j))
                k += 1
            out += [("P", j) for _at, j in waiting[f:]]
            if pos < len(self.execs):
                out.append(("E", self.execs[pos]))
        return tuple(out)


@dataclass
class Timeline:
    """One replay: times per execute position and per load index, and the resumable state.

    At the start of execute position k (after every start at that instant): the time, the next
    load not yet started, the active load (or -1) and its work left (permille-ns).
    """

    exec_start: list[int]
    exec_end: list[int]
    load_start: list[int]
    load_end: list[int]
    next_load: list[int]
    active: list[int]
    left: list[int]

    @property
    def makespan(self) -> int:
        return self.exec_end[-1] if self.exec_end else 0


def _blank(issue: Issue) -> Timeline:
    n, m = len(issue.execs), len(issue.loads)
    return Timeline([0] * n, [0] * n, [0] * m, [0] * m, [0] * n, [-1] * n, [0] * n)


def replay(costs: Costs, issue: Issue) -> Timeline:
    """The whole replay."""
    timeline = _blank(issue)
    _run(costs, issue, timeline, 0, None, None)
    return timeline


def retime(costs: Costs, issue: Issue, old: Timeline, k: int, same_from: int,
           horizon: int | None = None) -> tuple[int, bool]:
    """Makespan of `issue`, which times like `old` up to the start of execute position k.

    Loads from index `same_from` on are the same (and gated alike) in both; the replay stops
    at the first later execute whose state matches `old`'s: the makespan is then exact
    (True). With a `horizon`, it also stops at execute position k + horizon and guesses the
    makespan as `old`'s shifted by the lag there (False): a guess, for screening edits.
    """
    makespan, match = _run(costs, issue, _blank(issue), k, old, same_from,
                           None if horizon is None else k + horizon)
    return makespan, match != GUESS


def adopt(costs: Costs, issue: Issue, old: Timeline, k: int, same_from: int) -> Timeline:
    """The timeline of `issue` (as in `retime`): re-timed up to the match, then `old` shifted."""
    new = Timeline(*(list(a) for a in (old.exec_start, old.exec_end, old.load_start,
                                       old.load_end, old.next_load, old.active, old.left)))
    makespan, match = _run(costs, issue, new, k, old, same_from)
    if match >= 0:
        shift = makespan - old.makespan
        new.exec_start[match:] = [v + shift for v in old.exec_start[match:]]
        new.exec_end[match:] = [v + shift for v in old.exec_end[match:]]
        x = old.next_load[match]
        new.load_start[x:] = [v + shift for v in old.load_start[x:]]
        x = old.active[match] if old.active[match] >= 0 else x
        new.load_end[x:] = [v + shift for v in old.load_end[x:]]
    return new


GUESS = -2  # _run stopped at its horizon


def _run(costs: Costs, issue: Issue, out: Timeline, k: int, old: Timeline | None,
         same_from: int | None, until: int | None = None) -> tuple[int, int]:
    """The event walk of section 5b from the start of execute position k: (makespan, match).

    With `same_from`, stops at the first later execute position `match` whose state equals
    `old`'s there (the makespan is then `old`'s, shifted); otherwise fills `out` to the end
    and `match` is -1. With `until`, stops at that execute position, guessing the makespan
    as `old`'s shifted by the lag there (match GUESS).

    Heuristics price hundreds of thousands of edits with this walk on a full model, so the
    active load's and execute's demands are kept in locals and the port is split by `shares`
    only when the two together ask for more than all of it.
    """
    execs, loads, gates = issue.execs, issue.loads, issue.gates
    load_ns, load_d = costs.load_ns, costs.load_demand
    run_ns, run_d = costs.run_ns, costs.run_demand
    n, m = len(execs), len(loads)
    if n == 0:
        return 0, -1
    slot = issue.slot
    exec_start, exec_end = out.exec_start, out.exec_end
    load_start, load_end = out.load_start, out.load_end
    next_load, active, left = out.next_load, out.active, out.left
    watch = same_from is not None and old is not None
    stop_at = until if until is not None and old is not None else n
    if old is None or k == 0:
        k, t, nl, lop, l_left = 0, 0, 0, -1, 0
        ne, eop, e_left = 0, -1, 0
        l_dem = e_dem = 0
    else:  # restore the state at the start of execute position k
        t, nl, lop, l_left = old.exec_start[k], old.next_load[k], old.active[k], old.left[k]
        i = execs[k]
        e_dem = run_d[i]
        ne, eop, e_left = k + 1, k, run_ns[i] * (e_dem or 1)
        exec_start[k] = t
        l_dem = 0
        if lop >= 0:
            load_start[lop] = old.load_start[lop]
            l_dem = load_d[loads[lop]]
    fresh: list[int] = []
    exec_free = hbm_free = t
    done_before = nl if lop < 0 else lop  # loads below this index ended before t
    while True:
        moved = True
        while moved:  # start (and end, if instantaneous) all that can happen at t
            moved = False
            if lop < 0 and nl < m and hbm_free <= t:
                g = gates[nl] - 1  # the execute position the load waits for, or -1
                if g < 0 or (g < ne and g != eop and (g < k or exec_end[g] <= t)):
                    lop, moved = nl, True
                    nl += 1
                    load_start[lop] = t
                    j = loads[lop]
                    l_dem = load_d[j]
                    l_left = load_ns[j] * (l_dem or 1)
            if eop < 0 and ne < n and exec_free <= t:
                i = execs[ne]
                x = slot[i]
                if x < done_before or (x < nl and x != lop and load_end[x] <= t):
                    exec_start[ne] = t
                    fresh.append(ne)
                    eop, moved = ne, True
                    ne += 1
                    if run_ns[i] == 0:
                        exec_end[eop] = exec_free = t
                        eop = -1
                    else:
                        e_dem = run_d[i]
                        e_left = run_ns[i] * (e_dem or 1)
        if fresh:
            for pos in fresh:  # the state at every execute that started at t
                if watch and nl >= same_from and nl == old.next_load[pos] and \
                        lop == old.active[pos] and \
                        (lop < 0 or (lop >= same_from and l_left == old.left[pos])):
                    return old.makespan + t - old.exec_start[pos], pos
                if pos >= stop_at:
                    return old.makespan + t - old.exec_start[pos], GUESS
                next_load[pos], active[pos] = nl, lop
                left[pos] = l_left if lop >= 0 else 0
            fresh.clear()
        if lop < 0:
            if eop < 0:
                break
            t = exec_end[eop] = exec_free = t - (-e_left // (e_dem or 1))
            eop = -1
            continue
        gl = l_dem or 1
        if eop < 0:
            t = load_end[lop] = hbm_free = t - (-l_left // gl)
            lop = -1
            continue
        ge = e_dem or 1
        if l_dem and e_dem and l_dem + e_dem > PORT:
            gl, ge = shares(l_dem, e_dem)
        l_at = t - (-l_left // gl)
        e_at = t - (-e_left // ge)
        if l_at <= e_at:
            load_end[lop] = hbm_free = l_at
            lop = -1
            if e_at == l_at:
                exec_end[eop] = exec_free = e_at
                eop = -1
            else:
                e_left -= ge * (l_at - t)
            t = l_at
        else:
            exec_end[eop] = exec_free = e_at
            eop = -1
            l_left -= gl * (e_at - t)
            t = e_at
    if ne < n:
        raise ValueError("program cannot be timed (an execute never starts)")
    return exec_end[n - 1], -1
