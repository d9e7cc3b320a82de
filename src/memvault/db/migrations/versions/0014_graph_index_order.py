"""the graph's and goals' secondary indexes lead with their own key, not the tenant alone

Revision ID: 0014
Revises: 0013

As migration 0013 did for ``memories``: foreign-key checks into ``entities``, ``facts``,
``relations`` and ``goals`` (``(tenant_id, id)``) are planned once per connection, and on a
never-analysed table an index leading with ``tenant_id`` alone tied with the primary key
there (seen: ``ix_entities_name``, ``ix_facts_user``, ``ix_goals_parent``), so each check read
every row of the tenant. Each such index now leads with its next column; every lookup they
serve names the tenant as well, so the order does not matter to it.
"""

from __future__ import annotations

from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

# name, table, columns as they were (the tenant first)
_REORDERED = [
    ("ix_entities_name", "entities", ["tenant_id", "user_id", "name_key"]),
    ("ix_facts_subject", "facts", ["tenant_id", "subject_id", "predicate"]),
    ("ix_facts_object", "facts", ["tenant_id", "object_id"]),
    ("ix_facts_user", "facts", ["tenant_id", "user_id", "predicate"]),
    ("ix_relations_edge", "relations", ["tenant_id", "source_id", "type", "target_id"]),
    ("ix_relations_target", "relations", ["tenant_id", "target_id"]),
    ("ix_goals_owner", "goals", ["tenant_id", "user_id", "status", "channel"]),
    ("ix_goals_parent", "goals", ["tenant_id", "parent_id"]),
]


def _tenant_second(columns: list[str]) -> list[str]:
    return [columns[1], columns[0], *columns[2:]]


def upgrade() -> None:
    for name, table, columns in _REORDERED:
        op.drop_index(name, table_name=table)
        op.create_index(name, table, _tenant_second(columns))


def downgrade() -> None:
    for name, table, columns in _REORDERED:
        op.drop_index(name, table_name=table)
        op.create_index(name, table, columns)
