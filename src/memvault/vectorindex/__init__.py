"""The vector index recall searches: pgvector (the default) or Qdrant, behind one protocol."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memvault.errors import ConfigurationError
from memvault.vectorindex.base import IndexHit, IndexUnavailable, VectorIndex
from memvault.vectorindex.pgvector import PgVectorIndex

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

    from memvault.config import Settings
    from memvault.db.vectors import ScopeSizes

__all__ = ["IndexHit", "IndexUnavailable", "PgVectorIndex", "VectorIndex", "open_index"]


def open_index(
    engine: AsyncEngine, settings: Settings, sizes: ScopeSizes, *, iterative_scans: bool = False
) -> VectorIndex:
    """The index ``settings.vector_index`` names (Qdrant's libraries are imported only then);
    ``iterative_scans``: the server's pgvector has them (``db.vectors.iterative_scans``)."""
    if settings.vector_index == "pgvector":
        return PgVectorIndex(engine, settings, sizes, iterative_scans=iterative_scans)
    from memvault.vectorindex.engines import ClientStore, EdgeStore, PointStore
    from memvault.vectorindex.qdrant import QdrantIndex

    store: PointStore
    try:
        if settings.vector_index == "qdrant-edge":
            store = EdgeStore(settings.data_dir / "qdrant")
        elif settings.qdrant_url is None:
            raise ConfigurationError("vector_index=qdrant needs MEMVAULT_QDRANT_URL")
        else:
            key = settings.qdrant_api_key
            store = ClientStore(settings.qdrant_url, key.get_secret_value() if key else None)
    except ImportError as exc:  # the optional extra is not installed
        raise ConfigurationError(
            f"vector_index={settings.vector_index} needs Qdrant's libraries: "
            "pip install 'memvault[qdrant]'"
        ) from exc
    return QdrantIndex(store, engine, settings)
