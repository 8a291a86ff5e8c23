"""docs/spec.md's worked examples agree with the evaluator, `verify`, port demands and bounds.

The spec's tables are read from the page itself (after `<!-- spec-example: NAME -->` markers),
so an edit to the spec or to the code that makes them disagree fails here.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import elk_opt
from elk_opt.bounds.recompute import recompute
from elk_opt.evaluate import evaluate
from elk_opt.noc import exec_use, load_use

SPEC = Path(__file__).resolve().parent.parent / "docs" / "spec.md"


def _after(marker: str) -> list[str]:
    text = SPEC.read_text(encoding="utf-8")
    tag = f"<!-- spec-example: {marker} -->\n"
    assert text.count(tag) == 1, f"docs/spec.md has no single {tag.strip()}"
    return text.split(tag, 1)[1].splitlines()


def _table(marker: str) -> dict[str, list[str]]:
    """First column -> the other cells, for the markdown table after the marker."""
    rows = {}
    for line in _after(marker)[2:]:  # header and rule
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0]] = cells[1:]
    return rows


def _int(cell: str) -> int:
    """The last number of a cell: "100 + 20 = 120" -> 120, "80,000" -> 80000."""
    return int(re.findall(r"[\d,]+", cell)[-1].replace(",", ""))


@pytest.fixture(scope="module")
def document() -> dict:
    lines = _after("plan")
    assert lines[0] == "```json"
    return json.loads("\n".join(lines[1:lines.index("```")]))


@pytest.fixture(scope="module")
def plan(document, tmp_path_factory) -> elk_opt.Plan:
    path = tmp_path_factory.mktemp("spec") / "example.plan.json"
    path.write_text(json.dumps(document))
    return elk_opt.load_plan(path)


def _times(schedule, n: int) -> dict[str, tuple[int, int]]:
    out = {}
    for i in range(n):
        out[f"P{i}"] = (schedule.load_start[i], schedule.load_end[i])
        out[f"E{i}"] = (schedule.exec_start[i], schedule.exec_end[i])
    return out


@pytest.mark.parametrize("timing", elk_opt.TIMINGS)
def test_start_and_end_of_every_instruction(plan, timing):
    table = _table(timing)
    schedule = elk_opt.evaluate_plan(plan, timing)
    assert set(table) == {f"{k}{i}" for k in "PE" for i in range(len(plan.instance.ops))}
    assert {k: (_int(a), _int(b)) for k, (a, b) in table.items()} == \
        _times(schedule, len(plan.instance.ops))
    text = " ".join(SPEC.read_text(encoding="utf-8").split())
    assert f"The makespan is {schedule.makespan_ns:,} ns" in text


def test_memory_and_preload_counts(plan):
    schedule = elk_opt.evaluate_plan(plan, "separate-noc")
    table = _table("memory")
    for i in range(len(plan.instance.ops)):
        _, _, lhs, count = table[f"E{i}"]
        assert (_int(lhs), _int(count)) == (schedule.sram_bytes[i], schedule.preload_count[i])


def test_port_demands_and_units(plan):
    inst = plan.instance
    table = _table("demands")
    for i, (op, c) in enumerate(zip(inst.ops, plan.choice, strict=True)):
        q, p = op.preload_by_id[c.preload], op.exec_by_id[c.exec]
        for name, use in ((f"P{i}", load_use(inst.chip, q)),
                          (f"E{i}", exec_use(inst.chip, p, op.warmup_ns[(c.preload, c.exec)]))):
            duration, _, demand, units = table[name]
            assert (_int(duration), _int(demand), _int(units)) == \
                (use.duration_ns, use.demand, use.units)


def test_verify_agrees_and_the_plan_is_valid(document, plan):
    for timing in elk_opt.TIMINGS:
        report = elk_opt.verify({**document, "timing": timing})
        assert report["valid"], report["violations"]
        assert report["makespan_ns"] == elk_opt.evaluate_plan(plan, timing).makespan_ns
    report = elk_opt.verify(document)
    text = " ".join(SPEC.read_text(encoding="utf-8").split())
    assert (f"`verify` reports a makespan of {report['makespan_ns']:,} ns and a peak of "
            f"{report['peak_sram_bytes']:,} B at {report['peak_at']}") in text


def test_the_fluid_bound_meets_the_shared_noc_makespan(plan):
    """The spec says the example is optimal under 5b for the instance's order."""
    makespan = elk_opt.evaluate_plan(plan, "shared-noc").makespan_ns
    assert recompute(plan.instance, "shared-noc", "fluid", {"time_limit_s": 60}) == makespan


def test_the_other_preload_plan_as_the_spec_says(plan):
    """"Had the plan chosen preload 1 for op 1 ... E0 would need 700 B ... 20 ns faster"."""
    choice = list(plan.choice)
    choice[1] = elk_opt.Choice(exec=0, preload=1)
    other = evaluate(plan.instance, choice, plan.program, timing="separate-noc")
    base = elk_opt.evaluate_plan(plan, "separate-noc")
    assert other.sram_bytes[0] == 700 and other.peak_sram_bytes <= plan.instance.chip.sram_bytes
    assert base.makespan_ns - other.makespan_ns == 20
