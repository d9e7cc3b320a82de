"""lifecycle and audit: scheduled runs, decay changes, the audit log partitioned by day

Revision ID: 0009
Revises: 0006

The audit log's partitions are not made here: ``db/audit.ensure_partitions`` makes each day's
before anything is written into it (at start-up and by the ``audit_partitions`` job), and
takes the app role's grants off each, so the role reaches audit rows only through the parent
table and its row-level policy.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import ARRAY, JSONB

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

APP_ROLE = "memvault_app"
TENANT_TABLES = ("decay_changes", "audit_log")
_POLICY = (
    "(SELECT current_setting('memvault.all_tenants', true)) = 'on' "
    "OR tenant_id = (SELECT current_setting('memvault.tenant', true))"
)
_OPERATIONS = (
    "store",
    "retrieve",
    "update",
    "delete",
    "promote",
    "merge",
    "decay",
    "export",
    "import",
    "tier",
)


def _now() -> sa.TextClause:
    return sa.text("now()")


def upgrade() -> None:
    op.create_table(
        "scheduled_runs",
        sa.Column("id", sa.BigInteger(), sa.Identity(always=False), nullable=False),
        sa.Column("job", sa.Text(), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("outcome", sa.Text(), server_default="running", nullable=False),
        sa.Column("duration_ms", sa.Float(), nullable=True),
        sa.Column("counts", JSONB(), server_default=sa.text("'{}'::jsonb"), nullable=False),
        sa.Column("dry_run", sa.Boolean(), server_default=sa.text("false"), nullable=False),
        sa.Column("error_code", sa.Text(), nullable=True),
        sa.Column("undone_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_scheduled_runs"),
        sa.CheckConstraint(
            "outcome IN ('running', 'ok', 'stopped', 'failed')", name="ck_scheduled_runs_outcome"
        ),
    )
    op.create_index("ix_scheduled_runs_job", "scheduled_runs", ["job", "started_at"])
    op.create_table(
        "decay_changes",
        sa.Column("tenant_id", sa.Text(), nullable=False),
        sa.Column("run_id", sa.BigInteger(), nullable=False),
        sa.Column("target", sa.Text(), nullable=False),
        sa.Column("item_id", sa.Uuid(), nullable=False),
        sa.Column("old_value", sa.Float(), nullable=False),
        sa.Column("new_value", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint(
            "tenant_id", "run_id", "target", "item_id", name="pk_decay_changes"
        ),
    )
    op.create_index("ix_decay_changes_run", "decay_changes", ["run_id"])
    op.create_table(
        "audit_settings",
        sa.Column("id", sa.LargeBinary(), nullable=False),
        sa.Column("snapshot", JSONB(), nullable=False),
        sa.Column("first_seen", sa.DateTime(timezone=True), server_default=_now(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_audit_settings"),
    )
    op.create_table(
        "audit_log",
        sa.Column("tenant_id", sa.Text(), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("operation", sa.Text(), nullable=False),
        sa.Column("memory_kind", sa.Text(), nullable=True),
        sa.Column("user_id", sa.Text(), nullable=True),
        sa.Column("actor", sa.Text(), nullable=False),
        sa.Column("request_id", sa.Text(), nullable=True),
        sa.Column("session_id", sa.Text(), nullable=True),
        sa.Column("conversation_id", sa.Text(), nullable=True),
        sa.Column("source_channel", sa.Text(), nullable=True),
        sa.Column("target_channel", sa.Text(), nullable=True),
        sa.Column("memory_ids", ARRAY(sa.Uuid()), server_default="{}", nullable=False),
        sa.Column("result_count", sa.Integer(), nullable=True),
        sa.Column("latency_ms", sa.Float(), nullable=True),
        sa.Column("success", sa.Boolean(), nullable=False),
        sa.Column("error_code", sa.Text(), nullable=True),
        sa.Column("promotion_rule", sa.Text(), nullable=True),
        sa.Column("promotion_score", sa.Float(), nullable=True),
        sa.Column("details", JSONB(), server_default=sa.text("'{}'::jsonb"), nullable=False),
        sa.Column("settings_id", sa.LargeBinary(), nullable=True),
        sa.Column("query_ciphertext", sa.LargeBinary(), nullable=True),
        sa.Column("query_nonce", sa.LargeBinary(), nullable=True),
        sa.Column("query_key_id", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("tenant_id", "at", "id", name="pk_audit_log"),
        sa.CheckConstraint(
            "operation IN (" + ", ".join(f"'{o}'" for o in _OPERATIONS) + ")",
            name="ck_audit_log_operation",
        ),
        postgresql_partition_by="RANGE (at)",
    )
    op.create_index("ix_audit_log_user", "audit_log", ["tenant_id", "user_id", "at"])
    for table in TENANT_TABLES:
        op.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
        op.execute(
            f"CREATE POLICY tenant_isolation ON {table} TO {APP_ROLE} "
            f"USING ({_POLICY}) WITH CHECK ({_POLICY})"
        )


def downgrade() -> None:
    op.drop_table("audit_log")
    op.drop_table("audit_settings")
    op.drop_table("decay_changes")
    op.drop_table("scheduled_runs")
