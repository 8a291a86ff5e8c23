"""The paper's Ideal roofline, made a valid lower bound of the section-5 semantics.

Elk's Ideal lets execution and preloading each use the whole chip (SRAM and interconnect are
not shared), so an op runs its fastest plan and loads at full speed. Read as a bound of our
semantics, for any plan (any choice, program and release times):

1. Executes are serial, so the exec chain lasts at least sum_i run_i, where run_i is the
   least `time_ns + warm-up` over op i's compatible pairs. The first execute is of some source
   op s (no inputs) and starts no earlier than the end of P<s>, itself no earlier than the
   least `load_ns` of s. Hence makespan >= min over sources s of load_s + sum_i run_i.
2. Loads with `load_ns` > 0 are serial on the HBM (hbm_free chains them), so the last one ends
   no earlier than sum_j load_j (zero loads add nothing). Let j be the op whose load ends last
   (if every chosen load is zero, the bound of 1 alone is at least this one). E<j> and the
   execute of every descendant of j start after that load ends: E<j> waits for P<j>, and each
   descendant executes after j (R2) and hence after E<j> ends. So makespan >= sum_j load_j +
   min over ops j that have some pair with a positive load of (run_j + sum of run over j's
   descendants). If instead every chosen load is zero, then every least load is zero too and
   this term is at most sum_i run_i, which bound 1 already exceeds.

The bound is the larger of the two. It ignores SRAM entirely, so it is also the bound the
paper's Ideal stands for: the roofline max(total compute, total HBM traffic) with the two
unavoidable pipeline fill and drain terms.

One use of SRAM is sound and kept: R5 at E<i> implies space(exec_i) <= sram_bytes, so "least"
above ranges over the pairs whose execute plan fits SRAM alone (all pairs if none fits, when
no valid plan exists anyway). The bound holds for every plan that obeys R5.
"""

from __future__ import annotations

import numpy as np

from elk_opt.problem import Instance, Op


def _pairs(op: Op, sram: int) -> list:
    """The op's pairs a plan obeying R5 can choose (all of them if none can)."""
    pairs = op.pairs()
    return [pair for pair in pairs if pair[1].space_bytes <= sram] or pairs


def _least_run(op: Op, sram: int) -> int:
    return min(p.time_ns + t for _q, p, t in _pairs(op, sram))


def _least_load(op: Op, sram: int) -> int:
    return min(q.load_ns for q, _p, _t in _pairs(op, sram))


def _descendant_runs(instance: Instance, runs: np.ndarray) -> np.ndarray:
    """Sum of `runs` over each op's descendants (transitive consumers)."""
    n = len(instance.ops)
    consumers: list[list[int]] = [[] for _ in range(n)]
    for i, op in enumerate(instance.ops):
        for j in op.inputs:
            consumers[j].append(i)
    desc = np.zeros((n, n), dtype=bool)
    for j in range(n - 1, -1, -1):
        for c in consumers[j]:
            desc[j, c] = True
            desc[j] |= desc[c]
    return desc.astype(np.int64) @ runs


def ideal_bound(instance: Instance) -> int:
    """A lower bound on the makespan of every plan of `instance` obeying R5 (module docstring)."""
    ops = instance.ops
    if not ops:
        return 0
    sram = instance.chip.sram_bytes
    runs = np.array([_least_run(op, sram) for op in ops], dtype=np.int64)
    loads = np.array([_least_load(op, sram) for op in ops], dtype=np.int64)
    loading = np.array([max(q.load_ns for q, _p, _t in _pairs(op, sram)) > 0 for op in ops])
    sources = [i for i, op in enumerate(ops) if not op.inputs]
    exec_chain = int(runs.sum()) + min(int(loads[s]) for s in sources)
    if not loading.any():
        return exec_chain
    tails = runs + _descendant_runs(instance, runs)
    hbm_chain = int(loads.sum()) + int(tails[loading].min())
    return max(exec_chain, hbm_chain)
