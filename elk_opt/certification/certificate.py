"""The `elk-certificate/1` document (docs/spec.md section 3b): building one from a plan and bound
rows, and the few definitions that building and checking share.

The certificate states: `plan` (an `elk-plan/1` that `verify` accepts alone) has the analytic
makespan `makespan_ns` under `timing`, and no plan of the same instance under that timing, among
those executing in the orders the bound names, is faster than `lower_bound_ns`, the largest of
`bounds`. `gap` = makespan / lower bound - 1, 0 when both are 0 and null when only the bound is 0
(no finite ratio). A bound's `exec_order` is `any` (every topological order) or `instance` (only
plans that execute in the instance's order); every listed bound covers the plan's own order.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Literal

from elk_opt.bounds.limits import FLUID_BAND
from elk_opt.evaluate import evaluate
from elk_opt.io import plan_from_dict, plan_to_dict
from elk_opt.json_input import read_json
from elk_opt.problem import Claims, Plan, Timing

FORMAT = "elk-certificate/1"
ExecOrder = Literal["instance", "free"]
SOLVER_STATUS = "solver-proved"  # a bound an exact method proved: no cheap recomputation


def read_plan_or_certificate(path: str) -> tuple[Plan, dict[str, Any] | None]:
    """The plan in a plan file, or in a certificate (returned beside it), for the commands
    that take either."""
    raw = read_json(path)
    if isinstance(raw, dict) and raw.get("format") == FORMAT:
        return plan_from_dict(raw.get("plan"), f"{path}: plan"), raw
    return plan_from_dict(raw, path), None


def exec_order(plan: Plan) -> ExecOrder:
    """`instance` when the plan executes its ops in the instance's order, else `free`."""
    executes = [i for kind, i in plan.program if kind == "E"]
    return "instance" if executes == sorted(executes) else "free"


def covers(bound_order: str, plan_order: ExecOrder) -> bool:
    """Whether a bound holding for `bound_order` ("any" or "instance") bounds a plan that
    executes in `plan_order`."""
    return bound_order == "any" or plan_order == "instance"


def gap(makespan_ns: int, lower_bound_ns: int) -> float | None:
    if lower_bound_ns > 0:
        return makespan_ns / lower_bound_ns - 1
    return 0.0 if makespan_ns == 0 else None


def bound_entry(row: dict[str, Any]) -> dict[str, Any]:
    """A row of `elk_opt.bounds.run_all.lower_bounds` as a certificate's bound."""
    return {"name": row["bound"], "ns": row["ns"], "status": row["status"],
            "wall_s": round(row["wall_s"], 3), "exec_order": row["order"],
            "timings": [t.strip() for t in row["timings"].split(",") if t.strip()],
            "params": dict(row["params"]), "note": row["note"]}


def solver_bound_entry(plan: Plan, wall_s: float, params: dict[str, Any]) -> dict[str, Any]:
    """The bound an exact method claimed with its plan (its solver's bound, or the Ideal)."""
    assert plan.claims is not None and plan.claims.lower_bound_ns is not None
    c = plan.claims
    free = c.params.get("exec_order") == "free"  # the method solved over every order
    return {"name": c.method, "ns": c.lower_bound_ns, "status": SOLVER_STATUS,
            "wall_s": round(wall_s, 3), "exec_order": "any" if free else "instance",
            "timings": [plan.timing], "params": params,
            "note": f"{c.method}'s own proof, for "
                    + ("every execution order" if free else "the instance's execution order only")
                    + "; not recomputed by --check (rerun the method to reproduce it)"}


def cpsat_contiguous_entry(plan: Plan) -> dict[str, Any] | None:
    """The fluid MIP with loads run whole that `cpsat` solved after its search, as the row
    `run_all` gives for it (its params reproduce it for --check), when HiGHS finished it: a
    bound round then need not solve it again; None otherwise."""
    return _cpsat_mip_entry(plan, "fluid-contiguous", "fluid_contiguous",
                            "loads started and finished 0/1")


def cpsat_whole_ns_entry(plan: Plan) -> dict[str, Any] | None:
    """The same for that MIP with intervals of whole ns, which `cpsat` solves after it where
    its plan lies within a ns per interval of it (`formulations.cpsat_after._whole_ns`)."""
    return _cpsat_mip_entry(plan, "fluid-whole-ns", "fluid_whole_ns",
                            "loads started and finished 0/1, interval lengths integer")


def _cpsat_mip_entry(plan: Plan, name: str, key: str, what: str) -> dict[str, Any] | None:
    assert plan.claims is not None
    params = plan.claims.params
    if params.get(f"{key}_ns") is None or not params.get(f"{key}_complete"):
        return None
    return {"name": name, "ns": params[f"{key}_ns"], "status": "complete",
            "wall_s": params[f"{key}_s"], "exec_order": "instance",
            "timings": [plan.timing], "params": {"time_limit_s": None, "band": FLUID_BAND},
            "note": f"solved by cpsat after its search ({what})"}


def certified_claims(plan: Plan, lower_bound_ns: int) -> Claims | None:
    """The plan's claims with the certificate's bound: true by R6 (the bound is at most the
    makespan; `optimal` exactly when they meet, else `feasible`, or `heuristic` if it was)."""
    if plan.claims is None:
        return None
    c = plan.claims
    status = ("optimal" if lower_bound_ns == c.makespan_ns
              else "heuristic" if c.status == "heuristic" else "feasible")
    return replace(c, lower_bound_ns=lower_bound_ns, status=status)


def build(plan: Plan, timing: Timing, bounds: list[dict[str, Any]], *,
          better: Plan | None = None, search: dict[str, Any] | None = None) -> dict[str, Any]:
    """The certificate of `plan` with `bounds` (certificate entries, each valid under `timing`
    and covering the plan's execution order); `better`: a faster plan the search found."""
    if plan.timing != timing:
        raise ValueError(f"plan timing {plan.timing} is not the certificate's {timing}")
    makespan = evaluate(plan.instance, plan.choice, plan.program, plan.release_ns,
                        timing=timing).makespan_ns
    found = [b for b in bounds if b["ns"] is not None]
    lower = max(b["ns"] for b in found)
    if lower > makespan:
        raise AssertionError(f"a bound of {lower} ns is above the plan's {makespan} ns")
    # of the bounds that give it, named: one for every order first, then one --check recomputes
    winners = sorted((b for b in found if b["ns"] == lower),
                     key=lambda b: (b["exec_order"] != "any", b["status"] == SOLVER_STATUS))
    order = "any" if any(b["exec_order"] == "any" for b in winners) else "instance"
    doc: dict[str, Any] = {
        "format": FORMAT, "timing": timing, "makespan_ns": makespan, "lower_bound_ns": lower,
        "gap": gap(makespan, lower), "exec_order": order,
        "best_bound": winners[0]["name"],
        "plan": plan_to_dict(replace(plan, claims=certified_claims(plan, lower))),
        "bounds": bounds}
    if better is not None:
        assert better.claims is not None
        doc["better_plan"] = {
            "makespan_ns": better.claims.makespan_ns, "method": better.claims.method,
            "plan": plan_to_dict(replace(better, claims=certified_claims(better, lower)))}
    if search is not None:
        doc["search"] = search
    return doc
