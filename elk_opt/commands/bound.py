"""`elk-opt bound instance.json [--timing T]`: lower bounds on the makespan of every plan.

Each bound holds for every plan obeying R5 under the timing asked for (default shared-noc),
whatever its pairs, preload order, issue points and releases; the table says for which timings
and execution orders. With --exec-order free only the bounds that hold for every execution
order are computed. The bounds are described in `elk_opt.bounds.run_all`.
"""

from __future__ import annotations

import argparse

from elk_opt.bounds import limits
from elk_opt.bounds.run_all import lower_bounds
from elk_opt.commands.flags import (
    add_exec_order,
    add_quiet,
    add_timing,
    nonnegative_int,
    output_file,
    positive_float,
    thread_count,
)
from elk_opt.files import save_json
from elk_opt.io import load_instance


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bound", help="lower bounds on the makespan (Ideal, cuts, fluid LPs, LP, "
                                     "windows, layer windows)", description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("instance", metavar="instance.json")
    add_timing(p)
    add_exec_order(p)
    p.add_argument("--fluid-max-ops", type=nonnegative_int, default=limits.FLUID_MAX_OPS,
                   metavar="N",
                   help="skip the fluid LP above this many ops (default %(default)s)")
    p.add_argument("--fluid-time", type=positive_float, default=limits.FLUID_TIME_S, metavar="S",
                   help="time limit of the fluid LP (default %(default)g s)")
    p.add_argument("--fluid-sram-max-ops", type=nonnegative_int,
                   default=limits.FLUID_SRAM_MAX_OPS, metavar="N",
                   help="skip the fluid LP with SRAM above this many ops, counted after "
                        "repeated layers are summed into one block (default %(default)s; it "
                        "shares --fluid-time)")
    p.add_argument("--fluid-milp-max-ops", type=nonnegative_int, default=limits.FLUID_MILP_MAX_OPS,
                   metavar="N",
                   help="skip the fluid MIP with SRAM (pairs and pending loads whole) above "
                        "this many ops (default %(default)s; it shares --fluid-time, "
                        "and stopped by it still gives a bound)")
    p.add_argument("--fluid-contiguous-max-ops", type=nonnegative_int,
                   default=limits.FLUID_CONTIGUOUS_MAX_OPS, metavar="N",
                   help="skip the fluid MIP with one load running at each execute start above "
                        "this many ops (default %(default)s; it shares "
                        "--fluid-time)")
    p.add_argument("--whole-ns", action="store_true",
                   help="after a finished fluid MIP with one load running at each execute "
                        "start, the same with every interval a whole number of ns "
                        "(fluid-whole-ns: its last ns), in at most four times its time")
    p.add_argument("--fluid-split-max-ops", type=nonnegative_int,
                   default=limits.FLUID_SPLIT_MAX_OPS, metavar="N",
                   help="skip the fluid MIP with loads run whole split over repeated layers "
                        "above this many ops, counted as for --fluid-sram-max-ops (default "
                        "%(default)s; each of its three blocks gets --fluid-time)")
    p.add_argument("--window", type=nonnegative_int, default=limits.WINDOW_OPS, metavar="N",
                   help="ops per window of the window bound (0: skip it; default %(default)s)")
    p.add_argument("--window-time", type=positive_float, default=limits.WINDOW_TIME_S, metavar="S",
                   help="CP-SAT time per window (default %(default)g s)")
    p.add_argument("--layers", type=nonnegative_int, default=limits.LAYERS, metavar="N",
                   help="decoder layers per window of the layer-window bound, solved under "
                        "--timing, each distinct window once (0: skip it; default %(default)s)")
    p.add_argument("--layers-time", type=positive_float, default=limits.LAYERS_TIME_S, metavar="S",
                   help="CP-SAT time per distinct layer window (default %(default)g s)")
    p.add_argument("--layers-mip-time", type=positive_float, default=limits.LAYERS_MIP_TIME_S,
                   metavar="S", help="time of the fluid MIP with loads run whole per distinct "
                                     "layer window CP-SAT did not prove (default %(default)g s)")
    p.add_argument("--lp-max-ops", type=nonnegative_int, default=limits.LP_MAX_OPS, metavar="N",
                   help="skip the LP relaxation above this many ops (default %(default)s)")
    p.add_argument("--lp-time", type=positive_float, default=limits.LP_TIME_S, metavar="S",
                   help="time limit of the LP relaxation, model building included "
                        "(default %(default)g s)")
    p.add_argument("--threads", type=thread_count, default=2)
    p.add_argument("-o", "--output", type=output_file, metavar="bounds.json",
                   help="also write the bounds as JSON")
    add_quiet(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    instance = load_instance(args.instance)
    report = lower_bounds(instance, timing=args.timing, fluid_max_ops=args.fluid_max_ops,
                          fluid_time_s=args.fluid_time,
                          fluid_sram_max_ops=args.fluid_sram_max_ops,
                          fluid_milp_max_ops=args.fluid_milp_max_ops,
                          fluid_contiguous_max_ops=args.fluid_contiguous_max_ops,
                          fluid_split_max_ops=args.fluid_split_max_ops,
                          whole_ns=args.whole_ns, window=args.window,
                          window_time_s=args.window_time, layers=args.layers,
                          layers_time_s=args.layers_time,
                          layers_mip_time_s=args.layers_mip_time, lp_max_ops=args.lp_max_ops,
                          lp_time_s=args.lp_time, threads=args.threads,
                          progress=not args.quiet, exec_order=args.exec_order or "instance")
    rows, best = report["bounds"], report["best"]
    order = ", every execution order" if args.exec_order == "free" else ""
    print(f"{instance.name}: {report['ops']} ops, bounds for {args.timing}{order}")
    width = max(11, *(len(r["bound"]) + 1 for r in rows))  # fluid-contiguous is 16 long
    print(f"  {'bound':<{width}}{'ns':>15}     {'wall':>7}    {'holds for':<26}{'order':<10}"
          "note")
    for r in rows:
        shown = f"{r['ns']:>15,} ns" if r["ns"] is not None else f"{'-':>18}"
        print(f"  {r['bound']:<{width}}{shown}  {r['wall_s']:7.2f} s  {r['timings']:<26}"
              f"{r['order']:<10}{r['note']}")
    print(f"  {'best':<{width}}{best['ns']:>15,} ns  ({best['bound']})")
    if args.output:
        save_json(args.output, report)
    return 0
