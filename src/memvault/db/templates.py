"""Statements built once per shape and run with their values as parameters.

A search's ranking statements (several materialised CTEs, a page per filter set) took longer
for SQLAlchemy to build than for PostgreSQL to run at a few hundred memories: 2.0 ms for a
keyword ranking, 2.7 ms for a vector one, on every search. Their SQL depends only on a shape
(which filters are set, how many pages, the limits), so each shape is built once and kept; the
values (tenant, owner, terms, vector, filter values) are named parameters given at execution.

A template's parameters carry no value (``sa.bindparam(name)`` is required), so a statement
run without one of its values fails instead of running with an earlier caller's.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from threading import Lock
from typing import Any, TypeVar

import sqlalchemy as sa

T = TypeVar("T")

# Shapes seen in practice are a handful (filter combinations times page counts); the bound
# only keeps an unusual client from growing the cache without end.
MAX_TEMPLATES = 512

_built: OrderedDict[Hashable, Any] = OrderedDict()
_lock = Lock()


def template(shape: Hashable, build: Callable[..., T], *args: Any) -> T:
    """The statement built for ``shape`` before, or ``build(*args)``'s, kept for the next
    caller. ``shape`` must name everything the SQL text depends on (``args`` included);
    values go in as parameters."""
    with _lock:
        found = _built.get(shape)
        if found is not None:
            _built.move_to_end(shape)
            return found  # type: ignore[no-any-return]
    statement = build(*args)
    with _lock:
        _built[shape] = statement
        while len(_built) > MAX_TEMPLATES:
            _built.popitem(last=False)
    return statement


def param(name: str, **kwargs: Any) -> sa.BindParameter[Any]:
    """A named parameter with no value of its own: the execution must supply it."""
    return sa.bindparam(name, required=True, **kwargs)
