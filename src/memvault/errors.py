"""Every error memvault raises on purpose. Each knows its HTTP status and machine code.

    MemvaultError                     500 internal_error
    ├── InvalidInput                  422 invalid_input
    │   ├── ContentTooLong            422 content_too_long
    │   └── PIIRejected               422 pii_rejected          (never carries the values)
    ├── Unauthorized                  401 unauthorized          (no API key, or one not known)
    ├── Forbidden                     403 forbidden             (the key may not do this)
    ├── NotFound                      404 not_found
    ├── Conflict                      409 conflict              (not possible in this set-up)
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

from collections.abc import Sequence
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


def validation_problems(errors: Sequence[Any]) -> list[dict[str, str]]:
    """Pydantic validation errors as the envelope lists them: the field's path and what is
    wrong, never the value that was sent."""
    return [
        {
            "field": ".".join(str(p) for p in err["loc"]) or "body",
            "problem": str(err["msg"]).removeprefix("Value error, "),
        }
        for err in errors
    ]


def _subclasses(cls: type[MemvaultError]) -> list[type[MemvaultError]]:
    return [cls] + [s for sub in cls.__subclasses__() for s in _subclasses(sub)]


def for_code(code: str) -> type[MemvaultError] | None:
    """The class of this module that answers with ``code`` (the most specific one), or None."""
    known = {c.code: c for c in _subclasses(MemvaultError) if c.__module__ == __name__}
    return known.get(code)
