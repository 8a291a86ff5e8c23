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
the timing (`elk_opt.bounds.cheap`), up to `polish_whole.FLUID_MAX_OPS` ops the fluid floor
(`formulations.fluid_floor`: the fluid LP, milliseconds there, and up to 100 ops the fluid MIP
in a fifth of the time, unless the MIP with loads run whole follows the whole solve under 5b:
`polish_whole.whole_then_loads`) or instead a floor the caller gives
(`SolveOptions.floor_ns`, at any size), with `certify` the LP relaxation's, and CP-SAT's bound
once a window covered the whole instance (then the region model is the exact model); all for
the instance's execution order. The floor comes first, and the search stops once its plan
meets it or a bound. An instance of at most WHOLE_MAX_OPS ops is first solved whole by `cpsat`
in half the time (`polish_whole.solve_whole`): on the small gap suite's 24 one-layer zoo
slices (20 s) that proves the 8 that `cpsat` proves, in 2-12 s, where the windows alone proved
2 and used the whole 20 s on the others, and polish's claimed gap went from a median 0.13%
(worst 0.81%) to 0.09% (worst 0.57%). When that solve proves nothing, the fluid MIP with loads
run whole follows (`polish_whole.take_loads_run_whole`), as in `cpsat`, for its bound and the
plan its solution replays to.

The search's state and its window moves are in `polish_search`, the whole solve and the floor
in `polish_whole`.
"""

from __future__ import annotations

import time

from elk_opt.bounds.cheap import cheap_bound_by
from elk_opt.deadline import Deadline
from elk_opt.errors import UsageError
from elk_opt.evaluate import evaluate
from elk_opt.interrupts import stop_requested
from elk_opt.problem import Instance, Plan
from elk_opt.progress import say, track
from elk_opt.solution import SolveOptions, make_plan
from formulations.common import chosen_load_ns, claimed_bound, feasible_pairs
from formulations.cpsat_run import Interrupt
from formulations.ilp import TooLarge, lp_bound
from formulations.lns_advance import advance_loads
from formulations.lns_holds import hold_executes
from formulations.lns_periodic import copy_twins
from formulations.lns_windows import ranked, signature, windows
from formulations.polish_search import LIMIT_MARGIN_S, Search, solve_window
from formulations.polish_whole import WHOLE_MAX_OPS, polish_floor, solve_whole, whole_then_loads
from formulations.replay import binding_releases

KNOBS = {"layers": 0, "width": 10, "stride": 12, "margin": 2, "depth": 0, "window_time": 10.0,
         "tries": 2, "certify": False, "periodic": True, "whole": True, "sooner": 2}
HOLDS_SHARE = 0.1  # of the time limit, at most, for holding executes back (lns_holds)
ADVANCE_SHARE = 0.1  # of the time limit, at most, for issuing loads sooner (lns_advance)
PERIODIC_SHARE = 0.1  # of the time limit, at most, per round of copying layers (lns_periodic)
LAYER_WINDOW_S = 60.0  # per layer of a window once the windows are whole layers


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
    search = Search(instance, pairs, options.warm_plan, timing, knobs["periodic"])
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
        floor = options.floor_ns if options.floor_ns is not None else polish_floor(
            instance, timing, deadline, milp=options.work_limit is None
            and not whole_then_loads(instance, options, knobs["whole"]))

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
            solve_whole(search, options, floor, deadline, window_time)
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
                if solve_window(search, w, reach, limit, options, interrupt, left):
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


def _copy_layers(search: Search, options: SolveOptions, deadline: float | None,
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
