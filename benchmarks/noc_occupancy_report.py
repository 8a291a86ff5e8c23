"""Where the NoC port binds: one decoder layer's port times and demands under both readings.

For each op of layer 0 it takes the fastest execute (least execute + warm-up over its pairs)
and the least load, and reports per op role their port times (section 5b work: `noc_ns` when
the plan has one, else its bytes at the port's rate) and their demands in permille of one
core's port (`elk_opt.noc`). Sums are over the layer.

    python benchmarks/noc_occupancy_report.py [--model llama2-13b] [--chip ipu-pod4-hbm3e]
"""

from __future__ import annotations

import argparse
import statistics
from collections import defaultdict

from elk_opt.frontend.chips import DEFAULT_CHIP
from elk_opt.frontend.zoo import model_instance
from elk_opt.noc import exec_use, load_use, work_ns
from elk_opt.problem import Instance, Op


def role(op: Op) -> str:
    if op.kind in ("matmul", "batched_matmul"):
        return "attention (KV)" if op.extra.get("hbm_data") == "kv" else "weight matmul"
    return op.kind


def fastest_execute(op: Op):
    _q, p, warm = min(op.pairs(), key=lambda t: (t[1].time_ns + t[2], t[0].load_ns, t[1].id))
    return p, warm


def report(inst: Instance) -> None:
    chip = inst.chip
    rate = chip.noc.link_bytes_per_s
    rows: dict[str, list[tuple[int, int, int, int, int, int]]] = defaultdict(list)
    for op in inst.ops:
        if op.layer != 0:
            continue
        p, warm = fastest_execute(op)
        q = min(op.preload_plans, key=lambda q: (q.load_ns, q.id))
        e, ld = exec_use(chip, p, warm), load_use(chip, q)
        e_work = (p.noc_ns if p.noc_ns is not None else work_ns(p.noc_bytes, rate)) + warm
        l_work = q.noc_ns if q.noc_ns is not None else work_ns(q.space_bytes, rate)
        rows[role(op)].append((p.time_ns + warm, e_work, e.demand, q.load_ns, l_work,
                               ld.demand))
    occupancy = inst.extra["cost_model"]["noc_occupancy"]
    print(f"{inst.name}, NoC occupancy {occupancy}")
    print(f"{'role':<16}{'ops':>4}{'exec ns':>10}{'exec port':>10}{'demand':>14}"
          f"{'load ns':>10}{'load port':>10}{'demand':>14}")
    total = [0, 0, 0, 0]
    for name in sorted(rows):
        r = rows[name]
        sums = [sum(x[i] for x in r) for i in (0, 1, 3, 4)]
        total = [a + b for a, b in zip(total, sums, strict=True)]
        print(f"{name:<16}{len(r):>4}{sums[0]:>10,}{sums[1]:>10,}{_spread([x[2] for x in r]):>14}"
              f"{sums[2]:>10,}{sums[3]:>10,}{_spread([x[5] for x in r]):>14}")
    print(f"{'layer 0':<16}{sum(len(r) for r in rows.values()):>4}{total[0]:>10,}"
          f"{total[1]:>10,}{'':>14}{total[2]:>10,}{total[3]:>10,}")


def _spread(values: list[int]) -> str:
    """Median demand and, when they differ, the range."""
    med = round(statistics.median(values))
    lo, hi = min(values), max(values)
    return f"{med}" if lo == hi else f"{med} ({lo}-{hi})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="llama2-13b")
    ap.add_argument("--chip", default=DEFAULT_CHIP)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--kv-len", type=int, default=2048)
    ap.add_argument("--cost-model", default="analytic")
    args = ap.parse_args()
    for occupancy in ("bytes", "bsp"):
        report(model_instance(args.model, args.chip, batch=args.batch, kv_len=args.kv_len,
                              layers=1, cost_model=args.cost_model, noc_occupancy=occupancy))
        print()


if __name__ == "__main__":
    main()
