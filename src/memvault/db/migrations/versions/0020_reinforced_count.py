"""memories.reinforced_count: the times a caller said a memory helped

Revision ID: 0020
Revises: 0019

Ranking reinforced a memory by ``access_count``, the number of searches that returned it, so
finding a memory for one question lifted it for every later, unrelated one (pooled
LongMemEval all@10 0.577 with access tracking against 0.596 without). Ranking now reinforces
from what the caller reports it used (``POST /v1/memories/feedback``), counted here;
``access_count`` stays the lifecycle's measure of use (decay, tiers, health).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "memories",
        sa.Column("reinforced_count", sa.Integer(), nullable=False, server_default="0"),
    )


def downgrade() -> None:
    op.drop_column("memories", "reinforced_count")
