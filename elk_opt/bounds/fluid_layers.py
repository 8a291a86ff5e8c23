"""The fluid LP with the layer windows' bounds as rows: the port's sharing and SRAM together.

Valid for every plan that executes in the instance's order, under the timing it is built for
(that of both parts). The fluid LP (elk_opt.bounds.fluid) sees how load and execute work can
overlap on the port but not SRAM; the layer windows (elk_opt.bounds.layers) see SRAM within a
layer but not the loads of later layers. Together: the LP must also give each window at least
the time its relaxation needs.

Interval b of the fluid LP is [S_{b-1}, S_b) (interval 0 is [0, S_0), interval n is
[S_{n-1}, T]). For the true plan its phase columns (x, y, z) account for disjoint parts of the
interval; one more column per interval, `idle` (cost 1), takes the rest (no load and no
execute active), so that for the true plan the interval's phases and idle time sum to its
length exactly, and the objective, the sum of every interval's columns, is T. A layer window
[a, b) whose relaxation is bounded by V (elk_opt.bounds.layers: end of E<b-1> - S_a >= V, and
for the first window, end of E<b-1> >= V) covers intervals a+1..b (0..b for the first), whose
lengths sum to S_b - S_a >= end of E<b-1> - S_a >= V (S_b - 0 >= V for the first; the last
window ends with interval n, whose end is T >= end of E<n-1>). So the row
    sum over those intervals of (phases + idle) >= V
holds for the true plan, and the LP's optimum with these rows is still a lower bound on T.
It is at least the larger of the two bounds (the rows sum to the windows' total), more when
the windows' time cannot also absorb what the port costs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from elk_opt.bounds.fluid import build_fluid, fluid_costs
from elk_opt.bounds.layers import LayerBound, layer_bound
from elk_opt.bounds.limits import DEFAULT_CLASSES
from elk_opt.problem import Instance, Timing


@dataclass(frozen=True)
class FluidLayersBound:
    bound_ns: int | None  # None when the LP did not finish in time
    windows_ns: int  # the layer windows' own bound (their sum)
    windows: int
    distinct: int
    proven: int
    wall_s: float


def fluid_layers_bound(instance: Instance, timing: Timing, window_time_s: float = 10.0,
                       lp_time_s: float | None = None, threads: int = 1,
                       max_classes: int = DEFAULT_CLASSES, per: int = 1,
                       windows: LayerBound | None = None) -> FluidLayersBound:
    """The fluid LP with one row per layer window (module docstring). `windows`: the layer
    windows already bounded under `timing` (`per` layers each), else they are solved here."""
    started = time.perf_counter()
    if windows is None:
        windows = layer_bound(instance, timing, per, window_time_s, threads)
    costs = fluid_costs(instance)
    if not costs:
        return FluidLayersBound(0, 0, 0, 0, 0, time.perf_counter() - started)
    model = build_fluid(costs, timing, max_classes)
    idle = [model.lp.column(1.0) for _ in model.phases]
    for a, b, value in windows.spans:
        covered = range(0 if a == 0 else a + 1, b + 1)
        row = {col: 1.0 for k in covered for col in model.phases[k] + [idle[k]]}
        model.lp.row(row, float(value), float("inf"))
    bound = model.solve(lp_time_s, threads)
    return FluidLayersBound(bound, windows.bound_ns, windows.windows, windows.distinct,
                            windows.proven, time.perf_counter() - started)
