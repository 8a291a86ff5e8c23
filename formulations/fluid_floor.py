"""The fluid floor: the best fluid bound an exact method or an LNS can afford before it starts.

The fluid LP (`elk_opt.bounds.fluid`), up to FLUID_MILP_MAX_OPS ops the fluid MIP
(`elk_opt.bounds.fluid_milp`) and, if asked, up to FLUID_CONTIGUOUS_MAX_OPS ops (a decoder
layer) that MIP with loads that run without a break (`elk_opt.bounds.contiguous`): the
largest. All hold for every plan in the instance's execution order, with or without
restrictions, so a method in that order may claim the floor, start its search there
(`cpsat`'s probes) or stop once a plan meets it (`polish`).

The last MIP is the strongest and the slowest (2-21 s on the small gap suite's one-layer zoo
slices, against 0.4-4 s for the plain one); stopped by its share, its dual bound can be below
the plain MIP's optimum, so it runs second, once that one is solved, and only adds. `cpsat`
asks for it: its floor is what a study's reference and a plan's claimed gap come from, and
on that suite it proves one more slice. `polish` does not: on a slice its proofs come from
solving it whole with `cpsat`, and the seconds the MIP takes cost it two of them there
(BENCHMARKS.md, "Loads run whole"). HiGHS stops a MIP on the wall clock only, so a run that
must repeat (under a work limit) leaves the MIPs out; the LP on these sizes finishes. The
solvers are imported when the floor is computed.
"""

from __future__ import annotations

from collections.abc import Callable

from elk_opt.bounds.limits import FLUID_CONTIGUOUS_MAX_OPS, FLUID_MILP_MAX_OPS
from elk_opt.interrupts import stop_requested
from elk_opt.problem import Instance, Timing

LP_SHARE = 0.1  # of the time left, for the fluid LP
MILP_SHARE = 0.2  # of the time left then, for the fluid MIP on small instances
CONTIGUOUS_SHARE = 0.25  # of the time left then, for that MIP with loads run whole (one layer)


def fluid_floor(instance: Instance, timing: Timing, left: Callable[[], float | None],
                milp: bool = True, contiguous: bool = False) -> int | None:
    """The floor; `left()` is the caller's time left (None: no limit); without `milp` the LP
    alone, with `contiguous` the MIP with loads run whole too. None if no bound was solved in
    its share, or a SIGINT asked the caller to stop with its best plan."""
    from elk_opt.bounds.fluid import fluid_bound
    from elk_opt.bounds.fluid_milp import fluid_milp_bound

    def share(fraction: float) -> float | None:
        rest = left()
        return None if rest is None else fraction * rest

    found: list[int | None] = []
    try:
        found.append(fluid_bound(instance, timing, share(LP_SHARE)).bound_ns)
        if milp and len(instance.ops) <= FLUID_MILP_MAX_OPS and not stop_requested():
            plain = fluid_milp_bound(instance, timing, share(MILP_SHARE))
            found.append(plain.bound_ns)
            if (contiguous and plain.complete and len(instance.ops) <= FLUID_CONTIGUOUS_MAX_OPS
                    and not stop_requested()):
                found.append(fluid_milp_bound(instance, timing, share(CONTIGUOUS_SHARE),
                                              contiguous=True).bound_ns)
    except KeyboardInterrupt:  # the bounds' way of saying a SIGINT stopped HiGHS
        if not stop_requested():
            raise
    return max((b for b in found if b is not None), default=None)
