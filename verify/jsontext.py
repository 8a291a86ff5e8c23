"""JSON text to a document, with every way that can fail turned into one `Malformed` line.

Python's parser accepts NaN and Infinity (not JSON), raises RecursionError on deep nesting and a
bare ValueError on integer literals past 4,300 digits; none of these may end in a traceback.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

from verify.reading import Malformed, gc_paused, path

_DIGIT_LIMIT = 4300  # Python's default limit on int <-> str conversion


class _NotJson(Exception):
    pass


class _HugeInt(NamedTuple):
    digits: int


def _reject_constant(name: str) -> Any:
    raise _NotJson(name)


def _int_or_huge(text: str) -> int | _HugeInt:
    digits = len(text.lstrip("-"))
    return int(text) if digits <= _DIGIT_LIMIT else _HugeInt(digits)


def parse(text: str) -> Any:
    """The document in `text`; raises Malformed naming the problem (and its place if known)."""
    try:
        with gc_paused():
            return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as e:
        raise Malformed(f"invalid JSON at line {e.lineno} column {e.colno}: {e.msg}") from None
    except _NotJson as e:
        raise Malformed(f"invalid JSON: {e} is not a JSON value") from None
    except RecursionError:
        raise _too_deep() from None
    except ValueError as e:  # an integer literal too long for int()
        raise _locate_huge(text, e) from None


def _too_deep() -> Malformed:
    return Malformed("JSON nested too deeply to parse (the formats need 6 levels, metadata 64 "
                     "more)")


def _locate_huge(text: str, error: ValueError) -> Malformed:
    try:
        doc = json.loads(text, parse_int=_int_or_huge, parse_constant=_reject_constant)
    except RecursionError:
        return _too_deep()
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(doc, ())]
    while stack:
        value, where = stack.pop()
        if isinstance(value, _HugeInt):
            limit = "2**51" if where[:1] == ("release_ns",) else "2**53 - 1"
            return Malformed(f"{path(*where) or 'plan'}: must be at most {limit}, got an "
                             f"integer of {value.digits:,} digits")
        if isinstance(value, dict):
            stack.extend((v, (*where, k)) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((v, (*where, k)) for k, v in enumerate(value))
    return Malformed(f"invalid JSON: {error}")
