"""Start-up of `elk-opt` commands: this tree against a baseline commit, in the same run.

Every test that runs `elk-opt` in a subprocess pays its start-up, so it is measured per
command: `--help` (every subcommand registered), `verify` and `solve --method basic` on a small
instance. Each tree is exported with `git archive` (the working tree: its files as they are),
the commands run alternately, baseline first; per command and tree the median wall time and
the median CPU time (user + system of the process) are printed, and the CPU ratio.

    python benchmarks/bench_startup.py --baseline 61ad8ea [--ref HEAD] [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_tests import export  # noqa: E402  (the same export of a tree as the suite's bench)


def commands(tmp: Path) -> dict[str, list[str]]:
    inst, plan = tmp / "i.json", tmp / "p.json"
    return {"--help": ["--help"], "verify": ["verify", str(plan)],
            "solve --method basic": ["solve", str(inst), "--method", "basic", "-q", "-o",
                                     str(tmp / "again.json")]}


def timed(tree: Path, args: list[str]) -> tuple[float, float]:
    """(wall s, CPU s) of one `python -m elk_opt.cli ARGS` run of `tree`'s code."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "elk_opt.cli", *args], env=env, cwd=tree, check=True,
                   capture_output=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", required=True, help="git ref of the baseline tree")
    parser.add_argument("--ref", default=None, help="git ref to measure (default: working tree)")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as name:
        tmp = Path(name)
        trees = {"baseline": export(args.baseline, tmp / "baseline"),
                 "this": export(args.ref, tmp / "this")}
        inst = tmp / "i.json"
        for cmd in (["instance", "synthetic", "--ops", "6", "--plans", "2", "-q", "-o",
                     str(inst)], ["solve", str(inst), "--method", "basic", "-q", "-o",
                                  str(tmp / "p.json")]):
            timed(trees["this"], cmd)
        runs: dict[tuple[str, str], list[tuple[float, float]]] = {}
        for _ in range(args.runs):
            for command, argv in commands(tmp).items():
                for label, tree in trees.items():
                    runs.setdefault((command, label), []).append(timed(tree, argv))
    load = os.getloadavg()
    print(f"load average at the end: {load[0]:.1f}; {os.cpu_count()} CPUs; {args.runs} runs\n")
    print("| command | baseline wall / CPU | this wall / CPU | CPU ratio |")
    print("| --- | --- | --- | --- |")
    for command in commands(tmp):
        med = {label: (statistics.median(w for w, _ in runs[(command, label)]),
                       statistics.median(c for _, c in runs[(command, label)]))
               for label in trees}
        print(f"| `elk-opt {command}` | {med['baseline'][0]:.2f} s / {med['baseline'][1]:.2f} s "
              f"| {med['this'][0]:.2f} s / {med['this'][1]:.2f} s "
              f"| {med['baseline'][1] / med['this'][1]:.1f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
