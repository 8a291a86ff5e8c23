"""`elk-opt` starts without the heavy libraries: a command loads the solvers, the ONNX reader or
the plotting library it uses when it runs, never at start-up (onnx alone takes seconds, paid by
every `elk-opt` call, including `--help` and `verify`)."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("onnx", "ortools", "pulp", "highspy", "matplotlib", "networkx", "dask", "distributed",
         "ray")


def test_start_up_verify_and_basic_load_no_heavy_library(tmp_path):
    """The parser with every subcommand, `verify` and `solve --method basic`, in a fresh
    process: none of them imports a heavy library."""
    inst, plan = tmp_path / "i.json", tmp_path / "p.json"
    code = (
        "import sys\n"
        "from elk_opt.cli import build_parser, main\n"
        "build_parser()\n"
        f"assert main(['instance', 'synthetic', '--ops', '5', '-q', '-o', {str(inst)!r}]) == 0\n"
        f"assert main(['solve', {str(inst)!r}, '--method', 'basic', '-q', '-o', "
        f"{str(plan)!r}]) == 0\n"
        f"assert main(['verify', {str(plan)!r}]) == 0\n"
        f"print([m for m in {HEAVY!r} if m in sys.modules])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"
