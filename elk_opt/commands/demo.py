"""`elk-opt demo`: the main job on the built-in default, Llama2-13B decode on the default chip.

Every heuristic schedules the full model; CP-SAT, warm-started from the best heuristic plan,
proves the optimum of a one-layer slice and the heuristics' gaps to it are measured; every plan
is checked by the independent verifier and simulated with contention; one table is printed and
the plots are written to a folder.
Methods optimize the shared-noc timing (docs/spec.md 5b) unless `--timing` says otherwise; the
table also times each plan under the other timing, to show what sharing the NoC port costs.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from elk_opt.bounds.ideal import ideal_bound
from elk_opt.commands.flags import add_timing, output_dir
from elk_opt.evaluate import evaluate
from elk_opt.files import ensure_dir, write_atomic
from elk_opt.frontend.chips import DEFAULT_CHIP
from elk_opt.interrupts import sigint_restored
from elk_opt.io import plan_to_dict, save_instance, save_plan
from elk_opt.methods import METHODS, heuristics, solve
from elk_opt.problem import TIMINGS, Instance, Plan, Timing
from elk_opt.progress import ticking
from elk_opt.solution import SolveOptions
from elk_opt.studies.report import TIMING_NAMES
from verify import check

if TYPE_CHECKING:  # the simulator loads only when the demo runs, not with every command
    from elk_opt.simulator import SimResult

MODEL, BATCH, KV_LEN = "llama2-13b", 32, 2048
SLICE_LAYERS = 1
EXACT_TIME_LIMIT_S = 60.0


@dataclass(frozen=True)
class Result:
    method: str
    plan: Plan
    verified: bool
    other_ns: int  # the plan's makespan under the other timing
    sim: SimResult  # with contention


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="run the main job on the built-in default model and chip",
                       description=__doc__)
    p.add_argument("-o", "--output", default="elk-demo", type=output_dir, metavar="DIR",
                   help="folder for the instance, plans and plots (default elk-demo)")
    add_timing(p)
    p.set_defaults(func=run)


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _run_all(instance: Instance, methods: list[str], options: SolveOptions) -> list[Result]:
    from elk_opt.simulator import simulate

    other = _other(options.timing)
    results: list[Result] = []
    for method in methods:
        exact = METHODS[method].family == "exact" and options.time_limit_s is not None
        if not exact:
            _say(f"  {method}...")
        with sigint_restored(), ticking(f"  {method}", options.time_limit_s or 0.0,
                                        enabled=exact):
            plan = solve(instance, method, options)
        verified = check(plan_to_dict(plan)).valid
        other_ns = evaluate(instance, plan.choice, plan.program, plan.release_ns,
                            timing=other).makespan_ns
        results.append(Result(method, plan, verified, other_ns, simulate(plan)))
    return results


def _other(timing: Timing) -> Timing:
    return next(t for t in TIMINGS if t != timing)


def run(args: argparse.Namespace) -> int:
    from elk_opt.frontend.zoo import model_instance

    out = ensure_dir(args.output)
    _say(f"building {MODEL} decode (batch {BATCH}, KV {KV_LEN}) on {DEFAULT_CHIP}...")
    full = model_instance(MODEL, DEFAULT_CHIP, batch=BATCH, kv_len=KV_LEN)
    layer = model_instance(MODEL, DEFAULT_CHIP, batch=BATCH, kv_len=KV_LEN, layers=SLICE_LAYERS)
    save_instance(out / "instance.json", full)
    save_instance(out / "slice.instance.json", layer)

    _say(f"full model, {len(full.ops)} ops: every heuristic")
    on_full = _run_all(full, heuristics(), SolveOptions(timing=args.timing))
    _say(f"{SLICE_LAYERS}-layer slice, {len(layer.ops)} ops: every heuristic, then CP-SAT "
         f"(limit {EXACT_TIME_LIMIT_S:g} s) warm-started from the best of them")
    slice_heuristics = _run_all(layer, heuristics(), SolveOptions(timing=args.timing))
    warm = min(slice_heuristics, key=lambda r: r.plan.claims.makespan_ns)  # type: ignore[union-attr]
    on_slice = _run_all(layer, ["cpsat"],
                        SolveOptions(time_limit_s=EXACT_TIME_LIMIT_S, threads=2,
                                     timing=args.timing, warm_start=warm.method,
                                     warm_plan=warm.plan)) + slice_heuristics
    for r in on_full:
        save_plan(out / f"{r.method}.plan.json", r.plan)
    for r in on_slice:
        save_plan(out / f"slice.{r.method}.plan.json", r.plan)

    ideal = ideal_bound(full)
    print(_table(full, ideal, on_full, on_slice, args.timing))
    _plots(full, ideal, on_full, out, args.timing)
    print(f"\nwrote the instances, every plan, timeline.png and methods.png to {out}/")
    return 0 if all(r.verified for r in on_full + on_slice) else 1


SECTION = {"shared-noc": "5b", "separate-noc": "5"}


def _table(full: Instance, ideal: int, on_full: list[Result], on_slice: list[Result],
           timing: Timing) -> str:
    best = min(r.plan.claims.makespan_ns for r in on_full)  # type: ignore[union-attr]
    exact = on_slice[0].plan.claims
    assert exact is not None
    optimum = exact.makespan_ns if exact.status == "optimal" else None
    slice_gap = {r.method: r.plan.claims.makespan_ns for r in on_slice[1:]}  # type: ignore[union-attr]
    other = _other(timing)
    other_label = f"sect. {SECTION[other]} ns"
    width = max(9, *(len(r.method) for r in on_full))
    lines = [f"\n{full.name}: {len(full.ops)} ops, one decode step of batch {BATCH}, planned "
             f"and timed under {TIMING_NAMES[timing]}.",
             f"Ideal bound {ideal:,} ns; Ideal % = bound / makespan; {other_label} = the same "
             f"plan timed under {other}"
             + (" (loads on their own interconnect)." if other == "separate-noc" else
                " (loads share the NoC port with executes)."),
             f"{'method':<{width}} {'makespan ns':>13} {'tokens/s':>9} {'vs best':>8} "
             f"{'Ideal %':>8} {other_label:>13} {'simulated ns':>13} {'solve s':>8} "
             f"{'1-layer gap':>12}  verify"]
    for r in on_full:
        c = r.plan.claims
        assert c is not None
        gap = "-" if optimum is None else f"{100 * (slice_gap[r.method] / optimum - 1):.2f}%"
        lines.append(f"{r.method:<{width}} {c.makespan_ns:>13,} "
                     f"{BATCH / (c.makespan_ns * 1e-9):>9,.0f} {c.makespan_ns / best:>8.3f} "
                     f"{100 * ideal / c.makespan_ns:>7.1f}% "
                     f"{r.other_ns:>13,} {r.sim.makespan_ns:>13,} {c.wall_s:>8.2f} {gap:>12}  "
                     f"{'ok' if r.verified else 'FAILED'}")
    bound = "-" if exact.lower_bound_ns is None else f"{exact.lower_bound_ns:,} ns"
    status = (f"proved optimal: {optimum:,} ns" if optimum is not None else
              f"no optimum proved under {timing}: best {exact.makespan_ns:,} ns, bound "
              f"{bound}")
    warm = exact.params.get("warm_start")  # set when the solver took the plan as its hint
    lines.append(f"1-layer slice: CP-SAT {status} ({exact.wall_s:.1f} s of at most "
                 f"{EXACT_TIME_LIMIT_S:g} s{f', warm-started from {warm}' if warm else ''}); "
                 f"verify {'ok' if on_slice[0].verified else 'FAILED'}")
    return "\n".join(lines)


def _plots(full: Instance, ideal: int, on_full: list[Result], out: Path, timing: Timing) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import StrMethodFormatter

    from elk_opt.simulator.plot import plot_timeline

    best = min(on_full, key=lambda r: r.sim.makespan_ns)
    plot_timeline(best.sim, full.chip, out / "timeline.png", method=best.method, name=full.name,
                  layers=[op.layer for op in full.ops])
    fig, ax = plt.subplots(figsize=(8, 4.6), layout="constrained")
    names = [r.method for r in on_full]
    bars = {f"analytic, section {SECTION[timing]} (the plan's)":
            [r.plan.claims.makespan_ns / 1e3 for r in on_full],  # type: ignore[union-attr]
            f"analytic, section {SECTION[_other(timing)]}": [r.other_ns / 1e3 for r in on_full],
            "simulated with contention": [r.sim.makespan_ns / 1e3 for r in on_full]}
    width = 0.8 / len(bars)
    for k, (label, values) in enumerate(bars.items()):
        ax.bar([x + (k - (len(bars) - 1) / 2) * width for x in range(len(names))], values,
               width=width, label=label)
    ax.axhline(ideal / 1e3, color="black", linestyle="--", label="Ideal bound")
    ax.set_xticks(list(range(len(names))), names)
    ax.yaxis.set_major_formatter(StrMethodFormatter("{x:,.0f}"))
    ax.set_ylabel("makespan of one decode step (us)")
    ax.set_title(f"{MODEL} decode, batch {BATCH}, KV {KV_LEN} ({len(full.ops)} ops on "
                 f"{full.chip.name})\nevery method's plan, planned under {timing}", fontsize=10)
    fig.legend(loc="outside lower center", fontsize=9, ncols=2, frameon=False)
    write_atomic(out / "methods.png", lambda f: fig.savefig(f, format="png"), mode="wb")
    plt.close(fig)
