"""webhooks: subscriptions and the delivery outbox

Revision ID: 0021
Revises: 0020

A tenant's webhook subscriptions, and one delivery row per (event, matching subscription),
written in the transaction of the change the event reports (db/webhooks.py), claimed by the
workers with ``FOR UPDATE SKIP LOCKED`` and a lease.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None

APP_ROLE = "memvault_app"
_POLICY = (
    "(SELECT current_setting('memvault.all_tenants', true)) = 'on' "
    "OR tenant_id = (SELECT current_setting('memvault.tenant', true))"
)
_NOW = sa.text("now()")


def _tenant_table(name: str) -> None:
    op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON {name} TO {APP_ROLE}")
    op.execute(f"ALTER TABLE {name} ENABLE ROW LEVEL SECURITY")
    op.execute(
        f"CREATE POLICY tenant_isolation ON {name} TO {APP_ROLE} "
        f"USING ({_POLICY}) WITH CHECK ({_POLICY})"
    )


def upgrade() -> None:
    op.create_table(
        "webhook_subscriptions",
        sa.Column("tenant_id", sa.Text(), nullable=False),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("secret_ciphertext", sa.LargeBinary(), nullable=False),
        sa.Column("secret_nonce", sa.LargeBinary(), nullable=False),
        sa.Column("secret_key_id", sa.Text(), nullable=False),
        sa.Column("event_types", postgresql.ARRAY(sa.Text()), nullable=True),
        sa.Column("app_id", sa.Text(), nullable=True),
        sa.Column("filter_user_id", sa.Text(), nullable=True),
        sa.Column("include_content", sa.Boolean(), server_default=sa.text("false"), nullable=False),
        sa.Column("enabled", sa.Boolean(), server_default=sa.text("true"), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=_NOW, nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=_NOW, nullable=False),
        sa.PrimaryKeyConstraint("tenant_id", "id", name="pk_webhook_subscriptions"),
    )
    op.create_table(
        "webhook_deliveries",
        sa.Column("tenant_id", sa.Text(), nullable=False),
        sa.Column("id", sa.BigInteger(), sa.Identity(always=False), nullable=False),
        sa.Column("subscription_id", sa.Uuid(), nullable=False),
        sa.Column("event_id", sa.Uuid(), nullable=False),
        sa.Column("event_type", sa.Text(), nullable=False),
        sa.Column("user_id", sa.Text(), server_default="", nullable=False),
        sa.Column("data", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("occurred_at", sa.DateTime(timezone=True), server_default=_NOW, nullable=False),
        sa.Column("state", sa.Text(), server_default="pending", nullable=False),
        sa.Column("attempts", sa.Integer(), server_default="0", nullable=False),
        sa.Column("last_status", sa.Integer(), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("available_at", sa.DateTime(timezone=True), server_default=_NOW, nullable=False),
        sa.Column("locked_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("delivered_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("tenant_id", "id", name="pk_webhook_deliveries"),
        sa.ForeignKeyConstraint(
            ["tenant_id", "subscription_id"],
            ["webhook_subscriptions.tenant_id", "webhook_subscriptions.id"],
            ondelete="CASCADE",
            name="fk_webhook_deliveries_subscription",
        ),
        sa.CheckConstraint(
            "state IN ('pending', 'delivered', 'dead')", name="ck_webhook_deliveries_state"
        ),
    )
    op.create_index(
        "ix_webhook_deliveries_ready",
        "webhook_deliveries",
        ["available_at"],
        postgresql_where=sa.text("state = 'pending'"),
    )
    op.create_index(
        "ix_webhook_deliveries_line",
        "webhook_deliveries",
        ["tenant_id", "subscription_id", "user_id", "id"],
        postgresql_where=sa.text("state = 'pending'"),
    )
    op.create_index(
        "ix_webhook_deliveries_subscription",
        "webhook_deliveries",
        ["tenant_id", "subscription_id", "id"],
    )
    _tenant_table("webhook_subscriptions")
    _tenant_table("webhook_deliveries")


def downgrade() -> None:
    op.drop_table("webhook_deliveries")
    op.drop_table("webhook_subscriptions")
