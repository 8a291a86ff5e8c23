"""Repeats summed in the fluid LPs: a relaxation of the full LP, refused where repeats differ."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from elk_opt.bounds.fluid_sram import build_fluid_sram, fluid_sram_bound, spaced_costs
from elk_opt.bounds.periodic import EXPLICIT, Period, find_period, summed_lp
from elk_opt.frontend.synthetic import LAYER_TEMPLATE, synthetic_instance
from elk_opt.methods import solve
from elk_opt.problem import TIMINGS
from elk_opt.solution import SolveOptions

WIDTH = len(LAYER_TEMPLATE)


def test_the_period_found_is_the_block_whose_repeats_remove_the_most_ops():
    keys = list("ab") + list("cde") * 10 + list("f")
    assert find_period(keys, 1) == Period(start=2, length=3, count=10)
    assert find_period(keys, 4) == Period(start=2, length=6, count=5)
    assert find_period(list("abcdefg"), 1) is None  # nothing repeats


@settings(max_examples=8, deadline=None)
@given(layers=st.integers(7, 10), plans=st.integers(1, 4), seed=st.integers(0, 1000),
       tightness=st.sampled_from([0.0, 0.5, 1.0]), band=st.sampled_from([1, 4]),
       timing=st.sampled_from(TIMINGS))
def test_summed_repeats_bound_no_more_than_the_full_lp_and_no_plan(layers, plans, seed,
                                                                   tightness, band, timing):
    instance = synthetic_instance(ops=layers * WIDTH, plans=plans, seed=seed,
                                  tightness=tightness)
    summed = fluid_sram_bound(instance, timing, band=band)
    full = fluid_sram_bound(instance, timing, band=band, periodic=False)
    assert summed.repeats > EXPLICIT and full.repeats == 0
    assert summed.columns < full.columns
    assert summed.bound_ns <= full.bound_ns * (1 + 1e-7) + 1
    for method in ("basic", "elk-dyn"):
        plan = solve(instance, method, SolveOptions(timing=timing))
        assert summed.bound_ns <= plan.claims.makespan_ns, method


def test_repeats_whose_rows_differ_are_not_summed():
    instance = synthetic_instance(ops=8 * WIDTH, plans=3, seed=5, tightness=0.5)
    costs = spaced_costs(instance)
    period = Period(start=WIDTH, length=WIDTH, count=7)
    shortened = costs[:period.start + EXPLICIT * WIDTH]
    model = build_fluid_sram(shortened, instance.chip.sram_bytes, "shared-noc", 1, 16)
    assert summed_lp(model.lp, period) is not None
    # the same LP with one coefficient changed in a row of the third repeat
    lp = model.lp
    third = range(period.start + 2 * WIDTH, period.start + 3 * WIDTH)
    entry = next(k for k in range(len(lp.index)) if lp.anchor[lp.index[k]] in third
                 and lp.value[k] not in (0.0, 1.0, -1.0))
    lp.value[entry] *= 1.5
    assert summed_lp(lp, period) is None
