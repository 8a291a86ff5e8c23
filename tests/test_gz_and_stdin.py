"""Outputs named `*.gz` are written gzipped (every reader takes either); `-` as an input is
refused in one line with exit 2 (elk-opt writes standard output but does not read standard
input)."""

from __future__ import annotations

import gzip
import json

import pytest

import elk_opt
from elk_opt.cli import main
from elk_opt.io import load_plan, save_instance
from elk_opt.json_input import read_json

GZIP_MAGIC = b"\x1f\x8b"


@pytest.fixture
def inst(tmp_path):
    path = tmp_path / "i.json"
    save_instance(path, elk_opt.synthetic_instance(ops=4, plans=2, seed=1))
    return path


def test_a_plan_named_gz_is_gzipped_and_reads_and_verifies(inst, tmp_path):
    gz, plain = tmp_path / "p.json.gz", tmp_path / "p.json"
    assert main(["solve", str(inst), "--method", "elk-dyn", "-o", str(gz), "-q"]) == 0
    assert main(["solve", str(inst), "--method", "elk-dyn", "-o", str(plain), "-q"]) == 0
    assert gz.read_bytes()[:2] == GZIP_MAGIC
    unzipped, text = json.loads(gzip.decompress(gz.read_bytes())), json.loads(plain.read_text())
    assert unzipped.keys() == text.keys()
    assert unzipped["program"] == text["program"]
    assert load_plan(gz).choice == load_plan(plain).choice
    assert main(["verify", str(gz)]) == 0


def test_a_certificate_named_gz_is_gzipped_and_checks(inst, tmp_path):
    cert = tmp_path / "cert.json.gz"
    assert main(["certify", str(inst), "--time-limit", "4", "--threads", "1", "-q",
                 "-o", str(cert)]) == 0
    assert cert.read_bytes()[:2] == GZIP_MAGIC
    assert read_json(cert)["plan"]
    assert main(["certify", "--check", str(cert), "-q"]) == 0


@pytest.mark.parametrize("argv", [
    ["solve", "-", "--method", "basic", "-o", "OUT"],
    ["bound", "-"],
    ["verify", "-"],
])
def test_standard_input_as_an_input_is_refused_in_one_line(tmp_path, capsys, argv):
    out = tmp_path / "out.json"
    argv = [str(out) if a == "OUT" else a for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "standard input is not supported" in err[0], err
    assert not out.exists()
