"""idempotent_writes.committed_at: a keyed write's claim marked by the write's own commit

Revision ID: 0025
Revises: 0024

A keyed request whose write committed but whose server died before it kept the answer left
a claim that lapsed, and the retry ran the write again. The request's first write
transaction now marks its claim in the same transaction: a claim that committed is never
taken by a retry (``memvault.idempotency``).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "idempotent_writes", sa.Column("committed_at", sa.DateTime(timezone=True), nullable=True)
    )


def downgrade() -> None:
    op.drop_column("idempotent_writes", "committed_at")
