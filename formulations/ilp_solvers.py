"""Which MILP solvers the `ilp` method can run, and how one runs: HiGHS in-process, or any
solver PuLP finds.

`highs` is HiGHS through highspy in-process (deadlines, Ctrl-C, its own bound); `cbc` is
PuLP's bundled CBC binary; any other solver PuLP reports available on this machine
(`pulp.listSolvers(onlyAvailable=True)`: GUROBI, CPLEX_CMD, SCIP_CMD, HiGHS_CMD, ...) is
accepted by its PuLP name, in any case. PuLP gives such solvers the time limit, relative gap,
threads and warm start through its common options, and reports a status but no bound.
"""

from __future__ import annotations

import math
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import highspy
import numpy as np
import pulp

from elk_opt.errors import UsageError
from elk_opt.solution import SolveOptions
from formulations.deadline import Deadline
from formulations.highs_run import new_highs, run_interruptible

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


class DeadlineHighs(pulp.HiGHS):
    """PuLP's in-process HiGHS, made to keep a method's deadline and answer Ctrl-C.

    The model is handed to HiGHS in bulk, checking the deadline as it goes; HiGHS gets what
    is left of it as its time limit, the variables' initial values as a start, and runs
    through `run_interruptible`, so a SIGINT stops it with its incumbent. Its banner and log
    appear, on stderr, only when verbose.
    """

    def __init__(self, deadline: Deadline, **kwargs) -> None:
        super().__init__(**kwargs)
        self.deadline = deadline
        self.interrupted = False

    def createAndConfigureSolver(self, lp: pulp.LpProblem) -> None:  # noqa: N802 (PuLP's name)
        h = lp.solverModel = new_highs(self.msg)
        if self.gapRel is not None:
            h.setOptionValue("mip_rel_gap", self.gapRel)
        if self.gapAbs is not None:
            h.setOptionValue("mip_abs_gap", self.gapAbs)
        if self.threads is not None:
            h.setOptionValue("threads", self.threads)
        for key, value in self.optionsDict.items():
            h.setOptionValue(key, value)

    def buildSolverModel(self, lp: pulp.LpProblem) -> None:  # noqa: N802 (PuLP's name)
        h = lp.solverModel
        inf = highspy.kHighsInf
        variables = lp.variables()
        for k, v in enumerate(variables):
            v.index = k
        self.deadline.check()
        cost = np.array([lp.objective.get(v, 0.0) for v in variables], dtype=float)
        lower = np.array([-inf if v.lowBound is None else v.lowBound for v in variables],
                         dtype=float)
        upper = np.array([inf if v.upBound is None else v.upBound for v in variables],
                         dtype=float)
        h.addCols(len(variables), cost, lower, upper, 0, [], [], [])
        if self.mip:
            integer = np.array([v.index for v in variables if v.cat == pulp.LpInteger],
                               dtype=np.int32)
            if len(integer):
                h.changeColsIntegrality(len(integer), integer,
                                        np.full(len(integer), highspy.HighsVarType.kInteger))
        row_lower, row_upper, start, index, value = [], [], [0], [], []
        for k, constraint in enumerate(lp._constraints.values()):
            if k % 1000 == 0:
                self.deadline.check()
            constraint.index = k
            for v, coefficient in constraint.items():
                if coefficient != 0:
                    index.append(v.index)
                    value.append(coefficient)
            start.append(len(index))
            lb, ub = constraint.getLb(), constraint.getUb()
            row_lower.append(-inf if lb is None else lb)
            row_upper.append(inf if ub is None else ub)
        h.addRows(len(row_lower), np.array(row_lower, dtype=float),
                  np.array(row_upper, dtype=float), len(index),
                  np.array(start[:-1], dtype=np.int32), np.array(index, dtype=np.int32),
                  np.array(value, dtype=float))

    def callSolver(self, lp: pulp.LpProblem) -> None:  # noqa: N802 (PuLP's name)
        h = lp.solverModel
        left = self.deadline.left()
        if left is not None:
            h.setOptionValue("time_limit", max(0.05, left))
        values = [v.varValue for v in lp.variables()]
        if all(x is not None for x in values):
            sol = highspy.HighsSolution()
            sol.col_value = [float(x) for x in values]
            sol.value_valid = True
            h.setSolution(sol)
        self.interrupted = run_interruptible(h)


@dataclass(frozen=True)
class Outcome:
    proven: bool
    has_solution: bool
    objective: float | None
    bound: float | None
    status: str
    interrupted: bool = False


def run_solver(prob: pulp.LpProblem, options: SolveOptions, solver: str, warm: bool,
               deadline: Deadline) -> Outcome:
    """Hand the model to the solver and run it until `deadline` (OutOfTime if the hand-over
    itself does not finish by then). A SIGINT stops HiGHS with its incumbent; CBC (and any
    other solver PuLP runs as a separate process) stops with its incumbent when the terminal
    sends it the SIGINT too. Solvers other than in-process HiGHS report no bound through
    PuLP: their solution is claimed proven only when they say optimal at gap 0."""
    gap = options.gap if options.gap is not None else 0.0
    if solver == IN_PROCESS:
        # HiGHS's default tolerances: tightening them to 1e-9 proved nothing more and made a
        # one-layer Llama2-13B model 17x slower (BENCHMARKS.md); claims stay honest either way,
        # since every plan is re-timed exactly and a bound above it raises
        extra = {"random_seed": options.seed}
        backend = DeadlineHighs(deadline, msg=options.verbose, gapRel=gap, gapAbs=0.0,
                         threads=options.threads or 2, **extra)
        prob.solve(backend)
        h = prob.solverModel
        info = h.getInfo()
        status = h.getModelStatus()
        has = info.primal_solution_status == 2
        return Outcome(proven=status == highspy.HighsModelStatus.kOptimal and gap == 0.0,
                       has_solution=has,
                       objective=info.objective_function_value if has else None,
                       bound=info.mip_dual_bound if math.isfinite(info.mip_dual_bound) else None,
                       status=h.modelStatusToString(status), interrupted=backend.interrupted)
    left = deadline.left()
    backend = pulp_solver(solver, msg=options.verbose,
                          timeLimit=None if left is None else max(0.05, left),
                          gapRel=gap, threads=options.threads or 2, warmStart=warm)
    with _sigint_noted() as interrupted:
        prob.solve(backend)
    has = prob.sol_status in (pulp.LpSolutionOptimal, pulp.LpSolutionIntegerFeasible)
    objective = pulp.value(prob.objective) if has else None
    # PuLP reports no bound: a solution is proven only when the solver says optimal at gap 0
    proven = prob.sol_status == pulp.LpSolutionOptimal and gap == 0.0 and not interrupted
    status = pulp.LpStatus[prob.status] + (" (interrupted)" if interrupted else "")
    return Outcome(proven=proven, has_solution=has, objective=objective,
                   bound=objective if proven else None, status=status,
                   interrupted=bool(interrupted))


@contextmanager
def _sigint_noted() -> Iterator[list[bool]]:
    """While CBC runs, a SIGINT is noted instead of raised, so PuLP can still read what CBC
    wrote; the yielded list is truthy once one arrived."""
    noted: list[bool] = []
    previous = signal.signal(signal.SIGINT, lambda _sig, _frame: noted.append(True))
    try:
        yield noted
    finally:
        signal.signal(signal.SIGINT, previous)
