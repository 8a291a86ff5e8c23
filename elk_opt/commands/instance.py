"""`elk-opt instance SOURCE -o instance.json`: build a problem instance.

SOURCE is a zoo model (`elk-opt models`), an ONNX file, `synthetic`, or `elk-artifact` (the
Elk implementation's measured Llama2-13B layer, repeated: elk_opt.frontend.artifact).
"""

from __future__ import annotations

import argparse
import time

from elk_opt.commands.flags import (
    add_quiet,
    nonnegative_int,
    output_file,
    positive_int,
    unit_fraction,
)
from elk_opt.errors import UsageError
from elk_opt.frontend import artifact
from elk_opt.frontend.chips import DEFAULT_CHIP, NOC_OCCUPANCIES, load_chip
from elk_opt.frontend.cost import DEFAULT_COST_MODEL
from elk_opt.frontend.partition import SearchOptions
from elk_opt.frontend.sources import instance_from_source
from elk_opt.io import save_instance
from elk_opt.problem import Instance

MAX_SYNTHETIC_PLANS = 400_000  # 100,000 ops of 4 plans: 73 MB of JSON, built in about 30 s


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("instance", help="build an elk-instance/1 file",
                       description="Build an instance from a zoo model (see `elk-opt models`), "
                                   "an ONNX file, 'synthetic' (a seeded synthetic "
                                   "decoder-like instance) or 'elk-artifact' (the Elk "
                                   "implementation's own plans of its Llama2-13B decode layer, "
                                   "batch 32, KV 2048, on its chip, repeated for --layers, "
                                   "default 40; docs/calibration.md).")
    p.add_argument("source", metavar="MODEL_OR_ONNX", help="zoo model name, model.onnx, "
                                                           "'synthetic' or 'elk-artifact'")
    p.add_argument("-o", "--output", required=True, type=output_file, metavar="instance.json")
    m = p.add_argument_group("models and ONNX files")
    m.add_argument("--chip", metavar="NAME_OR_TOML",
                   help=f"chip preset (`elk-opt chips`) or a chip TOML file "
                        f"(default {DEFAULT_CHIP})")
    m.add_argument("--batch", type=positive_int, default=32, help="sequences per step (default 32)")
    m.add_argument("--kv-len", type=positive_int, default=2048,
                   help="KV-cache tokens in decode, prompt tokens otherwise (default 2048)")
    m.add_argument("--layers", type=positive_int,
                   help="keep the first N decoder layers (zoo models, elk-artifact)")
    m.add_argument("--mode", default="decode", choices=("decode", "prefill", "forward"))
    m.add_argument("--dtype", default="bf16", help="weight and activation type of zoo "
                                                   "models: bf16, fp16, fp32, fp8")
    m.add_argument("--cost-model", metavar="NAME",
                   help="analytic (default), elk-paper (the Elk artifact's cost rules) or "
                        "table:PATH (from `elk-opt collect`)")
    m.add_argument("--noc-occupancy", choices=NOC_OCCUPANCIES, default=None,
                   help="how plans report NoC port use: bytes (section 5b derives it from "
                        "their bytes) or bsp (exchange phases and syncs hold the port); "
                        "default: the cost model's own (elk-paper: bsp), else the chip's "
                        "(`elk-opt chips`)")
    m.add_argument("--max-plans", type=positive_int,
                   help=f"execute plans kept per op (default {SearchOptions.max_exec})")
    m.add_argument("--max-preloads", type=positive_int,
                   help=f"preload plans kept per op (default {SearchOptions.max_preload})")
    g = p.add_argument_group("synthetic")
    g.add_argument("--ops", type=positive_int, default=48, help="number of ops (default 48)")
    g.add_argument("--plans", type=positive_int, default=4, help="execute plans per op (default 4)")
    g.add_argument("--seed", type=nonnegative_int, default=0)
    g.add_argument("--tightness", type=unit_fraction, default=0.5,
                   help="0 roomy .. 1 tightest feasible SRAM (default 0.5)")
    add_quiet(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    if args.source == "synthetic":
        if args.noc_occupancy is not None:
            raise UsageError("--noc-occupancy applies to zoo models and ONNX files")
        if args.ops * args.plans > MAX_SYNTHETIC_PLANS:
            raise UsageError(f"--ops x --plans must be at most {MAX_SYNTHETIC_PLANS:,} (the "
                             f"scale the evaluator is benchmarked at), got {args.ops:,} x "
                             f"{args.plans:,}")
        from elk_opt.frontend.synthetic import synthetic_instance  # numpy: only when used

        try:
            instance = synthetic_instance(args.ops, args.plans, args.seed, args.tightness)
        except ValueError as e:
            raise UsageError(str(e)) from None
    elif args.source == artifact.NAME:
        instance = _artifact(args)
    else:
        instance = _real(args)
    save_instance(args.output, instance)
    hbm = sum(op.hbm_bytes for op in instance.ops)
    print(f"{instance.name}: {len(instance.ops)} ops, {hbm / 1e9:,.3f} GB of HBM data, SRAM "
          f"{instance.chip.sram_bytes:,} B/core, built in {time.perf_counter() - started:.1f} s "
          f"-> {args.output}")
    return 0


def _real(args: argparse.Namespace) -> Instance:
    options = SearchOptions(max_exec=args.max_plans or SearchOptions.max_exec,
                            max_preload=args.max_preloads or SearchOptions.max_preload)
    return instance_from_source(args.source, load_chip(args.chip or DEFAULT_CHIP),
                                batch=args.batch, kv_len=args.kv_len, layers=args.layers,
                                mode=args.mode, dtype=args.dtype,
                                cost_model=args.cost_model or DEFAULT_COST_MODEL, options=options,
                                noc_occupancy=args.noc_occupancy, progress=not args.quiet)


# what the artifact's data fixes: flags given anything, or anything but its own values
ARTIFACT_FIXED = ("chip", "cost_model", "noc_occupancy", "max_plans", "max_preloads")
ARTIFACT_VALUES = {"batch": 32, "kv_len": 2048, "mode": "decode", "dtype": "bf16"}


def _artifact(args: argparse.Namespace) -> Instance:
    for dest in ARTIFACT_FIXED:
        if getattr(args, dest) is not None:
            raise UsageError(f"{artifact.NAME}: --{dest.replace('_', '-')} does not apply: the "
                             f"data fixes the chip, the costs and the plans (only --layers "
                             f"does)")
    for dest, value in ARTIFACT_VALUES.items():
        if getattr(args, dest) != value:
            raise UsageError(f"{artifact.NAME}: the data is {dest.replace('_', '-')} {value}, "
                             f"got --{dest.replace('_', '-')} {getattr(args, dest)}")
    return artifact.artifact_instance(args.layers or artifact.LAYERS)
