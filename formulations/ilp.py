"""The ILP model (PuLP) of DESIGN.md sections 4-5, the `ilp` method and the LP relaxation bound.

A different encoding from the CP-SAT model, so each checks the other:
- `pick[j, k]` one-hot pairs; `at[j, b]` one-hot issue slot, with prefix sums
  `by(j, i) = sum_{b <= i} at[j, b]` = "P<j> comes before E<i>";
- continuous start times; a load issued after E<i> waits for it: ls_j >= ee_i - M by(j, i);
- order binaries only between loads j < k that may be reordered (slot of k <= j possible);
  loads further apart are ordered by their slots already (ls_k >= ee_j >= le_j);
- R5 rows over products `pend[j, q, i] >= use[j, q] + by(j, i) - 1` of preload-plan choice and
  slot prefix (continuous: the row only pushes them down);
- valid cut: all loads of ops up to k end before E<k> starts, es_k >= sum_{j <= k} load_j.
HiGHS runs in-process through highspy by default; CBC (PuLP's bundled binary) on request.
"""

from __future__ import annotations

import math
import os
import sys
import time
from dataclasses import dataclass, replace

import highspy
import pulp

from elk_opt.errors import UsageError
from elk_opt.evaluate import evaluate
from elk_opt.problem import Choice, Instance, Plan
from elk_opt.solution import SolveOptions, make_plan
from formulations.common import (
    Pair,
    Restrictions,
    ceil_integer,
    claimed_bound,
    decode_program,
    fallback,
    feasible_pairs,
    hint_index,
    horizon,
    remaining,
    warm_decisions,
)

SOLVERS = ("highs", "cbc")


@dataclass
class IlpModel:
    prob: pulp.LpProblem
    pairs: list[list[Pair]]
    pick: list[list[pulp.LpVariable]]
    at: dict[tuple[int, int], pulp.LpVariable]  # (j, slot b)
    order: dict[tuple[int, int], pulp.LpVariable]  # (j, k), j < k: load j before load k
    load_start: list[pulp.LpVariable | None]
    exec_start: list[pulp.LpVariable]
    exec_end: list[pulp.LpVariable]
    pend: dict[tuple[int, int, int], pulp.LpVariable]  # (j, pair index, i)
    prefix: dict[tuple[int, int], pulp.LpVariable]  # (j, i): P<j> before E<i>
    loads: list[int]


def build(instance: Instance, restrict: Restrictions, relax: bool = False) -> IlpModel:
    """The model; `relax` makes every binary continuous and leaves out the pairwise HBM rows
    (a relaxation of the LP relaxation, so still a lower bound, and much smaller)."""
    pairs = feasible_pairs(instance)
    n = len(pairs)
    sram = instance.chip.sram_bytes
    big = horizon(pairs)
    cat = pulp.LpContinuous if relax else pulp.LpBinary
    prob = pulp.LpProblem("elk", pulp.LpMinimize)

    def binary(name: str) -> pulp.LpVariable:
        return pulp.LpVariable(name, 0, 1, cat)

    pick = [[binary(f"pick_{j}_{k}") for k in range(len(ps))] for j, ps in enumerate(pairs)]
    for j, row in enumerate(pick):
        prob += pulp.lpSum(row) == 1, f"one_pair_{j}"

    def total(j: int, attr: str) -> pulp.LpAffineExpression:
        return pulp.lpSum(getattr(a, attr) * v for a, v in zip(pairs[j], pick[j], strict=True))

    es = [pulp.LpVariable(f"es_{i}", 0) for i in range(n)]
    ee = [pulp.LpVariable(f"ee_{i}", 0) for i in range(n)]
    for i in range(n):
        prob += ee[i] == es[i] + total(i, "run_ns"), f"run_{i}"
        if i:
            prob += es[i] >= ee[i - 1], f"chain_{i}"
        prob += es[i] >= pulp.lpSum(total(j, "load_ns") for j in range(i + 1)), f"hbm_cut_{i}"

    loads = [j for j in range(n) if any(a.load_ns for a in pairs[j])]
    at: dict[tuple[int, int], pulp.LpVariable] = {}
    ls: list[pulp.LpVariable | None] = [None] * n

    prefix: dict[tuple[int, int], pulp.LpVariable] = {}

    def by(j: int, i: int) -> pulp.LpVariable | int:
        """The prefix sum of op j's slot binaries up to i, kept as a variable for sparsity."""
        return prefix.get((j, i), 0)

    for j in loads:
        low = restrict.slot_low(j)
        slots = [binary(f"at_{j}_{b}") for b in range(low, j + 1)]
        at.update({(j, b): v for b, v in zip(range(low, j + 1), slots, strict=True)})
        for i in range(low, j):
            prefix[j, i] = pulp.LpVariable(f"by_{j}_{i}", 0, 1)
            below = prefix[j, i - 1] if i > low else 0
            prob += prefix[j, i] == below + at[j, i], f"prefix_{j}_{i}"
        prob += pulp.lpSum(slots) == 1, f"one_slot_{j}"
        ls[j] = pulp.LpVariable(f"ls_{j}", 0)
        prob += es[j] >= ls[j] + total(j, "load_ns"), f"loaded_{j}"
        if low > 0:
            prob += ls[j] >= ee[low - 1], f"issue_{j}_{low - 1}"
        for i in range(low, j):
            prob += ls[j] >= ee[i] - big * by(j, i), f"issue_{j}_{i}"

    order: dict[tuple[int, int], pulp.LpVariable] = {}
    for x, j in enumerate([] if relax else loads):
        zero_j = _zero_load(pairs, pick, j)
        for k in loads[x + 1:]:
            if restrict.slot_low(k) > j:
                continue  # k is issued after E<j>, so after load j ended
            o = binary(f"order_{j}_{k}")
            order[j, k] = o
            relaxed = big * (zero_j + _zero_load(pairs, pick, k))
            prob += (ls[k] >= ls[j] + total(j, "load_ns") - big * (1 - o) - relaxed,
                     f"hbm_{j}_{k}")
            prob += (ls[j] >= ls[k] + total(k, "load_ns") - big * o - relaxed, f"hbm_{k}_{j}")
            prob += o >= 1 - by(k, j), f"slot_order_{j}_{k}"
            if restrict.fifo:
                prob += o == 1, f"fifo_{j}_{k}"
        if restrict.fifo:
            nxt = next((k for k in loads[x + 1:]), None)
            if nxt is not None:
                for i in range(restrict.slot_low(nxt), j):
                    prob += by(nxt, i) <= by(j, i), f"fifo_slot_{j}_{nxt}_{i}"

    pend: dict[tuple[int, int, int], pulp.LpVariable] = {}
    for i in range(n):
        row = [total(i, "held_space")]
        count = []
        for j in loads:
            if j <= i or restrict.slot_low(j) > i:
                continue
            issued = by(j, i)
            count.append(issued)
            for k, a in enumerate(pairs[j]):
                if a.load_space > 0:
                    v = pulp.LpVariable(f"pend_{j}_{k}_{i}", 0, 1)
                    pend[j, k, i] = v
                    prob += v >= pick[j][k] + issued - 1, f"pend_{j}_{k}_{i}"
                    row.append(a.load_space * v)
        prob += pulp.lpSum(row) <= sram, f"sram_{i}"
        if restrict.max_pending is not None and count:
            prob += pulp.lpSum(count) <= restrict.max_pending, f"max_pending_{i}"
    prob += ee[-1]
    return IlpModel(prob, pairs, pick, at, order, ls, es, ee, pend, prefix, loads)


def _zero_load(pairs: list[list[Pair]], pick: list[list[pulp.LpVariable]],
               j: int) -> pulp.LpAffineExpression:
    """1 when op j's chosen pair loads nothing (its load then occupies no HBM time)."""
    return pulp.lpSum(v for a, v in zip(pairs[j], pick[j], strict=True) if a.load_ns == 0)


def set_warm_values(im: IlpModel, instance: Instance, plan: Plan | None) -> bool:
    """Give every variable the value of the plan's solution; False if the plan is unusable."""
    warm = warm_decisions(instance, plan)
    if warm is None:
        return False
    choice, slot = warm.choice, warm.slot
    picked = [hint_index(instance, j, c, ps) for j, (c, ps) in
              enumerate(zip(choice, im.pairs, strict=True))]
    # Time the plan with the model's pairs (a kept pair may dominate the plan's own).
    kept = [Choice(exec=ps[k].exec, preload=ps[k].preload) for ps, k in
            zip(im.pairs, picked, strict=True)]
    schedule = evaluate(instance, kept, plan.program, plan.release_ns,  # type: ignore[union-attr]
                        timing="separate-noc")  # the model's semantics
    starts = schedule.load_start
    for j, row in enumerate(im.pick):
        for k, v in enumerate(row):
            v.setInitialValue(int(k == picked[j]))
    for (j, b), v in im.at.items():
        v.setInitialValue(int(b == slot[j]))
    for (j, k), v in im.order.items():
        v.setInitialValue(int(starts[j] <= starts[k]))
    for j, v in enumerate(im.load_start):
        if v is not None:
            v.setInitialValue(starts[j])
    for i in range(len(im.pairs)):
        im.exec_start[i].setInitialValue(schedule.exec_start[i])
        im.exec_end[i].setInitialValue(schedule.exec_end[i])
    for (j, i), v in im.prefix.items():
        v.setInitialValue(int(slot[j] <= i))
    for (j, k, i), v in im.pend.items():
        v.setInitialValue(int(k == picked[j] and slot[j] <= i))
    return True


class _Highs(pulp.HiGHS):
    """PuLP's in-process HiGHS, handing the variables' initial values to HiGHS as a start.

    HiGHS prints a banner on stdout when created; it goes to stderr instead, so commands that
    print results on stdout stay clean.
    """

    def createAndConfigureSolver(self, lp: pulp.LpProblem) -> None:  # noqa: N802
        sys.stdout.flush()
        saved = os.dup(1)
        try:
            os.dup2(2, 1)
            super().createAndConfigureSolver(lp)
        finally:
            os.dup2(saved, 1)
            os.close(saved)

    def callSolver(self, lp: pulp.LpProblem) -> None:  # noqa: N802 (PuLP's name)
        values = [v.varValue for v in lp.variables()]
        if all(x is not None for x in values):
            sol = highspy.HighsSolution()
            sol.col_value = [float(x) for x in values]
            sol.value_valid = True
            lp.solverModel.setSolution(sol)
        lp.solverModel.run()


@dataclass(frozen=True)
class Outcome:
    proven: bool
    has_solution: bool
    objective: float | None
    bound: float | None
    status: str


def run_solver(im: IlpModel, options: SolveOptions, solver: str, warm: bool) -> Outcome:
    gap = options.gap if options.gap is not None else 0.0
    if solver == "highs":
        extra = {"mip_feasibility_tolerance": 1e-9, "primal_feasibility_tolerance": 1e-9,
                 "random_seed": options.seed}
        backend = _Highs(
            msg=options.verbose, timeLimit=options.time_limit_s, gapRel=gap, gapAbs=0.0,
            threads=options.threads or 2, **extra)
        im.prob.solve(backend)
        h = im.prob.solverModel
        info = h.getInfo()
        status = h.getModelStatus()
        has = info.primal_solution_status == 2
        return Outcome(proven=status == highspy.HighsModelStatus.kOptimal and gap == 0.0,
                       has_solution=has,
                       objective=info.objective_function_value if has else None,
                       bound=info.mip_dual_bound if math.isfinite(info.mip_dual_bound) else None,
                       status=h.modelStatusToString(status))
    backend = pulp.PULP_CBC_CMD(msg=options.verbose, timeLimit=options.time_limit_s,
                                gapRel=gap, threads=options.threads or 2, warmStart=warm)
    im.prob.solve(backend)
    has = im.prob.sol_status in (pulp.LpSolutionOptimal, pulp.LpSolutionIntegerFeasible)
    objective = pulp.value(im.prob.objective) if has else None
    proven = im.prob.sol_status == pulp.LpSolutionOptimal and gap == 0.0
    return Outcome(proven=proven, has_solution=has, objective=objective,
                   bound=objective if proven else None,
                   status=pulp.LpStatus[im.prob.status])


def read_solution(im: IlpModel) -> tuple[list[Choice], list[int], list[int], list[int]]:
    choice, starts, lens = [], [], []
    for j, ps in enumerate(im.pairs):
        k = max(range(len(ps)), key=lambda k: im.pick[j][k].varValue or 0.0)
        choice.append(Choice(exec=ps[k].exec, preload=ps[k].preload))
        lens.append(ps[k].load_ns)
        v = im.load_start[j]
        starts.append(round(v.varValue or 0.0) if v is not None else 0)
    ends = [round(v.varValue or 0.0) for v in im.exec_end]
    return choice, starts, lens, ends


def solve(instance: Instance, options: SolveOptions) -> Plan:
    started = time.perf_counter()
    params = dict(options.params)
    solver = params.pop("solver", "highs")
    if solver not in SOLVERS:
        raise UsageError(f"ilp solver must be one of {', '.join(SOLVERS)}, got {solver!r}")
    restrict = Restrictions.from_params(params)
    im = build(instance, restrict)
    warm = set_warm_values(im, instance, options.warm_plan)
    out = run_solver(im, replace(options, time_limit_s=remaining(options.time_limit_s, started)),
                     solver, warm)
    claims = {**restrict.claims(), "solver": solver, "solver_status": out.status}
    if warm and options.warm_start:
        claims["warm_start"] = options.warm_start
    if not out.has_solution:
        if out.status.lower() == "infeasible":
            raise UsageError(f"instance {instance.name!r} is infeasible")
        plan = fallback(instance, options.warm_plan, "ilp", started, out.bound, claims,
                        options.timing)
        if plan is not None:
            return plan
        raise UsageError(f"ilp found no plan within {options.time_limit_s} s "
                         "(try a longer --time-limit or --warm-start)")
    choice, starts, lens, ends = read_solution(im)
    program = decode_program(starts, lens, ends)
    claims["model_timing"] = "separate-noc"
    plan = make_plan(instance, choice, program, method="ilp", started=started,
                     timing=options.timing, params=claims)
    assert plan.claims is not None
    makespan = plan.claims.makespan_ns
    bound = out.bound if out.bound is not None else (out.objective if out.proven else None)
    lower = claimed_bound(instance, bound, makespan)
    return make_plan(instance, choice, program, method="ilp", started=started,
                     timing=options.timing, status="optimal" if lower == makespan else "feasible",
                     lower_bound_ns=lower, params=claims)


def lp_bound(instance: Instance, time_limit_s: float | None = None) -> int | None:
    """The LP relaxation of the unrestricted ILP, rounded up (None if HiGHS did not finish)."""
    im = build(instance, Restrictions(), relax=True)
    im.prob.solve(_Highs(msg=False, timeLimit=time_limit_s, mip=False))
    h = im.prob.solverModel
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None
    value = h.getInfo().objective_function_value
    return ceil_integer(value)

