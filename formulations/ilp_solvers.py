"""Which MILP solvers the `ilp` method can run: HiGHS in-process, or any solver PuLP finds.

`highs` is HiGHS through highspy in-process (deadlines, Ctrl-C, its own bound); `cbc` is
PuLP's bundled CBC binary; any other solver PuLP reports available on this machine
(`pulp.listSolvers(onlyAvailable=True)`: GUROBI, CPLEX_CMD, SCIP_CMD, HiGHS_CMD, ...) is
accepted by its PuLP name, in any case. PuLP gives such solvers the time limit, relative gap,
threads and warm start through its common options, and reports a status but no bound.
"""

from __future__ import annotations

import pulp

from elk_opt.errors import UsageError

IN_PROCESS = "highs"
ALIASES = {"highs": "HiGHS", "cbc": "PULP_CBC_CMD"}  # short name -> PuLP's name


def available() -> list[str]:
    """The solver names `--param solver=` accepts on this machine (short names first)."""
    found = pulp.listSolvers(onlyAvailable=True)
    short = [name for name, pulp_name in ALIASES.items() if pulp_name in found]
    return short + [name.lower() for name in found if name not in ALIASES.values()]


def canonical(name: object) -> str:
    """The short name of an available solver (its alias, or PuLP's name in lower case); a
    UsageError listing the available ones when it is unknown or not installed here."""
    if not isinstance(name, str):
        raise UsageError(f"ilp solver must be a name, got {name!r}")
    key = name.lower()
    key = next((short for short, full in ALIASES.items() if key in (short, full.lower())), key)
    names = available()
    if key not in names:
        raise UsageError(f"ilp solver {name!r} is not available here; available: "
                         f"{', '.join(names)}")
    return key


def pulp_solver(key: str, **options: object) -> pulp.LpSolver:
    """PuLP's solver object for a canonical name, with PuLP's common options."""
    full = ALIASES.get(key) or next(s for s in pulp.listSolvers() if s.lower() == key)
    return pulp.getSolver(full, **options)
