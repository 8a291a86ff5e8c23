"""The two analytic timings of docs/spec.md (sections 5, 5b), recomputed from the text alone.

Section 5 ("separate-noc") is a max-plus recurrence in program order. Section 5b ("shared-noc")
keeps its start rules but lets a load and an execute that overlap share one core's NoC port, so
durations are only known by walking events in time. Both walks are linear in the program.
This is a second implementation on purpose: it shares no code with elk_opt's evaluator.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

PORT = 1000  # a core's whole NoC port, in permille
HALF = PORT // 2
NEVER = float("inf")  # later than any event


class Step(NamedTuple):
    """What one op's chosen (preload, exec) pair asks of the chip."""

    load_ns: int
    load_demand: int  # permille of the port while loading alone
    run_ns: int  # execute time plus warm-up
    run_demand: int


def port_work_ns(noc_ns: int | None, nbytes: int, link_bytes_per_s: int) -> int:
    """Port time a plan needs alone: its `noc_ns`, else its bytes at the port's rate, rounded up."""
    if noc_ns is not None:
        return noc_ns
    return -(-nbytes * 1_000_000_000 // link_bytes_per_s)


def port_demand(duration_ns: int, work_ns: int) -> int:
    """ceil(1000 * work / duration), at most the whole port; 0 when either is 0."""
    if duration_ns == 0 or work_ns == 0:
        return 0
    return min(PORT, -(-PORT * work_ns // duration_ns))


Program = Sequence[tuple[str, int]]  # ("P" | "E", op), a program known to be sound


def separate_makespan(steps: Sequence[Step], program: Program,
                      release: Mapping[tuple[str, int], int]) -> int:
    """Section 5: every instruction takes its own duration."""
    loaded = [0] * len(steps)
    exec_free = hbm_free = 0
    for kind, j in program:
        ready = max(exec_free, release.get((kind, j), 0))
        if kind == "P":
            load_ns = steps[j].load_ns
            if load_ns:  # a preload that moves data waits for and holds the HBM
                ready = max(ready, hbm_free)
                hbm_free = ready + load_ns
            loaded[j] = ready + load_ns
        else:
            exec_free = max(ready, loaded[j]) + steps[j].run_ns
    return exec_free


def shared_makespan(steps: Sequence[Step], program: Program,
                    release: Mapping[tuple[str, int], int]) -> int:
    """Section 5b: section 5's start rules, durations from the shared port, event by event.

    Two lanes: the data loads (serial on the HBM) and the executes (serial on the cores), each
    in program order. A preload also waits for the execute listed last before it. Between two
    events (a start or an end) the port shares are constant; each active instruction keeps the
    units of work it has left (duration x demand, or duration when it does not use the port).
    """
    n = len(steps)
    gate = [-1] * n  # per op: the execute listed last before its preload, -1 for none
    data_loads: list[int] = []
    executes: list[int] = []
    for kind, j in program:
        if kind == "P":
            gate[j] = executes[-1] if executes else -1
            if steps[j].load_ns:
                data_loads.append(j)
        else:
            executes.append(j)
    rel_p = [release.get(("P", j), 0) for j in range(n)]
    rel_e = [release.get(("E", j), 0) for j in range(n)]
    load_end: list[int | None] = [None] * n
    run_end: list[int | None] = [None] * n

    t = hbm_free = exec_free = 0
    next_load = next_run = 0
    loading = running = -1  # the op active in each lane, -1 when the lane is idle
    load_left = run_left = 0  # units of work left
    while next_run < n or running >= 0:
        wake = NEVER  # the earliest known start still ahead
        started = True
        while started:  # start all that can start at t (a zero-length execute ends at once)
            started = False
            if loading < 0 and next_load < len(data_loads):
                j = data_loads[next_load]
                g = gate[j]
                after = 0 if g < 0 else run_end[g]
                if after is not None:
                    start = max(after, hbm_free, rel_p[j])
                    if start <= t:
                        loading, next_load, started = j, next_load + 1, True
                        load_left = steps[j].load_ns * (steps[j].load_demand or 1)
                    else:
                        wake = min(wake, start)
            if running < 0 and next_run < n:
                i = executes[next_run]
                if load_end[i] is None and steps[i].load_ns == 0:
                    # Moves no data: reserves its space once the execute before it has ended
                    # (it has: that execute comes earlier in this lane, which is idle).
                    g = gate[i]
                    load_end[i] = max(0 if g < 0 else run_end[g], rel_p[i])
                loaded = load_end[i]
                if loaded is not None:
                    start = max(exec_free, loaded, rel_e[i])
                    if start <= t:
                        next_run, started = next_run + 1, True
                        if steps[i].run_ns == 0:
                            run_end[i] = exec_free = t
                        else:
                            running = i
                            run_left = steps[i].run_ns * (steps[i].run_demand or 1)
                    else:
                        wake = min(wake, start)
        if loading < 0 and running < 0:
            if wake == NEVER:
                raise RuntimeError("section 5b walk stalled on a program assumed sound")
            t = int(wake)
            continue
        load_rate = (steps[loading].load_demand or 1) if loading >= 0 else 0
        run_rate = (steps[running].run_demand or 1) if running >= 0 else 0
        if loading >= 0 and running >= 0:
            dl, dr = steps[loading].load_demand, steps[running].run_demand
            if dl and dr and dl + dr > PORT:  # over the port: max-min fair split
                small = min(dl, dr, HALF)
                load_rate, run_rate = (small, PORT - small) if dl <= dr else (PORT - small, small)
        load_at = t - (-load_left // load_rate) if loading >= 0 else NEVER
        run_at = t - (-run_left // run_rate) if running >= 0 else NEVER
        now = int(min(load_at, run_at, wake))
        if loading >= 0:
            if load_at == now:
                load_end[loading] = hbm_free = now
                loading = -1
            else:
                load_left -= load_rate * (now - t)
        if running >= 0:
            if run_at == now:
                run_end[running] = exec_free = now
                running = -1
            else:
                run_left -= run_rate * (now - t)
        t = now
    return exec_free
