"""vector index outbox: memories whose points an external vector index (Qdrant) must sync

Revision ID: 0017
Revises: 0016

PostgreSQL stays the source of truth; an external index is fed from this outbox. Triggers on
``memory_chunks`` (a vector written or removed) and on ``memories`` (a field of the index's
payload changed) queue the memory in the writing transaction itself, so no code path that
writes a vector or a payload field can forget to, and a crash after the commit leaves the
entry for the worker. The triggers are created disabled: the store enables them when it opens
with an external index and disables them again under pgvector, whose writes then pay nothing.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None

APP_ROLE = "memvault_app"
_POLICY = (
    "(SELECT current_setting('memvault.all_tenants', true)) = 'on' "
    "OR tenant_id = (SELECT current_setting('memvault.tenant', true))"
)
# The memory columns the index's payload holds (vectorindex/payload.py): a change to any of
# them re-upserts the memory's points.
PAYLOAD_COLUMNS = (
    "user_id",
    "app_id",
    "project_id",
    "environment",
    "channel",
    "source",
    "tags",
    "categories",
    "importance",
    "memory_type",
    "tier",
    "created_at",
    "occurred_at",
)
_QUEUE = """
    INSERT INTO vector_index_outbox (tenant_id, memory_id, user_id, version)
    VALUES (r.tenant_id, {memory_id}, r.user_id, txid_current())
    ON CONFLICT (tenant_id, memory_id) DO UPDATE
    SET version = EXCLUDED.version, user_id = EXCLUDED.user_id, attempts = 0;
    PERFORM pg_notify('memvault_jobs', '');
"""


def _function(name: str, memory_id: str) -> str:
    return f"""
    CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE r record;
    BEGIN
        IF TG_OP = 'DELETE' THEN r := OLD; ELSE r := NEW; END IF;
        {_QUEUE.format(memory_id=memory_id)}
        RETURN NULL;
    END $$
    """


def upgrade() -> None:
    op.create_table(
        "vector_index_outbox",
        sa.Column("tenant_id", sa.Text(), nullable=False),
        sa.Column("memory_id", sa.Uuid(), nullable=False),
        sa.Column("user_id", sa.Text(), nullable=False),
        sa.Column("version", sa.BigInteger(), nullable=False),
        sa.Column("attempts", sa.Integer(), server_default="0", nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column(
            "available_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.Column("locked_until", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("tenant_id", "memory_id", name="pk_vector_index_outbox"),
    )
    op.create_index("ix_vector_index_outbox_ready", "vector_index_outbox", ["available_at"])
    op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON vector_index_outbox TO {APP_ROLE}")
    op.execute("ALTER TABLE vector_index_outbox ENABLE ROW LEVEL SECURITY")
    op.execute(
        f"CREATE POLICY tenant_isolation ON vector_index_outbox TO {APP_ROLE} "
        f"USING ({_POLICY}) WITH CHECK ({_POLICY})"
    )
    op.execute(_function("memvault_outbox_chunk", "r.memory_id"))
    op.execute(_function("memvault_outbox_memory", "r.id"))
    op.execute(
        "CREATE TRIGGER vector_index_outbox_chunks AFTER INSERT OR DELETE ON memory_chunks "
        "FOR EACH ROW EXECUTE FUNCTION memvault_outbox_chunk()"
    )
    old = ", ".join(f"OLD.{c}" for c in PAYLOAD_COLUMNS)
    new = ", ".join(f"NEW.{c}" for c in PAYLOAD_COLUMNS)
    op.execute(
        "CREATE TRIGGER vector_index_outbox_memories "
        f"AFTER UPDATE OF {', '.join(PAYLOAD_COLUMNS)} ON memories FOR EACH ROW "
        f"WHEN (({old}) IS DISTINCT FROM ({new})) EXECUTE FUNCTION memvault_outbox_memory()"
    )
    op.execute("ALTER TABLE memory_chunks DISABLE TRIGGER vector_index_outbox_chunks")
    op.execute("ALTER TABLE memories DISABLE TRIGGER vector_index_outbox_memories")


def downgrade() -> None:
    op.execute("DROP TRIGGER IF EXISTS vector_index_outbox_memories ON memories")
    op.execute("DROP TRIGGER IF EXISTS vector_index_outbox_chunks ON memory_chunks")
    op.execute("DROP FUNCTION IF EXISTS memvault_outbox_memory()")
    op.execute("DROP FUNCTION IF EXISTS memvault_outbox_chunk()")
    op.drop_table("vector_index_outbox")
