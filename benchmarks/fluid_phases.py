"""Where the fluid LP's optimum puts load work: per execute of one layer, the HBM's part.

The fluid LP (`elk_opt.bounds.fluid`) splits the time between execute starts into phases: the
execute alone, the execute beside a load of each demand class, a load of a class while no
execute runs. Its optimum may stop a load anywhere and resume it later, which a plan cannot
(a load, once started, runs to its end). Read per execute, the phases show where the LP keeps
the HBM idle: an execute it runs alone for its whole length is one every load is paused for.
On Llama2-70B b64 KV2048 analytic (`bsp`) the LP runs no load beside a middle layer's norms,
rotaries, residuals, `act` and `gate/Mul` (BENCHMARKS.md, "The analytic worst row's steady
layer: the port, not SRAM").

    python benchmarks/fluid_phases.py INSTANCE.json --layer 1 [--time-limit 120]

The LP is the one for shared-noc (docs/spec.md 5b; under section 5 loads and executes do not
interact). Times are ns of the LP's optimum in the execute's interval (from its start to the
next execute's), rounded; classes are the LP's load demand representatives (a load's demand
rounded down to one).
"""

from __future__ import annotations

import argparse

from elk_opt.bounds.fluid import FluidModel, build_fluid, fluid_costs
from elk_opt.commands.flags import positive_float
from elk_opt.errors import InputError
from elk_opt.io import load_instance
from elk_opt.problem import Instance


def phases(model: FluidModel, b: int) -> tuple[float, dict[int, float], float]:
    """Interval b's execute alone, beside each class, and loads with no execute (ns)."""
    solution = model.lp.solution
    assert solution is not None
    alone = sum(solution[c] for c in model.solo[b])
    loads_alone = sum(solution[c] for c in model.alone[b])
    beside: dict[int, float] = {}
    if b < len(model.work):  # the last interval has no load columns
        for k, work in enumerate(model.work[b]):
            for c in work:
                if c not in model.alone[b]:
                    beside[model.reps[k]] = beside.get(model.reps[k], 0.0) + solution[c]
    return alone, beside, loads_alone


def report(instance: Instance, layer: int, limit_s: float) -> None:
    costs = fluid_costs(instance)
    model = build_fluid(costs, "shared-noc")
    bound = model.solve(limit_s, 1)
    if bound is None:
        print(f"the fluid LP did not finish in {limit_s:g} s")
        return
    print(f"{instance.name}: fluid LP {bound:,} ns; load classes {model.reps}")
    print(f"{'execute':44s} {'demand':>12s} {'alone':>8s}  beside loads (class: ns)")
    hbm_idle = 0.0
    for j, op in enumerate(instance.ops):
        if op.layer != layer:
            continue
        alone, beside, loads_alone = phases(model, j + 1)
        demands = sorted({c.exec_demand for c in costs[j]})
        span = f"{demands[0]}-{demands[-1]}" if len(demands) > 1 else str(demands[0])
        shown = ", ".join(f"{rep}: {t:,.0f}" for rep, t in sorted(beside.items()) if t >= 0.5)
        if loads_alone >= 0.5:
            shown += f"; loads alone {loads_alone:,.0f}"
        hbm_idle += alone
        print(f"{op.name[:44]:44s} {span:>12s} {alone:8,.0f}  {shown or '-'}")
    print(f"the layer's executes alone (the HBM idle beside them): {hbm_idle:,.0f} ns")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("instance", help="an instance (elk-instance/1)")
    ap.add_argument("--layer", type=int, required=True, help="the ops' `layer` field to show")
    ap.add_argument("--time-limit", type=positive_float, default=120.0)
    args = ap.parse_args()
    try:
        instance = load_instance(args.instance)
    except InputError as error:
        ap.error(str(error))  # exit 2
    if not any(op.layer == args.layer for op in instance.ops):
        ap.error(f"{args.instance}: no op has layer {args.layer}")
    report(instance, args.layer, args.time_limit)


if __name__ == "__main__":
    main()
