"""Overhead of progress reporting on an instance build (Llama2-13B decode, 723 ops).

The same build runs with progress off (the baseline, in the same run), as plain lines (stderr
not a terminal) and as a tqdm bar (stderr a terminal), interleaved, `--runs` times each;
medians and their ratios to the baseline are reported. Output goes to memory, so the figures
are the reporting's own cost, not the terminal's.

    python benchmarks/bench_progress.py [--model llama2-13b] [--runs 15]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import statistics
import time

from elk_opt.frontend.zoo import model_instance


class _Sink(io.StringIO):
    """Collects what is shown; says it is a terminal when asked to, so the bar is drawn."""

    def __init__(self, terminal: bool) -> None:
        super().__init__()
        self._terminal = terminal

    def isatty(self) -> bool:
        return self._terminal


def _build(model: str, shown: str) -> float:
    with contextlib.redirect_stderr(_Sink(terminal=shown == "bar")):
        started = time.perf_counter()
        model_instance(model, progress=shown != "off")
        return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="llama2-13b")
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    ops = len(model_instance(args.model).ops)  # warms the imports and caches for every mode
    times: dict[str, list[float]] = {"off": [], "lines": [], "bar": []}
    for _ in range(args.runs):
        for shown, runs in times.items():
            runs.append(_build(args.model, shown))
    base = statistics.median(times["off"])
    print(f"{args.model}: {ops} ops, median of {args.runs} builds each")
    for shown, runs in times.items():
        median = statistics.median(runs)
        print(f"  progress {shown:<6} {median * 1e3:8.1f} ms  {median / base:6.3f}x off")


if __name__ == "__main__":
    main()
