"""The CP-SAT model (OR-Tools) of docs/spec.md sections 4-5 and 5b (the method: cpsat.py).

Per op: one Boolean per undominated compatible pair (exactly one true); issue literals
`issued[j, i]` = "P<j> comes before E<i>" for i < j, monotone in i (their prefix form is the
slot); an optional HBM interval for the load (absent when the chosen pair loads nothing), all
loads in one no-overlap so the preload order is free; executes chained in the instance's order,
or with `free=True` in any order the dependencies allow (`cpsat_order`).
Rule R5 is one linear row per execute over the pending-space variables of the later ops.
Under section 5b (`timing="shared-noc"`) lengths are variables no shorter than the durations,
and `cpsat_port` charges overlapping loads and executes their port losses exactly (see
contention.py for why that relaxation is exact).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import combinations

from ortools.sat.python import cp_model

from elk_opt.evaluate import Schedule, evaluate
from elk_opt.problem import Choice, Instance, Plan, Timing
from elk_opt.solution import SolveOptions, make_plan
from formulations.common import (
    ModelTimes,
    Pair,
    Restrictions,
    Warm,
    decode,
    feasible_pairs,
    hint_index,
    horizon,
    warm_decisions,
)
from formulations.contention import candidates, stretch_limit
from formulations.cpsat_order import FreeOrder, add_issue, add_order
from formulations.cpsat_port import (
    FixedLoad,
    PortVars,
    Span,
    add_port,
    fixed_losers,
    hint_port,
)
from formulations.deadline import NO_DEADLINE, Deadline
from formulations.replay import hinted_schedule, replay_shared


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
    timing: Timing = "separate-noc"
    exec_len: dict[int, cp_model.IntVar] = field(default_factory=dict)  # 5b: stretched ones
    port: PortVars | None = None  # 5b: the port layer
    order: FreeOrder | None = None  # free execution order: positions and order literals


def build(instance: Instance, restrict: Restrictions,
          fixed: Mapping[int, tuple[int, int]] | None = None,
          pairs: list[list[Pair]] | None = None, free_first: bool = False,
          chain: Sequence[int] = (), timing: Timing = "separate-noc",
          upper: int | None = None, lower: int | None = None,
          deadline: Deadline = NO_DEADLINE, free: bool = False,
          fixed_loads: Sequence[FixedLoad] = (), offset: int = 0) -> CpsatModel:
    """Build the model; `fixed[j] = (pair index, slot)` pins op j's decisions and `chain`
    lists ops whose loads keep that order on the HBM (both used by polish).

    `free_first` relaxes it for the window bound: loads issued before the first execute
    take no time (they happened before the window began). `timing` is the semantics
    modelled; `upper` and `lower` bound the makespan (a known plan's makespan and a known
    lower bound: every optimal schedule stays feasible). Raises OutOfTime when `deadline`
    passes first (checked once per op in the loops). `free`: the executes may run in any
    order the dependencies allow (R2), without restrictions, pins or chains. `fixed_loads`
    (5b): loads outside the model, at fixed times, that slow the executes beside them.
    `offset`: how late the model's work may begin (a region's boundary times): the horizon
    is counted from there.
    """
    shared = timing == "shared-noc"
    if shared and free_first:
        raise ValueError("free_first is a section-5 relaxation")
    if free and (fixed or chain or free_first or restrict != Restrictions()):
        raise ValueError("the free-order model takes no restrictions, pins or chains")
    pairs = pairs if pairs is not None else feasible_pairs(instance, timing)
    fixed = fixed or {}
    n = len(pairs)
    sram = instance.chip.sram_bytes
    big = offset + (horizon(pairs) if not shared else 1 + sum(
        max(stretch_limit(a.load_ns, a.load_d) for a in ps)
        + max(stretch_limit(a.run_ns, a.run_d) for a in ps) for ps in pairs))
    if upper is not None:
        big = min(big, upper)  # every time of a schedule ends by its makespan
    m = cp_model.CpModel()

    def lowest(j: int) -> int:
        return fixed[j][1] if j in fixed else restrict.slot_low(j)

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
    order = add_order(m, instance, exec_start, exec_end) if free else None
    found = candidates(pairs, lowest, deadline,
                       order.may_precede if order is not None else None) if shared else []
    stretch_load = {c.load for c in found if c.load_loses}
    stretch_exec = {c.exec for c in found if c.exec_loses} | (
        {i for _k, i in fixed_losers(pairs, fixed_loads)} if shared else set())
    exec_len: dict[int, cp_model.IntVar] = {}
    for i in range(n):
        deadline.check()
        if i in stretch_exec:
            length = exec_len[i] = m.new_int_var_from_domain(
                _lengths(pairs[i], "run_ns", "run_d"), f"el{i}")
            m.add(length >= total(i, "run_ns"))
            m.add(exec_end[i] == exec_start[i] + length)
        else:
            m.add(exec_end[i] == exec_start[i] + total(i, "run_ns"))
        if i and order is None:
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
        if order is not None:
            issued.update({(j, i): lit for i, lit in
                           add_issue(m, order, j, start, exec_end).items()})
        prev = None
        for i in range(low, j) if order is None else ():  # free: `add_issue` made them
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
        if j in stretch_load:
            size = load_len[j] = m.new_int_var_from_domain(
                _lengths(pairs[j], "load_ns", "load_d"), f"ln{j}")
            m.add(size >= total(j, "load_ns"))
        else:
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
        deadline.check()
        top = max(a.load_space for a in pairs[j])
        if top > 0:
            space = pend[j, i] = m.new_int_var(0, top, f"pend{j}_{i}")
            # pending at E<i> only if E<j> comes later (may_precede(j) leaves no i after it)
            after = True if order is None else order.precedes(i, j)
            m.add(space >= total(j, "load_space")).only_enforce_if(
                [lit] if after is True else [lit, after])
            pending[i].append(space)
    for i in range(n):
        deadline.check()
        m.add(total(i, "held_space") + sum(pending[i]) <= sram)
    if restrict.max_pending is not None:
        for i in range(n):
            deadline.check()
            lits = [lit for (_j, k), lit in issued.items() if k == i]
            if len(lits) > restrict.max_pending:
                m.add(sum(lits) <= restrict.max_pending)
    if restrict.fifo:
        for a, b in zip(loads, loads[1:], strict=False):
            deadline.check()
            for i in range(restrict.slot_low(b), a):
                if (b, i) in issued:
                    m.add_implication(issued[b, i], issued[a, i])
        # Loads that move data keep execution order; an op that may load nothing breaks the
        # chain's transitivity, so then every pair is ordered.
        ordered = combinations(loads, 2) if load_on else zip(loads, loads[1:], strict=False)
        for a, b in ordered:
            deadline.check()
            both = [load_on[x] for x in (a, b) if x in load_on]
            m.add(load_end[a] <= load_start[b]).only_enforce_if(both)
    for a, b in zip(chain, chain[1:], strict=False):
        m.add(load_end[a] <= load_start[b])
    port = None
    if shared:
        spans = {j: Span(load_start[j], load_end[j], load_len[j],
                         max(stretch_limit(a.load_ns, a.load_d) for a in pairs[j]))
                 for j in loads}
        runs = [Span(exec_start[i], exec_end[i], exec_len.get(i, exec_end[i] - exec_start[i]),
                     max(stretch_limit(a.run_ns, a.run_d) for a in pairs[i])) for i in range(n)]
        port = add_port(m, pairs, pick, spans, runs, issued, found, lowest, big, deadline,
                        ordered=order is None, fixed_loads=fixed_loads)
    if order is None:
        makespan = exec_end[-1]
    else:
        makespan = m.new_int_var(0, big, "makespan")
        m.add_max_equality(makespan, exec_end)
        _order_free_cuts(m, pairs, pick, exec_start, exec_end, load_len, shared, makespan)
    if lower is not None:
        m.add(makespan >= lower)
    m.minimize(makespan)
    aux = {"end": load_end, "len": load_len, "on": load_on, "pend": pend}
    return CpsatModel(m, pairs, pick, issued, load_start, exec_start, exec_end, makespan, aux,
                      timing=timing, exec_len=exec_len, port=port, order=order)


def _order_free_cuts(m: cp_model.CpModel, pairs: list[list[Pair]],
                     pick: list[list[cp_model.IntVar]], exec_start: list[cp_model.IntVar],
                     exec_end: list[cp_model.IntVar], load_len: dict[int, cp_model.IntVar],
                     shared: bool, makespan: cp_model.IntVar) -> None:
    """For the LP of the free-order model (which lacks `cpsat_port._cover`'s running sums):
    the executes are serial, so the makespan is at least their lengths' sum, and under 5b
    the port does at most 1000 permille of work per ns, so 1000 x makespan is at least every
    load's and execute's port work (both hold in every order)."""
    m.add(makespan >= sum(e - s for s, e in zip(exec_start, exec_end, strict=True)))
    if not shared:
        return
    work = sum(a.run_ns * a.run_d * b + (a.load_ns * a.load_d * b if j in load_len else 0)
               for j, (ps, row) in enumerate(zip(pairs, pick, strict=True))
               for a, b in zip(ps, row, strict=True))
    m.add(1000 * makespan >= work)


def _lengths(ps: Sequence[Pair], attr: str, demand: str) -> cp_model.Domain:
    """The lengths an instruction of these pairs can take under 5b: [duration, stretch]."""
    spans = sorted({(getattr(a, attr), stretch_limit(getattr(a, attr), getattr(a, demand)))
                    for a in ps})
    return cp_model.Domain.from_intervals([list(x) for x in spans])


def add_hint(cm: CpsatModel, instance: Instance, plan: Plan | None,
             schedule: Schedule | None = None) -> None:
    """Hint the solver with a plan's decisions (when it executes in the instance's order, or
    in any the dependencies allow for the free-order model). `schedule` (5b): the times the
    plan ran at (a region's, beside the loads and executes the model holds fixed), hinted
    instead of its own timing."""
    if cm.order is not None:
        _hint_free(cm, instance, plan)
        return
    warm = warm_decisions(instance, plan, cm.timing)
    if warm is None:
        return
    if schedule is not None:
        warm = replace(warm, schedule=schedule)
    if cm.timing == "shared-noc":
        assert plan is not None
        _hint_shared(cm, instance, plan, warm)
        return
    choice, slot, load_start = warm.choice, warm.slot, warm.schedule.load_start
    hint = cm.model.add_hint
    picked = []
    for j, (c, ps) in enumerate(zip(choice, cm.pairs, strict=True)):
        k = hint_index(instance, j, c, ps)
        picked.append(ps[k])
        for kk, b in enumerate(cm.pick[j]):
            hint(b, kk == k)
    # Times replayed with the hinted pairs (which may dominate the plan's own), no execute
    # before the plan's (a region's first may not start before the execute preceding it)
    run = [a.run_ns for a in picked]
    exec_end: list[int] = []
    for j, a in enumerate(picked):
        start = load_start[j] if j in cm.aux["len"] else 0
        ready = max(exec_end[-1] if exec_end else 0, start + a.load_ns,
                    warm.schedule.exec_start[j])
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


def _hint_shared(cm: CpsatModel, instance: Instance, plan: Plan, warm: Warm) -> None:
    """Hint every variable with the plan's 5b schedule (with the kept pairs)."""
    hint = cm.model.add_hint
    picked, schedule = hinted_schedule(instance, cm.pairs, plan, warm)
    for j, a in enumerate(picked):
        _hint_op(cm, j, a, schedule)
    for (j, i), lit in cm.issued.items():
        hint(lit, i >= warm.slot[j])
    for (j, i), v in cm.aux["pend"].items():
        hint(v, picked[j].load_space if i >= warm.slot[j] else 0)
    if cm.port is not None:
        hint_port(hint, cm.port, picked, schedule)
    cm.hinted = True


def _hint_op(cm: CpsatModel, j: int, a: Pair, schedule: Schedule) -> None:
    """Hint op j's pair choice `a` and its execute and load times in `schedule`."""
    hint = cm.model.add_hint
    for b, pair in zip(cm.pick[j], cm.pairs[j], strict=True):
        hint(b, pair is a)
    hint(cm.exec_start[j], schedule.exec_start[j])
    hint(cm.exec_end[j], schedule.exec_end[j])
    if j in cm.exec_len:
        hint(cm.exec_len[j], schedule.exec_end[j] - schedule.exec_start[j])
    if j in cm.aux["len"]:
        hint(cm.load_start[j], schedule.load_start[j])
        hint(cm.aux["len"][j], schedule.load_end[j] - schedule.load_start[j])
        hint(cm.aux["end"][j], schedule.load_end[j])
    if j in cm.aux["on"]:
        hint(cm.aux["on"][j], a.load_ns > 0)


def _hint_free(cm: CpsatModel, instance: Instance, plan: Plan | None) -> None:
    """Hint the free-order model with a plan in any topological order: its pairs (or kept
    ones dominating them), its order, issue slots and its schedule with those pairs."""
    warm = warm_decisions(instance, plan, cm.timing, free=True)
    if warm is None or cm.order is None:
        return
    assert plan is not None
    hint = cm.model.add_hint
    if cm.timing == "shared-noc":
        picked, schedule = hinted_schedule(instance, cm.pairs, plan, warm)
    else:
        picked = [ps[hint_index(instance, j, c, ps)]
                  for j, (c, ps) in enumerate(zip(warm.choice, cm.pairs, strict=True))]
        schedule = evaluate(instance, [Choice(exec=a.exec, preload=a.preload) for a in picked],
                            plan.program, plan.release_ns, timing="separate-noc")
    position = {op: k for k, op in enumerate(warm.order)}
    for j, a in enumerate(picked):
        _hint_op(cm, j, a, schedule)
        hint(cm.order.pos[j], position[j])
        if j in cm.aux["len"]:
            hint(cm.order.slot[j], warm.slot[j])
    for (i, k), lit in cm.order.before.items():
        hint(lit, position[i] < position[k])
    for (j, i), lit in cm.issued.items():
        hint(lit, position[i] >= warm.slot[j])
    for (j, i), v in cm.aux["pend"].items():
        pending = warm.slot[j] <= position[i] < position[j]
        hint(v, picked[j].load_space if pending else 0)
    if cm.port is not None:
        hint_port(hint, cm.port, picked, schedule)
    hint(cm.makespan, schedule.makespan_ns)
    cm.hinted = True


# 5b: the full-problem workers, whose LP relaxation proves optima. CP-SAT runs as many of them
# as its worker count leaves room for: with one or two threads `max_lp` alone (the second
# thread runs CP-SAT's first-solution and LNS helpers), with three or more both, `max_lp`
# repeated (BENCHMARKS.md, "What two threads run")
LP_WORKERS = ("max_lp", "default_lp")


def solver_for(options: SolveOptions, time_limit_s: float | None,
               timing: Timing = "separate-noc", interleave: bool = False) -> cp_model.CpSolver:
    """A CP-SAT solver with the options' limits. Under 5b the full-problem workers are the
    LP-heavy ones: with its default pair of workers CP-SAT rarely closes a 5b gap, with
    `max_lp` (the full linear relaxation, cuts included) it closes small ones in seconds.
    Two full workers instead of one and the helpers prove the calibration layer no sooner
    beyond the noise, and cold two-layer slices later or not at all (BENCHMARKS.md, "What two
    threads run").
    `interleave`: the subsolvers, LNS helpers included, take turns on the workers' threads
    (deterministically); one worker otherwise runs the full search alone, without LNS."""
    solver = cp_model.CpSolver()
    prm = solver.parameters
    if time_limit_s is not None:
        prm.max_time_in_seconds = time_limit_s
    prm.num_workers = options.threads or 2
    if timing == "shared-noc":
        prm.subsolvers.extend(LP_WORKERS[:prm.num_workers])
    if interleave:
        prm.interleave_search = True
    prm.random_seed = options.seed
    if options.work_limit is not None:  # repeatable: a deterministic budget, and with several
        prm.max_deterministic_time = options.work_limit  # workers, interleaved in batches
        prm.interleave_search = interleave or prm.num_workers > 1
    if options.gap is not None:
        prm.relative_gap_limit = options.gap
    if options.verbose:
        prm.log_search_progress = True
        prm.log_to_stdout = False
        solver.log_callback = lambda line: print(line, file=sys.stderr)
    return solver


def shared_plan(instance: Instance, cm: CpsatModel, solver: cp_model.CpSolver, method: str,
                started: float, params: Mapping | None = None) -> Plan:
    """The 5b plan of the solver's solution: its program decoded, with the releases of
    `replay_shared` (every start the model's, only those that bind kept)."""
    times = read_times(cm, solver)
    program = decode(instance, times)
    release, _schedule = replay_shared(instance, program, times)
    return make_plan(instance, times.choice, program, method=method, started=started,
                     timing="shared-noc", release_ns=release, params=params)


def read_times(cm: CpsatModel, solver: cp_model.CpSolver) -> ModelTimes:
    """Chosen pairs and the start and end of every load and execute in the solution."""
    choice, starts, ends = [], [], []
    for j, ps in enumerate(cm.pairs):
        a = next(a for a, b in zip(ps, cm.pick[j], strict=True) if solver.boolean_value(b))
        choice.append(Choice(exec=a.exec, preload=a.preload))
        ls = cm.load_start[j]
        start = ls if isinstance(ls, int) else solver.value(ls)
        starts.append(start)
        end = cm.aux["end"].get(j)
        ends.append(solver.value(end) if end is not None else start + a.load_ns)
    order = None
    if cm.order is not None:
        order = tuple(sorted(range(len(cm.pairs)), key=lambda i: solver.value(cm.order.pos[i])))
    return ModelTimes(choice, starts, ends, [solver.value(e) for e in cm.exec_start],
                      [solver.value(e) for e in cm.exec_end], order)
