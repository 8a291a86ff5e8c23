"""The state of a `polish` search and its window moves: the incumbent, the splices of a region
model's solution into it, and the copies of a layer onto its twins; every candidate is checked
on the whole plan before it is kept (`polish` runs the search)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ortools.sat.python import cp_model

from elk_opt.errors import UsageError
from elk_opt.evaluate import Schedule, evaluate
from elk_opt.problem import Choice, Instance, Instr, Plan, Timing
from elk_opt.solution import SolveOptions
from formulations.common import Pair, ceil_integer, decode, hint_index, warm_decisions
from formulations.cpsat_model import read_times, solver_for
from formulations.cpsat_run import Interrupt
from formulations.lns_periodic import best_copy, twin_classes
from formulations.lns_region import (
    Incumbent,
    Region,
    move_key,
    region_at,
    region_model,
    region_of,
    splice,
)
from formulations.lns_windows import Window, signature
from formulations.replay import replay_shared

LIMIT_MARGIN_S = 0.05  # stop starting windows this close to the deadline


def incumbent_of(instance: Instance, pairs: list[list[Pair]], plan: Plan,
               timing: Timing) -> Incumbent:
    warm = warm_decisions(instance, plan, timing)
    if warm is None:
        raise UsageError("polish needs a warm-start plan that executes in the instance's order")
    pick = tuple(hint_index(instance, j, c, ps, timing) for j, (c, ps) in
                 enumerate(zip(warm.choice, pairs, strict=True)))
    return Incumbent(plan, pick, tuple(warm.slot), warm.schedule)


class Search:
    """The incumbent and the moves that change it; every candidate is checked whole."""

    def __init__(self, instance: Instance, pairs: list[list[Pair]], plan: Plan,
                 timing: Timing, periodic: bool = False) -> None:
        self.instance, self.pairs, self.timing = instance, pairs, timing
        self.inc = incumbent_of(instance, pairs, plan, timing)
        if self.inc.schedule.peak_sram_bytes > instance.chip.sram_bytes:
            raise UsageError("polish: the warm-start plan breaks rule R5 (SRAM)")
        self.improved = self.twins_applied = self.held = self.advanced = 0
        self.layers_copied = 0
        self.whole_solved = False  # the plan came from the whole instance solved (`solve_whole`)
        self.refused_copied = 0  # refused windows whose layers, copied, gained
        # the twin layer classes, for copies (`periodic`; the plan is in the instance's order)
        self.classes = twin_classes(instance) if periodic else []
        # CP-SAT's bound once a window was the whole instance, or the fluid MIP's with loads
        # run whole (`polish_whole.take_loads_run_whole`)
        self.bound: int | None = None
        self.contiguous: int | None = None  # that MIP's bound, when it ran
        self.whole_ns: int | None = None  # that MIP's with intervals of whole ns, when it ran
        self.replayed = False  # the plan read from that MIP's solution was taken
        self.annealed: int | None = None  # the incumbent's makespan once annealing improved it
        self.op_sig = [signature(pairs, j, j + 1) for j in range(len(pairs))]

    def twin_shifts(self, r: Region) -> list[int]:
        """Offsets d != 0 at which the region [lo + d, hi + d) has the same pairs."""
        size, sig = r.hi - r.lo, self.op_sig[r.lo:r.hi]
        return [first - r.lo for first in range(len(self.op_sig) - size + 1)
                if first != r.lo and self.op_sig[first:first + size] == sig]

    def offer(self, r: Region, choice: list[Choice], program: tuple[Instr, ...],
              release: Mapping[Instr, int], shift: int) -> bool:
        """Splice a region's solution into the plan and keep the best splice (later releases
        moved by the region's gain or not, later preloads in their gap or behind the region's
        loads: `lns_region.splice`) if it beats the incumbent."""
        return self.take(self.best_splice(r, choice, program, release, shift))

    def take(self, spliced: tuple[Plan, Schedule] | None) -> bool:
        """Make a splice the incumbent if it lowers the key."""
        if spliced is None or move_key(spliced[1]) >= move_key(self.inc.schedule):
            return False
        self.inc = incumbent_of(self.instance, self.pairs, spliced[0], self.timing)
        return True

    def best_splice(self, r: Region, choice: list[Choice], program: tuple[Instr, ...],
                    release: Mapping[Instr, int], shift: int,
                    model_loads: Mapping[int, int] | None = None
                    ) -> tuple[Plan, Schedule] | None:
        """The fastest splice of a region's solution that obeys R5, faster or not (with
        `model_loads`, also the splice that follows the model's HBM timeline)."""
        best = None
        shifts = sorted({shift, 0}) if self.inc.plan.release_ns else [0]
        ways: list[tuple[bool, Mapping[int, int] | None]] = [(True, None), (False, None)]
        if model_loads:
            ways.append((False, model_loads))
        for moved, (keep_gap, by_time) in itertools.product(shifts, ways):
            c, p, rel = splice(self.inc, r, choice, program, release, moved, keep_gap, by_time)
            got = evaluate(self.instance, c, p, rel, timing=self.timing)
            if got.peak_sram_bytes > self.instance.chip.sram_bytes:
                continue
            if best is None or move_key(got) < move_key(best[1]):
                best = (Plan(instance=self.instance, choice=c, program=p, release_ns=rel,
                             timing=self.timing), got)
        return best

    def copy_refused(self, r: Region, spliced: tuple[Plan, Schedule]) -> bool:
        """A splice the whole plan refused, its window's layers copied onto all their twins:
        kept if the whole plan gains. A layer that loses in place, beside neighbours that
        differ from it, can win as every layer's pattern (the plans are periodic)."""
        plan, schedule = spliced
        best = None
        for members in self.classes:
            for source in members:
                if source[0] < r.stop and r.first < source[1]:
                    best = best_copy(self.instance, plan, schedule, source, members,
                                     best[1] if best else self.inc.schedule) or best
        if not self.take(best):
            return False
        self.refused_copied += 1
        return True

    def adopt(self, plan: Plan) -> bool:
        """Take a whole plan if it obeys R5 and lowers the key."""
        got = evaluate(self.instance, plan.choice, plan.program, plan.release_ns,
                       timing=self.timing)
        if (got.peak_sram_bytes > self.instance.chip.sram_bytes
                or move_key(got) >= move_key(self.inc.schedule)):
            return False
        self.inc = incumbent_of(self.instance, self.pairs, plan, self.timing)
        return True

    def twin_choice(self, r: Region, d: int, choice: list[Choice]) -> list[Choice]:
        """The region's new pairs moved `d` ops on: free ops by pair index, pinned their own."""
        out = []
        for k, c in enumerate(choice):
            j, t = r.lo + k, r.lo + k + d
            if r.first <= j < r.stop:
                idx = next(x for x, a in enumerate(self.pairs[j])
                           if (a.preload, a.exec) == (c.preload, c.exec))
                a = self.pairs[t][idx]
                out.append(Choice(exec=a.exec, preload=a.preload))
            else:
                out.append(self.inc.plan.choice[t])
        return out


def solve_window(search: Search, w: Window, reach: tuple[int, int], limit: float | None,
                  options: SolveOptions, interrupt: Interrupt,
                  left: Callable[[], float | None]) -> bool:
    """Re-solve one window; if the whole plan gains, apply the same move to its twins."""
    instance = search.instance
    margin, depth = reach
    for deeper in (depth, depth + 1):  # a proposal the whole plan refuses: look further on
        r = region_of(instance, search.inc, w.first, w.stop, margin, deeper)
        found = propose(search, r, limit, options, interrupt)
        if found is None:
            return False
        spliced = search.best_splice(r, found.choice, found.program, found.release, found.shift,
                                     found.model_loads)
        if search.take(spliced):
            break
        if spliced is not None and search.copy_refused(r, spliced):
            return True  # its twins got it
        rest = left()
        limit = None if limit is None or rest is None else min(limit, rest)
        if interrupt.seen or (rest is not None and rest <= LIMIT_MARGIN_S):
            return False
    else:
        return False
    search.improved += 1
    for d in search.twin_shifts(r):
        rest = left()
        if interrupt.seen or (rest is not None and rest <= LIMIT_MARGIN_S):
            break
        twin = region_at(instance, search.inc, r.lo + d, r.hi + d, w.first + d, w.stop + d)
        if search.offer(twin, search.twin_choice(r, d, found.choice), found.program,
                        found.release, found.shift):
            search.twins_applied += 1
    return True


@dataclass(frozen=True)
class Proposal:
    """A region model's solution that beats the incumbent there."""

    choice: list[Choice]
    program: tuple[Instr, ...]
    release: dict[Instr, int]
    shift: int  # the region's estimated gain (<= 0), for the releases after it
    model_loads: dict[int, int]  # op -> the model's start of its load, for loads that take time


def propose(search: Search, r: Region, limit: float | None, options: SolveOptions,
             interrupt: Interrupt) -> Proposal | None:
    """The region model's solution if it beats the incumbent there; None otherwise."""
    cm, value = region_model(search.instance, search.pairs, search.inc, r, search.timing)
    solver = solver_for(options, limit, search.timing)
    status = interrupt.solve(solver, cm.model)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    n = len(search.pairs)
    if (r.lo, r.first, r.stop, r.hi) == (0, 0, n, n):  # the exact model: its bound holds
        search.bound = max(search.bound or 0, ceil_integer(solver.best_objective_bound))
    if round(solver.objective_value) >= value:
        return None
    times = read_times(cm, solver)
    program = decode(r.sub, times)
    release: dict[Instr, int] = {}
    if search.timing == "shared-noc":
        release, local = replay_shared(r.sub, program, times)
    else:
        local = evaluate(r.sub, times.choice, program, timing=search.timing)
    # the model's end where it saw loads the replay of the region alone does not
    end = max(local.exec_end[-1], times.exec_end[-1])
    shift = min(0, r.base + end - search.inc.schedule.exec_end[r.hi - 1])
    loads = {r.lo + k: r.base + t for k, (t, e) in
             enumerate(zip(times.load_start, times.load_end, strict=True)) if e > t}
    return Proposal(times.choice, program, release, shift, loads)
