"""Chrome trace-event JSON of a simulation, for Perfetto (ui.perfetto.dev) or chrome://tracing.

One process (the chip) with two tracks: the preload DMA queue and the executes. Each execute is
a slice from its issue to its end with nested `wait`, `distribute_data` and `local_execute`.
Counters: HBM and NoC bandwidth (GB/s) and per-core SRAM occupancy (KiB). Times are in
microseconds, as the format requires.
"""

from __future__ import annotations

from typing import Any

from elk_opt.simulator.metrics import SimResult

PID = 1
LOAD_TID, EXEC_TID = 1, 2


def _us(ns: float) -> float:
    return round(ns / 1000.0, 6)


def _slice(name: str, tid: int, start: float, end: float, **args: Any) -> dict[str, Any]:
    ts = _us(start)
    return {"name": name, "ph": "X", "pid": PID, "tid": tid, "ts": ts,
            "dur": max(0.0, _us(end) - ts), "args": args}  # ends stay where they were


def trace_events(result: SimResult) -> dict[str, Any]:
    events: list[dict[str, Any]] = [
        {"name": "process_name", "ph": "M", "pid": PID,
         "args": {"name": f"{result.chip} ({result.topology}, {result.label})"}},
        {"name": "thread_name", "ph": "M", "pid": PID, "tid": LOAD_TID,
         "args": {"name": "preload (DMA queue)"}},
        {"name": "thread_name", "ph": "M", "pid": PID, "tid": EXEC_TID,
         "args": {"name": "execute"}},
    ]
    for i, op in enumerate(result.ops):
        if op.load_end_ns > op.load_start_ns:
            events.append(_slice(f"P{i} {op.name}", LOAD_TID, op.load_start_ns, op.load_end_ns,
                                 op=i))
        events.append(_slice(f"E{i} {op.name}", EXEC_TID, op.exec_issue_ns, op.exec_end_ns,
                             op=i))
        for name, start, end in (("wait", op.exec_issue_ns, op.exec_start_ns),
                                 ("distribute_data", op.exec_start_ns, op.distribute_end_ns),
                                 ("local_execute", op.distribute_end_ns, op.exec_end_ns)):
            if end > start:
                events.append(_slice(name, EXEC_TID, start, end, op=i))
    last = 0.0
    for t0, t1, hbm, noc in result.bandwidth:
        if t0 > last:
            events.append(_counter("bandwidth GB/s", last, {"HBM": 0.0, "NoC": 0.0}))
        events.append(_counter("bandwidth GB/s", t0,
                               {"HBM": round(hbm / 1e9, 3), "NoC": round(noc / 1e9, 3)}))
        last = t1
    events.append(_counter("bandwidth GB/s", last, {"HBM": 0.0, "NoC": 0.0}))
    for t, level in result.sram_timeline:
        events.append(_counter("SRAM per core KiB", t, {"used": round(level / 1024, 3)}))
    return {"traceEvents": events, "displayTimeUnit": "ns",
            "otherData": {"makespan_ns": result.makespan_ns, "sharing": result.sharing,
                          "timing": result.timing,
                          "analytic_makespan_ns": result.analytic_makespan_ns,
                          "shared_noc_makespan_ns": result.shared_noc_makespan_ns}}


def _counter(name: str, t: float, args: dict[str, float]) -> dict[str, Any]:
    return {"name": name, "ph": "C", "pid": PID, "ts": _us(t), "args": args}
