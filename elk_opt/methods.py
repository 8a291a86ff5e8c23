"""The registry of solve methods: one entry point, `solve(instance, method, options)`.

Entries are import paths, so a heavy solver library loads only when its method is asked for.
A method is a function `(Instance, SolveOptions) -> Plan` returning a plan whose claims hold.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from elk_opt.errors import UsageError
from elk_opt.evaluate import ProgramError, evaluate
from elk_opt.problem import ExecOrder, Instance, Plan, Timing, is_count
from elk_opt.solution import SolveOptions

Method = Callable[[Instance, SolveOptions], Plan]


@dataclass(frozen=True)
class MethodInfo:
    target: str  # "module:function"
    family: Literal["heuristic", "exact", "bound"]
    summary: str
    default_warm_start: str | None = None  # a method whose plan this one starts from
    # the timings under which studies run it by default (it stays runnable under any)
    default_timings: tuple[Timing, ...] = ("separate-noc", "shared-noc")
    # the execution orders it can solve in (R2), its default first
    exec_orders: tuple[ExecOrder, ...] = ("instance",)


METHODS: dict[str, MethodInfo] = {
    "basic": MethodInfo("heuristics.basic:solve", "heuristic",
                        "the paper's Basic: fastest plans, preload only the next op",
                        exec_orders=("instance", "free")),
    "static": MethodInfo("heuristics.static:solve", "heuristic",
                         "the paper's Static: one execute budget swept over every distinct value",
                         exec_orders=("instance", "free")),
    "elk-dyn": MethodInfo("heuristics.elk_dyn:solve", "heuristic",
                          "Elk's inductive scheduling: per-op preload count and Delta allocation",
                          exec_orders=("instance", "free")),
    "elk-full": MethodInfo("heuristics.elk_full:solve", "heuristic",
                           "Elk-Dyn over permuted per-layer preload orders, best kept",
                           exec_orders=("instance", "free")),
    "elk-full-lp": MethodInfo("heuristics.lp_pairs:solve", "heuristic",
                              "Elk-Full at the pairs the fluid LPs pick (with and without SRAM), "
                              "the faster kept"),
    "lhs": MethodInfo("heuristics.lhs:solve", "heuristic",
                      "XLA's latency-hiding scheduler: a list scheduler over the DAG that moves "
                      "compute and loads under a memory limit",
                      exec_orders=("free", "instance")),
    "ideal": MethodInfo("heuristics.ideal:solve", "bound",
                        "the paper's Ideal roofline as lower_bound_ns (plan: Elk-Full's)"),
    "cpsat": MethodInfo("formulations.cpsat:solve", "exact",
                        "CP-SAT model of sections 4-5: proven optimum or best plan and bound",
                        exec_orders=("instance", "free")),
    "ilp": MethodInfo("formulations.ilp:solve", "exact",
                      "ILP model (PuLP; HiGHS in-process, or solver=NAME: any PuLP solver here)",
                      # under 5b its big-M overlap rows leave HiGHS 20-45x slower than CP-SAT
                      # on 6-op instances and without proofs on one-layer slices
                      default_timings=("separate-noc",)),
    "polish": MethodInfo("formulations.polish:solve", "exact",
                         "LNS: re-solve windows of a warm-start plan exactly with CP-SAT",
                         default_warm_start="elk-full"),
}


def get_method(name: str) -> Method:
    if name not in METHODS:
        raise UsageError(f"unknown method {name!r}; choose one of {', '.join(METHODS)}")
    module, func = METHODS[name].target.split(":")
    return getattr(importlib.import_module(module), func)


def solve(instance: Instance, method: str, options: SolveOptions | None = None) -> Plan:
    """Run a method; a warm start it asks for (or has by default) is solved first, within the
    same time limit (the method gets what the warm start left)."""
    run = get_method(method)
    options = with_warm_plan(instance, method, with_exec_order(method, options or SolveOptions()))
    check_floor(options)
    if not isinstance(options.loads_run_whole, bool | None):
        raise UsageError(f"loads_run_whole must be true, false or unset, got "
                         f"{options.loads_run_whole!r}")
    return run(instance, options)


def check_floor(options: SolveOptions) -> None:
    """Refuse a given floor that is no lower bound on its face: negative, not an integer, or
    above the warm start's makespan under the options' timing (a start of another timing is
    timed again: the method starts from that timing of it)."""
    floor = options.floor_ns
    if floor is None:
        return
    if not is_count(floor):
        raise UsageError(f"floor_ns must be a whole number of ns >= 0, got {floor!r}")
    warm = options.warm_plan
    if warm is None:
        return
    if warm.claims is not None and warm.timing == options.timing:
        makespan = warm.claims.makespan_ns
    else:
        try:
            makespan = evaluate(warm.instance, warm.choice, warm.program, warm.release_ns,
                                timing=options.timing).makespan_ns
        except ProgramError:
            return  # no start to compare with: the method says so itself
    if floor > makespan:
        raise UsageError(f"floor_ns {floor:,} is above the warm start's makespan {makespan:,} ns "
                         f"under {options.timing}: it is not a lower bound")


def with_exec_order(method: str, options: SolveOptions) -> SolveOptions:
    """The options with the execution order resolved to one the method solves in."""
    orders = METHODS[method].exec_orders
    if options.exec_order is None:
        return replace(options, exec_order=orders[0])
    if options.exec_order not in orders:
        raise UsageError(f"method {method} solves only with --exec-order "
                         f"{' or '.join(orders)}, not {options.exec_order}")
    return options



def solving_in(methods: Sequence[str], exec_order: ExecOrder | None, *, named: bool
               ) -> list[str]:
    """The methods a study runs with `--exec-order exec_order`: those that solve in it, and
    bounds (they hold for a plan in any order or say which order they cover). Methods the
    user named (`named`) that cannot are refused with one line; a default list just drops
    them (the caller says which: `skipped_for_order`)."""
    if exec_order is None:
        return list(methods)
    cannot = skipped_for_order(methods, exec_order)
    if cannot and named:
        raise UsageError(f"--exec-order {exec_order}: {', '.join(cannot)} cannot solve in "
                         "that order (each solves only in "
                         f"{', '.join(sorted({o for m in cannot for o in METHODS[m].exec_orders}))}"
                         "); leave them out of the methods or drop --exec-order")
    return [m for m in methods if m not in cannot]


def skipped_for_order(methods: Sequence[str], exec_order: ExecOrder | None) -> list[str]:
    """The methods (bounds aside) that do not list `exec_order` among theirs."""
    if exec_order is None:
        return []
    return [m for m in methods if m in METHODS and METHODS[m].family != "bound"
            and exec_order not in METHODS[m].exec_orders]


def with_warm_plan(instance: Instance, method: str, options: SolveOptions) -> SolveOptions:
    """The options with the warm-start plan the method asks for (or has by default) solved,
    and the time limit reduced by what that took."""
    warm_start = options.warm_start or METHODS[method].default_warm_start
    if options.warm_plan is None and warm_start is not None:
        if warm_start not in METHODS:
            raise UsageError(f"unknown warm-start method {warm_start!r}; choose one of "
                             f"{', '.join(METHODS)}")
        started = time.perf_counter()
        # the warm plan executes in an order the method solves in (a hint, and a fallback answer)
        order = options.exec_order if options.exec_order in METHODS[warm_start].exec_orders \
            else None
        warm_plan = solve(instance, warm_start, SolveOptions(timing=options.timing,
                                                             time_limit_s=options.time_limit_s,
                                                             exec_order=order))
        options = replace(options, warm_start=warm_start, warm_plan=warm_plan)
        if options.time_limit_s is not None:
            left = options.time_limit_s - (time.perf_counter() - started)
            options = replace(options, time_limit_s=max(0.0, left))  # 0: no time left
    return options


def heuristics() -> list[str]:
    return [name for name, info in METHODS.items() if info.family == "heuristic"]
