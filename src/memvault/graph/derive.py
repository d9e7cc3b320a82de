"""The write pipeline's graph step: what a memory's text claims, extracted and embedded before
the memory's transaction and written inside it, so a memory and what is derived from it commit
together (and go together: see the cleanup triggers of migration 0007)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from uuid import UUID

from memvault.db import graph as graph_db
from memvault.errors import MemvaultError
from memvault.graph.claims import Extraction
from memvault.graph.extract import extract
from memvault.graph.writer import GraphWriter, Owner, Prepared, prepare_many

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncConnection

    from memvault.backend import Backend
    from memvault.llm.base import LLM

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


async def lock_names(conn: AsyncConnection, derivations: Iterable[Derivation | None]) -> None:
    """Every name the derivations may create, locked in one global order before any of them is
    written in ``conn``'s transaction (a batch of memories writes several); their writers
    then take no lock on those names again."""
    held = [d for d in derivations if d is not None]
    await graph_db.lock_owned_names(
        conn,
        [
            (d.writer.owner.tenant_id, d.writer.owner.user_id, name)
            for d in held
            for name in d.writer.names(d.prepared)
        ],
    )
    for d in held:
        d.writer.hold(d.writer.names(d.prepared))


async def write_many(
    conn: AsyncConnection, written: Iterable[tuple[Derivation | None, UUID]]
) -> None:
    """Each derivation written for its memory in ``conn``'s transaction (after
    :func:`lock_names`), the batch's mentions and fact events written together at the end."""
    pairs = [(d, memory_id) for d, memory_id in written if d is not None]
    writers = {id(d.writer): d.writer for d, _ in pairs}
    # A batch cut into slices has a writer a slice for one user: they share what they defer
    # and the entities they read up front.
    first: dict[tuple[str, str], GraphWriter] = {}
    for writer in writers.values():
        writer.defer(like=first.get(_user(writer)))
        first.setdefault(_user(writer), writer)
    for writer in writers.values():
        lead = first[_user(writer)]
        if lead is writer:
            batch = [d.prepared for d, _ in pairs if _user(d.writer) == _user(writer)]
            await writer.preload(conn, batch)
        else:
            await writer.preload(conn, [], like=lead)
    try:
        # Every name first, then each user's claims' subjects locked and their current facts
        # read at once, then the writes (which find both in hand).
        subjects: dict[tuple[str, str], list[tuple[UUID, str]]] = {}
        for derivation, _ in pairs:
            writer = derivation.writer
            await writer.resolve_all(conn, derivation.prepared)
            subjects.setdefault(_user(writer), []).extend(writer.subjects(derivation.prepared))
        for user, pairs_of_user in subjects.items():
            await first[user].preload_facts(conn, pairs_of_user)
        for derivation, memory_id in pairs:
            await derivation.write(conn, memory_id)
        for writer in writers.values():
            await writer.flush(conn)
    finally:  # what was read holds for this transaction only, committed or not
        for writer in writers.values():
            writer.forget()


def _user(writer: GraphWriter) -> tuple[str, str]:
    return writer.owner.tenant_id, writer.owner.user_id


def speaker_of(metadata: dict[str, Any]) -> str | None:
    """Who said a text: a conversation turn's named speaker; the user (``None``) otherwise."""
    speaker = metadata.get("speaker")
    return speaker if isinstance(speaker, str) and speaker not in ("user", "") else None


@dataclass(frozen=True)
class Source:
    """A text to derive from, and whose it is."""

    owner: Owner
    text: str
    metadata: dict[str, Any]
    occurred_at: datetime | None


async def derive(
    backend: Backend,
    owner: Owner,
    text: str,
    *,
    metadata: dict[str, Any],
    occurred_at: datetime | None,
) -> Derivation | None:
    """What ``text`` claims, extracted and embedded; ``None`` when it claims nothing."""
    (derived,) = await derive_many(backend, [Source(owner, text, metadata, occurred_at)])
    return derived


async def derive_many(
    backend: Backend, sources: list[Source], *, offline: bool = False
) -> list[Derivation | None]:
    """What each text claims: the extractions at once, then one embedding call for all their
    names and claims. A text whose extraction failed gets ``None`` (its memory is stored all
    the same, and the failure logged). ``offline``: the rules even when an LLM is set."""
    pending = await extract_many(backend, sources, offline=offline)
    found = [p.claimed for p in pending if p.claimed is not None]
    return finish(backend, pending, iter(await prepare_many(backend, found)))


@dataclass(frozen=True)
class Pending:
    """A text's extraction, waiting for the vectors of its names and claims."""

    source: Source
    reference_time: datetime
    extraction: Extraction | None

    @property
    def claimed(self) -> Extraction | None:
        """The extraction when it claims something."""
        return (
            self.extraction if self.extraction is not None and not self.extraction.empty else None
        )


async def extract_many(
    backend: Backend, sources: list[Source], *, offline: bool = False
) -> list[Pending]:
    """Each text's extraction: the LLM's when one is configured, unless ``offline``."""
    references = [s.occurred_at or datetime.now(UTC) for s in sources]
    llm = None if offline else backend.judge.llm
    extractions = await asyncio.gather(
        *(_extract(s, r, llm) for s, r in zip(sources, references, strict=True))
    )
    return [Pending(*p) for p in zip(sources, references, extractions, strict=True)]


def finish(
    backend: Backend, pending: list[Pending], prepared: Iterator[Prepared]
) -> list[Derivation | None]:
    """Each pending extraction with its vectors (``prepared`` holds one per extraction that
    claims something, in order); ``None`` where it claims nothing."""
    derived: list[Derivation | None] = []
    # One writer an owner: the names a batch repeats (the speakers of every turn) are resolved
    # once, not once a memory. The derivations are written in one transaction.
    writers: dict[Owner, GraphWriter] = {}
    for p in pending:
        claimed = p.claimed
        if claimed is None:
            derived.append(None)
            continue
        owner = p.source.owner
        writer = writers.get(owner) or writers.setdefault(owner, GraphWriter(backend, owner))
        derived.append(Derivation(writer, next(prepared), p.reference_time, claimed.extractor))
    return derived


async def _extract(source: Source, reference: datetime, llm: LLM | None) -> Extraction | None:
    try:
        return await extract(
            source.text, speaker=speaker_of(source.metadata), reference_time=reference, llm=llm
        )
    except MemvaultError as exc:
        log.warning("graph extraction failed (%s); the memory is stored without it", exc.code)
        return None
