"""memories by id alone: the one index a search's per-candidate lookup can use

Revision ID: 0011
Revises: 0010

A ranked candidate list meets ``memories`` through a LATERAL lookup of each candidate by
``id`` (see ``store.ranked_page``). With ``tenant_id`` in the lookup too, a never-analysed
table lets the owner indexes (which lead with ``tenant_id``) tie with the primary key, and the
planner may scan the owner's memories once per candidate. An index on ``id`` alone is the only
one that lookup can use, whatever the statistics say. Not unique: an import may carry the same
ids into a second tenant.
"""

from __future__ import annotations

from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_memories_id", "memories", ["id"])


def downgrade() -> None:
    op.drop_index("ix_memories_id", table_name="memories")
