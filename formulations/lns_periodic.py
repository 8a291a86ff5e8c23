"""A `polish` move on whole layers: one layer's decisions copied onto its twin layers.

Decoder layers repeat, so a plan can be periodic: every twin layer (same plans and warm-ups,
op by op) runs the same pairs and issues its loads at the same places relative to its own
ops. Elk-Full's plans and polish's windows are not periodic: the windows improve some layers
and the region splices of `polish` carry a solution to a twin only when the twin's
neighbourhood in the plan matches. This move copies a whole layer instead:
- its ops' pairs;
- where each of its loads is issued, as an *anchor*: the execute the load is issued just
  before (an op offset from the layer's first op, so a load issued one layer ahead keeps its
  lead) and its place among the loads issued there;
- optionally its releases, shifted by the distance between the two layers' starts in the
  current schedule.
The program is rebuilt from every load's anchor. Each load still comes before its own execute,
since the anchor's offset is at most the op's own (as in the source layer), and the execute
order stays the instance's. A copy can break R5 where the source's neighbourhood held less:
the last decoder layer, whose span is the shortest because it preloads no next layer, copied
onto the others makes each carry the next layer's loads beside loads it never had. So
`fit_sram` then issues loads later, the farthest-needed first, until R5 holds (issuing a load
later never adds to any execute's left-hand side): on Gemma2-27B b64 KV4096 that turned every
failing copy of a 450 s polish plan into one 1.4% faster (BENCHMARKS.md, "Copies fitted
into SRAM"). Each candidate is timed exactly on the whole plan and kept if it
obeys R5 and lowers (makespan, sum of execute ends), as `polish` keeps its windows.

Every layer is tried as the source and copied onto all its twins at once (a periodic plan):
one evaluation per layer and release choice, about a second on the Figure 17 models (up to 80
layers). Above MAX_SOURCES layers in a class, only that many are tried, the ones whose
executes span the least time first, so one round stays linear in the model's size. Copying
one twin at a time, the shortest layers first, was measured too (BENCHMARKS.md, "Layers copied
onto their twins"): it found less and cost tens of seconds a round.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable, Sequence

from elk_opt.evaluate import Schedule, evaluate
from elk_opt.problem import Choice, Instance, Instr, Plan
from elk_opt.warm import in_instance_order
from formulations.lns_region import move_key
from formulations.lns_windows import layer_runs

MAX_SOURCES = 128  # layers tried as the source per class, the shortest first (all, up to 80 layers)
Anchor = tuple[int, int]  # (the op whose execute the load precedes, place among those loads)


def twin_classes(instance: Instance) -> list[list[tuple[int, int]]]:
    """Layer runs [first, stop) grouped by their ops' plans and warm-ups offset by offset;
    only groups of two or more."""
    groups: dict[tuple, list[tuple[int, int]]] = {}
    for first, stop in layer_runs(instance):
        if instance.ops[first].layer is None:
            continue
        groups.setdefault(instance.twin_key(first, stop), []).append((first, stop))
    return [g for g in groups.values() if len(g) > 1]


def anchors(program: Sequence[Instr], n: int) -> dict[int, Anchor]:
    """Per load: the execute it is issued just before (n after the last one) and its place
    counted back from that execute (-1: right before it)."""
    out: dict[int, Anchor] = {}
    waiting: list[int] = []
    for instr in program:
        if instr[0] == "P":
            waiting.append(instr[1])
            continue
        for k, j in enumerate(waiting):
            out[j] = (instr[1], k - len(waiting))
        waiting = []
    for k, j in enumerate(waiting):
        out[j] = (n, k - len(waiting))
    return out


def program_of(anchor: dict[int, Anchor], n: int) -> tuple[Instr, ...]:
    """The program with every load at its anchor, executes in the instance's order."""
    before: dict[int, list[tuple[int, int]]] = {}
    for j, (x, place) in anchor.items():
        before.setdefault(x, []).append((place, j))
    program: list[Instr] = []
    for i in range(n + 1):
        program += [("P", j) for _place, j in sorted(before.get(i, ()))]
        if i < n:
            program.append(("E", i))
    return tuple(program)


def copy_layer(plan: Plan, schedule: Schedule, source: tuple[int, int],
               targets: Sequence[tuple[int, int]], shift_releases: bool) -> Plan:
    """`plan` with the source layer's pairs, anchors and (if asked) releases on each target."""
    n = len(plan.instance.ops)
    anchor = anchors(plan.program, n)
    choice: list[Choice] = list(plan.choice)
    release = dict(plan.release_ns)
    a0 = source[0]
    for first, stop in targets:
        d = first - a0
        for o in range(stop - first):
            x, place = anchor[a0 + o]
            anchor[first + o] = (min(n, max(0, x + d)), place)
            choice[first + o] = plan.choice[a0 + o]
            for kind in ("P", "E"):
                release.pop((kind, first + o), None)
                if shift_releases and (kind, a0 + o) in plan.release_ns:
                    moved = (plan.release_ns[kind, a0 + o] + schedule.exec_start[first]
                             - schedule.exec_start[a0])
                    release[kind, first + o] = max(0, moved)
    anchor = fit_sram(plan.instance, choice, anchor)
    return Plan(instance=plan.instance, choice=tuple(choice), program=program_of(anchor, n),
                release_ns=release, timing=plan.timing)


def fit_sram(instance: Instance, choice: Sequence[Choice],
             anchor: dict[int, Anchor]) -> dict[int, Anchor]:
    """The anchors with loads moved later until R5 holds at every execute: where it breaks at
    E<i>, the pending load needed last is issued right before E<i+1> instead, ahead of the
    loads already there (the nearest-needed of those moved first). Each load stays before its
    execute (it is pending at E<i>, so its op comes after i). An execute whose own space
    breaks R5 alone is left as it is."""
    cap = instance.chip.sram_bytes
    load_space = [op.preload_by_id[c.preload].space_bytes
                  for op, c in zip(instance.ops, choice, strict=True)]
    run_space = [op.exec_by_id[c.exec].space_bytes
                 for op, c in zip(instance.ops, choice, strict=True)]
    anchor = dict(anchor)
    issued_before: dict[int, list[int]] = {}
    for j, (x, _place) in anchor.items():
        issued_before.setdefault(x, []).append(j)
    pending: set[int] = set()
    farthest: list[int] = []  # a heap of -j over pending loads (stale entries skipped)
    space = moved = 0
    for i in range(len(instance.ops)):
        for j in issued_before.get(i, ()):
            if j > i:
                pending.add(j)
                space += load_space[j]
                heapq.heappush(farthest, -j)
        if i in pending:  # executes now: no longer pending
            pending.discard(i)
            space -= load_space[i]
        while max(run_space[i], load_space[i]) + space > cap and pending:
            j = -heapq.heappop(farthest)
            if j not in pending:
                continue
            pending.discard(j)
            space -= load_space[j]
            moved += 1
            anchor[j] = (i + 1, -len(instance.ops) - moved)  # before every load anchored there
            issued_before.setdefault(i + 1, []).append(j)
    return anchor


def best_copy(instance: Instance, plan: Plan, schedule: Schedule, source: tuple[int, int],
              members: Sequence[tuple[int, int]], beaten: Schedule) -> tuple[Plan, Schedule] | None:
    """`plan` (timed as `schedule`) with `source` copied onto all its twins `members`, releases
    shifted or not, whichever is faster, if it obeys R5 and lowers `beaten`'s key."""
    found = None
    for shift in (False, True):
        cand = copy_layer(plan, schedule, source, members, shift)
        s = evaluate(instance, cand.choice, cand.program, cand.release_ns, timing=plan.timing)
        if (s.peak_sram_bytes <= instance.chip.sram_bytes
                and move_key(s) < move_key(found[1] if found else beaten)):
            found = (cand, s)
    return found


def copy_twins(instance: Instance, plan: Plan, schedule: Schedule, deadline: float | None,
               stop: Callable[[], bool] = lambda: False) -> tuple[Plan, int]:
    """The plan (timed as `schedule`) with, per twin class, the best layer copied onto all
    its twins (if that gains), and how many classes were copied."""
    classes = twin_classes(instance)
    if not classes or not in_instance_order(plan):  # copies rebuild that order
        return plan, 0

    def out_of_time() -> bool:
        return stop() or (deadline is not None and time.perf_counter() >= deadline)

    best, best_s = plan, schedule
    kept = 0
    for members in classes:
        found = None
        by_span = sorted(members, key=lambda m: best_s.exec_end[m[1] - 1] - best_s.exec_start[m[0]])
        for source in by_span[:MAX_SOURCES]:
            if out_of_time():
                return best, kept
            found = best_copy(instance, best, best_s, source, members,
                              found[1] if found else best_s) or found
        if found:
            best, best_s = found
            kept += 1
    return best, kept
