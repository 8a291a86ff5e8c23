"""Earlier issue points: issue a load sooner where SRAM allows and that pays.

The inductive scheduler picks each op's preload count from a score that sees the port only
near the cut, and the delay pass (heuristics.delays) only moves loads later. The best known
plans of whole models under 5b also move loads the other way: a KV-cache load issued an
execute sooner is done before a NoC-heavy layer norm, and the HBM idles beside the norm
instead of sharing the port with it (Llama2-70B b64 KV4096, elk-paper, `bsp`: Elk-Full at
the best known plan's pairs 26.414 ms, with this pass 25.773, the best known plan 25.774;
BENCHMARKS.md, "Loads issued sooner").

The pass takes, in program order, each data-moving load and tries issuing it 1..AHEAD
executes sooner: alone (last of the loads issued there: it passes the loads issued after it
before it), or with every load before it issued later than that (their order kept). A try
must keep R5 at each execute it now precedes (the only executes at which more becomes
pending) and is priced with the resumable replay (heuristics.replay: exact where the
re-timing catches up with the old one within HORIZON executes, else a guess that is timed
exactly before a try is kept). The try with the shortest makespan is kept if it shortens the
makespan, and the load is tried again from its new place; the pass sweeps the program until
a sweep changes nothing (at most `sweeps` times). A load may gain only once it is several
executes sooner, the steps before tying: on Elk-Full's plan of Llama2-70B b64 KV4096 the pass
ends at 27.456 ms trying one or two executes, at 26.670 trying up to four, and six or eight
add nothing. Under separate-noc the same moves are tried: no port is shared there, but a load
that starts sooner can still let its execute start sooner.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

from elk_opt.deadline import NO_DEADLINE, Deadline
from elk_opt.evaluate import evaluate
from elk_opt.problem import Choice, Instance, Instr, Timing
from heuristics.delays import HORIZON
from heuristics.replay import Costs, Issue, Timeline, adopt, replay, retime

AHEAD = 4  # executes sooner a load is tried at, at most, per move


@dataclass(frozen=True)
class Advanced:
    program: tuple[Instr, ...]
    makespan_ns: int  # under the timing asked for
    advanced: int  # load moves kept


def sram_slack(instance: Instance, choice: Sequence[Choice], program: Sequence[Instr]
               ) -> list[int]:
    """Per execute position: the SRAM bytes R5 leaves free there (the evaluator's R5 sums,
    which do not depend on the timing)."""
    held = evaluate(instance, choice, program, timing="separate-noc").sram_bytes
    return [instance.chip.sram_bytes - held[j] for kind, j in program if kind == "E"]


def advance_loads(instance: Instance, choice: Sequence[Choice], program: Sequence[Instr],
                  timing: Timing, reorder: bool, sweeps: int,
                  deadline: Deadline = NO_DEADLINE) -> Advanced:
    """The program with loads issued sooner where that pays (module docstring). Without
    `reorder` a load moves only with the queue before it (the preload order kept); with it,
    alone too. Once `deadline` passes, the moves kept so far are kept and the pass ends."""
    costs = Costs.of(instance, choice, timing)
    issue = Issue.of(program, costs)
    timeline = replay(costs, issue)
    slack = sram_slack(instance, choice, program)
    space = [op.preload_by_id[c.preload].space_bytes
             for op, c in zip(instance.ops, choice, strict=True)]
    best = timeline.makespan
    kept = 0
    for _ in range(sweeps):
        before = kept
        for j in tuple(issue.loads):
            while not deadline.passed():
                found = _best_try(costs, timeline, issue, issue.slot[j], space, slack, best,
                                  reorder)
                if found is None:
                    break
                best, issue, timeline, added = found
                for p, more in added.items():
                    slack[p] -= more
                kept += 1
        if kept == before or deadline.passed():
            break
    return Advanced(issue.program(program), best, kept)


def _best_try(costs: Costs, timeline: Timeline, issue: Issue, x: int, space: list[int],
              slack: list[int], best: int, reorder: bool
              ) -> tuple[int, Issue, Timeline, dict[int, int]] | None:
    """Load x issued 1..AHEAD executes sooner, alone or with the queue before it: the try
    that keeps R5 with the shortest makespan below `best`, timed exactly, with its timeline
    and the bytes it adds per execute position."""
    found = None
    gate = issue.gates[x]
    for new_gate in range(gate - 1, max(-1, gate - 1 - AHEAD), -1):
        for queue in ((False, True) if reorder else (True,)):
            edit, first = issue.advanced(x, new_gate) if queue else \
                (issue.moved(x, new_gate, last=True)[0], bisect_right(issue.gates, new_gate))
            if queue and first == x and reorder:
                continue  # the same edit as the load alone
            moved = range(first, x + 1) if queue else (x,)
            added = {p: sum(space[issue.loads[z]] for z in moved if issue.gates[z] > p)
                     for p in range(new_gate, gate)}
            if any(more > slack[p] for p, more in added.items()):
                continue
            restore = _restore(timeline, first, new_gate)
            makespan, exact = retime(costs, edit, timeline, restore, x + 1, HORIZON)
            if makespan < best and not exact:
                makespan = retime(costs, edit, timeline, restore, x + 1)[0]
            if makespan < best and (found is None or makespan < found[0]):
                found = (makespan, edit, restore, added)
    if found is None:
        return None
    makespan, edit, restore, added = found
    return makespan, edit, adopt(costs, edit, timeline, restore, x + 1), added


def _restore(timeline: Timeline, first: int, new_gate: int) -> int:
    """An execute position whose state an edit cannot change: load `first` (the first load
    the edit moved) had not started by its start, and the moved loads, which now wait only
    for the end of execute position new_gate - 1, cannot have started either."""
    k = min(bisect_right(timeline.next_load, first) - 1, new_gate - 1)
    while k > 0 and timeline.exec_start[k] >= timeline.exec_end[new_gate - 1]:
        k -= 1  # executes of no length end as they start
    return max(0, k)
