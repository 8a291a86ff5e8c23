"""The JSON Schemas shipped in elk_opt/schemas/, compiled once, for the tests and the conftest
hook.

Validating an instance with jsonschema costs about 1 ms per op, and a test session writes the
same instance into many plans, so `DocumentChecker` validates each instance object once and
then only the rest of each plan (the plan schema with its `instance` left unchecked).
"""

from __future__ import annotations

import json
import weakref
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from referencing import Registry, Resource

SCHEMA_DIR = Path(__file__).resolve().parents[1] / "elk_opt" / "schemas"
INSTANCE_SCHEMA = "instance.schema.json"
PLAN_SCHEMA = "plan.schema.json"
CERTIFICATE_SCHEMA = "certificate.schema.json"


def load_schema(name: str) -> dict[str, Any]:
    return json.loads((SCHEMA_DIR / name).read_text(encoding="utf-8"))


def _registry(*names: str) -> Registry:
    """The schemas `names`, each found by its file name as a `$ref` names it."""
    return Registry().with_resources(
        (name, Resource.from_contents(load_schema(name))) for name in names)


@cache
def instance_validator() -> Draft202012Validator:
    return Draft202012Validator(load_schema(INSTANCE_SCHEMA))


@cache
def plan_validator() -> Draft202012Validator:
    """The plan schema, its `$ref` to the instance schema resolved the way a file tool would:
    by the file name, relative to the plan schema's own location."""
    return Draft202012Validator(load_schema(PLAN_SCHEMA), registry=_registry(INSTANCE_SCHEMA))


@cache
def certificate_validator() -> Draft202012Validator:
    """The certificate schema, its plans (and their instances) resolved by file name."""
    return Draft202012Validator(load_schema(CERTIFICATE_SCHEMA),
                                registry=_registry(INSTANCE_SCHEMA, PLAN_SCHEMA))


def _closed(node: Any) -> Any:
    """`node` with every object schema that lists properties closed to others."""
    if isinstance(node, dict):
        node = {k: _closed(v) for k, v in node.items()}
        if "properties" in node:
            node.setdefault("additionalProperties", False)
        return node
    if isinstance(node, list):
        return [_closed(v) for v in node]
    return node


@cache
def closed_certificate_validator() -> Draft202012Validator:
    """The certificate schema with no key beyond those it describes (the format itself allows
    extra keys at the top and in a bound): a certificate elk-opt writes passes it exactly when
    the schema, and so docs/spec.md section 3b, describes every key it holds."""
    return Draft202012Validator(_closed(load_schema(CERTIFICATE_SCHEMA)),
                                registry=_registry(INSTANCE_SCHEMA, PLAN_SCHEMA))


@cache
def _plan_shell_validator() -> Draft202012Validator:
    """The plan schema with any `instance` accepted: for plans whose instance was checked."""
    schema = load_schema(PLAN_SCHEMA)
    schema["properties"]["instance"] = True
    return Draft202012Validator(schema)


def errors(validator: Draft202012Validator, document: Any) -> list[str]:
    """Every violation, as `path: message`, deepest first."""
    found = sorted(validator.iter_errors(document), key=lambda e: -len(e.absolute_path))
    return [f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}" for e in found]


class DocumentChecker:
    """Checks written documents against the schemas, each instance object only once."""

    def __init__(self) -> None:
        self._checked: dict[int, weakref.ref] = {}
        self.failures: list[str] = []

    def instance(self, instance: object, document: dict[str, Any]) -> list[str]:
        ref = self._checked.get(id(instance))
        if ref is not None and ref() is instance:
            return []
        found = errors(instance_validator(), document)
        if not found:
            self._checked[id(instance)] = weakref.ref(instance)
        return self._record("elk-instance/1", found)

    def plan(self, instance: object, document: dict[str, Any]) -> list[str]:
        found = self.instance(instance, document["instance"])
        return found + self._record("elk-plan/1", errors(_plan_shell_validator(), document))

    def _record(self, what: str, found: list[str]) -> list[str]:
        self.failures += [f"{what}: {e}" for e in found]
        return found
