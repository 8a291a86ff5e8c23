"""A module-level constant bound twice silently rebinds the first one for every use in the
module: `cpsat` once had two RETIME_SHARE, and the start plans' re-timing took half the time
left instead of a tenth (BENCHMARKS.md, "The fluid MIP's plan re-timed")."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted(p for folder in ("elk_opt", "formulations", "heuristics", "verify")
                 for p in (ROOT / folder).rglob("*.py"))


def _bound_names(node: ast.stmt) -> list[str]:
    if isinstance(node, ast.Assign):
        return [t.id for t in node.targets if isinstance(t, ast.Name)]
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return [node.target.id]
    if isinstance(node, ast.ImportFrom | ast.Import):
        return [(a.asname or a.name).split(".")[0] for a in node.names]
    if isinstance(node, ast.FunctionDef | ast.ClassDef):
        return [node.name]
    return []


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_module_binds_a_constant_twice(path):
    first: dict[str, int] = {}
    twice = []
    for node in ast.parse(path.read_text()).body:
        for name in _bound_names(node):
            if name.isupper() and name in first:
                twice.append(f"{name} (lines {first[name]} and {node.lineno})")
            first.setdefault(name, node.lineno)
    assert not twice, twice


def test_the_check_sees_a_constant_bound_twice(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("SHARE = 0.1\n\ndef f():\n    return SHARE\n\nSHARE = 0.5\n")
    names = [n for node in ast.parse(source.read_text()).body for n in _bound_names(node)]
    assert names.count("SHARE") == 2
