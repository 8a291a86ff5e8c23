"""How often the Elk paper's ordering Basic < Static < Elk-Dyn < Elk-Full holds, and by how much.

Reads the fig17.csv of an `elk-opt reproduce` run and counts, per cost model and setting, the
configurations where every step of the chain shortens the makespan by more than a margin m
(makespan(slower) > (1 + m) * makespan(faster)), for m = 0 (strict), 0.1% and 1%, and each
step alone. docs/reproduction.md quotes it.

    python benchmarks/ordering_margins.py DIR/fig17.csv
"""

from __future__ import annotations

import csv
import sys
from collections import defaultdict

CHAIN = ("basic", "static", "elk-dyn", "elk-full")
MARGINS = (0.0, 0.001, 0.01)


def margins(path: str) -> list[str]:
    runs: dict[tuple[str, str], dict[tuple[str, ...], dict[str, int]]] = defaultdict(
        lambda: defaultdict(dict))
    with open(path, newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            if row["source"] == "ours" and row["makespan_ns"]:
                config = (row["model"], row["batch"], row["kv_len"], row["layers"])
                runs[(row["cost_model"], row["setting"])][config][row["method"]] = int(
                    row["makespan_ns"])
    steps = list(zip(CHAIN, CHAIN[1:], strict=False))
    lines = ["cost model  setting       configs  step                  "
             + "  ".join(f"> {m:.1%}" if m else "strict" for m in MARGINS)]
    for (cost, setting), configs in sorted(runs.items()):
        full = [c for c in configs.values() if all(m in c for m in CHAIN)]
        for name, pairs in [("whole chain", steps)] + [(f"{a} -> {b}", [(a, b)])
                                                       for a, b in steps]:
            counts = [sum(all(c[a] > (1 + m) * c[b] for a, b in pairs) for c in full)
                      for m in MARGINS]
            lines.append(f"{cost:<11} {setting:<13} {len(full):>7}  {name:<20}  "
                         + "  ".join(f"{n:>6}" for n in counts))
    return lines


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python benchmarks/ordering_margins.py DIR/fig17.csv")
    print("\n".join(margins(sys.argv[1])))
