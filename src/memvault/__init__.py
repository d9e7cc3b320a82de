"""memvault: long-term memory for AI agents, encrypted and tenant-scoped, on PostgreSQL."""

from memvault.admin import Admin, AsyncAdmin
from memvault.client import AsyncMemoryClient, MemoryClient
from memvault.config import Settings
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
from memvault.models import HistoryEntry, MemoryPage, MemoryRecord, RotationReport
from memvault.service import AsyncMemory, Memory

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
