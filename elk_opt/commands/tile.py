"""`elk-opt tile instance.json slice.plan.json -o plan.json`: a slice's plan onto the whole model.

`certify` tiles the slices it solves itself, within its budget. A slice searched for longer,
or by another tool, tiles the same way: build the slice with `elk-opt instance --layers K`,
plan it with anything, and tile that plan here (formulations.lns_tiling); `certify` given the
tiled plan then keeps it and polishes from it.
"""

from __future__ import annotations

import argparse

from elk_opt.certification.certificate import read_plan_or_certificate
from elk_opt.commands.flags import output_file
from elk_opt.errors import InputError
from elk_opt.io import load_instance, save_plan


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("tile", help="repeat a slice plan's middle layers onto the whole model",
                       description="Tile a plan of a slice of a decoder (its first K layers "
                                   "and its tail, as `elk-opt instance --layers K` builds "
                                   "it) onto the whole model: one of the slice's middle "
                                   "periods of twin layers is repeated as often as the "
                                   "model needs, the layers after it and the tail move to "
                                   "the end, and loads are issued later where R5 breaks. "
                                   "Every period that can be repeated is timed exactly and "
                                   "the fastest tiling obeying R5 is written, under the "
                                   "slice plan's timing.")
    p.add_argument("instance", metavar="instance.json", help="the whole model")
    p.add_argument("slice_plan", metavar="slice.plan.json",
                   help="a plan of the slice, or a certificate (its plan)")
    p.add_argument("-o", "--output", type=output_file, required=True, metavar="plan.json",
                   help="the tiled plan")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from formulations.lns_tiling import NotASlice, tile_onto

    instance = load_instance(args.instance)
    sliced, _certificate = read_plan_or_certificate(args.slice_plan)
    try:
        plan = tile_onto(instance, sliced)
    except NotASlice as e:
        raise InputError(f"{args.slice_plan}: not a slice plan of {args.instance}: {e}") from None
    save_plan(args.output, plan)
    assert plan.claims is not None
    given = sliced.claims.makespan_ns if sliced.claims else None
    print(f"tiled: makespan {plan.claims.makespan_ns:,} ns on {len(instance.ops)} ops, from "
          f"{plan.claims.params['slice_layers']} layers"
          + (f" of {given:,} ns" if given is not None else "") + f" -> {args.output}")
    return 0
