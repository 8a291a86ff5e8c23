"""The free execution order (R2) in the CP-SAT model: which execute comes before which.

Per op a position `pos[i]` (all different; an op's inputs at lower positions) and per pair of
ops that no dependency orders one literal `before[i, k]` (E<i> before E<k>), which also chains
their times. Per load j a slot variable, the position of the first execute its preload is
issued before (no later than E<j>'s), and per execute i that may precede E<j> the literal
`issued[j, i]` = "P<j> comes before E<i>" = pos[i] >= slot[j]. P<j> is pending at E<i> when it
is issued before it and E<j> comes after it. With the order fixed to the instance's these are
the instance-order model's literals, so the two models agree wherever both apply.
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx
from ortools.sat.python import cp_model

from elk_opt.problem import Instance
from elk_opt.reorder import dependency_graph


@dataclass
class FreeOrder:
    """The order layer's variables (for hints and decoding)."""

    pos: list[cp_model.IntVar]
    before: dict[tuple[int, int], cp_model.IntVar]  # (i, k) with i < k, unordered by inputs
    slot: dict[int, cp_model.IntVar]  # per load
    ancestors: list[set[int]]
    descendants: list[set[int]]

    def precedes(self, i: int, k: int) -> cp_model.IntVar | bool:
        """E<i> before E<k>: a constant where a dependency decides it, else a literal."""
        if i in self.ancestors[k]:
            return True
        if k in self.ancestors[i] or i == k:
            return False
        return self.before[i, k] if i < k else ~self.before[k, i]

    def may_precede(self, j: int) -> list[int]:
        """The executes that can come before E<j> (those its preload can be pending at)."""
        return [i for i in range(len(self.pos)) if i != j and i not in self.descendants[j]]


def add_order(m: cp_model.CpModel, instance: Instance, exec_start: list[cp_model.IntVar],
              exec_end: list[cp_model.IntVar]) -> FreeOrder:
    """Positions and order literals for the executes, their times kept apart in that order."""
    n = len(instance.ops)
    graph = dependency_graph(instance)
    ancestors = [nx.ancestors(graph, i) for i in range(n)]
    descendants = [nx.descendants(graph, i) for i in range(n)]
    pos = [m.new_int_var(len(ancestors[i]), n - 1 - len(descendants[i]), f"pos{i}")
           for i in range(n)]
    m.add_all_different(pos)
    for i, op in enumerate(instance.ops):
        for p in op.inputs:
            m.add(pos[p] < pos[i])
            m.add(exec_start[i] >= exec_end[p])
    before: dict[tuple[int, int], cp_model.IntVar] = {}
    for i in range(n):
        for k in range(i + 1, n):
            if i in ancestors[k] or k in ancestors[i]:
                continue
            lit = before[i, k] = m.new_bool_var(f"before{i}_{k}")
            m.add(pos[i] < pos[k]).only_enforce_if(lit)
            m.add(pos[k] < pos[i]).only_enforce_if(~lit)
            m.add(exec_start[k] >= exec_end[i]).only_enforce_if(lit)
            m.add(exec_start[i] >= exec_end[k]).only_enforce_if(~lit)
    return FreeOrder(pos, before, {}, ancestors, descendants)


def add_issue(m: cp_model.CpModel, order: FreeOrder, j: int, start: cp_model.IntVar,
              exec_end: list[cp_model.IntVar]) -> dict[int, cp_model.IntVar]:
    """Load j's slot and its issue literals; a load issued after an execute waits for it."""
    slot = order.slot[j] = m.new_int_var(0, len(order.pos) - 1, f"slot{j}")
    m.add(slot <= order.pos[j])
    issued = {}
    for i in order.may_precede(j):
        lit = issued[i] = m.new_bool_var(f"issued{j}_{i}")
        m.add(order.pos[i] >= slot).only_enforce_if(lit)
        m.add(order.pos[i] < slot).only_enforce_if(~lit)
        m.add(start >= exec_end[i]).only_enforce_if(~lit)
    return issued
