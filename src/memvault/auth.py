"""API keys: who is calling, for which tenant, allowed to do what.

A key reads ``mv_<prefix>_<secret>``: the prefix (12 hex characters) finds the row, the secret
(256 random bits) proves possession. Only SHA-256 of the secret is stored — with that much
entropy a fast hash is as safe as a slow one, and a slow one would tax every request. Each
request looks its key up afresh, so a revoked key stops working at once, in every process.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field

from memvault.db import api_keys as db_keys
from memvault.db.units import reading, transaction
from memvault.errors import InvalidInput, NotFound, Unauthorized

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

Scope = Literal["read", "write", "admin", "operator"]
SCOPES: tuple[Scope, ...] = ("read", "write", "admin", "operator")
# What a scope brings with it. admin: whoever may administer a tenant may also read and write
# it. operator: the server's own view (its settings, jobs that span tenants) and all of its
# tenant's; only `memvault api-keys create --scopes operator` grants it (the dashboard offers
# the tenant scopes only), and the local mode (auth off) is one.
_INCLUDES: dict[str, frozenset[str]] = {
    "admin": frozenset({"read", "write"}),
    "operator": frozenset({"read", "write", "admin"}),
}
_KEY = re.compile(r"mv_(?P<prefix>[0-9a-f]{12})_(?P<secret>[A-Za-z0-9_-]{43})")


class ApiKeyInfo(BaseModel):
    id: uuid.UUID
    tenant_id: str
    name: str | None
    prefix: str
    scopes: list[str]
    created_at: datetime
    revoked_at: datetime | None


class CreatedKey(ApiKeyInfo):
    key: str = Field(description="the whole key; shown once, never stored")


@dataclass(frozen=True)
class Principal:
    """The caller of one request."""

    tenant_id: str
    scopes: frozenset[str]
    key_prefix: str | None  # None: authentication is off

    def allows(self, scope: Scope) -> bool:
        return scope in self.scopes or any(scope in _INCLUDES.get(s, ()) for s in self.scopes)

    @property
    def actor(self) -> str:
        return f"api-key:{self.key_prefix}" if self.key_prefix else "api"


def _hash(secret: str) -> bytes:
    return hashlib.sha256(secret.encode()).digest()


def parse_scopes(raw: str | Iterable[str]) -> list[Scope]:
    items = raw.split(",") if isinstance(raw, str) else list(raw)
    wanted = {s.strip().lower() for s in items if s.strip()}
    unknown = sorted(wanted - set(SCOPES))
    if unknown or not wanted:
        raise InvalidInput(
            f"Scopes must be a comma-separated subset of {', '.join(SCOPES)}.",
            details={"unknown": unknown},
        )
    return [s for s in SCOPES if s in wanted]


async def create_key(
    engine: AsyncEngine, tenant_id: str, scopes: str | Iterable[str], name: str | None = None
) -> CreatedKey:
    if not tenant_id.strip() or len(tenant_id) > 255:
        raise InvalidInput("A tenant id must be 1-255 characters.", details={"field": "tenant"})
    granted = parse_scopes(scopes)
    prefix, secret = secrets.token_hex(6), secrets.token_urlsafe(32)
    async with transaction(engine) as conn:
        row = await db_keys.insert_key(
            conn,
            tenant_id=tenant_id,
            name=name,
            prefix=prefix,
            secret_hash=_hash(secret),
            scopes=granted,
        )
    return CreatedKey(
        **ApiKeyInfo.model_validate(row, from_attributes=True).model_dump(),
        key=f"mv_{prefix}_{secret}",
    )


async def list_keys(engine: AsyncEngine, tenant_id: str | None = None) -> list[ApiKeyInfo]:
    async with reading(engine) as conn:
        rows = await db_keys.list_keys(conn, tenant_id)
    return [ApiKeyInfo.model_validate(r, from_attributes=True) for r in rows]


async def revoke_key(engine: AsyncEngine, key: str) -> ApiKeyInfo:
    """Revoke by id, prefix or the whole key; revoking twice keeps the first time."""
    match = _KEY.fullmatch(key)
    prefix = match["prefix"] if match else key.strip()
    async with transaction(engine) as conn:
        row = await db_keys.revoke(conn, prefix)
    if row is None:
        raise NotFound("No API key has that id or prefix.")
    return ApiKeyInfo.model_validate(row, from_attributes=True)


class KeyRefused(Unauthorized):
    """One message for every failure, so a caller cannot tell a revoked key from a wrong one;
    ``reason`` (missing, malformed, unknown, revoked) is for the server's log."""

    def __init__(self, reason: str) -> None:
        super().__init__("A valid API key is required: send 'Authorization: Bearer <key>'.")
        self.reason = reason


async def authenticate(engine: AsyncEngine, authorization: str | None) -> Principal:
    if not authorization:
        raise KeyRefused("missing")
    scheme, _, token = authorization.partition(" ")
    match = _KEY.fullmatch(token.strip()) if scheme.lower() == "bearer" else None
    if match is None:
        raise KeyRefused("malformed")
    async with reading(engine) as conn:
        row = await db_keys.by_prefix(conn, match["prefix"])
    if row is None or not hmac.compare_digest(row.secret_hash, _hash(match["secret"])):
        raise KeyRefused("unknown")
    if row.revoked_at is not None:
        raise KeyRefused("revoked")
    return Principal(row.tenant_id, frozenset(row.scopes), row.prefix)
