"""Reading JSON input strictly: every failure an InputError naming the file, the field and
the value.

The formats' readers (elk_opt.io, the chip presets, `elk-opt lower`) take fields through
`Reader`, so a bad value reads the same wherever it is found, e.g. `i.json:
ops[12].exec_plans[3].space_bytes: must be a non-negative integer, got -5`. JSON text is
parsed here too, with the cases Python's parser lets through or fails on without a field
path: NaN and Infinity, nesting too deep to parse, integer literals too long to convert.
Numbers stay where float64 is exact (MAX_INT, TIME_LIMIT_NS). `verify` reads the same
formats with its own code (docs/spec.md section 8).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from elk_opt.errors import InputError
from elk_opt.files import read_text

MAX_INT = 2**53 - 1  # every integer read: the largest below which float64 is exact
TIME_LIMIT_NS = 2**51  # an instance's longest possible run, and every release_ns
MAX_METADATA_DEPTH = 64  # lists and objects nested in a value under an undefined key
_DIGIT_LIMIT = 4300  # Python's default limit on int <-> str conversion


class Reader:
    """Typed field access that turns every problem into an InputError with a path."""

    def __init__(self, source: str):
        self.source = source

    def fail(self, path: str, message: str) -> InputError:
        where = f"{path}: " if path else ""
        return InputError(f"{self.source}: {where}{message}")

    def obj(self, value: Any, path: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(path, f"must be an object, got {show(value)}")
        return value

    def field(self, obj: dict[str, Any], key: str, path: str) -> Any:
        if key not in obj:
            raise self.fail(join_path(path, key), "missing")
        return obj[key]

    def nonneg(self, obj: dict[str, Any], key: str, path: str, limit: int = MAX_INT) -> int:
        value = self.field(obj, key, path)
        where = join_path(path, key)
        if not is_int(value) or value < 0:
            raise self.fail(where, f"must be a non-negative integer, got {show(value)}")
        if value > limit:
            raise self.fail(where, f"must be at most {_limit_name(limit)} ({limit:,}), "
                                   f"got {show(value)}")
        return value

    def optional_nonneg(self, obj: dict[str, Any], key: str, path: str) -> int | None:
        return self.nonneg(obj, key, path) if key in obj else None

    def positive(self, obj: dict[str, Any], key: str, path: str) -> int:
        value = self.field(obj, key, path)
        if not is_int(value) or value <= 0:
            raise self.fail(join_path(path, key), f"must be a positive integer, got {show(value)}")
        return self.nonneg(obj, key, path)

    def string(self, obj: dict[str, Any], key: str, path: str) -> str:
        value = self.field(obj, key, path)
        if not isinstance(value, str):
            raise self.fail(join_path(path, key), f"must be a string, got {show(value)}")
        return value

    def array(self, obj: dict[str, Any], key: str, path: str, nonempty: bool = False) -> list:
        value = self.field(obj, key, path)
        if not isinstance(value, list):
            raise self.fail(join_path(path, key), f"must be a list, got {show(value)}")
        if nonempty and not value:
            raise self.fail(join_path(path, key), "must not be empty")
        return value

    def metadata(self, obj: dict[str, Any], known: set[str], path: str) -> None:
        """Keys the format does not define: allowed, nested at most MAX_METADATA_DEPTH deep."""
        for key in obj:
            if key not in known:
                self.shallow(obj[key], join_path(path, key))

    def shallow(self, value: Any, path: str) -> None:
        todo = [(value, 1)] if isinstance(value, dict | list) else []
        while todo:  # a loop, not recursion: the nesting is what is being checked
            item, depth = todo.pop()
            if depth > MAX_METADATA_DEPTH:
                raise self.fail(path, f"nested more than {MAX_METADATA_DEPTH} levels deep")
            for child in item.values() if isinstance(item, dict) else item:
                if isinstance(child, dict | list):
                    todo.append((child, depth + 1))


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def join_path(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _limit_at(where: str) -> str:
    """The largest integer a field at path `where` may hold, as the messages name it."""
    return _limit_name(TIME_LIMIT_NS if re.match(r"(instance\.)?release_ns\b", where)
                      else MAX_INT)


def _limit_name(limit: int) -> str:
    return "2**51" if limit == TIME_LIMIT_NS else "2**53 - 1"


def show(value: Any) -> str:
    """A short rendering of a JSON value; never walks a (possibly huge or deep) container."""
    if isinstance(value, list):
        return f"a list of {len(value)} item{'s' if len(value) != 1 else ''}"
    if isinstance(value, dict):
        return f"an object with {len(value)} key{'s' if len(value) != 1 else ''}"
    if is_int(value) and abs(value) >= 10**60:
        return "an integer of more than 60 digits"
    text = json.dumps(value) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def read_json(path: str | Path) -> Any:
    """Parse a JSON file, plain or gzipped; any failure becomes an InputError naming the file."""
    return parse_json(read_text(path), str(path))


class _NotJson(Exception):
    """NaN, Infinity or -Infinity: Python's parser takes them, JSON has no such values."""


def _reject_constant(name: str) -> Any:
    raise _NotJson(name)


def parse_json(text: str, source: str) -> Any:
    """Parse JSON text from `source` (a file name, or e.g. a command-line option).

    Every failure is an InputError: invalid JSON, NaN or Infinity, nesting too deep for the
    parser, and integer literals too long for Python's int (named by their field path).
    """
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as e:
        raise InputError(f"{source}: invalid JSON at line {e.lineno} column {e.colno}: "
                         f"{e.msg}") from None
    except _NotJson as e:
        raise InputError(f"{source}: invalid JSON: {e} is not a JSON value") from None
    except RecursionError:
        raise _nested_too_deep(source) from None
    except ValueError as e:  # an integer literal past Python's int-string limit
        raise _huge_literal(text, source, e) from None


def _nested_too_deep(source: str) -> InputError:
    return InputError(f"{source}: JSON nested too deeply to parse (the formats need 6 levels, "
                      "metadata 64 more)")


class _HugeLiteral(int):
    """Stands in for an integer literal too long to convert, to find its field path."""


def _huge_or_int(text: str) -> int:
    digits = len(text.lstrip("-"))
    return int(text) if digits <= _DIGIT_LIMIT else _HugeLiteral(digits)


def _huge_literal(text: str, source: str, error: ValueError) -> InputError:
    try:
        doc = json.loads(text, parse_int=_huge_or_int, parse_constant=_reject_constant)
    except RecursionError:
        return _nested_too_deep(source)
    todo: list[tuple[Any, str]] = [(doc, "")]
    while todo:
        value, where = todo.pop()
        if isinstance(value, _HugeLiteral):
            return InputError(f"{source}: {where or 'document'}: must be at most "
                              f"{_limit_at(where)}, got an integer of {int(value):,} digits")
        if isinstance(value, dict):
            todo.extend((v, join_path(where, k)) for k, v in value.items())
        elif isinstance(value, list):
            todo.extend((v, f"{where}[{k}]") for k, v in enumerate(value))
    return InputError(f"{source}: invalid JSON: {error}")
