"""Request shapes that exist only on the HTTP side (query strings); bodies reuse models.py."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from memvault.errors import InvalidInput
from memvault.models import HistoryPage, MemoryQuery, Owner

__all__ = ["CONFLICT", "V1_ERRORS", "DeleteAllParams", "HistoryPage", "ListParams", "Owner"]


class ListParams(MemoryQuery):
    """GET /v1/memories: ``MemoryQuery`` as a query string carries it (lists repeat their key;
    ``metadata`` is a JSON object in a string), so the route's parameters are the library's."""

    metadata: str | None = Field(  # type: ignore[assignment]
        default=None, description='JSON object, e.g. {"topic":"food"}'
    )

    def filters(self) -> dict[str, Any]:
        values = self.model_dump(exclude={"metadata"})
        if self.metadata is not None:
            try:
                values["metadata"] = json.loads(self.metadata)
            except (ValueError, RecursionError):  # nested past the parser's depth too
                raise InvalidInput(
                    "metadata must be a JSON object.", details={"field": "metadata"}
                ) from None
            if not isinstance(values["metadata"], dict):
                raise InvalidInput("metadata must be a JSON object.", details={"field": "metadata"})
        return values


class DeleteAllParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    user_id: str
    app_id: str | None = None


class ErrorDetail(BaseModel):
    code: str = Field(description="machine-readable, e.g. not_found, rate_limited")
    message: str
    details: dict[str, Any]


class ErrorBody(BaseModel):
    """The one shape of every error response."""

    error: ErrorDetail


def _errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    return {status: {"model": ErrorBody} for status in statuses}


# What any /v1 route may answer besides its success (documented so clients and fuzzers know).
V1_ERRORS = _errors(401, 403, 404, 413, 415, 422, 429, 500, 503)
# And a route that the store's set-up may not allow (e.g. shredding without per-tenant keys).
CONFLICT = _errors(409)
