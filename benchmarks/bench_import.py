"""`python -c "import elk_opt"` against `python -c pass`, each a fresh interpreter.

python benchmarks/bench_import.py [--runs 21]

The two commands alternate, so machine load hits both alike; the figures are medians of wall
time per process. Also timed: the first use of a light name (`elk_opt.Instance`) and of a call
that needs a solver (`elk_opt.solve` on a 4-op synthetic instance with CP-SAT), to show where
the cost moved. Target of issue 13: `import elk_opt` under 0.3 s.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import subprocess
import sys
import time

COMMANDS = {
    "python -c pass": "pass",
    "import elk_opt": "import elk_opt",
    "import elk_opt; elk_opt.Instance": "import elk_opt; elk_opt.Instance",
    "import elk_opt; solve(cpsat) on 4 ops":
        "import elk_opt; elk_opt.solve(elk_opt.synthetic_instance(ops=4, plans=2), 'cpsat', "
        "threads=1)",
}


def wall_s(code: str) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
    return time.perf_counter() - started


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=21)
    args = ap.parse_args()
    print(f"machine: {platform.machine()}, {platform.python_implementation()} "
          f"{platform.python_version()}; {args.runs} runs each, alternating")
    times: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for _ in range(args.runs):
        for name, code in COMMANDS.items():
            times[name].append(wall_s(code))
    base = statistics.median(times["python -c pass"])
    print("| what | median | minus `python -c pass` |")
    print("| --- | --- | --- |")
    for name, values in times.items():
        med = statistics.median(values)
        print(f"| `{name}` | {med:.3f} s | {med - base:+.3f} s |")


if __name__ == "__main__":
    main()
