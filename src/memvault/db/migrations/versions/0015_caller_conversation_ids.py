"""conversations are named by the caller, per user, and remember how far they were consolidated

Revision ID: 0015
Revises: 0014

A conversation's id is now the caller's own identifier (any identifier string; the UUIDs the
store minted so far keep their text form), unique per user rather than per tenant: two users
of one tenant may both call theirs "support-1". The id columns that name a conversation
become text, and the key of ``conversations`` (and so the turns' foreign key) takes the user.
A sealed title stays readable: it was bound to the id's text form all along.

``consolidated_turns`` is the consolidation watermark: the turns below it went through the
graph extractor, so turns appended later are consolidated by the next run (before, a
conversation consolidated once was never looked at again).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

_TO_TEXT = [
    ("conversations", "id"),
    ("conversation_turns", "conversation_id"),
    ("tool_invocations", "conversation_id"),
    ("strategies", "source_conversation_id"),
]


def upgrade() -> None:
    op.drop_constraint(
        "fk_conversation_turns_conversation", "conversation_turns", type_="foreignkey"
    )
    op.drop_constraint("pk_conversation_turns", "conversation_turns", type_="primary")
    op.drop_constraint("pk_conversations", "conversations", type_="primary")
    for table, column in _TO_TEXT:
        op.alter_column(table, column, type_=sa.Text(), postgresql_using=f"{column}::text")
    op.create_primary_key("pk_conversations", "conversations", ["tenant_id", "user_id", "id"])
    op.create_primary_key(
        "pk_conversation_turns",
        "conversation_turns",
        ["tenant_id", "user_id", "conversation_id", "turn_index"],
    )
    op.create_foreign_key(
        "fk_conversation_turns_conversation",
        "conversation_turns",
        "conversations",
        ["tenant_id", "user_id", "conversation_id"],
        ["tenant_id", "user_id", "id"],
        ondelete="CASCADE",
    )
    op.add_column(
        "conversations",
        sa.Column("consolidated_turns", sa.Integer(), nullable=False, server_default="0"),
    )
    # What was consolidated before kept no watermark: all its turns then were.
    op.execute(
        "UPDATE conversations SET consolidated_turns = turn_count WHERE consolidated_at IS NOT NULL"
    )


def downgrade() -> None:
    op.drop_column("conversations", "consolidated_turns")
    op.drop_constraint(
        "fk_conversation_turns_conversation", "conversation_turns", type_="foreignkey"
    )
    op.drop_constraint("pk_conversation_turns", "conversation_turns", type_="primary")
    op.drop_constraint("pk_conversations", "conversations", type_="primary")
    for table, column in _TO_TEXT:
        op.alter_column(table, column, type_=sa.Uuid(), postgresql_using=f"{column}::uuid")
    op.create_primary_key("pk_conversations", "conversations", ["tenant_id", "id"])
    op.create_primary_key(
        "pk_conversation_turns",
        "conversation_turns",
        ["tenant_id", "conversation_id", "turn_index"],
    )
    op.create_foreign_key(
        "fk_conversation_turns_conversation",
        "conversation_turns",
        "conversations",
        ["tenant_id", "conversation_id"],
        ["tenant_id", "id"],
        ondelete="CASCADE",
    )
