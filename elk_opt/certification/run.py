"""Certify an instance or a plan: check the request, search, build the document."""

from __future__ import annotations

import math
from typing import Any

from elk_opt.certification.certificate import build
from elk_opt.certification.search import Found, search
from elk_opt.certification.worker import Worker
from elk_opt.errors import UsageError
from elk_opt.evaluate import evaluate
from elk_opt.io import plan_to_dict
from elk_opt.problem import DEFAULT_TIMING, TIMINGS, Instance, Plan, Timing

DEFAULT_TIME_LIMIT_S = 600.0


class PlanBreaksRules(UsageError):
    """The plan to certify fails `verify`: there is nothing to certify."""

    def __init__(self, source: str, violations: list[str]) -> None:
        super().__init__(f"{source}: the plan breaks {len(violations)} rule(s) of docs/spec.md "
                         "section 4 (see `verify`); nothing certified")
        self.violations = violations


def prepare(source: Instance | Plan, *, timing: Timing | None = None,
            time_limit_s: float = DEFAULT_TIME_LIMIT_S, threads: int = 2,
            name: str = "the plan") -> tuple[Instance, Found]:
    """The instance and an empty search state; a plan must pass `verify`, and its timing must
    be `timing` when one is asked for (`name` is how messages call the plan)."""
    if not (isinstance(time_limit_s, int | float) and math.isfinite(time_limit_s)
            and time_limit_s > 0):
        raise UsageError(f"the time limit must be a positive number of seconds, got "
                         f"{time_limit_s!r}")
    if not isinstance(threads, int) or threads < 1:
        raise UsageError(f"threads must be a positive integer, got {threads!r}")
    if timing is not None and timing not in TIMINGS:
        raise UsageError(f"unknown timing {timing!r}; choose one of {', '.join(TIMINGS)}")
    if isinstance(source, Instance):
        return source, Found(timing or DEFAULT_TIMING, float(time_limit_s), threads)
    if timing is not None and source.timing != timing:
        raise UsageError(f"{name}: the plan's timing is {source.timing}, but {timing} was "
                         "asked for")
    from verify import check

    report = check(plan_to_dict(source))
    if report.violations:
        raise PlanBreaksRules(name, [v.message for v in report.violations])
    given_ns = evaluate(source.instance, source.choice, source.program, source.release_ns,
                        timing=source.timing).makespan_ns
    return source.instance, Found(source.timing, float(time_limit_s), threads, given=source,
                                  given_ns=given_ns)


def document(found: Found) -> dict[str, Any]:
    """The certificate of what `found` holds now."""
    return build(found.plan, found.timing, found.bound_list(), better=found.better,
                 search=found.summary())


def certify(source: Instance | Plan, *, timing: Timing | None = None,
            time_limit_s: float = DEFAULT_TIME_LIMIT_S, threads: int = 2,
            progress: bool = False, worker: Worker | None = None) -> dict[str, Any]:
    """Search within the time limit and return the certificate (elk_opt.certification.search);
    `worker`: a running one to reuse (default: the search starts its own)."""
    instance, found = prepare(source, timing=timing, time_limit_s=time_limit_s,
                              threads=threads)
    search(instance, found, progress=progress, worker=worker)
    return document(found)
