"""Cost models: the table interpolator's rules, NoC monotonicity, the S-curve link."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from elk_opt.cli import main
from elk_opt.frontend.chips import chip_names, load_chip
from elk_opt.frontend.cost import get_cost_model
from elk_opt.frontend.cost.analytic import AnalyticModel
from elk_opt.frontend.cost.links import SCurveLink
from elk_opt.frontend.cost.table import table_from_dict
from elk_opt.frontend.partition import candidates
from elk_opt.frontend.zoo import model_instance


def table(curves, gemm=()):
    rows = [{"kind": "exchange", "scheme": "memcpy", "bytes": s, "devices": d, "bytes_per_s": r}
            for d, pts in curves.items() for s, r in pts]
    return table_from_dict({"format": "elk-cost-table/1", "collectives": rows,
                            "gemm": list(gemm)}, "t.json")


def monotone_curve(draw_sizes, draw_times):
    sizes = sorted(set(draw_sizes))
    times = sorted(draw_times)[:len(sizes)]
    return [(s, s / t) for s, t in zip(sizes, times, strict=False)]


curves = st.builds(
    monotone_curve,
    st.lists(st.integers(1, 2**30), min_size=2, max_size=8),
    st.lists(st.floats(1e-9, 1.0), min_size=8, max_size=8))


@given(curves, curves, st.integers(1, 2**32), st.integers(1, 2**32), st.integers(1, 64))
def test_collective_time_monotone_in_size(c1, c2, a, b, devices):
    t = table({1: c1, 8: c2}).collectives["exchange", "memcpy"]
    lo, hi = sorted((a, b))
    assert t.time_ns(lo, devices) <= t.time_ns(hi, devices) * (1 + 1e-9)


@given(curves)
def test_measured_points_returned_exactly(c):
    t = table({4: c}).collectives["exchange", "memcpy"]
    for size, rate in c:
        assert t.throughput(size, 4) == pytest.approx(rate, rel=1e-12)


@given(curves, st.floats(1.0, 1e6))
def test_saturation_past_the_table(c, factor):
    t = table({2: c}).collectives["exchange", "memcpy"]
    size, rate = max(c)
    big = size * factor
    assert t.time_ns(big, 2) == pytest.approx(big / rate * 1e9, rel=1e-9)


def test_noisy_measurements_are_made_monotone():
    t = table({1: [(1000, 1e9), (2000, 4e9)]}).collectives["exchange", "memcpy"]
    # 2000 B was measured faster than 1000 B: raised to the same time
    assert t.time_ns(2000, 1) == pytest.approx(t.time_ns(1000, 1))


def test_gemm_interpolation_rules():
    pts = [{"dtype": "fp32", "batch": 1, "m": m, "n": n, "k": k, "flops_per_s": 1e9 * m}
           for m in (16, 64) for n in (16, 64) for k in (16, 64)]
    g = table({}, pts).gemm["fp32"]
    assert g.throughput(1, 16, 64, 16) == 16e9  # a measured point
    assert 16e9 < g.throughput(1, 32, 32, 32) < 64e9  # between: a weighted average
    big = g.time_ns(1, 1000, 1000, 1000)  # past the largest: saturated at 64e9
    assert big == pytest.approx(2e9 / 64e9 * 1e9)


@pytest.mark.parametrize(("edit", "named"), [
    ({"collectives": [{"kind": "x", "scheme": "y", "bytes": 1, "devices": 1,
                       "bytes_per_s": -1}]}, r"collectives\[0\].bytes_per_s: .* got -1"),
    ({"collectives": [{"kind": "x", "scheme": "y", "bytes": float("inf"), "devices": 1,
                       "bytes_per_s": 1}]}, r"collectives\[0\].bytes: .* got inf"),
    ({"gemm": None}, r"gemm: must be a list, got None"),
    ({"collectives": 3}, r"collectives: must be a list, got 3"),
])
def test_bad_table_names_field(edit, named):
    from elk_opt.errors import InputError
    with pytest.raises(InputError, match=r"t.json: " + named):
        table_from_dict({"format": "elk-cost-table/1", **edit}, "t.json")


@pytest.mark.parametrize("name", chip_names())
def test_noc_time_monotone_in_bytes_and_group(name):
    model = AnalyticModel(load_chip(name))
    sizes = [0, 1, 100, 4096, 10**5, 10**6, 10**7]
    groups = [1, 2, 64, 1472, 2944, 5888]
    for g in groups:
        times = [model.noc_ns(s, g) for s in sizes]
        assert times == sorted(times)
    for s in sizes:
        times = [model.noc_ns(s, g) for g in groups]
        assert times == sorted(times)


def test_more_noc_bytes_never_less_noc_time_across_plans():
    """On one all-to-all chip NoC time is a function of bytes alone, so it orders the plans."""
    chip = load_chip("ipu-mk2")
    cost = get_cost_model("analytic", chip)
    inst = model_instance("llama2-7b", chip, batch=4, kv_len=512, layers=1)
    from elk_opt.frontend.build import work_from_dict
    for op in inst.ops:
        cands = candidates(work_from_dict(op.extra["work"]), chip.cores, cost)
        ranked = sorted(cands, key=lambda c: (c.noc_bytes, c.exchange_ns))
        for a, b in zip(ranked, ranked[1:], strict=False):
            # +1: rounding up to whole ns
            assert a.exchange_ns <= b.exchange_ns + 1, (op.name, a, b)


def test_s_curve_link():
    link = SCurveLink(bytes_per_s=100e9, launch_ns=1000, rtt_ns=2000)
    sizes = [2**i for i in range(0, 34)]
    rates = [link.throughput(s) for s in sizes]
    assert rates == sorted(rates) and rates[-1] < 100e9 and rates[-1] > 0.99 * 100e9
    half = link.half_throughput_bytes()
    assert math.isclose(link.throughput(half), 50e9)


def test_collect_quick_and_table_cost_model(tmp_path, capsys):
    path, inst = tmp_path / "t.json", tmp_path / "i.json"
    assert main(["collect", "--quick", "-o", str(path)]) == 0
    assert main(["instance", "llama2-7b", "--layers", "1", "--batch", "4", "--kv-len", "256",
                 "--cost-model", f"table:{path}", "-o", str(inst)]) == 0
    import json
    meta = json.loads(inst.read_text())["cost_model"]
    assert meta["name"] == "table" and meta["noc_from_table"] and "fp32" in meta["gemm_dtypes"]
    assert main(["instance", "llama2-7b", "--cost-model", "nonsense", "-o", str(inst)]) == 2
