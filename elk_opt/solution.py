"""What every method shares: its options, and the wrapper that turns decisions into a plan."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from elk_opt.evaluate import evaluate
from elk_opt.problem import (
    DEFAULT_TIMING,
    Choice,
    Claims,
    ExecOrder,
    Instance,
    Instr,
    Plan,
    Status,
    Timing,
)


@dataclass(frozen=True)
class SolveOptions:
    time_limit_s: float | None = None
    # A budget of solver work in deterministic units (CP-SAT's deterministic time): a run that
    # stops on it, not on the wall-clock limit, is repeatable. None: no such budget.
    work_limit: float | None = None
    gap: float | None = None  # relative optimality gap at which an exact solver may stop
    threads: int | None = None
    seed: int = 0
    timing: Timing = DEFAULT_TIMING  # the semantics the method optimizes and its plan claims
    # the execution orders the method may choose among (R2); None: the method's own default
    exec_order: ExecOrder | None = None
    warm_start: str | None = None  # name of the method whose plan is `warm_plan`
    warm_plan: Plan | None = None  # a plan to hint an exact solver with (resolved by the caller)
    # A lower bound on the makespan the caller already holds, under `timing`, for every plan
    # in the orders the method solves over (`certify` passes its best bound): `cpsat` and
    # `polish` take it as their floor instead of computing the fluid floor again. Trusted:
    # a value above the optimum makes them claim a bound that is not one.
    floor_ns: int | None = None
    # Whether `cpsat` and `polish` end an unproven search with the fluid MIP with loads run
    # whole (`formulations.fluid_floor.loads_run_whole`). None: they decide (yes, unless a
    # floor is given, whose holder has its bounds); True: yes, a floor given or not (`certify`,
    # whose bound rounds have not run that MIP). Never under a work limit.
    loads_run_whole: bool | None = None
    verbose: bool = False
    progress: bool = False  # a method may show its search's progress on stderr (elk_opt.progress)
    params: Mapping[str, Any] = field(default_factory=dict)  # method-specific knobs

    @property
    def free_order(self) -> bool:
        """Whether the method chooses the execution order too (R2), not only the instance's."""
        return self.exec_order == "free"


def warm_start_from(plan: Plan) -> dict[str, Any]:
    """The `SolveOptions` fields that start a method from `plan`: the plan, named by the
    method that made it ("plan" when it carries no claims)."""
    return {"warm_start": plan.claims.method if plan.claims is not None else "plan",
            "warm_plan": plan}


def make_plan(
    instance: Instance,
    choice: Sequence[Choice],
    program: Sequence[Instr],
    *,
    method: str,
    started: float,
    timing: Timing,
    status: Status = "heuristic",
    lower_bound_ns: int | None = None,
    params: Mapping[str, Any] | None = None,
    release_ns: Mapping[Instr, int] | None = None,
) -> Plan:
    """Wrap a method's decisions into a plan whose claimed makespan is the analytic one.

    `started` is the `time.perf_counter()` reading when the method began; `timing` is the
    semantics the plan is timed (and its claims made) under.
    """
    schedule = evaluate(instance, choice, program, release_ns, timing=timing)
    claims = Claims(method=method, status=status, makespan_ns=schedule.makespan_ns,
                    lower_bound_ns=lower_bound_ns, wall_s=time.perf_counter() - started,
                    params=dict(params or {}))
    return Plan(instance=instance, choice=tuple(choice), program=tuple(program),
                release_ns=dict(release_ns or {}), claims=claims, timing=timing)
