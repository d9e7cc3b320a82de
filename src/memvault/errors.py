"""Every error memvault raises on purpose. Each knows its HTTP status and machine code.

    MemvaultError                     500 internal_error
    ├── InvalidInput                  422 invalid_input
    │   ├── ContentTooLong            422 content_too_long
    │   └── PIIRejected               422 pii_rejected          (never carries the values)
    ├── NotFound                      404 not_found
    ├── PayloadTooLarge               413 payload_too_large
    ├── ConfigurationError            500 configuration_error   (start-up: bad settings)
    │   ├── KeyMismatch               500 key_mismatch          (rows under keys we do not hold)
    │   └── DataDirInUse              500 data_dir_in_use       (another server owns the data dir)
    └── StoreUnavailable              503 store_unavailable     (database down or unreachable)

Messages are written for the user who will read them: what went wrong and what to do. They
never carry memory content, keys or SQL.
"""

from __future__ import annotations

from typing import Any, ClassVar


class MemvaultError(Exception):
    """Root of every error memvault raises on purpose."""

    status_code: ClassVar[int] = 500
    code: ClassVar[str] = "internal_error"

    def __init__(self, message: str, *, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details or {}

    def to_dict(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message, "details": self.details}}


class InvalidInput(MemvaultError):
    status_code = 422
    code = "invalid_input"


class ContentTooLong(InvalidInput):
    code = "content_too_long"


class PIIRejected(InvalidInput):
    code = "pii_rejected"


class NotFound(MemvaultError):
    status_code = 404
    code = "not_found"


class PayloadTooLarge(MemvaultError):
    status_code = 413
    code = "payload_too_large"


class ConfigurationError(MemvaultError):
    code = "configuration_error"


class KeyMismatch(ConfigurationError):
    code = "key_mismatch"


class DataDirInUse(ConfigurationError):
    code = "data_dir_in_use"


class StoreUnavailable(MemvaultError):
    status_code = 503
    code = "store_unavailable"
