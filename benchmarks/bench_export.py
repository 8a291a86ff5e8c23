"""Export + re-solve round trip: HiGHS on the exported MPS reaches the in-process ILP's optimum.

python benchmarks/bench_export.py INSTANCE.json [--timing separate-noc|shared-noc]
       [--warm-start METHOD] [--limit S] [--threads 2] [--out DIR]

Steps, each timed: the in-process `ilp` method (HiGHS through highspy); `solve --export`
(model build + MPS, warm start file and sidecar written, no solve); HiGHS reading the
exported MPS and warm start from disk and solving it (same threads, zero gap, same limit);
`import-solution` of HiGHS's solution file; and the independent checker on the imported plan.
Prints the two makespans and bounds, which must agree when both are proven. With --tight
HiGHS on the file gets the in-process run's tolerances; `--reuse` skips the in-process solve
and the export when DIR already holds them.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import highspy

from elk_opt.io import load_plan


def _run(args: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(args, check=True)
    return time.perf_counter() - started


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("instance")
    ap.add_argument("--timing", default="separate-noc")
    ap.add_argument("--warm-start", default=None)
    ap.add_argument("--limit", type=float, default=600.0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default=None, help="keep the files here (default: a temp dir)")
    ap.add_argument("--tight", action="store_true",
                    help="give HiGHS on the file the in-process run's feasibility tolerances "
                         "(1e-9; HiGHS's defaults are 1e-6 and 1e-7)")
    ap.add_argument("--reuse", action="store_true")
    a = ap.parse_args()
    out = Path(a.out or tempfile.mkdtemp(prefix="bench_export_"))
    out.mkdir(parents=True, exist_ok=True)
    common = ["--method", "ilp", "--timing", a.timing, "--threads", str(a.threads),
              "--time-limit", str(a.limit), "-q"]
    if a.warm_start:
        common += ["--warm-start", a.warm_start]
    cli = [sys.executable, "-m", "elk_opt.cli", "solve", a.instance, *common]
    reuse = a.reuse and (out / "in-process.json").exists() and (out / "model.mps.json").exists()
    own_s = 0.0 if reuse else _run([*cli, "-o", str(out / "in-process.json")])
    export_s = 0.0 if reuse else _run([*cli, "--export", str(out / "model.mps")])

    started = time.perf_counter()
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", a.threads)
    h.setOptionValue("mip_rel_gap", 0.0)
    h.setOptionValue("time_limit", a.limit)
    if a.tight:
        h.setOptionValue("mip_feasibility_tolerance", 1e-9)
        h.setOptionValue("primal_feasibility_tolerance", 1e-9)
    h.readModel(str(out / "model.mps"))
    start = out / "model.mps.start.sol"
    if start.exists():
        h.readSolution(str(start), 0)
    h.run()
    h.writeSolution(str(out / "highs.sol"), 0)
    highs_s = time.perf_counter() - started
    status = h.modelStatusToString(h.getModelStatus())

    import_s = _run([sys.executable, "-m", "elk_opt.cli", "import-solution",
                     str(out / "model.mps.json"), str(out / "highs.sol"),
                     "-o", str(out / "imported.json")])
    verify_s = _run([sys.executable, "-m", "elk_opt.cli", "verify", str(out / "imported.json")])
    own, back = load_plan(out / "in-process.json"), load_plan(out / "imported.json")
    print(f"files in {out}; MPS {(out / 'model.mps').stat().st_size:,} B")
    print("| step | status | makespan ns | bound ns | wall s |")
    print("|---|---|---|---|---|")
    for name, plan, wall in (("in-process ilp", own, own_s), ("export (no solve)", None,
                                                                export_s),
                             (f"HiGHS on the MPS ({status})", back, highs_s),
                             ("import-solution", None, import_s), ("verify", None, verify_s)):
        c = plan.claims if plan is not None else None
        row = (f"{c.status} | {c.makespan_ns:,} | {c.lower_bound_ns:,}" if c is not None
               else "- | - | -")
        print(f"| {name} | {row} | {wall:.1f} |")
    same = own.claims.makespan_ns == back.claims.makespan_ns
    print(f"same makespan: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
