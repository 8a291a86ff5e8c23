"""Port-aware issue points: hold a load back until a NoC-heavy execute it collides with is over.

Under section 5b a load that overlaps an execute whose port demand leaves it too little room
slows that execute (or itself). Issuing the load after that execute in the program keeps the
port for the execute; the HBM idles meanwhile, which pays where the load has slack. The pass
tries, for each data-moving load in program order, every later issue point among the executes
its current interval overlaps (at most MAX_TRIES), prices each exactly with the resumable
replay (heuristics.replay), and keeps the best if it shortens the makespan; it sweeps the
program until a sweep changes nothing (at most `sweeps` times).

Only delays: a preload issued later is pending at fewer executes, so every R5 check that held
still holds. Under separate-noc delaying never shortens the makespan (section 5 is max-plus),
so the pass returns the program unchanged.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

from elk_opt.noc import PORT
from elk_opt.problem import Choice, Instance, Instr, Timing
from heuristics.replay import Costs, Issue, adopt, replay, retime

SWEEPS = 4
NEXT = 2  # issue points tried per load and sweep: after each of the next NEXT executes
HARMFUL = 2  # and after each of the HARMFUL executes the load slows most


@dataclass(frozen=True)
class Delayed:
    program: tuple[Instr, ...]
    makespan_ns: int  # under the timing asked for
    held_back: int  # loads now issued later than in the program given


def delay_loads(instance: Instance, choice: Sequence[Choice], program: Sequence[Instr],
                timing: Timing, sweeps: int = SWEEPS) -> Delayed:
    """The program with loads held back where that pays."""
    costs = Costs.of(instance, choice, timing)
    issue = given = Issue.of(program, costs)
    timeline = replay(costs, issue)
    if timing == "separate-noc":
        return Delayed(tuple(program), timeline.makespan, 0)
    position = {op: p for p, op in enumerate(issue.execs)}
    best = timeline.makespan
    for _ in range(sweeps):
        changed = False
        for j in tuple(issue.loads):
            x = issue.slot[j]
            start, end = timeline.load_start[x], timeline.load_end[x]
            # executes at positions first..last-1 overlap the load; issuing the load after
            # one it contends with (gate = its position + 1) keeps the port for it
            first = max(issue.gates[x], bisect_right(timeline.exec_end, start))
            last = min(position[j], bisect_left(timeline.exec_start, end))
            harm = []
            for p in range(first, last):
                excess = costs.run_demand[issue.execs[p]] + costs.load_demand[j] - PORT
                if excess > 0:
                    overlap = min(end, timeline.exec_end[p]) - max(start, timeline.exec_start[p])
                    harm.append((-overlap * excess, p + 1))
            gates = sorted({gate for _h, gate in sorted(harm)[:HARMFUL]}
                           | set(range(first + 1, min(last, first + NEXT) + 1)))
            restore = max(0, bisect_right(timeline.next_load, x) - 1)
            tried: tuple[int, Issue, int] | None = None  # makespan, issue, new index
            for gate in gates:
                candidate, y = issue.moved(x, gate)
                makespan = retime(costs, candidate, timeline, restore, y + 1)
                if makespan < best and (tried is None or makespan < tried[0]):
                    tried = (makespan, candidate, y)
            if tried is not None:
                best, issue = tried[0], tried[1]
                timeline = adopt(costs, issue, timeline, restore, tried[2] + 1)
                changed = True
        if not changed:
            break
    held = sum(issue.gates[issue.slot[j]] > gate for j, gate in zip(given.loads, given.gates,
                                                                      strict=True))
    return Delayed(issue.program(program), best, held)
