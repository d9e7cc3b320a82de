"""embeddings: chunks with vectors, the embedding job queue, the embedding cache

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from pgvector.sqlalchemy import Vector

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("memories", sa.Column("embedding_model", sa.Text(), nullable=True))
    op.create_table(
        "memory_chunks",
        sa.Column("tenant_id", sa.Text(), nullable=False),
        sa.Column("memory_id", sa.Uuid(), nullable=False),
        sa.Column("model", sa.Text(), nullable=False),
        sa.Column("chunk_index", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Text(), nullable=False),
        sa.Column("embedding", Vector(), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id", "memory_id"],
            ["memories.tenant_id", "memories.id"],
            name="fk_memory_chunks_memory",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "tenant_id", "memory_id", "model", "chunk_index", name="pk_memory_chunks"
        ),
    )
    op.create_index("ix_memory_chunks_owner", "memory_chunks", ["tenant_id", "user_id", "model"])
    op.create_table(
        "embedding_jobs",
        sa.Column("tenant_id", sa.Text(), nullable=False),
        sa.Column("id", sa.BigInteger(), sa.Identity(always=False), nullable=False),
        sa.Column("memory_id", sa.Uuid(), nullable=False),
        sa.Column("status", sa.Text(), server_default="queued", nullable=False),
        sa.Column("attempts", sa.Integer(), server_default="0", nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column(
            "available_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.Column("locked_until", sa.DateTime(timezone=True), nullable=True),
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
        sa.CheckConstraint(
            "status IN ('queued', 'processing', 'done', 'failed')", name="ck_embedding_jobs_status"
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id", "memory_id"],
            ["memories.tenant_id", "memories.id"],
            name="fk_embedding_jobs_memory",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("tenant_id", "id", name="pk_embedding_jobs"),
    )
    op.create_index(
        "ux_embedding_jobs_queued",
        "embedding_jobs",
        ["tenant_id", "memory_id"],
        unique=True,
        postgresql_where=sa.text("status = 'queued'"),
    )
    op.create_index(
        "ix_embedding_jobs_ready",
        "embedding_jobs",
        ["available_at"],
        postgresql_where=sa.text("status = 'queued'"),
    )
    op.create_index(
        "ix_embedding_jobs_leased",
        "embedding_jobs",
        ["locked_until"],
        postgresql_where=sa.text("status = 'processing'"),
    )
    op.create_index("ix_embedding_jobs_memory", "embedding_jobs", ["tenant_id", "memory_id"])
    op.create_table(
        "embedding_cache",
        sa.Column("key", sa.LargeBinary(), nullable=False),
        sa.Column("embedding", sa.LargeBinary(), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("key"),
        prefixes=["UNLOGGED"],
    )
    op.create_index("ix_embedding_cache_expires", "embedding_cache", ["expires_at"])


def downgrade() -> None:
    op.drop_table("embedding_cache")
    op.drop_table("embedding_jobs")
    op.drop_table("memory_chunks")
    op.drop_column("memories", "embedding_model")
