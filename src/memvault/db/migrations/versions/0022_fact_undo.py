"""facts.undo: what a person's retire or correction changed, so it can be undone

Revision ID: 0022
Revises: 0021

Retiring or correcting a fact rewrites its valid interval (``valid_from`` / ``valid_until``)
and marks it superseded; the interval it had before is kept here (with which of the two
changes it was), so ``POST /v1/facts/{fact_id}/restore`` puts it back exactly. Cleared by the
undo; never user content (two timestamps and a word).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("facts", sa.Column("undo", JSONB(), nullable=True))


def downgrade() -> None:
    op.drop_column("facts", "undo")
