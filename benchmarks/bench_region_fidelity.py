"""How far the whole plan follows what `polish`'s region model promises, window by window.

For the first windows `polish` would solve on a plan (its ranking, one window per distinct
signature, layer-aligned and then straddling, `--windows` of each), it builds the region model
(`formulations.lns_region`), solves it once under a deterministic work budget, and splices the
model's best plan into the whole plan as `polish` does (its best splice). Per window: whether
the model proposed a move (beat the incumbent's value), whether the whole plan took it (lower
makespan, then sum of execute ends), and how much earlier the region's last execute and the
whole plan end. A move the whole plan refuses costs a window solve, and in `polish` a second
one a step further on, for nothing. Deterministic: the same tree gives the same rows.

    python benchmarks/bench_region_fidelity.py PLAN|CERT [--windows 8] [--work-limit 2]
        [-o rows.json]
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

from elk_opt.certification.certificate import read_plan_or_certificate
from elk_opt.solution import SolveOptions
from formulations.common import feasible_pairs
from formulations.cpsat_run import Interrupt
from formulations.lns_region import move_key, region_of
from formulations.lns_windows import ranked, signature, windows
from formulations.polish import KNOBS
from formulations.polish_search import Search, propose

TIMING = "shared-noc"


def rows(path: str, count: int, work: float) -> list[dict]:
    plan, _cert = read_plan_or_certificate(path)
    instance = plan.instance
    pairs = feasible_pairs(instance, TIMING)
    options = SolveOptions(timing=TIMING, threads=1, work_limit=work)
    out: list[dict] = []
    for straddle in (False, True):
        search = Search(instance, pairs, plan, TIMING)
        inc = search.inc.schedule
        order = ranked(pairs, inc, windows(instance, 0, KNOBS["width"], KNOBS["stride"],
                                           straddle))
        seen: set = set()
        for room, w in order:
            sig = signature(pairs, w.first, w.stop)
            if room <= 0 or sig in seen:
                continue
            if len(seen) == count:
                break
            seen.add(sig)
            r = region_of(instance, search.inc, w.first, w.stop, KNOBS["margin"], KNOBS["depth"])
            started = time.perf_counter()
            with Interrupt() as interrupt:
                found = propose(search, r, None, options, interrupt)
            row = {"straddle": straddle, "window": [w.first, w.stop], "proposed": found is not None,
                   "solve_s": round(time.perf_counter() - started, 2)}
            if found is not None:
                spliced = search.best_splice(r, found.choice, found.program, found.release,
                                             found.shift, found.model_loads)
                best = spliced[1] if spliced else None
                row.update(taken=bool(best and move_key(best) < move_key(inc)),
                           region_end_gain_ns=inc.exec_end[r.hi - 1] - best.exec_end[r.hi - 1]
                           if best else None,
                           makespan_gain_ns=inc.makespan_ns - best.makespan_ns if best else None)
            out.append(row)
            print(row, flush=True)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("plan", help="a plan or a certificate (its plan)")
    p.add_argument("--windows", type=int, default=8, help="distinct windows of each kind")
    p.add_argument("--work-limit", type=float, default=2.0, help="CP-SAT work units per window")
    p.add_argument("-o", "--output", type=Path)
    args = p.parse_args()
    found = rows(args.plan, args.windows, args.work_limit)
    proposed = [r for r in found if r["proposed"]]
    taken = [r for r in proposed if r["taken"]]
    refused = sorted(r["region_end_gain_ns"] for r in proposed
                     if not r["taken"] and r["region_end_gain_ns"] is not None)
    print(f"{platform.machine()}, {len(found)} windows: {len(proposed)} proposed, "
          f"{len(taken)} taken; the refused ones' region ends, earlier by (ns): {refused}")
    if args.output:
        args.output.write_text(json.dumps(found, indent=1))


if __name__ == "__main__":
    main()
