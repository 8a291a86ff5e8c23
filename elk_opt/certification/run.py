"""Certify an instance or a plan, or continue a certificate: check the request, search, build the
document.

Continuing a certificate (`elk-opt certify cert.json`) starts the search where the certificate
stopped rather than from nothing. What a certificate records stays true: every bound it lists
holds for every plan of its instance under its timing (in the orders the bound names), and its
plans are plans of that instance. So the new search keeps those bounds (a bound computed again
replaces its namesake only when higher, except in the round that brings bounds an earlier
revision found up to this one: there a bound solved to the end replaces its namesake whatever
its value, so that `--check`, which recomputes with this code, confirms it), starts CP-SAT and
polish from the faster of the plan and `better_plan`, and does not run again what would only
rebuild that start: the heuristics that gave a plan and the slice phase if it ran, in the
certificate's search or in one it continued (`search.done`); and its bound rounds go on from
the certificate's last (`search.bound_rounds`): a later round's share and time per window, and
no round at all when every bound finished, rather than round 1 again; a bound that ran out of
time is tried again only with more time than a round of the continued searches had
(`search.bound_budget_s`), unless the bounds were found by an earlier revision of them
(`search.bounds_revision`), which gets a round whatever the time. The new certificate is never
worse than the one it continues: the same plan or a faster one, the same bound or a higher one
(but for that revision round, where a bound can fall by what the revision changed: 2 ns of 16.4
ms on one grid certificate). A certificate of a given plan goes on certifying that plan
(`search.certified_plan`; older certificates, which lack it, are taken as of a given plan when
they hold a `better_plan`). The certificate is checked first (as `--check` does, without
recomputing bounds): one that does not hold is not continued.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Sequence
from typing import Any

from elk_opt.certification.certificate import build, exec_order
from elk_opt.certification.check import check
from elk_opt.certification.found import SLICES, Found, offer_bound, offer_plan
from elk_opt.certification.search import HEURISTICS, defers, search
from elk_opt.certification.worker import Worker
from elk_opt.errors import InputError, UsageError
from elk_opt.evaluate import evaluate
from elk_opt.io import plan_from_dict, plan_to_dict
from elk_opt.problem import DEFAULT_TIMING, TIMINGS, Instance, Plan, Timing, is_count
from elk_opt.solution import make_plan

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
    _check_request(timing, time_limit_s, threads)
    if isinstance(source, Instance):
        return source, Found(timing or DEFAULT_TIMING, float(time_limit_s), threads)
    if timing is not None and source.timing != timing:
        raise UsageError(f"{name}: the plan's timing is {source.timing}, but {timing} was "
                         "asked for")
    _verified(source, name)
    given_ns = evaluate(source.instance, source.choice, source.program, source.release_ns,
                        timing=source.timing).makespan_ns
    return source.instance, Found(source.timing, float(time_limit_s), threads, given=source,
                                  given_ns=given_ns)


def _verified(plan: Plan, name: str) -> None:
    """PlanBreaksRules unless `plan` passes `verify` (`name` is how messages call it)."""
    from verify import check as verify_plan

    report = verify_plan(plan_to_dict(plan))
    if report.violations:
        raise PlanBreaksRules(name, [v.message for v in report.violations])


def offer_starts(instance: Instance, found: Found, starts: Sequence[tuple[str, Plan]]) -> None:
    """Offer plans from other tools (`certify --start`) as starts: each must be a plan of
    `instance` and pass `verify`; re-timed under the search's timing, it competes with the
    plans the search finds (a given plan stays the one certified) and CP-SAT and polish may
    start from it. `starts` pairs each plan with the name messages and the certificate's
    phases call it by. A UsageError names a plan of another instance."""
    for name, plan in starts:
        started = time.perf_counter()
        if plan.instance != instance:
            raise UsageError(f"{name}: a plan of instance {plan.instance.name!r}, not of the "
                             f"one certified ({instance.name!r})")
        _verified(plan, name)
        method = plan.claims.method if plan.claims is not None else "start"
        timed = make_plan(instance, plan.choice, plan.program, release_ns=plan.release_ns,
                          method=method, started=started, timing=found.timing,
                          params={"start": name})
        ns = timed.claims.makespan_ns
        if exec_order(timed) != "instance" and not found.free_order:
            outcome = (f"{name}: {ns:,} ns ({method}), not kept: it executes in another order "
                       "than the instance's (certify it as the given plan instead)")
        else:
            kept = offer_plan(found, timed)
            outcome = f"{name}: {ns:,} ns ({method})" + (" (best so far)" if kept else "")
        found.phases.append({"phase": "start", "wall_s": round(time.perf_counter() - started, 3),
                             "outcome": outcome})


def _check_request(timing: Timing | None, time_limit_s: float, threads: int) -> None:
    if not (isinstance(time_limit_s, int | float) and math.isfinite(time_limit_s)
            and time_limit_s > 0):
        raise UsageError(f"the time limit must be a positive number of seconds, got "
                         f"{time_limit_s!r}")
    if not isinstance(threads, int) or threads < 1:
        raise UsageError(f"threads must be a positive integer, got {threads!r}")
    if timing is not None and timing not in TIMINGS:
        raise UsageError(f"unknown timing {timing!r}; choose one of {', '.join(TIMINGS)}")


def prepare_continued(doc: dict[str, Any], *, timing: Timing | None = None,
                      time_limit_s: float = DEFAULT_TIME_LIMIT_S, threads: int = 2,
                      name: str = "the certificate") -> tuple[Instance, Found]:
    """The instance and a search state holding what the certificate `doc` found (module
    docstring); a UsageError when it does not hold or its timing is not `timing`."""
    _check_request(timing, time_limit_s, threads)
    problems = check(doc, name, max_recompute_s=0).problems
    if problems:
        more = f" and {len(problems) - 1} more" if len(problems) > 1 else ""
        raise UsageError(f"{name}: not continued, the certificate does not hold: {problems[0]}"
                         f"{more} (`elk-opt certify --check` lists them)")
    if timing is not None and doc["timing"] != timing:
        raise UsageError(f"{name}: the certificate's timing is {doc['timing']}, but {timing} "
                         "was asked for")
    plan = plan_from_dict(doc["plan"], f"{name}: plan")
    record = _search_record(doc.get("search"), name)
    given = record.get("certified_plan", "given" if "better_plan" in doc else "found") == "given"
    # the check verified the plan and its makespan: a given plan needs neither again
    found = Found(doc["timing"], float(time_limit_s), threads, given=plan if given else None,
                  given_ns=doc["makespan_ns"] if given else None)
    starts = [] if given else [plan]  # a given plan is offered by the search itself
    if "better_plan" in doc:
        starts.append(plan_from_dict(doc["better_plan"]["plan"], f"{name}: better_plan"))
    for start in starts:
        if start.claims is None:  # a tool's plan, kept as found: the search needs claims
            start = make_plan(plan.instance, start.choice, start.program,
                              release_ns=start.release_ns, method="given",
                              started=found.started, timing=found.timing)
        offer_plan(found, start)
    for entry in doc["bounds"]:
        offer_bound(found, dict(entry))
    done = set(record.get("done") or ())
    found.continued = name
    found.heuristics_done = done & set(HEURISTICS)
    found.sliced = SLICES in done
    found.bound_rounds = record.get("bound_rounds", _rounds_run(record.get("phases") or ()))
    found.deferred = defers(plan.instance, found.bound_rounds)
    found.bound_budget = float(record.get("bound_budget_s", 0.0))
    found.bounds_revision = record.get("bounds_revision", 1)  # 1: written before the key
    skipped = sorted(found.heuristics_done) + (["the slices"] if found.sliced else [])
    found.phases.append({"phase": "continued", "wall_s": 0.0, "outcome":
                         f"{name}: plan {doc['makespan_ns']:,} ns, bound "
                         f"{doc['lower_bound_ns']:,} ns ({doc.get('best_bound', '?')}); not run "
                         f"again: {', '.join(skipped) if skipped else 'nothing'}"})
    return plan.instance, found


def _search_record(record: Any, name: str) -> dict[str, Any]:
    """The certificate's `search` record, with what a continuation reads from it checked
    (`--check` judges a certificate without it, so a tool may leave it out): else InputError
    naming the field and the value."""
    if record is None:
        return {}
    if not isinstance(record, dict):
        raise InputError(f"{name}: search: must be an object, got {record!r}")

    def wrong(key: str, what: str) -> InputError:
        return InputError(f"{name}: search.{key}: must be {what}, got {record[key]!r}")

    if record.get("certified_plan", "found") not in ("given", "found"):
        raise wrong("certified_plan", "given or found")
    done = record.get("done", [])
    if not isinstance(done, list) or not all(isinstance(d, str) for d in done):
        raise wrong("done", "a list of strings")
    if not is_count(record.get("bound_rounds", 0)):
        raise wrong("bound_rounds", "a non-negative integer")
    budget = record.get("bound_budget_s", 0.0)
    if (not isinstance(budget, int | float) or isinstance(budget, bool)
            or not math.isfinite(budget) or budget < 0):
        raise wrong("bound_budget_s", "a non-negative number of seconds")
    revision = record.get("bounds_revision", 1)
    if not is_count(revision) or revision < 1:
        raise wrong("bounds_revision", "a positive integer")
    phases = record.get("phases", [])
    if not isinstance(phases, list) or not all(isinstance(p, dict) for p in phases):
        raise wrong("phases", "a list of objects")
    return record


def _rounds_run(phases: Any) -> int:
    """The last bound round that finished in a certificate written before
    `search.bound_rounds` (its outcome names the best bound; a round stopped at its deadline
    or failed says so instead)."""
    rounds = [int(m.group(1)) for p in phases
              if (m := re.fullmatch(r"bounds \(round (\d+)\)", str(p.get("phase"))))
              and str(p.get("outcome")).startswith("best ")]
    return max(rounds, default=0)


def document(found: Found) -> dict[str, Any]:
    """The certificate of what `found` holds now."""
    return build(found.plan, found.timing, found.bound_list(), better=found.better,
                 search=found.summary())


def certify(source: Instance | Plan | dict[str, Any], *, timing: Timing | None = None,
            time_limit_s: float = DEFAULT_TIME_LIMIT_S, threads: int = 2,
            progress: bool = False, worker: Worker | None = None,
            starts: Sequence[tuple[str, Plan]] = ()) -> dict[str, Any]:
    """Search within the time limit and return the certificate (elk_opt.certification.search);
    `source` a (parsed) certificate: continue it (module docstring). `worker`: a running one
    to reuse (default: the search starts its own). `starts`: (name, plan) pairs offered as
    starts (`offer_starts`)."""
    if isinstance(source, dict):
        instance, found = prepare_continued(source, timing=timing, time_limit_s=time_limit_s,
                                            threads=threads)
    else:
        instance, found = prepare(source, timing=timing, time_limit_s=time_limit_s,
                                  threads=threads)
    offer_starts(instance, found, starts)
    search(instance, found, progress=progress, worker=worker)
    return document(found)
