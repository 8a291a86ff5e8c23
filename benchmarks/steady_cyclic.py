"""The shortest steady period of a plan's middle layers at the plan's own pairs (section 5b).

A cyclic CP-SAT model of a block of `--layers` consecutive decoder layers: every copy of the
block runs the same schedule, shifted by the period PI. Executes keep the instance's order;
the load of the block's op r may run up to `--ahead` blocks before its own execute. What the
model holds, in the frame of one block's executes (S_i, C_i) and each load in its own block's
frame (A_r, B_r):
- executes chained, the block's last ending by PI; each load ends before its own execute;
- loads serial on the HBM: copies shifted by 0 .. 2 * ahead + 1 periods never overlap;
- the port: for a load copy and an execute whose demands exceed the port together, an
  overlap o >= min(ends) - max(starts), and each side loses o x (its demand - its share) of
  work (`elk_opt.noc.shares`); an instruction's length x demand less its losses covers its work;
- R5 with every load issued just before the first execute it overlaps (the fewest pending): a
  load copy that starts before C_i is pending at E<i> if its own execute comes later;
- redundant rows the fluid LP also has (each load's time lies beside executes or while none
  runs; one load at a time beside each execute; the loads fit in PI), so that CP-SAT's bound
  starts where the fluid LP's per-layer steady state is.
`--order r:k,...` fixes the cyclic load order (op r of the block k blocks ahead, in start
order within one period): with it CP-SAT often proves the order's optimum in seconds, and a
probe under a cap ends within a second. `--near` (with `--cap`) probes the plan's order and
every order one move from it (one load taken out and put back elsewhere), each fixed: a
search of the orders around the plan's, at the plan's pairs or at those `--pair` sets.

The model's optimum is the best period of plans that repeat one block exactly, at these pairs,
with loads at most `ahead` blocks early: a statement about such plans, not a bound on the
instance. `--check N` times the best schedule exactly (N copies of the block, every instruction
released at its model time, `elk_opt.evaluate`) and prints the periods it gives and R5's peak.

    python benchmarks/steady_cyclic.py CERT_OR_PLAN.json --layer 20 [--layers 1]
        [--time-limit 120] [--threads 2] [--order 10:0,18:0,...] [--check 8]
        [--sram-scale 10] [--cap NS --worker max_lp] [--pair 12:2:1 ...] [--near]

With `--cap` the model is a probe: periods up to the cap, no hint. On the grid's two worst
elk-paper rows its bound did not rise in 300 s: it stayed at the layer's executes end to end
at the plan's pairs (OPT-30B b32 KV2048, 234,696 ns) and at the fluid LP's layer (Llama2-13B
b64 KV2048, 251,712).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import threading
import time
from dataclasses import dataclass

from ortools.sat.python import cp_model

from elk_opt.bounds.fluid_sram import SpacedCost, spaced_cost
from elk_opt.certification.certificate import read_plan_or_certificate
from elk_opt.commands.flags import positive_float
from elk_opt.errors import InputError
from elk_opt.evaluate import evaluate, evaluate_plan
from elk_opt.noc import PORT, exec_use, load_use, shares
from elk_opt.problem import Choice, Plan
from formulations import cpsat_run
from formulations.lns_tiling import structure

Var = cp_model.IntVar


@dataclass(frozen=True)
class Cycle:
    """One period of a steady schedule, in the frame of a block's executes."""

    period: int
    exec_start: tuple[int, ...]
    exec_end: tuple[int, ...]
    load_start: dict[int, int]  # per op of the block with a load, in its own block's frame
    load_end: dict[int, int]

    def order(self) -> list[tuple[int, int]]:
        """The cyclic load order, as (op, blocks ahead) by start within [0, period)."""
        placed = []
        for r, a in self.load_start.items():
            k = -(a // self.period) if a < 0 else 0
            placed.append((a + k * self.period, r, k))
        return [(r, k) for _, r, k in sorted(placed)]


Block = tuple[list[SpacedCost], Cycle, int, int]  # its costs, the plan's cycle, its op range


def block_of(plan: Plan, first_layer: int, layers: int) -> Block:
    """The block's ops at the plan's pairs, the plan's own schedule of it, and its op range."""
    inst = plan.instance
    found = structure(inst)
    if found is None or first_layer + layers >= len(found.runs):
        raise ValueError(f"the plan's instance has no repeated layers {first_layer}-"
                         f"{first_layer + layers - 1} with a layer after them")
    start, stop = found.runs[first_layer][0], found.runs[first_layer + layers - 1][1]
    schedule = evaluate_plan(plan)
    origin = schedule.exec_start[start]
    period = schedule.exec_start[found.runs[first_layer + layers][0]] - origin
    ops = [cost_of(plan, j, plan.choice[j]) for j in range(start, stop)]
    loaded = [r for r, cost in enumerate(ops) if cost.load]
    own = Cycle(period,
                tuple(schedule.exec_start[j] - origin for j in range(start, stop)),
                tuple(schedule.exec_end[j] - origin for j in range(start, stop)),
                {r: schedule.load_start[start + r] - origin for r in loaded},
                {r: schedule.load_end[start + r] - origin for r in loaded})
    return ops, own, start, stop


def cost_of(plan: Plan, j: int, c: Choice) -> SpacedCost:
    """Op j of the plan's instance at pair `c`: its times, demands and spaces."""
    op, chip = plan.instance.ops[j], plan.instance.chip
    q, p = op.preload_by_id[c.preload], op.exec_by_id[c.exec]
    return spaced_cost(q, p, exec_use(chip, p, op.warmup_ns[(c.preload, c.exec)]),
                       load_use(chip, q))


def least_period(ops: list[SpacedCost]) -> int:
    """No period is shorter than the block's executes, or its loads, end to end."""
    return max(sum(o.run for o in ops), sum(o.load for o in ops))


def solve_cycle(ops: list[SpacedCost], sram: int, ahead: int, limit_s: float, threads: int,
                hint: Cycle, order: list[tuple[int, int]] | None, cap: int | None = None,
                worker: str | None = None) -> tuple[str, Cycle | None, int]:
    """CP-SAT on the cyclic model (module docstring): status, best cycle, bound on PI.
    `cap`: the horizon instead of the plan's period, and no hint (a probe, as `cpsat`'s);
    `worker`: the one CP-SAT subsolver to run (e.g. `max_lp`)."""
    m, md = len(ops), cp_model.CpModel()
    top = hint.period if cap is None else cap  # no worse period is of interest
    pi = md.NewIntVar(least_period(ops), top, "PI")
    far = (2 * ahead + 4) * top
    s = [md.NewIntVar(0, top, f"S{i}") for i in range(m)]
    c = [md.NewIntVar(0, top, f"C{i}") for i in range(m)]
    for i, o in enumerate(ops):
        md.Add(c[i] >= s[i] + o.run)
        if i:
            md.Add(s[i] >= c[i - 1])
    md.Add(s[0] == 0)
    md.Add(c[-1] <= pi)
    loads = [r for r in range(m) if ops[r].load]
    a, b, d = {}, {}, {}
    for r in loads:
        a[r] = md.NewIntVar(-ahead * top, top, f"A{r}")
        b[r] = md.NewIntVar(-ahead * top, top, f"B{r}")
        d[r] = md.NewIntVar(ops[r].load, top, f"D{r}")
        md.Add(b[r] == a[r] + d[r])
        md.Add(b[r] <= s[r])
        md.Add(a[r] >= s[r] - ahead * pi)
    copies = []
    for r in loads:
        for k in range(2 * ahead + 2):
            x, y = md.NewIntVar(-far, far, ""), md.NewIntVar(-far, far, "")
            md.Add(x == a[r] + k * pi)
            md.Add(y == b[r] + k * pi)
            copies.append(md.NewIntervalVar(x, d[r], y, f"I{r}.{k}"))
    md.AddNoOverlap(copies)
    if order:
        wrapped = [*order[1:], (order[0][0], order[0][1] + 1)]  # the next period's first
        for (r1, k1), (r2, k2) in zip(order, wrapped, strict=True):
            md.Add(a[r2] + k2 * pi >= b[r1] + k1 * pi)
        for r, k in order:
            md.Add(a[r] + k * pi >= 0)
            md.Add(a[r] + k * pi < pi)
    beside: dict[tuple[int, int, int], Var] = {}
    of_load: dict[int, list[Var]] = {r: [] for r in loads}
    of_run: dict[int, list[Var]] = {i: [] for i in range(m)}
    lost_load: dict[int, list[cp_model.LinearExprT]] = {r: [] for r in loads}
    lost_run: dict[int, list[cp_model.LinearExprT]] = {i: [] for i in range(m)}
    for r in loads:
        for k in range(ahead + 1):
            for i in range(r if k == 0 else m):  # a load ends before its own execute starts
                o_ = md.NewIntVar(0, 3 * top, f"o{r}.{k}.{i}")
                beside[(r, k, i)] = o_
                of_load[r].append(o_)
                of_run[i].append(o_)
                dl, de = ops[r].load_demand, ops[i].exec_demand
                if dl and de and dl + de > PORT:
                    lo, hi = md.NewIntVar(-far, far, ""), md.NewIntVar(-far, far, "")
                    md.AddMinEquality(lo, [b[r] + k * pi, c[i]])
                    md.AddMaxEquality(hi, [a[r] + k * pi, s[i]])
                    md.Add(o_ >= lo - hi)
                    gl, ge = shares(dl, de)
                    lost_load[r].append(o_ * (dl - gl))
                    lost_run[i].append(o_ * (de - ge))
    alone = {r: md.NewIntVar(0, top, f"z{r}") for r in loads}
    for r in loads:
        md.Add(d[r] <= sum(of_load[r]) + alone[r])
        if lost_load[r]:
            dl = ops[r].load_demand
            md.Add(dl * d[r] - sum(lost_load[r]) >= dl * ops[r].load)
    for i in range(m):
        md.Add(sum(of_run[i]) <= c[i] - s[i])
        if lost_run[i]:
            de = ops[i].exec_demand
            md.Add(de * (c[i] - s[i]) - sum(lost_run[i]) >= de * ops[i].run)
    md.Add(sum(alone.values()) <= pi - sum(c[i] - s[i] for i in range(m)))
    md.Add(sum(d.values()) <= pi)
    pending = {}
    for i in range(m):
        charged = []
        for r in loads:
            for k in range(ahead + 1):
                if k == 0 and r <= i:
                    continue
                u = md.NewBoolVar(f"u{r}.{k}.{i}")
                md.Add(a[r] + k * pi >= c[i]).OnlyEnforceIf(u.Not())
                if (r, k, i) in beside:
                    md.Add(beside[(r, k, i)] <= 3 * top * u)
                pending[(r, k, i)] = u
                charged.append(ops[r].load_space * u)
        md.Add(sum(charged) <= sram - ops[i].held_space)
    for (r, k, i), u in pending.items():  # once issued, pending at every later execute
        later = (r, k, i + 1) if i + 1 < m else (r, k - 1, 0)
        if later in pending:
            md.AddImplication(u, pending[later])
    md.Minimize(pi)
    if cap is None:
        _hint(md, hint, pi, s, c, a, b, d, beside, alone, pending)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = limit_s
    solver.parameters.num_workers = threads
    if worker:
        solver.parameters.subsolvers.append(worker)
    # CP-SAT's own limit can be overrun in presolve (a 40-op block ran 540 s of 300): stop it
    deadline = threading.Timer(limit_s, solver.stop_search)
    deadline.start()
    try:
        status = cpsat_run.solve(solver, md)
    finally:
        deadline.cancel()
    if status == cp_model.MODEL_INVALID:  # e.g. a --worker CP-SAT does not know
        raise ValueError(f"CP-SAT refused the model: {solver.solution_info()}")
    bound = int(solver.BestObjectiveBound())
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return solver.StatusName(status), None, bound
    return solver.StatusName(status), Cycle(
        solver.Value(pi), tuple(solver.Value(v) for v in s), tuple(solver.Value(v) for v in c),
        {r: solver.Value(a[r]) for r in loads}, {r: solver.Value(b[r]) for r in loads}), bound


def _hint(md: cp_model.CpModel, cycle: Cycle, pi: Var, s: list[Var], c: list[Var],
          a: dict[int, Var], b: dict[int, Var], d: dict[int, Var],
          beside: dict[tuple[int, int, int], Var], alone: dict[int, Var],
          pending: dict[tuple[int, int, int], Var]) -> None:
    """Every variable at the plan's own steady schedule (CP-SAT drops a hint it cannot
    complete, and the auxiliary columns are many)."""
    per = cycle.period
    md.AddHint(pi, per)
    for i, v in enumerate(s):
        md.AddHint(v, cycle.exec_start[i])
        md.AddHint(c[i], cycle.exec_end[i])
    covered = dict.fromkeys(a, 0)
    for r in a:
        md.AddHint(a[r], cycle.load_start[r])
        md.AddHint(b[r], cycle.load_end[r])
        md.AddHint(d[r], cycle.load_end[r] - cycle.load_start[r])
    for (r, k, i), o_ in beside.items():
        v = max(0, min(cycle.load_end[r] + k * per, cycle.exec_end[i])
                - max(cycle.load_start[r] + k * per, cycle.exec_start[i]))
        md.AddHint(o_, v)
        covered[r] += v
    for r, z in alone.items():
        md.AddHint(z, max(0, cycle.load_end[r] - cycle.load_start[r] - covered[r]))
    for (r, k, i), u in pending.items():
        md.AddHint(u, int(cycle.load_start[r] + k * per < cycle.exec_end[i]))


def check(plan: Plan, start: int, stop: int, cycle: Cycle, copies: int, ahead: int,
          sram: int, changes: dict[int, Choice]) -> None:
    """Time `copies` blocks repeating `cycle`, each instruction released at its model time,
    on the plan's chip with `sram` bytes of SRAM a core, at the plan's pairs but `changes`."""
    inst, m = plan.instance, stop - start
    ops = []
    for block in range(copies):
        for r in range(m):
            op = inst.ops[start + r]
            inputs = {i - start + block * m for i in op.inputs if start <= i < stop}
            if r == 0 and block:
                inputs.add(block * m - 1)
            ops.append(dataclasses.replace(op, name=f"{block}.{op.name}",
                                           inputs=tuple(sorted(x for x in inputs
                                                               if x < block * m + r))))
    steady = dataclasses.replace(inst, name=f"{inst.name} steady", ops=tuple(ops),
                                 chip=dataclasses.replace(inst.chip, sram_bytes=sram))
    choice = [changes.get(r, plan.choice[start + r]) for _ in range(copies) for r in range(m)]
    keyed, release = [], {}
    for block in range(copies):
        origin = (block + ahead) * cycle.period  # loads run up to `ahead` blocks early
        for r in range(m):
            j = block * m + r
            release[("E", j)] = origin + cycle.exec_start[r]
            keyed.append(((origin + cycle.exec_end[r], 0), ("E", j)))
            if r in cycle.load_start:  # listed before the first execute it overlaps
                release[("P", j)] = origin + cycle.load_start[r]
                keyed.append(((origin + cycle.load_start[r], 1), ("P", j)))
            else:  # moves no data: reserved just before its execute
                keyed.append(((origin + cycle.exec_start[r], 1), ("P", j)))
    program = [instr for _, instr in sorted(keyed)]
    schedule = evaluate(steady, choice, program, release, timing="shared-noc")
    starts = [schedule.exec_start[block * m] for block in range(copies)]
    periods = sorted({b - a for a, b in zip(starts, starts[1:], strict=False)})
    print(f"exact timing of {copies} copies: block periods {periods}, R5 peak "
          f"{schedule.peak_sram_bytes:,} of {sram:,}")


def _order(text: str, own: Cycle, ahead: int) -> list[tuple[int, int]]:
    """`--order`: each op of the block that loads data once, at most `ahead` blocks ahead."""
    try:
        order = [(int(r), int(k)) for r, k in (x.split(":") for x in text.split(","))]
    except ValueError:
        raise ValueError(f"--order: {text!r} is not op:blocks_ahead,...") from None
    if sorted(r for r, _ in order) != sorted(own.load_start) or not all(
            0 <= k <= ahead for _, k in order):
        raise ValueError(f"--order must name each of ops {sorted(own.load_start)} once, "
                         f"0 to {ahead} blocks ahead; got {text!r}")
    return order


def pair_changes(texts: list[str]) -> dict[int, Choice]:
    """`--pair r:preload:exec`, per op r of the block."""
    out = {}
    for text in texts:
        try:
            r, pre, ex = (int(x) for x in text.split(":"))
        except ValueError:
            raise ValueError(f"--pair: {text!r} is not op:preload:exec") from None
        out[r] = Choice(exec=ex, preload=pre)
    return out


def with_pairs(plan: Plan, start: int, ops: list[SpacedCost], changes: dict[int, Choice]
               ) -> list[SpacedCost]:
    """The block's costs with op r at the pair `changes[r]` instead of the plan's."""
    out = list(ops)
    for r, c in changes.items():
        if not 0 <= r < len(ops):
            raise ValueError(f"--pair: the block has ops 0-{len(ops) - 1}, got op {r}")
        op = plan.instance.ops[start + r]
        if (c.preload, c.exec) not in op.warmup_ns:
            raise ValueError(f"--pair: op {r} ({op.name}) has no pair {c.preload}:{c.exec}")
        out[r] = cost_of(plan, start + r, c)
        if bool(out[r].load) != bool(ops[r].load):
            raise ValueError(f"--pair: op {r} would change whether it loads data (the load "
                             "orders are the plan's)")
    return out


def one_move(order: list[tuple[int, int]]) -> list[list[tuple[int, int]]]:
    """The order itself and every order with one load moved to another place."""
    found = [order]
    for i in range(len(order)):
        for j in range(len(order)):
            if j not in (i, i + 1):
                moved = list(order)
                moved.insert(j if j < i else j - 1, moved.pop(i))
                found.append(moved)
    return found


def near(ops: list[SpacedCost], sram: int, ahead: int, limit_s: float, threads: int,
         own: Cycle, cap: int, worker: str | None) -> None:
    """`--near`: each order one move from the plan's, fixed, probed under the cap."""
    counts: dict[str, int] = {}
    orders = one_move(own.order())
    for k, order in enumerate(orders, 1):
        status, best, _bound = solve_cycle(ops, sram, ahead, limit_s, threads, own, order, cap,
                                           worker)
        counts[status] = counts.get(status, 0) + 1
        if best is not None:
            print(f"{status}: period {best.period:,} ns with the load order {best.order()}")
        print(f"order {k} of {len(orders)}: {_counted(counts)}", file=sys.stderr, flush=True)
    print(f"orders probed: {_counted(counts)}")


def _counted(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} {status.lower()}" for status, n in sorted(counts.items()))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("plan", help="a plan or certificate under shared-noc")
    ap.add_argument("--layer", type=int, required=True, help="the block's first layer")
    ap.add_argument("--layers", type=int, default=1, help="layers in the repeated block")
    ap.add_argument("--ahead", type=int, default=2, help="blocks a load may run early")
    ap.add_argument("--time-limit", type=positive_float, default=120.0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--order", help="fixed cyclic load order: op:blocks_ahead,...")
    ap.add_argument("--check", type=int, default=0, help="copies to time exactly (0: none)")
    ap.add_argument("--sram-scale", type=float, default=1.0,
                    help="the SRAM times this (> 0): whether SRAM is what holds an order back")
    ap.add_argument("--cap", type=int, help="the period's upper end instead of the plan's, "
                    "without the plan as a hint: a probe of periods up to it")
    ap.add_argument("--worker", help="the one CP-SAT subsolver to run (e.g. max_lp)")
    ap.add_argument("--pair", action="append", default=[], metavar="R:PRELOAD:EXEC",
                    help="op R of the block runs this pair instead of the plan's (repeatable)")
    ap.add_argument("--near", action="store_true", help="with --cap: probe the plan's load "
                    "order and each order one move from it, fixed, --time-limit each")
    args = ap.parse_args()
    try:
        plan, _certificate = read_plan_or_certificate(args.plan)
        ops, own, start, stop = block_of(plan, args.layer, args.layers)
        changes = pair_changes(args.pair)
        ops = with_pairs(plan, start, ops, changes)
        order = _order(args.order, own, args.ahead) if args.order else None
        if args.near and (args.cap is None or order is not None):
            raise ValueError("--near needs --cap and no --order")
        if not args.sram_scale > 0:
            raise ValueError(f"--sram-scale must be > 0, got {args.sram_scale}")
        least = least_period(ops)
        if args.cap is not None and args.cap < least:
            raise ValueError(f"--cap must be at least the block's least period, {least:,} ns "
                             f"(its executes or its loads end to end), got {args.cap}")
    except (InputError, ValueError) as error:
        ap.error(str(error))  # exit 2
    sram = int(plan.instance.chip.sram_bytes * args.sram_scale)
    print(f"block: layers {args.layer}-{args.layer + args.layers - 1}, {len(ops)} ops; the plan's "
          f"period {own.period:,} ns, its load order {own.order()}")
    if args.pair:
        print(f"pairs changed: {', '.join(args.pair)}; the block's executes end to end "
              f"{sum(o.run for o in ops):,} ns")
    began = time.perf_counter()
    if args.near:
        near(ops, sram, args.ahead, args.time_limit, args.threads, own, args.cap, args.worker)
        print(f"{time.perf_counter() - began:.1f} s")
        return
    try:
        status, best, bound = solve_cycle(ops, sram, args.ahead, args.time_limit, args.threads,
                                          own, order, args.cap, args.worker)
    except ValueError as error:
        ap.error(str(error))  # exit 2
    wall = time.perf_counter() - began
    if best is None:
        print(f"{status} after {wall:.1f} s: no cycle (bound {bound:,})")
        return
    print(f"{status} after {wall:.1f} s: period {best.period:,} ns, bound {bound:,} "
          f"({(best.period / own.period - 1) * 100:+.3f}% against the plan's); "
          f"load order {best.order()}")
    if args.check:
        check(plan, start, stop, best, args.check, args.ahead, sram, changes)


if __name__ == "__main__":
    main()
