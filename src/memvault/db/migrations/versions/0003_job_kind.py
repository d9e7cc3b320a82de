"""job kind: 'ingest' jobs also run dedup and enrichment after embedding (background adds)

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "embedding_jobs", sa.Column("kind", sa.Text(), server_default="embed", nullable=False)
    )
    op.create_check_constraint(
        "ck_embedding_jobs_kind", "embedding_jobs", "kind IN ('embed', 'ingest')"
    )


def downgrade() -> None:
    op.drop_constraint("ck_embedding_jobs_kind", "embedding_jobs")
    op.drop_column("embedding_jobs", "kind")
