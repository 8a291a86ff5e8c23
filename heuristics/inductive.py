"""Elk's two-level inductive operator scheduling, for any preload order.

The execution order is the instance's op order; the preload order `order` is a permutation of
the ops. A program is then fixed by `t[i]`, the number of preloads issued before `E<i>`
(non-decreasing, and large enough that every op up to i is already issued). The ops pending
while op i executes are those of `order[:t[i]]` after i, so its preload count is t[i] - i - 1.

The scheduler goes backward from the last op. For op i it tries every feasible t[i] (every
preload count k, bounded only by SRAM and by t[i+1]) and, for each, runs the cost-aware memory
allocation of the paper: op i's execute plan (charged what R5 charges it, heuristics.ladders)
and the pending ops' preload plans start at their fastest rungs and, while they overflow SRAM,
the op whose next smaller rung frees the most bytes per nanosecond added (Delta = space saved /
time added) steps down. Pending ops never step back up: their plans were already fitted beside
later executes, so shrinking keeps every later R5 check true, and the final program satisfies
R5 at every execute by construction.

"Time from op i to the end" is measured exactly on the already scheduled suffix, which the
section-5 recurrence makes a max-plus linear function of the state at the cut before E<i>:
end = max(x + ax, h + ah, max_j L_j + g[j]), with x the end of the previous execute, h the HBM
free time and L_j the load end of each op j still in flight. Each candidate is scored at the
reference state "E<i> starts at 0 with the HBM idle and the pending loads queued from 0", plus
the warm-up added to pending ops it shrinks; later rounds score against the timing of the best
schedule so far instead (its loads keep their start times), while that improves the makespan.
Only that score is approximate; the result is evaluated with the real semantics. The ladders'
price of load time against execute time is a knob (heuristics.ladders), tried at several
values by `heuristics.inductive_best`, since decode steps may be HBM- or compute-bound.

Under shared-noc (section 5b) the suffix is no longer max-plus, and the scheduler sees the
port three ways. The ladders price each rung's port use against the model's average partner
(heuristics.climate), so Delta counts what a replicated layout costs the port. In the
re-scoring rounds, where the reference gives the loads in flight at the cut their real start
times, the execute at the cut and the loads queued beside it share the port as section 5b
shares it (_Beside), so a candidate that issues a load onto a NoC-heavy execute pays for both
slowing down, and a smaller t[i] (the load issued after E<i>) can win; the suffix beyond stays
the max-plus estimate. (The first pass does not: from an idle HBM every pending load would
seem to run beside E<i>.) The third, loads held back or issued sooner once the schedule is
made, is `heuristics.inductive_best`'s.

Departures from the paper, each because our semantics or our measurements asked for it: the
cost-to-go is the exact max-plus suffix, not the paper's per-op time sum; ties between preload
counts go to the larger one (a smaller t[i] also caps every earlier op, since t is
non-decreasing, which a greedy backward pass cannot see); the re-scoring rounds and the load
weights are additions (on tight synthetic instances the first pass alone lost to Static).
"""

from __future__ import annotations

import heapq
from bisect import insort
from collections.abc import Sequence
from dataclasses import dataclass

from elk_opt.deadline import NO_DEADLINE, Deadline, OutOfTime
from elk_opt.evaluate import Schedule, evaluate
from elk_opt.noc import shares
from elk_opt.problem import Choice, Instance, Instr, Timing, program_from_issue
from heuristics.ladders import Ladder, OpLadders

NEG = -(1 << 62)
ROUNDS = 8  # most instances settle within three
# Preloads pending at one execute, at most (unless the order forces more): Llama2 decode
# graphs use up to 50; without a cap a chain of small ops keeps hundreds pending and every op
# scores hundreds of candidates (quadratic: 20,000 ops did not finish in 300 s).
MAX_PENDING = 64  # prices of a load ns against an execute ns tried (heuristics.ladders)


@dataclass(frozen=True)
class Decisions:
    choice: tuple[Choice, ...]
    program: tuple[Instr, ...]
    issued: tuple[int, ...]  # t[i]: preloads issued before E<i>


@dataclass(frozen=True)
class Reference:
    """Timing of an earlier schedule under the same order, to score candidates against."""

    issued: Sequence[int]
    load_start: Sequence[int]
    load_end: Sequence[int]
    exec_end: Sequence[int]

    @classmethod
    def of(cls, decisions: Decisions, schedule: Schedule) -> Reference:
        return cls(decisions.issued, schedule.load_start, schedule.load_end, schedule.exec_end)


class _Beside:
    """The execute at the cut and the loads queued beside it, shared as section 5b shares.

    Loads are fed in queue order (each starts after the one before it ended); the execute
    starts at `start`. With demand 0 on either side nothing is shared (section 5).
    """

    __slots__ = ("tau", "left", "demand", "done")

    def __init__(self, start: int, run: int, demand: int):
        self.tau = start  # time up to which the execute's progress is known
        self.left = run * demand  # its work left at tau, permille-ns
        self.demand = demand
        self.done = -1 if demand else start + run  # its end, once known

    def load(self, start: int, duration: int, demand: int) -> int:
        """End of a load of `duration` alone that starts at `start`."""
        if self.done >= 0 or not demand or start + duration <= self.tau:
            return start + duration
        left = duration * demand
        t = self.tau
        if start < t:
            left -= demand * (t - start)
        else:
            alone = t - (-self.left // self.demand)
            if alone <= start:  # the execute ends before the load starts
                self.done = alone
                return start + duration
            self.left -= self.demand * (start - t)
            t = start
        share_l, share_e = shares(demand, self.demand)
        l_at = t - (-left // share_l)
        e_at = t - (-self.left // share_e)
        if e_at <= l_at:
            self.done = e_at
            left -= share_l * (e_at - t)
            return e_at - (-left // demand) if left > 0 else e_at
        self.left -= share_e * (l_at - t)
        self.tau = l_at
        return l_at

    def end(self) -> int:
        return self.done if self.done >= 0 else self.tau - (-self.left // self.demand)


def _allocate(sram: int, execute: Ladder, pend: list[int], q_lad: list[Ladder | None],
              q_idx: list[int]) -> tuple[int, list[int]] | None:
    """Cost-aware allocation: rung of the execute ladder and new rungs of the pending ops.

    Called when the fastest execute rung and the current pending rungs overflow SRAM.
    """
    rungs = [q_idx[j] for j in pend]
    ladders = [q_lad[j] for j in pend]
    total = execute.space[0] + sum(lad.space[r] for lad, r in zip(ladders, rungs, strict=True))
    least = execute.space[-1] + sum(lad.space[-1] for lad in ladders)
    if least > sram:
        return None
    e = 0
    heap: list[tuple[float, int]] = []

    def push(k: int) -> None:  # k = -1 is the execute ladder, else index into pend
        lad, r = (execute, e) if k < 0 else (ladders[k], rungs[k])
        if r + 1 < len(lad.space):
            saved = lad.space[r] - lad.space[r + 1]
            added = lad.cost[r + 1] - lad.cost[r]
            heapq.heappush(heap, (-saved / added, k))

    push(-1)
    for k in range(len(pend)):
        push(k)
    while total > sram:
        _, k = heapq.heappop(heap)
        if k < 0:
            total -= execute.space[e] - execute.space[e + 1]
            e += 1
        else:
            lad = ladders[k]
            total -= lad.space[rungs[k]] - lad.space[rungs[k] + 1]
            rungs[k] += 1
        push(k)
    return e, rungs


def schedule(instance: Instance, order: Sequence[int],
             ladders: tuple[list[int], list[OpLadders]],
             ref: Reference | None = None, port_score: bool = True,
             region: int | None = None, max_pending: int | None = None,
             deadline: Deadline = NO_DEADLINE) -> Decisions | None:
    """Inductive scheduling under preload order `order`; None if the order cannot fit SRAM.

    Without `ref` each candidate is scored from an idle HBM; with it, from the state the
    reference schedule had at the same cut (loads it had issued keep their start times), and
    the execute at the cut shares the port with the loads queued beside it (rungs' demands,
    all 0 under separate-noc). With a `region`, no execute has preloads pending beyond the
    ones the order forces once their bytes (at their rungs so far) exceed it.

    At most `max_pending` preloads (MAX_PENDING by default) are pending at an execute unless the
    order forces more: each op then costs O(max_pending) candidates, so a pass is linear in
    ops where SRAM would hold hundreds of small preloads (a 20,000-op chain). OutOfTime once
    `deadline` passes (checked once per op).
    """
    max_pending = MAX_PENDING if max_pending is None else max_pending
    ops = instance.ops
    n = len(ops)
    sram = instance.chip.sram_bytes
    of_op, classes = ladders
    pos = [0] * n
    for s, j in enumerate(order):
        pos[j] = s
    tmin = [0] * n
    reach = -1
    for i in range(n):
        reach = max(reach, pos[i])
        tmin[i] = reach + 1

    exec_rung = [0] * n
    q_lad: list[Ladder | None] = [None] * n
    q_idx = [0] * n
    t = [0] * n
    t_next = n
    ax, ah = 0, NEG
    g: dict[int, int] = {}
    window: list[tuple[int, int]] = []  # (pos, op) of ops issued before E<i+1> and after i
    for i in range(n - 1, -1, -1):
        deadline.check()
        execute = classes[of_op[i]].execute
        if i + 1 < n:
            insort(window, (pos[i + 1], i + 1))
        # V(t) for t = t_next down to tmin[i]: P-steps of order[t:t_next] (issued after E<i>)
        lo = tmin[i]
        axs = [0] * (t_next - lo + 1)
        ahs = [0] * (t_next - lo + 1)
        a, h = ax, ah
        axs[-1], ahs[-1] = a, h
        for s in range(t_next - 1, lo - 1, -1):
            j = order[s]
            lad = q_lad[j]
            assert lad is not None
            load = lad.load[q_idx[j]]
            if load > 0:
                c = load + max(h, g[j])
                a, h = max(a, c), c
            else:
                a = max(a, g[j])
            axs[s - lo], ahs[s - lo] = a, h
        if ref is None:
            base = own_load = 0
        else:
            base = ref.exec_end[i - 1] if i else 0
            own_load = ref.load_end[i] - base
        issued_ref = ref.issued[i] if ref is not None else -1
        ref_start = ref.load_start if ref is not None else ()
        # from an idle HBM every pending load would seem to collide: only against a reference
        port = port_score and ref is not None

        best: tuple[int, int, int, list[int] | None] | None = None  # score, t, rung, rungs
        npend = 0
        # fast path: pending ops at their current rungs, queue scored incrementally
        fast_total, fast_clock, fast_max = execute.space[0], own_load, NEG
        beside = _Beside(max(0, own_load), execute.run[0], execute.demand[0] if port else 0)
        for cand in range(lo, max(lo, min(t_next, i + 1 + max_pending)) + 1):
            while npend < len(window) and window[npend][0] < cand:
                j = window[npend][1]
                lad = q_lad[j]
                assert lad is not None
                load = lad.load[q_idx[j]]
                start = max(ref_start[j] - base if pos[j] < issued_ref else 0, fast_clock)
                if load > 0:
                    end = fast_clock = beside.load(start, load,
                                                   lad.demand[q_idx[j]] if port else 0)
                else:
                    end = start
                fast_max = max(fast_max, end + g[j])
                fast_total += lad.space[q_idx[j]]
                npend += 1
            if region is not None and cand > lo and fast_total - execute.space[0] > region:
                break
            if fast_total <= sram:
                score = max(beside.end() + axs[cand - lo], fast_max, fast_clock + ahs[cand - lo])
                if best is None or score <= best[0]:
                    best = (score, cand, 0, None)
                continue
            pend = [op for _p, op in window[:npend]]
            alloc = _allocate(sram, execute, pend, q_lad, q_idx)
            if alloc is None:
                break
            e, rungs = alloc
            clock = own_load  # the HBM queue, relative to the end of E<i-1>
            there = _Beside(max(0, own_load), execute.run[e], execute.demand[e] if port else 0)
            score = NEG
            penalty = 0
            for j, r in zip(pend, rungs, strict=True):
                lad = q_lad[j]
                assert lad is not None
                load = lad.load[r]
                start = max(ref_start[j] - base if pos[j] < issued_ref else 0, clock)
                end = clock = there.load(start, load, lad.demand[r] if port else 0) \
                    if load > 0 else start
                score = max(score, end + g[j])
                penalty += lad.warm[r] - lad.warm[q_idx[j]]
            score = max(score, there.end() + axs[cand - lo], clock + ahs[cand - lo]) + penalty
            if best is None or score <= best[0]:
                best = (score, cand, e, rungs)
        if best is None:
            if window and window[0][0] < lo:
                return None  # the order forces pending preloads that cannot fit
            best = (0, lo, len(execute.space) - 1, [])  # op too big for SRAM: least bad
        _score, t[i], exec_rung[i], rungs = best
        if rungs is not None:
            for (_p, j), r in zip(window, rungs, strict=False):
                q_idx[j] = r
        q_lad[i] = execute.preloads[exec_rung[i]]
        q_idx[i] = 0
        ax = axs[t[i] - lo] + execute.run[exec_rung[i]]
        ah = ahs[t[i] - lo]
        g[i] = ax
        for s in range(t[i], t_next):
            g.pop(order[s], None)
        window = [(p, op) for p, op in window if p < t[i]]
        t_next = t[i]

    choice = tuple(Choice(exec=classes[of_op[i]].execute.ids[exec_rung[i]],
                          preload=q_lad[i].ids[q_idx[i]])  # type: ignore[union-attr]
                   for i in range(n))
    issued_before: list[int] = []
    i = 0
    for s in range(n):
        while t[i] <= s:
            i += 1
        issued_before.append(i)
    program = program_from_issue(order, issued_before, range(n))
    return Decisions(choice=choice, program=program, issued=tuple(t))


def schedule_refined(instance: Instance, order: Sequence[int],
                     ladders: tuple[list[int], list[OpLadders]], timing: Timing,
                     rounds: int = ROUNDS, port_score: bool = True, region: int | None = None,
                     deadline: Deadline = NO_DEADLINE) -> tuple[Decisions, Schedule] | None:
    """Schedule, then reschedule against the best timing so far while the makespan improves
    (and `deadline` allows: OutOfTime only if the first schedule is cut)."""
    first = schedule(instance, order, ladders, region=region, deadline=deadline)
    if first is None:
        return None
    best = (first, evaluate(instance, first.choice, first.program, timing=timing))
    for _ in range(rounds):
        try:
            again = schedule(instance, order, ladders, Reference.of(*best), port_score, region,
                             deadline=deadline)
        except OutOfTime:
            break
        if again is None:
            break
        timed = evaluate(instance, again.choice, again.program, timing=timing)
        if timed.makespan_ns >= best[1].makespan_ns:
            break
        best = (again, timed)
    return best
