"""Which side of a certificate's gap the pair choice explains, and which the steady layer does.

For a plan (or a certificate's plan) of a whole decoder model under shared-noc, the plain
fluid LP (`elk_opt.bounds.fluid`) held to the plan's pairs (`held_to_pairs`):
- on the whole instance: how far above the certificate's bound the plan's pairs alone put
  the LP, and how far the plan is above that;
- on slices of the first A and B layers held alike: (LP(B) - LP(A)) / (B - A) is what one
  more layer costs the LP at these pairs, its steady layer, against the plan's own middle
  layers (the time from one layer's first execute to the next's, layers 3 to N-4).
A plan whose layers sit far above the LP's at its own pairs loses in how its loads are placed
(or the LP is loose there); a plan whose pairs raise the LP above the bound loses in its pairs
(or the LP prefers pairs no plan runs well). `--lp-pairs` does the same for the plan
`elk-full-lp` makes (Elk-Full at the pairs a fluid LP picks), to see how those pairs fare
once scheduled. Nothing here is a bound on the instance except the certificate's own.

    python benchmarks/which_side.py CERT_OR_PLAN.json [--slices 6,10] [--lp-pairs]
"""

from __future__ import annotations

import argparse
import statistics
import time

from elk_opt.bounds.fluid import fluid_bound
from elk_opt.certification.certificate import read_plan_or_certificate
from elk_opt.certification.slices import held_to_pairs
from elk_opt.errors import InputError
from elk_opt.evaluate import Schedule, evaluate_plan
from elk_opt.methods import solve
from elk_opt.problem import Plan
from elk_opt.solution import SolveOptions
from formulations.lns_tiling import Layers, slice_instance, structure

LP_LIMIT_S = 600.0


def middle_layers(schedule: Schedule, layers: Layers) -> list[int]:
    """A schedule's layer times, first execute to first execute, away from both ends."""
    starts = [schedule.exec_start[first] for first, _ in layers.runs]
    return [b - a for a, b in zip(starts[3:-4], starts[4:-3], strict=True)]


def report(label: str, plan: Plan, layers: Layers, slices: tuple[int, int],
           bound: int | None) -> None:
    """One plan's lines: the held LP whole and per layer, against the plan and the bound."""
    held = held_to_pairs(plan.instance, plan)
    schedule = evaluate_plan(plan)
    makespan = schedule.makespan_ns
    whole = fluid_bound(held, "shared-noc", LP_LIMIT_S).bound_ns
    line = f"{label}: plan {makespan:,} ns; fluid LP at its pairs {whole:,} ns"
    if bound:
        line += f" ({whole / bound - 1:+.2%} against the bound {bound:,})"
    print(line + f"; the plan {makespan / whole - 1:+.2%} above it")
    a, b = slices
    lp = {n: fluid_bound(slice_instance(held, layers, n), "shared-noc", LP_LIMIT_S).bound_ns
          for n in (a, b)}
    per_layer = (lp[b] - lp[a]) / (b - a)
    times = middle_layers(schedule, layers)
    median = statistics.median(times)
    print(f"  steady layer: the LP {per_layer:,.2f} ns (slices of {a} and {b} layers: "
          f"{lp[a]:,} and {lp[b]:,}); the plan's middle layers median {median:,.0f} "
          f"({median / per_layer - 1:+.2%}), {min(times):,} to {max(times):,}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("plan", help="a plan or certificate under shared-noc")
    ap.add_argument("--slices", default="6,10", help="the two slice lengths, in layers")
    ap.add_argument("--lp-pairs", action="store_true",
                    help="also elk-full-lp's plan, at the pairs a fluid LP picks")
    args = ap.parse_args()
    try:
        plan, certificate = read_plan_or_certificate(args.plan)
        a, b = sorted(int(x) for x in args.slices.split(","))
    except InputError as error:
        ap.error(str(error))  # exit 2
    except ValueError:
        ap.error(f"--slices: {args.slices!r} is not two layer counts, as 6,10")
    layers = structure(plan.instance)
    if layers is None:
        ap.error(f"{args.plan}: the plan's instance has no repeated decoder layers")
    if not 0 < a < b <= len(layers.runs) or a % layers.period or b % layers.period:
        ap.error(f"--slices: {a} and {b} must be distinct multiples of the layers' period "
                 f"({layers.period}), at most {len(layers.runs)}")
    if plan.timing != "shared-noc":
        ap.error(f"{args.plan}: its timing is {plan.timing}, not shared-noc")
    bound = certificate["lower_bound_ns"] if certificate else None
    report("the plan", plan, layers, (a, b), bound)
    if args.lp_pairs:
        began = time.perf_counter()
        other = solve(plan.instance, "elk-full-lp", SolveOptions(timing="shared-noc", threads=1))
        report(f"elk-full-lp ({time.perf_counter() - began:.0f} s)", other, layers, (a, b), bound)


if __name__ == "__main__":
    main()
