"""A bound of a report row computed again from the row's params (`elk-opt certify --check`).

Solver-backed bounds are deterministic only up to their time limits, so each is recomputed
with the limit that reproduces it (for the MIPs on windows, four times the recorded one).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from elk_opt.bounds.cuts import (
    hbm_cut_any_bound,
    hbm_cut_bound,
    port_cut_any_bound,
    port_cut_bound,
    port_total_bound,
)
from elk_opt.bounds.ideal import ideal_bound
from elk_opt.bounds.limits import DEFAULT_CLASSES
from elk_opt.errors import UsageError
from elk_opt.problem import Instance, Timing


def recompute(instance: Instance, timing: Timing, name: str, params: dict[str, Any],
              memo: dict[tuple, Any] | None = None) -> int | None:
    """The value of the bound a report row names, computed again from its `params` (None if
    it does not finish within them). Solver-backed bounds are deterministic only up to their
    time limits: a value recomputed under a limit may differ from the recorded one. The layer
    windows run on one worker under their deterministic limit alone, so they come out at least
    at the recorded value (elk_opt.bounds.layers.solver_for_bound). `memo` (one per instance)
    keeps the layer windows solved for one row for the next that names the same ones
    (`fluid-layers` is built on `layers<N>`'s windows)."""
    cheap: dict[str, Callable[[Instance], int]] = {"ideal": ideal_bound,
                                                   "hbm-cut": hbm_cut_bound,
                                                   "hbm-cut-any": hbm_cut_any_bound}
    if timing == "shared-noc":
        cheap |= {"port-total": port_total_bound, "port-cut": port_cut_bound,
                  "port-cut-any": port_cut_any_bound}
    if name in cheap:
        return cheap[name](instance)
    if name == "fluid":
        from elk_opt.bounds.fluid import fluid_bound
        return fluid_bound(instance, timing, params.get("time_limit_s"),
                           max_classes=_classes(params)).bound_ns
    if name == "fluid-sram":
        from elk_opt.bounds.fluid_sram import fluid_sram_bound
        return fluid_sram_bound(instance, timing, params.get("time_limit_s"),
                                params["band"], _classes(params)).bound_ns
    if name in ("fluid-milp", "fluid-contiguous", "fluid-whole-ns"):
        from elk_opt.bounds.fluid_milp import fluid_milp_bound
        return fluid_milp_bound(instance, timing, params.get("time_limit_s"), params["band"],
                                _classes(params), contiguous=name != "fluid-milp",
                                whole_ns=name == "fluid-whole-ns").bound_ns
    if name == "lp":
        from formulations.ilp import lp_bound
        return lp_bound(instance, params.get("time_limit_s"))
    if name.startswith("window") and "width" in params:
        from elk_opt.bounds.window import window_bound
        return window_bound(instance, params["width"], params["time_limit_s"], 1).bound_ns
    if name == "fluid-layers":
        from elk_opt.bounds.fluid_layers import fluid_layers_bound
        windows = _layer_windows(instance, timing, params, memo)
        return fluid_layers_bound(instance, timing, params["time_limit_s"],
                                  params.get("lp_time_s"), max_classes=_classes(params),
                                  per=params["per"], windows=windows).bound_ns
    if name.startswith("layers") and "per" in params:
        return _layer_windows(instance, timing, params, memo).bound_ns
    if name == "fluid-split":
        from elk_opt.bounds.split import fluid_split_bound
        # each block's MIP on one thread with four times its limit, as for `carry`
        return fluid_split_bound(instance, timing, 4 * params["mip_time_s"] + 1,
                                 params["band"], _classes(params)).bound_ns
    if name == "carry":
        from elk_opt.bounds.carry import carry_bound
        # at the recorded prices, each window's MIP on one thread with four times its limit
        # (HiGHS on one thread searches the same way each run: more time, a bound as high)
        return carry_bound(instance, timing, params["per"],
                           mip_time_s=4 * params["mip_time_s"] + 1,
                           prices=params["prices"], max_classes=_classes(params)).bound_ns
    raise UsageError(f"no bound named {name!r} under {timing} to recompute")


def _classes(params: dict[str, Any]) -> int:
    """The load demand classes a row was built with (elk_opt.bounds.fluid)."""
    return params.get("max_classes", DEFAULT_CLASSES)


def _layer_windows(instance: Instance, timing: Timing, params: dict[str, Any],
                   memo: dict[tuple, Any] | None) -> Any:
    """The layer windows a row's params name, solved deterministically (once per memo)."""
    from elk_opt.bounds.layers import layer_bound

    # rows written before the windows' fluid MIP ran have no mip_time_s: the MIP then gets
    # CP-SAT's limit, and can only raise what they recorded
    mip_time_s = params.get("mip_time_s", params["time_limit_s"])
    key = ("layers", timing, params["per"], params["time_limit_s"], mip_time_s)
    if memo is not None and key in memo:
        return memo[key]
    windows = layer_bound(instance, timing, params["per"], params["time_limit_s"],
                          deterministic=True, mip_time_s=mip_time_s)
    if memo is not None:
        memo[key] = windows
    return windows

