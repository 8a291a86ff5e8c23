"""An instance with its ops renumbered into another topological order, and plans mapped back.

A plan that executes in order `order` of an instance is, with its ops renumbered, a plan that
executes in the instance order of `reorder(instance, order)`, under every timing (the timing
rules read program positions and dependencies, never op numbers). So a method that schedules in
the instance's order schedules in any order R2 allows by running on the renumbered instance.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from elk_opt.problem import Choice, Instance, Instr


def reorder(instance: Instance, order: Sequence[int]) -> Instance:
    """The instance with op `order[k]` as op k (inputs renumbered to match)."""
    new = {old: k for k, old in enumerate(order)}
    ops = tuple(replace(instance.ops[old], inputs=tuple(new[p] for p in instance.ops[old].inputs))
                for old in order)
    return replace(instance, ops=ops)


def restore(order: Sequence[int], choice: Sequence[Choice], program: Sequence[Instr]
            ) -> tuple[tuple[Choice, ...], tuple[Instr, ...]]:
    """A plan (choice, program) of `reorder(instance, order)` as one of the instance itself."""
    back = [Choice(exec=0, preload=0)] * len(order)
    for k, c in enumerate(choice):
        back[order[k]] = c
    return tuple(back), tuple((kind, order[j]) for kind, j in program)
