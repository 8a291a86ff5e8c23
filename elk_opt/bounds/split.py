"""The fluid MIP split over repeated layers: a Lagrangian decomposition at the LP's duals.

Valid for every plan that executes in the instance's order (any pair choice, preload order,
issue points and releases), under the timing it is built for.

The program is elk_opt.bounds.fluid_milp's MIP with loads run whole (elk_opt.bounds.contiguous)
and, beside its R5 rows with pending loads charged whole, R5 rows with the LP's fractional
charges (elk_opt.bounds.fluid_sram: both hold for a plan). On a whole decoder it is too large
to solve, and its repeats cannot be summed (elk_opt.bounds.periodic: a sum of 0/1 columns is
not 0/1). Split it instead. Its columns belong to ops (`anchor`); group them in blocks: the
prefix with the first repeat, each middle repeat, the last repeat with the suffix. A row
inside a block stays with it; a row between two neighbouring repeats (a link) is moved into
the objective with a multiplier y_r of the sign its bound allows: for every point of the
program, y_r (bound_r - a_r x) <= 0, so
    c x >= sum over blocks B of min over B's own rows of (c_B - sum_r y_r a_r,B) x_B
           + sum over links r of y_r bound_r,
and the right side, with each block's minimum replaced by any lower bound on it (HiGHS's
dual bound on the block's MIP), bounds the makespan from below. The middle repeats are the
same block with the same multipliers, so one is solved and counted C - 2 times.

The multipliers are the duals of the program's LP relaxation with the repeats summed
(elk_opt.bounds.periodic): each link row of the full program takes the dual of the summed row
of its kind, so every middle block sees the same objective. At those duals the blocks' LP
relaxations sum to the summed LP's optimum (LP duality: the duals of the block's own rows
make its LP's dual feasible), and that LP is at least the fluid LP with SRAM's (its rows are
a superset). Each block's MIP is at least its LP, so the bound is at least `fluid-sram`'s,
less the solvers' tolerances; it gains where a layer alone cannot blend pairs, pend a
fraction of a load, or pause a load, at the prices the whole model sets on what crosses the
layer's ends.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from dataclasses import dataclass

import highspy
import numpy as np

from elk_opt.bounds.contiguous import add_one_load_running
from elk_opt.bounds.fluid import FluidModel, _Lp
from elk_opt.bounds.fluid_milp import branch_and_bound
from elk_opt.bounds.fluid_sram import DEFAULT_BAND, build_fluid_sram, spaced_costs
from elk_opt.bounds.layers import MIN_MIP_S, layer_windows
from elk_opt.bounds.limits import DEFAULT_CLASSES
from elk_opt.bounds.periodic import EXPLICIT, Period, _candidates, summed_lp
from elk_opt.deadline import share
from elk_opt.problem import Instance, Timing
from formulations.highs_run import run_interruptible


@dataclass(frozen=True)
class SplitBound:
    bound_ns: int | None  # None: no repeats to split, or the LP or a block not solved
    lp_ns: int | None  # the blocks' LP relaxations summed at the same multipliers
    repeats: int
    blocks_proven: int  # of the three distinct blocks, MIPs solved to optimality
    wall_s: float
    mip_time_s: float  # the longest limit a block's MIP had


def split_band(instance: Instance, band: int = DEFAULT_BAND) -> int:
    """`band`, or less so that one decoder layer (the most common run of equal `layer`
    fields) is a whole period: a row then spans two repeats at most when repeats are single
    layers, and the blocks are one layer each, which HiGHS solves far sooner than two (on
    Llama2-13B b64 KV4096, 200 s a block: 15,610,531 ns at band 20, 15,587,217 at 24, where
    the LP, 15,573,925, is the same)."""
    ops = instance.ops
    runs = Counter(b - a for a, b in layer_windows(instance, max_width=max(1, len(ops)))
                   if ops[a].layer is not None)
    if not runs:
        return band
    layer = runs.most_common(1)[0][0]
    return max(0, min(band, layer - 2))


def _build(costs: list, sram: int, timing: Timing, band: int, max_classes: int) -> FluidModel:
    model = build_fluid_sram(costs, sram, timing, band, max_classes, whole=True, both=True)
    add_one_load_running(model)
    return model


def _block_of(anchor: int, period: Period) -> int:
    """0: the prefix and the first repeat, 1 and 2: the middle repeats, 3: the last repeat
    and the suffix (of the shortened model: EXPLICIT repeats)."""
    if anchor < period.start:
        return 0
    return min((anchor - period.start) // period.length, EXPLICIT - 1)


def fluid_split_bound(instance: Instance, timing: Timing, mip_time_s: float = 60.0,
                      band: int = DEFAULT_BAND, max_classes: int = DEFAULT_CLASSES,
                      threads: int = 1, ends: float | None = None) -> SplitBound:
    """The bound of the module docstring: the summed LP, then each distinct block's MIP
    (`mip_time_s` each at most; before `ends`, a perf_counter time, they share what is left)."""
    started = time.perf_counter()
    costs = spaced_costs(instance)
    sram = instance.chip.sram_bytes
    for period in _candidates(costs, band + 2):
        short = (costs[:period.start + EXPLICIT * period.length]
                 + costs[period.start + period.count * period.length:])
        relaxed = build_fluid_sram(short, sram, timing, band, max_classes)
        summed = summed_lp(relaxed.lp, period)
        if summed is None:
            continue
        duals = _summed_duals(summed.lp, max(MIN_MIP_S, share(ends, mip_time_s)), threads)
        if duals is None:  # the LP did not finish in time
            return SplitBound(None, None, period.count, 0, time.perf_counter() - started,
                              0.0)
        model = _build(short, sram, timing, band, max_classes)
        rows = list(model.lp.rows())
        # the LP's rows come first, in its order (fluid_sram `both`): a link of the LP is
        # the same row of the program; the program's own links are dropped (multiplier 0)
        assert rows[:len(relaxed.lp.row_lower)] == list(relaxed.lp.rows())
        return _split(model, rows, summed.links, duals, period, mip_time_s, threads, ends,
                      started)
    return SplitBound(None, None, 0, 0, time.perf_counter() - started, 0.0)


def _summed_duals(lp: _Lp, time_limit_s: float, threads: int) -> np.ndarray | None:
    h = lp.highs(time_limit_s, threads)
    if run_interruptible(h):
        raise KeyboardInterrupt
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None
    return np.asarray(h.getSolution().row_dual)


def _split(model: FluidModel, rows: list[tuple[dict[int, float], float, float]],
           links: dict[int, int], duals: np.ndarray, period: Period, mip_time_s: float,
           threads: int, ends: float | None, started: float) -> SplitBound:
    lp = model.lp
    blocks = [_block_of(a, period) for a in lp.anchor]
    cost = np.array(lp.cost, dtype=float)
    constant = 0.0
    for r, target in links.items():
        row, lower, upper = rows[r]
        y = duals[target]
        if y > 0 and math.isfinite(lower):
            bound = lower
        elif y < 0 and math.isfinite(upper):
            bound = upper
        else:
            continue  # a dual of the wrong sign (a tolerance's noise): the row is dropped
        for col, v in row.items():
            cost[col] -= y * v
        if min(blocks[c] for c in row) == 1:  # the kind's row between repeats 1 and 2
            constant += (period.count - 1) * y * bound
    integers = set(model.integers)
    total_mip, total_lp, proven, longest = constant, constant, 0, 0.0
    for k, (block, count) in enumerate(((0, 1), (1, period.count - 2), (EXPLICIT - 1, 1))):
        limit = share(ends, mip_time_s, 3 - k)
        if limit < MIN_MIP_S:
            return SplitBound(None, None, period.count, proven,
                              time.perf_counter() - started, longest)
        longest = max(longest, limit)
        mip, lp_value, solved = _block(lp, rows, blocks, block, cost, integers, limit, threads)
        if mip is None or lp_value is None:
            return SplitBound(None, None, period.count, proven,
                              time.perf_counter() - started, longest)
        total_mip += count * mip
        total_lp += count * lp_value
        proven += solved
    return SplitBound(max(0, math.floor(total_mip)), max(0, math.floor(total_lp)),
                      period.count, proven, time.perf_counter() - started, round(longest, 3))


def _block(lp: _Lp, rows: list[tuple[dict[int, float], float, float]], blocks: list[int],
           block: int, cost: np.ndarray, integers: set[int], time_limit_s: float,
           threads: int) -> tuple[float | None, float | None, bool]:
    """(HiGHS's dual bound on the block's MIP, its LP relaxation's optimum, whether the MIP
    was solved), each less a margin for the solver's tolerances; None if not known. The LP's
    value is reported, not counted: the MIP's dual bound is the one that carries a proof."""
    cols = [c for c, b in enumerate(blocks) if b == block]
    index = {c: i for i, c in enumerate(cols)}
    sub = _Lp()
    for c in cols:
        sub.column(float(cost[c]))
    for row, lower, upper in rows:
        if all(blocks[c] == block for c in row):
            sub.row({index[c]: v for c, v in row.items()}, lower, upper)
    ints = [index[c] for c in cols if c in integers]
    relaxed = sub.highs(time_limit_s, threads)
    if run_interruptible(relaxed):
        raise KeyboardInterrupt
    lp_value = None
    if relaxed.getModelStatus() == highspy.HighsModelStatus.kOptimal:
        value = relaxed.getInfo().objective_function_value
        lp_value = value - 1e-6 * abs(value) - 1e-6
    mip = branch_and_bound(sub, ints, time_limit_s, threads)
    return mip.dual, lp_value, mip.proven
