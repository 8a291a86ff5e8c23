"""A heuristic's time limit: the deadline its search checks, and what its plan says when the
deadline (or a SIGINT under `elk_opt.interrupts.sigint_stops`) ended the search early."""

from __future__ import annotations

from typing import Any

from elk_opt.deadline import Deadline
from elk_opt.interrupts import stop_requested
from elk_opt.problem import Choice, Instance, Instr, Plan
from elk_opt.solution import SolveOptions, make_plan
from heuristics import basic


def deadline_of(options: SolveOptions, started: float) -> Deadline:
    return Deadline.after(options.time_limit_s, started)


def stopped_params(stopped: bool) -> dict[str, Any]:
    """`{"stopped": why}` for a plan whose search was cut short (the best found so far)."""
    if not stopped:
        return {}
    return {"stopped": "interrupted" if stop_requested() else "time limit"}


Decisions = tuple[list[Choice], list[Instr], int]


def fallback_for(instance: Instance, options: SolveOptions) -> Decisions | None:
    """Basic's decisions, made before a time-limited search starts (None without a limit), so
    that a search cut before its first schedule only times them after its deadline: Basic's
    own pass there ran the limit over by about a second at 20,000 ops on a loaded machine; up
    front it costs a few hundredths of a second at paper scale."""
    return basic.decisions(instance) if options.time_limit_s is not None else None


def basic_instead(instance: Instance, options: SolveOptions, method: str,
                  started: float, decided: Decisions | None = None) -> Plan:
    """Basic's plan (`decided` by `fallback_for`, else made now), under `method`'s name, for a
    search cut before its first schedule: a limit is honoured with a plan, and the params say
    whose it is."""
    choice, program, _early = decided if decided is not None else basic.decisions(instance)
    return make_plan(instance, choice, program, method=method, started=started,
                     timing=options.timing, lower_bound_ns=None,
                     params={**stopped_params(True), "plan_from": "basic"})
