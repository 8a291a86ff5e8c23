"""Layer windows that carry the next layer's loads whole: an experiment, not a bound.

`carry` (elk_opt.bounds.carry) lets a layer window carry later layers' loads only as fluid
class work: they may pause and their SRAM is charged by the fraction done. This script asks
what a window sees when the next layer's ops are in its program as real ops: window w's
program is the fluid MIP with loads run whole (elk_opt.bounds.fluid_milp with
elk_opt.bounds.contiguous) over the ops of windows w and w + 1, whose objective counts only
window w's intervals [s_w, s_{w+1}); window w + 1's intervals are free. Two families of
prices tie the copies of an op in consecutive programs together:
- per op of a window (its window's key and its index there), mu per fraction of its load:
  window w pays it for the fraction of its own load done before s_w and earns it for the
  fraction of window w + 1's load of that op done in [s_w, s_{w+1});
- per op and pair, nu on the pair column: window w + 1's program pays it for its own op's
  pair and window w's earns it for its copy's, so in steady state both choose one pair.
  Without them the copy of the next layer chooses the pairs whose loads are shortest
  whatever its executes cost (its intervals are free), and the windows' LP sums to the
  executes alone (Llama2-13B b64 KV2048 elk-paper: 9,799,374 ns against the fluid LP's
  10,179,374).
The prices are the duals of the joint LP of the programs' relaxations with the coupling rows
(sum over windows of count x (paid - earned) <= 0 for mu, = 0 for nu).

Why this is not a bound: the fractions a window does of loads two or more windows ahead are
not in any program, so a plan that loads that far ahead pays for them (in their own window)
without any window earning them back. A bound needs columns for that work, as `carry` has
for every later load. The values below estimate what such a bound could reach and show
whether whole loads move the MIP.

    PYTHONPATH=. python benchmarks/carry_next.py INSTANCE.json [--mip-time-limit 300]
        [--program W]
"""

from __future__ import annotations

import argparse
import math
import platform
import time
from dataclasses import dataclass

import highspy

from elk_opt.bounds.contiguous import add_one_load_running
from elk_opt.bounds.fluid import FluidModel, _Lp
from elk_opt.bounds.fluid_milp import branch_and_bound
from elk_opt.bounds.fluid_sram import build_fluid_sram, spaced_costs
from elk_opt.bounds.layers import layer_windows
from elk_opt.bounds.limits import DEFAULT_CLASSES
from elk_opt.bounds.window import window_instance, window_key
from elk_opt.errors import InputError
from elk_opt.io import load_instance
from elk_opt.problem import Instance

Key = tuple  # ("load", op key) or ("pair", op key, pair index)


@dataclass(frozen=True)
class Program:
    model: FluidModel
    terms: list[tuple[int, Key, float]]  # (column, price, coefficient): paid - earned


def program(instance: Instance, windows: list[tuple[int, int]], keys: list[int], w: int,
            whole: bool) -> Program:
    """Window w's program (module docstring), its price terms listed, not yet priced."""
    a, b = windows[w]
    stop = windows[w + 1][1] if w + 1 < len(windows) else b
    ops = window_instance(instance, a, stop)
    costs = spaced_costs(ops)
    own = b - a
    model = build_fluid_sram(costs, ops.chip.sram_bytes, "shared-noc", band=len(costs),
                             max_classes=DEFAULT_CLASSES, whole=whole)
    if whole:
        add_one_load_running(model)
    free = list(range(own + 1, len(costs) + 1)) + ([0] if a else [])
    for interval in free:
        for col in model.phases[interval]:
            model.lp.cost[col] = 0.0
    terms: list[tuple[int, Key, float]] = []
    if a:  # the first window's time starts at 0: nothing of it is done before
        for j in range(own):
            terms += [(col, ("load", keys[w], j), 1.0) for col in model.fractions.get((j, 0), [])]
    for i in range(stop - b):
        j, op = own + i, (keys[w + 1], i)
        terms += [(col, ("load", *op), -1.0) for col in model.fractions.get((j, own), [])]
        terms += [(col, ("load", *op), 1.0) for col in model.fractions.get((j, 0), [])]
        # a pair that loads nothing stands for a plan's pair that may: earn its whole load
        terms += [(col, ("load", *op), -1.0)
                  for col, c in zip(model.pick[j], costs[j], strict=True) if c.load == 0]
        terms += [(col, ("pair", *op, p), 1.0) for p, col in enumerate(model.pick[j])]
    if w:
        for j in range(own):
            terms += [(col, ("pair", keys[w], j, p), -1.0) for p, col in enumerate(model.pick[j])]
    return Program(model, terms)


def joint_prices(programs: list[tuple[Program, int]]) -> tuple[float, dict[Key, float]]:
    """The joint LP's optimum and its coupling rows' duals as prices (module docstring)."""
    joint = _Lp()
    coupling: dict[Key, dict[int, float]] = {}
    for prog, count in programs:
        offset = joint.append(prog.model.lp, count)
        for col, key, v in prog.terms:
            cell = coupling.setdefault(key, {})
            cell[offset + col] = cell.get(offset + col, 0.0) + count * v
    order = sorted(coupling, key=repr)
    first = len(joint.row_lower)
    for key in order:
        joint.row(coupling[key], float("-inf") if key[0] == "load" else 0.0, 0.0)
    h = joint.highs(None, 1)
    h.run()
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        raise SystemExit(f"the joint LP ended {h.getModelStatus()}: no prices")
    duals = h.getSolution().row_dual[first:]
    prices = {key: (max(0.0, -d) if key[0] == "load" else -d)
              for key, d in zip(order, duals, strict=True)}
    return h.getInfo().objective_function_value, prices


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("instance")
    ap.add_argument("--mip-time-limit", type=float, default=300.0, help="per program")
    ap.add_argument("--program", type=int, default=None,
                    help="solve only the MIP of the program whose first window is this one")
    args = ap.parse_args()
    try:
        instance = load_instance(args.instance)
    except InputError as error:
        ap.error(str(error))  # exit 2
    windows = layer_windows(instance, 1)
    ids: dict[tuple, int] = {}
    keys = [ids.setdefault(window_key(instance, a, b), len(ids)) for a, b in windows]
    counts: dict[tuple[int, int | None], list[int]] = {}
    for w in range(len(windows)):
        pair = (keys[w], keys[w + 1] if w + 1 < len(windows) else None)
        counts.setdefault(pair, []).append(w)
    chosen = [(ws[0], len(ws)) for ws in counts.values()]
    if args.program is not None and args.program not in {w for w, _ in chosen}:
        ap.error(f"--program: {args.program} is not the first window of a program; those "
                 f"are {', '.join(str(w) for w, _ in chosen)}")
    print(f"machine: {platform.machine()}, {platform.python_version()}, one thread; "
          f"{instance.name}: {len(windows)} windows, {len(chosen)} programs")
    started = time.perf_counter()
    relaxed = {w: program(instance, windows, keys, w, False) for w, _n in chosen}
    value, prices = joint_prices([(relaxed[w], n) for w, n in chosen])
    print(f"joint LP {value:,.0f} ns ({time.perf_counter() - started:.1f} s)")
    print("| program (first window, count) | LP at the prices | MIP dual bound | MIP best "
          "solution | proven | s |")
    print("| --- | ---: | ---: | ---: | --- | ---: |")
    for w, n in chosen:  # the joint LP copied the relaxed programs: price them in place
        whole = program(instance, windows, keys, w, True)
        for prog in (relaxed[w], whole):
            for col, key, v in prog.terms:
                prog.model.lp.cost[col] += prices[key] * v
        lp = relaxed[w].model.lp.solve(None, 1)
        clock = time.perf_counter()
        limit = args.mip_time_limit if args.program in (None, w) else 0.0
        mip = branch_and_bound(whole.model.lp, whole.model.integers, limit, 1)
        print(f"| {w}, x{n} | {lp[0] if lp else math.nan:,.0f} | "
              f"{mip.dual if mip.dual is not None else math.nan:,.0f} | "
              f"{mip.objective if mip.objective is not None else math.nan:,.0f} | "
              f"{mip.proven} | {time.perf_counter() - clock:.0f} |", flush=True)


if __name__ == "__main__":
    main()
