"""NoC occupancy readings of the cost models: `bytes` (no noc_ns) and `bsp` (port time)."""

import json
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from elk_opt.cli import main
from elk_opt.errors import InputError, UsageError
from elk_opt.frontend.build import work_from_dict
from elk_opt.frontend.chips import DATA_DIR, chip_names, load_chip, resolve_noc_occupancy
from elk_opt.frontend.cost import get_cost_model
from elk_opt.frontend.cost.analytic import AnalyticModel
from elk_opt.frontend.cost.table import TableModel, table_from_dict
from elk_opt.frontend.partition import candidates, footprint, search
from elk_opt.frontend.zoo import model_instance
from elk_opt.io import load_instance
from tests.test_partition import works

CHIPS = {name: load_chip(name) for name in chip_names()}

# A small measured-looking table: GEMMs and NoC transfers both come from it.
TABLE = table_from_dict({
    "format": "elk-cost-table/1",
    "gemm": [{"dtype": "bf16", "batch": 1, "m": m, "n": n, "k": k, "flops_per_s": 1e9 * m}
             for m in (16, 256) for n in (16, 256) for k in (16, 256)],
    "collectives": [{"kind": "exchange", "scheme": "all_to_all", "bytes": s, "devices": d,
                     "bytes_per_s": s / (1e-6 + s / 5e9)}
                    for s in (64, 4096, 2**20) for d in (1, 64)]}, "t.json")


def cost_model(kind: str, chip):
    return AnalyticModel(chip) if kind == "analytic" else TableModel(AnalyticModel(chip), TABLE)


def fits(work, chip) -> bool:
    return max(work.hbm_bytes, footprint(work)) <= chip.sram_bytes * chip.cores // 4


@settings(max_examples=30)
@given(works(), st.sampled_from(sorted(CHIPS)), st.sampled_from(["analytic", "table"]))
def test_bsp_port_time_within_duration_bytes_writes_none(work, chip_name, kind):
    chip = CHIPS[chip_name]
    if not fits(work, chip):
        return  # split before the search (build.split_large_ops)
    cost = cost_model(kind, chip)
    bsp = search(work, chip.cores, chip.sram_bytes, cost, noc_occupancy="bsp")
    for p in bsp.exec_plans:
        assert p.noc_ns is not None and 0 <= p.noc_ns <= p.time_ns
    for q in bsp.preload_plans:
        assert q.noc_ns is not None and 0 <= q.noc_ns <= q.load_ns
        if q.space_bytes == 0:
            assert q.noc_ns == 0
    for c in bsp.details:  # the port time is what the plan's time is made of
        assert c.port_ns >= c.exchange_ns and c.time_ns >= c.port_ns
    plain = search(work, chip.cores, chip.sram_bytes, cost, noc_occupancy="bytes")
    assert all(p.noc_ns is None for p in plain.exec_plans)
    assert all(q.noc_ns is None for q in plain.preload_plans)
    # the reading changes what is reported, never the plans themselves
    assert [replace(p, noc_ns=None) for p in bsp.exec_plans] == list(plain.exec_plans)
    assert [replace(q, noc_ns=None) for q in bsp.preload_plans] == list(plain.preload_plans)
    assert bsp.warmup == plain.warmup
    assert search(work, chip.cores, chip.sram_bytes, cost, noc_occupancy="bsp") == bsp


def grown(work, axis: int, factor: int):
    """The same op with one dimension (and its HBM data) `factor` times larger."""
    dims = list(work.dims)
    dims[axis] *= factor
    return replace(work, dims=tuple(dims), hbm_bytes=work.hbm_bytes * factor)


@settings(max_examples=30)
@given(works(), st.sampled_from(sorted(CHIPS)), st.sampled_from(["analytic", "table"]),
       st.integers(0, 3), st.integers(2, 4))
def test_more_bytes_never_less_port_time(work, chip_name, kind, axis, factor):
    """The same partition of a larger op moves at least as many bytes and holds the port at
    least as long."""
    chip = CHIPS[chip_name]
    cost = cost_model(kind, chip)
    big = grown(work, axis % len(work.dims), factor)
    small_plans = {(c.split, c.rotate, c.rotation): c for c in candidates(work, chip.cores, cost)}
    for c in candidates(big, chip.cores, cost):
        s = small_plans.get((c.split, c.rotate, c.rotation))
        if s is not None:
            assert s.noc_bytes <= c.noc_bytes
            # a table's latency floor goes through log and exp: equal times may round apart
            assert s.port_ns <= c.port_ns + (kind == "table"), (s, c)


@pytest.mark.parametrize("name", chip_names())
def test_load_distribution_monotone_and_within_load(name):
    model = AnalyticModel(CHIPS[name])
    cores = CHIPS[name].cores
    sizes = [0, 1, 1000, 10**6, 10**8, 10**10]
    for replicas in (1, 2, 8):
        times = [model.load_noc_ns(s, replicas, cores) for s in sizes]
        assert times == sorted(times) and times[0] == 0
        assert all(model.load_noc_ns(s, replicas, cores) <= model.load_ns(s, replicas, cores)
                   for s in sizes)
    for s in sizes:
        times = [model.load_noc_ns(s, r, cores) for r in (1, 2, 8)]
        assert times == sorted(times)


def test_chip_defaults_and_override_recorded():
    assert {n: resolve_noc_occupancy(c) for n, c in CHIPS.items()} == {
        "ipu-mk2": "bsp", "ipu-pod4-hbm3e": "bsp", "ipu-pod4-mesh": "bsp",
        "tt-galaxy-wormhole": "bytes"}
    assert resolve_noc_occupancy(CHIPS["ipu-mk2"], "bytes") == "bytes"
    with pytest.raises(UsageError, match="unknown NoC occupancy 'bulk'"):
        resolve_noc_occupancy(CHIPS["ipu-mk2"], "bulk")
    bsp = model_instance("llama2-7b", "ipu-mk2", batch=2, kv_len=64, layers=1)
    plain = model_instance("llama2-7b", "ipu-mk2", batch=2, kv_len=64, layers=1,
                           noc_occupancy="bytes")
    assert bsp.extra["cost_model"]["noc_occupancy"] == "bsp"
    assert plain.extra["cost_model"]["noc_occupancy"] == "bytes"
    assert all(p.noc_ns is not None for op in bsp.ops for p in op.exec_plans)
    assert all(q.noc_ns is None for op in plain.ops for q in op.preload_plans)
    assert bsp == model_instance("llama2-7b", "ipu-mk2", batch=2, kv_len=64, layers=1)
    tt = model_instance("llama2-7b", "tt-galaxy-wormhole", batch=2, kv_len=64, layers=1)
    assert tt.extra["cost_model"]["noc_occupancy"] == "bytes"
    assert all(p.noc_ns is None for op in tt.ops for p in op.exec_plans)


def test_bsp_execute_holds_the_port_for_its_syncs():
    """An elementwise op with nothing to exchange still holds the port for its barrier sync;
    a weight load holds it for its distribution, bytes x copies over the per-core port."""
    chip = CHIPS["ipu-pod4-hbm3e"]
    inst = model_instance("llama2-13b", chip, batch=32, kv_len=2048, layers=1)
    sync = chip.extra["sync_ns"]
    act = next(op for op in inst.ops if op.name.endswith("mlp.act/Swish"))
    assert all(p.noc_bytes == 0 and p.noc_ns == sync for p in act.exec_plans)
    up = next(op for op in inst.ops if op.name.endswith("mlp.up_proj/MatMul"))
    layouts = up.extra["preload_layouts"]
    for q, (cores, copies) in zip(up.preload_plans, layouts, strict=True):
        spread = up.hbm_bytes * copies / cores * 1e9 / chip.noc.link_bytes_per_s
        assert q.noc_ns == pytest.approx(spread, abs=1)
    for p, d in zip(up.exec_plans, up.extra["plan_details"], strict=True):
        assert p.noc_ns == d["port_ns"] >= d["exchange_ns"] + d["syncs"] * sync - 1


def test_cli_override_and_bad_chip_value(tmp_path, capsys):
    out = tmp_path / "i.json"
    assert main(["instance", "llama2-7b", "--layers", "1", "--batch", "2", "--kv-len", "64",
                 "--chip", "ipu-mk2", "--noc-occupancy", "bytes", "-o", str(out)]) == 0
    raw = json.loads(out.read_text())
    assert raw["cost_model"]["noc_occupancy"] == "bytes"
    assert not any("noc_ns" in p for op in raw["ops"] for p in op["exec_plans"])
    assert main(["instance", "llama2-7b", "--layers", "1", "--batch", "2", "--kv-len", "64",
                 "--chip", "ipu-mk2", "-o", str(out)]) == 0
    inst = load_instance(str(out))
    assert all(p.noc_ns is not None for op in inst.ops for p in op.exec_plans)
    assert main(["instance", "synthetic", "--noc-occupancy", "bsp", "-o", str(out)]) == 2
    toml = tmp_path / "c.toml"
    text = (DATA_DIR / "ipu-mk2.toml").read_text()
    toml.write_text(text.replace('noc_occupancy = "bsp"', 'noc_occupancy = "sometimes"'))
    with pytest.raises(InputError, match=r"c.toml: extra.noc_occupancy: must be one of "
                                         r"bytes, bsp, got 'sometimes'"):
        load_chip(str(toml))


def test_table_cost_model_supports_both_readings():
    chip = CHIPS["ipu-pod4-hbm3e"]
    inst = model_instance("llama2-7b", chip, batch=4, kv_len=128, layers=1)
    cost = cost_model("table", chip)
    for op in inst.ops:
        plans = search(work_from_dict(op.extra["work"]), chip.cores, chip.sram_bytes, cost,
                       noc_occupancy="bsp")
        assert all(p.noc_ns <= p.time_ns for p in plans.exec_plans)
        assert all(q.noc_ns <= q.load_ns for q in plans.preload_plans)
    assert get_cost_model("analytic", chip).load_noc_ns(0, 1, 1) == 0
