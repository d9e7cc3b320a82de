"""Shapes that exist only on the HTTP side: the error envelope and the errors a route documents.
Query strings and bodies are the operation table's models (``memvault.operations``)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

__all__ = ["CONFLICT", "V1_ERRORS", "ErrorBody"]


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
