"""Elk-Full: Elk-Dyn over many preload orders, keeping the best.

Candidate orders permute the load groups of the repeated layer (heuristics.orders) and apply
the same permutation to every identical layer. Each is scheduled with the inductive scheduler.
To keep a full model fast, every order is first scheduled on a slice of `screen_layers`
consecutive identical layers (the steady state that repeats through the model); the
`finalists` best, and always the identity order, are then scheduled on the whole model, where
the best makespan wins, and its loads are then issued sooner where that pays
(heuristics.advances; a load may pass others, since Elk-Full's preload order is free). The
identity order on the whole model gives Elk-Dyn's schedule on the way (before its loads may
pass each other), which gets Elk-Dyn's last pass and is kept if it ends up faster, so
Elk-Full is never worse than Elk-Dyn. The identity picks the ladder set and preload region
(heuristics.inductive_best.schedule_best); the other orders are scheduled under those only, which
keeps Elk-Full within a few times Elk-Dyn's time (trying every set and region for the
finalists too was 2.5-5x slower and changed one of six large cells, by 0.5%). Knobs
(SolveOptions.params): max_shift (2), screen_layers (4), finalists (4), max_orders (1000:
candidates beyond it, in enumeration order, are not tried).
The time limit (or a SIGINT under `elk-opt solve`) ends every phase, the best plan so far
returned with `stopped` in its params; cut before its first schedule, it returns Basic's.
"""

from __future__ import annotations

import dataclasses
import itertools
import time
from dataclasses import replace

from elk_opt.bounds.cheap import cheap_bound_by
from elk_opt.errors import UsageError
from elk_opt.problem import Instance, Plan
from elk_opt.progress import track
from elk_opt.solution import SolveOptions, make_plan
from heuristics import elk_dyn
from heuristics.free_order import best_over_orders
from heuristics.inductive_best import (
    LadderSet,
    Scheduled,
    issued_sooner,
    ladder_sets,
    preload_counts,
    preload_regions,
    schedule_best,
)
from heuristics.limits import basic_instead, deadline_of, fallback_for, stopped_params
from heuristics.orders import Template, find_template, full_order, layer_orders

DEFAULTS = {"max_shift": 2, "screen_layers": 4, "finalists": 4, "max_orders": 1000}


def _knobs(options: SolveOptions) -> dict[str, int]:
    knobs = dict(DEFAULTS)
    for key, value in options.params.items():
        if key not in DEFAULTS:
            raise UsageError(f"elk-full: unknown parameter {key!r}; known: {', '.join(DEFAULTS)}")
        if not isinstance(value, int) or value < (0 if key == "max_shift" else 1):
            raise UsageError(f"elk-full: parameter {key} must be a positive integer, got {value!r}")
        knobs[key] = value
    return knobs


def _same(ladder_set: LadderSet, found: Scheduled) -> bool:
    return (ladder_set.load_weight, ladder_set.port_priced) == (found.load_weight,
                                                                found.port_priced)


def _slice(instance: Instance, template: Template, layers: int) -> tuple[Instance, Template]:
    """The first run of `layers` consecutive identical layers, as an instance of its own."""
    starts = template.starts
    first = 0
    for k in range(len(starts)):
        if k - first + 1 > layers:
            break
        if k > first and starts[k] != starts[k - 1] + template.width:
            first = k
    count = min(layers, len(starts) - first)
    lo = starts[first]
    hi = lo + count * template.width
    ops = tuple(dataclasses.replace(op, inputs=tuple(j - lo for j in op.inputs if j >= lo))
                for op in instance.ops[lo:hi])
    sub = dataclasses.replace(instance, name=f"{instance.name}[{lo}:{hi}]", ops=ops)
    return sub, dataclasses.replace(template, starts=tuple(lo + k * template.width - lo
                                                          for k in range(count)))


def solve(instance: Instance, options: SolveOptions) -> Plan:
    """In the instance's order (the paper's problem, the default), or with `exec_order`
    "free" the best over candidate orders (heuristics.free_order)."""
    if options.free_order:
        return best_over_orders(instance, options, "elk-full", _in_order, screen=_elk_dyn)
    return _in_order(instance, options)


def _elk_dyn(instance: Instance, options: SolveOptions) -> Plan:
    """Elk-Dyn with its default knobs: a cheap screen of execution orders."""
    return elk_dyn.solve(instance, replace(options, params={}))


def _in_order(instance: Instance, options: SolveOptions) -> Plan:
    started = time.perf_counter()
    deadline = deadline_of(options, started)
    fallback = fallback_for(instance, options)
    knobs = _knobs(options)
    n = len(instance.ops)
    sets = ladder_sets(instance, options.timing, deadline=deadline)
    regions = preload_regions(instance, options.timing, deadline=deadline)
    found = schedule_best(instance, tuple(range(n)), sets, options.timing, reorder=True,
                          regions=regions, deadline=deadline)
    if found is None:  # the identity order never forces a pending preload: cut by the limit
        return basic_instead(instance, options, "elk-full", started, fallback)
    best: Scheduled = found
    best_layer: tuple[int, ...] | None = None
    of_op, classes = sets[0].ladders
    template = find_template(instance, of_op)
    tried = screened = 0
    if template is not None and not deadline.passed():
        layer_ladders = [classes[of_op[template.starts[0] + k]] for k in range(template.width)]
        candidates = list(itertools.islice(
            layer_orders(template, layer_ladders, instance.chip.sram_bytes, knobs["max_shift"]),
            1, knobs["max_orders"] + 1))
        sub, sub_template = _slice(instance, template, knobs["screen_layers"])
        # every order under the identity's ladder set and region; screening: one sweep of
        # held-back loads
        sub_sets = [s for s in ladder_sets(sub, options.timing) if _same(s, found)]
        final_sets = [s for s in sets if _same(s, found)]
        scored: list[tuple[int, int, tuple[int, ...]]] = []
        for k, layer in enumerate(track(candidates, "elk-full: orders screened", unit="order",
                                        enabled=options.progress)):
            if deadline.passed():
                break
            got = schedule_best(sub, full_order(len(sub.ops), sub_template, layer), sub_sets,
                                options.timing, reorder=True, sweeps=1, regions=(found.region,))
            screened += 1
            if got is not None:
                scored.append((got.makespan_ns, k, layer))
        for _m, _k, layer in sorted(scored)[:knobs["finalists"]]:
            if deadline.passed():
                break
            got = schedule_best(instance, full_order(n, template, layer), final_sets,
                                options.timing, reorder=True, regions=(found.region,),
                                deadline=deadline)
            tried += 1
            if got is not None and got.makespan_ns < best.makespan_ns:
                best, best_layer = got, layer
    best = issued_sooner(instance, best, options.timing, reorder=True, deadline=deadline)
    if found.kept_order is not None:  # Elk-Dyn's schedule: Elk-Full is never worse
        dyn = issued_sooner(instance, found.kept_order, options.timing, reorder=False,
                            deadline=deadline)
        if dyn.makespan_ns < best.makespan_ns:
            best, best_layer = dyn, None
    counts = preload_counts(best.program)
    return make_plan(instance, best.choice, best.program, method="elk-full",
                     started=started, timing=options.timing,
                     lower_bound_ns=cheap_bound_by(instance, options.timing, deadline),
                     params={"exec_order": "instance", **knobs,
                             **stopped_params(found.stopped or deadline.passed()),
                             "orders_screened": screened, "orders_scheduled": tried + 1,
                             "layer_preload_order": list(best_layer or ()) or "identity",
                             "load_weight": best.load_weight, "port_priced": best.port_priced,
                             "preload_region": best.region, "loads_held_back": best.held_back,
                             "loads_issued_sooner": best.advanced,
                             "max_preload_count": max(counts, default=0),
                             "mean_preload_count": round(sum(counts) / max(1, len(counts)), 3)})
