"""Settings: one typed object, read from ``MEMVAULT_*`` environment variables by entry points only.

The library never reads the environment itself; callers build :class:`Settings` (or let an entry
point do it with ``Settings()``) and pass it down.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR"]


def _default_data_dir() -> Path:
    return Path.home() / ".local" / "share" / "memvault"


class Settings(BaseSettings):
    """Everything memvault can be configured with. Unset ``database_url`` means embedded mode."""

    model_config = SettingsConfigDict(env_prefix="MEMVAULT_", extra="ignore", frozen=True)

    database_url: SecretStr | None = Field(
        default=None,
        description="postgresql:// URL of a server with pgvector; unset starts the embedded one.",
    )
    data_dir: Path = Field(default_factory=_default_data_dir)
    encryption_key: SecretStr | None = Field(
        default=None,
        description="Active AES-256 key, base64 of 32 bytes. Unset in embedded mode: a key file "
        "in the data dir is used (created on first start).",
    )
    encryption_old_keys: SecretStr | None = Field(
        default=None,
        description="Comma-separated base64 keys that may still decrypt rows while rotating.",
    )
    redis_url: SecretStr | None = None
    host: str = "127.0.0.1"
    port: int = Field(default=8765, ge=1, le=65535)
    log_level: LogLevel = "INFO"

    max_content_chars: int = Field(default=32_000, ge=1)
    max_body_bytes: int = Field(default=1_048_576, ge=1024)
    max_page_size: int = Field(default=100, ge=1)
    pool_size: int = Field(default=10, ge=1)

    @property
    def embedded(self) -> bool:
        return self.database_url is None

    @property
    def key_file(self) -> Path:
        return self.data_dir / "keyring.json"

    @property
    def pg_data_dir(self) -> Path:
        return self.data_dir / "pg"
