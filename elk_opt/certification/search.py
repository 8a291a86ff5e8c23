"""The budgeted search behind `elk-opt certify`: the best plan and the best lower bound that
one wall-clock budget buys.

The phases, in order, with their shares of the time: docs/search.md, "certify". The choices
behind them, each measured (BENCHMARKS.md):
- a certificate exists from the first second: the linear-time bounds and Basic run first, in
  this process; every other phase runs in a worker process (elk_opt.certification.worker)
  and is stopped at its deadline, a phase that overruns its own limit ended one second past
  the budget;
- on instances CP-SAT solves whole, the layer windows and the fluid MIP with loads run whole
  wait for the second bound round: CP-SAT's own search bounds the same model tighter (the
  calibration layer: 26 s of windows to 192,562 ns where CP-SAT proves 193,466 in 8), and on
  up to CPSAT_CONTIGUOUS_MAX_OPS ops CP-SAT runs that MIP itself after a search that proved
  nothing ("certify leaves the MIP to CP-SAT");
- a later bound round runs only for what an earlier one deferred, or with more time than any
  before it had: with less it raised nothing on the grid's certificates ("Later bound
  rounds");
- once the best plan lies within a ns per interval of a finished fluid-contiguous, a round
  solves fluid-whole-ns, and polish waits for it (`_whole_ns_due`; "Intervals of whole ns in
  certify");
- each solver starts only from a plan it has not started from before: from the same start
  with less time it would find nothing new;
- a given plan that executes in another order than the instance's gets only bounds that hold
  for every order: CP-SAT then solves over every order, and polish (instance order only) sits
  out.
The state is kept in a `Found` that the caller holds, so an interrupt leaves the best plan
and bounds so far.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from elk_opt.bounds.run_all import BUDGET_SPENT, lower_bounds, whole_ns_cap
from elk_opt.bounds.whole_ns import within_reach
from elk_opt.certification.certificate import (
    bound_entry,
    covers,
    cpsat_contiguous_entry,
    cpsat_whole_ns_entry,
    exec_order,
    solver_bound_entry,
)
from elk_opt.certification.worker import Task, TimedOut, Worker
from elk_opt.errors import UsageError
from elk_opt.evaluate import evaluate_plan
from elk_opt.interrupts import Terminated
from elk_opt.io import plan_from_dict
from elk_opt.methods import solve
from elk_opt.problem import Instance, Plan, Timing
from elk_opt.progress import say
from elk_opt.solution import SolveOptions, make_plan

if TYPE_CHECKING:  # the solver modules load only when a phase needs them
    from formulations.lns_tiling import Layers

HEURISTICS = ("static", "lhs", "elk-dyn", "elk-full", "elk-full-lp")  # after Basic, cheapest
FULL = ("elk-full", "elk-full-lp")  # the heuristics ELK_FULL_SHARE is kept for
SLICES = "slices"  # the slice phase, as `search.done` names it
HEURISTIC_SHARE = 0.5  # of the budget, at most, for the heuristics
ELK_FULL_SHARE = 0.3  # of the budget, kept for the FULL heuristics within the heuristics' share
HEURISTIC_GRACE = 0.05  # of the budget, past its limit before a heuristic's process is ended
BOUND_SHARE = 0.4  # of what is left, for a round's solver-backed bounds
# the first round's: the fluid LP it starts with is the bound that matters on whole models
# (gaps of a few % against 15% for the linear-time ones), and under load it needs about
# 12 s on Llama2-70B; polish, which the round leaves less, gains hundredths of a % there
FIRST_BOUND_SHARE = 0.6
CPSAT_SHARE = 0.5  # of what is left after the bounds, for CP-SAT's own limit
POLISH_SHARE = 0.8  # of what is left then, for polish's own limit (it may overrun: see below)
CPSAT_MAX_OPS = 200  # CP-SAT's model is quadratic in the ops: above this, polish alone
# layers in the slices Elk-Full solves for plans to tile (each rounded to whole periods)
SLICE_SIZES = (3, 4, 5, 6, 8)
SLICE_SHARE = 0.15  # of what is left, for Elk-Full and CP-SAT on the slice (see BENCHMARKS.md)
PAIRS_SHARE = 0.1  # of what is left then, for one pair per op class on the best slice
PAIRS = "slice, pairs per class"  # the phase that runs that descent
PAIRS_AGAIN_LAYERS = 4  # the slice the descent runs on again, from a later best plan
HELD_PAIRS = "elk-full, held pairs"  # the phase that runs Elk-Full at the best plan's pairs
HELD_PAIRS_SHARE = 0.1  # of what is left, for it (7-38 s on the grid's whole models)
# the bounds a finished solve gives again unchanged, and the limit of run_all.lower_bounds
# that leaves each out of a later round (not the fluid LP's: fluid-layers runs under it)
SOLVED_ONCE = {"fluid-sram": "fluid_sram_max_ops", "fluid-milp": "fluid_milp_max_ops",
               "fluid-contiguous": "fluid_contiguous_max_ops", "lp": "lp_max_ops",
               "fluid-split": "fluid_split_max_ops"}
MIN_PHASE_S = 0.5  # a phase with less time than this is not started
# raised when the solver-backed bounds change (2: the layer windows' fluid MIP; 3: the fluid
# LP with SRAM's rounded rows at up to 24 divisors; 4: that round's finished bounds replace
# their namesakes even when lower, where 3 kept the higher, an earlier revision's value that
# `--check` could not reproduce; 5: `carry` and `fluid-split` added): a
# certificate whose bounds an earlier revision found gets a bound round whatever its budget
BOUNDS_REVISION = 5
SOLVED_SINCE = 4  # the revision since which the SOLVED_ONCE bounds come out the same
# up to here CP-SAT runs the MIP with loads run whole itself (module docstring, phase 3): the
# zoo's decoder layers (19-27 ops), whose MIP takes 2-23 s; not the calibration layer (48 ops),
# where CP-SAT's phase took 10.2-10.6 s instead of 5.7-6.0 with half its time kept back for it
CPSAT_CONTIGUOUS_MAX_OPS = 32
GRACE_S = 1.0  # past the budget before a solver phase's process is ended
MARGIN_S = 0.3  # kept back from a solver's limit for handing its result over


@dataclass
class Found:
    """What the search has so far (mutable: it grows as phases finish)."""

    timing: Timing
    time_limit_s: float
    threads: int
    given: Plan | None = None  # the plan being certified, if one was given
    given_ns: int | None = None  # its analytic makespan under `timing`
    # the fastest plan found that executes in the instance's order (in any, for a given plan
    # in another order: `free_order`)
    best: Plan | None = None
    bounds: dict[str, dict[str, Any]] = field(default_factory=dict)  # by name, best kept
    phases: list[dict[str, Any]] = field(default_factory=list)
    started_from: dict[str, Plan] = field(default_factory=dict)  # each solver's last start
    started: float = field(default_factory=time.perf_counter)
    stopped: str = "running"
    cut: bool = False  # whether a phase was cut short or not started for lack of time
    sliced: bool = False  # whether the slice phase ran (it runs once)
    deferred: bool = False  # the layer windows and the contiguous MIP wait for a later round
    pairs_again: bool = False  # whether the descent ran again from a later best plan (once)
    continued: str | None = None  # the certificate this search continues
    # the heuristics that gave a plan, here or in the searches this one continues
    heuristics_done: set[str] = field(default_factory=set)
    # the last bound round that finished, here or in the searches this one continues: a
    # continued search goes on with the next round, not the first again
    bound_rounds: int = 0
    # the largest budget a bound round had, here or in the searches this one continues: a
    # later round with no more time cannot raise what ran out of time then (`_bound_round`)
    bound_budget: float = 0.0
    bounds_revision: int = BOUNDS_REVISION  # of the code that found the bounds held

    @property
    def plan(self) -> Plan:
        """The plan to certify: the given one, else the best found."""
        plan = self.given if self.given is not None else self.best
        assert plan is not None
        return plan

    @property
    def free_order(self) -> bool:
        """The given plan executes in another order than the instance's: bounds must hold for
        every order, and CP-SAT solves over every order too."""
        return self.given is not None and exec_order(self.given) == "free"

    @property
    def better(self) -> Plan | None:
        """A plan found that beats the given one."""
        if self.given_ns is None or self.best is None:
            return None
        assert self.best.claims is not None
        return self.best if self.best.claims.makespan_ns < self.given_ns else None

    def bound_list(self) -> list[dict[str, Any]]:
        """The bounds tried: a row run_all lists without an execution order is one that never
        ran (its turn came with no budget left, or an interrupt), kept here only to know
        that more time could help."""
        return [b for b in self.bounds.values() if b["exec_order"] in ("any", "instance")]

    def lower(self) -> int:
        return max((b["ns"] for b in self.bounds.values() if b["ns"] is not None), default=0)

    def lowest(self) -> tuple[int, str]:
        """The fastest plan's makespan and maker (the given plan's: its claimed method)."""
        found = []
        if self.given_ns is not None:
            assert self.given is not None
            found.append((self.given_ns, self.given.claims.method if self.given.claims
                          else "the given plan"))
        if self.best is not None:
            assert self.best.claims is not None
            found.append((self.best.claims.makespan_ns, self.best.claims.method))
        return min(found)

    def has_plan(self) -> bool:
        return self.given_ns is not None or self.best is not None

    def lowest_makespan(self) -> int:
        return self.lowest()[0]

    def closed(self) -> bool:
        return bool(self.bounds) and self.lower() >= self.lowest_makespan()

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def left(self) -> float:
        return self.time_limit_s - self.elapsed()

    def hard_deadline(self) -> float:
        """When a solver phase still running is ended: its own limit is shorter, but model
        building can overrun it (polish on a whole model, by seconds), and ending it loses
        its plan."""
        return self.started + self.time_limit_s + GRACE_S

    def summary(self) -> dict[str, Any]:
        return {"time_limit_s": self.time_limit_s, "threads": self.threads,
                "wall_s": round(self.elapsed(), 3), "stopped": self.stopped,
                "certified_plan": "given" if self.given is not None else "found",
                "done": sorted(self.heuristics_done) + ([SLICES] if self.sliced else []),
                "bound_rounds": self.bound_rounds,
                "bound_budget_s": round(self.bound_budget, 3),
                "bounds_revision": self.bounds_revision,
                "phases": self.phases}


def offer_plan(found: Found, plan: Plan) -> bool:
    """Keep `plan` if it is the fastest plan so far in an order the search certifies."""
    assert plan.claims is not None
    if exec_order(plan) != "instance" and not found.free_order:
        return False
    if found.best is None or plan.claims.makespan_ns < found.best.claims.makespan_ns:
        found.best = plan
        return True
    return False


def offer_bound(found: Found, entry: dict[str, Any], revised: bool = False) -> bool:
    """Keep a bound entry if it covers the certified plan's order and beats its namesake, or,
    `revised`, if it is complete: then it is this revision's value, which replaces an
    earlier revision's even when lower, since `certify --check` recomputes a bound with the
    code at hand (a value only older code reproduces would make the certificate fail it);
    whether the best bound rose."""
    target = found.given if found.given is not None else found.best
    if target is not None and not covers(entry["exec_order"], exec_order(target)):
        return False
    if entry["status"] == "skipped" and entry["name"] in found.bounds:
        return False
    old = found.bounds.get(entry["name"])
    if (old is None or (entry["ns"] or -1) > (old["ns"] or -1) or old["status"] == "skipped"
            or (revised and entry["status"] == "complete" and entry["ns"] is not None)):
        before = found.lower()
        found.bounds[entry["name"]] = entry
        return found.lower() > before
    return False


def _say(found: Found, phase: str, enabled: bool) -> None:
    if not enabled:
        return
    parts = [f"certify [{found.elapsed():5.1f}/{found.time_limit_s:g} s] {phase}"]
    plans = found.has_plan()
    if plans:
        makespan, maker = found.lowest()
        parts.append(f"plan {makespan:,} ns ({maker})")
    if found.bounds:
        lower = found.lower()
        name = next(b["name"] for b in found.bounds.values() if b["ns"] == lower)
        parts.append(f"bound {lower:,} ns ({name})")
        if plans and lower > 0:
            parts.append(f"gap {found.lowest_makespan() / lower - 1:.3%}")
    say(": ".join(parts[:1]) + (": " + ", ".join(parts[1:]) if parts[1:] else ""))


def _call(found: Found, worker: Worker, task: Task, deadline: float) -> Any:
    """`worker.call`; on an interrupt, what the phase handed over is kept before it unwinds
    (a solver's best plan, or bounds, each valid as far as it got)."""
    try:
        return worker.call(task, deadline)
    except (KeyboardInterrupt, Terminated) as stop:
        partial = getattr(stop, "partial", None)
        if isinstance(partial, Plan):
            offer_plan(found, partial)
        elif isinstance(partial, dict):
            for row in partial["bounds"]:
                offer_bound(found, bound_entry(row))
        raise


def _starting(found: Found, what: str, enabled: bool) -> None:
    """A line before a phase that may run long, so the reader knows what is running."""
    say(f"certify [{found.elapsed():5.1f}/{found.time_limit_s:g} s] running {what}...",
        enabled=enabled)


def _record(found: Found, phase: str, started: float, outcome: str) -> None:
    found.phases.append({"phase": phase, "wall_s": round(time.perf_counter() - started, 3),
                         "outcome": outcome})


def search(instance: Instance, found: Found, *, progress: bool = False,
           worker: Worker | None = None) -> Found:
    """Fill `found` within its time limit (see the module docstring); returns it. `worker`: a
    running worker to use (default: one of its own, ended on return)."""
    if worker is None:
        with Worker() as own:
            return search(instance, found, progress=progress, worker=own)
    options = SolveOptions(timing=found.timing, threads=found.threads)
    worker.start()  # its imports overlap the cheap phase
    if found.given is not None:  # a start for CP-SAT and polish, if in the instance's order
        given = found.given
        offer_plan(found, make_plan(
            instance, given.choice, given.program, release_ns=given.release_ns,
            method=given.claims.method if given.claims else "given", started=found.started,
            timing=found.timing))
    _cheap(instance, found, options)
    _say(found, "linear-time bounds and Basic", progress)
    if not found.closed():
        _heuristics(instance, found, options, worker, progress)
    rounds = found.bound_rounds
    while not found.closed() and found.left() >= MIN_PHASE_S:
        rounds += 1
        ran = len(found.phases)
        gained = _bound_round(instance, found, worker, rounds, progress)
        gained = _plan_round(instance, found, options, worker, progress) or gained
        if len(found.phases) == ran or not (gained or _bounds_could_grow(found)
                                            or found.deferred):
            found.stopped = "time limit" if found.cut else "nothing left to try"
            break
    if found.stopped == "running":
        found.stopped = "gap closed" if found.closed() else "time limit"
    return found


def _cheap(instance: Instance, found: Found, options: SolveOptions) -> None:
    started = time.perf_counter()
    plan = solve(instance, "basic", options)
    offer_plan(found, plan)
    report = lower_bounds(instance, timing=found.timing, threads=found.threads, time_budget_s=0,
                          exec_order="free" if found.free_order else "instance")
    for row in report["bounds"]:
        if row["status"] != "skipped":
            offer_bound(found, bound_entry(row))
    _record(found, "linear-time bounds, basic", started,
            f"basic {plan.claims.makespan_ns:,} ns, bound {found.lower():,} ns")


def _heuristic_limits(found: Found, method: str) -> tuple[float, float, float]:
    """`method`'s own time limit, when it ends, and the deadline past which its process is
    ended (time.perf_counter() readings). The heuristics before Elk-Full end by
    HEURISTIC_SHARE - ELK_FULL_SHARE of the budget, so that the two Elk-Fulls (FULL), the
    best of them, keep ELK_FULL_SHARE of it (less a grace the others overran by). Each runs
    under its limit, so one cut short hands back its best plan so far, and is ended only
    HEURISTIC_GRACE of the budget past it (a pass between two checks of its deadline may
    overrun it)."""
    share = HEURISTIC_SHARE if method in FULL else HEURISTIC_SHARE - ELK_FULL_SHARE
    ends = found.started + share * found.time_limit_s - MARGIN_S
    return ends - time.perf_counter(), ends, _graced(found, ends)


def _graced(found: Found, ends: float) -> float:
    """When the process of a heuristic phase whose limit `ends` is ended: HEURISTIC_GRACE of
    the budget (at least GRACE_S) later, and never past the search's own deadline."""
    return min(ends + max(GRACE_S, HEURISTIC_GRACE * found.time_limit_s), found.hard_deadline())


def _heuristics(instance: Instance, found: Found, options: SolveOptions, worker: Worker,
                progress: bool) -> None:
    for method in HEURISTICS:
        if method in found.heuristics_done:
            continue
        started = time.perf_counter()
        limit, ends, deadline = _heuristic_limits(found, method)
        if limit < MIN_PHASE_S:
            _record(found, method, started, "not started: the heuristics' share was spent")
            found.cut = True
            continue
        try:
            task = Task("solve", instance, {"method": method, "ends": ends,
                                            "options": replace(options, time_limit_s=limit)})
            _starting(found, f"{method}, up to {limit:.0f} s", progress)
            plan = _call(found, worker, task, deadline)
        except TimedOut:
            _record(found, method, started, "ended: it overran its limit")
            found.cut = True
            continue
        kept = offer_plan(found, plan)
        found.heuristics_done.add(method)
        stopped = plan.claims.params.get("stopped")
        found.cut = found.cut or stopped is not None
        _record(found, method, started, f"{plan.claims.makespan_ns:,} ns"
                                        + (f" (stopped: {stopped})" if stopped else "")
                                        + (" (best so far)" if kept else ""))
        _say(found, method, progress)
        if found.closed():
            return


def _bounds_could_grow(found: Found) -> bool:
    """Whether a solver-backed bound ran out of time or budget (more time could raise it)."""
    return any(b["status"] == "time-limit" or b["note"] == BUDGET_SPENT
               for b in found.bounds.values())


def _whole_ns_in_reach(instance: Instance, found: Found) -> bool:
    """Whether the fastest plan lies within a ns per interval of a finished fluid-contiguous
    that fluid-whole-ns has not followed to its end or its cap (`run_all` solves it after
    that MIP, its time capped by the MIP's). On a Llama2-7B b64 KV4096 slice CP-SAT's plan,
    365,203 ns, came within reach after the MIP had run, and only fluid-whole-ns proves it
    (BENCHMARKS.md, "Intervals of whole ns in certify")."""
    contiguous: dict[str, Any] = found.bounds.get("fluid-contiguous", {})
    if (contiguous.get("status") != "complete" or contiguous.get("ns") is None
            or not found.has_plan()
            or not within_reach(len(instance.ops), found.lowest_makespan(), contiguous["ns"])):
        return False
    whole = found.bounds.get("fluid-whole-ns")
    return whole is None or (whole["status"] != "complete"
                             and whole["wall_s"] < whole_ns_cap(contiguous["wall_s"]))


def _whole_ns_due(instance: Instance, found: Found) -> bool:
    """Within reach (`_whole_ns_in_reach`) and not tried yet: worth a bound round of its own,
    which `polish` waits for."""
    return _whole_ns_in_reach(instance, found) and "fluid-whole-ns" not in found.bounds


def defers(instance: Instance, round_: int) -> bool:
    """Whether bound round `round_` leaves the layer windows and the contiguous MIP to the
    next (module docstring, phase 3)."""
    return round_ == 1 and len(instance.ops) <= CPSAT_MAX_OPS


def _bound_round(instance: Instance, found: Found, worker: Worker, round_: int,
                 progress: bool) -> bool:
    """A round of the solver-backed bounds. After the first, only for what an earlier round
    deferred, or for a bound that ran out of time when this round has more time than any
    round before it. On the grid's 48 certificates the 70 rounds after the first (twice the
    time per window, less in all) took 917 s and raised nothing: time `polish` can use, or
    the user gets back (BENCHMARKS.md, "Later bound rounds")."""
    # fluid-whole-ns due gets a round of its own if need be, with the first round's share: on
    # a Llama2-7B b64 KV4096 slice it takes 10 s of the 11 that 40% of what was left gave,
    # and beside another run it did not finish in them
    due = _whole_ns_due(instance, found)
    budget = (FIRST_BOUND_SHARE if round_ == 1 or due else BOUND_SHARE) * found.left()
    if (round_ > 1 and not found.deferred and found.bounds_revision == BOUNDS_REVISION
            and (not _bounds_could_grow(found) or budget <= found.bound_budget) and not due):
        return False
    target = found.given if found.given is not None else found.best
    if target is not None and exec_order(target) != "instance":
        return False  # the solver-backed bounds hold for the instance's order only
    if budget < MIN_PHASE_S:
        found.cut = True
        return False
    found.bound_budget = max(found.bound_budget, budget)
    started = time.perf_counter()
    plan_ns = found.lowest_makespan() if found.has_plan() else None
    args = {"timing": found.timing, "threads": found.threads, "time_budget_s": budget,
            "window_time_s": 2.0 * 2 ** (round_ - 1), "progress": progress, "replay": True,
            # the layer windows' fluid MIPs share what the round has left (run_all._layers)
            "layers_mip_time_s": budget,
            # fluid-whole-ns where the fastest plan is within its reach of fluid-contiguous
            "whole_ns": plan_ns is not None, "plan_ns": plan_ns}
    for name, limit in SOLVED_ONCE.items():  # a later round: what finished gives the same,
        if (found.bounds_revision >= SOLVED_SINCE  # unless its code has changed since
                and found.bounds.get(name, {}).get("status") == "complete"):
            args[limit] = 0
    if args.get("fluid_contiguous_max_ops") == 0 and _whole_ns_in_reach(instance, found):
        contiguous = found.bounds["fluid-contiguous"]  # fluid-whole-ns follows it
        args["contiguous_done"] = (contiguous["ns"], contiguous["wall_s"])
    found.deferred = defers(instance, round_)
    if found.deferred:
        args["layers"] = 0
        args["fluid_contiguous_max_ops"] = 0
    try:
        _starting(found, f"the solver-backed bounds, up to {budget:.0f} s", progress)
        report = _call(found, worker, Task("bounds", instance, args), found.hard_deadline())
    except TimedOut:
        _record(found, f"bounds (round {round_})", started, "stopped at the round's deadline")
        found.cut = True
        return False
    except UsageError as e:
        _record(found, f"bounds (round {round_})", started, f"failed: {e}")
        return False
    found.bound_rounds = round_
    revised = found.bounds_revision != BOUNDS_REVISION
    found.bounds_revision = BOUNDS_REVISION
    gained = False
    for row in report["bounds"]:
        gained = offer_bound(found, bound_entry(row), revised) or gained
    for document in report.get("replayed", []):  # read from the fluid-contiguous MIP
        offer_plan(found, plan_from_dict(document))
    _record(found, f"bounds (round {round_})", started,
            f"best {found.lower():,} ns" + (" (raised)" if gained else ""))
    _say(found, f"bounds, round {round_}", progress)
    return gained


def _slice_phase(instance: Instance, found: Found, options: SolveOptions, worker: Worker,
                 progress: bool) -> bool:
    """Elk-Full on slices of the first SLICE_SIZES layers (and the ops after the last), then
    CP-SAT from the Elk-Full plan that tiled best, each plan tiled onto the whole instance
    (formulations.lns_tiling); a slice's best plan need not tile best, since it is also best
    at the slice's own end. Then one pair per op class on that slice (`_pairs_per_class`).
    Once, on instances CP-SAT does not take whole. Whether a tiled plan is the best so far."""
    if found.sliced or len(instance.ops) <= CPSAT_MAX_OPS or found.free_order:
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
    _starting(found, f"one pair per op class on a slice of {count} layers, up to {limit:.0f} s",
              progress)
    task = Task("slice pairs", instance, {"layers": layers, "sliced": sliced,
                                          "options": options, "deadline": started + limit,
                                          "start": found.best})
    try:
        descent = _call(found, worker, task, _graced(found, started + limit))
    except TimedOut:
        _record(found, PAIRS, started, "ended at the deadline: it overran its limit")
        found.cut = True
        return False
    if descent.best is None:
        _record(found, PAIRS, started, "tiled into none that obeys R5")
        return False
    sliced_plan, tiled, schedule = descent.best
    better = offer_plan(found, tiled_plan(instance, tiled, sliced_plan, count, started,
                                          classes_given_a_pair=len(descent.forced)))
    _record(found, PAIRS, started,
            f"{count} layers: {len(descent.forced)} classes given one pair in "
            f"{descent.trials} trials, {descent.sweeps} sweeps"
            + ("" if descent.complete else " (cut short)")
            + f", tiled {schedule.makespan_ns:,} ns" + (" (best so far)" if better else ""))
    _say(found, "slice (pairs per class), tiled", progress)
    return better


def _pairs_from_best(instance: Instance, found: Found, options: SolveOptions, worker: Worker,
                     progress: bool) -> bool:
    """The pairs descent once more, from the best plan's pairs, once per search after the
    slice phase ran (here or in a search this one continues) and the best plan moved past
    the one the descent last started from: polish changes pairs in a few windows, and from
    its plan's pairs the descent can find classes it did not before (Llama2-70B b64 KV4096,
    analytic: BENCHMARKS.md, "The analytic rows above 1%"). On a slice of
    PAIRS_AGAIN_LAYERS layers. Whether its plan is the best so far."""
    best = found.best
    if (not found.sliced or found.pairs_again or best is None or found.free_order
            or len(instance.ops) <= CPSAT_MAX_OPS or found.started_from.get(PAIRS) is best
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
        _starting(found, f"{method} on a slice of {count} layers ({len(sliced.ops)} ops), up "
                         f"to {options.time_limit_s:.0f} s", progress)
        plan = _call(found, worker, Task("solve", sliced, {"method": method,
                                                           "options": options}),
                     _graced(found, ends))
    except TimedOut:
        _record(found, f"slice, {method}", started,
                "ended at the deadline: it overran its limit")
        found.cut = True
        return None
    assert plan.claims is not None
    tiled = best_tiling(instance, layers, plan, evaluate_plan(plan))
    better = tiled is not None and offer_plan(
        found, tiled_plan(instance, tiled[0], plan, count, started))
    _record(found, f"slice, {method}", started,
            f"{count} layers: {plan.claims.makespan_ns:,} ns ({plan.claims.status}), "
            + (f"tiled {tiled[1].makespan_ns:,} ns" if tiled else "tiled into none that obeys R5")
            + (" (best so far)" if better else ""))
    _say(found, f"slice ({method}, {count} layers), tiled", progress)
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


def _elk_full_at_best_pairs(instance: Instance, found: Found, options: SolveOptions,
                            worker: Worker, progress: bool) -> bool:
    """Elk-Full with every op held to the best plan's pair, within HELD_PAIRS_SHARE of what
    is left, once per best plan that no Elk-Full made, on instances CP-SAT does not take
    whole (it searches the pairs and the schedule together): the pairs of a tiled slice or
    of polish, scheduled again by Elk-Full's preload counts and order. Whether its plan is
    the best so far."""
    best = found.best
    if (best is None or best.claims is None or best.claims.method in FULL
            or len(instance.ops) <= CPSAT_MAX_OPS
            or found.started_from.get(HELD_PAIRS) is best):
        return False
    limit = HELD_PAIRS_SHARE * found.left() - MARGIN_S
    if limit < MIN_PHASE_S:
        found.cut = True
        return False
    found.started_from[HELD_PAIRS] = best
    started = time.perf_counter()
    _starting(found, f"elk-full held to {best.claims.method}'s pairs, up to {limit:.0f} s",
              progress)
    try:
        held = _call(found, worker, Task("solve", held_to_pairs(instance, best), {
            "method": "elk-full", "options": replace(options, time_limit_s=limit)}),
            _graced(found, started + limit))
    except TimedOut:
        _record(found, HELD_PAIRS, started, "ended at the deadline: it overran its limit")
        found.cut = True
        return False
    assert held.claims is not None
    better = offer_plan(found, make_plan(
        instance, held.choice, held.program, release_ns=held.release_ns, method="elk-full",
        started=started, timing=found.timing,
        params={**held.claims.params, "pairs": f"held to {best.claims.method}'s plan's"}))
    _record(found, HELD_PAIRS, started, f"{held.claims.makespan_ns:,} ns"
            + (" (best so far)" if better else ""))
    _say(found, HELD_PAIRS, progress)
    return better


def _plan_round(instance: Instance, found: Found, options: SolveOptions, worker: Worker,
                progress: bool) -> bool:
    gained = _slice_phase(instance, found, options, worker, progress)
    gained = _pairs_from_best(instance, found, options, worker, progress) or gained
    gained = _elk_full_at_best_pairs(instance, found, options, worker, progress) or gained
    methods = (["cpsat"] if len(instance.ops) <= CPSAT_MAX_OPS else []) + ["polish"]
    for method in methods:
        left = found.left()
        share = CPSAT_SHARE if method == "cpsat" else POLISH_SHARE
        limit = share * left - MARGIN_S
        if found.closed() or found.best is None:
            break
        if found.started_from.get(method) is found.best:
            continue  # the same start with less time: nothing new to find
        if method == "polish" and exec_order(found.best) != "instance":
            continue  # polish re-solves windows of the instance's order only
        if method == "polish" and _whole_ns_due(instance, found):
            break  # the bound round first: fluid-whole-ns may prove the plan optimal
        if limit < MIN_PHASE_S:
            found.cut = True
            continue
        started = time.perf_counter()
        warm = found.best
        assert warm.claims is not None
        found.started_from[method] = warm
        # the best bound so far covers the certified plan's orders: the floor the solvers
        # would otherwise compute again (the fluid LP and MIP, up to a fifth of their time)
        floor = found.lower() if found.bounds else None
        task_options = replace(options, time_limit_s=limit, warm_start=warm.claims.method,
                               warm_plan=warm, floor_ns=floor)
        if method == "cpsat" and _leaves_contiguous_to_cpsat(instance, found):
            task_options = replace(task_options, loads_run_whole=True)
        if method == "cpsat" and found.free_order:  # its bound then holds for every order
            task_options = replace(task_options, exec_order="free")
        if method == "polish" and "cpsat" in found.started_from:  # CP-SAT had it whole
            task_options = replace(task_options, params={**task_options.params, "whole": False})
        try:
            task = Task("solve", instance, {"method": method, "options": task_options})
            _starting(found, f"{method} from {warm.claims.method}'s plan, up to {limit:.0f} s",
                      progress)
            plan = _call(found, worker, task, found.hard_deadline())
        except TimedOut:
            _record(found, method, started, "ended at the deadline: it overran its limit")
            found.cut = True
            continue
        except UsageError as e:
            _record(found, method, started, f"failed: {e}")
            continue
        kept = offer_plan(found, plan)
        raised = False
        if method == "cpsat" and plan.claims.lower_bound_ns is not None:
            raised = offer_bound(found, solver_bound_entry(
                plan, time.perf_counter() - started,
                {"method": "cpsat", "time_limit_s": round(limit, 3), "threads": found.threads,
                 "warm_start": warm.claims.method, "floor_ns": floor}))
        if method == "cpsat":  # the MIPs it solved after its search: no bound round again
            for entry in (cpsat_contiguous_entry(plan), cpsat_whole_ns_entry(plan)):
                if entry is not None:
                    raised = offer_bound(found, entry) or raised
        gained = gained or kept or raised
        _record(found, method, started,
                f"{plan.claims.makespan_ns:,} ns ({plan.claims.status})"
                + (" (best so far)" if kept else "") + (", bound raised" if raised else "")
                + _moves(plan))
        _say(found, method, progress)
    return gained


def _leaves_contiguous_to_cpsat(instance: Instance, found: Found) -> bool:
    """Whether CP-SAT runs the MIP with loads run whole itself (module docstring, phase 3):
    on small instances in the instance's order, until that MIP has run in a bound round."""
    ran = found.bounds.get("fluid-contiguous", {}).get("status", "skipped") != "skipped"
    return len(instance.ops) <= CPSAT_CONTIGUOUS_MAX_OPS and not found.free_order and not ran


POLISH_MOVES = (("windows_improved", "windows improved"), ("twins_applied", "twins applied"),
                ("layers_copied", "layer classes copied"),
                ("refused_copied", "refused windows copied"), ("executes_held", "executes held"),
                ("loads_advanced", "loads issued sooner"), ("whole_solved", "solved whole"),
                ("fluid_mip_plan", "plan read from the fluid MIP"))


def _moves(plan: Plan) -> str:
    """What a polish phase's moves did, for its phase record: the certificate's plan carries
    the counts of the last polish phase only, and a search runs several."""
    assert plan.claims is not None
    if plan.claims.method != "polish":
        return ""
    params = plan.claims.params
    done = [label if params[key] is True else f"{params[key]} {label}"
            for key, label in POLISH_MOVES if params.get(key)]
    return f"; {', '.join(done)}" if done else "; no move gained"
