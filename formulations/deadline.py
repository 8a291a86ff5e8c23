"""The deadline every model build and solve checks: `elk_opt.deadline`, where heuristics can
reach it too (they may not import formulations); named here as the formulations import it."""

from elk_opt.deadline import NO_DEADLINE, Deadline, OutOfTime

__all__ = ["NO_DEADLINE", "Deadline", "OutOfTime"]
