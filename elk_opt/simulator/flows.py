"""Max-min fair sharing of resource capacity between concurrent activities.

An activity is a fluid flow with a fixed demand vector: the bytes/s it puts on each resource
when it runs at its uncontended speed. It runs at a speed `s` in (0, 1], its fraction of the
uncontended speed, and then uses `s * demand` of every resource. Speeds are max-min fair by
progressive filling: all unfrozen activities speed up together until a resource saturates (the
activities on it freeze there) or they reach 1 (never faster than uncontended). Fairness is in
speed, so activities sharing a bottleneck are slowed by the same factor, whatever their size.
"""

from __future__ import annotations

import numpy as np

RELATIVE_SLACK = 1e-12


def max_min_speeds(demand: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """Speeds in (0, 1] of activities with `demand[f, r]` bytes/s on resources of `capacity[r]`."""
    flows = demand.shape[0]
    speed = np.ones(flows)
    active = np.ones(flows, dtype=bool)
    left = capacity.astype(float).copy()
    level = 0.0
    while active.any():
        load = demand[active].sum(axis=0)
        busy = load > 0
        if not busy.any():
            break
        headroom = np.full(left.shape, np.inf)
        headroom[busy] = left[busy] / load[busy]
        step = float(headroom.min())
        if level + step >= 1.0:
            break  # every remaining activity runs uncontended
        level += step
        left -= step * load
        saturated = busy & (headroom <= step * (1 + RELATIVE_SLACK))
        frozen = active & (demand[:, saturated] > 0).any(axis=1)
        speed[frozen] = level
        active &= ~frozen
    speed[active] = 1.0
    return speed
