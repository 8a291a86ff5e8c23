"""What a replay measured: makespan, bandwidth use, TFLOPS, the paper's breakdown, SRAM.

Every result also carries two analytic makespans to compare with: the plan's own (under its
timing, section 5 or 5b) and section 5b's, so a replay with full contention says how far it is
from each.

Utilisations are averages over the makespan: HBM bytes moved over `makespan * hbm_bytes_per_s`;
NoC bytes delivered into cores (HBM distribution, replication, warm-up and execute traffic) over
`makespan * cores * link_bytes_per_s`, the same definition on both topologies. The breakdown
splits the makespan into execution overlapped with a load, execution only, load only and
stalls (neither). Bottlenecks: the resources with the highest average utilisation (above 1
without full contention means the plan's timing oversubscribes the resource).

SRAM occupancy per core (every core holds the same bytes): a preload reserves its preload-layout
space from the moment it starts until its execute starts, an execute holds its execute-layout
space while it runs. Its peak never exceeds the static R5 figure when every chosen
preload layout fits in its execute layout, as in every instance the project builds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from elk_opt.lower import DeviceProgram, ExecuteCall, PreloadCall
from elk_opt.problem import Timing
from elk_opt.simulator.engine import TOLERANCE, Replay
from elk_opt.simulator.network import Network
from elk_opt.simulator.sharing import LABELS, Number, Sharing


@dataclass(frozen=True)
class Breakdown:
    overlapped_ns: float  # execution while a load runs
    exec_only_ns: float
    preload_only_ns: float
    stall_ns: float  # neither (waiting for a release)


@dataclass(frozen=True)
class OpTimes:
    """One op's times in ns: integers when the replay is exact (sharing `none` or `port`)."""

    name: str
    load_start_ns: float
    load_end_ns: float
    exec_issue_ns: float
    exec_start_ns: float  # after the wait
    distribute_end_ns: float  # warm-up done
    exec_end_ns: float


@dataclass(frozen=True)
class SimResult:
    makespan_ns: int  # this replay's
    sharing: Sharing
    timing: Timing  # the plan's
    analytic_makespan_ns: int  # under the plan's timing (docs/spec.md section 5 or 5b)
    shared_noc_makespan_ns: int  # section 5b, on the chip simulated
    chip: str
    topology: str
    hbm_util: float
    noc_util: float
    tflops: float
    breakdown: Breakdown
    ops: tuple[OpTimes, ...]
    sram_timeline: tuple[tuple[float, int], ...]  # (time ns, bytes per core from then on)
    peak_sram_bytes: int
    sram_bytes: int  # capacity per core
    bandwidth: tuple[tuple[float, float, float, float], ...]  # (t0, t1, HBM B/s, NoC B/s)
    bottlenecks: tuple[tuple[str, float], ...]  # busiest resources, average utilisation
    events: int
    wall_s: float

    @property
    def slowdown(self) -> float:
        """This replay over the plan's analytic makespan."""
        return _ratio(self.makespan_ns, self.analytic_makespan_ns)

    @property
    def slowdown_vs_shared_noc(self) -> float:
        """This replay over the section-5b makespan."""
        return _ratio(self.makespan_ns, self.shared_noc_makespan_ns)

    @property
    def label(self) -> str:
        return LABELS[self.sharing]

    def summary(self) -> dict[str, Any]:
        """The scalar metrics, as `elk-opt simulate --json` prints them."""
        b = self.breakdown
        return {"makespan_ns": self.makespan_ns, "sharing": self.sharing,
                "timing": self.timing, "analytic_makespan_ns": self.analytic_makespan_ns,
                "slowdown": round(self.slowdown, 6),
                "shared_noc_makespan_ns": self.shared_noc_makespan_ns,
                "slowdown_vs_shared_noc": round(self.slowdown_vs_shared_noc, 6),
                "chip": self.chip, "topology": self.topology,
                "hbm_util": round(self.hbm_util, 6), "noc_util": round(self.noc_util, 6),
                "tflops": round(self.tflops, 6),
                "breakdown_ns": {"overlapped": round(b.overlapped_ns, 3),
                                 "exec_only": round(b.exec_only_ns, 3),
                                 "preload_only": round(b.preload_only_ns, 3),
                                 "stall": round(b.stall_ns, 3)},
                "peak_sram_bytes": self.peak_sram_bytes, "sram_bytes": self.sram_bytes,
                "bottlenecks": {name: round(util, 6) for name, util in self.bottlenecks},
                "events": self.events, "wall_s": round(self.wall_s, 6),
                "events_per_s": round(self.events / self.wall_s, 1) if self.wall_s else None}


def _ratio(a: int, b: int) -> float:
    return a / b if b else 1.0


def whole_ns(t: Number) -> int:
    """A replay time in whole nanoseconds: exact (integer) replays as they are, floating-point
    ones rounded up unless within the replay's tolerance of an integer."""
    if isinstance(t, int):
        return t
    return math.ceil(t - TOLERANCE * max(1.0, t))


def _overlap(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> float:
    """Total length of the intersection of two lists of sorted, disjoint intervals."""
    total, i, j = 0.0, 0, 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        total += max(0.0, hi - lo)
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def breakdown(rep: Replay) -> Breakdown:
    execs = sorted(zip(rep.exec_start, rep.exec_end, strict=True))
    loads = sorted((s, e) for s, e in zip(rep.load_start, rep.load_end, strict=True) if e > s)
    busy_exec = sum(e - s for s, e in execs)
    busy_load = sum(e - s for s, e in loads)
    both = _overlap(execs, loads)
    return Breakdown(overlapped_ns=float(both), exec_only_ns=float(busy_exec - both),
                     preload_only_ns=float(busy_load - both),
                     stall_ns=float(max(0.0, rep.end_ns - busy_exec - busy_load + both)))


def sram_timeline(dp: DeviceProgram, rep: Replay) -> tuple[tuple[float, int], ...]:
    """Per-core SRAM occupancy as a step function; releases sort before claims at equal times."""
    changes: list[tuple[float, int]] = []
    load_space = {c.op: c.space_bytes for c in dp.calls if isinstance(c, PreloadCall)}
    for c in dp.calls:
        if isinstance(c, ExecuteCall):
            i = c.op
            changes.append((rep.load_start[i], load_space[i]))
            changes.append((rep.exec_start[i], c.space_bytes - load_space[i]))
            changes.append((rep.exec_end[i], -c.space_bytes))
    changes.sort(key=lambda tc: (tc[0], tc[1]))
    timeline: list[tuple[float, int]] = [(0.0, 0)]
    level = 0
    for t, delta in changes:
        level += delta
        if timeline[-1][0] == t:
            timeline[-1] = (t, level)
        else:
            timeline.append((t, level))
    return tuple(timeline)


def bottlenecks(net: Network, rep: Replay, seconds: float,
                top: int = 3) -> tuple[tuple[str, float], ...]:
    """The `top` resources with the highest average utilisation over the makespan."""
    if not seconds:
        return ()
    util = np.asarray(rep.resource_bytes) / (net.capacity * seconds)
    order = np.argsort(-util, kind="stable")[:top]
    return tuple((net.name(int(k)), float(util[k])) for k in order if util[k] > 0)


def summarize(dp: DeviceProgram, net: Network, rep: Replay, *, sharing: Sharing,
              analytic_ns: int, shared_noc_ns: int, wall_s: float) -> SimResult:
    chip = dp.chip
    makespan = whole_ns(rep.end_ns)
    seconds = makespan * 1e-9
    hbm_bytes = sum(c.hbm_bytes for c in dp.calls if isinstance(c, PreloadCall) and c.load_ns)
    noc_bytes = float(sum((t1 - t0) * 1e-9 * noc for t0, t1, _hbm, noc in rep.segments))
    timeline = sram_timeline(dp, rep)
    ops = tuple(OpTimes(name, *(getattr(rep, k)[i] for k in (
        "load_start", "load_end", "exec_issue", "exec_start", "distribute_end", "exec_end")))
        for i, name in enumerate(dp.op_names))
    return SimResult(
        makespan_ns=makespan, sharing=sharing, timing=dp.timing,
        analytic_makespan_ns=analytic_ns, shared_noc_makespan_ns=shared_noc_ns,
        chip=chip.name, topology=chip.noc.topology,
        hbm_util=hbm_bytes / (seconds * chip.hbm_bytes_per_s) if seconds else 0.0,
        noc_util=(noc_bytes / (seconds * chip.cores * chip.noc.link_bytes_per_s)
                  if seconds else 0.0),
        tflops=sum(dp.op_flops) / seconds / 1e12 if seconds else 0.0,
        breakdown=breakdown(rep), ops=ops, sram_timeline=timeline,
        peak_sram_bytes=max(level for _t, level in timeline), sram_bytes=chip.sram_bytes,
        bandwidth=rep.segments, bottlenecks=bottlenecks(net, rep, seconds), events=rep.events,
        wall_s=wall_s)
