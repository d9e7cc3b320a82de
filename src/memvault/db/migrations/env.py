"""Alembic environment: memvault always hands in an open connection (see db/engine.py)."""

from __future__ import annotations

from alembic import context

from memvault.db.tables import metadata

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=metadata)
with context.begin_transaction():
    context.run_migrations()
