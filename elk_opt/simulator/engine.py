"""Discrete-event replay of a lowered device program.

The replay enforces the three synchronisation rules of `elk_opt.lower` and nothing else: the
call pointer stops at an execute until it returns; non-empty preloads start in call order, one
at a time (a DMA queue), not before their `not_before_ns`; an execute waits for its own tag and
its `not_before_ns`, then runs its phases (`distribute_data`, the warm-up, then
`local_execute`; one port activity under `port` sharing).

Each running phase is a flow with work left (`sharing`). Between two events (a flow finishing, a
release time passing) the set of flows is fixed, so their rates (`sharing.model(...).rates`)
are constant and the replay jumps straight to the next event: the earliest release, or a flow's
end at `t + ceil(left / rate)` (exact models) or `t + left / rate` (`full`). At most one load
and one execute phase run at once, so an event costs one small rate computation.

The `none` and `port` models count integer work, so their replays are integers throughout and
reproduce docs/spec.md sections 5 and 5b to the nanosecond; `full` is floating point, and flows
that end within a relative 1e-9 of each other end together.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

import numpy as np

from elk_opt.lower import DeviceProgram, ExecuteCall, PreloadCall
from elk_opt.simulator.network import CORE_IN, HBM, Network
from elk_opt.simulator.sharing import Flow, Number, Sharing, model

TOLERANCE = 1e-9  # relative, for flows finishing together in floating point


@dataclass(frozen=True)
class Replay:
    """Raw per-op times (ns; integers when exact) and the rate segments of one replay."""

    load_issue: tuple[Number, ...]
    load_start: tuple[Number, ...]
    load_end: tuple[Number, ...]
    exec_issue: tuple[Number, ...]
    exec_start: tuple[Number, ...]  # after the wait: the warm-up starts
    distribute_end: tuple[Number, ...]  # port: when the execute has done its warm-up's units
    exec_end: tuple[Number, ...]
    segments: tuple[tuple[float, float, float, float], ...]  # (t0, t1, HBM B/s, NoC B/s)
    resource_bytes: tuple[float, ...]  # bytes each resource carried over the replay
    end_ns: Number
    events: int


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def replay(dp: DeviceProgram, net: Network, sharing: Sharing = "full") -> Replay:
    m = model(sharing, net)
    n = len(dp.op_names)
    nan = math.nan
    rec: dict[str, list[Number]] = {
        k: [nan] * n for k in ("load_issue", "load_start", "load_end", "exec_issue",
                               "exec_start", "distribute_end", "exec_end")}
    calls = dp.calls
    pc = 0
    t: Number = 0
    queue: deque[PreloadCall] = deque()
    empty: list[PreloadCall] = []  # 0-ns preloads waiting for their release
    done = [False] * n
    loading: Flow | None = None
    executing: ExecuteCall | None = None  # from issue to return
    phases: deque[Flow] = deque()  # the executing call's phases still to start
    phase: Flow | None = None
    segments: list[tuple[float, float, float, float]] = []
    carried = np.zeros_like(net.capacity)
    events = 0
    while True:
        changed = True
        while changed:  # everything that happens at time t without time passing
            changed = False
            if executing is None and pc < len(calls):
                c = calls[pc]
                pc += 1
                changed = True
                if isinstance(c, PreloadCall):
                    rec["load_issue"][c.op] = t
                    (queue if c.load_ns else empty).append(c)
                else:
                    rec["exec_issue"][c.op] = t
                    executing = c
            for c in [c for c in empty if c.not_before_ns <= t]:
                empty.remove(c)
                rec["load_start"][c.op] = rec["load_end"][c.op] = t
                done[c.op] = changed = True
            if loading is None and queue and queue[0].not_before_ns <= t:
                c = queue.popleft()
                rec["load_start"][c.op] = t
                loading = m.load(c)
                changed = True
            if loading is not None and loading.left <= 0:
                rec["load_end"][loading.op] = t
                done[loading.op] = changed = True
                loading = None
            if (executing is not None and phase is None and done[executing.op]
                    and math.isnan(rec["exec_start"][executing.op])
                    and executing.not_before_ns <= t):
                rec["exec_start"][executing.op] = t
                phases.extend(m.execute(executing))
                phase = phases.popleft()
                if phase.warm_left is not None and phase.warm_left >= phase.left:
                    rec["distribute_end"][phase.op] = t  # no warm-up
                    phase.warm_left = None
                changed = True
            if phase is not None and phase.left <= 0:
                changed = True
                if phase.phase == "distribute":
                    rec["distribute_end"][phase.op] = t
                if phases:
                    phase = phases.popleft()
                else:
                    rec["exec_end"][phase.op] = t
                    phase = executing = None
        flows = [f for f in (loading, phase) if f is not None]
        horizon: Number = math.inf
        if loading is None and queue:
            horizon = queue[0].not_before_ns
        if empty:
            horizon = min(horizon, min(c.not_before_ns for c in empty))
        if executing is not None and phase is None and done[executing.op]:
            horizon = min(horizon, executing.not_before_ns)
        if flows:
            rates = m.rates(flows)
            if m.exact:
                ends: list[Number] = [t + _ceil_div(int(f.left), int(r))
                                      for f, r in zip(flows, rates, strict=True)]
            else:
                ends = [t + f.left / r for f, r in zip(flows, rates, strict=True)]
            horizon = min(horizon, min(ends))
        if horizon == math.inf:
            break
        if flows:
            slack = 0 if m.exact else TOLERANCE * max(1.0, horizon)
            step = horizon - t
            done_units = [f.left if end <= horizon + slack else r * step
                          for f, r, end in zip(flows, rates, ends, strict=True)]
            for f, r, units in zip(flows, rates, done_units, strict=True):
                if f.warm_left is not None and f.left - units <= f.warm_left:
                    rec["distribute_end"][f.op] = t + _ceil_div(int(f.left - f.warm_left),
                                                                int(r))
                    f.warm_left = None
                f.left -= units
            if step > 0:  # average rates over the segment, from the work actually done
                speeds = np.array([units / (step * f.scale)
                                   for f, units in zip(flows, done_units, strict=True)])
                use = speeds @ np.stack([f.demand for f in flows])  # bytes/s per resource
                segments.append((t, horizon, float(use[HBM]),
                                 float(use[CORE_IN]) * net.chip.cores))  # bytes into the cores
                carried += use * step * 1e-9
        t = horizon
        events += 1
    if pc < len(calls) or executing is not None:
        raise RuntimeError("device program deadlocked")  # excluded by the structure checks
    return Replay(**{k: tuple(v) for k, v in rec.items()}, segments=tuple(segments),
                  resource_bytes=tuple(carried.tolist()), end_ns=t, events=events)
