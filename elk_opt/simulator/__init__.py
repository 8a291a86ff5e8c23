"""Event simulator: replays a plan's lowered device program on a chip whose resources are shared.

`simulate(plan)` lowers the plan (`elk_opt.lower`), builds the chip's resources
(`network`), replays the device program (`engine`) under one of three sharing models
(`sharing`: `none`, `port` or `full`) and measures it (`metrics`). With sharing `none` it
reproduces docs/spec.md section 5 exactly, with `port` (only the NoC port shared) section 5b; with
`full` contention a plan is only slower than section 5, and the result says how far it is from
the plan's own analytic makespan and from section 5b's.
"""

from __future__ import annotations

import functools
import time

from elk_opt.evaluate import evaluate, evaluate_plan
from elk_opt.lower import DeviceProgram, lower
from elk_opt.problem import Chip, Plan
from elk_opt.simulator.engine import replay
from elk_opt.simulator.metrics import Breakdown, OpTimes, SimResult, summarize, whole_ns
from elk_opt.simulator.network import Network, all_to_all_twin, build_network
from elk_opt.simulator.sharing import EXACT_SHARING, SHARINGS, Sharing

__all__ = ["EXACT_SHARING", "SHARINGS", "Breakdown", "OpTimes", "SimResult", "Sharing",
           "all_to_all_twin", "analytic_makespans", "exact_makespan", "simulate",
           "simulate_program"]


@functools.lru_cache(maxsize=8)
def _cached_network(chip: Chip, extras: str, mapping: tuple[int, ...]) -> Network:
    return build_network(chip, mapping)


def network_for(chip: Chip, mapping: tuple[int, ...]) -> Network:
    """The chip's resources, built once per chip (a large mesh takes a fraction of a second).

    `Chip.extra` takes no part in chip equality, so its items join the cache key.
    """
    return _cached_network(chip, repr(sorted(chip.extra.items())), mapping)


def exact_makespan(dp: DeviceProgram, sharing: Sharing) -> int:
    """The makespan of an exact replay (`none`: section 5, `port`: section 5b)."""
    if sharing not in EXACT_SHARING.values():
        raise ValueError(f"sharing {sharing!r} is not exact")
    return whole_ns(replay(dp, network_for(dp.chip, dp.tile_to_core), sharing).end_ns)


def simulate_program(dp: DeviceProgram, *, sharing: Sharing = "full",
                     analytic_ns: int | None = None,
                     shared_noc_ns: int | None = None) -> SimResult:
    """Replay a device program under `sharing`.

    `analytic_ns` (the makespan under the program's timing) and `shared_noc_ns` (section 5b's)
    default to the program's exact replays, `EXACT_SHARING[dp.timing]` and `port`.
    """
    started = time.perf_counter()
    net = network_for(dp.chip, dp.tile_to_core)
    rep = replay(dp, net, sharing)
    wall = time.perf_counter() - started
    exact = {sharing: whole_ns(rep.end_ns)}  # the replays made, by sharing

    def exact_ns(mode: Sharing) -> int:
        if mode not in exact:
            exact[mode] = exact_makespan(dp, mode)
        return exact[mode]

    if analytic_ns is None:
        analytic_ns = exact_ns(EXACT_SHARING[dp.timing])
    if shared_noc_ns is None:
        shared_noc_ns = exact_ns("port")
    return summarize(dp, net, rep, sharing=sharing, analytic_ns=analytic_ns,
                     shared_noc_ns=shared_noc_ns, wall_s=wall)


def analytic_makespans(plan: Plan, chip: Chip | None = None) -> tuple[int, int | None]:
    """The plan's analytic makespan (its timing, on its own chip) and section 5b's.

    Section 5b's depends on the NoC port's rate, so on another `chip` it is left to the port
    replay (None).
    """
    analytic = evaluate_plan(plan).makespan_ns
    if chip is not None:
        return analytic, None
    if plan.timing == "shared-noc":
        return analytic, analytic
    return analytic, evaluate(plan.instance, plan.choice, plan.program, plan.release_ns,
                              timing="shared-noc").makespan_ns


def simulate(plan: Plan, *, sharing: Sharing = "full", chip: Chip | None = None) -> SimResult:
    """Simulate `plan`, on `chip`'s network when given (same cores and SRAM as the plan's)."""
    analytic, shared_noc = analytic_makespans(plan, chip)
    return simulate_program(lower(plan, chip), sharing=sharing, analytic_ns=analytic,
                            shared_noc_ns=shared_noc)
