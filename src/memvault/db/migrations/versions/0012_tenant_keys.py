"""tenant keys: each tenant's data key, wrapped under the master key (per_tenant_keys)

Revision ID: 0012
Revises: 0011
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

APP_ROLE = "memvault_app"
_POLICY = (
    "(SELECT current_setting('memvault.all_tenants', true)) = 'on' "
    "OR tenant_id = (SELECT current_setting('memvault.tenant', true))"
)


def upgrade() -> None:
    op.create_table(
        "tenant_keys",
        sa.Column("tenant_id", sa.Text(), nullable=False),
        sa.Column("key_id", sa.Text(), nullable=False),
        sa.Column("wrapped", sa.LargeBinary(), nullable=False),
        sa.Column("nonce", sa.LargeBinary(), nullable=False),
        sa.Column("master_key_id", sa.Text(), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("tenant_id", name="pk_tenant_keys"),
    )
    op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON tenant_keys TO {APP_ROLE}")
    op.execute("ALTER TABLE tenant_keys ENABLE ROW LEVEL SECURITY")
    op.execute(
        f"CREATE POLICY tenant_isolation ON tenant_keys TO {APP_ROLE} "
        f"USING ({_POLICY}) WITH CHECK ({_POLICY})"
    )


def downgrade() -> None:
    op.drop_table("tenant_keys")
