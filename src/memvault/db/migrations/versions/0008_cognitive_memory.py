"""cognitive memory: conversations and turns, working memory, tool invocations, strategies,
goals and their blockers, user profiles — every table tenant-first with row-level security

Revision ID: 0008
Revises: 0006

Turns hold no text of their own: a turn is a memory (sealed, embedded, searchable) and its row
links the memory to its place in the conversation. Sealed rows keep one payload per row bound to
the table and primary key. Turns and tool invocations are appended in time order, so a BRIN
index on their timestamps covers time-range scans at a fraction of a btree's size; the per-user
btree indexes serve "the latest of this user". working_memory is UNLOGGED: a live session's
scratch space, every row expiring.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from pgvector.sqlalchemy import Vector
from sqlalchemy.dialects import postgresql

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

APP_ROLE = "memvault_app"
TABLES = (
    "conversations",
    "conversation_turns",
    "working_memory",
    "tool_invocations",
    "strategies",
    "goals",
    "goal_blockers",
    "user_profiles",
)
# As migration 0005: each setting read once per statement.
_POLICY = (
    "(SELECT current_setting('memvault.all_tenants', true)) = 'on' "
    "OR tenant_id = (SELECT current_setting('memvault.tenant', true))"
)


def upgrade() -> None:
    op.create_table(
        "conversations",
        sa.Column("tenant_id", sa.Text(), nullable=False),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("user_id", sa.Text(), nullable=False),
        sa.Column("channel", sa.Text(), server_default="_global", nullable=False),
        sa.Column("ciphertext", sa.LargeBinary(), nullable=False),
        sa.Column("nonce", sa.LargeBinary(), nullable=False),
        sa.Column("key_id", sa.Text(), nullable=False),
        sa.Column("turn_count", sa.Integer(), server_default="0", nullable=False),
        sa.Column(
            "started_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.Column("last_turn_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("consolidated_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("archived", sa.Boolean(), server_default=sa.text("false"), nullable=False),
        sa.PrimaryKeyConstraint("tenant_id", "id", name="pk_conversations"),
    )
    op.create_index("ix_conversations_key", "conversations", ["key_id"], unique=False)
    op.create_index(
        "ix_conversations_owner",
        "conversations",
        ["tenant_id", "user_id", "channel", "started_at"],
        unique=False,
    )
    op.create_table(
        "conversation_turns",
        sa.Column("tenant_id", sa.Text(), nullable=False),
        sa.Column("conversation_id", sa.Uuid(), nullable=False),
        sa.Column("turn_index", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Text(), nullable=False),
        sa.Column("channel", sa.Text(), server_default="_global", nullable=False),
        sa.Column("memory_id", sa.Uuid(), nullable=False),
        sa.Column("role", sa.Text(), nullable=False),
        sa.Column("model", sa.Text(), nullable=True),
        sa.Column("token_count", sa.Integer(), server_default="0", nullable=False),
        sa.Column(
            "occurred_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id", "conversation_id"],
            ["conversations.tenant_id", "conversations.id"],
            name="fk_conversation_turns_conversation",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id", "memory_id"],
            ["memories.tenant_id", "memories.id"],
            name="fk_conversation_turns_memory",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "tenant_id", "conversation_id", "turn_index", name="pk_conversation_turns"
        ),
    )
    op.create_index(
        "ix_conversation_turns_memory",
        "conversation_turns",
        ["tenant_id", "memory_id"],
        unique=False,
    )
    op.create_index(
        "ix_conversation_turns_occurred_brin",
        "conversation_turns",
        ["occurred_at"],
        unique=False,
        postgresql_using="brin",
    )
    op.create_index(
        "ix_conversation_turns_recent",
        "conversation_turns",
        ["tenant_id", "user_id", "channel", "occurred_at"],
        unique=False,
    )
    op.create_table(
        "working_memory",
        sa.Column("tenant_id", sa.Text(), nullable=False),
        sa.Column("user_id", sa.Text(), nullable=False),
        sa.Column("channel", sa.Text(), nullable=False),
        sa.Column("conversation_id", sa.Text(), nullable=False),
        sa.Column("slot", sa.Text(), nullable=False),
        sa.Column("key", sa.Text(), nullable=False),
        sa.Column("ciphertext", sa.LargeBinary(), nullable=False),
        sa.Column("nonce", sa.LargeBinary(), nullable=False),
        sa.Column("key_id", sa.Text(), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint(
            "tenant_id",
            "user_id",
            "channel",
            "conversation_id",
            "slot",
            "key",
            name="pk_working_memory",
        ),
        prefixes=["UNLOGGED"],
    )
    op.create_index("ix_working_memory_expires", "working_memory", ["expires_at"], unique=False)
    op.create_index("ix_working_memory_key", "working_memory", ["key_id"], unique=False)
    op.create_table(
        "tool_invocations",
        sa.Column("tenant_id", sa.Text(), nullable=False),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("user_id", sa.Text(), nullable=False),
        sa.Column("channel", sa.Text(), server_default="_global", nullable=False),
        sa.Column("conversation_id", sa.Uuid(), nullable=True),
        sa.Column("turn_index", sa.Integer(), nullable=True),
        sa.Column("tool_name", sa.Text(), nullable=False),
        sa.Column("ciphertext", sa.LargeBinary(), nullable=False),
        sa.Column("nonce", sa.LargeBinary(), nullable=False),
        sa.Column("key_id", sa.Text(), nullable=False),
        sa.Column("success", sa.Boolean(), nullable=False),
        sa.Column("latency_ms", sa.Float(), nullable=True),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("tenant_id", "id", name="pk_tool_invocations"),
    )
    op.create_index(
        "ix_tool_invocations_conversation",
        "tool_invocations",
        ["tenant_id", "conversation_id", "created_at"],
        unique=False,
    )
    op.create_index(
        "ix_tool_invocations_created_brin",
        "tool_invocations",
        ["created_at"],
        unique=False,
        postgresql_using="brin",
    )
    op.create_index("ix_tool_invocations_key", "tool_invocations", ["key_id"], unique=False)
    op.create_index(
        "ix_tool_invocations_stats",
        "tool_invocations",
        ["tenant_id", "user_id", "channel", "tool_name"],
        unique=False,
    )
    op.create_table(
        "strategies",
        sa.Column("tenant_id", sa.Text(), nullable=False),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("user_id", sa.Text(), nullable=False),
        sa.Column("channel", sa.Text(), server_default="_global", nullable=False),
        sa.Column("ciphertext", sa.LargeBinary(), nullable=False),
        sa.Column("nonce", sa.LargeBinary(), nullable=False),
        sa.Column("key_id", sa.Text(), nullable=False),
        sa.Column(
            "tool_sequence", postgresql.ARRAY(sa.Text()), server_default="{}", nullable=False
        ),
        sa.Column("source_conversation_id", sa.Uuid(), nullable=True),
        sa.Column("success_count", sa.Integer(), server_default="0", nullable=False),
        sa.Column("failure_count", sa.Integer(), server_default="0", nullable=False),
        sa.Column("last_used", sa.DateTime(timezone=True), nullable=True),
        sa.Column("model", sa.Text(), nullable=False),
        sa.Column("embedding", Vector(), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("tenant_id", "id", name="pk_strategies"),
    )
    op.create_index("ix_strategies_key", "strategies", ["key_id"], unique=False)
    op.create_index(
        "ix_strategies_owner",
        "strategies",
        ["tenant_id", "user_id", "channel", "model"],
        unique=False,
    )
    op.create_table(
        "goals",
        sa.Column("tenant_id", sa.Text(), nullable=False),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("user_id", sa.Text(), nullable=False),
        sa.Column("channel", sa.Text(), server_default="_global", nullable=False),
        sa.Column("ciphertext", sa.LargeBinary(), nullable=False),
        sa.Column("nonce", sa.LargeBinary(), nullable=False),
        sa.Column("key_id", sa.Text(), nullable=False),
        sa.Column("priority", sa.SmallInteger(), server_default="5", nullable=False),
        sa.Column("status", sa.Text(), server_default="active", nullable=False),
        sa.Column("deadline", sa.DateTime(timezone=True), nullable=True),
        sa.Column("parent_id", sa.Uuid(), nullable=True),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.Column("completed_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint(
            "status IN ('active', 'completed', 'abandoned', 'blocked')", name="ck_goals_status"
        ),
        sa.CheckConstraint("priority BETWEEN 1 AND 10", name="ck_goals_priority"),
        sa.ForeignKeyConstraint(
            ["tenant_id", "parent_id"],
            ["goals.tenant_id", "goals.id"],
            name="fk_goals_parent",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("tenant_id", "id", name="pk_goals"),
    )
    op.create_index("ix_goals_key", "goals", ["key_id"], unique=False)
    op.create_index(
        "ix_goals_owner", "goals", ["tenant_id", "user_id", "status", "channel"], unique=False
    )
    op.create_index("ix_goals_parent", "goals", ["tenant_id", "parent_id"], unique=False)
    op.create_table(
        "goal_blockers",
        sa.Column("tenant_id", sa.Text(), nullable=False),
        sa.Column("goal_id", sa.Uuid(), nullable=False),
        sa.Column("blocker_id", sa.Uuid(), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id", "blocker_id"],
            ["goals.tenant_id", "goals.id"],
            name="fk_goal_blockers_blocker",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id", "goal_id"],
            ["goals.tenant_id", "goals.id"],
            name="fk_goal_blockers_goal",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("tenant_id", "goal_id", "blocker_id", name="pk_goal_blockers"),
    )
    op.create_index(
        "ix_goal_blockers_blocker", "goal_blockers", ["tenant_id", "blocker_id"], unique=False
    )
    op.create_table(
        "user_profiles",
        sa.Column("tenant_id", sa.Text(), nullable=False),
        sa.Column("user_id", sa.Text(), nullable=False),
        sa.Column("channel", sa.Text(), server_default="_global", nullable=False),
        sa.Column("ciphertext", sa.LargeBinary(), nullable=False),
        sa.Column("nonce", sa.LargeBinary(), nullable=False),
        sa.Column("key_id", sa.Text(), nullable=False),
        sa.Column(
            "updated_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("tenant_id", "user_id", "channel", name="pk_user_profiles"),
    )
    op.create_index("ix_user_profiles_key", "user_profiles", ["key_id"], unique=False)
    for table in TABLES:
        # Default privileges (0005) grant the app role these tables; the policy confines it.
        op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON {table} TO {APP_ROLE}")
        op.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
        op.execute(
            f"CREATE POLICY tenant_isolation ON {table} TO {APP_ROLE} "
            f"USING ({_POLICY}) WITH CHECK ({_POLICY})"
        )


def downgrade() -> None:
    for table in reversed(TABLES):
        op.drop_table(table)
