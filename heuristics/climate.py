"""The port climate: what a plan can expect of the shared NoC port, on average over the model.

Cost-aware allocation compares plans before their neighbours in time are known, so under
section 5b it prices a plan's port use against the model's average partner: a load against the
executes (weighted by their time, at each op's fastest plan), an execute against the loads
(weighted by their time, at each op's smallest preload) and against the share of the step the
HBM is busy. With the port split max-min fairly (elk_opt.noc.shares):
- a load of duration L and demand d runs `L * stretch(d)` ns, during which the execute beside
  it loses `slowed(d)` of its progress per ns: its port price is that time and that loss;
- an execute of duration T and demand d loses `T * busy * slowed_by_loads(d)` ns.
Under separate-noc, and for plans that use no port, every price is zero and every stretch 1.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from elk_opt.noc import exec_use, load_use, shares
from elk_opt.problem import Instance


@dataclass(frozen=True)
class Climate:
    execs: tuple[tuple[int, int], ...]  # (demand, ns) summed over ops' fastest executes
    loads: tuple[tuple[int, int], ...]  # (demand, ns) summed over ops' smallest data loads
    busy: float  # share of the step the HBM is busy, at most 1

    @classmethod
    def of(cls, instance: Instance) -> Climate:
        chip = instance.chip
        execs: Counter[int] = Counter()
        loads: Counter[int] = Counter()
        for op in instance.ops:
            _q, p, warm = min(op.pairs(), key=lambda t: (t[1].time_ns + t[2], t[1].id, t[0].id))
            use = exec_use(chip, p, warm)
            execs[use.demand] += use.duration_ns
            least = min(op.preload_plans, key=lambda q: (q.space_bytes, q.load_ns, q.id))
            if least.load_ns:
                loads[load_use(chip, least).demand] += least.load_ns
        run, load = sum(execs.values()), sum(loads.values())
        return cls(tuple(sorted(execs.items())), tuple(sorted(loads.items())),
                   min(1.0, load / run) if run else 0.0)

    def load_price(self, duration_ns: int, demand: int) -> tuple[float, float]:
        """(expected duration, expected execute time lost) of a load."""
        if not demand:
            return float(duration_ns), 0.0
        total = stretched = lost = 0.0
        for d, w in self.execs:
            share_l, share_e = shares(demand, d) if d else (demand, 0)
            total += w
            stretched += w * demand / share_l
            lost += w * demand / share_l * (1 - share_e / d if d else 0.0)
        if not total:
            return float(duration_ns), 0.0
        return duration_ns * stretched / total, duration_ns * lost / total

    def exec_price(self, duration_ns: int, demand: int) -> float:
        """Expected execute time lost to the loads beside it."""
        if not demand:
            return 0.0
        total = lost = 0.0
        for d, w in self.loads:
            share_e = shares(d, demand)[1] if d else demand
            total += w
            lost += w * (1 - share_e / demand)
        return duration_ns * self.busy * lost / total if total else 0.0
