"""Event simulator: replays a plan's lowered device program with shared HBM, NoC and SRAM ports.

`simulate(plan)` lowers the plan (`elk_opt.lower`), builds the chip's resources
(`network`), replays the device program as fluid flows sharing capacity max-min fairly
(`engine`, `flows`) and measures it (`metrics`). Without contention it reproduces the analytic
makespan of DESIGN.md section 5 exactly; with contention a plan only gets slower.
"""

from __future__ import annotations

import functools
import time

from elk_opt.evaluate import evaluate_plan
from elk_opt.lower import DeviceProgram, lower
from elk_opt.problem import Chip, Plan
from elk_opt.simulator.engine import replay
from elk_opt.simulator.metrics import Breakdown, OpTimes, SimResult, summarize, whole_ns
from elk_opt.simulator.network import Network, all_to_all_twin, build_network

__all__ = ["Breakdown", "OpTimes", "SimResult", "all_to_all_twin", "simulate",
           "simulate_program"]


@functools.lru_cache(maxsize=8)
def _cached_network(chip: Chip, extras: str, mapping: tuple[int, ...]) -> Network:
    return build_network(chip, mapping)


def network_for(chip: Chip, mapping: tuple[int, ...]) -> Network:
    """The chip's resources, built once per chip (a large mesh takes a fraction of a second).

    `Chip.extra` takes no part in chip equality, so its items join the cache key.
    """
    return _cached_network(chip, repr(sorted(chip.extra.items())), mapping)


def simulate_program(dp: DeviceProgram, *, contention: bool = True,
                     analytic_ns: int | None = None) -> SimResult:
    """Replay a device program; `analytic_ns` defaults to its replay without contention."""
    started = time.perf_counter()
    net = network_for(dp.chip, dp.tile_to_core)
    rep = replay(dp, net, contention)
    wall = time.perf_counter() - started
    if analytic_ns is None:
        analytic_ns = whole_ns(replay(dp, net, False).end_ns) if contention else whole_ns(
            rep.end_ns)
    return summarize(dp, net, rep, contention=contention, analytic_ns=analytic_ns, wall_s=wall)


def simulate(plan: Plan, *, contention: bool = True, chip: Chip | None = None) -> SimResult:
    """Simulate `plan`, on `chip`'s network when given (same cores and SRAM as the plan's)."""
    analytic = evaluate_plan(plan).makespan_ns
    return simulate_program(lower(plan, chip), contention=contention, analytic_ns=analytic)
