"""The paper's Ideal roofline, made a valid lower bound of both timings (sections 5 and 5b).

Elk's Ideal lets execution and preloading each use the whole chip (SRAM and interconnect are
not shared), so an op runs its fastest plan and loads at full speed. Read as a bound of our
semantics, for any plan (any choice, program, release times and execution order):

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

Section 5b only slows instructions (a shared port gives each no more than its demand), so
every instruction still lasts at least its section-5 duration and the proof holds unchanged.

One use of SRAM is sound and kept: R5 at E<i> implies max(space(exec_i), space(preload_i)) <=
sram_bytes, so "least" above ranges over the pairs whose two layouts each fit SRAM alone (all
pairs if none fits, when no valid plan exists anyway). The bound holds for every plan that
obeys R5.

Memory is linear in the graph: the least tail of term 2 is found by a branch-and-bound over
the loading ops, ordered by a lower estimate of their tails (the heaviest path of runs from
the op), each exact tail summed by a graph search that stops once it reaches the best tail
found so far.
"""

from __future__ import annotations

from elk_opt.problem import ExecPlan, Instance, Op, PreloadPlan


def allowed_pairs(op: Op, sram: int) -> list[tuple[PreloadPlan, ExecPlan, int]]:
    """The op's pairs a plan obeying R5 can choose (all of them if none can)."""
    pairs = op.pairs()
    return [pair for pair in pairs
            if max(pair[0].space_bytes, pair[1].space_bytes) <= sram] or pairs


def _consumers(instance: Instance) -> list[list[int]]:
    consumers: list[list[int]] = [[] for _ in instance.ops]
    for i, op in enumerate(instance.ops):
        for j in op.inputs:
            consumers[j].append(i)
    return consumers


def least_tail(instance: Instance, runs: list[int], candidates: list[int]) -> int:
    """min over `candidates` j of runs[j] + the sum of runs over j's descendants.

    Exact, in memory linear in the graph. `path[j]` (runs along the heaviest path from j) is a
    lower estimate of j's tail, since the path's ops are distinct descendants; candidates are
    tried in increasing estimate until the estimate reaches the best exact tail, and each
    exact tail is summed by a depth-first search abandoned once it reaches the best.
    """
    consumers = _consumers(instance)
    n = len(runs)
    path = list(runs)
    for j in range(n - 1, -1, -1):
        if consumers[j]:
            path[j] += max(path[c] for c in consumers[j])
    best = None
    seen = [-1] * n  # the candidate whose search last reached the op
    for j in sorted(candidates, key=lambda j: (path[j], j)):
        if best is not None and path[j] >= best:
            break
        total = runs[j]
        seen[j] = j
        stack = [j]
        while stack and (best is None or total < best):
            for c in consumers[stack.pop()]:
                if seen[c] != j:
                    seen[c] = j
                    total += runs[c]
                    stack.append(c)
        if best is None or total < best:
            best = total
    if best is None:
        raise ValueError("least_tail needs at least one candidate")
    return best


def ideal_bound(instance: Instance) -> int:
    """A lower bound on the makespan of every plan of `instance` obeying R5 (module docstring)."""
    ops = instance.ops
    if not ops:
        return 0
    sram = instance.chip.sram_bytes
    pairs = [allowed_pairs(op, sram) for op in ops]
    runs = [min(p.time_ns + t for _q, p, t in ps) for ps in pairs]
    loads = [min(q.load_ns for q, _p, _t in ps) for ps in pairs]
    loading = [i for i, ps in enumerate(pairs) if max(q.load_ns for q, _p, _t in ps) > 0]
    sources = [i for i, op in enumerate(ops) if not op.inputs]
    exec_chain = sum(runs) + min(loads[s] for s in sources)
    if not loading:
        return exec_chain
    return max(exec_chain, sum(loads) + least_tail(instance, runs, loading))
