"""The write pipeline's graph step: what a memory's text claims, extracted and embedded before
the memory's transaction and written inside it, so a memory and what is derived from it commit
together (and go together: see the cleanup triggers of migration 0007)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from uuid import UUID

from sqlalchemy.ext.asyncio import AsyncConnection

from memvault.errors import MemvaultError
from memvault.graph.extract import extract
from memvault.graph.store import GraphWriter, Owner, Prepared

if TYPE_CHECKING:
    from memvault.backend import Backend

log = logging.getLogger(__name__)


@dataclass
class Derivation:
    writer: GraphWriter
    prepared: Prepared
    reference_time: datetime
    source: str

    async def write(self, conn: AsyncConnection, memory_id: UUID) -> None:
        await self.writer.apply(
            conn,
            self.prepared,
            memory_id=memory_id,
            reference_time=self.reference_time,
            source=self.source,
        )


def speaker_of(metadata: dict[str, Any]) -> str | None:
    """Who said a text: a conversation turn's named speaker; the user (``None``) otherwise."""
    speaker = metadata.get("speaker")
    return speaker if isinstance(speaker, str) and speaker not in ("user", "") else None


async def derive(
    backend: Backend,
    owner: Owner,
    text: str,
    *,
    metadata: dict[str, Any],
    occurred_at: datetime | None,
) -> Derivation | None:
    """Extract and embed what ``text`` claims; ``None`` when it claims nothing (or the
    extractor failed: the memory is stored all the same, and the failure logged)."""
    reference = occurred_at or datetime.now(UTC)
    try:
        extraction = await extract(
            text, speaker=speaker_of(metadata), reference_time=reference, llm=backend.judge.llm
        )
    except MemvaultError as exc:
        log.warning("graph extraction failed (%s); the memory is stored without it", exc.code)
        return None
    if extraction.empty:
        return None
    writer = GraphWriter(backend, owner)
    prepared = await writer.prepare(extraction)
    return Derivation(writer, prepared, reference, extraction.extractor)
