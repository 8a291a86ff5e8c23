"""The execution-order setting (R2): each method solves only in the orders it lists."""

import subprocess
import sys

import pytest

from elk_opt.cli import main
from elk_opt.errors import UsageError
from elk_opt.io import save_instance
from elk_opt.methods import METHODS, solve
from elk_opt.solution import SolveOptions
from tests.tiny import tiny_instance


def test_every_method_lists_a_default_order():
    for name, info in METHODS.items():
        assert info.exec_orders and set(info.exec_orders) <= {"instance", "free"}, name


def test_an_order_a_method_does_not_solve_is_refused():
    instance = tiny_instance([(10, 5, 20, 10, 0), (10, 5, 20, 10, 0)])
    refusing = [n for n, info in METHODS.items() if "free" not in info.exec_orders]
    if not refusing:
        pytest.skip("every method solves in free order")
    with pytest.raises(UsageError, match="--exec-order"):
        solve(instance, refusing[0], SolveOptions(exec_order="free"))


def test_misspelled_exec_order_is_one_line_and_exit_2(tmp_path):
    done = subprocess.run([sys.executable, "-m", "elk_opt.cli", "solve", "x.json",
                           "--method", "basic", "--exec-order", "fre", "-o",
                           str(tmp_path / "p.json")], capture_output=True, text=True)
    assert done.returncode == 2
    assert "--exec-order" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "p.json").exists()


def test_a_refused_order_is_one_line_before_any_work(tmp_path, capsys):
    refusing = [n for n, info in METHODS.items() if "free" not in info.exec_orders]
    if not refusing:
        pytest.skip("every method solves in free order")
    path = tmp_path / "i.json"
    save_instance(path, tiny_instance([(10, 5, 20, 10, 0), (10, 5, 20, 10, 0)]))
    out = tmp_path / "p.json"
    assert main(["solve", str(path), "--method", refusing[0], "--exec-order", "free",
                 "-o", str(out)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "--exec-order" in err[0], err  # no "solving ..." line before it
    assert not out.exists()
