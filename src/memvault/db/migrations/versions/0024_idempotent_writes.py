"""idempotent_writes: the answers of writes sent with an Idempotency-Key

Revision ID: 0024
Revises: 0023

A client that lost its connection (an API host died, a proxy gave up) cannot tell whether
its write was stored; with an ``Idempotency-Key`` header it sends the same request again and
gets the first answer, kept here sealed (it may hold memory content) for a day.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None

APP_ROLE = "memvault_app"
_POLICY = (
    "(SELECT current_setting('memvault.all_tenants', true)) = 'on' "
    "OR tenant_id = (SELECT current_setting('memvault.tenant', true))"
)


def upgrade() -> None:
    op.create_table(
        "idempotent_writes",
        sa.Column("tenant_id", sa.Text(), nullable=False),
        sa.Column("key", sa.Text(), nullable=False),
        sa.Column("user_id", sa.Text(), server_default="", nullable=False),
        sa.Column("fingerprint", sa.LargeBinary(), nullable=False),
        sa.Column("status", sa.SmallInteger(), nullable=True),
        sa.Column("ciphertext", sa.LargeBinary(), nullable=True),
        sa.Column("nonce", sa.LargeBinary(), nullable=True),
        sa.Column("key_id", sa.Text(), nullable=True),
        sa.Column("lease_until", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("tenant_id", "key", name="pk_idempotent_writes"),
    )
    op.create_index("ix_idempotent_writes_expiry", "idempotent_writes", ["expires_at"])
    op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON idempotent_writes TO {APP_ROLE}")
    op.execute("ALTER TABLE idempotent_writes ENABLE ROW LEVEL SECURITY")
    op.execute(
        f"CREATE POLICY tenant_isolation ON idempotent_writes TO {APP_ROLE} "
        f"USING ({_POLICY}) WITH CHECK ({_POLICY})"
    )


def downgrade() -> None:
    op.drop_table("idempotent_writes")
