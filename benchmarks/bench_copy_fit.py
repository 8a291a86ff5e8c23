"""One round of `polish`'s whole-layer copies on a plan, with and without fitting the copies
into SRAM (`formulations.lns_periodic.fit_sram`), in the same run.

    python benchmarks/bench_copy_fit.py PLAN.json [PLAN.json ...]

Per plan: the makespan before, after the round with copies that break R5 refused (the copy as
it was before `fit_sram`), and after the round with them fitted; how many twin classes were
copied, how many source-layer copies broke R5 unfitted, and the wall time of each round.
"""

from __future__ import annotations

import argparse
import time
from unittest import mock

from elk_opt.evaluate import evaluate
from elk_opt.io import load_plan
from formulations import lns_periodic


def unfitted_failures(plan, schedule) -> tuple[int, int]:
    """(copies tried, copies breaking R5) over every source layer and release choice."""
    tried = broke = 0
    cap = plan.instance.chip.sram_bytes
    for members in lns_periodic.twin_classes(plan.instance):
        for source in members:
            for shift in (False, True):
                cand = lns_periodic.copy_layer(plan, schedule, source, members, shift)
                s = evaluate(plan.instance, cand.choice, cand.program, cand.release_ns,
                             timing=plan.timing)
                tried += 1
                broke += s.peak_sram_bytes > cap
    return tried, broke


def round_of_copies(plan, schedule) -> tuple[int, int, float]:
    started = time.perf_counter()
    copied, classes = lns_periodic.copy_twins(plan.instance, plan, schedule, None)
    wall = time.perf_counter() - started
    after = evaluate(plan.instance, copied.choice, copied.program, copied.release_ns,
                     timing=plan.timing)
    return after.makespan_ns, classes, wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("plans", nargs="+")
    args = ap.parse_args()
    print("| plan | ops | makespan ns | unfitted: copies breaking R5 | round unfitted ns "
          "(classes copied, s) | round fitted ns (classes copied, s) | change |")
    print("|---|---|---|---|---|---|---|")
    for path in args.plans:
        plan = load_plan(path)
        schedule = evaluate(plan.instance, plan.choice, plan.program, plan.release_ns,
                            timing=plan.timing)
        with mock.patch.object(lns_periodic, "fit_sram", lambda _i, _c, anchor: anchor):
            tried, broke = unfitted_failures(plan, schedule)
            raw, raw_classes, raw_s = round_of_copies(plan, schedule)
        fit, fit_classes, fit_s = round_of_copies(plan, schedule)
        change = fit / raw - 1
        print(f"| {path} | {len(plan.instance.ops)} | {schedule.makespan_ns:,} | {broke} of "
              f"{tried} | {raw:,} ({raw_classes}, {raw_s:.2f}) | {fit:,} ({fit_classes}, "
              f"{fit_s:.2f}) | {change:+.2%} |")


if __name__ == "__main__":
    main()
