"""The plan phases of `certify` for instances CP-SAT does not solve whole: plans from slices.

A whole decoder model repeats one layer: Elk-Full and CP-SAT solve a slice of a few layers,
and their plans are tiled onto the whole instance (formulations.lns_tiling); one pair per op
class is chosen on the best slice (formulations.slice_pairs); and Elk-Full schedules again
at the best plan's pairs. Their order within a search: docs/search.md, "certify".
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import TYPE_CHECKING

from elk_opt.certification.found import (
    FULL,
    MARGIN_S,
    MIN_PHASE_S,
    Found,
    call,
    cpsat_takes_whole,
    graced,
    offer_plan,
    record,
    say_found,
    starting,
)
from elk_opt.certification.worker import Task, TimedOut, Worker
from elk_opt.evaluate import evaluate_plan
from elk_opt.problem import Instance, Plan
from elk_opt.solution import SolveOptions, make_plan

if TYPE_CHECKING:  # the solver modules load only when a phase needs them
    from formulations.lns_tiling import Layers

# layers in the slices Elk-Full solves for plans to tile (each rounded to whole periods)
SLICE_SIZES = (3, 4, 5, 6, 8)
SLICE_SHARE = 0.15  # of what is left, for Elk-Full and CP-SAT on the slice (see BENCHMARKS.md)
PAIRS_SHARE = 0.1  # of what is left then, for one pair per op class on the best slice
PAIRS = "slice, pairs per class"  # the phase that runs that descent
PAIRS_AGAIN_LAYERS = 4  # the slice the descent runs on again, from a later best plan
HELD_PAIRS = "elk-full, held pairs"  # the phase that runs Elk-Full at the best plan's pairs
HELD_PAIRS_SHARE = 0.1  # of what is left, for it (7-38 s on the grid's whole models)


def slice_phase(instance: Instance, found: Found, options: SolveOptions, worker: Worker,
                progress: bool) -> bool:
    """Elk-Full on slices of the first SLICE_SIZES layers (and the ops after the last), then
    CP-SAT from the Elk-Full plan that tiled best, each plan tiled onto the whole instance
    (formulations.lns_tiling); a slice's best plan need not tile best, since it is also best
    at the slice's own end. Then one pair per op class on that slice (`_pairs_per_class`).
    Once, on instances CP-SAT does not take whole. Whether a tiled plan is the best so far."""
    if found.sliced or cpsat_takes_whole(instance) or found.free_order:
        return False
    from formulations.lns_tiling import slice_instance, slice_layers, structure

    found.sliced = True
    layers = structure(instance)
    if layers is None:
        return False
    ends = time.perf_counter() + SLICE_SHARE * found.left() - MARGIN_S
    kept = False
    best: tuple[int, Instance, Plan] | None = None  # tiled makespan, slice, its plan
    for count in sorted({slice_layers(layers, k) for k in SLICE_SIZES}):
        if count >= len(layers.runs):
            continue
        sliced = slice_instance(instance, layers, count)
        got = _tile_slice(instance, found, worker, layers, sliced, "elk-full",
                          replace(options, time_limit_s=ends - time.perf_counter()), ends,
                          progress)
        if got is None:
            break
        tiled_ns, plan, better = got
        kept = kept or better
        if tiled_ns is not None and (best is None or tiled_ns < best[0]):
            best = (tiled_ns, sliced, plan)
    if best is not None:
        _, sliced, warm = best
        # with too little time left `_tile_slice` skips it and marks the search cut
        got = _tile_slice(instance, found, worker, layers, sliced, "cpsat",
                          replace(options, time_limit_s=ends - time.perf_counter(),
                                  warm_start="elk-full", warm_plan=warm), ends, progress)
        kept = kept or (got is not None and got[2])
        kept = _pairs_per_class(instance, found, options, worker, layers, sliced,
                                progress) or kept
    return kept


def _pairs_per_class(instance: Instance, found: Found, options: SolveOptions, worker: Worker,
                     layers: Layers, sliced: Instance, progress: bool) -> bool:
    """One pair per op class on `sliced`, tiled (formulations.slice_pairs), from the pairs of
    the best plan so far, within PAIRS_SHARE of what is left; whether its plan is the best
    so far."""
    from formulations.lns_tiling import slice_count, tiled_plan

    limit = PAIRS_SHARE * found.left() - MARGIN_S
    if limit < MIN_PHASE_S:
        found.cut = True
        return False
    started = time.perf_counter()
    count = slice_count(instance, layers, sliced)
    found.started_from[PAIRS] = found.best
    starting(found, f"one pair per op class on a slice of {count} layers, up to {limit:.0f} s",
             progress)
    task = Task("slice pairs", instance, {"layers": layers, "sliced": sliced,
                                          "options": options, "deadline": started + limit,
                                          "start": found.best})
    try:
        descent = call(found, worker, task, graced(found, started + limit))
    except TimedOut:
        record(found, PAIRS, started, "ended at the deadline: it overran its limit")
        found.cut = True
        return False
    if descent.best is None:
        record(found, PAIRS, started, "tiled into none that obeys R5")
        return False
    sliced_plan, tiled, schedule = descent.best
    better = offer_plan(found, tiled_plan(instance, tiled, sliced_plan, count, started,
                                          classes_given_a_pair=len(descent.forced)))
    record(found, PAIRS, started,
           f"{count} layers: {len(descent.forced)} classes given one pair in "
           f"{descent.trials} trials, {descent.sweeps} sweeps"
           + ("" if descent.complete else " (cut short)")
           + f", tiled {schedule.makespan_ns:,} ns" + (" (best so far)" if better else ""))
    say_found(found, "slice (pairs per class), tiled", progress)
    return better


def pairs_from_best(instance: Instance, found: Found, options: SolveOptions, worker: Worker,
                    progress: bool) -> bool:
    """The pairs descent once more, from the best plan's pairs, once per search after the
    slice phase ran (here or in a search this one continues) and the best plan moved past
    the one the descent last started from: polish changes pairs in a few windows, and from
    its plan's pairs the descent can find classes it did not before (Llama2-70B b64 KV4096,
    analytic: BENCHMARKS.md, "The analytic rows above 1%"). On a slice of
    PAIRS_AGAIN_LAYERS layers. Whether its plan is the best so far."""
    best = found.best
    if (not found.sliced or found.pairs_again or best is None or found.free_order
            or cpsat_takes_whole(instance) or found.started_from.get(PAIRS) is best
            or (best.claims is not None and "classes_given_a_pair" in best.claims.params)):
        return False
    from formulations.lns_tiling import slice_instance, slice_layers, structure

    layers = structure(instance)
    if layers is None:
        return False
    found.pairs_again = True
    sliced = slice_instance(instance, layers, slice_layers(layers, PAIRS_AGAIN_LAYERS))
    return _pairs_per_class(instance, found, options, worker, layers, sliced, progress)


def _tile_slice(instance: Instance, found: Found, worker: Worker, layers: Layers, sliced: Instance,
                method: str, options: SolveOptions, ends: float, progress: bool
                ) -> tuple[int | None, Plan, bool] | None:
    """Solve `sliced` with `method` (its limit ends at `ends`; its process is ended a grace
    past that), tile its plan onto `instance` and offer that: (the tiled makespan, None if no
    tiling obeys R5; the slice's plan; whether the tiled plan is the best so far), or None
    when there was no time for it."""
    from formulations.lns_tiling import best_tiling, slice_count, tiled_plan

    assert options.time_limit_s is not None
    if options.time_limit_s < MIN_PHASE_S:
        found.cut = True
        return None
    count = slice_count(instance, layers, sliced)
    started = time.perf_counter()
    try:
        starting(found, f"{method} on a slice of {count} layers ({len(sliced.ops)} ops), up "
                         f"to {options.time_limit_s:.0f} s", progress)
        plan = call(found, worker, Task("solve", sliced, {"method": method,
                                                          "options": options}),
                    graced(found, ends))
    except TimedOut:
        record(found, f"slice, {method}", started,
               "ended at the deadline: it overran its limit")
        found.cut = True
        return None
    assert plan.claims is not None
    tiled = best_tiling(instance, layers, plan, evaluate_plan(plan))
    better = tiled is not None and offer_plan(
        found, tiled_plan(instance, tiled[0], plan, count, started))
    record(found, f"slice, {method}", started,
           f"{count} layers: {plan.claims.makespan_ns:,} ns ({plan.claims.status}), "
           + (f"tiled {tiled[1].makespan_ns:,} ns" if tiled else "tiled into none that obeys R5")
           + (" (best so far)" if better else ""))
    say_found(found, f"slice ({method}, {count} layers), tiled", progress)
    return (tiled[1].makespan_ns if tiled else None), plan, better


def held_to_pairs(instance: Instance, plan: Plan) -> Instance:
    """`instance` with every op's layouts cut to the pair `plan` chose for it."""
    ops = []
    for op, c in zip(instance.ops, plan.choice, strict=True):
        ops.append(replace(
            op, exec_plans=tuple(e for e in op.exec_plans if e.id == c.exec),
            preload_plans=tuple(q for q in op.preload_plans if q.id == c.preload),
            warmup=tuple(w for w in op.warmup if (w.preload, w.exec) == (c.preload, c.exec))))
    return replace(instance, ops=tuple(ops))


def elk_full_at_best_pairs(instance: Instance, found: Found, options: SolveOptions,
                           worker: Worker, progress: bool) -> bool:
    """Elk-Full with every op held to the best plan's pair, within HELD_PAIRS_SHARE of what
    is left, once per best plan that no Elk-Full made, on instances CP-SAT does not take
    whole (it searches the pairs and the schedule together): the pairs of a tiled slice or
    of polish, scheduled again by Elk-Full's preload counts and order. Whether its plan is
    the best so far."""
    best = found.best
    if (best is None or best.claims is None or best.claims.method in FULL
            or cpsat_takes_whole(instance)
            or found.started_from.get(HELD_PAIRS) is best):
        return False
    limit = HELD_PAIRS_SHARE * found.left() - MARGIN_S
    if limit < MIN_PHASE_S:
        found.cut = True
        return False
    found.started_from[HELD_PAIRS] = best
    started = time.perf_counter()
    starting(found, f"elk-full held to {best.claims.method}'s pairs, up to {limit:.0f} s",
             progress)
    try:
        held = call(found, worker, Task("solve", held_to_pairs(instance, best), {
            "method": "elk-full", "options": replace(options, time_limit_s=limit)}),
            graced(found, started + limit))
    except TimedOut:
        record(found, HELD_PAIRS, started, "ended at the deadline: it overran its limit")
        found.cut = True
        return False
    assert held.claims is not None
    better = offer_plan(found, make_plan(
        instance, held.choice, held.program, release_ns=held.release_ns, method="elk-full",
        started=started, timing=found.timing,
        params={**held.claims.params, "pairs": f"held to {best.claims.method}'s plan's"}))
    record(found, HELD_PAIRS, started, f"{held.claims.makespan_ns:,} ns"
            + (" (best so far)" if better else ""))
    say_found(found, HELD_PAIRS, progress)
    return better
