"""Simulated annealing over a plan's pairs, load order and releases, every try timed exactly.

On small instances under 5b CP-SAT's search finds good plans slowly: on the small suite's 12
mesh slices its 20 s runs from `elk-full-lp`'s plan end 0.01-0.3% above the fluid bound, and
300 s on two threads took OPT-30B b16 KV2048 from 208,602 to 208,324 ns (bound 208,320). The
evaluator times a 19-op program in under 0.1 ms, so a local search tries ten thousand plans a
second: from `elk-full-lp`'s 208,970 ns it reaches 208,374 ns there in under 8 s (80,000
tries, where it stops on its own), and `cpsat`, which anneals its best plan before its search
runs again, ends its 20 s cell at 208,391 (BENCHMARKS.md, "Annealing before the search
continues").

A try changes one thing: moves a preload a few places in the program (its HBM order and issue
point change together), gives an op another of its feasible pairs, or moves, sets or drops
one instruction's release. It is timed by `elk_opt.evaluate` and kept if it obeys R5 and the
Metropolis rule accepts it. The temperature falls linearly over a round of ROUND tries from
TEMPERATURE times the start's makespan to nothing; each round starts from the best plan so
far, and the search ends at its deadline, at a given lower bound, or after PATIENCE rounds
without a better plan. Executes keep the instance's order; moves that put a preload after its
execute are not tried. The result is only as good as a heuristic's: it claims no bound.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from elk_opt.evaluate import evaluate
from elk_opt.problem import Choice, Instance, Instr, Plan, Timing
from elk_opt.solution import make_plan
from formulations.common import feasible_pairs
from formulations.deadline import Deadline

ROUND = 20_000  # tries per round, each round cooling from the best plan so far
TEMPERATURE = 2.5e-5  # of the start's makespan: the first temperature of a round, in ns
SHIFTS = (-3, -2, -1, 1, 2, 3)  # places a preload moves in the program
STEPS = (1, 3, 10, 30, 100, 300, 1_000, 3_000)  # ns a release moves
CHECK_EVERY = 256  # tries between looks at the deadline
PATIENCE = 2  # rounds in a row without a better plan, and the search stops


@dataclass(frozen=True)
class Annealed:
    choice: tuple[Choice, ...]
    program: tuple[Instr, ...]
    release_ns: Mapping[Instr, int]
    makespan_ns: int
    tries: int


@dataclass(frozen=True)
class _State:
    choice: tuple[Choice, ...]
    program: tuple[Instr, ...]
    release: Mapping[Instr, int]
    makespan: int
    starts: Mapping[Instr, int]


def anneal(instance: Instance, choice: Sequence[Choice], program: Sequence[Instr],
           release_ns: Mapping[Instr, int] | None, timing: Timing, deadline: Deadline,
           seed: int = 0, floor: int = 0) -> Annealed | None:
    """The best plan found from the given one before `deadline`, or once it meets `floor` (a
    lower bound) or PATIENCE rounds in a row gain nothing (module docstring); None if the
    given plan breaks R5."""
    if deadline.at is None:
        raise ValueError("annealing needs a deadline with a time")
    start = _timed(instance, tuple(choice), tuple(program), dict(release_ns or {}), timing)
    if start is None:
        return None
    pairs = [[Choice(exec=a.exec, preload=a.preload) for a in ps]
             for ps in feasible_pairs(instance, timing)]
    rng = random.Random(seed)
    hot = TEMPERATURE * start.makespan
    best = current = round_best = start
    tries = idle = 0
    while tries % CHECK_EVERY or not deadline.passed():
        if tries % ROUND == 0:
            if tries:
                idle = idle + 1 if best is round_best else 0
            if best.makespan <= floor or idle >= PATIENCE:
                break
            current = round_best = best
        temperature = hot * (1 - (tries % ROUND) / ROUND)
        tries += 1
        tried = _timed(instance, *_move(current, pairs, rng), timing)
        if tried is None:
            continue
        worse = tried.makespan - current.makespan
        if worse <= 0 or (temperature > 0 and rng.random() < math.exp(-worse / temperature)):
            current = tried
            if tried.makespan < best.makespan:
                best = tried
    return Annealed(best.choice, best.program, _binding(instance, best, timing), best.makespan,
                    tries)


def annealed_plan(plan: Plan, timing: Timing, floor: int, seconds: float, seed: int,
                  method: str, started: float) -> Plan | None:
    """`plan`'s decisions annealed for `seconds` under `timing` (the caller's, which a warm
    start of another timing need not carry), claimed by `method` with no bound, if that is
    faster; None if not (or if `plan` breaks R5)."""
    instance = plan.instance
    found = anneal(instance, plan.choice, plan.program, plan.release_ns, timing,
                   Deadline.after(seconds, time.perf_counter()), seed, floor)
    before = evaluate(instance, plan.choice, plan.program, plan.release_ns, timing=timing)
    if found is None or found.makespan_ns >= before.makespan_ns:
        return None
    return make_plan(instance, found.choice, found.program, method=method, started=started,
                     timing=timing, release_ns=found.release_ns,
                     params={"plan_source": "annealed"})


def _move(state: _State, pairs: list[list[Choice]], rng: random.Random
          ) -> tuple[tuple[Choice, ...], tuple[Instr, ...], dict[Instr, int]]:
    """One change to the state's plan (module docstring)."""
    choice, program, release = state.choice, state.program, dict(state.release)
    kind = rng.random()
    if kind < 0.4:
        program = _shifted(program, rng)
    elif kind < 0.55:
        j = rng.randrange(len(choice))
        choice = (*choice[:j], rng.choice(pairs[j]), *choice[j + 1:])
    else:
        instr: Instr = ("E" if rng.random() < 0.7 else "P", rng.randrange(len(choice)))
        if instr in release and rng.random() < 0.2:
            del release[instr]
        else:
            at = release.get(instr, state.starts[instr])
            release[instr] = max(0, at + rng.choice((-1, 1)) * rng.choice(STEPS))
    return choice, program, release


def _shifted(program: tuple[Instr, ...], rng: random.Random) -> tuple[Instr, ...]:
    """The program with one preload moved a few places, if it stays before its execute."""
    loads = [k for k, (kind, _) in enumerate(program) if kind == "P"]
    k = rng.choice(loads)
    rest = program[:k] + program[k + 1:]
    to = min(max(0, k + rng.choice(SHIFTS)), len(rest))
    moved = (*rest[:to], program[k], *rest[to:])
    own = ("E", program[k][1])
    return moved if moved.index(program[k]) < moved.index(own) else program


def _binding(instance: Instance, state: _State, timing: Timing) -> dict[Instr, int]:
    """The state's releases less those whose dropping changes nothing (a plan keeps only
    releases that bind, as the exact methods' plans do)."""
    release = dict(state.release)
    schedule = evaluate(instance, state.choice, state.program, release, timing=timing)
    dropped = True
    while dropped:  # until every release left binds
        dropped = False
        for instr in sorted(release):
            fewer = {k: v for k, v in release.items() if k != instr}
            if evaluate(instance, state.choice, state.program, fewer, timing=timing) == schedule:
                release, dropped = fewer, True
    return release


def _timed(instance: Instance, choice: tuple[Choice, ...], program: tuple[Instr, ...],
           release: dict[Instr, int], timing: Timing) -> _State | None:
    """The plan with its makespan and starts, or None if it breaks R5."""
    schedule = evaluate(instance, choice, program, release, timing=timing)
    if schedule.peak_sram_bytes > instance.chip.sram_bytes:
        return None
    starts = {("P", j): t for j, t in enumerate(schedule.load_start)}
    starts.update({("E", i): t for i, t in enumerate(schedule.exec_start)})
    return _State(choice, program, release, schedule.makespan_ns, starts)
