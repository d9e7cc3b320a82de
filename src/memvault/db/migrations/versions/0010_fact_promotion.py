"""fact promotion: a project fact copied to the user's _global channel, linked to its source

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

APP_ROLE = "memvault_app"
_POLICY = (
    "(SELECT current_setting('memvault.all_tenants', true)) = 'on' "
    "OR tenant_id = (SELECT current_setting('memvault.tenant', true))"
)


def upgrade() -> None:
    op.create_table(
        "fact_promotions",
        sa.Column("tenant_id", sa.Text(), nullable=False),
        sa.Column("fact_id", sa.Uuid(), nullable=False),
        sa.Column("promoted_from", sa.Uuid(), nullable=False),
        sa.Column("user_id", sa.Text(), nullable=False),
        sa.Column("actor", sa.Text(), nullable=False),
        sa.Column(
            "promoted_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id", "fact_id"],
            ["facts.tenant_id", "facts.id"],
            ondelete="CASCADE",
            name="fk_fact_promotions_fact",
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id", "promoted_from"],
            ["facts.tenant_id", "facts.id"],
            ondelete="CASCADE",
            name="fk_fact_promotions_from",
        ),
        sa.PrimaryKeyConstraint("tenant_id", "fact_id", name="pk_fact_promotions"),
        sa.UniqueConstraint("tenant_id", "promoted_from", name="uq_fact_promotions_from"),
    )
    op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON fact_promotions TO {APP_ROLE}")
    op.execute("ALTER TABLE fact_promotions ENABLE ROW LEVEL SECURITY")
    op.execute(
        f"CREATE POLICY tenant_isolation ON fact_promotions TO {APP_ROLE} "
        f"USING ({_POLICY}) WITH CHECK ({_POLICY})"
    )


def downgrade() -> None:
    op.drop_table("fact_promotions")
