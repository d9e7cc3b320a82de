"""Every filter ``MemoryFilter`` defines is applied in SQL: the lists db/store.py builds its
conditions from are read from the model, so a new field without a condition fails here."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pydantic
import pytest
from sqlalchemy.dialects import postgresql

from memvault.db import store
from memvault.models import MemoryFilter

# One of these validates for each field's type (the first that does is the field's sample).
_CANDIDATES: tuple[Any, ...] = (
    "temporal",
    "cold",
    "x",
    ["x"],
    {"k": "v"},
    datetime(2030, 1, 1, tzinfo=UTC),
    5,
)


def _sample(name: str) -> Any:
    for value in _CANDIDATES:
        try:
            MemoryFilter.model_validate({"user_id": "u", name: value})
        except pydantic.ValidationError:
            continue
        return value
    raise AssertionError(f"no sample value validates for the filter {name!r}")


def _sql(conditions: list[Any]) -> list[str]:
    dialect = postgresql.dialect()
    return [str(c.compile(dialect=dialect)) for c in conditions]


@pytest.mark.parametrize("name", [n for n in MemoryFilter.model_fields if n != "user_id"])
def test_every_filter_field_becomes_a_condition(name: str) -> None:
    unfiltered = MemoryFilter(user_id="u")
    filtered = MemoryFilter.model_validate({"user_id": "u", name: _sample(name)})
    assert name in store.filter_values("t", filtered)
    assert name not in store.filter_values("t", unfiltered)
    added = set(_sql(store.list_filters("t", filtered))) - set(
        _sql(store.list_filters("t", unfiltered))
    )
    assert len(added) == 1, (name, added)
    assert "memories." in added.pop()
