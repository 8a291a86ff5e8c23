"""`import elk_opt`: the documented Python API (docs/api.md) and the README's example."""

from __future__ import annotations

import dataclasses
import inspect
import json
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings

import elk_opt
from elk_opt.cli import main as elk_main
from elk_opt.io import instance_to_dict, plan_to_dict
from elk_opt.methods import heuristics
from elk_opt.methods import solve as registry_solve
from elk_opt.solution import SolveOptions
from tests.schemas import errors, instance_validator, plan_validator
from tests.strategies import synthetic_instances
from verify.cli import main as verify_main

README = Path(__file__).resolve().parents[1] / "README.md"
HEAVY = ("ortools", "onnx", "pulp", "highspy", "matplotlib", "numpy", "networkx")
FUNCTIONS = [name for name in elk_opt.__all__
             if inspect.isfunction(getattr(elk_opt, name))]


def _strip_wall(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k != "wall_s"} for r in rows]


@pytest.fixture(scope="module")
def instance():
    return elk_opt.synthetic_instance(ops=10, plans=3, seed=3)


# ---------------------------------------------------------------------------- the package

def test_import_loads_no_heavy_library():
    """`import elk_opt` and its types stay light; solvers load when a call needs them."""
    code = ("import sys, elk_opt\n"
            "elk_opt.Instance, elk_opt.Plan, elk_opt.SolveOptions, elk_opt.TIMINGS\n"
            "import elk_opt.api\n"
            f"print([m for m in {HEAVY!r} if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


def test_every_public_name_resolves_and_unknown_names_do_not():
    for name in elk_opt.__all__:
        assert getattr(elk_opt, name) is not None, name
        assert name in dir(elk_opt)
    with pytest.raises(AttributeError, match="no attribute 'evaluate_plans'"):
        elk_opt.evaluate_plans  # noqa: B018
    namespace: dict = {}
    exec("from elk_opt import *", namespace)
    assert set(elk_opt.__all__) <= set(namespace)


def test_no_public_name_is_a_submodule():
    """Importing `elk_opt.X` binds X on the package, replacing a function of that name (why
    the API says `evaluate_plan` and `synthetic_instance`, not `evaluate` and `synthetic`)."""
    submodules = {m.name for m in pkgutil.iter_modules(elk_opt.__path__)}
    assert not submodules & set(elk_opt.__all__)


@pytest.mark.parametrize("name", FUNCTIONS)
def test_every_function_has_a_docstring_and_type_hints(name):
    func = getattr(elk_opt, name)
    assert func.__doc__ and len(func.__doc__.split()) >= 4, name
    hints = inspect.get_annotations(func)
    assert "return" in hints, name
    for param in inspect.signature(func).parameters:
        assert param in hints, f"{name}({param})"


def test_the_docs_list_every_public_name():
    text = (README.parent / "docs" / "api.md").read_text(encoding="utf-8")
    missing = [n for n in elk_opt.__all__ if f"`{n}" not in text and n != "__version__"]
    assert missing == []


# ---------------------------------------------------------------------------- instances

def test_build_instance_is_the_zoo_and_the_instance_command(tmp_path):
    from elk_opt.frontend.zoo import model_graph, model_instance

    built = elk_opt.build_instance("llama2-7b", chip="ipu-mk2", batch=4, kv_len=256, layers=1)
    zoo = model_instance("llama2-7b", elk_opt.load_chip("ipu-mk2"), batch=4, kv_len=256,
                         layers=1)
    assert instance_to_dict(built) == instance_to_dict(zoo)
    onnx_path = tmp_path / "slice.onnx"
    import onnx

    onnx.save(model_graph("llama2-7b", batch=4, kv_len=256, layers=1), onnx_path)
    out = tmp_path / "cli.json"
    assert elk_main(["instance", str(onnx_path), "--chip", "ipu-mk2", "--batch", "4",
                     "--kv-len", "256", "--max-plans", "3", "-o", str(out)]) == 0
    from_onnx = elk_opt.build_instance(onnx_path, chip=elk_opt.load_chip("ipu-mk2"), batch=4,
                                       kv_len=256, max_plans=3)
    assert instance_to_dict(from_onnx) == instance_to_dict(elk_opt.load_instance(out))
    assert all(len(op.exec_plans) <= 3 for op in from_onnx.ops)


@pytest.mark.parametrize("call, match", [
    (lambda: elk_opt.build_instance("no-such-model"), "unknown instance source"),
    (lambda: elk_opt.build_instance("elk-artifact"), r"call elk_opt\.artifact_instance\(\)"),
    (lambda: elk_opt.build_instance("synthetic"), r"call elk_opt\.synthetic_instance\(\)"),
    (lambda: elk_opt.build_instance("llama2-7b", layers=0), "layers"),
    (lambda: elk_opt.build_instance("llama2-7b", max_plans=0), "max_plans"),
    (lambda: elk_opt.build_instance("llama2-7b", chip="no-such-chip"), "unknown chip"),
    (lambda: elk_opt.synthetic_instance(ops=0), "ops"),
    (lambda: elk_opt.synthetic_instance(tightness=2.0), "tightness"),
    (lambda: elk_opt.solve(elk_opt.synthetic_instance(ops=2), timing="shared"), "timing"),
    (lambda: elk_opt.solve(elk_opt.synthetic_instance(ops=2), "nope"), "unknown method"),
])
def test_bad_requests_raise_usage_errors(call, match):
    with pytest.raises(elk_opt.UsageError, match=match):
        call()


def test_missing_files_raise_input_errors(tmp_path):
    with pytest.raises(elk_opt.InputError, match="no such file"):
        elk_opt.load_plan(tmp_path / "absent.json")
    with pytest.raises(elk_opt.InputError, match="ops"):
        (tmp_path / "bad.json").write_text('{"format": "elk-instance/1", "name": "x"}')
        elk_opt.load_instance(tmp_path / "bad.json")


# ---------------------------------------------------------------------------- solving

@settings(max_examples=10)
@given(synthetic_instances(max_ops=16, max_plans=3))
def test_solve_is_the_method_registry_and_evaluate_plan_its_timing(instance):
    for timing in elk_opt.TIMINGS:
        plan = elk_opt.solve(instance, "elk-dyn", timing=timing)
        same = registry_solve(instance, "elk-dyn", SolveOptions(timing=timing))
        assert (plan.choice, plan.program, plan.timing) == (same.choice, same.program, timing)
        assert elk_opt.evaluate_plan(plan).makespan_ns == plan.claims.makespan_ns
        separate = elk_opt.evaluate_plan(plan, "separate-noc").makespan_ns
        assert elk_opt.evaluate_plan(plan, "shared-noc").makespan_ns >= separate  # 5b slows


def test_keywords_replace_the_fields_of_options(instance):
    base = SolveOptions(timing="separate-noc", params={"max_shift": 1}, seed=7)
    plan = elk_opt.solve(instance, "elk-full", base, params={"max_shift": 0})
    assert plan.timing == "separate-noc"
    expected = registry_solve(instance, "elk-full",
                              dataclasses.replace(base, params={"max_shift": 0}))
    assert plan.program == expected.program


def test_warm_start_takes_a_plan(instance):
    warm = elk_opt.solve(instance, "elk-full", timing="separate-noc")
    exact = elk_opt.solve(instance, "cpsat", timing="separate-noc", time_limit_s=20, threads=2,
                          warm_start=warm)
    assert exact.claims.params["warm_start"] == "elk-full"
    assert exact.claims.makespan_ns <= warm.claims.makespan_ns  # hinted with a feasible plan
    assert elk_opt.verify(exact)["valid"]


# ---------------------------------------------------------------------------- analyses

def test_verify_is_the_verify_json_report(instance, tmp_path, capsys):
    plan = elk_opt.solve(instance, "static", timing="separate-noc")
    path = tmp_path / "plan.json"
    elk_opt.save_plan(path, plan)
    capsys.readouterr()
    verify_main([str(path), "--json"])
    printed = json.loads(capsys.readouterr().out)
    assert elk_opt.verify(path) == printed
    assert elk_opt.verify(str(path)) == printed
    assert elk_opt.verify(plan) == {**printed, "file": None}
    assert elk_opt.verify(json.loads(path.read_text())) == {**printed, "file": None}
    assert printed["valid"] and printed["makespan_ns"] == plan.claims.makespan_ns


def test_verify_reports_what_is_wrong(instance, tmp_path, capsys):
    plan = plan_to_dict(elk_opt.solve(instance, "basic", timing="separate-noc"))
    plan["claims"]["makespan_ns"] -= 1
    report = elk_opt.verify(plan)
    assert not report["valid"] and [v["rule"] for v in report["violations"]] == ["R6"]
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    verify_main([str(broken), "--json"])
    printed = json.loads(capsys.readouterr().out)
    assert elk_opt.verify(broken) == printed
    assert printed["valid"] is False and "invalid JSON" in printed["malformed"]


def test_simulate_without_contention_is_section_5_and_port_only_is_5b(instance):
    plan = elk_opt.solve(instance, "elk-full", timing="separate-noc")
    alone = elk_opt.simulate(plan, sharing="none")
    assert alone.makespan_ns == elk_opt.evaluate_plan(plan).makespan_ns
    assert elk_opt.simulate(plan).makespan_ns >= alone.makespan_ns
    shared = elk_opt.solve(instance, "elk-full")  # shared-noc, the default
    assert elk_opt.simulate(shared, sharing="port").makespan_ns == \
        elk_opt.evaluate_plan(shared).makespan_ns


def test_bound_is_the_bound_command_and_below_every_plan(instance, tmp_path):
    report = elk_opt.bound(instance, window=5, window_time_s=5.0, lp_time_s=60.0)
    path = tmp_path / "i.json"
    elk_opt.save_instance(path, instance)
    out = tmp_path / "bounds.json"
    assert elk_main(["bound", str(path), "--window", "5", "--window-time", "5",
                     "--lp-time", "60", "-o", str(out)]) == 0
    written = json.loads(out.read_text())
    assert _strip_wall(written.pop("bounds")) == _strip_wall(report.pop("bounds"))
    assert written == report
    assert report["timing"] == "shared-noc"
    separate = elk_opt.bound(instance, timing="separate-noc", window=0, lp_max_ops=0)
    for method in heuristics():
        plan = elk_opt.solve(instance, method)
        assert report["best"]["ns"] <= plan.claims.makespan_ns, method
        plan = elk_opt.solve(instance, method, timing="separate-noc")
        assert separate["best"]["ns"] <= plan.claims.makespan_ns, method


def test_compare_is_the_compare_command(instance, tmp_path):
    path = tmp_path / "i.json"
    elk_opt.save_instance(path, instance)
    out = tmp_path / "rows.json"
    elk_main(["compare", str(path), "--methods", "basic,elk-dyn", "--json", str(out)])
    written = json.loads(out.read_text())
    result = elk_opt.compare(instance, ["basic", "elk-dyn"])
    assert result["instance"] == written["instance"] == instance.name
    assert _strip_wall(result["rows"]) == _strip_wall(written["rows"])
    assert [r["method"] for r in result["rows"]] == ["ideal", "basic", "elk-dyn"]


def test_compare_rejects_bad_methods_before_running_any(instance, monkeypatch):
    import elk_opt.comparison

    def never(*args, **kwargs):
        raise AssertionError("a method ran")

    monkeypatch.setattr(elk_opt.comparison, "solve", never)
    with pytest.raises(elk_opt.UsageError, match="unknown method"):
        elk_opt.compare(instance, ["basic", "nope"])
    with pytest.raises(elk_opt.UsageError, match="bound"):
        elk_opt.compare(instance, ["ideal"])


def test_plans_and_instances_survive_a_save_and_load(instance, tmp_path):
    plan = elk_opt.solve(instance, "elk-full")
    elk_opt.save_plan(tmp_path / "p.json", plan)
    elk_opt.save_instance(tmp_path / "i.json", instance)
    assert plan_to_dict(elk_opt.load_plan(tmp_path / "p.json")) == json.loads(
        (tmp_path / "p.json").read_text())
    assert elk_opt.load_instance(tmp_path / "i.json") == instance


# ---------------------------------------------------------------------------- README

def readme_example() -> str:
    """The python block of README.md's "Python API" section, verbatim."""
    section = README.read_text(encoding="utf-8").split("\n## Python API\n", 1)[1]
    section = section.split("\n## ", 1)[0]
    blocks = re.findall(r"^```python\n(.*?)^```$", section, re.S | re.M)
    assert len(blocks) == 1, "the Python API section holds one python example"
    return blocks[0]


def test_the_readme_example_runs_as_written(tmp_path, monkeypatch, capsys):
    code = readme_example()
    assert "import elk_opt" in code
    monkeypatch.chdir(tmp_path)
    exec(compile(code, str(README), "exec"), {"__name__": "__readme__"})
    printed = capsys.readouterr().out
    assert "elk-full:" in printed and "cpsat:" in printed and "best lower bound" in printed
    instance_doc = json.loads((tmp_path / "instance.json").read_text())
    plan_doc = json.loads((tmp_path / "plan.json").read_text())
    assert errors(instance_validator(), instance_doc) == []
    assert errors(plan_validator(), plan_doc) == []
    assert plan_doc["claims"]["method"] == "cpsat"
