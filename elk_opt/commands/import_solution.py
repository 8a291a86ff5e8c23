"""`elk-opt import-solution model.mps.json solution.sol -o plan.json`: the plan of another
solver's solution of a model written by `solve --export` (formulations/import_solution.py).

Exit 0 with the plan written; 1 when the solution is not a feasible solution of the model
or its plan fails the independent checker (nothing written); 2 for files that cannot be used.
"""

from __future__ import annotations

import argparse
import sys

from elk_opt.commands.flags import output_file
from elk_opt.commands.solve import claimed
from elk_opt.io import plan_to_dict, save_plan


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("import-solution",
                       help="turn a solver's solution of an exported model into a plan",
                       description="Solution files: HiGHS .sol, CBC's solution file, CP-SAT "
                                   "CpSolverResponse text, or 'name value' lines (Gurobi "
                                   ".sol/.mst). Exit 0 plan written, 1 solution infeasible "
                                   "for the model, 2 unusable files.")
    p.add_argument("sidecar", metavar="model.json", help="the sidecar `solve --export` wrote")
    p.add_argument("solution", metavar="solution.sol")
    p.add_argument("-o", "--output", required=True, type=output_file, metavar="plan.json")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from formulations.import_solution import RejectedSolution, import_solution
    from verify import check

    try:
        plan = import_solution(args.sidecar, args.solution)
    except RejectedSolution as e:
        print(f"elk-opt import-solution: rejected: {e}", file=sys.stderr)
        return 1
    report = check(plan_to_dict(plan))
    if not report.valid:
        first = report.violations[0]
        print(f"elk-opt import-solution: rejected: {args.solution}: its plan breaks "
              f"{first.rule}: {first.message}", file=sys.stderr)
        return 1
    save_plan(args.output, plan)
    c = plan.claims
    assert c is not None
    print(f"{c.method} ({c.params.get('solution_format')}): {claimed(c)} -> {args.output}")
    return 0
