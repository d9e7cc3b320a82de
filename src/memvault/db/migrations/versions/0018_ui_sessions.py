"""dashboard sessions shared by every server process when no Redis is configured

Revision ID: 0018
Revises: 0017

UNLOGGED: a crash forgets the sessions, which only asks every browser to sign in again.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "ui_sessions",
        sa.Column("digest", sa.LargeBinary(), nullable=False),
        sa.Column("payload", sa.LargeBinary(), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("digest", name="pk_ui_sessions"),
        prefixes=["UNLOGGED"],
    )
    op.create_index("ix_ui_sessions_expires", "ui_sessions", ["expires_at"])


def downgrade() -> None:
    op.drop_table("ui_sessions")
