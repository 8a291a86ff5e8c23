"""Gemma2-27B's middle layers rearranged by hand: every weight and KV load placed in a window
`steady_windows.py` shows it fits, but down_proj's, which crosses k_proj and v_proj.

For a plan of a Gemma2-27B decode model (23 ops a layer, the head 2 ops), each middle layer
L's loads are issued (as `lns_periodic` anchors: just before an execute):
- down_proj's weights before L's own q_proj (across k_proj and v_proj: 996 ns of stretch at
  the elk-paper b32 KV2048 pairs, against 1,167 for the plans `polish` ends with);
- the scores KV before layer L-1's context (its context-o_proj window);
- gate and up before layer L-1's gate_proj and up_proj;
- the context KV, the q, k, v and o weights and the norms before layer L-1's down_proj.
Pairs stay the plan's; releases of the first layer and the head are kept, the others dropped.
Writes the plan (claims method `arranged`) if it is faster and obeys R5; prints what it got
either way.

    python benchmarks/steady_arrangement.py CERT_OR_PLAN.json -o PLAN.json [--layers 2-44]
"""

from __future__ import annotations

import argparse
import time

from elk_opt.certification.certificate import read_plan_or_certificate
from elk_opt.evaluate import evaluate
from elk_opt.io import save_plan
from elk_opt.solution import make_plan
from formulations.lns_periodic import anchors, program_of

HEAD, LAYER = 2, 23  # Gemma2-27B decode: ops before the first layer, ops per layer
# offsets in a layer: input norm 0, q/k/v 1-3, scores 6, context 11, o_proj 12,
# the other norms 13, 15, 21, gate 16, up 17, down 20
BEFORE_DOWN = (11, 1, 2, 3, 12, 0, 13, 15, 21)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("plan")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--layers", default="2-44", help="middle layers to rearrange, first-last")
    args = ap.parse_args()
    plan, _certificate = read_plan_or_certificate(args.plan)
    instance = plan.instance
    n = len(instance.ops)
    lo, hi = (int(x) for x in args.layers.split("-"))
    anchor = anchors(plan.program, n)
    for layer in range(lo, hi + 1):
        f = HEAD + LAYER * layer
        g = f - LAYER  # the layer before
        anchor[f + 20] = (f + 1, -1)
        anchor[f + 6] = (g + 11, -1)
        anchor[f + 16] = (g + 16, -1)
        anchor[f + 17] = (g + 17, -1)
        for k, o in enumerate(BEFORE_DOWN):
            anchor[f + o] = (g + 20, k - len(BEFORE_DOWN))
    program = program_of(anchor, n)
    release = {k: t for k, t in plan.release_ns.items() if k[1] < HEAD + LAYER}
    before = evaluate(instance, plan.choice, plan.program, plan.release_ns, timing=plan.timing)
    after = evaluate(instance, plan.choice, program, release, timing=plan.timing)
    fits = after.peak_sram_bytes <= instance.chip.sram_bytes
    print(f"{before.makespan_ns:,} ns -> {after.makespan_ns:,} ns, R5 "
          f"{'holds' if fits else 'breaks'}")
    if fits and after.makespan_ns < before.makespan_ns:
        save_plan(args.output, make_plan(instance, plan.choice, program, method="arranged",
                                         started=time.perf_counter(), timing=plan.timing,
                                         release_ns=release, status="feasible",
                                         lower_bound_ns=None,
                                         params={"arranged_layers": args.layers}))


if __name__ == "__main__":
    main()
