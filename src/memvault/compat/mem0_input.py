"""What mem0's API accepts, checked as mem0ai 2.2.1 checks it, and mem0's ``filters`` read into
what memvault applies.

Every refusal here is a ``ValueError`` with mem0's own message, so code that catches mem0's
errors catches these (``tests/test_compat_mem0_differential.py`` holds them side by side).

A filter becomes two parts (:class:`Filters`): the entity ids and plain values, which memvault
applies in SQL as metadata containment before it ranks or cuts a page, and a test of the rest
(operators, ``AND`` / ``OR`` / ``NOT``) on each memory's fields, read as mem0's reference store
(qdrant) reads them. Nothing a filter says is dropped: an operator mem0 does not define is
refused by name.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any

Test = Callable[[Mapping[str, Any]], bool]

ENTITIES = ("user_id", "agent_id", "run_id")
_RANGE = frozenset({"gt", "gte", "lt", "lte"})
_OPERATORS = frozenset({"eq", "ne", "in", "nin", "contains", "icontains"}) | _RANGE
_LOGICAL = ("AND", "OR", "NOT")
_MISSING: Any = object()


def entity_id(value: Any, name: str) -> str | None:
    """An entity id trimmed, as mem0's ``_validate_and_trim_entity_id``: a number becomes its
    text, and an empty id or one with whitespace inside is refused."""
    if value is None:
        return None
    trimmed = str(value).strip()
    if not trimmed:
        raise ValueError(
            f"Invalid {name}: cannot be empty or whitespace-only. Provide a valid identifier."
        )
    if any(c.isspace() for c in trimmed):
        raise ValueError(
            f"Invalid {name}: cannot contain whitespace. Provide a valid identifier without spaces."
        )
    return trimmed


def entities(given: Mapping[str, Any], names: tuple[str, ...] = ENTITIES) -> dict[str, str]:
    """The entity ids among ``given``, checked and trimmed; those unset left out."""
    found = {name: entity_id(given.get(name), name) for name in names}
    return {name: value for name, value in found.items() if value}


def search_params(threshold: Any = None, top_k: Any = None) -> None:
    if threshold is not None:
        if isinstance(threshold, bool) or not isinstance(threshold, int | float):
            raise ValueError("threshold must be a valid number")
        if threshold < 0 or threshold > 1:
            raise ValueError(
                f"Invalid threshold: {threshold}. Must be between 0 and 1 (inclusive)."
            )
    if top_k is not None:
        if isinstance(top_k, bool) or not isinstance(top_k, int):
            raise ValueError("top_k must be a valid integer")
        if top_k < 0:
            raise ValueError(f"Invalid top_k: {top_k}. Must be a non-negative integer.")


def query(text: Any) -> str:
    if not isinstance(text, str):
        raise ValueError("Invalid query: must be a non-empty string.")
    if not text.strip():
        raise ValueError("Invalid query: cannot be empty or whitespace-only.")
    return text.strip()


def expiration(value: Any) -> str | None:
    """mem0's ``expiration_date``: a date, kept as ``YYYY-MM-DD``."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.date().isoformat()
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, str):
        try:
            return date.fromisoformat(value).isoformat()
        except ValueError as exc:
            raise ValueError("expiration_date must be a valid date in YYYY-MM-DD format.") from exc
    raise ValueError("expiration_date must be a date string in YYYY-MM-DD format.")


def no_entity_keywords(kwargs: Mapping[str, Any], method: str) -> None:
    if found := frozenset(ENTITIES) & set(kwargs):  # mem0 names them as a frozenset
        raise ValueError(
            f"Top-level entity parameters {found} are not supported in {method}(). "
            "Use filters={'user_id': '...'} instead."
        )


@dataclass(frozen=True)
class Filters:
    """mem0's ``filters``: ``entities`` and ``metadata`` are exact matches memvault applies in
    SQL; ``test`` is the rest, on a memory's fields (None: nothing more to test)."""

    entities: dict[str, str]
    metadata: dict[str, Any] = field(default_factory=dict)
    test: Test | None = None


def read_filters(filters: Mapping[str, Any] | None, names: tuple[str, ...] = ENTITIES) -> Filters:
    """``filters`` as mem0's ``search`` and ``get_all`` take them: at least one entity id, then
    any metadata conditions."""
    given = dict(filters or {})
    found = entities(given, names)
    if not any(name in given for name in names):
        raise ValueError(
            f"filters must contain at least one of: {', '.join(names)}. "
            "Example: filters={'user_id': 'u1'}"
        )
    metadata: dict[str, Any] = {}
    rest: dict[str, Any] = {}
    for key, value in given.items():
        if key in names:
            continue
        if key not in _LOGICAL and _plain(value):
            metadata[key] = value
        else:
            rest[key] = value
    return Filters(found, metadata, _compile(rest) if rest else None)


def _plain(value: Any) -> bool:
    # A scalar other than the wildcard is a containment memvault applies in SQL.
    return isinstance(value, str | int | float | bool) and value != "*"


def _compile(conditions: Mapping[str, Any]) -> Test:
    tests = [_compile_key(key, value) for key, value in conditions.items()]
    return lambda fields: all(test(fields) for test in tests)


def _compile_key(key: str, value: Any) -> Test:
    if key in _LOGICAL:
        parts = _branches(key, value)
        if key == "AND":
            return lambda fields: all(part(fields) for part in parts)
        if key == "OR":
            return lambda fields: any(part(fields) for part in parts)
        return lambda fields: not any(part(fields) for part in parts)
    return _condition(key, value)


def _branches(key: str, value: Any) -> list[Test]:
    if not isinstance(value, list) or (key != "AND" and not value):
        raise ValueError(
            f"{key} operator requires a {'' if key == 'AND' else 'non-empty '}list of conditions"
        )
    for index, item in enumerate(value):
        if not isinstance(item, dict):
            raise ValueError(
                f"{key} filter list item at index {index} must be a dict, got "
                f"{type(item).__name__}: {item!r}"
            )
    return [_compile(item) for item in value]


def _condition(key: str, value: Any) -> Test:
    if not isinstance(value, dict):
        if value == "*":  # any value, as mem0's reference store reads it: no condition
            return lambda fields: True
        if isinstance(value, list):  # mem0's shorthand for "in"
            return _condition(key, {"in": value})
        return lambda fields: _equal(fields.get(key, _MISSING), value)
    ops = set(value)
    if unknown := sorted(ops - _OPERATORS):
        raise ValueError(
            f"Unsupported metadata filter operator: {', '.join(unknown)} (on {key!r}); mem0's "
            f"operators are {', '.join(sorted(_OPERATORS))}"
        )
    if ops & _RANGE and ops - _RANGE:
        raise ValueError(
            f"Cannot mix range operators ({ops & _RANGE}) with non-range operators "
            f"({ops - _RANGE}) for field '{key}'. Use AND to combine them as separate conditions."
        )
    tests = [_operator(op, operand) for op, operand in value.items()]
    return lambda fields: all(test(fields.get(key, _MISSING)) for test in tests)


def _operator(op: str, operand: Any) -> Callable[[Any], bool]:
    if op in _RANGE:
        return lambda stored: _in_range(op, stored, operand)
    if op in ("in", "nin"):
        if not isinstance(operand, list):
            raise ValueError(f"The {op!r} operator takes a list of values, not {operand!r}")
        if op == "in":
            return lambda stored: _among(stored, operand)
        return lambda stored: stored is not _MISSING and not _among(stored, operand)
    if op == "eq":
        return lambda stored: _equal(stored, operand)
    if op == "ne":
        return lambda stored: stored is not _MISSING and not _equal(stored, operand)
    # contains and icontains as mem0's reference store (qdrant, a field without a text index)
    # reads both: every word of the operand is a word of the field, in any case.
    words = _words(str(operand))
    return lambda stored: isinstance(stored, str) and bool(words) and words <= _words(stored)


def _words(text: str) -> set[str]:
    return {word.lower() for word in re.findall(r"[^\W_]+", text)}


def _among(stored: Any, values: list[Any]) -> bool:
    return any(_equal(stored, value) for value in values)


def _equal(stored: Any, wanted: Any) -> bool:
    # JSON equality: true is not 1, as in the store's containment.
    if isinstance(stored, bool) or isinstance(wanted, bool):
        return type(stored) is type(wanted) and stored == wanted
    return bool(stored == wanted)


def _in_range(op: str, stored: Any, bound: Any) -> bool:
    pair = _comparable(stored, bound)
    if pair is None:
        return False
    value, limit = pair
    if op == "gt":
        return bool(value > limit)
    if op == "gte":
        return bool(value >= limit)
    if op == "lt":
        return bool(value < limit)
    return bool(value <= limit)


def _comparable(stored: Any, bound: Any) -> tuple[Any, Any] | None:
    """Numbers with numbers, ISO dates and times with each other (as qdrant's ``Range`` and
    ``DatetimeRange``); anything else never matches."""
    if _number(bound):
        return (stored, bound) if _number(stored) else None
    if isinstance(bound, str):
        limit = _moment(bound)
        if limit is None:
            raise ValueError(f"A range filter takes a number or an ISO date, not {bound!r}")
        value = _moment(stored) if isinstance(stored, str) else None
        return None if value is None else (value, limit)
    raise ValueError(f"A range filter takes a number or an ISO date, not {bound!r}")


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _moment(text: str) -> datetime | None:
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    # A date or time without a zone is read as UTC, so any two compare.
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
