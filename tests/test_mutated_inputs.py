"""Every input file a user hands elk-opt, edited one field at a time: a clear error or a result,
never a traceback.

A valid document has one field replaced by a value of another type or range (or removed), and
the reader must either accept it or raise InputError; commands must exit 0, 1 or 2 with one
line naming the file. Each bug these found (a certificate's missing `gap`, a cost table's
`gemm` that is not a list, a chip figure of inf, a suite whose `source` is a list) was a
traceback before.
"""

from __future__ import annotations

import contextlib
import copy
import json
import math
import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import elk_opt
from elk_opt.certification.run import certify
from elk_opt.certification.worker import Worker
from elk_opt.cli import main
from elk_opt.errors import InputError
from elk_opt.frontend.chips import chip_from_toml
from elk_opt.frontend.cost.table import table_from_dict
from elk_opt.io import instance_from_dict, instance_to_dict
from elk_opt.studies.suites import parse_suite

REMOVE = object()  # the field is deleted rather than replaced
ODD_VALUES = [None, "x", "", -1, 0, 1.5, -2.5, [], [1, "a"], {}, {"a": 1}, True, False,
              10**30, math.inf, math.nan, REMOVE]
ROOT = Path(__file__).resolve().parents[1]
SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


def field_paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    """Every field's path (lists: their first element only)."""
    out = [prefix] if prefix else []
    if isinstance(node, dict):
        for key, value in node.items():
            out += field_paths(value, (*prefix, key))
    elif isinstance(node, list) and node:
        out += field_paths(node[0], (*prefix, 0))
    return out


def edited(doc: Any, path: tuple, value: Any) -> Any:
    out = copy.deepcopy(doc)
    node = out
    for step in path[:-1]:
        node = node[step]
    if value is REMOVE:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return out


def edits(doc: Any) -> st.SearchStrategy:
    return st.tuples(st.sampled_from(field_paths(doc)), st.sampled_from(ODD_VALUES))


def reads_or_says_why(read, *args) -> None:
    """`read(*args)` returns, or raises InputError: nothing else."""
    with contextlib.suppress(InputError):
        read(*args)


@pytest.fixture(scope="module")
def certificate() -> dict:
    with Worker() as worker:
        return certify(elk_opt.synthetic_instance(ops=6, plans=2, seed=3), time_limit_s=4,
                       threads=1, worker=worker)


CERTIFICATE_FIELDS = [("format",), ("timing",), ("makespan_ns",), ("lower_bound_ns",), ("gap",),
                      ("exec_order",), ("best_bound",), ("plan",), ("plan", "timing"),
                      ("plan", "program"), ("plan", "choice"), ("plan", "claims"),
                      ("bounds",), ("bounds", 0), *(("bounds", 0, key) for key in (
                          "name", "ns", "status", "wall_s", "exec_order", "timings",
                          "params")), ("bounds", -1, "params"), ("bounds", -1, "ns"),
                      ("search",), ("search", "phases")]


@SETTINGS
@given(path_=st.sampled_from(CERTIFICATE_FIELDS), value=st.sampled_from(ODD_VALUES))
@example(path_=("gap",), value=REMOVE)
@example(path_=("bounds", 0, "ns"), value=REMOVE)
def test_an_edited_certificate_is_checked_or_refused_in_one_line(certificate, tmp_path, capsys,
                                                                 path_, value):
    doc = edited(certificate, path_, value)
    source = tmp_path / "cert.json"
    source.write_text(json.dumps(doc))
    capsys.readouterr()
    code = main(["certify", "--check", str(source)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code in (0, 1, 2), (path_, value)
    if code == 2:
        assert len(err) == 1 and str(source) in err[0], (path_, value, err)


@SETTINGS
@given(edit=st.data())
def test_an_edited_instance_is_read_or_refused(edit):
    doc = instance_to_dict(elk_opt.synthetic_instance(ops=4, plans=2, seed=1))
    path_, value = edit.draw(edits(doc))
    reads_or_says_why(instance_from_dict, edited(doc, path_, value), "i.json")


TABLE = {"format": "elk-cost-table/1", "machine": {"cpus": 2},
         "gemm": [{"dtype": "fp32", "batch": 1, "m": 16, "n": 16, "k": 16, "flops_per_s": 1e9}],
         "collectives": [{"kind": "exchange", "scheme": "memcpy", "bytes": 1024, "devices": 1,
                          "bytes_per_s": 1e8}]}


@SETTINGS
@given(edit=edits(TABLE))
@example(edit=(("gemm",), None))
def test_an_edited_cost_table_is_read_or_refused(edit):
    reads_or_says_why(table_from_dict, edited(TABLE, *edit), "t.json")


TOML_VALUES = ['"x"', "-1", "0", "1.5", "[]", "true", "inf", "nan", '["a", 1]', "[0]",
               "99999999999999999999999", "{}", None]  # None: the line removed


def toml_edits(text: str) -> st.SearchStrategy:
    lines = [k for k, line in enumerate(text.splitlines())
             if "=" in line and not line.lstrip().startswith("#")]
    return st.tuples(st.sampled_from(lines), st.sampled_from(TOML_VALUES))


def toml_edited(text: str, line: int, value: str | None) -> str:
    lines = text.splitlines()
    key = lines[line].split("=")[0].strip()
    lines[line:line + 1] = [] if value is None else [f"{key} = {value}"]
    return "\n".join(lines)


CHIP = (ROOT / "elk_opt/frontend/chip_data/ipu-pod4-mesh.toml").read_text()
SUITE = (ROOT / "elk_opt/studies/suites/small.toml").read_text()


def line_of(text: str, start: str) -> int:
    return next(k for k, line in enumerate(text.splitlines()) if line.startswith(start))


@SETTINGS
@given(edit=toml_edits(CHIP))
@example(edit=(line_of(CHIP, "sync_ns"), "inf"))
def test_an_edited_chip_file_is_read_or_refused(edit):
    try:
        chip = chip_from_toml(tomllib.loads(toml_edited(CHIP, *edit)), "c.toml")
    except InputError:
        return
    figures = [*vars(chip).values(), *vars(chip.noc).values(), *chip.extra.values()]
    assert all(math.isfinite(v) for v in figures if isinstance(v, int | float)), chip


@SETTINGS
@given(edit=toml_edits(SUITE))
@example(edit=(line_of(SUITE, "source"), "[]"))
@example(edit=(line_of(SUITE, "model"), None))
def test_an_edited_suite_is_read_or_refused(edit):
    reads_or_says_why(parse_suite, toml_edited(SUITE, *edit), "s.toml")
