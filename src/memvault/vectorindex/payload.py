"""How memories become Qdrant points: collection names, point ids, the payload, and the part
of a search's filters the payload can answer.

One collection per (tenant, user, model): a user's points are apart from every other user's
(no filter to forget), erasing a user drops their collections, and each collection holds one
vector size. The names are hashes, so no id of any length or alphabet can break one.

A point is one chunk vector. Its id is derived from the memory, the model, the chunk and the
content's hash: a content change makes new ids (the old points are removed once the new ones
are in), a payload change keeps them (the upsert overwrites the payload).
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass
from typing import Any

from memvault.db.vector_outbox import IndexedChunk
from memvault.models import MemoryFilter

_IDS = uuid.UUID("8f3c2a61-5d0e-4b7e-9a3f-6c1d2e4b5a70")
PREFIX = "memvault"


def _h(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()[:16]


def owner_prefix(tenant_id: str, user_id: str | None = None) -> str:
    """The start of the names of a tenant's collections (one user's, given one)."""
    head = f"{PREFIX}-{_h(tenant_id)}-"
    return head if user_id is None else f"{head}{_h(user_id)}-"


def collection(tenant_id: str, user_id: str, model: str) -> str:
    return f"{owner_prefix(tenant_id, user_id)}{_h(model)}"


def point_id(chunk: IndexedChunk) -> str:
    key = f"{chunk.tenant_id}/{chunk.memory_id}/{chunk.model}/{chunk.chunk_index}/"
    return str(uuid.uuid5(_IDS, key + chunk.content_hash.hex()))


def _epoch(chunk: IndexedChunk, name: str) -> float:
    value = getattr(chunk, name)
    return float(value.timestamp())


def payload(chunk: IndexedChunk) -> dict[str, Any]:
    """What the index holds beside the vector: enough to filter by, never content."""
    return {
        "memory_id": str(chunk.memory_id),
        "tenant_id": chunk.tenant_id,
        "user_id": chunk.user_id,
        "app_id": chunk.app_id,
        "project_id": chunk.project_id,
        "environment": chunk.environment,
        "channel": chunk.channel,
        "source": chunk.source,
        "tags": list(chunk.tags),
        "categories": list(chunk.categories),
        "importance": chunk.importance,
        "memory_type": chunk.memory_type,
        "tier": chunk.tier,
        "created_at": _epoch(chunk, "created_at"),
        "occurred_at": _epoch(chunk, "occurred_at"),
        "model": chunk.model,
        "chunk": chunk.chunk_index,
    }


@dataclass(frozen=True, slots=True)
class Match:
    key: str
    value: str


@dataclass(frozen=True, slots=True)
class AnyOf:
    key: str
    values: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Range:
    key: str
    gte: float | None = None
    lt: float | None = None


Condition = Match | AnyOf | Range
_EQUAL = ("app_id", "project_id", "environment", "channel", "source", "memory_type", "tier")
_SPANS = (
    ("created_at", "created_after", "created_before"),
    ("occurred_at", "occurred_after", "occurred_before"),
)


def conditions(f: MemoryFilter) -> list[Condition]:
    """The filters the payload answers, as conditions every point must meet. The rest
    (metadata containment, expiry) and all of these again are applied by PostgreSQL to the
    candidates, so a payload that lags its row can hide a memory, never show a wrong one."""
    found: list[Condition] = [Match(name, getattr(f, name)) for name in _EQUAL if getattr(f, name)]
    found += [Match("tags", tag) for tag in f.tags]
    found += [
        AnyOf(key, tuple(values))
        for key, values in (
            ("tags", f.tags_any),
            ("categories", f.categories),
            ("channel", f.channels),
        )
        if values
    ]
    if f.min_importance is not None:
        found.append(Range("importance", gte=float(f.min_importance)))
    for key, after, before in _SPANS:
        low, high = getattr(f, after), getattr(f, before)
        if low is not None or high is not None:
            found.append(
                Range(
                    key,
                    gte=None if low is None else low.timestamp(),
                    lt=None if high is None else high.timestamp(),
                )
            )
    return found
