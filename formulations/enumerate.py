"""Exhaustive search over every program and every pair choice: the third check on tiny instances.

It shares no modelling with the CP-SAT and ILP models: it walks every program (executes in the
instance's order, each `P<j>` anywhere before `E<j>`) depth-first, choosing each op's
(preload, execute) pair from all compatible pairs when its preload is placed, and times the
prefix with section 5's recurrence as it goes. Only prefixes that cannot end before the best
complete program are cut (timing never decreases along a program, and the executes left take
at least their shortest pairs' time one after another). Exponential: meant
for instances of four or five ops. `enumerate_free_optimum` repeats either search (section 5 or
5b) for every topological order of the ops: the optimum when the order is free (R2).
"""

from __future__ import annotations

from dataclasses import dataclass

from elk_opt.problem import Choice, Instance, Instr, Timing
from elk_opt.reorder import reorder, restore, topological_orders


@dataclass(frozen=True)
class Best:
    makespan_ns: int
    choice: tuple[Choice, ...]
    program: tuple[Instr, ...]


def enumerate_optimum(instance: Instance, below: int | None = None) -> Best | None:
    """The optimum with the instance's execution order, or None if no program fits R5 (or,
    with `below`, none ends before it)."""
    ops = instance.ops
    n = len(ops)
    sram = instance.chip.sram_bytes
    options = [[(q.id, p.id, q.load_ns, q.space_bytes, p.time_ns + t, p.space_bytes)
                for q, p, t in op.pairs()] for op in ops]
    best: list[Best | None] = [None]
    chosen: list[tuple | None] = [None] * n
    load_end = [0] * n
    program: list[Instr] = []

    rest = [sum(min(a[4] for a in row) for row in options[k:]) for k in range(n + 1)]

    def walk(executed: int, exec_free: int, hbm_free: int, pending: int) -> None:
        incumbent = best[0]
        least = exec_free + rest[executed]  # the executes left run one after another
        if incumbent is not None and least >= incumbent.makespan_ns:
            return
        if below is not None and least >= below:
            return
        if executed == n:
            best[0] = Best(exec_free, tuple(Choice(exec=c[1], preload=c[0]) for c in chosen),
                           tuple(program))
            return
        nxt = executed
        if chosen[nxt] is not None:  # execute the next op
            a = chosen[nxt]
            if max(a[5], a[3]) + pending - a[3] <= sram:  # R5: the larger layout of op nxt
                end = max(exec_free, load_end[nxt]) + a[4]
                program.append(("E", nxt))
                walk(executed + 1, end, hbm_free, pending - a[3])
                program.pop()
        for j in range(nxt, n):  # or preload any op not yet preloaded
            if chosen[j] is not None:
                continue
            for a in options[j]:
                if a[2] == 0:
                    start = end = exec_free
                    hbm = hbm_free
                else:
                    start = max(exec_free, hbm_free)
                    end = hbm = start + a[2]
                chosen[j] = a
                load_end[j] = end
                program.append(("P", j))
                walk(executed, exec_free, hbm, pending + a[3])
                program.pop()
                chosen[j] = None

    walk(0, 0, 0, 0)
    return best[0]


@dataclass(frozen=True)
class _Option:
    """One compatible pair of an op, with its port demands (section 5b)."""

    preload: int
    exec: int
    load_ns: int
    load_space: int
    run_ns: int
    run_space: int
    load_d: int
    run_d: int


def _port_share(load_d: int, exec_d: int) -> tuple[int, int]:
    """docs/spec.md 5b's max-min split of the port, written here from the text alone."""
    if not load_d or not exec_d or load_d + exec_d <= 1000:
        return load_d or 1, exec_d or 1
    small = min(load_d, exec_d, 500)
    return (small, 1000 - small) if load_d <= exec_d else (1000 - small, small)


def enumerate_shared_optimum(instance: Instance, shared: bool = True) -> SharedBest | None:
    """The 5b optimum over every pair choice, preload order, issue point and release time.

    Exhaustive in time: nanosecond by nanosecond (docs/spec.md 5b's shares, each instruction
    ending at the first ns its work reaches its units), whenever the HBM or the cores are idle
    and something could start, it branches on starting each candidate now or waiting one ns
    (a release time). Every schedule of a plan with integer releases is such a path, and
    every path is one: the program puts each data load after the executes that ended by its
    start (so before the others, pending at them for rule R5) and loads in start order, and
    releases every instruction at its start. Two reductions, both exact: a pair that moves no
    data is preloaded just before its own execute (its P takes no time, waits for nothing
    that its execute does not, and is then pending nowhere else), and nothing waits while
    nothing runs (that only shifts the rest later). With `shared=False` the port is not
    shared (section 5): a check of this search against `enumerate_optimum`.
    Exponential in everything: for three ops with durations of a few ns.
    """
    from elk_opt.noc import exec_use, load_use

    chip = instance.chip
    n = len(instance.ops)
    sram = chip.sram_bytes
    options = []
    for op in instance.ops:
        row = []
        for q, p, t in op.pairs():
            dl = load_use(chip, q).demand if shared else 0
            de = exec_use(chip, p, t).demand if shared else 0
            row.append(_Option(q.id, p.id, q.load_ns, q.space_bytes, p.time_ns + t,
                               p.space_bytes, dl, de))
        options.append(row)
    least_run = [min(a.run_ns for a in row) for row in options]
    best: list[SharedBest | None] = [None]
    seen: set = set()
    chosen: list[_Option | None] = [None] * n
    load_at: dict[int, int] = {}  # op -> start of its data load
    exec_at: list[int] = []
    exec_end: list[int] = []

    def fits(i: int, started: int) -> bool:
        a = chosen[i]
        pending = sum(chosen[j].load_space for j in range(i + 1, n) if started >> j & 1)
        return max(a.run_space, a.load_space) + pending <= sram

    def record(t: int) -> None:
        if best[0] is None or t < best[0].makespan_ns:
            best[0] = _plan(t, chosen, load_at, exec_at, exec_end)

    def visit(t: int, nxt: int, ex: tuple[int, int] | None, ld: tuple[int, int] | None,
              ready: int, started: int) -> None:
        """Decide at time t; `ex`/`ld`: the active execute/load as (op, units left)."""
        if nxt == n and ex is None:
            record(t)
            return
        if best[0] is not None and t + sum(least_run[nxt:]) >= best[0].makespan_ns:
            return
        key = (t, nxt, ex, ld, ready, started, tuple(chosen))
        if key in seen:
            return
        seen.add(key)
        loads: list[tuple[int, _Option] | None] = [None]
        if ld is None:
            loads += [(j, a) for j in range(nxt, n) if not started >> j & 1
                      for a in options[j] if a.load_ns]
        runs: list[_Option | None] = [None]
        if ex is None and nxt < n:
            if ready >> nxt & 1:
                runs.append(chosen[nxt])
            elif not started >> nxt & 1:
                runs += [a for a in options[nxt] if not a.load_ns]
        for load in loads:
            for run in runs:
                if load is None and run is None and ex is None and ld is None:
                    continue  # waiting while nothing runs only delays everything
                if load is not None and run is not None and load[0] == nxt:
                    continue  # the execute's pair moves no data: nothing to load
                _branch(t, nxt, ex, ld, ready, started, load, run)

    def _branch(t, nxt, ex, ld, ready, started, load, run) -> None:
        saved = chosen[nxt] if nxt < n else None
        new_started = started
        if load is not None:
            j, a = load
            chosen[j] = a
            load_at[j] = t
            new_started |= 1 << j
            ld = (j, a.load_ns * (a.load_d or 1))
        nxt2 = nxt
        if run is not None:
            chosen[nxt] = run
            exec_at.append(t)
            nxt2 = nxt + 1
            if run.run_ns == 0:
                if fits(nxt, started):
                    exec_end.append(t)
                    visit(t, nxt2, None, ld, ready, new_started)
                    exec_end.pop()
                _undo(load, run, nxt, saved)
                return
            ex = (nxt, run.run_ns * (run.run_d or 1))
        _tick(t, nxt2, ex, ld, ready, new_started)
        _undo(load, run, nxt, saved)

    def _undo(load, run, nxt, saved) -> None:
        if run is not None:
            exec_at.pop()
            chosen[nxt] = saved
        if load is not None:
            chosen[load[0]] = None
            del load_at[load[0]]

    def _tick(t, nxt, ex, ld, ready, started) -> None:
        """Advance one ns of work; end what reaches its units; decide again."""
        gl = ge = 1
        if ld is not None:
            gl = chosen[ld[0]].load_d or 1
        if ex is not None:
            ge = chosen[ex[0]].run_d or 1
            if ld is not None:
                gl, ge = _port_share(chosen[ld[0]].load_d, chosen[ex[0]].run_d)
        t += 1
        ended = None
        if ld is not None:
            left = ld[1] - gl
            if left <= 0:
                ready |= 1 << ld[0]
                ld = None
            else:
                ld = (ld[0], left)
        if ex is not None:
            left = ex[1] - ge
            if left <= 0:
                if not fits(ex[0], started):
                    return
                ended = ex[0]
                ex = None
            else:
                ex = (ex[0], left)
        if ended is not None:
            exec_end.append(t)
        visit(t, nxt, ex, ld, ready, started)
        if ended is not None:
            exec_end.pop()

    visit(0, 0, None, None, 0, 0)
    return best[0]


@dataclass(frozen=True)
class SharedBest:
    makespan_ns: int
    choice: tuple[Choice, ...]
    program: tuple[Instr, ...]
    release_ns: dict[Instr, int]


def _plan(makespan: int, chosen: list, load_at: dict[int, int], exec_at: list[int],
          exec_end: list[int]) -> SharedBest:
    """The plan of a path: data loads after the executes ended by their start, in start
    order; moves-nothing preloads just before their execute; everything released at its
    start."""
    n = len(chosen)
    slot = {j: min(j, sum(1 for e in exec_end if e <= s)) for j, s in load_at.items()}
    program: list[Instr] = []
    for i in range(n):
        for j in sorted((j for j in load_at if slot[j] == i), key=lambda j: load_at[j]):
            program.append(("P", j))
        if i not in load_at:
            program.append(("P", i))
        program.append(("E", i))
    release: dict[Instr, int] = {("E", i): s for i, s in enumerate(exec_at)}
    release.update({("P", j): s for j, s in load_at.items()})
    return SharedBest(makespan, tuple(Choice(exec=a.exec, preload=a.preload) for a in chosen),
                      tuple(program), release)


def enumerate_free_optimum(instance: Instance, timing: Timing = "separate-noc"
                           ) -> SharedBest | None:
    """The optimum over every execution order R2 allows, under `timing` (None if no plan
    fits R5): the instance-order search of every reordering of the ops, the best kept (the
    first order found wins ties). Section 5's plans carry no release times."""
    best: SharedBest | None = None
    for order in topological_orders(instance):
        permuted = reorder(instance, order)
        found: Best | SharedBest | None = (
            enumerate_shared_optimum(permuted) if timing == "shared-noc"
            else enumerate_optimum(permuted, None if best is None else best.makespan_ns))
        if found is None or (best is not None and found.makespan_ns >= best.makespan_ns):
            continue
        release = found.release_ns if isinstance(found, SharedBest) else {}
        choice, program, release = restore(order, found.choice, found.program, release)
        best = SharedBest(found.makespan_ns, choice, program, release)
    return best
