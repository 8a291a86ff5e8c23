"""Reading a model solution back by variable key, so a solution from anywhere decodes alike.

A `VariableMap` names, per op, the variables of its pair picks and of its load and execute
times in a built model (ILP: PuLP variable names; CP-SAT: proto variable indices). The
in-process ILP reads its solution through it, and `import-solution` reads a solver's solution
file through the same map saved in the export's sidecar, so both decode the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from elk_opt.problem import Choice
from formulations.common import ModelTimes, Pair

Key = Hashable  # a variable's name (ILP) or proto index (CP-SAT)


class MissingValue(KeyError):
    """A solution that gives no value to a variable the decode needs."""


@dataclass(frozen=True)
class PickVar:
    """The binary that picks one (preload, execute) pair of an op."""

    var: Key
    preload: int
    exec: int
    load_ns: int


@dataclass(frozen=True)
class VariableMap:
    """Per op: its pick binaries, and the variables of its times (None: not a variable).

    A load's end is `load_end` when that is a variable, else its start plus `load_len` when
    that is one (a 5b stretched load), else its start plus the picked pair's load_ns; a load
    without a start variable starts at 0 (its pairs all load nothing).
    """

    pick: tuple[tuple[PickVar, ...], ...]
    load_start: tuple[Key | None, ...]
    load_len: tuple[Key | None, ...]
    load_end: tuple[Key | None, ...]
    exec_start: tuple[Key, ...]
    exec_end: tuple[Key, ...]

    def times(self, values: Callable[[Key], float | None]) -> ModelTimes:
        """The chosen pairs and times of a solution, given each variable's value (None: the
        solution gives none); values are rounded, since times are integers."""

        def value(key: Key) -> float:
            found = values(key)
            if found is None:
                raise MissingValue(key)
            return found

        choice, starts, ends = [], [], []
        for j, row in enumerate(self.pick):
            a = max(row, key=lambda p: value(p.var))
            choice.append(Choice(exec=a.exec, preload=a.preload))
            ls, length, le = self.load_start[j], self.load_len[j], self.load_end[j]
            start = round(value(ls)) if ls is not None else 0
            starts.append(start)
            if le is not None:
                ends.append(round(value(le)))
            elif length is not None and ls is not None:
                ends.append(start + round(value(length)))
            else:
                ends.append(start + a.load_ns)
        return ModelTimes(choice, starts, ends, [round(value(k)) for k in self.exec_start],
                          [round(value(k)) for k in self.exec_end])

    def to_dict(self) -> dict[str, Any]:
        return {"pick": [[{"var": p.var, "preload": p.preload, "exec": p.exec,
                           "load_ns": p.load_ns} for p in row] for row in self.pick],
                "load_start": list(self.load_start), "load_len": list(self.load_len),
                "load_end": list(self.load_end), "exec_start": list(self.exec_start),
                "exec_end": list(self.exec_end)}

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> VariableMap:
        """The map of a sidecar (raises KeyError, TypeError or ValueError when malformed)."""
        pick = tuple(tuple(PickVar(_key(p["var"]), int(p["preload"]), int(p["exec"]),
                                   int(p["load_ns"])) for p in row) for row in raw["pick"])
        n = len(pick)
        if n == 0 or any(not row for row in pick):
            raise ValueError("every op needs at least one pick variable")
        fields = {}
        for name in ("load_start", "load_len", "load_end", "exec_start", "exec_end"):
            keys = raw[name]
            if not isinstance(keys, list) or len(keys) != n:
                raise ValueError(f"{name} must list one entry per op ({n})")
            optional = name.startswith("load")
            if not optional and any(k is None for k in keys):
                raise ValueError(f"{name} needs a variable for every op")
            fields[name] = tuple(None if k is None else _key(k) for k in keys)
        return cls(pick, **fields)


def _key(raw: Any) -> Key:
    if isinstance(raw, bool) or not isinstance(raw, str | int):
        raise TypeError(f"a variable key is a name or an index, got {raw!r}")
    return raw


def pick_map(pairs: Sequence[Sequence[Pair]], keys: Sequence[Sequence[Key]]
             ) -> tuple[tuple[PickVar, ...], ...]:
    """The pick binaries of each op's pairs, given each binary's key."""
    return tuple(tuple(PickVar(k, a.preload, a.exec, a.load_ns)
                       for a, k in zip(ps, row, strict=True))
                 for ps, row in zip(pairs, keys, strict=True))
