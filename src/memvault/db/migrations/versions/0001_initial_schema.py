"""initial schema

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    # pgvector is needed from the embeddings on; failing here tells an operator early.
    op.execute("CREATE EXTENSION IF NOT EXISTS vector")
    op.create_table(
        "encryption_keys",
        sa.Column("key_id", sa.Text(), nullable=False),
        sa.Column(
            "first_used_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("key_id"),
    )
    op.create_table(
        "memories",
        sa.Column("tenant_id", sa.Text(), nullable=False),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("user_id", sa.Text(), nullable=False),
        sa.Column("app_id", sa.Text(), server_default="default", nullable=False),
        sa.Column("project_id", sa.Text(), nullable=True),
        sa.Column("environment", sa.Text(), nullable=True),
        sa.Column("channel", sa.Text(), server_default="_global", nullable=False),
        sa.Column("source", sa.Text(), nullable=True),
        sa.Column("tags", postgresql.ARRAY(sa.Text()), server_default="{}", nullable=False),
        sa.Column("ciphertext", sa.LargeBinary(), nullable=False),
        sa.Column("nonce", sa.LargeBinary(), nullable=False),
        sa.Column("key_id", sa.Text(), nullable=False),
        sa.Column("content_hash", sa.LargeBinary(), nullable=False),
        sa.Column(
            "metadata",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=sa.text("'{}'::jsonb"),
            nullable=False,
        ),
        sa.Column("categories", postgresql.ARRAY(sa.Text()), server_default="{}", nullable=False),
        sa.Column("importance", sa.SmallInteger(), nullable=True),
        sa.Column("memory_type", sa.Text(), server_default="persistent", nullable=False),
        sa.Column("valid_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("tier", sa.Text(), server_default="hot", nullable=False),
        sa.Column("embedded", sa.Boolean(), server_default=sa.text("false"), nullable=False),
        sa.Column("access_count", sa.Integer(), server_default="0", nullable=False),
        sa.Column("last_accessed", sa.DateTime(timezone=True), nullable=True),
        sa.Column(
            "occurred_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.Column(
            "updated_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint(
            "memory_type IN ('persistent', 'temporal')", name="ck_memories_memory_type"
        ),
        sa.CheckConstraint("tier IN ('hot', 'warm', 'cold')", name="ck_memories_tier"),
        sa.CheckConstraint("importance BETWEEN 1 AND 10", name="ck_memories_importance"),
        sa.PrimaryKeyConstraint("tenant_id", "id", name="pk_memories"),
    )
    op.create_index(
        "ix_memories_created_brin",
        "memories",
        ["created_at"],
        unique=False,
        postgresql_using="brin",
    )
    op.create_index(
        "ix_memories_expires",
        "memories",
        ["expires_at"],
        unique=False,
        postgresql_where=sa.text("expires_at IS NOT NULL"),
    )
    op.create_index("ix_memories_key", "memories", ["key_id"], unique=False)
    op.create_index("ix_memories_user", "memories", ["tenant_id", "user_id"], unique=False)
    op.create_index(
        "ix_memories_user_app", "memories", ["tenant_id", "user_id", "app_id"], unique=False
    )
    op.create_table(
        "memory_history",
        sa.Column("tenant_id", sa.Text(), nullable=False),
        sa.Column("id", sa.BigInteger(), sa.Identity(always=False), nullable=False),
        sa.Column("memory_id", sa.Uuid(), nullable=False),
        sa.Column("user_id", sa.Text(), nullable=False),
        sa.Column("action", sa.Text(), nullable=False),
        sa.Column("old_ciphertext", sa.LargeBinary(), nullable=True),
        sa.Column("old_nonce", sa.LargeBinary(), nullable=True),
        sa.Column("old_key_id", sa.Text(), nullable=True),
        sa.Column("new_ciphertext", sa.LargeBinary(), nullable=True),
        sa.Column("new_nonce", sa.LargeBinary(), nullable=True),
        sa.Column("new_key_id", sa.Text(), nullable=True),
        sa.Column("old_metadata", postgresql.JSONB(astext_type=sa.Text()), nullable=True),
        sa.Column("new_metadata", postgresql.JSONB(astext_type=sa.Text()), nullable=True),
        sa.Column("actor", sa.Text(), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.CheckConstraint(
            "action IN ('ADD', 'UPDATE', 'DELETE')", name="ck_memory_history_action"
        ),
        sa.PrimaryKeyConstraint("tenant_id", "id", name="pk_memory_history"),
    )
    op.create_index(
        "ix_memory_history_memory", "memory_history", ["tenant_id", "memory_id", "id"], unique=False
    )


def downgrade() -> None:
    op.drop_index("ix_memory_history_memory", table_name="memory_history")
    op.drop_table("memory_history")
    op.drop_index("ix_memories_user_app", table_name="memories")
    op.drop_index("ix_memories_user", table_name="memories")
    op.drop_index("ix_memories_key", table_name="memories")
    op.drop_index(
        "ix_memories_expires",
        table_name="memories",
        postgresql_where=sa.text("expires_at IS NOT NULL"),
    )
    op.drop_index("ix_memories_created_brin", table_name="memories", postgresql_using="brin")
    op.drop_table("memories")
    op.drop_table("encryption_keys")
