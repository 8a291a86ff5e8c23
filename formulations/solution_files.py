"""Solution files of MILP and CP-SAT solvers, read into variable values and what they claim.

Formats, told apart by their first line:
- HiGHS (`highs --solution_file`, `Highs.writeSolution(path, 0)`): "Model status" then the
  status; "Objective", "Objective_bound" and "# Columns N" followed by N "name value" lines.
- CBC (`cbc model.mps solve solu out.sol`): "<status> - objective value X", then one line per
  nonzero column "index name value reduced-cost" ("**" marks a value outside its bounds);
  a column not listed is 0.
- CP-SAT: a `CpSolverResponse` text proto (`str(solver.response_proto)`), variables by proto
  index.
- Otherwise plain "name value" lines with "#" comments, which is what Gurobi's .sol and .mst
  files are (their "# Objective value = X" is read); untested against Gurobi itself, which is
  not installed here. CPLEX's XML .sol is not read.
What a file claims is kept: its status, objective and, where given, its objective bound.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

from elk_opt.errors import InputError
from formulations.model_map import Key

_CBC_HEAD = re.compile(r"^(?P<status>[A-Za-z][A-Za-z ]*?)\s+-\s+objective value\s+(?P<obj>\S+)")
_NUMBER = re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$|^[-+]?inf$", re.IGNORECASE)


@dataclass(frozen=True)
class SolutionFile:
    format: str  # "highs", "cbc", "cpsat-response", "name-value"
    values: dict[Key, float]
    status: str | None  # as the file says it
    objective: float | None
    bound: float | None  # the objective bound the file gives (CBC's: its proven optimum)
    zero_omitted: bool = False  # variables not listed are 0 (CBC lists nonzeros only)

    def value(self, key: Key) -> float | None:
        """The variable's value, None when the file gives none."""
        if key in self.values:
            return self.values[key]
        return 0.0 if self.zero_omitted else None


def read_solution_file(path: str | Path) -> SolutionFile:
    """The values and claims of a solution file (InputError naming the file and line)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"{path}: cannot read ({getattr(e, 'strerror', None) or e})") from None
    lines = text.splitlines()
    first = next((line.strip() for line in lines if line.strip()), "")
    if first == "Model status":
        return _highs(lines, str(path))
    if _CBC_HEAD.match(first):
        return _cbc(lines, str(path))
    if re.match(r"^(status|solution|objective_value)\s*:", first):
        return _cpsat(text, str(path))
    return _name_value(lines, str(path))


def _number(text: str, source: str, line: int, what: str) -> float:
    if not _NUMBER.match(text):
        raise InputError(f"{source}: line {line}: {what} is not a number: {text!r}")
    return float(text)


def _value(text: str, source: str, line: int, name: str) -> float:
    """A finite number: a variable's value, or the column count."""
    value = _number(text, source, line, name)
    if not math.isfinite(value):
        raise InputError(f"{source}: line {line}: {name} is {text!r}, not a finite value")
    return value


def _claim(text: str, source: str, line: int, what: str) -> float | None:
    """An objective or bound the file states; an infinite one (HiGHS writes inf where it has
    none) states nothing."""
    value = _number(text, source, line, what)
    return value if math.isfinite(value) else None


def _highs(lines: list[str], source: str) -> SolutionFile:
    status = lines[1].strip() if len(lines) > 1 else None
    values: dict[Key, float] = {}
    objective = bound = None
    k = 0
    while k < len(lines):
        words = lines[k].split()
        if words[:1] == ["Objective"] and len(words) == 2:
            objective = _claim(words[1], source, k + 1, "Objective")
        elif words[:1] == ["Objective_bound"] and len(words) == 2:
            bound = _claim(words[1], source, k + 1, "Objective_bound")
        elif words[:2] == ["#", "Columns"] and len(words) == 3 and not values:
            count = int(_value(words[2], source, k + 1, "the column count"))
            for m in range(k + 1, k + 1 + count):
                if m >= len(lines) or len(lines[m].split()) != 2:
                    raise InputError(f"{source}: line {m + 1}: expected 'name value' "
                                     f"({count} columns announced)")
                name, value = lines[m].split()
                values[name] = _value(value, source, m + 1, name)
            k += count
        k += 1
    if not values:
        raise InputError(f"{source}: a HiGHS solution file without primal values "
                         f"(model status {status!r})")
    return SolutionFile("highs", values, status, objective, bound)


def _cbc(lines: list[str], source: str) -> SolutionFile:
    head = _CBC_HEAD.match(lines[0].strip())
    assert head is not None
    status = head["status"].strip()
    values: dict[Key, float] = {}
    for k, line in enumerate(lines[1:], start=2):
        words = line.replace("**", " ").split()
        if not words:
            continue
        if len(words) != 4:
            raise InputError(f"{source}: line {k}: expected 'index name value reduced-cost', "
                             f"got {line.strip()!r}")
        values[words[1]] = _value(words[2], source, k, words[1])
    objective = _claim(head["obj"], source, 1, "objective value")
    # CBC says "Optimal" only when it proved it (it has no bound line to give)
    return SolutionFile("cbc", values, status, objective,
                        objective if status == "Optimal" else None, zero_omitted=True)


def _cpsat(text: str, source: str) -> SolutionFile:
    from ortools.sat.python import cp_model_helper

    response = cp_model_helper.CpSolverResponse()
    if not response.parse_text_format(text):
        raise InputError(f"{source}: not a CpSolverResponse text proto")
    status = response.status.name
    values: dict[Key, float] = {i: float(v) for i, v in enumerate(response.solution)}
    found = status in ("OPTIMAL", "FEASIBLE")
    return SolutionFile("cpsat-response", values, status,
                        response.objective_value if found else None,
                        response.best_objective_bound if found else None)


def _name_value(lines: list[str], source: str) -> SolutionFile:
    values: dict[Key, float] = {}
    objective = None
    for k, line in enumerate(lines, start=1):
        text = line.strip()
        if text.startswith("#"):
            found = re.match(r"#\s*Objective value\s*=\s*(\S+)", text, re.IGNORECASE)
            if found:
                objective = _claim(found[1], source, k, "objective value")
            continue
        if not text:
            continue
        words = text.split()
        if len(words) != 2:
            raise InputError(f"{source}: line {k}: not a solution file this reads (HiGHS, "
                             f"CBC, CP-SAT response, or 'name value' lines): {text[:60]!r}")
        values[words[0]] = _value(words[1], source, k, words[0])
    if not values:
        raise InputError(f"{source}: no variable values")
    return SolutionFile("name-value", values, None, objective, None)
