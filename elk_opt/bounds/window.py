"""A lower bound from windows of consecutive ops, each solved (or bounded) exactly by CP-SAT.

Executes are serial, so makespan >= sum over a partition of the ops into consecutive windows
[a, b] of (end of E<b> - start of E<a>). For one window that span is at least the optimum of a
relaxation of the window alone: its own ops only (later ops' pending space and loads dropped),
times measured from the start of E<a>, and every load issued before E<a> taken as already done
(no HBM time, no wait; it still occupies SRAM while pending). The first window has nothing
before it, so it keeps its loads. Each window's CP-SAT lower bound (proven or not) counts.
The bound sees memory and per-window load order; the Ideal bound sees total HBM traffic.

Identical windows are solved once: a window's relaxation depends only on its ops' plans and
warm-ups (in order), the chip, and whether it is the first (inputs do not enter it: the
execution order is the instance's), so windows equal in those have the same optimum, and the
bound CP-SAT proved for one holds for each. Decoder layers repeat, so a model of 80 layers has
a handful of distinct windows.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ortools.sat.python import cp_model

from elk_opt.errors import UsageError
from elk_opt.problem import Instance, Op
from elk_opt.progress import report_progress
from formulations.common import Restrictions, ceil_integer
from formulations.cpsat_model import build
from formulations.cpsat_run import Interrupt


@dataclass(frozen=True)
class WindowBound:
    bound_ns: int
    windows: int
    proven: int  # windows whose relaxation was solved to optimality
    wall_s: float
    solved: int  # windows counted: all of them unless a SIGINT stopped the search early
    distinct: int = 0  # windows handed to CP-SAT (the others repeat one of them)


def window_key(instance: Instance, first: int, stop: int) -> tuple:
    """What a window's relaxation depends on: its ops' plans and warm-ups in order (names,
    inputs and metadata aside) and whether it is the instance's first window."""
    return first == 0, instance.twin_key(first, stop)


def window_instance(instance: Instance, first: int, stop: int) -> Instance:
    """Ops [first, stop) as an instance of their own (inputs outside the window dropped)."""
    ops = []
    for op in instance.ops[first:stop]:
        inputs = tuple(i - first for i in op.inputs if i >= first)
        ops.append(Op(name=op.name, kind=op.kind, layer=op.layer, inputs=inputs,
                      hbm_bytes=op.hbm_bytes, flops=op.flops, exec_plans=op.exec_plans,
                      preload_plans=op.preload_plans, warmup=op.warmup))
    return Instance(name=f"{instance.name}[{first}:{stop}]", chip=instance.chip,
                    ops=tuple(ops))


def window_bound(instance: Instance, width: int = 12, time_limit_s: float = 2.0,
                 threads: int = 2, progress: bool = False) -> WindowBound:
    """The sum of the windows' relaxation bounds, windows of `width` ops.

    A SIGINT stops at once: the windows bounded so far (the interrupted one with CP-SAT's bound
    at that moment) still sum to a lower bound, since every window's span is non-negative.
    """
    if width < 1:
        raise ValueError(f"window width must be at least 1, got {width}")
    started = time.perf_counter()
    n = len(instance.ops)
    total = proven = solved = 0
    seen: dict[tuple, tuple[int, bool]] = {}  # window key -> (its bound, proven)
    starts = range(0, n, width)
    with Interrupt() as interrupt, report_progress(len(starts), "window bound", unit="window",
                                                   enabled=progress) as shown:
        for first in starts:
            stop = min(n, first + width)
            key = window_key(instance, first, stop)
            if key in seen:
                bound, optimal = seen[key]
                total += bound
                proven += optimal
                solved += 1
                shown.advance(status=f"ops {first}-{stop - 1} repeat a window, running bound "
                                     f"{total:,} ns")
                continue
            cm = build(window_instance(instance, first, stop), Restrictions(),
                       free_first=first > 0)
            solver = cp_model.CpSolver()
            solver.parameters.max_time_in_seconds = time_limit_s
            solver.parameters.num_workers = threads
            status = interrupt.solve(solver, cm.model)
            if status == cp_model.INFEASIBLE:
                raise UsageError(f"instance {instance.name!r} is infeasible (ops "
                                 f"{first}-{stop - 1} cannot be scheduled within SRAM)")
            if status == cp_model.OPTIMAL:
                proven += 1
            bound = max(0, ceil_integer(solver.best_objective_bound))
            total += bound
            solved += 1
            state = "interrupted" if interrupt.seen else solver.status_name(status).lower()
            shown.advance(status=f"ops {first}-{stop - 1} {state}, running bound {total:,} ns")
            if interrupt.seen:
                break
            seen[key] = (bound, status == cp_model.OPTIMAL)
    return WindowBound(total, len(starts), proven, time.perf_counter() - started, solved,
                       len(seen))
