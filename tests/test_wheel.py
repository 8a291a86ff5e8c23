"""The wheel carries what a user outside the repository needs: the schemas (package data),
the command line and the Python API.

Builds the wheel (`pip wheel --no-deps`, from a copy of the sources so the worktree gets no
build folders), installs it into a fresh virtual environment in tmp_path that borrows this
machine's site packages for the dependencies (`--system-site-packages`; nothing is fetched),
and runs `elk-opt schema plan` and README.md's Python API example there, with no PYTHONPATH
and outside the repository. It builds a wheel, so it takes a while; run it alone with
`pytest -m wheel`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_api import readme_example

pytestmark = pytest.mark.wheel

REPO = Path(__file__).resolve().parents[1]
SOURCES = ("pyproject.toml", "README.md", "elk_opt", "formulations", "heuristics", "verify")


def _run(argv: list[str | Path], cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run([str(a) for a in argv], cwd=cwd, env=env, capture_output=True,
                          text=True)
    assert done.returncode == 0, f"{argv}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def test_the_wheel_works_outside_the_repository(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    source = tmp_path / "src"
    source.mkdir()
    for name in SOURCES:
        path = REPO / name
        if path.is_dir():
            shutil.copytree(path, source / name,
                            ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy2(path, source / name)
    wheels = tmp_path / "wheels"
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", wheels, source],
         tmp_path, env)
    (wheel,) = wheels.glob("elk_opt-*.whl")
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--system-site-packages", venv], tmp_path, env)
    python, elk_opt_cmd = venv / "bin" / "python", venv / "bin" / "elk-opt"
    _run([python, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "-q", wheel],
         tmp_path, env)
    work = tmp_path / "work"
    work.mkdir()
    where = _run([python, "-c", "import elk_opt; print(elk_opt.__file__)"], work, env)
    assert Path(where.strip()).is_relative_to(venv), where  # the wheel, not this checkout

    printed = json.loads(_run([elk_opt_cmd, "schema", "plan"], work, env))
    shipped = json.loads((REPO / "elk_opt" / "schemas" / "plan.schema.json").read_text())
    assert printed == shipped

    example = work / "example.py"
    example.write_text(readme_example(), encoding="utf-8")
    out = _run([python, example], work, env)
    assert "verify: valid" in out
    assert (work / "plan.json").exists()
