"""The three ways a replay shares the chip between a running load and a running execute.

- `none`: nothing is shared; every activity runs at its uncontended speed. Reproduces docs/spec.md
  section 5 (`separate-noc`) exactly.
- `port`: only one core's NoC port is shared, as section 5b defines it (HBM, SRAM ports and
  links ample). Each activity asks for its demand in integer permille of the port
  (`elk_opt.noc`, the problem's port model); a load and an execute that together ask for more
  than the port split it max-min fairly in *bandwidth* (`elk_opt.noc.shares`), and an execute
  (warm-up and local execute) is ONE port activity of `time + warm-up` ns. Reproduces section
  5b (`shared-noc`) exactly.
- `full`: HBM, NoC (aggregate, or every mesh link) and SRAM ports shared by speeds max-min fair
  over the network's resources (`flows`), warm-up and local execute as two phases. Only ever
  slower than `none`. It models bytes only: a plan's `noc_ns` does not enter it.

A model turns calls into flows and gives each active flow its rate, in work units per ns.
`none` and `port` count integer units and end a flow at the ceiling of its units left over its
rate, so their replays are integer and exact; `full` is floating point.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from elk_opt.lower import ExecuteCall, PreloadCall
from elk_opt.noc import exec_use, load_use, shares
from elk_opt.problem import ExecPlan, PreloadPlan, Timing
from elk_opt.simulator.flows import max_min_speeds
from elk_opt.simulator.network import Network

Sharing = Literal["none", "port", "full"]
SHARINGS: tuple[Sharing, ...] = ("none", "port", "full")
EXACT_SHARING: dict[Timing, Sharing] = {"separate-noc": "none", "shared-noc": "port"}
LABELS: dict[Sharing, str] = {"none": "no sharing (section 5)",
                              "port": "NoC port shared (section 5b)",
                              "full": "full contention"}

Number = int | float


@dataclass
class Flow:
    """One running activity: its work left and what it puts on the chip's resources."""

    phase: str  # "load" | "distribute" | "local" | "execute" (port: warm-up and local as one)
    op: int
    left: Number  # work units still to do
    scale: int  # units per ns at the uncontended speed
    demand: np.ndarray  # bytes/s per resource at the uncontended speed
    port: int = 0  # permille of the NoC port asked for (port model)
    warm_left: int | None = None  # units left when the warm-up is done (port model's execute)


def _demand(net: Network, dur_ns: int, hbm: float, ring: float, sram: float) -> np.ndarray:
    if dur_ns == 0:
        return np.zeros_like(net.capacity)
    per_core = hbm * net.hbm_pattern + ring * net.ring_pattern + sram * net.sram_unit
    return per_core / (dur_ns * 1e-9)


def load_demand(net: Network, c: PreloadCall) -> np.ndarray:
    """`hbm_bytes / cores` from HBM, the rest of the preload layout (replication) shifted between
    cores, every byte written through the SRAM port and replicated bytes also read."""
    from_hbm = c.hbm_bytes / net.chip.cores
    replicated = max(0.0, c.space_bytes - from_hbm)
    return _demand(net, c.load_ns, from_hbm, replicated, from_hbm + 2 * replicated)


def distribute_demand(net: Network, c: ExecuteCall) -> np.ndarray:
    """The preloaded bytes shifted between cores, read and written."""
    b = c.distribute_bytes
    return _demand(net, c.distribute_ns, 0, b, 2 * b)


def local_demand(net: Network, c: ExecuteCall) -> np.ndarray:
    """`noc_bytes` shifted between cores, read and written, plus one read of the layout."""
    b = c.noc_bytes
    return _demand(net, c.local_ns, 0, b, c.space_bytes + 2 * b)


class NoSharing:
    """Every flow at its uncontended speed, in integer ns."""

    exact = True

    def __init__(self, net: Network):
        self.net = net

    def load(self, c: PreloadCall) -> Flow:
        return Flow("load", c.op, c.load_ns, 1, load_demand(self.net, c))

    def execute(self, c: ExecuteCall) -> list[Flow]:
        return [Flow("distribute", c.op, c.distribute_ns, 1, distribute_demand(self.net, c)),
                Flow("local", c.op, c.local_ns, 1, local_demand(self.net, c))]

    def rates(self, flows: list[Flow]) -> list[Number]:
        """Work units per ns of each active flow (a load first, then an execute phase)."""
        return [1] * len(flows)


class FullContention(NoSharing):
    """Speeds max-min fair over every resource, in floating-point ns of uncontended work."""

    exact = False

    def rates(self, flows: list[Flow]) -> list[Number]:
        speeds = max_min_speeds(np.stack([f.demand for f in flows]), self.net.capacity)
        return [float(s) for s in speeds]


class PortSharing(NoSharing):
    """Section 5b: one core's NoC port, demands and shares in integer permille."""

    def load(self, c: PreloadCall) -> Flow:
        use = load_use(self.net.chip, PreloadPlan(c.preload_plan, c.space_bytes, c.load_ns,
                                                  c.noc_ns))
        return Flow("load", c.op, use.units, use.demand or 1, load_demand(self.net, c),
                    port=use.demand)

    def execute(self, c: ExecuteCall) -> list[Flow]:
        plan = ExecPlan(c.exec_plan, c.local_ns, c.space_bytes, c.noc_bytes, c.noc_ns)
        use = exec_use(self.net.chip, plan, c.distribute_ns)
        scale = use.demand or 1
        bytes_per_s = (distribute_demand(self.net, c) * c.distribute_ns
                       + local_demand(self.net, c) * c.local_ns) / max(1, use.duration_ns)
        return [Flow("execute", c.op, use.units, scale, bytes_per_s, port=use.demand,
                     warm_left=c.local_ns * scale)]

    def rates(self, flows: list[Flow]) -> list[Number]:
        """Each flow's demand alone; a load and an execute (in that order) both on the port
        split it (`shares` hands each its demand when they fit)."""
        if len(flows) == 2 and flows[0].port and flows[1].port:
            return list(shares(flows[0].port, flows[1].port))
        return [f.scale for f in flows]


Model = NoSharing | PortSharing | FullContention


def model(sharing: Sharing, net: Network) -> Model:
    if sharing == "none":
        return NoSharing(net)
    if sharing == "port":
        return PortSharing(net)
    if sharing == "full":
        return FullContention(net)
    raise ValueError(f"unknown sharing {sharing!r}; choose one of {', '.join(SHARINGS)}")
