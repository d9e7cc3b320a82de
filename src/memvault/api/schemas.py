"""Request shapes that exist only on the HTTP side (query strings); bodies reuse models.py."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from memvault.errors import InvalidInput
from memvault.models import HistoryEntry, Owner

__all__ = ["V1_ERRORS", "DeleteAllParams", "HistoryPage", "ListParams", "Owner"]


class ListParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    user_id: str
    app_id: str | None = None
    project_id: str | None = None
    environment: str | None = None
    channel: str | None = None
    source: str | None = None
    tags: list[str] = Field(default=[], description="repeat for several: all must match")
    metadata: str | None = Field(default=None, description='JSON object, e.g. {"topic":"food"}')
    created_after: datetime | None = None
    created_before: datetime | None = None
    tags_any: list[str] = Field(default=[], description="repeat for several: any may match")
    categories: list[str] = Field(default=[], description="repeat for several: any may match")
    memory_type: Literal["persistent", "temporal"] | None = None
    tier: Literal["hot", "warm", "cold"] | None = None
    min_importance: int | None = None
    occurred_after: datetime | None = None
    occurred_before: datetime | None = None
    limit: int = 20
    cursor: str | None = None

    def filters(self) -> dict[str, Any]:
        values = self.model_dump(exclude={"metadata"})
        if self.metadata is not None:
            try:
                values["metadata"] = json.loads(self.metadata)
            except ValueError:
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


class HistoryPage(BaseModel):
    results: list[HistoryEntry]


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
