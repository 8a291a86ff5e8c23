"""`elk-opt plans i.json --op NAME [--plot front.png]`: one op's partition plans.

Prints the op's execute plans, preload plans and compatible pairs. With `--plot` it draws the
op's time-versus-space view (the Elk paper's Figure 5): every candidate the partition search
considered, the Pareto front, and the plans kept in the instance.
"""

from __future__ import annotations

import argparse
import difflib

from elk_opt.commands.flags import output_file
from elk_opt.errors import UsageError
from elk_opt.files import write_atomic
from elk_opt.io import load_instance
from elk_opt.problem import Instance, Op

LISTED = 10  # op names shown when --op names none


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("plans", help="show (and plot) one op's partition plans",
                       description=__doc__)
    p.add_argument("instance", metavar="instance.json")
    p.add_argument("--op", required=True, metavar="NAME", help="op name or index")
    p.add_argument("--plot", type=output_file, metavar="front.png",
                   help="draw the time-versus-space front")
    p.set_defaults(func=run)


def find_op(instance: Instance, key: str) -> tuple[int, Op]:
    for i, op in enumerate(instance.ops):
        if op.name == key:
            return i, op
    if key.isdigit() and int(key) < len(instance.ops):
        return int(key), instance.ops[int(key)]
    names = [op.name for op in instance.ops]
    close = difflib.get_close_matches(key, names, n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise UsageError(f"no op named {key!r} in {instance.name}{hint}; give an index "
                     f"0..{len(names) - 1} or a name: {_listing(names)}")


def _listing(names: list[str]) -> str:
    """Every name, or the first LISTED and how many more: one line even for a whole model."""
    shown = ", ".join(names[:LISTED])
    more = len(names) - LISTED
    return f"{shown} (and {more:,} more)" if more > 0 else shown


def run(args: argparse.Namespace) -> int:
    instance = load_instance(args.instance)
    index, op = find_op(instance, args.op)
    print(f"op {index} {op.name} ({op.kind}, layer {op.layer}): {op.hbm_bytes:,} B of HBM data "
          f"({op.extra.get('hbm_data', 'none')}), {op.flops:,} flop")
    details = op.extra.get("plan_details")
    print(f"{'exec':>5} {'time ns':>10} {'SRAM B':>10} {'NoC B':>9} {'port ns':>8}  layout")
    for k, p in enumerate(op.exec_plans):
        layout = ""
        if isinstance(details, list) and k < len(details) and isinstance(details[k], dict):
            d = details[k]
            layout = (f"split {d.get('split')}, rotate {d.get('rotate') or '-'} "
                      f"x{d.get('rotation')}, {d.get('replicas')} copies")
        port = "-" if p.noc_ns is None else f"{p.noc_ns:,}"
        print(f"{p.id:>5} {p.time_ns:>10,} {p.space_bytes:>10,} {p.noc_bytes:>9,} {port:>8}  "
              f"{layout}")
    print(f"{'load':>5} {'load ns':>10} {'SRAM B':>10} {'port ns':>8}  "
          "compatible exec plans (warm-up ns)")
    for q in op.preload_plans:
        pairs = ", ".join(f"{w.exec} ({w.time_ns:,})" for w in op.warmup if w.preload == q.id)
        port = "-" if q.noc_ns is None else f"{q.noc_ns:,}"
        print(f"{q.id:>5} {q.load_ns:>10,} {q.space_bytes:>10,} {port:>8}  {pairs}")
    if args.plot:
        _plot(instance, op, args.plot)
        print(f"-> {args.plot}")
    return 0


def _plot(instance: Instance, op: Op, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from elk_opt.frontend.partition import candidates, pareto

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    cands = _candidates(instance, op, candidates)
    if cands:
        ax.scatter([c.space_bytes for c in cands], [c.time_ns for c in cands], s=6,
                   color="0.75", label=f"candidates ({len(cands)})")
        front = pareto([c for c in cands if c.space_bytes <= instance.chip.sram_bytes])
        ax.plot([c.space_bytes for c in front], [c.time_ns for c in front], "-", color="C0",
                lw=1, label=f"Pareto front ({len(front)})")
    ax.scatter([p.space_bytes for p in op.exec_plans], [p.time_ns for p in op.exec_plans],
               s=30, color="C3", zorder=3, label=f"kept plans ({len(op.exec_plans)})")
    for p in op.exec_plans:
        ax.annotate(str(p.id), (p.space_bytes, p.time_ns), textcoords="offset points",
                    xytext=(4, 3), fontsize=7)
    ax.set_xlabel("SRAM per core while executing (bytes)")
    ax.set_ylabel("execution time (ns)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_title(f"{op.name} ({op.kind}) on {instance.chip.name}", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    write_atomic(path, lambda f: fig.savefig(f, format="png", dpi=130), mode="wb")
    plt.close(fig)


def _candidates(instance: Instance, op: Op, search):
    """Re-run the search for ops built from a model (their `work` and cost model are stored)."""
    work = op.extra.get("work")
    spec = instance.extra.get("cost_model", {})
    if not isinstance(work, dict) or not isinstance(spec, dict) or "spec" not in spec:
        return []
    from elk_opt.frontend.build import work_from_dict
    from elk_opt.frontend.cost import get_cost_model

    try:
        w = work_from_dict(work)
    except (KeyError, TypeError):
        return []
    return search(w, instance.chip.cores, get_cost_model(spec["spec"], instance.chip))
