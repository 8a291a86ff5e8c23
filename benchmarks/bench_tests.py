"""The whole test suite's run time: this tree against a baseline commit, in the same run.

Each tree is exported with `git archive` to a folder of its own and run as README says
(`pytest`, whatever that tree's pyproject adds), with PYTHONPATH set to that folder so the
code under test is the tree's. Measured per run: wall time, CPU time of pytest and every
process it waited for (test processes, solvers, `elk-opt` subprocesses), the counts pytest
prints, and its ten slowest phases. On a shared machine the wall time depends on the load;
the CPU time much less so. Trees run alternately, baseline first, so both see the same load.

    python benchmarks/bench_tests.py --baseline 65a0d76 [--repeat 1] [--pytest-args "..."]
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Run:
    label: str
    wall_s: float
    cpu_s: float
    summary: str  # pytest's closing line
    slowest: list[str]  # its `--durations=10` lines


def export(ref: str | None, into: Path) -> Path:
    """The tree of `ref` (or of the working tree, for `ref` None) in a folder of its own."""
    into.mkdir(parents=True)
    if ref is None:  # what is checked out, uncommitted edits included
        files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                                "--exclude-standard"], cwd=REPO, check=True,
                               capture_output=True).stdout
        with (into / "tree.tar").open("wb") as tar:
            subprocess.run(["tar", "-cf", "-", "--null", "-T", "-"], cwd=REPO, input=files,
                           check=True, stdout=tar)
    else:
        subprocess.run(["git", "archive", "-o", str(into / "tree.tar"), ref], cwd=REPO,
                       check=True)
    subprocess.run(["tar", "-xf", "tree.tar"], cwd=into, check=True)
    (into / "tree.tar").unlink()
    return into


def run_suite(label: str, tree: Path, extra: list[str]) -> Run:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                           "--durations=10", *extra], cwd=tree, env=env, capture_output=True,
                          text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = done.stdout.splitlines()
    summary = next((ln.strip("= ") for ln in reversed(lines)
                    if re.search(r"\d+ (passed|failed)", ln)), f"exit {done.returncode}")
    at = next((i for i, ln in enumerate(lines) if "slowest 10 durations" in ln), None)
    slowest = [] if at is None else [ln for ln in lines[at + 1:at + 11] if ln.strip()]
    return Run(label, wall, cpu, summary, slowest)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", required=True, help="git ref of the baseline tree")
    parser.add_argument("--ref", default=None,
                        help="git ref of the tree to measure (default: the working tree)")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--pytest-args", default="", help="added to both runs")
    args = parser.parse_args()
    extra = shlex.split(args.pytest_args)
    runs: list[Run] = []
    with tempfile.TemporaryDirectory(prefix="bench-tests-") as tmp:
        trees = {"baseline": export(args.baseline, Path(tmp) / "baseline"),
                 "this": export(args.ref, Path(tmp) / "this")}
        for _ in range(args.repeat):
            for label, tree in trees.items():
                run = run_suite(label, tree, extra)
                print(f"{label}: {run.wall_s:.1f} s wall, {run.cpu_s:.1f} s CPU, {run.summary}",
                      file=sys.stderr, flush=True)
                runs.append(run)
    load = os.getloadavg()
    print(f"load average at the end: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; "
          f"{os.cpu_count()} CPUs\n")
    print("| tree | median wall s | median CPU s | runs | pytest |")
    print("| --- | --- | --- | --- | --- |")
    median = {}
    for label in ("baseline", "this"):
        mine = [r for r in runs if r.label == label]
        median[label] = (statistics.median(r.wall_s for r in mine),
                         statistics.median(r.cpu_s for r in mine))
        print(f"| {label} | {median[label][0]:.1f} | {median[label][1]:.1f} | {len(mine)} | "
              f"{mine[-1].summary} |")
    print(f"\nratio baseline/this: wall {median['baseline'][0] / median['this'][0]:.2f}x, "
          f"CPU {median['baseline'][1] / median['this'][1]:.2f}x")
    for label in ("baseline", "this"):
        last = [r for r in runs if r.label == label][-1]
        print(f"\nslowest 10, {label} (last run):")
        print("\n".join(f"    {line}" for line in last.slowest))
    return 0


if __name__ == "__main__":
    sys.exit(main())
