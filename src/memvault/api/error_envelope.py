"""One error envelope for every failure: ``{"error": {"code", "message", "details"}}``.

Nothing from an unexpected exception reaches the client: no trace, no SQL, no content.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from memvault.errors import MemvaultError, Unauthorized, validation_problems

log = logging.getLogger("memvault.api")


def envelope(
    status: int, code: str, message: str, details: dict[str, Any] | None = None
) -> JSONResponse:
    return JSONResponse(
        status_code=status,
        content={"error": {"code": code, "message": message, "details": details or {}}},
    )


async def _memvault_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, MemvaultError)
    response = envelope(exc.status_code, exc.code, exc.message, exc.details)
    if exc.retry_after is not None:
        response.headers["Retry-After"] = str(max(1, math.ceil(exc.retry_after)))
    if isinstance(exc, Unauthorized):
        response.headers["WWW-Authenticate"] = "Bearer"
    return response


async def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = exc.errors()
    if any(err["type"] == "json_invalid" for err in errors):
        return _invalid_json()
    if _body_problem(errors) and not _is_json(request.headers.get("content-type")):
        return envelope(
            415,
            "unsupported_media_type",
            "Send the request body as JSON, with 'Content-Type: application/json'.",
        )
    found = validation_problems(errors, _declared(request))
    return envelope(422, "invalid_input", "The request is not valid.", {"errors": found})


def _declared(request: Request) -> set[str]:
    """The parameter names the route declares: a field path may name them."""
    dependant = getattr(request.scope.get("route"), "dependant", None)
    names: set[str] = set()
    pending = [dependant] if dependant is not None else []
    while pending:
        current = pending.pop()
        for param in (*current.path_params, *current.query_params, *current.header_params):
            names.update((param.name, param.alias))
        pending.extend(current.dependencies)
    return names


def _body_problem(errors: Sequence[Any]) -> bool:
    return any(err["loc"][:1] == ("body",) for err in errors)


def _is_json(content_type: str | None) -> bool:
    media = (content_type or "").split(";")[0].strip().lower()
    return media == "application/json" or (
        media.startswith("application/") and media.endswith("+json")
    )


def _invalid_json() -> JSONResponse:
    return envelope(422, "invalid_json", "The request body is not valid JSON.")


_HTTP_CODES = {404: "not_found", 405: "method_not_allowed", 413: "payload_too_large"}


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 400:
        # FastAPI's answer to a body it could not parse at all (not UTF-8, nested too deep
        # for the parser): bad input like any other.
        return _invalid_json()
    code = _HTTP_CODES.get(exc.status_code, "http_error")
    return envelope(exc.status_code, code, str(exc.detail))


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    # The class name is enough to find the failure in the code; the message may hold data.
    log.error("unhandled %s on %s %s", type(exc).__name__, request.method, request.url.path)
    return envelope(500, "internal_error", "The server failed to handle this request.")


def install(app: FastAPI) -> None:
    app.add_exception_handler(MemvaultError, _memvault_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(HTTPException, _http_error)
    app.add_exception_handler(Exception, _unexpected)
