"""What both exact models share: the decision space, its optional restrictions, and decoding.

Both models keep the instance's execution order (rule R2's default; the CP-SAT model may
free it, `cpsat_order`) and decide, per op j, one
compatible (preload, execute) pair, the execute position `slot[j]` its preload is issued
before (0 <= slot[j] <= j) and, through start times, the preload order on the HBM. Timing is
the max-plus recurrence of docs/spec.md section 5 written as `>=` constraints:
    load_start[j] >= exec_end[slot[j] - 1]       (issued after E<slot-1>, waits for it)
    loads with load_ns > 0 never overlap on the HBM
    exec_start[i] >= load_end[i], exec_start[i] >= exec_end[i - 1]
and rule R5 at every E<i> over the ops j > i with slot[j] <= i. Under section 5b the same
start rules hold and durations stretch where a load and an execute share the NoC port
(`formulations/contention.py` says how the models write that exactly).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from elk_opt.bounds.ideal import ideal_bound
from elk_opt.errors import UsageError
from elk_opt.evaluate import Schedule, evaluate
from elk_opt.noc import exec_use, load_use
from elk_opt.problem import (
    Chip,
    Choice,
    ExecPlan,
    Instance,
    Instr,
    Op,
    Plan,
    PreloadPlan,
    Timing,
    program_from_issue,
)
from elk_opt.solution import make_plan


@dataclass(frozen=True)
class Pair:
    """One compatible (preload, execute) choice of an op, with the numbers the models use."""

    preload: int
    exec: int
    load_ns: int
    load_space: int  # SRAM while pending
    run_ns: int  # execute time + warm-up
    run_space: int  # SRAM while executing
    load_d: int = 0  # NoC port demand of the load, permille (section 5b; 0 under section 5)
    run_d: int = 0  # NoC port demand of the execute, permille (section 5b; 0 under section 5)

    @property
    def held_space(self) -> int:
        """What rule R5 charges the op at its own execute: the larger of its two layouts."""
        return max(self.run_space, self.load_space)


@dataclass(frozen=True)
class ModelTimes:
    """A model solution's decisions and times, per op."""

    choice: list[Choice]
    load_start: list[int]
    load_end: list[int]
    exec_start: list[int]
    exec_end: list[int]
    order: tuple[int, ...] | None = None  # the execution order; None: the instance's


@dataclass(frozen=True)
class Restrictions:
    """Optional limits on the search; any that is set makes the optimum a restricted one.

    window: a preload is issued at most `window` executes ahead of its own (slot >= j - window).
    fifo: preloads are issued in execution order.
    max_pending: at most this many ops are pending at any execute.
    """

    window: int | None = None
    fifo: bool = False
    max_pending: int | None = None

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> Restrictions:
        unknown = set(params) - {"window", "fifo", "max_pending"}
        if unknown:
            raise UsageError(f"unknown exact-method parameter(s): {', '.join(sorted(unknown))}")
        window = params.get("window")
        cap = params.get("max_pending")
        for name, value in (("window", window), ("max_pending", cap)):
            if value is not None and (not isinstance(value, int) or value < 0):
                raise UsageError(f"{name} must be a non-negative integer, got {value!r}")
        return cls(window=window, fifo=bool(params.get("fifo", False)), max_pending=cap)

    def claims(self, exec_order: str = "instance") -> dict[str, Any]:
        """What goes into `claims.params`: the execution order solved in and every
        restriction."""
        out: dict[str, Any] = {"exec_order": exec_order}
        out.update({k: v for k, v in asdict(self).items() if v not in (None, False)})
        return out

    def slot_low(self, j: int) -> int:
        return 0 if self.window is None else max(0, j - self.window)


def make_pair(chip: Chip, q: PreloadPlan, p: ExecPlan, warm: int, timing: Timing) -> Pair:
    """The pair's numbers; its port demands only under section 5b (they are 0 otherwise)."""
    shared = timing == "shared-noc"
    return Pair(q.id, p.id, q.load_ns, q.space_bytes, p.time_ns + warm, p.space_bytes,
                load_use(chip, q).demand if shared else 0,
                exec_use(chip, p, warm).demand if shared else 0)


def pairs_of(op: Op, chip: Chip, timing: Timing = "separate-noc") -> list[Pair]:
    """The op's pairs without dominated ones (no better in every number: never needed).

    Section 5 is monotone in every number (less load time, run time or space never hurts), so
    dropping a pair that another pair matches or beats everywhere keeps the optimum.

    Section 5b is not monotone in durations alone: a faster load with a higher port demand
    can take the port from a NoC-heavy execute and slow it. It is monotone in (duration,
    demand) together once release times are free, so under 5b a pair is dropped only if
    another is no worse in both durations, both spaces and both demands. Proof: let a plan
    use pair b for op k and let a be no worse than b everywhere. Keep the program and release
    every instruction at its start under b. An instruction's progress, as a fraction of its
    units, grows per ns by 1/duration alone and by g(d, d')/(d * duration) beside a partner of
    demand d' (1/duration when d = 0), where g is its share (`elk_opt.noc.shares`). g(d, d')/d
    is non-increasing in d and g(d, d') is non-increasing in d', so op k's instructions, with
    no longer durations and no higher demands, progress at least as fast, and every other
    instruction progresses at least as fast beside them. By induction over time every start
    stays where it was (its predecessors end no later, its release holds it) and every end
    moves no later, so the makespan does not grow; R5 only sees spaces, which do not grow.
    """
    every = sorted({make_pair(chip, q, p, t, timing) for q, p, t in op.pairs()},
                   key=lambda a: (a.run_ns, a.load_ns, a.load_space, a.run_space, a.run_d,
                                  a.load_d, a.preload, a.exec))
    kept: list[Pair] = []
    for a in every:
        if not any(dominates(b, a) for b in kept):
            kept.append(a)
    return kept


def dominates(b: Pair, a: Pair) -> bool:
    """b is no worse than a in every number the timing sees (demands are 0 under section 5)."""
    return (b.load_ns <= a.load_ns and b.load_space <= a.load_space and b.run_ns <= a.run_ns
            and b.run_space <= a.run_space and b.load_d <= a.load_d and b.run_d <= a.run_d)


def feasible_pairs(instance: Instance, timing: Timing = "separate-noc") -> list[list[Pair]]:
    """Per op, its undominated pairs that fit the SRAM alone (R5 at its own execute charges
    the larger of its layouts); an op with none is infeasible."""
    sram = instance.chip.sram_bytes
    out = []
    for i, op in enumerate(instance.ops):
        fit = [a for a in pairs_of(op, instance.chip, timing) if a.held_space <= sram]
        if not fit:
            raise UsageError(f"instance {instance.name!r} is infeasible: op {i} ({op.name}) "
                             f"has no plan pair that fits {sram:,} B of SRAM")
        out.append(fit)
    return out


def hint_index(instance: Instance, j: int, c: Choice, ps: Sequence[Pair],
               timing: Timing = "separate-noc") -> int:
    """Index of the plan's pair among the kept ones, or of one that dominates it."""
    for k, a in enumerate(ps):
        if (a.preload, a.exec) == (c.preload, c.exec):
            return k
    op = instance.ops[j]
    q, p = op.preload_by_id[c.preload], op.exec_by_id[c.exec]
    own = make_pair(instance.chip, q, p, op.warmup_ns[(c.preload, c.exec)], timing)
    for k, a in enumerate(ps):
        if dominates(a, own):
            return k
    return 0


def horizon(pairs: Sequence[Sequence[Pair]]) -> int:
    """An upper bound on any schedule's time worth considering (every op loaded then run)."""
    return sum(max(a.load_ns for a in ps) + max(a.run_ns for a in ps) for ps in pairs) + 1


def decode_program(load_start: Sequence[int], load_ns: Sequence[int],
                   exec_end: Sequence[int],
                   exec_order: Sequence[int] | None = None) -> tuple[Instr, ...]:
    """A program whose as-soon-as-possible replay is no later than the model's times.

    Executes run in `exec_order` (default: the instance's). Each preload is issued before the
    latest execute position b <= its own execute's whose predecessor has ended by the load's
    start (zero-time loads just before their own execute), and preloads issued at one
    position are ordered by start. Then every precedence of the program holds in the model's
    times (a load issued at an earlier position than another also started earlier), so the
    replay is pointwise no later; the pending sets only shrink, so R5 holds.
    """
    n = len(exec_end)
    execs = list(range(n)) if exec_order is None else list(exec_order)
    position = {op: k for k, op in enumerate(execs)}
    slot = []
    for j in range(n):
        b = position[j]
        if load_ns[j] > 0:
            while b > 0 and exec_end[execs[b - 1]] > load_start[j]:
                b -= 1
        slot.append(b)
    order = sorted(range(n), key=lambda j: (slot[j], load_start[j] if load_ns[j] else 0, j))
    issued = [slot[j] for j in order]
    return program_from_issue(order, issued, execs)


@dataclass(frozen=True)
class Warm:
    """A warm-start plan read as the models' decisions: pairs, issue slots, its schedule."""

    choice: list[Choice]
    slot: list[int]  # per op: how many executes precede its preload in the program
    schedule: Schedule  # under the timing the model is built for
    order: tuple[int, ...] = ()  # the plan's execution order


def chosen_load_ns(instance: Instance, choice: Sequence[Choice]) -> list[int]:
    """Per op, the load time of the preload plan `choice` picks for it."""
    return [instance.ops[j].preload_by_id[c.preload].load_ns for j, c in enumerate(choice)]


def decode(instance: Instance, times: ModelTimes) -> tuple[Instr, ...]:
    """The program of a model solution (`decode_program` with the chosen load times)."""
    return decode_program(times.load_start, chosen_load_ns(instance, times.choice),
                          times.exec_end, times.order)


def warm_decisions(instance: Instance, plan: Plan | None,
                   timing: Timing = "separate-noc", free: bool = False) -> Warm | None:
    """The choice, issue slots and schedule of a warm-start plan, if the models can use it.

    Usable when it is for this instance's ops and executes in the instance's order (with
    `free`, in any order the dependencies allow).
    """
    if plan is None or len(plan.choice) != len(instance.ops):
        return None
    execs = [j for kind, j in plan.program if kind == "E"]
    if sorted(execs) != list(range(len(instance.ops))):
        return None
    position = {op: k for k, op in enumerate(execs)}
    if not free and execs != list(range(len(instance.ops))):
        return None
    if any(position[p] > position[i] for i, op in enumerate(instance.ops) for p in op.inputs):
        return None
    slot = [0] * len(execs)
    done = 0
    for kind, j in plan.program:
        if kind == "E":
            done += 1
        else:
            slot[j] = done
    schedule = evaluate(instance, plan.choice, plan.program, plan.release_ns, timing=timing)
    return Warm(list(plan.choice), slot, schedule, tuple(execs))


def ceil_integer(value: float) -> int:
    """Round a solver's bound on an integer objective up, forgiving float noise (not a unit)."""
    return math.ceil(value - 1e-3 - 1e-9 * abs(value))


def integer_bound(value: float, makespan: int) -> int:
    """A solver's objective bound as an honest integer lower bound (objectives are integers).

    A bound above the replayed makespan means a wrong model; raise rather than hide it.
    """
    bound = ceil_integer(value)
    if bound > makespan:
        raise AssertionError(f"solver bound {value} exceeds the replayed makespan {makespan}")
    return bound


def fallback(instance: Instance, warm: Plan | None, method: str, started: float,
             bound: float | None, params: Mapping[str, Any], timing: Timing,
             source: str = "warm start", free: bool = False) -> Plan | None:
    """The warm-start plan, claimed with the solver's bound, when the solver found nothing.

    Only if it fits SRAM (and executes in an order the model solved in: the instance's, or
    with `free` any); its params say whose plan it is (`source`), not the solver's.
    """
    if warm is None or warm_decisions(instance, warm, free=free) is None:
        return None
    schedule = evaluate(instance, warm.choice, warm.program, warm.release_ns, timing=timing)
    if schedule.peak_sram_bytes > instance.chip.sram_bytes:
        return None
    makespan = schedule.makespan_ns
    lower = claimed_bound(instance, bound, makespan)
    return make_plan(instance, warm.choice, warm.program, method=method, started=started,
                     timing=timing, status="optimal" if lower == makespan else "feasible",
                     lower_bound_ns=lower, release_ns=warm.release_ns,
                     params={**params, "solution": f"{source} (the solver found none)"})


def claimed_bound(instance: Instance, solver_bound: float | None, makespan: int) -> int:
    """The better of the solver's bound and the Ideal bound, checked against the makespan."""
    ideal = ideal_bound(instance)
    if ideal > makespan:
        raise AssertionError(f"Ideal bound {ideal} exceeds the replayed makespan {makespan}")
    if solver_bound is None:
        return ideal
    return max(ideal, integer_bound(solver_bound, makespan))


def remaining(options_limit: float | None, started: float) -> float | None:
    """What is left of the method's time limit for the solver after building its model."""
    if options_limit is None:
        return None
    return max(0.05, options_limit - (time.perf_counter() - started))
