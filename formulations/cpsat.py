"""The CP-SAT model (OR-Tools) of DESIGN.md sections 4-5, and the `cpsat` method.

Per op: one Boolean per undominated compatible pair (exactly one true); issue literals
`issued[j, i]` = "P<j> comes before E<i>" for i < j, monotone in i (their prefix form is the
slot); an optional HBM interval for the load (absent when the chosen pair loads nothing), all
loads in one no-overlap so the preload order is free; executes chained in the instance's order.
Rule R5 is one linear row per execute over the pending-space variables of the later ops.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations

from ortools.sat.python import cp_model

from elk_opt.errors import UsageError
from elk_opt.evaluate import evaluate
from elk_opt.problem import Choice, Instance, Plan
from elk_opt.solution import SolveOptions, make_plan
from formulations.common import (
    Pair,
    Restrictions,
    claimed_bound,
    decode_program,
    fallback,
    feasible_pairs,
    horizon,
    remaining,
    warm_decisions,
)
from formulations.deadline import NO_DEADLINE, Deadline, OutOfTime


@dataclass
class CpsatModel:
    """The model and the handles needed to read a solution back."""

    model: cp_model.CpModel
    pairs: list[list[Pair]]
    pick: list[list[cp_model.IntVar]]  # per op, per pair
    issued: dict[tuple[int, int], cp_model.IntVar]  # (j, i): P<j> before E<i>, i < j
    load_start: list[cp_model.IntVar | int]
    exec_start: list[cp_model.IntVar]
    exec_end: list[cp_model.IntVar]
    makespan: cp_model.IntVar
    aux: dict[str, dict] = field(default_factory=dict)  # load size/end/presence, pending space
    hinted: bool = field(default=False)


def build(instance: Instance, restrict: Restrictions,
          fixed: Mapping[int, tuple[int, int]] | None = None,
          pairs: list[list[Pair]] | None = None, free_first: bool = False,
          chain: Sequence[int] = (), deadline: Deadline = NO_DEADLINE) -> CpsatModel:
    """Build the model; `fixed[j] = (pair index, slot)` pins op j's decisions and `chain`
    lists ops whose loads keep that order on the HBM (both used by polish).

    `free_first` relaxes it for the window bound: loads issued before the first execute
    take no time (they happened before the window began). Raises OutOfTime when `deadline`
    passes first (checked once per op in the loops).
    """
    pairs = pairs if pairs is not None else feasible_pairs(instance)
    fixed = fixed or {}
    n = len(pairs)
    sram = instance.chip.sram_bytes
    big = horizon(pairs)
    m = cp_model.CpModel()

    pick: list[list[cp_model.IntVar]] = []
    for j, ps in enumerate(pairs):
        row = [m.new_bool_var(f"pick{j}_{k}") for k in range(len(ps))]
        m.add_exactly_one(row)
        if j in fixed:
            m.add(row[fixed[j][0]] == 1)
        pick.append(row)

    def total(j: int, attr: str) -> cp_model.LinearExprT:
        return sum(getattr(a, attr) * b for a, b in zip(pairs[j], pick[j], strict=True))

    exec_start = [m.new_int_var(0, big, f"es{i}") for i in range(n)]
    exec_end = [m.new_int_var(0, big, f"ee{i}") for i in range(n)]
    for i in range(n):
        deadline.check()
        m.add(exec_end[i] == exec_start[i] + total(i, "run_ns"))
        if i:
            m.add(exec_start[i] >= exec_end[i - 1])

    loads = [j for j in range(n) if any(a.load_ns for a in pairs[j])]
    issued: dict[tuple[int, int], cp_model.IntVar] = {}
    load_start: list[cp_model.IntVar | int] = [0] * n
    intervals = []
    load_end: dict[int, cp_model.IntVar] = {}
    load_len: dict[int, cp_model.IntVar] = {}
    load_on: dict[int, cp_model.IntVar] = {}
    for j in loads:
        deadline.check()
        low = fixed[j][1] if j in fixed else restrict.slot_low(j)
        start = m.new_int_var(0, big, f"ls{j}")
        prev = None
        for i in range(low, j):
            lit = m.new_bool_var(f"issued{j}_{i}")
            issued[j, i] = lit
            m.add(start >= exec_end[i]).only_enforce_if(~lit)
            if prev is not None:
                m.add_implication(prev, lit)
            prev = lit
        if j in fixed:
            for i in range(low, j):
                m.add(issued[j, i] == int(i >= fixed[j][1]))
        if low > 0:
            m.add(start >= exec_end[low - 1])
        load_start[j] = start
        if free_first and low == 0 and j == 0:
            continue  # loaded before the window: takes no time inside it
        size = load_len[j] = m.new_int_var_from_domain(
            cp_model.Domain.from_values(sorted({a.load_ns for a in pairs[j]})), f"ln{j}")
        m.add(size == total(j, "load_ns"))
        end = load_end[j] = m.new_int_var(0, big, f"le{j}")
        m.add(end == start + size)
        loading = [b for a, b in zip(pairs[j], pick[j], strict=True) if a.load_ns > 0]
        on = None
        if len(loading) < len(pairs[j]):
            on = load_on[j] = m.new_bool_var(f"loads{j}")
            m.add(sum(loading) == on)
        if free_first and low == 0:  # issued before the window: free, takes no HBM time
            late = m.new_bool_var(f"late{j}")
            m.add(late == 1 - issued[j, 0])
            if on is not None:
                both = m.new_bool_var(f"on_late{j}")
                m.add_multiplication_equality(both, [on, late])
                on = both
            else:
                on = late
            m.add(exec_start[j] >= end).only_enforce_if(late)
        else:
            m.add(exec_start[j] >= end)
        intervals.append(m.new_interval_var(start, size, end, f"load{j}") if on is None else
                         m.new_optional_interval_var(start, size, end, on, f"load{j}"))
    m.add_no_overlap(intervals)

    pending: dict[int, list] = {i: [] for i in range(n)}
    pend: dict[tuple[int, int], cp_model.IntVar] = {}
    for (j, i), lit in issued.items():
        top = max(a.load_space for a in pairs[j])
        if top > 0:
            space = pend[j, i] = m.new_int_var(0, top, f"pend{j}_{i}")
            m.add(space >= total(j, "load_space")).only_enforce_if(lit)
            pending[i].append(space)
    for i in range(n):
        deadline.check()
        m.add(total(i, "run_space") + sum(pending[i]) <= sram)
    if restrict.max_pending is not None:
        for i in range(n):
            lits = [lit for (_j, k), lit in issued.items() if k == i]
            if len(lits) > restrict.max_pending:
                m.add(sum(lits) <= restrict.max_pending)
    if restrict.fifo:
        for a, b in zip(loads, loads[1:], strict=False):
            for i in range(restrict.slot_low(b), a):
                if (b, i) in issued:
                    m.add_implication(issued[b, i], issued[a, i])
        # Loads that move data keep execution order; an op that may load nothing breaks the
        # chain's transitivity, so then every pair is ordered.
        ordered = combinations(loads, 2) if load_on else zip(loads, loads[1:], strict=False)
        for a, b in ordered:
            both = [load_on[x] for x in (a, b) if x in load_on]
            m.add(load_end[a] <= load_start[b]).only_enforce_if(both)
    for a, b in zip(chain, chain[1:], strict=False):
        m.add(load_end[a] <= load_start[b])
    makespan = exec_end[-1]
    m.minimize(makespan)
    aux = {"end": load_end, "len": load_len, "on": load_on, "pend": pend}
    return CpsatModel(m, pairs, pick, issued, load_start, exec_start, exec_end, makespan, aux)


def add_hint(cm: CpsatModel, instance: Instance, plan: Plan | None) -> None:
    """Hint the solver with a plan's decisions (when it executes in the instance's order)."""
    warm = warm_decisions(instance, plan)
    if warm is None:
        return
    choice, slot, load_start = warm
    hint = cm.model.add_hint
    picked = []
    for j, (c, ps) in enumerate(zip(choice, cm.pairs, strict=True)):
        k = hint_index(instance, j, c, ps)
        picked.append(ps[k])
        for kk, b in enumerate(cm.pick[j]):
            hint(b, kk == k)
    # Times replayed with the hinted pairs (which may dominate the plan's own).
    run = [a.run_ns for a in picked]
    exec_end: list[int] = []
    for j, a in enumerate(picked):
        start = load_start[j] if j in cm.aux["len"] else 0
        ready = max(exec_end[-1] if exec_end else 0, start + a.load_ns)
        exec_end.append(ready + run[j])
        hint(cm.exec_start[j], ready)
        hint(cm.exec_end[j], exec_end[j])
        if j in cm.aux["len"]:
            hint(cm.load_start[j], start)
            hint(cm.aux["len"][j], a.load_ns)
            hint(cm.aux["end"][j], start + a.load_ns)
        if j in cm.aux["on"]:
            hint(cm.aux["on"][j], a.load_ns > 0)
    for (j, i), lit in cm.issued.items():
        hint(lit, i >= slot[j])
    for (j, i), v in cm.aux["pend"].items():
        hint(v, picked[j].load_space if i >= slot[j] else 0)
    cm.hinted = True


def hint_index(instance: Instance, j: int, c: Choice, ps: Sequence[Pair]) -> int:
    """Index of the plan's pair among the kept ones, or of one that dominates it."""
    op = instance.ops[j]
    for k, a in enumerate(ps):
        if (a.preload, a.exec) == (c.preload, c.exec):
            return k
    q, p = op.preload_by_id[c.preload], op.exec_by_id[c.exec]
    run = p.time_ns + op.warmup_ns[(c.preload, c.exec)]
    for k, a in enumerate(ps):
        if (a.load_ns <= q.load_ns and a.load_space <= q.space_bytes and a.run_ns <= run
                and a.run_space <= p.space_bytes):
            return k
    return 0


def solver_for(options: SolveOptions, time_limit_s: float | None) -> cp_model.CpSolver:
    solver = cp_model.CpSolver()
    prm = solver.parameters
    if time_limit_s is not None:
        prm.max_time_in_seconds = time_limit_s
    prm.num_workers = options.threads or 2
    prm.random_seed = options.seed
    if options.work_limit is not None:  # repeatable: a deterministic budget, and with several
        prm.max_deterministic_time = options.work_limit  # workers, interleaved in batches
        prm.interleave_search = prm.num_workers > 1
    if options.gap is not None:
        prm.relative_gap_limit = options.gap
    if options.verbose:
        prm.log_search_progress = True
        prm.log_to_stdout = False
        solver.log_callback = lambda line: print(line, file=sys.stderr)
    return solver


def read_choice(cm: CpsatModel, solver: cp_model.CpSolver) -> tuple[list[Choice], list[int],
                                                                     list[int], list[int]]:
    """Chosen pairs, load starts, load times and execute ends of the solver's solution."""
    choice, starts, lens = [], [], []
    for j, ps in enumerate(cm.pairs):
        a = next(a for a, b in zip(ps, cm.pick[j], strict=True) if solver.boolean_value(b))
        choice.append(Choice(exec=a.exec, preload=a.preload))
        lens.append(a.load_ns)
        ls = cm.load_start[j]
        starts.append(ls if isinstance(ls, int) else solver.value(ls))
    ends = [solver.value(e) for e in cm.exec_end]
    return choice, starts, lens, ends


def solve(instance: Instance, options: SolveOptions) -> Plan:
    started = time.perf_counter()
    restrict = Restrictions.from_params(options.params)
    try:
        cm = build(instance, restrict, deadline=Deadline.after(options.time_limit_s, started))
    except OutOfTime:
        plan = fallback(instance, options.warm_plan, "cpsat", started, None,
                        {**restrict.claims(), "solver": "cp-sat", "solver_status":
                         "time limit reached before the model was built"}, options.timing)
        if plan is not None:
            return plan
        raise UsageError(f"cpsat could not build its model of {len(instance.ops)} ops within "
                         f"{options.time_limit_s:g} s (give --warm-start METHOD to get that "
                         "plan back instead, or a longer --time-limit)") from None
    add_hint(cm, instance, options.warm_plan)
    solver = solver_for(options, remaining(options.time_limit_s, started))
    status = solver.solve(cm.model)
    params = {**restrict.claims(), "solver": "cp-sat",
              "solver_status": solver.status_name(status)}
    if options.warm_start and cm.hinted:
        params["warm_start"] = options.warm_start
    if status == cp_model.INFEASIBLE:
        raise UsageError(f"instance {instance.name!r} is infeasible"
                         + (f" under {restrict.claims()}" if restrict != Restrictions() else ""))
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        bound = solver.best_objective_bound if status == cp_model.UNKNOWN else None
        plan = fallback(instance, options.warm_plan, "cpsat", started, bound, params,
                        options.timing)
        if plan is not None:
            return plan
        raise UsageError(f"cpsat found no plan within {options.time_limit_s} s "
                         "(try a longer --time-limit or --warm-start)")
    choice, starts, lens, ends = read_choice(cm, solver)
    program = decode_program(starts, lens, ends)
    objective = round(solver.objective_value)
    plan = make_plan(instance, choice, program, method="cpsat", started=started,
                     timing=options.timing, params={**params, "model_timing": "separate-noc"})
    return finish(plan, objective, solver.best_objective_bound, started, "cpsat")


def finish(plan: Plan, objective: int, bound: float, started: float, method: str) -> Plan:
    """Claim the solver's bound; `optimal` exactly when the bound meets the makespan.

    The model is section 5's; its bound also holds for section 5b (sharing only slows).
    """
    assert plan.claims is not None
    modelled = evaluate(plan.instance, plan.choice, plan.program, plan.release_ns,
                        timing="separate-noc").makespan_ns
    if modelled > objective:
        raise AssertionError(f"{method}: replayed makespan {modelled} above objective {objective}")
    makespan = plan.claims.makespan_ns
    lower = claimed_bound(plan.instance, bound, makespan)
    return make_plan(plan.instance, plan.choice, plan.program, method=method, started=started,
                     timing=plan.timing, status="optimal" if lower == makespan else "feasible",
                     lower_bound_ns=lower, params=plan.claims.params)
