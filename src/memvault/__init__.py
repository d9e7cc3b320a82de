"""memvault: long-term memory for AI agents, encrypted and tenant-scoped, on PostgreSQL."""

from memvault.config import Settings
from memvault.errors import (
    ConfigurationError,
    ContentTooLong,
    DataDirInUse,
    InvalidInput,
    KeyMismatch,
    MemvaultError,
    NotFound,
    PayloadTooLarge,
    StoreUnavailable,
)
from memvault.models import HistoryEntry, MemoryPage, MemoryRecord, RotationReport
from memvault.service import AsyncMemory, Memory

__version__ = "0.1.0"

__all__ = [
    "AsyncMemory",
    "ConfigurationError",
    "ContentTooLong",
    "DataDirInUse",
    "HistoryEntry",
    "InvalidInput",
    "KeyMismatch",
    "Memory",
    "MemoryPage",
    "MemoryRecord",
    "MemvaultError",
    "NotFound",
    "PayloadTooLarge",
    "RotationReport",
    "Settings",
    "StoreUnavailable",
    "__version__",
]
