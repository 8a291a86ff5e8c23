"""elk_opt/schemas/: the formats as JSON Schemas, checked against what elk-opt reads and writes.

Every document the suite writes is also checked, by the hook in conftest.py; these tests check
the fixtures, the hook itself, and that malformed documents are rejected.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from jsonschema import Draft202012Validator

import elk_opt.io
from elk_opt.io import instance_to_dict, plan_from_dict, plan_to_dict
from elk_opt.problem import Claims, Plan
from elk_opt.solution import make_plan
from tests.conftest import SCHEMA_CHECKER, SchemaViolation
from tests.schemas import (
    CERTIFICATE_SCHEMA,
    INSTANCE_SCHEMA,
    PLAN_SCHEMA,
    certificate_validator,
    errors,
    instance_validator,
    load_schema,
    plan_validator,
)
from tests.strategies import random_instances, random_plans
from tests.tiny import only_choice, parse, tiny_instance

TESTS = Path(__file__).parent
CALIBRATION = TESTS / "data" / "elk-artifact-llama2-13b-b32-kv2048-layer.json"


def _fixtures() -> list[Path]:
    """Every JSON file under tests/ that holds an instance or a plan."""
    found = []
    for path in sorted(TESTS.rglob("*.json")):
        document = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(document, dict) and document.get("format") in ("elk-instance/1",
                                                                      "elk-plan/1"):
            found.append(path)
    return found


def test_the_calibration_instance_matches():
    """The instance measured from the paper's implementation, with its extra keys."""
    if not CALIBRATION.exists():
        pytest.skip(f"{CALIBRATION} is not on this machine")
    document = json.loads(CALIBRATION.read_text(encoding="utf-8"))
    assert errors(instance_validator(), document) == []


def _validator_for(document: dict[str, Any]) -> Draft202012Validator:
    return plan_validator() if document.get("format") == "elk-plan/1" else instance_validator()


def test_schemas_are_valid_draft_2020_12():
    for name in (INSTANCE_SCHEMA, PLAN_SCHEMA, CERTIFICATE_SCHEMA):
        schema = load_schema(name)
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        Draft202012Validator.check_schema(schema)


def test_the_fixtures_include_the_baseline_instances():
    names = {p.parent.name for p in _fixtures()}
    assert "instances" in names  # tests/baselines/instances/*.json


@pytest.mark.parametrize("path", _fixtures(), ids=lambda p: p.name)
def test_every_fixture_matches_its_schema(path):
    document = json.loads(path.read_text(encoding="utf-8"))
    assert errors(_validator_for(document), document) == []


@given(random_instances(noc=True).flatmap(
    lambda inst: random_plans(inst).map(lambda cp: (inst, cp))))
def test_written_plans_match_and_the_loader_reads_them(drawn):
    instance, (choice, program) = drawn
    plan = make_plan(instance, choice, program, method="random", started=0.0,
                     timing="shared-noc")
    document = plan_to_dict(plan)
    assert errors(plan_validator(), document) == []
    assert errors(instance_validator(), instance_to_dict(instance)) == []
    assert plan_to_dict(plan_from_dict(json.loads(json.dumps(document)))) == document


def _plan_document() -> dict[str, Any]:
    instance = tiny_instance([(10, 5, 20, 8, 1), (10, 5, 20, 8, 0)])
    plan = make_plan(instance, only_choice(instance), parse("P0 P1 E0 E1"), method="test",
                     started=0.0, timing="shared-noc", release_ns={("P", 1): 3})
    return json.loads(json.dumps(plan_to_dict(plan)))


def test_optional_parts_may_be_absent_and_extra_keys_present_where_allowed():
    document = _plan_document()
    for key in ("timing", "release_ns", "claims"):
        del document[key]
    for exec_plan in document["instance"]["ops"][0]["exec_plans"]:
        exec_plan.pop("noc_ns", None)
    document["tool"] = {"name": "another"}  # plan-level metadata
    instance = document["instance"]
    instance["source"] = "anywhere"
    instance["chip"]["sram_port_bytes_per_s"] = 32e9
    instance["ops"][0]["hbm_data"] = "weights"
    instance["ops"][0]["exec_plans"][0]["comp_ns"] = 5  # as the calibration instance has
    assert errors(plan_validator(), document) == []
    assert errors(instance_validator(), instance) == []


def _set(path: str, value: Any) -> Callable[[dict], None]:
    """A mutation that sets the value at a slash-separated path (a missing key is added)."""
    *parents, last = path.split("/")

    def mutate(document: dict) -> None:
        node: Any = document
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        node[int(last) if isinstance(node, list) else last] = value
    return mutate


def _drop(path: str) -> Callable[[dict], None]:
    *parents, last = path.split("/")

    def mutate(document: dict) -> None:
        node: Any = document
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        del node[last]
    return mutate


PLAN_MALFORMED: dict[str, Callable[[dict], None]] = {
    "plan format": _set("format", "elk-plan/2"),
    "no instance": _drop("instance"),
    "no choice": _drop("choice"),
    "no program": _drop("program"),
    "unknown timing": _set("timing", "shared"),
    "timing null": _set("timing", None),
    "instruction with a leading zero": _set("program/0", "P01"),
    "instruction of another kind": _set("program/0", "X0"),
    "instruction without an op": _set("program/0", "P"),
    "negative instruction": _set("program/0", "E-1"),
    "instruction as a number": _set("program/0", 0),
    "release of a non-instruction": _set("release_ns/Q1", 3),
    "negative release": _set("release_ns/P1", -1),
    "release as text": _set("release_ns/P1", "3"),
    "choice without preload": _drop("choice/0/preload"),
    "negative choice": _set("choice/0/exec", -1),
    "fractional choice": _set("choice/0/exec", 0.5),
    "boolean choice": _set("choice/0/exec", True),
    "extra key in a choice": _set("choice/0/note", 1),
    "unknown status": _set("claims/status", "proven"),
    "negative makespan": _set("claims/makespan_ns", -1),
    "bound as text": _set("claims/lower_bound_ns", "7"),
    "negative wall time": _set("claims/wall_s", -0.5),
    "claims without method": _drop("claims/method"),
    "claims without params": _drop("claims/params"),
    "extra key in claims": _set("claims/proof", "trust me"),
    "params not an object": _set("claims/params", []),
}
OP = "ops/0"
INSTANCE_MALFORMED: dict[str, Callable[[dict], None]] = {
    "instance format": _set("format", "elk-instance/2"),
    "instance without name": _drop("name"),
    "no ops": _set("ops", []),
    "zero cores": _set("chip/cores", 0),
    "negative sram": _set("chip/sram_bytes", -1),
    "chip without clock": _drop("chip/clock_hz"),
    "unknown topology": _set("chip/noc/topology", "ring"),
    "zero link bandwidth": _set("chip/noc/link_bytes_per_s", 0),
    "noc without hbm_ports": _drop("chip/noc/hbm_ports"),
    "mesh without rows": _set("chip/noc/topology", "mesh"),  # its mesh_rows stay 0
    "op without kind": _drop(f"{OP}/kind"),
    "layer as text": _set(f"{OP}/layer", "1"),
    "negative input": _set(f"{OP}/inputs", [-1]),
    "boolean hbm bytes": _set(f"{OP}/hbm_bytes", True),
    "negative flops": _set(f"{OP}/flops", -3),
    "no exec plans": _set(f"{OP}/exec_plans", []),
    "no preload plans": _set(f"{OP}/preload_plans", []),
    "no warmup pairs": _set(f"{OP}/warmup", []),
    "exec plan without time": _drop(f"{OP}/exec_plans/0/time_ns"),
    "negative exec noc_ns": _set(f"{OP}/exec_plans/0/noc_ns", -5),
    "preload noc_ns as text": _set(f"{OP}/preload_plans/0/noc_ns", "5"),
    "preload plan without load": _drop(f"{OP}/preload_plans/0/load_ns"),
    "fractional warm-up": _set(f"{OP}/warmup/0/time_ns", 1.5),
    "op name as a number": _set(f"{OP}/name", 3),
}


def test_the_malformed_corpus_starts_from_valid_documents():
    document = _plan_document()
    assert errors(plan_validator(), document) == []
    assert errors(instance_validator(), document["instance"]) == []


@pytest.mark.parametrize("name", PLAN_MALFORMED)
def test_malformed_plans_are_rejected(name):
    document = _plan_document()
    PLAN_MALFORMED[name](document)
    assert errors(plan_validator(), document)


@pytest.mark.parametrize("name", INSTANCE_MALFORMED)
def test_malformed_instances_are_rejected_alone_and_inside_a_plan(name):
    document = _plan_document()
    INSTANCE_MALFORMED[name](document["instance"])
    assert errors(instance_validator(), document["instance"])
    assert errors(plan_validator(), document)


def test_every_writer_the_code_holds_is_the_checked_one():
    """A module that imported the writers before the hook would escape it."""
    for module in list(sys.modules.values()):
        for name in ("plan_to_dict", "instance_to_dict"):
            held = getattr(module, name, None)
            if callable(held) and held.__module__ == "elk_opt.io":
                assert held is getattr(elk_opt.io, name), f"{module.__name__}.{name}"
    assert elk_opt.io.plan_to_dict.__module__ == "tests.conftest"


def test_the_hook_rejects_a_document_outside_the_schema():
    instance = tiny_instance([(10, 5, 20, 8, 1)])
    good = make_plan(instance, only_choice(instance), parse("P0 E0"), method="test",
                     started=0.0, timing="separate-noc")
    bad = Plan(instance=instance, choice=good.choice, program=good.program, timing=good.timing,
               claims=Claims(method="test", status="heuristic", makespan_ns=-1))
    before = len(SCHEMA_CHECKER.failures)
    try:
        with pytest.raises(SchemaViolation, match="makespan_ns"):
            plan_to_dict(bad)
        assert len(SCHEMA_CHECKER.failures) == before + 1
    finally:
        del SCHEMA_CHECKER.failures[before:]  # seen and expected: not this test's failure
    plan_to_dict(good)
    assert len(SCHEMA_CHECKER.failures) == before


def _certificate_document() -> dict[str, Any]:
    """A certificate of a tiny plan with its linear-time bounds (no search needed)."""
    from elk_opt.bounds.run_all import lower_bounds
    from elk_opt.certification.certificate import bound_entry, build

    instance = tiny_instance([(10, 5, 20, 8, 1), (10, 5, 20, 8, 0)])
    plan = make_plan(instance, only_choice(instance), parse("P0 P1 E0 E1"), method="test",
                     started=0.0, timing="shared-noc")
    rows = lower_bounds(instance, timing="shared-noc", time_budget_s=0)["bounds"]
    bounds = [bound_entry(r) for r in rows if r["status"] != "skipped"]
    return json.loads(json.dumps(build(plan, "shared-noc", bounds)))


CERTIFICATE_MALFORMED: dict[str, Callable[[dict], None]] = {
    "certificate format": _set("format", "elk-certificate/2"),
    "no bounds": _set("bounds", []),
    "no gap": _drop("gap"),
    "negative bound": _set("bounds/0/ns", -1),
    "bound without params": _drop("bounds/0/params"),
    "unknown execution order": _set("bounds/0/exec_order", "free"),
    "unknown timing": _set("timing", "shared"),
    "a plan that is not a plan": _set("plan/format", "elk-plan/2"),
    "better plan without its plan": _set("better_plan", {"makespan_ns": 1, "method": "x"}),
}


def test_a_built_certificate_matches_and_every_shipped_schema_is_what_the_api_gives():
    import elk_opt

    assert errors(certificate_validator(), _certificate_document()) == []
    for name, file in (("instance", INSTANCE_SCHEMA), ("plan", PLAN_SCHEMA),
                       ("certificate", CERTIFICATE_SCHEMA)):
        assert elk_opt.schema(name) == load_schema(file)


@pytest.mark.parametrize("name", CERTIFICATE_MALFORMED)
def test_malformed_certificates_are_rejected(name):
    document = _certificate_document()
    CERTIFICATE_MALFORMED[name](document)
    assert errors(certificate_validator(), document)
