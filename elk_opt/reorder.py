"""An instance with its ops renumbered into another topological order, and plans mapped back.

A plan that executes in order `order` of an instance is, with its ops renumbered, a plan that
executes in the instance order of `reorder(instance, order)`, under every timing (the timing
rules read program positions and dependencies, never op numbers). So a method that schedules in
the instance's order schedules in any order R2 allows by running on the renumbered instance,
and an instance-order search over every reordering is a search over every execution order.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from elk_opt.problem import Choice, Instance, Instr

if TYPE_CHECKING:
    import networkx as nx


def dependency_graph(instance: Instance) -> nx.DiGraph:
    import networkx as nx  # only the searches over orders need it

    graph = nx.DiGraph()
    graph.add_nodes_from(range(len(instance.ops)))
    graph.add_edges_from((p, i) for i, op in enumerate(instance.ops) for p in op.inputs)
    return graph


def topological_orders(instance: Instance) -> Iterator[tuple[int, ...]]:
    """Every execution order R2 allows (exponentially many: for tiny instances)."""
    import networkx as nx

    return (tuple(order) for order in nx.all_topological_sorts(dependency_graph(instance)))


def reorder(instance: Instance, order: Sequence[int]) -> Instance:
    """The instance with op `order[k]` as op k (inputs renumbered to match)."""
    new = {old: k for k, old in enumerate(order)}
    ops = tuple(replace(instance.ops[old], inputs=tuple(new[p] for p in instance.ops[old].inputs))
                for old in order)
    return replace(instance, ops=ops)


def restore(order: Sequence[int], choice: Sequence[Choice], program: Sequence[Instr],
            release_ns: Mapping[Instr, int] | None = None
            ) -> tuple[tuple[Choice, ...], tuple[Instr, ...], dict[Instr, int]]:
    """A plan of `reorder(instance, order)` as a plan of the instance itself."""
    back = [Choice(exec=0, preload=0)] * len(order)
    for k, c in enumerate(choice):
        back[order[k]] = c
    return (tuple(back), tuple((kind, order[j]) for kind, j in program),
            {(kind, order[j]): t for (kind, j), t in (release_ns or {}).items()})
