"""The fluid bound with SRAM with and without its rounded R5 rows, in the same run, on the
instances of `elk-certificate/1` files (a grid's, or a slice's), against each one's plan.

    python benchmarks/bench_rounded_r5.py CERT.json[.gz] [...] [--milp SECONDS]

Per certificate: the fluid LP with SRAM (`elk_opt.bounds.fluid_sram`) with the rounded rows
switched off (MAX_DIVISORS = 0) and on, each with its wall time, the certificate's best
bound and its plan's makespan, and the gap of that plan to the better of the certificate's
bound and the new LP's. With `--milp`, the fluid MIP too (off and on), each stopped after
that many seconds: for slices, it is not summed over repeated layers.
"""

from __future__ import annotations

import argparse
import time
from unittest import mock

from elk_opt.bounds import fluid_sram
from elk_opt.bounds.fluid import FluidBound
from elk_opt.bounds.fluid_milp import fluid_milp_bound
from elk_opt.io import plan_from_dict
from elk_opt.json_input import read_json


def timed(run) -> tuple[int | None, float]:
    started = time.perf_counter()
    value = run().bound_ns
    return value, time.perf_counter() - started


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("certificates", nargs="+")
    ap.add_argument("--milp", type=float, default=None, metavar="SECONDS")
    args = ap.parse_args()
    head = ("| instance | ops | plan ns | certificate's bound ns | LP without ns (s) "
            "| LP with ns (s) |")
    if args.milp:
        head += " MIP without ns | MIP with ns |"
    print(head + " LP change | gap before | gap after |")
    print("|---" * (head.count("|") + 2) + "|")
    for path in args.certificates:
        cert = read_json(path)
        plan = plan_from_dict(cert["plan"], path)
        instance, timing = plan.instance, cert["timing"]
        bound = cert["lower_bound_ns"]

        def lp(instance=instance, timing=timing) -> FluidBound:
            return fluid_sram.fluid_sram_bound(instance, timing)

        def mip(instance=instance, timing=timing) -> FluidBound:
            return fluid_milp_bound(instance, timing, args.milp)

        with mock.patch.object(fluid_sram, "MAX_DIVISORS", 0):
            lp_off, lp_off_s = timed(lp)
            mip_off = timed(mip)[0] if args.milp else None
        lp_on, lp_on_s = timed(lp)
        mip_on = timed(mip)[0] if args.milp else None
        best = max(b for b in (bound, lp_on, mip_on) if b is not None)
        makespan = cert["makespan_ns"]
        row = (f"| {instance.name} | {len(instance.ops)} | {makespan:,} | {bound:,} | "
               f"{lp_off:,} ({lp_off_s:.1f}) | {lp_on:,} ({lp_on_s:.1f}) |")
        if args.milp:
            row += f" {mip_off:,} | {mip_on:,} |"
        print(row + f" {lp_on / lp_off - 1:+.2%} | {makespan / bound - 1:.2%} | "
                    f"{makespan / best - 1:.2%} |", flush=True)


if __name__ == "__main__":
    main()
