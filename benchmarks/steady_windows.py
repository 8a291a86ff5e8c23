"""Which of a layer's loads fit beside its executes without stretching one (section 5b).

For one layer of a plan, at the plan's pairs: an execute of demand d_E is stretched by a load
of demand d_L beside it exactly when d_E > 500 and d_L + d_E > 1000 (`elk_opt.noc.shares`:
otherwise the execute keeps its whole demand). Runs of executes that none of the layer's loads
stretches are its *windows*; beside execute i a load does min(d_L, 1000 - d_E) units per ns,
so a window offers each load `capacity` = the sum of d_i x min(d_L, 1000 - d_E) units, shown in
ns of that load's own (alone) time. A load whose units exceed every window's capacity cannot
run to its end, as loads do, without a heavy execute beside it or a wait. The fluid bounds
split a load's work over windows; this table shows where that is all that keeps a plan's
stretch out of them.

    python benchmarks/steady_windows.py PLAN_OR_CERT.json [--layer K] [--pairs]

`--pairs` adds every pair of the layer's ops: its load (ns, demand, space) and its execute
(ns with warm-up, demand), and what it adds to the op's fastest execute, so that one can see
what a change of pair that avoids a crossing costs.
"""

from __future__ import annotations

import argparse

from elk_opt.certification.certificate import read_plan_or_certificate
from elk_opt.noc import exec_use, load_use, shares
from formulations.lns_windows import layer_runs


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("plan")
    ap.add_argument("--layer", type=int, help="default: the middle layer")
    ap.add_argument("--pairs", action="store_true", help="list every pair of the layer's ops")
    args = ap.parse_args()
    plan, _certificate = read_plan_or_certificate(args.plan)
    instance, chip = plan.instance, plan.instance.chip
    runs = [r for r in layer_runs(instance) if instance.ops[r[0]].layer is not None]
    first, stop = runs[len(runs) // 2 if args.layer is None else args.layer]
    ops = range(first, stop)
    run = {i: exec_use(chip, instance.ops[i].exec_by_id[plan.choice[i].exec],
                       instance.ops[i].warmup_ns[plan.choice[i].preload, plan.choice[i].exec])
           for i in ops}
    load = {j: load_use(chip, instance.ops[j].preload_by_id[plan.choice[j].preload])
            for j in ops}
    moving = [j for j in ops if load[j].duration_ns]

    def slowed(d_load: int, d_exec: int) -> bool:  # the execute gets less than its demand
        return shares(d_load, d_exec)[1] < d_exec

    windows, current = [], []
    for i in ops:
        if any(slowed(load[j].demand, run[i].demand) for j in moving):
            if current:
                windows.append(current)
            current = []
        else:
            current.append(i)
    if current:
        windows.append(current)
    print(f"{instance.name}, ops {first}-{stop - 1} ({instance.ops[first].name}): "
          f"executes {sum(r.duration_ns for r in run.values()):,} ns, of which in windows "
          f"{sum(run[i].duration_ns for w in windows for i in w):,} ns")
    names = [f"{instance.ops[w[0]].name.split('.')[-1]}..{instance.ops[w[-1]].name.split('.')[-1]}"
             for w in windows]
    print("| load | alone ns | demand | " + " | ".join(
        f"{n} ({sum(run[i].duration_ns for i in w):,} ns)" for n, w in zip(names, windows,
                                                                         strict=True)) + " |")
    print("|---|---:|---:|" + "---:|" * len(windows))
    for j in moving:
        d = load[j].demand
        caps = [sum(run[i].duration_ns * shares(d, run[i].demand)[0] for i in w) // d
                for w in windows]
        print(f"| {instance.ops[j].name} | {load[j].duration_ns:,} | {d} | "
              + " | ".join(f"{c:,}" for c in caps) + " |")
    if args.pairs:
        print("\n| op | load ns | load demand | load space | execute ns | execute demand | "
              "above the fastest |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for i in ops:
            op = instance.ops[i]
            uses = [(load_use(chip, q), exec_use(chip, p, w), q) for q, p, w in op.pairs()]
            fastest = min(e.duration_ns for _l, e, _q in uses)
            for lu, eu, q in sorted(uses, key=lambda u: (u[1].duration_ns, u[0].demand)):
                print(f"| {op.name} | {lu.duration_ns:,} | {lu.demand} | {q.space_bytes:,} | "
                      f"{eu.duration_ns:,} | {eu.demand} | {eu.duration_ns - fastest:,} |")


if __name__ == "__main__":
    main()
