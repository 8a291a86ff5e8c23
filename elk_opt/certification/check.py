"""`elk-opt certify --check`: re-check an `elk-certificate/1` without trusting its writer.

The plan goes to the independent checker (`verify`), its analytic makespan is recomputed, the
bound and gap are recomputed from the listed bounds, every bound must hold for the
certificate's timing and cover the plan's execution order, and every bound that took at most
`max_recompute_s` to find is computed again from its `params` (`elk_opt.bounds.recompute`): a value
below the recorded one is a problem (one found under a time limit may come out higher on a
faster machine; that is fine). A bound found under a time limit (status `time-limit`) that
comes out lower even with RETRY_TIME_FACTOR times its time, on a machine busier than the
writer's, is not thereby wrong: a solver's bound at its deadline holds whatever the machine.
It is a problem only when the certificate's lower bound rests on it (no other bound reaches
its value); otherwise it is listed as unconfirmed. Bounds an exact method proved (status
`solver-proved`) cannot be recomputed cheaply and are only listed. A document that cannot be
read as a certificate raises InputError (exit 2); what is wrong in a readable one is returned,
one line each.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from elk_opt.bounds.recompute import recompute
from elk_opt.certification.certificate import FORMAT, SOLVER_STATUS, covers, exec_order, gap
from elk_opt.errors import InputError, UsageError
from elk_opt.evaluate import evaluate
from elk_opt.io import plan_from_dict
from elk_opt.problem import TIMINGS, Plan, is_count
from elk_opt.progress import say

GAP_TOLERANCE = 1e-9  # relative: a gap written as a float of its ratio
EXEC_ORDERS = ("instance", "any")


@dataclass
class Checked:
    problems: list[str] = field(default_factory=list)
    recomputed: list[str] = field(default_factory=list)
    not_recomputed: list[str] = field(default_factory=list)  # each with the reason
    # time-limited bounds that came out lower again, none of them the one the claim rests on
    unconfirmed: list[str] = field(default_factory=list)


def _fail(source: str, where: str, message: str) -> InputError:
    return InputError(f"{source}: {where}: {message}")


def _structure(doc: Any, source: str) -> None:
    """The keys and types a certificate needs before it can be judged (else InputError)."""
    if not isinstance(doc, dict):
        raise InputError(f"{source}: must be a JSON object")
    if doc.get("format") != FORMAT:
        raise _fail(source, "format", f"must be {FORMAT!r}, got {doc.get('format')!r}")
    if doc.get("timing") not in TIMINGS:
        raise _fail(source, "timing", f"must be one of {', '.join(TIMINGS)}, "
                                      f"got {doc.get('timing')!r}")
    for key in ("makespan_ns", "lower_bound_ns"):
        if not is_count(doc.get(key)):
            raise _fail(source, key, f"must be a non-negative integer, got {doc.get(key)!r}")
    if "gap" not in doc:
        raise _fail(source, "gap", "missing (a number, or null when the bound is 0)")
    g = doc["gap"]
    if g is not None and (not isinstance(g, int | float) or isinstance(g, bool)
                          or not math.isfinite(g)):
        raise _fail(source, "gap", f"must be a number or null, got {g!r}")
    if not isinstance(doc.get("plan"), dict):
        raise _fail(source, "plan", "must be an elk-plan/1 object")
    bounds = doc.get("bounds")
    if not isinstance(bounds, list) or not bounds:
        raise _fail(source, "bounds", "must be a non-empty list")
    for k, b in enumerate(bounds):
        where = f"bounds[{k}]"
        if not isinstance(b, dict):
            raise _fail(source, where, "must be an object")
        if not isinstance(b.get("name"), str) or not isinstance(b.get("status"), str):
            raise _fail(source, where, "name and status must be strings")
        if "ns" not in b:
            raise _fail(source, f"{where}.ns", "missing (a non-negative integer, or null)")
        if b["ns"] is not None and not is_count(b["ns"]):
            raise _fail(source, f"{where}.ns", f"must be a non-negative integer or null, "
                                               f"got {b['ns']!r}")
        wall = b.get("wall_s")
        if not isinstance(wall, int | float) or isinstance(wall, bool) or not wall >= 0:
            raise _fail(source, f"{where}.wall_s", f"must be a non-negative number, got {wall!r}")
        if b.get("exec_order") not in EXEC_ORDERS:
            raise _fail(source, f"{where}.exec_order", f"must be instance or any, got "
                                                       f"{b.get('exec_order')!r}")
        if not isinstance(b.get("params"), dict):
            raise _fail(source, f"{where}.params", "must be an object")


def _plan(raw: dict[str, Any], source: str, where: str, timing: str,
          out: Checked) -> Plan | None:
    """Check one embedded plan with `verify`; its parsed form when it can be timed."""
    from verify import check
    from verify.reading import Malformed

    try:
        report = check(raw)
    except Malformed as e:
        raise InputError(f"{source}: {where}: unreadable plan: {e}") from None
    out.problems += [f"{where}: {v.message}" for v in report.violations]
    if raw.get("timing", "separate-noc") != timing:
        out.problems.append(f"{where}: timing {raw.get('timing', 'separate-noc (absent)')} "
                            f"is not the certificate's {timing}")
    if report.unchecked:
        return None
    return plan_from_dict(raw, f"{source}: {where}")


def check(doc: Any, source: str = "<certificate>", *, max_recompute_s: float = 30.0,
          progress: bool = False) -> Checked:
    """Every problem of the certificate `doc` (parsed JSON), and which bounds were
    recomputed; InputError when it is not readable as a certificate."""
    _structure(doc, source)
    out = Checked()
    timing = doc["timing"]
    makespan, lower = doc["makespan_ns"], doc["lower_bound_ns"]
    plan = _plan(doc["plan"], source, "plan", timing, out)
    order = exec_order(plan) if plan is not None else None
    if plan is not None:
        actual = evaluate(plan.instance, plan.choice, plan.program, plan.release_ns,
                          timing=timing).makespan_ns
        if actual != makespan:
            out.problems.append(f"makespan_ns {makespan:,} is not the plan's analytic makespan "
                                f"{actual:,} ns ({timing})")
    listed = [b["ns"] for b in doc["bounds"] if b["ns"] is not None]
    if not listed:
        out.problems.append("bounds: none has a value")
    elif lower != max(listed):
        out.problems.append(f"lower_bound_ns {lower:,} is not the largest listed bound "
                            f"({max(listed):,} ns)")
    if lower > makespan:
        out.problems.append(f"lower_bound_ns {lower:,} is above makespan_ns {makespan:,}")
    expected = gap(makespan, lower)
    written = doc["gap"]
    if (expected is None) != (written is None) or (
            expected is not None and abs(written - expected) > GAP_TOLERANCE * max(1, expected)):
        out.problems.append(f"gap {written} is not makespan / lower bound - 1 = {expected}")
    memo: dict[tuple, Any] = {}  # layer windows shared by the rows built on them
    doubted: dict[int, str] = {}
    for k, b in enumerate(doc["bounds"]):
        doubt = _bound(k, b, timing, order, plan, out, max_recompute_s, progress, memo)
        if doubt is not None:
            doubted[k] = doubt
    rests_on = max((b["ns"] for k, b in enumerate(doc["bounds"])
                    if b["ns"] is not None and k not in doubted), default=0)
    for k, doubt in doubted.items():
        if doc["bounds"][k]["ns"] > rests_on:
            out.problems.append(f"{doubt}; lower_bound_ns rests on it")
        else:
            out.unconfirmed.append(doubt)
    if "better_plan" in doc:
        _better(doc["better_plan"], source, timing, makespan, lower, out)
        if doc["better_plan"]["plan"].get("instance") != doc["plan"].get("instance"):
            out.problems.append("better_plan: its instance is not the certified plan's")
    return out


def _bound(k: int, b: dict[str, Any], timing: str, order: str | None, plan: Plan | None,
           out: Checked, max_recompute_s: float, progress: bool,
           memo: dict[tuple, Any]) -> str | None:
    """Check one bound entry into `out`; a time-limited bound that came out lower again is
    returned instead (what is wrong with it), for `check` to judge."""
    name = f"bounds[{k}] {b['name']}"
    timings = b.get("timings", [timing])
    if not isinstance(timings, list) or timing not in timings:
        out.problems.append(f"{name}: holds for {timings}, not for the certificate's {timing}")
    if order is not None and not covers(b["exec_order"], order):  # type: ignore[arg-type]
        out.problems.append(f"{name}: holds for the instance's execution order only, and the "
                            "plan executes in another")
    if b["ns"] is None:
        return None
    if b["status"] == SOLVER_STATUS:
        out.not_recomputed.append(f"{b['name']} (an exact method's own bound)")
        return None
    if b["wall_s"] > max_recompute_s:
        out.not_recomputed.append(f"{b['name']} (took {b['wall_s']:g} s > {max_recompute_s:g})")
        return None
    if plan is None:
        out.not_recomputed.append(f"{b['name']} (the plan's instance cannot be read)")
        return None
    say(f"recomputing {b['name']} (recorded {b['wall_s']:g} s)...", enabled=progress)
    try:
        value = recompute(plan.instance, timing, b["name"], b["params"],  # type: ignore[arg-type]
                          memo)
    except UsageError as e:
        out.problems.append(f"{name}: cannot be recomputed: {e}")
        return None
    except (TypeError, KeyError, ValueError) as e:
        out.problems.append(f"{name}: params {b['params']} do not reproduce it ({e})")
        return None
    if (value is None or value < b["ns"]) and b["status"] == "time-limit":
        # A search stopped by its clock reaches a different bound on a busier machine; with
        # more time the recomputed value is still a bound, and one at or above the recorded
        # value confirms it.
        value = recompute(plan.instance, timing, b["name"],  # type: ignore[arg-type]
                          _more_time(b["params"]), memo)
    out.recomputed.append(b["name"])
    if value is not None and value >= b["ns"]:
        return None
    got = "it did not finish" if value is None else f"{value:,} ns"
    if b["status"] == "time-limit":
        return (f"{name}: recorded {b['ns']:,} ns at its time limit; recomputed with "
                f"{RETRY_TIME_FACTOR}x that limit: {got}")
    out.problems.append(f"{name}: recorded {b['ns']:,} ns; recomputed with its params: {got}")
    return None


RETRY_TIME_FACTOR = 4


def _more_time(params: dict[str, Any]) -> dict[str, Any]:
    """`params` with every time limit (a key ending in `time_s` or `time_limit_s`) made
    RETRY_TIME_FACTOR times longer."""
    return {k: v * RETRY_TIME_FACTOR if k.endswith("time_s") and isinstance(v, int | float)
            and not isinstance(v, bool) else v for k, v in params.items()}


def _better(raw: Any, source: str, timing: str, makespan: int, lower: int,
            out: Checked) -> None:
    if not isinstance(raw, dict) or not isinstance(raw.get("plan"), dict) \
            or not is_count(raw.get("makespan_ns")):
        raise _fail(source, "better_plan", "must hold makespan_ns and an elk-plan/1 plan")
    plan = _plan(raw["plan"], source, "better_plan.plan", timing, out)
    if plan is None:
        return
    actual = evaluate(plan.instance, plan.choice, plan.program, plan.release_ns,
                      timing=timing).makespan_ns
    if actual != raw["makespan_ns"]:
        out.problems.append(f"better_plan.makespan_ns {raw['makespan_ns']:,} is not its plan's "
                            f"analytic makespan {actual:,} ns")
    if actual >= makespan:
        out.problems.append(f"better_plan: {actual:,} ns is not better than {makespan:,} ns")
    if actual < lower:
        out.problems.append(f"better_plan: {actual:,} ns is below lower_bound_ns {lower:,}")
