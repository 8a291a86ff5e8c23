"""Discrete-event fluid replay of a lowered device program.

The replay enforces the three synchronisation rules of `elk_opt.lower` and nothing else: the
call pointer stops at an execute until it returns; non-empty preloads start in call order, one
at a time (a DMA queue), not before their `not_before_ns`; an execute waits for its own tag and
its `not_before_ns`, then runs `distribute_data` (the warm-up) and `local_execute`.

Each running phase is a fluid flow whose work is its uncontended duration in ns. Between two
events (a flow finishing, a release time passing) the set of flows is fixed, so their speeds
(`flows.max_min_speeds` over the network's resources, or 1 without contention) are constant
and the replay jumps straight to the next event. At most one load and one execute phase run at
once, so an event costs one small max-min computation.

Demands per core, over a phase's uncontended duration d:
- load: `hbm_bytes / cores` from HBM (the `hbm` pattern), the rest of the preload layout
  (`space_bytes` beyond that, i.e. replication) shifted between cores (`ring`), every byte
  written through the SRAM port and replicated bytes also read at the sender;
- distribute_data: the preloaded bytes shifted between cores (`ring`), read and written;
- local_execute: `noc_bytes` shifted between cores (`ring`), read and written, plus one read of
  the execute layout (`space_bytes`) by the local computation.

Without contention every time is an integer sum of integer durations (exact in floating point
below 2**53 ns), so the replay reproduces DESIGN.md section 5 to the nanosecond.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

import numpy as np

from elk_opt.lower import DeviceProgram, ExecuteCall, PreloadCall
from elk_opt.simulator.flows import max_min_speeds
from elk_opt.simulator.network import CORE_IN, HBM, Network

TOLERANCE = 1e-9  # relative, for flows finishing together in floating point


@dataclass
class _Flow:
    phase: str  # "load" | "distribute" | "local"
    op: int
    left: float  # uncontended ns of work still to do
    demand: np.ndarray  # bytes/s per resource at full speed


@dataclass(frozen=True)
class Replay:
    """Raw per-op times (ns, floats) and the rate segments of one replay."""

    load_issue: tuple[float, ...]
    load_start: tuple[float, ...]
    load_end: tuple[float, ...]
    exec_issue: tuple[float, ...]
    exec_start: tuple[float, ...]  # after the wait: distribute_data starts
    distribute_end: tuple[float, ...]
    exec_end: tuple[float, ...]
    segments: tuple[tuple[float, float, float, float], ...]  # (t0, t1, HBM B/s, NoC B/s)
    resource_bytes: tuple[float, ...]  # bytes each resource carried over the replay
    end_ns: float
    events: int


def _demand(net: Network, dur_ns: int, hbm: float, ring: float, sram: float) -> np.ndarray:
    if dur_ns == 0:
        return np.zeros_like(net.capacity)
    per_core = hbm * net.hbm_pattern + ring * net.ring_pattern + sram * net.sram_unit
    return per_core / (dur_ns * 1e-9)


def load_flow(net: Network, c: PreloadCall) -> _Flow:
    from_hbm = c.hbm_bytes / net.chip.cores
    replicated = max(0.0, c.space_bytes - from_hbm)
    demand = _demand(net, c.load_ns, from_hbm, replicated, from_hbm + 2 * replicated)
    return _Flow("load", c.op, float(c.load_ns), demand)


def distribute_flow(net: Network, c: ExecuteCall) -> _Flow:
    b = c.distribute_bytes
    return _Flow("distribute", c.op, float(c.distribute_ns),
                 _demand(net, c.distribute_ns, 0, b, 2 * b))


def local_flow(net: Network, c: ExecuteCall) -> _Flow:
    b = c.noc_bytes
    return _Flow("local", c.op, float(c.local_ns),
                 _demand(net, c.local_ns, 0, b, c.space_bytes + 2 * b))


def replay(dp: DeviceProgram, net: Network, contention: bool = True) -> Replay:
    n = len(dp.op_names)
    nan = math.nan
    rec = {k: [nan] * n for k in ("load_issue", "load_start", "load_end", "exec_issue",
                                  "exec_start", "distribute_end", "exec_end")}
    calls = dp.calls
    pc = 0
    t = 0.0
    queue: deque[PreloadCall] = deque()
    empty: list[PreloadCall] = []  # 0-ns preloads waiting for their release
    done = [False] * n
    loading: _Flow | None = None
    executing: ExecuteCall | None = None  # from issue to return
    phase: _Flow | None = None
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
                loading = load_flow(net, c)
                changed = True
            if loading is not None and loading.left <= 0:
                rec["load_end"][loading.op] = t
                done[loading.op] = changed = True
                loading = None
            if (executing is not None and phase is None and done[executing.op]
                    and math.isnan(rec["exec_start"][executing.op])
                    and executing.not_before_ns <= t):
                rec["exec_start"][executing.op] = t
                phase = distribute_flow(net, executing)
                changed = True
            if phase is not None and phase.left <= 0:
                changed = True
                if phase.phase == "distribute":
                    rec["distribute_end"][phase.op] = t
                    phase = local_flow(net, executing)  # type: ignore[arg-type]
                else:
                    rec["exec_end"][phase.op] = t
                    phase = executing = None
        flows = [f for f in (loading, phase) if f is not None]
        horizon = math.inf
        if loading is None and queue:
            horizon = float(queue[0].not_before_ns)
        if empty:
            horizon = min(horizon, min(c.not_before_ns for c in empty))
        if executing is not None and phase is None and done[executing.op]:
            horizon = min(horizon, executing.not_before_ns)
        if flows:
            if contention:
                speeds = max_min_speeds(np.stack([f.demand for f in flows]), net.capacity)
            else:
                speeds = np.ones(len(flows))
            finish = [t + f.left / s for f, s in zip(flows, speeds, strict=True)]
            horizon = min(horizon, float(min(finish)))
        if horizon == math.inf:
            break
        slack = TOLERANCE * max(1.0, horizon)
        if flows:
            hbm = noc = 0.0
            for f, s, end in zip(flows, speeds, finish, strict=True):
                f.left = 0.0 if end <= horizon + slack else f.left - s * (horizon - t)
                hbm += s * f.demand[HBM]
                noc += s * f.demand[CORE_IN] * net.chip.cores  # bytes into the cores
            if horizon > t:
                segments.append((t, horizon, float(hbm), float(noc)))
                carried += (speeds @ np.stack([f.demand for f in flows])) * (horizon - t) * 1e-9
        t = horizon
        events += 1
    if pc < len(calls) or executing is not None:
        raise RuntimeError("device program deadlocked")  # excluded by the structure checks
    return Replay(**{k: tuple(v) for k, v in rec.items()}, segments=tuple(segments),
                  resource_bytes=tuple(carried.tolist()), end_ns=t, events=events)
