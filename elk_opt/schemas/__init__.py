"""The JSON Schemas (draft 2020-12) of the three formats, shipped with the package.

`instance.schema.json`, `plan.schema.json` and `certificate.schema.json`; each refers to the
one it embeds by file name, so keep them side by side. `elk-opt schema NAME` prints one.
"""

from __future__ import annotations

import json
from importlib.resources import files
from typing import Any

from elk_opt.errors import UsageError

NAMES = ("instance", "plan", "certificate")


def schema_text(name: str) -> str:
    """The schema file `NAME.schema.json` as shipped."""
    if name not in NAMES:
        raise UsageError(f"unknown schema {name!r}; choose one of {', '.join(NAMES)}")
    return files(__package__).joinpath(f"{name}.schema.json").read_text(encoding="utf-8")


def schema(name: str) -> dict[str, Any]:
    """The schema `NAME` as a JSON object."""
    return json.loads(schema_text(name))
