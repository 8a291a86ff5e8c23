"""What a certify search has found so far, and the plumbing every phase of it shares.

`Found` is the state the caller holds, so an interrupt leaves the best plan and bounds so
far (elk_opt.certification.search runs the phases; elk_opt.certification.slices adds the
phases for whole models). A phase runs in the worker process through `call`, announces
itself with `starting`, leaves a record with `record` and a progress line with `say_found`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from elk_opt.certification.certificate import bound_entry, covers, exec_order
from elk_opt.certification.worker import Task, Worker
from elk_opt.interrupts import Terminated
from elk_opt.problem import Instance, Plan, Timing
from elk_opt.progress import say

SLICES = "slices"  # the slice phase, as `search.done` names it
FULL = ("elk-full", "elk-full-lp")  # the Elk-Full heuristics, the best of them
CPSAT_MAX_OPS = 200  # CP-SAT's model is quadratic in the ops: above this, polish alone
MIN_PHASE_S = 0.5  # a phase with less time than this is not started
GRACE_S = 1.0  # past the budget before a solver phase's process is ended
HEURISTIC_GRACE = 0.05  # of the budget, past its limit before a heuristic's process is ended
MARGIN_S = 0.3  # kept back from a solver's limit for handing its result over
# raised when the solver-backed bounds change (2: the layer windows' fluid MIP; 3: the fluid
# LP with SRAM's rounded rows at up to 24 divisors; 4: that round's finished bounds replace
# their namesakes even when lower, where 3 kept the higher, an earlier revision's value that
# `--check` could not reproduce; 5: `carry` and `fluid-split` added; 6: the LP-based rows at
# up to 32 load demand classes instead of 16, `limits.BOUND_CLASSES`): a certificate whose
# bounds an earlier revision found gets a bound round whatever its budget
BOUNDS_REVISION = 6


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


def cpsat_takes_whole(instance: Instance) -> bool:
    """Whether CP-SAT solves `instance` whole (else the slice phases and polish work on it)."""
    return len(instance.ops) <= CPSAT_MAX_OPS


def say_found(found: Found, phase: str, enabled: bool) -> None:
    """The progress line after a phase: the best plan, the best bound and the gap so far."""
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


def call(found: Found, worker: Worker, task: Task, deadline: float) -> Any:
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


def starting(found: Found, what: str, enabled: bool) -> None:
    """A line before a phase that may run long, so the reader knows what is running."""
    say(f"certify [{found.elapsed():5.1f}/{found.time_limit_s:g} s] running {what}...",
        enabled=enabled)


def record(found: Found, phase: str, started: float, outcome: str) -> None:
    found.phases.append({"phase": phase, "wall_s": round(time.perf_counter() - started, 3),
                         "outcome": outcome})


def graced(found: Found, ends: float) -> float:
    """When the process of a heuristic phase whose limit `ends` is ended: HEURISTIC_GRACE of
    the budget (at least GRACE_S) later, and never past the search's own deadline."""
    return min(ends + max(GRACE_S, HEURISTIC_GRACE * found.time_limit_s), found.hard_deadline())
