"""Partition-plan search: bounded, fitting, Pareto-optimal, paired, physically bounded."""

from math import ceil

from hypothesis import given, settings
from hypothesis import strategies as st

from elk_opt.frontend.chips import chip_figure, chip_names, load_chip
from elk_opt.frontend.cost import get_cost_model
from elk_opt.frontend.onnx_import import Work
from elk_opt.frontend.partition import SearchOptions, footprint, search

CHIPS = {name: load_chip(name) for name in chip_names()}
dims = st.integers(1, 9000)


@st.composite
def works(draw):
    dtype = draw(st.sampled_from([1, 2, 4]))
    kind = draw(st.sampled_from(["matmul", "norm", "softmax", "reduce", "gather",
                                 "elementwise"]))
    if kind == "matmul":
        g, m, k, n = draw(st.sampled_from([1, 1, 8, 320])), draw(dims), draw(dims), draw(dims)
        hbm = draw(st.sampled_from(["A", "B", None]))
        size = {"A": g * m * k, "B": g * k * n, None: 0}[hbm] * dtype
        return Work("matmul", (g, m, k, n), hbm, size, dtype)
    if kind == "elementwise":
        return Work(kind, (draw(st.integers(1, 10**7)), draw(st.integers(1, 3))), None, 0,
                    dtype)
    rows, cols = draw(st.integers(1, 50_000)), draw(dims)
    if kind == "gather":
        return Work(kind, (rows, cols), "table", rows * cols * dtype, dtype)
    param = draw(st.booleans())
    return Work(kind, (rows, cols), "param" if param else None, cols * dtype * param, dtype)


@settings(max_examples=100)
@given(works(), st.sampled_from(sorted(CHIPS)), st.integers(1, 10), st.integers(1, 5))
def test_search_properties(work, chip_name, max_exec, max_preload):
    chip = CHIPS[chip_name]
    if max(work.hbm_bytes, footprint(work)) > chip.sram_bytes * chip.cores // 4:
        return  # such ops are split before the search (build.split_large_ops)
    cost = get_cost_model("analytic", chip)
    plans = search(work, chip.cores, chip.sram_bytes, cost,
                   SearchOptions(max_exec=max_exec, max_preload=max_preload))
    execs, loads = plans.exec_plans, plans.preload_plans
    assert 1 <= len(execs) <= max_exec and 1 <= len(loads) <= max_preload
    assert all(p.space_bytes <= chip.sram_bytes for p in execs)
    assert all(q.space_bytes <= chip.sram_bytes for q in loads)
    # Pareto: faster plans use strictly more space
    for a, b in zip(execs, execs[1:], strict=False):
        assert a.time_ns <= b.time_ns and a.space_bytes > b.space_bytes
    # every execute plan has a compatible preload plan
    assert {w.exec for w in plans.warmup} == {p.id for p in execs}
    # no plan beats the chip's peak compute
    peak = chip.cores * chip_figure(chip, "flops_per_cycle") * chip.clock_hz
    if work.kind == "matmul":
        flops = 2 * work.dims[0] * work.dims[1] * work.dims[2] * work.dims[3]
        assert all(p.time_ns >= flops / peak * 1e9 for p in execs)
    if work.hbm_bytes:
        hbm_ns = work.hbm_bytes / chip.hbm_bytes_per_s * 1e9
        assert all(q.load_ns >= hbm_ns for q in loads)
        assert min(q.space_bytes for q in loads) >= ceil(work.hbm_bytes / chip.cores)
        for p, c in zip(execs, plans.details, strict=True):
            assert c.hbm_part >= work.hbm_bytes // c.cores_used
            assert p.space_bytes >= c.hbm_part
    else:
        assert [(q.space_bytes, q.load_ns) for q in loads] == [(0, 0)]
        assert all(w.time_ns == 0 for w in plans.warmup)


def test_warmup_pays_for_missing_copies():
    chip = CHIPS["ipu-pod4-hbm3e"]
    work = Work("matmul", (1, 32, 5120, 13824), "B", 5120 * 13824 * 2, 2)
    plans = search(work, chip.cores, chip.sram_bytes, get_cost_model("analytic", chip))
    layouts = dict(enumerate(plans.layouts))
    for w in plans.warmup:
        copies = plans.details[w.exec].replicas
        if layouts[w.preload][1] == copies:
            assert w.time_ns == 0  # the preload already is the execute layout
        else:
            assert w.time_ns > 0
    loads = {q.id: q.load_ns for q in plans.preload_plans}
    spaces = {q.id: q.space_bytes for q in plans.preload_plans}
    by_copies = sorted(layouts, key=lambda i: layouts[i][1])
    assert [loads[i] for i in by_copies] == sorted(loads.values())
    assert [spaces[i] for i in by_copies] == sorted(spaces.values())
