"""keyword index: blind BM25 postings and document lengths

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "memories", sa.Column("term_count", sa.Integer(), server_default="0", nullable=False)
    )
    op.create_table(
        "memory_terms",
        sa.Column("tenant_id", sa.Text(), nullable=False),
        sa.Column("user_id", sa.Text(), nullable=False),
        sa.Column("term", sa.BigInteger(), nullable=False),
        sa.Column("memory_id", sa.Uuid(), nullable=False),
        sa.Column("tf", sa.SmallInteger(), nullable=False),
        sa.Column("dl", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id", "memory_id"],
            ["memories.tenant_id", "memories.id"],
            name="fk_memory_terms_memory",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "tenant_id", "user_id", "term", "memory_id", name="pk_memory_terms"
        ),
    )
    op.create_index("ix_memory_terms_memory", "memory_terms", ["tenant_id", "memory_id"])


def downgrade() -> None:
    op.drop_table("memory_terms")
    op.drop_column("memories", "term_count")
