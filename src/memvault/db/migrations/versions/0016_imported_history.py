"""history brought in by an import says so: who imported it and when, the export's claims kept apart

Revision ID: 0016
Revises: 0015

An import restores a memory's history as the export wrote it, but who made a change and when
are then only what the file claims. ``actor`` and ``created_at`` of an imported row are the
import's own (who ran it, when); the exported ones are kept as ``claimed_actor`` and
``claimed_at``. Rows written by the store itself leave both null.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("memory_history", sa.Column("claimed_actor", sa.Text(), nullable=True))
    op.add_column(
        "memory_history", sa.Column("claimed_at", sa.DateTime(timezone=True), nullable=True)
    )


def downgrade() -> None:
    op.drop_column("memory_history", "claimed_at")
    op.drop_column("memory_history", "claimed_actor")
