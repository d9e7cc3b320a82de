"""merge_undos: what a health merge erased, so the merge can be undone

Revision ID: 0023
Revises: 0022

A merge folds each cluster of near-duplicates into its earliest memory and erases the copies;
this row keeps, sealed like any content, each copy as an export line (history, vectors, source
links) and the kept memories' values before the merge, so ``POST
/v1/health/memory/merges/{merge_id}/undo`` puts them back. Kept ``merge_undo_days``; erased
with the user.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None

APP_ROLE = "memvault_app"
_POLICY = (
    "(SELECT current_setting('memvault.all_tenants', true)) = 'on' "
    "OR tenant_id = (SELECT current_setting('memvault.tenant', true))"
)
_NOW = sa.text("now()")


def upgrade() -> None:
    op.create_table(
        "merge_undos",
        sa.Column("tenant_id", sa.Text(), nullable=False),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("user_id", sa.Text(), nullable=False),
        sa.Column("ciphertext", sa.LargeBinary(), nullable=False),
        sa.Column("nonce", sa.LargeBinary(), nullable=False),
        sa.Column("key_id", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=_NOW, nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("undone_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("tenant_id", "id", name="pk_merge_undos"),
    )
    op.create_index("ix_merge_undos_expires", "merge_undos", ["expires_at"])
    op.create_index("ix_merge_undos_key", "merge_undos", ["key_id"])
    op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON merge_undos TO {APP_ROLE}")
    op.execute("ALTER TABLE merge_undos ENABLE ROW LEVEL SECURITY")
    op.execute(
        f"CREATE POLICY tenant_isolation ON merge_undos TO {APP_ROLE} "
        f"USING ({_POLICY}) WITH CHECK ({_POLICY})"
    )


def downgrade() -> None:
    op.drop_table("merge_undos")
