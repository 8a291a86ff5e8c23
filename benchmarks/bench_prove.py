"""Time to prove an instance optimal with `elk-opt solve --method cpsat`, two source trees
side by side in the same run (a baseline checkout and this one), cold and warm-started.

python benchmarks/bench_prove.py INSTANCE.json --tree before=/path/to/main --tree after=. \
    [--timing shared-noc] [--limit 60] [--threads 2] [--warm static] [--runs 1]

Each solve is a subprocess with PYTHONPATH set to the tree, so both run the same CLI. Reported
per solve: status, makespan, bound, wall seconds, CPU seconds (the subprocess's user + system
time), and CP-SAT's deterministic time and branch count summed over the 5b searches the
`--verbose` log shows (the probes and the search; the section-5 solve and the re-timings are
not logged): on a shared machine wall time varies 2-7x with the load, CPU and deterministic
time much less. Runs alternate between trees.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def solve(tree: Path, instance: str, timing: str, limit: float, threads: int,
          warm: str | None) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "plan.json"
        cmd = ["elk-opt", "solve", instance, "--method", "cpsat", "--timing", timing,
               "--time-limit", str(limit), "--threads", str(threads), "--verbose", "-q",
               "-o", str(out)]
        if warm:
            cmd += ["--warm-start", warm]
        env = {**os.environ, "PYTHONPATH": str(tree)}
        started = time.perf_counter()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        wall = time.perf_counter() - started
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        if done.returncode != 0:
            raise SystemExit(f"{tree}: exit {done.returncode}: {done.stderr[-500:]}")
        claims = json.loads(out.read_text())["claims"]
    det = re.findall(r"^deterministic_time: ([0-9.e+-]+)", done.stderr, re.M)
    branches = re.findall(r"^branches: (\d+)", done.stderr, re.M)
    return {"status": claims["status"], "makespan_ns": claims["makespan_ns"],
            "bound_ns": claims["lower_bound_ns"], "wall_s": round(wall, 1),
            "cpu_s": round(cpu, 1),
            "det": round(sum(float(d) for d in det), 2) if det else None,
            "branches": sum(int(b) for b in branches) if branches else None,
            "solver_status": claims["params"].get("solver_status")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("instance")
    ap.add_argument("--tree", action="append", required=True, metavar="LABEL=DIR")
    ap.add_argument("--timing", default="shared-noc")
    ap.add_argument("--limit", type=float, default=60)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--warm", default=None, help="also run warm-started from this method")
    ap.add_argument("--runs", type=int, default=1)
    args = ap.parse_args()
    trees = [(t.split("=", 1)[0], Path(t.split("=", 1)[1]).resolve()) for t in args.tree]
    starts = [None] + ([args.warm] if args.warm else [])
    print(f"# {args.instance} under {args.timing}, limit {args.limit:g} s, {args.threads} "
          f"threads; load average at start {os.getloadavg()[0]:.1f}")
    print("| tree | start | run | status | makespan ns | bound ns | wall s | CPU s | det time | "
          "branches |")
    print("| --- | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for run in range(1, args.runs + 1):
        for start in starts:
            for label, tree in trees:
                r = solve(tree, args.instance, args.timing, args.limit, args.threads, start)
                print(f"| {label} | {start or 'cold'} | {run} | {r['status']} | "
                      f"{r['makespan_ns']:,} | {r['bound_ns']:,} | {r['wall_s']} | {r['cpu_s']} | "
                      f"{r['det']} | "
                      f"{r['branches']} |", flush=True)
    print(f"# load average at end {os.getloadavg()[0]:.1f}", file=sys.stderr)


if __name__ == "__main__":
    main()
