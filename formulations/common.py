"""What both exact models share: the decision space, its optional restrictions, and decoding.

Both models keep the instance's execution order (rule R2's default) and decide, per op j, one
compatible (preload, execute) pair, the execute position `slot[j]` its preload is issued
before (0 <= slot[j] <= j) and, through start times, the preload order on the HBM. Timing is
the max-plus recurrence of DESIGN.md section 5 written as `>=` constraints:
    load_start[j] >= exec_end[slot[j] - 1]       (issued after E<slot-1>, waits for it)
    loads with load_ns > 0 never overlap on the HBM
    exec_start[i] >= load_end[i], exec_start[i] >= exec_end[i - 1]
and rule R5 at every E<i> over the ops j > i with slot[j] <= i.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from elk_opt.bounds import ideal_bound
from elk_opt.errors import UsageError
from elk_opt.evaluate import evaluate
from elk_opt.problem import Choice, Instance, Instr, Op, Plan, Timing, program_from_issue
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

    def claims(self) -> dict[str, Any]:
        """What goes into `claims.params`: the fixed execution order and every restriction."""
        out: dict[str, Any] = {"exec_order": "instance"}
        out.update({k: v for k, v in asdict(self).items() if v not in (None, False)})
        return out

    def slot_low(self, j: int) -> int:
        return 0 if self.window is None else max(0, j - self.window)


def pairs_of(op: Op) -> list[Pair]:
    """The op's pairs without dominated ones (no better in every number: never needed).

    Section 5 is monotone in every number (less load time, run time or space never hurts), so
    dropping a pair that another pair matches or beats everywhere keeps the optimum.
    """
    every = sorted({Pair(q.id, p.id, q.load_ns, q.space_bytes, p.time_ns + t, p.space_bytes)
                    for q, p, t in op.pairs()},
                   key=lambda a: (a.run_ns, a.load_ns, a.load_space, a.run_space, a.preload,
                                  a.exec))
    kept: list[Pair] = []
    for a in every:
        if not any(_dominates(b, a) for b in kept):
            kept.append(a)
    return kept


def _dominates(b: Pair, a: Pair) -> bool:
    return (b.load_ns <= a.load_ns and b.load_space <= a.load_space and b.run_ns <= a.run_ns
            and b.run_space <= a.run_space)


def feasible_pairs(instance: Instance) -> list[list[Pair]]:
    """Per op, its undominated pairs that fit the SRAM alone; an op with none is infeasible."""
    sram = instance.chip.sram_bytes
    out = []
    for i, op in enumerate(instance.ops):
        fit = [a for a in pairs_of(op) if a.run_space <= sram]
        if not fit:
            raise UsageError(f"instance {instance.name!r} is infeasible: op {i} ({op.name}) "
                             f"has no execute plan that fits {sram:,} B of SRAM")
        out.append(fit)
    return out


def horizon(pairs: Sequence[Sequence[Pair]]) -> int:
    """An upper bound on any schedule's time worth considering (every op loaded then run)."""
    return sum(max(a.load_ns for a in ps) + max(a.run_ns for a in ps) for ps in pairs) + 1


def decode_program(load_start: Sequence[int], load_ns: Sequence[int],
                   exec_end: Sequence[int]) -> tuple[Instr, ...]:
    """A program whose as-soon-as-possible replay is no later than the model's times.

    Each preload is issued before the latest execute position b <= j whose predecessor has
    ended by the load's start (zero-time loads just before their own execute), and preloads
    issued at one position are ordered by start. Then every precedence of the program holds
    in the model's times (a load issued at an earlier position than another also started
    earlier), so the replay is pointwise no later; the pending sets only shrink, so R5 holds.
    """
    n = len(exec_end)
    slot = []
    for j in range(n):
        b = j
        if load_ns[j] > 0:
            while b > 0 and exec_end[b - 1] > load_start[j]:
                b -= 1
        slot.append(b)
    order = sorted(range(n), key=lambda j: (slot[j], load_start[j] if load_ns[j] else 0, j))
    issued = [slot[j] for j in order]
    return program_from_issue(order, issued, list(range(n)))


def warm_decisions(instance: Instance, plan: Plan | None) -> tuple[list[Choice], list[int],
                                                                    list[int]] | None:
    """The choice, issue slots and load starts of a warm-start plan, if the models can use it.

    Usable when it is for this instance's ops and executes in the instance's order.
    """
    if plan is None or len(plan.choice) != len(instance.ops):
        return None
    execs = [j for kind, j in plan.program if kind == "E"]
    if execs != list(range(len(instance.ops))):
        return None
    slot = [0] * len(execs)
    done = 0
    for kind, j in plan.program:
        if kind == "E":
            done += 1
        else:
            slot[j] = done
    schedule = evaluate(instance, plan.choice, plan.program, plan.release_ns,
                        timing="separate-noc")  # the models' semantics
    return list(plan.choice), slot, list(schedule.load_start)


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
             bound: float | None, params: Mapping[str, Any], timing: Timing) -> Plan | None:
    """The warm-start plan, claimed with the solver's bound, when the solver found nothing.

    Only if it fits SRAM; its params say the plan is the warm start's, not the solver's.
    """
    if warm is None or warm_decisions(instance, warm) is None:
        return None
    schedule = evaluate(instance, warm.choice, warm.program, warm.release_ns, timing=timing)
    if schedule.peak_sram_bytes > instance.chip.sram_bytes:
        return None
    makespan = schedule.makespan_ns
    lower = claimed_bound(instance, bound, makespan)
    return make_plan(instance, warm.choice, warm.program, method=method, started=started,
                     timing=timing, status="optimal" if lower == makespan else "feasible",
                     lower_bound_ns=lower, release_ns=warm.release_ns,
                     params={**params, "solution": "warm start (the solver found none)"})


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
