"""Suites of instances for studies: small TOML files whose list values expand to a grid.

A suite file holds `[[instance]]` tables. Each has a `source`: `synthetic` (ops, plans, seed,
tightness), `zoo` (model, layers, batch, kv_len, chip, mode, noc_occupancy) or `file` (path).
Any field given as a list expands into one instance per value, crossed with the other lists.
A field left out is not passed to the builder, which then uses its own default (for
`noc_occupancy`, "bytes" or "bsp": the chip's own way of counting port time).
"""

from __future__ import annotations

import itertools
import tomllib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from elk_opt.errors import InputError
from elk_opt.problem import Instance

BUILTIN_SUITES = ("small", "small-noc", "medium", "baseline")
_FIELDS = {
    "synthetic": {"ops": int, "plans": int, "seed": int, "tightness": float},
    "zoo": {"model": str, "layers": int, "batch": int, "kv_len": int, "chip": str, "mode": str,
            "noc_occupancy": str},
    "file": {"path": str},
}
_REQUIRED = {"synthetic": (), "zoo": ("model",), "file": ("path",)}
_CHOICES = {"noc_occupancy": ("bytes", "bsp")}


@dataclass(frozen=True)
class InstanceSpec:
    """How to build one instance; `key` names it in files and tables."""

    source: str
    fields: tuple[tuple[str, Any], ...]

    @property
    def key(self) -> str:
        if self.source == "file":
            return Path(dict(self.fields)["path"]).stem
        parts = [self.source] + [f"{k}{v}" for k, v in self.fields if k != "model"]
        if self.source == "zoo":
            parts[0] = dict(self.fields)["model"]
        return "-".join(str(p) for p in parts).replace("/", "_")

    def build(self) -> Instance:
        args = dict(self.fields)
        if self.source == "synthetic":
            from elk_opt.frontend.synthetic import synthetic_instance

            return synthetic_instance(**args)
        if self.source == "zoo":
            from elk_opt.frontend.zoo import model_instance

            model = args.pop("model")
            return model_instance(model, **args)
        from elk_opt.io import load_instance

        return load_instance(args["path"])


def load_suite(name_or_path: str) -> list[InstanceSpec]:
    """A built-in suite by name, or a suite file."""
    if name_or_path in BUILTIN_SUITES:
        text = resources.files("elk_opt.studies").joinpath(f"suites/{name_or_path}.toml")
        return parse_suite(text.read_text(encoding="utf-8"), name_or_path)
    path = Path(name_or_path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise InputError(f"{path}: cannot read suite ({e.strerror}); built-in suites are "
                         f"{', '.join(BUILTIN_SUITES)}") from None
    specs = parse_suite(text, str(path))
    base = path.parent
    return [InstanceSpec(s.source, tuple((k, str(base / v)) if k == "path" else (k, v)
                                         for k, v in s.fields)) if s.source == "file" else s
            for s in specs]


def parse_suite(text: str, source: str) -> list[InstanceSpec]:
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise InputError(f"{source}: invalid TOML: {e}") from None
    tables = doc.get("instance")
    if not isinstance(tables, list) or not tables:
        raise InputError(f"{source}: instance: needs at least one [[instance]] table")
    specs: list[InstanceSpec] = []
    for k, table in enumerate(tables):
        where = f"{source}: instance[{k}]"
        if not isinstance(table, dict):
            raise InputError(f"{where}: must be a table ([[instance]]), got {table!r}")
        kind = table.get("source")
        if not isinstance(kind, str) or kind not in _FIELDS:
            raise InputError(f"{where}.source: must be one of {', '.join(_FIELDS)}, "
                             f"got {kind!r}")
        allowed = _FIELDS[kind]
        for key in _REQUIRED[kind]:
            if key not in table:
                raise InputError(f"{where}.{key}: missing (source {kind} needs it)")
        grid: list[list[tuple[str, Any]]] = []
        for key, value in table.items():
            if key == "source":
                continue
            if key not in allowed:
                raise InputError(f"{where}.{key}: unknown field for source {kind} "
                                 f"(known: {', '.join(allowed)})")
            values = value if isinstance(value, list) else [value]
            if not values:
                raise InputError(f"{where}.{key}: an empty list (a grid over nothing)")
            for v in values:
                expected = allowed[key]
                ok = isinstance(v, expected) or (expected is float and isinstance(v, int))
                if not ok or isinstance(v, bool):
                    raise InputError(f"{where}.{key}: must be {expected.__name__} or a list of "
                                     f"them, got {v!r}")
                if key in _CHOICES and v not in _CHOICES[key]:
                    raise InputError(f"{where}.{key}: must be one of "
                                     f"{', '.join(_CHOICES[key])}, got {v!r}")
            grid.append([(key, v) for v in values])
        specs += [InstanceSpec(kind, tuple(combo)) for combo in itertools.product(*grid)]
    keys = [s.key for s in specs]
    duplicated = sorted({k for k in keys if keys.count(k) > 1})
    if duplicated:
        raise InputError(f"{source}: instances listed twice: {', '.join(duplicated)}")
    return specs
