"""Port-aware issue points: hold a load back until a NoC-heavy execute it collides with is over.

Under section 5b a load that overlaps an execute whose port demand leaves it too little room
slows that execute (or itself). Issuing the load after that execute in the program keeps the
port for the execute; the HBM idles meanwhile, which pays where the load has slack. The pass
takes, in program order, each data-moving load that contends with an execute it overlaps
(others are left alone), tries a few later issue points among the executes its interval
overlaps (the next NEXT, and after the HARMFUL it slows most), prices each with the resumable
replay (heuristics.replay: exact when the re-timing catches up with the old one within HORIZON
executes, else a guess that the best tries are then timed exactly for), and keeps the best
that shortens the makespan; it sweeps the program until a sweep changes nothing (at most
`sweeps` times). Held alone, a load lets the loads behind it pass (a new preload order);
held with the queue behind it, the order is kept.

Only delays: a preload issued later is pending at fewer executes, so every R5 check that held
still holds. Under separate-noc delaying never shortens the makespan (section 5 is max-plus),
so the pass returns the program unchanged.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

from elk_opt.deadline import NO_DEADLINE, Deadline
from elk_opt.noc import PORT
from elk_opt.problem import Choice, Instance, Instr, Timing
from heuristics.replay import Costs, Issue, adopt, replay, retime

SWEEPS = 4
NEXT = 2  # issue points tried per load and sweep: after each of the next NEXT executes
HARMFUL = 2  # and after each of the HARMFUL executes the load slows most
HORIZON = 64  # executes re-timed per try before guessing; the best guesses are then timed
CONFIRM = 2  # exactly, at most CONFIRM of them per load


@dataclass(frozen=True)
class Delayed:
    program: tuple[Instr, ...]
    makespan_ns: int  # under the timing asked for
    held_back: int  # loads now issued later than in the program given


def delay_loads(instance: Instance, choice: Sequence[Choice], program: Sequence[Instr],
                timing: Timing, reorder: bool, sweeps: int = SWEEPS,
                deadline: Deadline = NO_DEADLINE) -> Delayed:
    """The program with loads held back where that pays.

    Without `reorder` a load is held back with every load after it (the preload order kept:
    only the issue points change); with it, the load alone, so loads behind it pass it. Once
    `deadline` passes, the loads held back so far are kept and the pass ends.
    """
    costs = Costs.of(instance, choice, timing)
    issue = Issue.of(program, costs)
    timeline = replay(costs, issue)
    if timing == "separate-noc":
        return Delayed(tuple(program), timeline.makespan, 0)
    position = {op: p for p, op in enumerate(issue.execs)}
    best = timeline.makespan
    for _ in range(sweeps):
        changed = False
        for j in tuple(issue.loads):
            if deadline.passed():
                break
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
            if not harm:
                continue  # the load slows nothing and nothing slows it: leave it
            gates = sorted({gate for _h, gate in sorted(harm)[:HARMFUL]}
                           | set(range(first + 1, min(last, first + NEXT) + 1)))
            restore = max(0, bisect_right(timeline.next_load, x) - 1)
            promising = []  # (makespan or its guess, exact, order tried, issue, new index)
            for tried, gate in enumerate(gates):
                candidate, y = issue.moved(x, gate) if reorder else issue.held(x, gate)
                makespan, exact = retime(costs, candidate, timeline, restore, y + 1, HORIZON)
                if makespan < best:
                    promising.append((makespan, not exact, tried, candidate, y))
            for makespan, guessed, _tried, candidate, y in sorted(promising)[:CONFIRM]:
                if guessed:
                    makespan = retime(costs, candidate, timeline, restore, y + 1)[0]
                if makespan < best:
                    best, issue = makespan, candidate
                    timeline = adopt(costs, issue, timeline, restore, y + 1)
                    changed = True
                    break
        if not changed:
            break
    return Delayed(issue.program(program), best, held_back(program, issue.program(program)))


def held_back(before: Sequence[Instr], after: Sequence[Instr]) -> int:
    """Preloads with more executes before them in `after` than in `before`."""
    def gates(program: Sequence[Instr]) -> dict[int, int]:
        seen, out = 0, {}
        for kind, j in program:
            if kind == "E":
                seen += 1
            else:
                out[j] = seen
        return out
    old, new = gates(before), gates(after)
    return sum(new[j] > g for j, g in old.items())
