"""What a load or an execute asks of one core's NoC port (docs/spec.md section 5b).

Demands are integer permille of the port (`noc.link_bytes_per_s`). An instruction's work is
the port time it needs alone: a plan's `noc_ns` when the cost model gave one, otherwise its
bytes at the port's rate; an execute adds its warm-up, which is pure redistribution. Its demand
spreads that work evenly over its uncontended duration. When a load and an execute are both
active and together ask for more than the port, the port is split max-min fairly.
"""

from __future__ import annotations

from dataclasses import dataclass

from elk_opt.problem import Chip, ExecPlan, PreloadPlan

PORT = 1000  # the whole port, in permille
HALF = PORT // 2


def work_ns(noc_bytes: int, link_bytes_per_s: int) -> int:
    """ceil(bytes * 1e9 / rate), exactly."""
    return -(-noc_bytes * 1_000_000_000 // link_bytes_per_s)


def demand(duration_ns: int, work: int) -> int:
    """Permille of the port an instruction uses when it runs alone."""
    if duration_ns == 0 or work == 0:
        return 0
    return min(PORT, -(-PORT * work // duration_ns))


@dataclass(frozen=True)
class PortUse:
    """One instruction's duration alone and its port demand."""

    duration_ns: int
    demand: int

    @property
    def units(self) -> int:
        """Work in permille-ns; an instruction with no demand does 1 unit per ns."""
        return self.duration_ns * self.demand if self.demand else self.duration_ns


def load_use(chip: Chip, q: PreloadPlan) -> PortUse:
    work = q.noc_ns if q.noc_ns is not None else work_ns(q.space_bytes,
                                                          chip.noc.link_bytes_per_s)
    return PortUse(q.load_ns, demand(q.load_ns, work))


def exec_use(chip: Chip, p: ExecPlan, warmup_ns: int) -> PortUse:
    own = p.noc_ns if p.noc_ns is not None else work_ns(p.noc_bytes, chip.noc.link_bytes_per_s)
    duration = p.time_ns + warmup_ns
    return PortUse(duration, demand(duration, own + warmup_ns))


def shares(load_demand: int, exec_demand: int) -> tuple[int, int]:
    """Port shares (load, execute) of a load and an execute active together."""
    if load_demand + exec_demand <= PORT:
        return load_demand, exec_demand
    if load_demand <= exec_demand:
        small = min(load_demand, HALF)
        return small, PORT - small
    small = min(exec_demand, HALF)
    return PORT - small, small
