"""`polish`: large-neighbourhood search that re-solves windows of a full-scale plan exactly.

Start from a plan (by default Elk-Full's), in the instance's execution order. Each window
(`lns_windows`: `layers` consecutive layers, or `width` ops where ops carry no layer) is
re-solved with CP-SAT on a model of its neighbourhood only (`lns_region`: the window free,
`margin` pinned ops each side, the rest of the plan as boundary conditions), so a window
costs the same on a 20-op layer and on Llama2-70B. The solution is spliced into the whole
plan, which is evaluated exactly; it is kept if it obeys R5 and lowers (makespan, sum of
execute ends): a plateau move that lets the execute chain finish earlier locally is kept.
When the whole plan refuses what the region's model promised (the boundary is approximate),
the region reaches one step further on (`depth` + 1) and the window is solved again. Before
the windows, executes are held back where a load has the port (`lns_holds`: the 5b optimum's
move on the calibration layer that windows miss), in at most a tenth of the time limit.
Then loads are issued a few executes sooner where that pays (`lns_advance`: a move windows miss
when the better place lies past a window's edge), in at most ADVANCE_SHARE of the time limit,
and again after each pass of windows that gained nothing, before the windows grow, unless a
finished sweep found nothing on that same plan (knob `sooner`: 2, the default; 1 only before
the windows; 0 never).
A kept window is applied to each of its twins (windows of identical layers, same pairs offset
by offset), each checked on the whole plan, so a repeated layer is solved once. Where a
twin's neighbourhood differs and the splice is refused, whole layers are copied instead
(`lns_periodic`, knob `periodic`): after each gain, each twin class's best copy of one layer
onto all its twins, kept if the whole plan gains. A window whose splice the whole plan refuses
has its layers copied onto their twins too (from the refused splice): a layer that loses in
place, beside neighbours unlike it, can win as every layer's pattern.

Windows are taken twin class by twin class, in decreasing total score (span minus a local
lower bound: where the execute chain stalls), each class from an interior member out, and
passes alternate between layer-aligned windows and windows straddling
layer boundaries. After two passes without a gain the search stops, or, with a time limit,
grows the windows by a layer and doubles the per-window time, until the limit; windows of L
whole layers (where ops carry layers) get at least L x LAYER_WINDOW_S each: on Llama2-13B
b32 KV4096 a one-layer window found in 60 s the load order whose copy onto every layer gains
0.9%, where in 20 s it found nothing (BENCHMARKS.md, "A minute per layer window"). Under 5b the
windows are solved with the 5b model and the plan carries the releases that bind. The result
is a local optimum of this neighbourhood, not a proven optimum: its status is `feasible`
unless its bound meets it. The bound claimed is the best of: the best linear-time bound for
the timing (`elk_opt.bounds.cheap`), up to FLUID_MAX_OPS ops the fluid floor
(`formulations.fluid_floor`: the fluid LP, milliseconds there, and up to 100 ops the fluid
MIP in a fifth of the time, unless the MIP with loads run whole follows the whole solve under
5b: `_whole_then_loads`) or instead a floor the caller gives (`SolveOptions.floor_ns`, at
any size), with `certify` the LP relaxation's, and CP-SAT's bound once a
window covered the whole instance (then the region model is the exact model); all for the
instance's execution order. The floor comes first, and the search stops once its plan meets
it or a bound. An instance of at most WHOLE_MAX_OPS ops is first solved whole by `cpsat` in
half the time (`_solve_whole`): on the small gap suite's 24 one-layer zoo slices (20 s) that
proves the 8 that `cpsat` proves, in 2-12 s, where the windows alone proved 2 and used the
whole 20 s on the others, and polish's claimed gap went from a median 0.13% (worst 0.81%) to
0.09% (worst 0.57%). When that solve proves nothing, the fluid MIP with loads run whole follows
(`_loads_run_whole`), as in `cpsat`, for its bound and the plan its solution replays to.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from ortools.sat.python import cp_model

from elk_opt.bounds.cheap import cheap_bound_by
from elk_opt.deadline import Deadline
from elk_opt.errors import UsageError
from elk_opt.evaluate import Schedule, evaluate
from elk_opt.interrupts import stop_requested
from elk_opt.problem import Choice, Instance, Instr, Plan, Timing
from elk_opt.progress import say, track
from elk_opt.solution import SolveOptions, make_plan
from formulations.anneal import annealed_plan
from formulations.common import (
    Pair,
    ceil_integer,
    chosen_load_ns,
    claimed_bound,
    decode,
    feasible_pairs,
    hint_index,
    warm_decisions,
)
from formulations.cpsat import ANNEAL_SHARE
from formulations.cpsat import solve as solve_cpsat
from formulations.cpsat_model import read_times, solver_for
from formulations.cpsat_run import Interrupt
from formulations.fluid_floor import (
    LoadsRunWhole,
    fits_loads_run_whole,
    fluid_floor,
    loads_run_whole,
    wants_loads_run_whole,
    whole_ns_after,
)
from formulations.ilp import TooLarge, lp_bound
from formulations.lns_advance import advance_loads
from formulations.lns_holds import hold_executes
from formulations.lns_periodic import best_copy, copy_twins, twin_classes
from formulations.lns_region import (
    Incumbent,
    Region,
    move_key,
    region_at,
    region_model,
    region_of,
    splice,
)
from formulations.lns_windows import Window, ranked, signature, windows
from formulations.replay import binding_releases, replay_shared

KNOBS = {"layers": 0, "width": 10, "stride": 12, "margin": 2, "depth": 0, "window_time": 10.0,
         "tries": 2, "certify": False, "periodic": True, "whole": True, "sooner": 2}
HOLDS_SHARE = 0.1  # of the time limit, at most, for holding executes back (lns_holds)
ADVANCE_SHARE = 0.1  # of the time limit, at most, for issuing loads sooner (lns_advance)
PERIODIC_SHARE = 0.1  # of the time limit, at most, per round of copying layers (lns_periodic)
FLUID_MAX_OPS = 200  # the fluid floor as a stopping bound up to this size
WHOLE_MAX_OPS = 64  # up to this size the instance is first solved whole (`_solve_whole`)
WHOLE_SHARE = 0.5  # of the time left, for that solve (a work limit is per window: all of it)
LOADS_SHARE = 0.6  # of the time left after it, for the fluid MIP with loads run whole
UNLIMITED_FLOOR_S = 10.0  # without a time limit, the floor's shares are of this
LAYER_WINDOW_S = 60.0  # per layer of a window once the windows are whole layers
LIMIT_MARGIN_S = 0.05  # stop starting windows this close to the deadline


def _incumbent(instance: Instance, pairs: list[list[Pair]], plan: Plan,
               timing: Timing) -> Incumbent:
    warm = warm_decisions(instance, plan, timing)
    if warm is None:
        raise UsageError("polish needs a warm-start plan that executes in the instance's order")
    pick = tuple(hint_index(instance, j, c, ps, timing) for j, (c, ps) in
                 enumerate(zip(warm.choice, pairs, strict=True)))
    return Incumbent(plan, pick, tuple(warm.slot), warm.schedule)


def _knobs(params: dict) -> dict:
    unknown = set(params) - set(KNOBS)
    if unknown:
        raise UsageError(f"unknown polish parameter(s): {', '.join(sorted(unknown))}; "
                         f"known: {', '.join(KNOBS)}")
    out = {**KNOBS, **params}
    ok = (all(isinstance(out[k], int) and not isinstance(out[k], bool) and out[k] >= 1
              for k in ("width", "stride", "tries"))
          and all(isinstance(out[k], int) and not isinstance(out[k], bool) and out[k] >= 0
                  for k in ("layers", "margin", "depth"))
          and isinstance(out["window_time"], int | float) and out["window_time"] > 0
          and isinstance(out["sooner"], int) and not isinstance(out["sooner"], bool)
          and out["sooner"] in (0, 1, 2)
          and all(isinstance(out[k], bool) for k in ("certify", "periodic", "whole")))
    if not ok:
        raise UsageError("polish needs integers width, stride, tries >= 1 and layers, "
                         "margin, depth >= 0, a number window_time > 0, booleans certify, "
                         "periodic and whole, and sooner 0, 1 or 2; "
                         f"got {out}")
    return out


class _Search:
    """The incumbent and the moves that change it; every candidate is checked whole."""

    def __init__(self, instance: Instance, pairs: list[list[Pair]], plan: Plan,
                 timing: Timing, periodic: bool = False) -> None:
        self.instance, self.pairs, self.timing = instance, pairs, timing
        self.inc = _incumbent(instance, pairs, plan, timing)
        if self.inc.schedule.peak_sram_bytes > instance.chip.sram_bytes:
            raise UsageError("polish: the warm-start plan breaks rule R5 (SRAM)")
        self.improved = self.twins_applied = self.held = self.advanced = 0
        self.layers_copied = 0
        self.whole_solved = False  # the plan came from the whole instance solved (`_solve_whole`)
        self.refused_copied = 0  # refused windows whose layers, copied, gained
        # the twin layer classes, for copies (`periodic`; the plan is in the instance's order)
        self.classes = twin_classes(instance) if periodic else []
        # CP-SAT's bound once a window was the whole instance, or the fluid MIP's with loads
        # run whole (`_loads_run_whole`)
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
        self.inc = _incumbent(self.instance, self.pairs, spliced[0], self.timing)
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
        self.inc = _incumbent(self.instance, self.pairs, plan, self.timing)
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


def solve(instance: Instance, options: SolveOptions) -> Plan:
    started = time.perf_counter()
    knobs = _knobs(dict(options.params))
    if options.warm_plan is None:
        raise UsageError("polish needs a plan to start from: give --warm-start METHOD")
    if options.time_limit_s is not None and time.perf_counter() - started >= options.time_limit_s:
        return _unpolished(instance, options, knobs, started)  # its warm start used the limit
    timing = options.timing
    pairs = feasible_pairs(instance, timing)
    n = len(pairs)
    search = _Search(instance, pairs, options.warm_plan, timing, knobs["periodic"])
    start_makespan = search.inc.schedule.makespan_ns
    deadline = None if options.time_limit_s is None else started + options.time_limit_s
    layers, window_time, width = knobs["layers"], float(knobs["window_time"]), knobs["width"]
    layered = any(op.layer is not None for op in instance.ops)  # windows become whole layers
    passes = windows_solved = dry = 0
    stopped = "interrupted"
    say(f"polish: start {start_makespan:,} ns, windows of "
        f"{f'{layers} layer(s)' if layers else f'up to {min(width, n)} ops'}",
        enabled=options.progress)

    def left() -> float | None:
        return None if deadline is None else deadline - time.perf_counter()

    with Interrupt() as interrupt:
        floor = options.floor_ns if options.floor_ns is not None else _floor(
            instance, timing, deadline, milp=options.work_limit is None
            and not _whole_then_loads(instance, options, knobs["whole"]))

        def meets_floor() -> bool:  # then the plan is optimal: no window can gain
            bounds = [b for b in (floor, search.bound) if b is not None]
            return bool(bounds) and search.inc.schedule.makespan_ns <= max(bounds)

        # the move the windows miss, first, in at most HOLDS_SHARE of the time limit
        until = None if deadline is None else started + HOLDS_SHARE * options.time_limit_s
        held, count = hold_executes(instance, search.inc.plan, until, lambda: interrupt.seen)
        if count and search.adopt(held):
            search.held = count
            say(f"  executes held back: {count}, {search.inc.schedule.makespan_ns:,} ns",
                enabled=options.progress)

        fruitless: Plan | None = None  # the plan a finished sweep last found nothing on

        def advance() -> bool:  # in at most ADVANCE_SHARE of the time limit, each time
            nonlocal fruitless
            if fruitless is search.inc.plan:
                return False  # the sweep would repeat itself move for move
            until = None if deadline is None else min(
                deadline, time.perf_counter() + ADVANCE_SHARE * options.time_limit_s)
            sooner, count = advance_loads(instance, search.inc.plan, until,
                                          lambda: interrupt.seen)
            if not (count and search.adopt(sooner)):
                finished = not interrupt.seen and (until is None or time.perf_counter() < until)
                fruitless = search.inc.plan if finished else None
                return False
            search.advanced += count
            say(f"  loads issued sooner: {count}, {search.inc.schedule.makespan_ns:,} ns",
                enabled=options.progress)
            return True

        if knobs["sooner"] and not meets_floor():
            advance()
        if knobs["whole"] and n <= WHOLE_MAX_OPS and not meets_floor() and not interrupt.seen:
            _solve_whole(search, options, floor, deadline, window_time)
        while not interrupt.seen:
            if meets_floor():
                stopped = "meets the bound"
                break
            straddle = passes % 2 == 1
            passes += 1
            gained = False
            schedule = search.inc.schedule
            order = ranked(pairs, schedule, windows(instance, layers, min(width, n),
                                                    knobs["stride"], straddle))
            whole = len(order) == 1
            tried: dict[tuple, int] = {}
            for room, w in track(order, f"polish pass {passes}", unit="window",
                                 enabled=options.progress):
                if meets_floor():
                    break  # the pass ends here, the search at the top of the loop
                rest = left()
                if interrupt.seen or (rest is not None and rest <= LIMIT_MARGIN_S):
                    break
                if room <= 0 and not whole:
                    continue
                sig = signature(pairs, w.first, w.stop)
                if tried.get(sig, 0) >= knobs["tries"]:
                    continue
                tried[sig] = tried.get(sig, 0) + 1
                own = None if options.work_limit is not None else window_time
                limit = own if rest is None else rest if own is None else min(own, rest)
                windows_solved += 1
                twins = search.twins_applied
                reach = (knobs["margin"], knobs["depth"])
                if _solve_window(search, w, reach, limit, options, interrupt, left):
                    gained = True
                    if knobs["periodic"] and not meets_floor():
                        _copy_layers(search, options, deadline, interrupt)
                    if search.twins_applied > twins:
                        tried[sig] = knobs["tries"]  # its twins got it
                    say(f"  pass {passes} ops {w.first}-{w.stop - 1}: "
                        f"{search.inc.schedule.makespan_ns:,} ns", enabled=options.progress)
            rest = left()
            if interrupt.seen or (rest is not None and rest <= LIMIT_MARGIN_S):
                stopped = "interrupted" if interrupt.seen else "time limit"
                break
            if knobs["sooner"] == 2 and not gained and not whole and not meets_floor():
                gained = advance()  # the windows moved loads: some may go sooner now
            dry = 0 if gained else dry + 1
            if whole and not gained:
                stopped = "whole instance"  # the one window was the whole problem
                break
            if dry >= 2:
                if deadline is None:
                    stopped = "local optimum"  # of this neighbourhood
                    break
                layers, width, dry = layers + 1, 2 * width, 0
                window_time = max(2 * window_time, LAYER_WINDOW_S * layers if layered else 0)
                say(f"polish: windows grow to {layers} layer(s) (or {width} ops), "
                    f"{window_time:g} s each",
                    enabled=options.progress)
    inc = search.inc
    makespan = inc.schedule.makespan_ns
    release = binding_releases(inc.plan.program, chosen_load_ns(instance, inc.plan.choice),
                               inc.plan.release_ns, inc.schedule)
    lp = None
    if knobs["certify"] and not interrupt.seen:
        say("polish: LP relaxation bound...", enabled=options.progress)
        try:
            lp = lp_bound(instance, None if deadline is None
                          else max(0.05, deadline - time.perf_counter()))
        except TooLarge:  # the linear-time bounds stand alone
            lp = None
    # the linear-time bounds begun before the deadline (seconds each at 20,000 ops)
    cheap = cheap_bound_by(instance, timing, Deadline.after(options.time_limit_s, started))
    lower = max(claimed_bound(instance, lp, makespan), cheap or 0, search.bound or 0,
                floor or 0)
    if lower > makespan:
        raise AssertionError(f"a lower bound {lower} exceeds the plan's makespan {makespan}")
    params = {"exec_order": "instance", **knobs, "passes": passes,
              "windows_solved": windows_solved, "windows_improved": search.improved,
              "twins_applied": search.twins_applied, "executes_held": search.held,
              "loads_advanced": search.advanced,
              "layers_copied": search.layers_copied, "refused_copied": search.refused_copied,
              "whole_instance_bound_ns": search.bound, "whole_solved": search.whole_solved,
              "fluid_contiguous_ns": search.contiguous, "fluid_mip_plan": search.replayed,
              "fluid_whole_ns_ns": search.whole_ns, "annealed_ns": search.annealed,
              **({"given_floor_ns": floor} if options.floor_ns is not None
                 else {"fluid_bound_ns": floor}),
              "final_layers": layers,
              "stopped": stopped, "start_makespan_ns": start_makespan,
              "warm_start": options.warm_start,
              "model_timing": timing, **({"interrupted": True} if interrupt.seen else {})}
    return make_plan(instance, inc.plan.choice, inc.plan.program, method="polish",
                     started=started, timing=timing,
                     status="optimal" if lower == makespan else "feasible",
                     lower_bound_ns=lower, params=params, release_ns=release)


def _floor(instance: Instance, timing: Timing, deadline: float | None,
           milp: bool) -> int | None:
    """The fluid floor (`fluid_floor`) on instances up to FLUID_MAX_OPS ops; None above."""
    if len(instance.ops) > FLUID_MAX_OPS:
        return None
    return fluid_floor(instance, timing, lambda: UNLIMITED_FLOOR_S if deadline is None
                       else deadline - time.perf_counter(), milp=milp)


def _whole_then_loads(instance: Instance, options: SolveOptions, whole: bool) -> bool:
    """Whether, under 5b, the instance is solved whole and the fluid MIP with loads run whole
    follows an unproven solve: then the floor is the fluid LP alone, as in `cpsat`, for the
    same reason (`cpsat._fluid`): that MIP claims what the plain one would, and the plain
    one before the solve costs its probes time and a floor hard to refute."""
    return (options.timing == "shared-noc" and whole
            and len(instance.ops) <= WHOLE_MAX_OPS and fits_loads_run_whole(instance)
            and wants_loads_run_whole(options))


def _solve_whole(search: _Search, options: SolveOptions, floor: int | None,
                 deadline: float | None, window_time: float) -> None:
    """A small instance is one window: solved whole by `cpsat` (its probes up from the floor,
    hinted with the incumbent) in WHOLE_SHARE of the time left (without a time limit, a
    window's own: `window_time`, or the work limit), its plan taken if faster and its bound
    kept (the model is exact for the instance's order). On one-layer slices it
    proves in seconds what the windows do not reach in the whole limit (BENCHMARKS.md,
    "Small instances solved whole")."""
    if deadline is not None:
        limit: float | None = WHOLE_SHARE * (deadline - time.perf_counter())
    else:
        limit = None if options.work_limit is not None else window_time
    whole = solve_cpsat(search.instance, replace(  # a work limit is per window: all of it
        options, time_limit_s=limit, exec_order="instance",
        warm_plan=search.inc.plan, floor_ns=floor, params={},
        loads_run_whole=False, progress=False))  # polish runs that MIP itself, after
    assert whole.claims is not None
    if search.adopt(whole):
        search.whole_solved = True
    if whole.claims.lower_bound_ns is not None:
        search.bound = max(search.bound or 0, whole.claims.lower_bound_ns)
    say(f"  solved whole: {whole.claims.makespan_ns:,} ns ({whole.claims.status}, bound "
        f"{search.bound or 0:,} ns)", enabled=options.progress)
    if whole.claims.status != "optimal":
        _loads_run_whole(search, options, deadline, window_time)
        _anneal(search, options, deadline)


def _anneal(search: _Search, options: SolveOptions, deadline: float | None) -> None:
    """After an unproven whole solve and that MIP, as `cpsat` does before its search runs
    again: the incumbent annealed (`formulations.anneal`) in `cpsat`'s ANNEAL_SHARE of the
    time left, taken if faster, the windows then starting from it. Only with a time limit and
    no work limit (annealing counts seconds)."""
    if deadline is None or options.work_limit is not None or stop_requested():
        return
    plan = annealed_plan(search.inc.plan, search.timing, search.bound or 0,
                         ANNEAL_SHARE * (deadline - time.perf_counter()), options.seed,
                         "polish", time.perf_counter())
    if plan is not None and search.adopt(plan):
        search.annealed = search.inc.schedule.makespan_ns
        say(f"  annealed: {search.annealed:,} ns", enabled=options.progress)


def _loads_run_whole(search: _Search, options: SolveOptions, deadline: float | None,
                     window_time: float) -> None:
    """After an unproven whole solve, as `cpsat` does: the fluid MIP with loads run whole
    (`fluid_floor.loads_run_whole`, on a decoder layer or less) in LOADS_SHARE of the time
    left (without a time limit, in a window's `window_time`), its bound kept and the plan read
    from its solution taken if faster; as `wants_loads_run_whole` says (BENCHMARKS.md, "Polish reads
    the fluid MIP too")."""
    if not wants_loads_run_whole(options):
        return
    limit = window_time if deadline is None else LOADS_SHARE * (deadline - time.perf_counter())
    found = loads_run_whole(search.instance, search.timing, limit, "polish",
                            time.perf_counter())
    if found is None:
        return
    search.contiguous = found.bound_ns
    if found.bound_ns is not None:
        search.bound = max(search.bound or 0, found.bound_ns)
    if found.plan is not None and search.adopt(found.plan):
        search.replayed = True
    say(f"  loads run whole: bound {found.bound_ns or 0:,} ns, plan "
        f"{search.inc.schedule.makespan_ns:,} ns", enabled=options.progress)
    _whole_ns(search, options, deadline, window_time, found)


def _whole_ns(search: _Search, options: SolveOptions, deadline: float | None,
              window_time: float, found: LoadsRunWhole) -> None:
    """As `cpsat` does after that MIP: the MIP with intervals of whole ns where the plan lies
    close enough (`whole_ns_after`, in the time left; without a time limit, of `window_time`),
    its bound kept."""
    left = window_time if deadline is None else deadline - time.perf_counter()
    whole = whole_ns_after(search.instance, search.timing, search.inc.schedule.makespan_ns,
                           found, left)
    if whole is None or whole.bound_ns is None:
        return
    search.whole_ns = whole.bound_ns
    search.bound = max(search.bound or 0, whole.bound_ns)
    say(f"  intervals of whole ns: bound {whole.bound_ns:,} ns", enabled=options.progress)


def _copy_layers(search: _Search, options: SolveOptions, deadline: float | None,
                 interrupt: Interrupt) -> None:
    """Each twin class's best layer copied onto all its twins (`lns_periodic`), in at most
    PERIODIC_SHARE of the time limit: after a window gains, its layer may now be the best."""
    until = deadline
    if deadline is not None and options.time_limit_s is not None:
        until = min(deadline, time.perf_counter() + PERIODIC_SHARE * options.time_limit_s)
    plan, copied = copy_twins(search.instance, search.inc.plan, search.inc.schedule, until,
                              lambda: interrupt.seen)
    if copied and search.adopt(plan):
        search.layers_copied += copied
        say(f"  layers copied to their twins: {copied}, {search.inc.schedule.makespan_ns:,} ns",
            enabled=options.progress)


def _unpolished(instance: Instance, options: SolveOptions, knobs: dict, started: float) -> Plan:
    """The warm start as it is, when no time is left to polish it (nor to build the window
    models' pair tables, which take seconds at 20,000 ops). No bound: even the Ideal takes
    seconds at that size and the time is up (a heuristic cut by its limit leaves its bounds
    out too)."""
    warm = options.warm_plan
    assert warm is not None
    timed = evaluate(instance, warm.choice, warm.program, warm.release_ns, timing=options.timing)
    if timed.peak_sram_bytes > instance.chip.sram_bytes:
        raise UsageError("polish: the warm-start plan breaks rule R5 (SRAM)")
    params = {"exec_order": "instance", **knobs, "passes": 0, "windows_solved": 0,
              "windows_improved": 0, "start_makespan_ns": timed.makespan_ns,
              "warm_start": options.warm_start, "model_timing": options.timing,
              "stopped": "interrupted" if stop_requested() else "time limit"}
    return make_plan(instance, warm.choice, warm.program, method="polish", started=started,
                     timing=options.timing,
                     status="feasible", lower_bound_ns=None, params=params,
                     release_ns=warm.release_ns)


def _solve_window(search: _Search, w: Window, reach: tuple[int, int], limit: float | None,
                  options: SolveOptions, interrupt: Interrupt,
                  left: Callable[[], float | None]) -> bool:
    """Re-solve one window; if the whole plan gains, apply the same move to its twins."""
    instance = search.instance
    margin, depth = reach
    for deeper in (depth, depth + 1):  # a proposal the whole plan refuses: look further on
        r = region_of(instance, search.inc, w.first, w.stop, margin, deeper)
        found = _propose(search, r, limit, options, interrupt)
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
class _Proposal:
    """A region model's solution that beats the incumbent there."""

    choice: list[Choice]
    program: tuple[Instr, ...]
    release: dict[Instr, int]
    shift: int  # the region's estimated gain (<= 0), for the releases after it
    model_loads: dict[int, int]  # op -> the model's start of its load, for loads that take time


def _propose(search: _Search, r: Region, limit: float | None, options: SolveOptions,
             interrupt: Interrupt) -> _Proposal | None:
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
    return _Proposal(times.choice, program, release, shift, loads)
