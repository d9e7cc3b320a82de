"""Every error memvault raises on purpose. Each knows its HTTP status and machine code.

    MemvaultError                     500 internal_error
    ├── InvalidInput                  422 invalid_input
    │   ├── ContentTooLong            422 content_too_long
    │   ├── PIIRejected               422 pii_rejected          (never carries the values)
    │   └── IdempotencyKeyReused      422 idempotency_key_reused (the key named another request)
    ├── Unauthorized                  401 unauthorized          (no API key, or one not known)
    ├── Forbidden                     403 forbidden             (the key may not do this)
    ├── NotFound                      404 not_found
    ├── Conflict                      409 conflict              (not possible in this set-up)
    │   ├── RequestInProgress         409 request_in_progress   (.retry_after: the same key runs)
    │   └── RequestDoneAnswerLost     409 request_done_answer_lost (it wrote, its answer was lost)
    ├── PayloadTooLarge               413 payload_too_large
    ├── RateLimited                   429 rate_limited          (.retry_after: seconds, or None)
    ├── ServerError                   500 internal_error        (a bug on the server's side)
    ├── ConfigurationError            500 configuration_error   (start-up: bad settings)
    │   ├── KeyMismatch               500 key_mismatch          (rows under keys we do not hold)
    │   └── DataDirInUse              500 data_dir_in_use       (another server owns the data dir)
    └── StoreUnavailable              503 store_unavailable     (database down or unreachable)
        ├── WriteConflict             503 write_conflict        (rolled back for a concurrent write)
        └── ServerUnreachable         503 server_unreachable    (client: no answer from the server)

Messages are written for the user who will read them: what went wrong and what to do. They
never carry memory content, keys or SQL.

``MemoryClient`` raises the class named by the ``code`` of the server's error envelope
(:func:`for_code`); a code this version does not know is a plain ``MemvaultError`` that carries
the server's status and code on the instance.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any


class MemvaultError(Exception):
    """Root of every error memvault raises on purpose."""

    # Per class; an instance may carry another (an unknown code answered by a server).
    status_code: int = 500
    code: str = "internal_error"

    def __init__(
        self,
        message: str,
        *,
        details: dict[str, Any] | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.details = details or {}
        # Seconds the caller should wait before trying again (429, 503); None: no advice.
        self.retry_after = retry_after

    def to_dict(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message, "details": self.details}}


class InvalidInput(MemvaultError):
    status_code = 422
    code = "invalid_input"


class ContentTooLong(InvalidInput):
    code = "content_too_long"


class PIIRejected(InvalidInput):
    code = "pii_rejected"


class Unauthorized(MemvaultError):
    status_code = 401
    code = "unauthorized"


class Forbidden(MemvaultError):
    status_code = 403
    code = "forbidden"


class NotFound(MemvaultError):
    status_code = 404
    code = "not_found"


class Conflict(MemvaultError):
    """The request is well formed but the store's set-up does not allow it (e.g. shredding a
    tenant while keys are not per tenant)."""

    status_code = 409
    code = "conflict"


class RequestInProgress(Conflict):
    """A request with the same ``Idempotency-Key`` is still running (on this server or
    another): nothing was done for this one; ask again after ``retry_after`` seconds."""

    code = "request_in_progress"


class RequestDoneAnswerLost(Conflict):
    """The request sent with this ``Idempotency-Key`` was run and its write was stored, but
    its answer was lost (its server stopped between storing and keeping the answer). Sending
    it again would not run it again: read what it wrote instead. Clients never resend it."""

    code = "request_done_answer_lost"


class IdempotencyKeyReused(InvalidInput):
    """The ``Idempotency-Key`` was sent before with another request (method, path or body):
    a key names one request; make a new one for a new request."""

    code = "idempotency_key_reused"


class PayloadTooLarge(MemvaultError):
    status_code = 413
    code = "payload_too_large"


class RateLimited(MemvaultError):
    """Too many requests; ``retry_after`` is how many seconds the server asks to wait."""

    status_code = 429
    code = "rate_limited"


class ServerError(MemvaultError):
    """The server failed on a request it should have handled; its log names the exception."""


class ConfigurationError(MemvaultError):
    code = "configuration_error"


class KeyMismatch(ConfigurationError):
    code = "key_mismatch"


class DataDirInUse(ConfigurationError):
    code = "data_dir_in_use"


class StoreUnavailable(MemvaultError):
    """The database is down, unreachable or not answering; ``retry_after`` says when to retry."""

    status_code = 503
    code = "store_unavailable"


class WriteConflict(StoreUnavailable):
    """PostgreSQL rolled the work back because a concurrent write conflicted with it (a
    deadlock or a serialization failure): nothing of it was stored, and retrying it is safe."""

    code = "write_conflict"


class ServerUnreachable(StoreUnavailable):
    """Raised by the HTTP client: the server could not be reached, or did not answer in time."""

    code = "server_unreachable"


def validation_problems(errors: Sequence[Any], known: Collection[str] = ()) -> list[dict[str, str]]:
    """Pydantic validation errors as the envelope lists them: the field's path and what is
    wrong, never the value that was sent nor a key the caller chose. A path names the schema:
    a part that is no field of memvault's models (nor in ``known``, the route's parameters) is
    a key of a free-form object, or a type tag, and shows as ``*``."""
    names = _schema_names() | frozenset(known)
    return [{"field": _path(err["loc"], names), "problem": _problem(err)} for err in errors]


_PLACES = frozenset({"body", "query", "path", "header", "cookie", "[key]"})
_names_of: dict[int, frozenset[str]] = {}


def _schema_names() -> frozenset[str]:
    """Every field name and alias of memvault's pydantic models loaded so far."""
    from pydantic import BaseModel  # only when an error is reported

    found, pending = [], list(BaseModel.__subclasses__())
    while pending:
        model = pending.pop()
        pending.extend(model.__subclasses__())
        if model.__module__.startswith("memvault"):
            found.append(model)
    cached = _names_of.get(len(found))
    if cached is None:
        names = {n for m in found for n in m.model_fields}
        names |= {f.alias for m in found for f in m.model_fields.values() if f.alias}
        cached = _names_of[len(found)] = frozenset(names)
    return cached


def _path(loc: Sequence[Any], names: frozenset[str]) -> str:
    parts: list[str] = []
    for p in loc:
        part = str(p) if isinstance(p, int) or p in names or p in _PLACES else "*"
        if not (part == "*" and parts[-1:] == ["*"]):
            parts.append(part)
    return ".".join(parts) or "body"


def _problem(err: Any) -> str:
    message = str(err["msg"]).removeprefix("Value error, ")
    # A parser's detail quotes the input ("..., found `S` at 1"): the kind is enough.
    return message.split(", ", 1)[0] if str(err.get("type", "")).endswith("_parsing") else message


def _subclasses(cls: type[MemvaultError]) -> list[type[MemvaultError]]:
    return [cls] + [s for sub in cls.__subclasses__() for s in _subclasses(sub)]


def for_code(code: str) -> type[MemvaultError] | None:
    """The class of this module that answers with ``code`` (the most specific one), or None."""
    known = {c.code: c for c in _subclasses(MemvaultError) if c.__module__ == __name__}
    return known.get(code)
