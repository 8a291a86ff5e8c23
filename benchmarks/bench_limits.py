"""Exact methods under a time limit: wall time and peak memory of `elk-opt solve`.

PYTHONPATH=. python benchmarks/bench_limits.py [--limit 5] [--repeats 3]

Each run is a fresh `elk-opt solve` process (its wall time includes Python's start-up and
imports, and the warm start when one is given); peak memory is the child's maximum resident
set size. The baseline, measured in the same run, is a process that only imports the method's
modules and loads the instance: what any run costs before solving. Instances: the full
Llama2-13B decode (723 ops) and a 400-op synthetic decoder, where building either exact model
takes longer than the limit.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BASELINE = ("import sys; from elk_opt.io import load_instance; import formulations.ilp, "
            "formulations.cpsat; load_instance(sys.argv[1])")


def run(argv: list[str]) -> tuple[float, float, int]:
    """(wall seconds, peak RSS MiB, exit code) of one child process."""
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _pid, status, usage = os.wait4(proc.pid, 0)
    return (time.perf_counter() - started, usage.ru_maxrss / 1024,
            os.waitstatus_to_exitcode(status))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=float, default=5.0)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp())
    cli = [sys.executable, "-m", "elk_opt.cli"]
    instances = {"llama2-13b (723 ops)": ["llama2-13b"],
                 "synthetic (400 ops)": ["synthetic", "--ops", "400"]}
    print(f"time limit {args.limit:g} s; medians of {args.repeats}; "
          f"load average {os.getloadavg()[0]:.1f}")
    print("| instance | run | wall s | peak MiB | exit |")
    print("| --- | --- | --- | --- | --- |")
    for label, spec in instances.items():
        path = tmp / "instance.json"
        subprocess.run([*cli, "instance", *spec, "-o", str(path)], check=True,
                       capture_output=True)
        runs = {"baseline: import and load": [sys.executable, "-c", BASELINE, str(path)]}
        for method in ("ilp", "cpsat"):
            for warm in ((), ("--warm-start", "elk-dyn")):
                name = f"{method}{' --warm-start elk-dyn' if warm else ''}"
                runs[name] = [*cli, "solve", str(path), "--method", method, "--threads", "1",
                              "--time-limit", str(args.limit), *warm, "-o", str(tmp / "p.json")]
        for name, argv in runs.items():
            results = [run(argv) for _ in range(args.repeats)]
            wall = statistics.median(r[0] for r in results)
            mib = statistics.median(r[1] for r in results)
            print(f"| {label} | {name} | {wall:.2f} | {mib:,.0f} | {results[0][2]} |",
                  flush=True)


if __name__ == "__main__":
    main()
