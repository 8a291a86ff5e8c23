"""Repeats summed in the fluid LPs: a relaxation of the full LP, refused where repeats differ."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from elk_opt.bounds.fluid import fluid_bound
from elk_opt.bounds.fluid_sram import (
    build_fluid_sram,
    fluid_sram_bound,
    fluid_sram_pairs,
    spaced_costs,
)
from elk_opt.bounds.periodic import EXPLICIT, Period, find_period, shortened_op, summed_lp
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


def test_each_op_of_the_full_model_maps_to_a_kept_twin_of_the_shortened_one():
    keys = list("ab") + list("cde") * 10 + list("fg")
    period = find_period(keys, 1)
    assert period == Period(start=2, length=3, count=10)
    shortened = keys[:period.start + EXPLICIT * 3] + keys[period.start + 10 * 3:]
    mapped = [shortened_op(op, period) for op in range(len(keys))]
    assert all(keys[op] == shortened[j] for op, j in enumerate(mapped))
    kept = {0, 1, EXPLICIT - 1}  # repeat 2 is dropped from the summed LP
    assert all((j - period.start) // 3 in kept for j in mapped
               if period.start <= j < period.start + EXPLICIT * 3)
    assert mapped[2:5] == [2, 3, 4] and mapped[5:8] == mapped[26:29] == [5, 6, 7]
    assert mapped[29:32] == [11, 12, 13] and mapped[-2:] == [14, 15]


@settings(max_examples=6, deadline=None)
@given(layers=st.integers(7, 9), plans=st.integers(2, 4), seed=st.integers(0, 1000),
       timing=st.sampled_from(TIMINGS))
def test_the_summed_lps_pairs_come_with_its_bound(layers, plans, seed, timing):
    instance = synthetic_instance(ops=layers * WIDTH, plans=plans, seed=seed, tightness=0.5)
    found = fluid_sram_pairs(instance, timing, band=1)
    assert found is not None
    bound, picks = found
    summed = fluid_sram_bound(instance, timing, band=1)
    # the guide keeps GUIDE_DIVISORS of the bound's rounded R5 rows: between the LP without
    # SRAM and the bound, equal to the bound where no execute has more divisors than that
    assert summed.repeats > EXPLICIT
    assert fluid_bound(instance, timing).bound_ns <= bound <= summed.bound_ns
    costs = spaced_costs(instance)
    assert all(pick in cs for pick, cs in zip(picks, costs, strict=True))
