"""A plan read from the fluid MIP's timeline: its pairs, its load order, its execute starts.

The fluid MIP with loads run whole (elk_opt.bounds.contiguous) is a relaxation, but its best
solution is close to a schedule: each op has one pair, each load starts in one interval and
runs without a break to the interval where it ends, and the interval lengths put every
execute start S_b on a time line. Replayed as a program, that timeline is often a better plan
than the exact search finds in the same time: on the Llama2-7B b16 KV2048 slice of the mesh
chip (21 ops) it gave 96,511 ns after the MIP's 8 s, where the small gap suite's 20 s cells
ended at 96,668 and 900 s of CP-SAT from `polish`'s plan at 96,469 (the MIP's bound: 96,231);
`certify`, starting CP-SAT and `polish` from it, reaches 96,238 in 60 s. On three of the
suite's twelve hbm3e slices it is the optimum (BENCHMARKS.md, "Plans read from the fluid
MIP").

The program: loads in the order they start in the solution (ties by the interval where they
end), each listed before the execute during whose interval it starts, so that it can follow
the load before it on the HBM at once; a load that moves no data just before its own
execute; the executes in the instance's order, each released at its start in the solution
less a slack. The timing then decides the real times. A few slacks are tried, and none; a
program that breaks R5 (the MIP charges SRAM over a band of loads only) is dropped. Of the
releases, the plan keeps those that bind, as every exact method's plan does. Under 5b `cpsat`
then re-times the plan exactly, its pairs and load order held (`fluid_retime`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from elk_opt.bounds.cuts import pair_uses
from elk_opt.bounds.fluid import FluidModel
from elk_opt.bounds.fluid_sram import SpacedCost, spaced_cost
from elk_opt.evaluate import Schedule, evaluate, fits_memory
from elk_opt.problem import Choice, Instance, Instr, Plan, Timing
from elk_opt.solution import make_plan
from formulations.common import chosen_load_ns
from formulations.replay import binding_releases

SLACKS = (0, 25, 50, 100, 200, 400, None)  # ns each release comes before the solution's
# start; None: no releases
DONE = 1e-6  # a fraction this close to 0 (or to 1) counts as no work (or the whole load)


def replayed_plan(instance: Instance, model: FluidModel, solution: np.ndarray,
                  timing: Timing, method: str, started: float) -> Plan | None:
    """The best plan the solution's timeline gives (module docstring), None if every
    program tried breaks R5."""
    costs: list[list[SpacedCost]] = model.costs  # type: ignore[assignment]
    picked = [cs[max(range(len(cs)), key=lambda a: solution[model.pick[j][a]])]
              for j, cs in enumerate(costs)]
    choice = [_choice_of(instance, j, cost) for j, cost in enumerate(picked)]
    program = _program(len(costs), _load_order(model, picked, solution))
    starts = _starts(model, solution)
    best: tuple[Schedule, dict[Instr, int]] | None = None
    for slack in SLACKS:
        release = {} if slack is None else {
            ("E", i): max(0, int(s) - slack) for i, s in enumerate(starts)}
        schedule = evaluate(instance, choice, program, release, timing=timing)
        if fits_memory(instance, schedule) and (
                best is None or schedule.makespan_ns < best[0].makespan_ns):
            best = (schedule, release)
    if best is None:
        return None
    release = binding_releases(program, chosen_load_ns(instance, choice), best[1],
                               best[0])  # the others change nothing
    return make_plan(instance, choice, program, method=method, started=started, timing=timing,
                     release_ns=release, params={"plan_source": "fluid MIP timeline"})


def _choice_of(instance: Instance, j: int, cost: SpacedCost) -> Choice:
    """A pair of op j with exactly these costs (the MIP's pairs are distinct costs)."""
    op = instance.ops[j]
    return next(Choice(exec=p.id, preload=q.id) for q, p, run, load in
                pair_uses(op, instance.chip) if spaced_cost(q, p, run, load) == cost)


def _load_order(model: FluidModel, picked: Sequence[SpacedCost], solution: np.ndarray
                ) -> dict[int, list[int]]:
    """Per interval, the loads that start in it, in the order they start."""
    first: dict[int, int] = {}
    whole: dict[int, int] = {}
    for (j, b), columns in model.fractions.items():
        if picked[j].load == 0:
            continue
        done = sum(solution[c] for c in columns)
        if done > DONE:
            first[j] = min(first.get(j, b), b)
        if done > 1 - DONE:
            whole[j] = min(whole.get(j, b), b)
    starting: dict[int, list[int]] = {}
    for j in sorted(first, key=lambda j: (first[j], whole.get(j, j), j)):
        starting.setdefault(first[j], []).append(j)
    return starting


def _program(n: int, starting: dict[int, list[int]]) -> list[Instr]:
    """Loads listed before the execute of the interval they start in (interval b holds
    E<b-1>); the rest, which move no data, before their own execute."""
    loaded = {j for js in starting.values() for j in js}
    program: list[Instr] = [("P", j) for j in starting.get(0, [])]
    for i in range(n):
        program += [("P", j) for j in starting.get(i + 1, [])]
        if i not in loaded:
            program.append(("P", i))
        program.append(("E", i))
    return program


def _starts(model: FluidModel, solution: np.ndarray) -> list[float]:
    """S_0 .. S_{n-1}: the execute starts, the running sums of the interval lengths."""
    ends = np.cumsum([sum(solution[c] for c in phases) for phases in model.phases])
    return [float(t) for t in ends[:-1]]

