"""Plans from 5b model solutions, and 5b schedules of plans for hints.

A 5b model's times are only honoured by the evaluator with release times: every data load
and execute is released at the model's start, then the releases that do not bind are dropped
(`replay_shared`). A hint needs a true 5b schedule of a plan with the model's (possibly
dominating) pairs (`hinted_schedule`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from elk_opt.evaluate import Schedule, evaluate
from elk_opt.problem import Choice, Instance, Instr, Plan
from formulations.common import ModelTimes, Pair, Warm, chosen_load_ns, hint_index


def start_releases(program: Sequence[Instr], load_ns: Sequence[int],
                   schedule: Schedule) -> dict[Instr, int]:
    """Every data load and every execute released at its start in `schedule`."""
    out: dict[Instr, int] = {}
    for kind, j in program:
        if kind == "E":
            out[kind, j] = schedule.exec_start[j]
        elif load_ns[j]:
            out[kind, j] = schedule.load_start[j]
    return out


def hinted_schedule(instance: Instance, pairs: Sequence[Sequence[Pair]], plan: Plan,
                    warm: Warm) -> tuple[list[Pair], Schedule]:
    """The kept pairs a 5b plan maps to, and the plan's 5b schedule with them.

    Where a kept pair dominates the plan's own, the plan is re-timed with the kept pairs and
    every instruction released at its start in the plan: starts stay, ends come no later
    (the dominance argument of `pairs_of`), so this is a true schedule no worse.
    """
    picked = [ps[hint_index(instance, j, c, ps, "shared-noc")]
              for j, (c, ps) in enumerate(zip(warm.choice, pairs, strict=True))]
    kept = [Choice(exec=a.exec, preload=a.preload) for a in picked]
    if kept == warm.choice:
        return picked, warm.schedule
    own = chosen_load_ns(instance, warm.choice)
    return picked, evaluate(instance, kept, plan.program,
                            start_releases(plan.program, own, warm.schedule),
                            timing="shared-noc")


def binding_releases(program: Sequence[Instr], load_ns: Sequence[int],
                     release: Mapping[Instr, int], schedule: Schedule) -> dict[Instr, int]:
    """The releases that hold an instruction back in `schedule` (the others change nothing).

    An instruction's start without its release is the latest end among what the start rules
    make it wait for (docs/spec.md 5 and 5b); a release not above that is not binding, and
    dropping every such release leaves each start, hence the whole schedule, as it was.
    """
    keep: dict[Instr, int] = {}
    last_exec = last_load = -1
    for kind, j in program:
        after_exec = schedule.exec_end[last_exec] if last_exec >= 0 else 0
        if kind == "E":
            natural = max(after_exec, schedule.load_end[j])
            last_exec = j
        elif load_ns[j]:
            natural = max(after_exec, schedule.load_end[last_load] if last_load >= 0 else 0)
            last_load = j
        else:
            natural = after_exec
        value = release.get((kind, j))
        if value is not None and value > natural:
            keep[kind, j] = value
    return keep


def replay_shared(instance: Instance, program: Sequence[Instr],
                  times: ModelTimes) -> tuple[dict[Instr, int], Schedule]:
    """The releases a plan decoded from a 5b model needs, and its 5b schedule, checked.

    Every data load and execute is released at the model's start. Then every start is the
    model's and every end no later than the model's: by induction over time, an instruction
    active in the replay is active in the model, so the replay takes from it no more port
    than the model charged it. Releases that do not bind are dropped. A replay later than the
    model anywhere is a model bug, and raises.
    """
    choice = times.choice
    load_ns = chosen_load_ns(instance, choice)
    release: dict[Instr, int] = {("E", i): s for i, s in enumerate(times.exec_start)}
    release.update({("P", j): s for j, s in enumerate(times.load_start) if load_ns[j]})
    schedule = evaluate(instance, choice, program, release, timing="shared-noc")
    late = [f"E{i}" for i in range(len(choice))
            if schedule.exec_start[i] != times.exec_start[i]
            or schedule.exec_end[i] > times.exec_end[i]]
    late += [f"P{j}" for j in range(len(choice)) if load_ns[j]
             and (schedule.load_start[j] != times.load_start[j]
                  or schedule.load_end[j] > times.load_end[j])]
    if late:
        raise AssertionError("the 5b replay of the model's plan is later than the model at "
                             + ", ".join(late[:5]))
    keep = binding_releases(program, load_ns, release, schedule)
    if evaluate(instance, choice, program, keep, timing="shared-noc") != schedule:
        raise AssertionError("dropping non-binding releases changed the schedule")
    return keep, schedule
