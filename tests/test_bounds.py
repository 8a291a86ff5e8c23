"""Lower bounds: the Ideal's linear-memory tail search, and every bound below every plan."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from elk_opt.bounds import allowed_pairs, ideal_bound, least_tail
from elk_opt.problem import Instance
from tests.strategies import random_instances, synthetic_instances
from tests.tiny import tiny_instance


def dense_ideal(instance: Instance) -> int:
    """The Ideal as first written: an n x n descendant matrix (the reference, quadratic)."""
    ops = instance.ops
    sram = instance.chip.sram_bytes
    pairs = [allowed_pairs(op, sram) for op in ops]
    runs = np.array([min(p.time_ns + t for _q, p, t in ps) for ps in pairs], dtype=np.int64)
    loads = np.array([min(q.load_ns for q, _p, _t in ps) for ps in pairs], dtype=np.int64)
    loading = np.array([max(q.load_ns for q, _p, _t in ps) > 0 for ps in pairs])
    n = len(ops)
    desc = np.zeros((n, n), dtype=bool)
    for j in range(n - 1, -1, -1):
        for c in (i for i, op in enumerate(ops) if j in op.inputs):
            desc[j, c] = True
            desc[j] |= desc[c]
    sources = [i for i, op in enumerate(ops) if not op.inputs]
    exec_chain = int(runs.sum()) + min(int(loads[s]) for s in sources)
    if not loading.any():
        return exec_chain
    tails = runs + desc.astype(np.int64) @ runs
    return max(exec_chain, int(loads.sum()) + int(tails[loading].min()))


@given(random_instances(max_ops=12, max_plans=3))
def test_ideal_equals_the_dense_reference_on_random_dags(instance):
    assert ideal_bound(instance) == dense_ideal(instance)


@given(synthetic_instances(max_ops=60, max_plans=4))
def test_ideal_equals_the_dense_reference_on_synthetic_decoders(instance):
    assert ideal_bound(instance) == dense_ideal(instance)


@st.composite
def wide_dags(draw):
    """Runs and inputs of a random DAG with many sources and sinks (the search's hard case)."""
    n = draw(st.integers(1, 40))
    inputs = [sorted(draw(st.sets(st.integers(0, i - 1), max_size=3))) if i else []
              for i in range(n)]
    runs = draw(st.lists(st.integers(0, 50), min_size=n, max_size=n))
    candidates = sorted(draw(st.sets(st.integers(0, n - 1), min_size=1)))
    return inputs, runs, candidates


@given(wide_dags())
def test_least_tail_is_the_exact_minimum(dag):
    inputs, runs, candidates = dag
    instance = tiny_instance([(0, 0, 1, 0, 0)] * len(runs), inputs=[tuple(x) for x in inputs])
    n = len(runs)
    desc = [set() for _ in range(n)]
    for j in range(n - 1, -1, -1):
        for c in range(j + 1, n):
            if j in inputs[c]:
                desc[j] |= {c} | desc[c]
    expected = min(runs[j] + sum(runs[c] for c in desc[j]) for j in candidates)
    assert least_tail(instance, runs, candidates) == expected
