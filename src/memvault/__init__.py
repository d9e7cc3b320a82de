"""memvault: long-term memory for AI agents, encrypted and tenant-scoped, on PostgreSQL."""

import typing as _typing
from importlib import import_module as _import_module

from memvault.errors import (
    ConfigurationError,
    ContentTooLong,
    DataDirInUse,
    Forbidden,
    InvalidInput,
    KeyMismatch,
    MemvaultError,
    NotFound,
    PayloadTooLarge,
    PIIRejected,
    RateLimited,
    ServerError,
    ServerUnreachable,
    StoreUnavailable,
    Unauthorized,
    WriteConflict,
)

if _typing.TYPE_CHECKING:
    from memvault.admin import Admin, AsyncAdmin
    from memvault.client import AsyncMemoryClient, MemoryClient
    from memvault.config import Settings
    from memvault.models import HistoryEntry, MemoryPage, MemoryRecord, RotationReport
    from memvault.service import AsyncMemory, Memory

# The heavy half of the surface (the store, the HTTP client, settings) loads on first use, so
# `import memvault` and every CLI command start in a fraction of a second.
_LAZY = {
    "Admin": "memvault.admin",
    "AsyncAdmin": "memvault.admin",
    "AsyncMemory": "memvault.service",
    "Memory": "memvault.service",
    "AsyncMemoryClient": "memvault.client",
    "MemoryClient": "memvault.client",
    "Settings": "memvault.config",
    "HistoryEntry": "memvault.models",
    "MemoryPage": "memvault.models",
    "MemoryRecord": "memvault.models",
    "RotationReport": "memvault.models",
}


if not _typing.TYPE_CHECKING:  # the type checker reads the names above, and refuses any other

    def __getattr__(name: str) -> object:
        module = _LAZY.get(name)
        if module is None:
            raise AttributeError(f"module 'memvault' has no attribute {name!r}")
        value = getattr(_import_module(module), name)
        globals()[name] = value
        return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__version__ = "0.1.0"

__all__ = [
    "Admin",
    "AsyncAdmin",
    "AsyncMemory",
    "AsyncMemoryClient",
    "ConfigurationError",
    "ContentTooLong",
    "DataDirInUse",
    "Forbidden",
    "HistoryEntry",
    "InvalidInput",
    "KeyMismatch",
    "Memory",
    "MemoryClient",
    "MemoryPage",
    "MemoryRecord",
    "MemvaultError",
    "NotFound",
    "PIIRejected",
    "PayloadTooLarge",
    "RateLimited",
    "RotationReport",
    "ServerError",
    "ServerUnreachable",
    "Settings",
    "StoreUnavailable",
    "Unauthorized",
    "WriteConflict",
    "__version__",
]
