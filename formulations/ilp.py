"""The ILP model (PuLP) of docs/spec.md sections 4-5 and 5b, the `ilp` method and the LP bound.

A different encoding from the CP-SAT model, so each checks the other:
- `pick[j, k]` one-hot pairs; `at[j, b]` one-hot issue slot, with prefix sums
  `by(j, i) = sum_{b <= i} at[j, b]` = "P<j> comes before E<i>";
- continuous start times; a load issued after E<i> waits for it: ls_j >= ee_i - M by(j, i);
- order binaries only between loads j < k that may be reordered (slot of k <= j possible);
  loads further apart are ordered by their slots already (ls_k >= ee_j >= le_j);
- R5 rows over products `pend[j, q, i] >= use[j, q] + by(j, i) - 1` of preload-plan choice and
  slot prefix (continuous: the row only pushes them down);
- valid cut: all loads of ops up to k end before E<k> starts, es_k >= sum_{j <= k} load_j.
Under section 5b (`timing="shared-noc"`) times are integers, lengths are variables no shorter
than the durations, and `ilp_port` adds the contention rows; the plan carries the model's
starts as release times (only those that bind).
HiGHS runs in-process through highspy by default; CBC (PuLP's bundled binary) on request
(`ilp_solvers`, which also hands the model over and runs it). The time limit bounds the
whole solve, model building and the hand-over to HiGHS included: past it, the method returns
its warm start (as CP-SAT does when it finds nothing) or says it could not build the model.
A SIGINT stops HiGHS at once with its incumbent and bound.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import highspy
import pulp

from elk_opt.errors import UsageError
from elk_opt.evaluate import evaluate
from elk_opt.interrupts import stop_requested
from elk_opt.problem import Choice, Instance, Instr, Plan, Timing
from elk_opt.solution import SolveOptions, make_plan
from formulations.common import (
    ModelTimes,
    Pair,
    Restrictions,
    ceil_integer,
    claimed_bound,
    decode,
    fallback,
    feasible_pairs,
    hint_index,
    horizon,
    warm_decisions,
)
from formulations.contention import candidates, stretch_limit
from formulations.deadline import NO_DEADLINE, Deadline, OutOfTime
from formulations.ilp_port import PortRows, add_port_rows, warm_port_rows
from formulations.ilp_solvers import IN_PROCESS, DeadlineHighs, canonical, run_solver
from formulations.model_map import VariableMap, pick_map
from formulations.replay import hinted_schedule, replay_shared


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
    timing: Timing = "separate-noc"
    load_len: dict[int, pulp.LpAffineExpression] = field(default_factory=dict)
    exec_len: list[pulp.LpAffineExpression] = field(default_factory=list)
    port: PortRows | None = None


# Measured: 6-op models with horizons near 2**37 ns solved; near 2**47 HiGHS 1.16 returned no
# row values (PuLP's IndexError) or crashed; real models stay below 2**31 ns (2 s per step).
MAX_HORIZON_NS = 2**36


class TooLarge(UsageError):
    """The instance's times are beyond what the MILP solver handles reliably."""


def build(instance: Instance, restrict: Restrictions, relax: bool = False,
          timing: Timing = "separate-noc", deadline: Deadline = NO_DEADLINE) -> IlpModel:
    """The model; `relax` makes every binary continuous and leaves out the pairwise HBM rows
    (a relaxation of the LP relaxation, so still a lower bound, and much smaller).

    Raises OutOfTime when `deadline` passes first (checked once per op in every loop)."""
    shared = timing == "shared-noc"
    if shared and relax:
        raise ValueError("the LP bound is section 5's (it holds under 5b)")
    pairs = feasible_pairs(instance, timing)
    n = len(pairs)
    sram = instance.chip.sram_bytes
    longest = {(kind, j): max(stretch_limit(getattr(a, attr), getattr(a, demand))
                              for a in pairs[j])
               for j in range(n) for kind, attr, demand in (("L", "load_ns", "load_d"),
                                                            ("E", "run_ns", "run_d"))}
    big = horizon(pairs) if not shared else 1 + sum(longest.values())
    if big > MAX_HORIZON_NS:
        raise TooLarge(f"instance {instance.name!r}: its schedule horizon ({big:,} ns) is beyond "
                       f"the {MAX_HORIZON_NS:,} ns that HiGHS solves reliably as a big-M MILP "
                       "(beyond it, it loses rows or crashes); use --method cpsat")
    cat = pulp.LpContinuous if relax else pulp.LpBinary
    clock = pulp.LpInteger if shared else pulp.LpContinuous  # 5b times are integers
    prob = pulp.LpProblem("elk", pulp.LpMinimize)
    found = candidates(pairs, restrict.slot_low, deadline) if shared else []
    load_losing = {c.load for c in found if c.load_loses}  # once, not once per op
    exec_losing = {c.exec for c in found if c.exec_loses}

    def binary(name: str) -> pulp.LpVariable:
        return pulp.LpVariable(name, 0, 1, cat)

    pick = [[binary(f"pick_{j}_{k}") for k in range(len(ps))] for j, ps in enumerate(pairs)]
    for j, row in enumerate(pick):
        prob += pulp.lpSum(row) == 1, f"one_pair_{j}"

    def total(j: int, attr: str) -> pulp.LpAffineExpression:
        return pulp.lpSum(getattr(a, attr) * v for a, v in zip(pairs[j], pick[j], strict=True))

    def stretched(name: str, kind: str, j: int, attr: str, losing: set[int]
                  ) -> pulp.LpAffineExpression:
        """The instruction's length: its duration, or under 5b a variable at least that."""
        if j not in losing:
            return total(j, attr)
        length = pulp.LpVariable(name, 0, longest[kind, j], pulp.LpInteger)
        prob.addConstraint(length >= total(j, attr), f"{name}_least")
        return length

    load_len = {j: stretched(f"llen_{j}", "L", j, "load_ns", load_losing) for j in range(n)}
    exec_len = [stretched(f"elen_{i}", "E", i, "run_ns", exec_losing) for i in range(n)]
    es = [pulp.LpVariable(f"es_{i}", 0, None, clock) for i in range(n)]
    ee = [pulp.LpVariable(f"ee_{i}", 0) for i in range(n)]
    for i in range(n):
        deadline.check()
        prob += ee[i] == es[i] + exec_len[i], f"run_{i}"
        if i:
            prob += es[i] >= ee[i - 1], f"chain_{i}"
        prob += es[i] >= pulp.lpSum(load_len[j] for j in range(i + 1)), f"hbm_cut_{i}"

    loads = [j for j in range(n) if any(a.load_ns for a in pairs[j])]
    at: dict[tuple[int, int], pulp.LpVariable] = {}
    ls: list[pulp.LpVariable | None] = [None] * n

    prefix: dict[tuple[int, int], pulp.LpVariable] = {}

    def by(j: int, i: int) -> pulp.LpVariable | int:
        """The prefix sum of op j's slot binaries up to i, kept as a variable for sparsity."""
        return prefix.get((j, i), 0)

    for j in loads:
        deadline.check()
        low = restrict.slot_low(j)
        slots = [binary(f"at_{j}_{b}") for b in range(low, j + 1)]
        at.update({(j, b): v for b, v in zip(range(low, j + 1), slots, strict=True)})
        for i in range(low, j):
            prefix[j, i] = pulp.LpVariable(f"by_{j}_{i}", 0, 1)
            below = prefix[j, i - 1] if i > low else 0
            prob += prefix[j, i] == below + at[j, i], f"prefix_{j}_{i}"
        prob += pulp.lpSum(slots) == 1, f"one_slot_{j}"
        ls[j] = pulp.LpVariable(f"ls_{j}", 0, None, clock)
        prob += es[j] >= ls[j] + load_len[j], f"loaded_{j}"
        if low > 0:
            prob += ls[j] >= ee[low - 1], f"issue_{j}_{low - 1}"
        for i in range(low, j):
            prob += ls[j] >= ee[i] - big * by(j, i), f"issue_{j}_{i}"

    order: dict[tuple[int, int], pulp.LpVariable] = {}
    for x, j in enumerate([] if relax else loads):
        deadline.check()
        zero_j = _zero_load(pairs, pick, j)
        for k in loads[x + 1:]:
            if restrict.slot_low(k) > j:
                continue  # k is issued after E<j>, so after load j ended
            o = binary(f"order_{j}_{k}")
            order[j, k] = o
            relaxed = big * (zero_j + _zero_load(pairs, pick, k))
            prob += (ls[k] >= ls[j] + load_len[j] - big * (1 - o) - relaxed, f"hbm_{j}_{k}")
            prob += (ls[j] >= ls[k] + load_len[k] - big * o - relaxed, f"hbm_{k}_{j}")
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
        deadline.check()
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
    port = None
    if shared:
        port = add_port_rows(prob, pairs, pick, ls, load_len, es, exec_len, found, longest, big,
                             deadline)
        for (j, i), o in port.overlap.items():
            deadline.check()
            prob += o <= longest["E", i] * by(j, i), f"ov_issued_{j}_{i}"
    prob += ee[-1]
    return IlpModel(prob, pairs, pick, at, order, ls, es, ee, pend, prefix, loads, timing,
                    load_len, exec_len, port)


def _zero_load(pairs: list[list[Pair]], pick: list[list[pulp.LpVariable]],
               j: int) -> pulp.LpAffineExpression:
    """1 when op j's chosen pair loads nothing (its load then occupies no HBM time)."""
    return pulp.lpSum(v for a, v in zip(pairs[j], pick[j], strict=True) if a.load_ns == 0)


def set_warm_values(im: IlpModel, instance: Instance, plan: Plan | None) -> bool:
    """Give every variable the value of the plan's solution; False if the plan is unusable."""
    warm = warm_decisions(instance, plan, im.timing)
    if warm is None:
        return False
    assert plan is not None
    choice, slot = warm.choice, warm.slot
    picked = [hint_index(instance, j, c, ps, im.timing) for j, (c, ps) in
              enumerate(zip(choice, im.pairs, strict=True))]
    # Time the plan with the model's pairs (a kept pair may dominate the plan's own).
    if im.timing == "shared-noc":
        schedule = hinted_schedule(instance, im.pairs, plan, warm)[1]
    else:
        kept = [Choice(exec=ps[k].exec, preload=ps[k].preload) for ps, k in
                zip(im.pairs, picked, strict=True)]
        schedule = evaluate(instance, kept, plan.program, plan.release_ns,
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
    if im.port is not None:
        for j, length in im.load_len.items():
            if isinstance(length, pulp.LpVariable):
                length.setInitialValue(schedule.load_end[j] - schedule.load_start[j])
        for i, length in enumerate(im.exec_len):
            if isinstance(length, pulp.LpVariable):
                length.setInitialValue(schedule.exec_end[i] - schedule.exec_start[i])
        warm_port_rows(im.port, [ps[k] for ps, k in zip(im.pairs, picked, strict=True)],
                       schedule)
    return True


def variable_map(im: IlpModel) -> VariableMap:
    """Where a solution's pairs and times are, by PuLP variable name."""
    def name(v: pulp.LpVariable | None) -> str | None:
        return None if v is None else v.name

    n = len(im.pairs)
    lengths = [im.load_len.get(j) for j in range(n)]
    return VariableMap(
        pick=pick_map(im.pairs, [[v.name for v in row] for row in im.pick]),
        load_start=tuple(name(v) for v in im.load_start),
        load_len=tuple(v.name if isinstance(v, pulp.LpVariable) else None for v in lengths),
        load_end=(None,) * n,
        exec_start=tuple(v.name for v in im.exec_start),
        exec_end=tuple(v.name for v in im.exec_end))


def read_solution(im: IlpModel) -> ModelTimes:
    """The solution PuLP holds, read through the model's variable map (as imports are)."""
    values = {v.name: v.varValue or 0.0 for v in im.prob.variables()}
    return variable_map(im).times(values.get)


@dataclass(frozen=True)
class Setup:
    """What the method's options ask for: the restrictions, the solver, the plan's params."""

    restrict: Restrictions
    solver: str
    claims: dict


def setup(instance: Instance, options: SolveOptions) -> Setup:
    """Read the method's options (UsageError for what it cannot do)."""
    params = dict(options.params)
    solver = canonical(params.pop("solver", IN_PROCESS))
    restrict = Restrictions.from_params(params)
    if options.work_limit is not None:
        raise UsageError("ilp has no deterministic work limit (HiGHS and CBC offer none); its "
                         "runs repeat when they finish within --time-limit")
    return Setup(restrict, solver, {**restrict.claims(), "solver": solver})


def prepare(instance: Instance, options: SolveOptions, restrict: Restrictions,
            deadline: Deadline = NO_DEADLINE) -> tuple[IlpModel, bool]:
    """The model the method solves, with the warm start's values set (and whether it was)."""
    im = build(instance, restrict, timing=options.timing, deadline=deadline)
    return im, set_warm_values(im, instance, options.warm_plan)


def solve(instance: Instance, options: SolveOptions) -> Plan:
    started = time.perf_counter()
    deadline = Deadline.after(options.time_limit_s, started)
    how = setup(instance, options)
    solver, claims, timing = how.solver, dict(how.claims), options.timing
    try:
        im, warm = prepare(instance, options, how.restrict, deadline)
        out = run_solver(im.prob, options, solver, warm, deadline)
    except (OutOfTime, KeyboardInterrupt) as stop:
        return _unsolved(instance, options, started, claims, stop)
    claims["solver_status"] = out.status
    if warm and options.warm_start:
        claims["warm_start"] = options.warm_start
    if not out.has_solution:
        if out.status.lower() == "infeasible":
            raise UsageError(f"instance {instance.name!r} is infeasible")
        plan = fallback(instance, options.warm_plan, "ilp", started, out.bound, claims, timing)
        if plan is not None:
            return plan
        if out.interrupted:
            raise KeyboardInterrupt
        raise UsageError(f"ilp found no plan within {options.time_limit_s} s "
                         "(try a longer --time-limit or --warm-start)")
    times = read_solution(im)
    program = decode(instance, times)
    claims["model_timing"] = timing
    release: dict[Instr, int] = {}
    if timing == "shared-noc":
        release, schedule = replay_shared(instance, program, times)
        if out.objective is not None and schedule.makespan_ns > round(out.objective):
            raise AssertionError(f"ilp: 5b replay {schedule.makespan_ns} above objective "
                                 f"{out.objective}")
    plan = make_plan(instance, times.choice, program, method="ilp", started=started,
                     timing=timing, params=claims, release_ns=release)
    assert plan.claims is not None
    makespan = plan.claims.makespan_ns
    bound = out.bound if out.bound is not None else (out.objective if out.proven else None)
    lower = claimed_bound(instance, bound, makespan)
    return make_plan(instance, times.choice, program, method="ilp", started=started,
                     timing=timing, status="optimal" if lower == makespan else "feasible",
                     lower_bound_ns=lower, params=claims, release_ns=release)


def _unsolved(instance: Instance, options: SolveOptions, started: float, claims: dict,
              stop: BaseException) -> Plan:
    """The warm-start plan when the model could not be built and handed over in time (or a
    SIGINT came first), like CP-SAT's answer when it finds nothing; else say why not."""
    interrupted = isinstance(stop, KeyboardInterrupt) or stop_requested()
    claims["solver_status"] = ("interrupted before the model was built" if interrupted
                               else "time limit reached before the model was built")
    plan = fallback(instance, options.warm_plan, "ilp", started, None, claims, options.timing)
    if plan is not None:
        return plan
    if interrupted:
        raise KeyboardInterrupt
    raise UsageError(f"ilp could not build its model of {len(instance.ops)} ops within "
                     f"{options.time_limit_s:g} s (give --warm-start METHOD to get that plan "
                     "back instead, or a longer --time-limit)")


def lp_bound(instance: Instance, time_limit_s: float | None = None) -> int | None:
    """The LP relaxation of the unrestricted ILP, rounded up (None if it did not finish within
    `time_limit_s`, model building included; a SIGINT raises KeyboardInterrupt; TooLarge
    beyond the horizon HiGHS handles)."""
    deadline = Deadline.after(time_limit_s, time.perf_counter())
    backend = DeadlineHighs(deadline, msg=False, mip=False)
    try:
        im = build(instance, Restrictions(), relax=True, deadline=deadline)
        im.prob.solve(backend)
    except OutOfTime:
        return None
    if backend.interrupted:
        raise KeyboardInterrupt
    h = im.prob.solverModel
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None
    value = h.getInfo().objective_function_value
    return ceil_integer(value)
