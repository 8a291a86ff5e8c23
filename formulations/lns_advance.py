"""A `polish` move the windows miss: a load issued a few executes sooner, its release dropped.

Elk-Dyn and Elk-Full end with the same move (heuristics.advances), timed there by a replay
that knows no release times. Polished plans carry releases, and a window re-solves a few
layers with the rest pinned, so a load whose better place lies an execute or more before its
window's edge stays where it is. On the grid's Gemma2-27B b64 KV2048 analytic certificate
(polish's plan, 7,692,204 ns) this pass keeps 90 moves and ends at 7,679,424 ns (-0.17%) in
18 s; on the nine other rows above 1% it shortens little (0-0.01%), but most of its moves
there lower the sum of execute ends, and the windows solved after them gain where they had
stopped: `certify` continued took Llama2-13B b32 KV4096 elk-paper from 2.52% to 1.45% and
OPT-30B b32 KV4096 from 1.83% to 0.99% (BENCHMARKS.md, "Starts from elsewhere, loads issued
sooner in `polish`").

Polish sweeps once before its windows and again after each pass of windows that gained
nothing, since the windows move loads too (knob `sooner`). On 16 four-layer zoo slices run
to polish's local optimum (`benchmarks/bench_sooner.py`) the sweeps after dry passes ended
lower on 6 (by up to 2.49%), higher on 2 (by up to 0.33%), a geometric mean of -0.32%; on
whole-model certificates they kept a few moves or none (BENCHMARKS.md, "Loads issued sooner
again").

Each data-moving load, in program order, is tried 1..AHEAD executes sooner, as the last load
issued there (so it may pass loads issued after that point), with its release dropped (a
release would hold it where it was). Each try is timed exactly on the whole plan and must keep
R5; the best try is kept if it lowers polish's key (makespan, then the sum of execute ends),
and the load is tried again from its new place.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from elk_opt.evaluate import Schedule, evaluate
from elk_opt.problem import Instance, Instr, Plan
from formulations.common import chosen_load_ns
from formulations.lns_region import move_key

AHEAD = 4  # executes sooner a load is tried at, at most, per move


def advance_loads(instance: Instance, plan: Plan, deadline: float | None,
                  stop: Callable[[], bool] = lambda: False) -> tuple[Plan, int]:
    """The plan with loads issued sooner where that pays, and how many moves were kept."""
    sram = instance.chip.sram_bytes
    program: list[Instr] = list(plan.program)
    release: dict[Instr, int] = dict(plan.release_ns)

    def timed(prog: list[Instr], rel: dict[Instr, int]) -> Schedule | None:
        got = evaluate(instance, plan.choice, prog, rel, timing=plan.timing)
        return None if got.peak_sram_bytes > sram else got

    best = timed(program, release)
    assert best is not None, "polish's incumbent obeys R5"
    load_ns = chosen_load_ns(instance, plan.choice)
    moving = [j for kind, j in program if kind == "P" and load_ns[j] > 0]
    kept = 0
    for j in moving:
        while not stop() and (deadline is None or time.perf_counter() < deadline):
            at = program.index(("P", j))
            executes = [k for k in range(at) if program[k][0] == "E"][-AHEAD:]
            rel = {i: t for i, t in release.items() if i != ("P", j)}
            found = None
            for pos in reversed(executes):
                prog = program[:pos] + [("P", j)] + program[pos:at] + program[at + 1:]
                got = timed(prog, rel)
                if got is not None and move_key(got) < move_key(
                        best if found is None else found[2]):
                    found = (prog, rel, got)
            if found is None:
                break
            program, release, best = found
            kept += 1
    if not kept:
        return plan, 0
    return Plan(instance=instance, choice=plan.choice, program=tuple(program),
                release_ns=release, timing=plan.timing), kept
