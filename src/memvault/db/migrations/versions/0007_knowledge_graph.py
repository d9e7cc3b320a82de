"""knowledge graph: entities, bi-temporal facts, relations, their sources, keys, merges, reviews

Revision ID: 0007
Revises: 0006

Every table leads its keys with ``tenant_id`` and has the row-level policy of 0005. Deletion
follows the source: a memory's deletion cascades to its fact/relation sources and mentions, and
the statement triggers below remove what only it held (a fact with no source left, an entity
nothing names any more), in the same transaction, whichever code path deleted the memory.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from pgvector.sqlalchemy import Vector
from sqlalchemy.dialects.postgresql import ARRAY, JSONB

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

APP_ROLE = "memvault_app"
GRAPH_TABLES = (
    "entities",
    "facts",
    "fact_sources",
    "entity_mentions",
    "relations",
    "relation_sources",
    "fact_terms",
    "entity_terms",
    "entity_merges",
    "fact_reviews",
)
_POLICY = (
    "(SELECT current_setting('memvault.all_tenants', true)) = 'on' "
    "OR tenant_id = (SELECT current_setting('memvault.tenant', true))"
)

# The cleanup triggers: deletion follows the source, whichever path deletes the memory.
_ORPHAN = """
    NOT EXISTS (SELECT 1 FROM facts x WHERE x.tenant_id = e.tenant_id AND x.subject_id = e.id)
    AND NOT EXISTS (SELECT 1 FROM facts x WHERE x.tenant_id = e.tenant_id AND x.object_id = e.id)
    AND NOT EXISTS (
        SELECT 1 FROM entity_mentions m WHERE m.tenant_id = e.tenant_id AND m.entity_id = e.id
    )
    AND NOT EXISTS (
        SELECT 1 FROM relations r WHERE r.tenant_id = e.tenant_id AND r.source_id = e.id
    )
    AND NOT EXISTS (
        SELECT 1 FROM relations r WHERE r.tenant_id = e.tenant_id AND r.target_id = e.id
    )
"""
FUNCTIONS = {
    # A fact goes with its last source (a fact stated directly has none and is not touched).
    "memvault_fact_sources_gone": """
        DELETE FROM facts f
        USING (SELECT DISTINCT tenant_id, fact_id FROM gone) g
        WHERE f.tenant_id = g.tenant_id AND f.id = g.fact_id
          AND NOT EXISTS (
              SELECT 1 FROM fact_sources s WHERE s.tenant_id = f.tenant_id AND s.fact_id = f.id
          );
    """,
    "memvault_relation_sources_gone": """
        DELETE FROM relations r
        USING (SELECT DISTINCT tenant_id, relation_id FROM gone) g
        WHERE r.tenant_id = g.tenant_id AND r.id = g.relation_id
          AND NOT EXISTS (
              SELECT 1 FROM relation_sources s
              WHERE s.tenant_id = r.tenant_id AND s.relation_id = r.id
          );
    """,
    # Entities left with nothing that names them go; a fact that superseded a deleted one
    # no longer points at it.
    "memvault_facts_gone": f"""
        UPDATE facts f SET superseded_by = NULL
        FROM gone g WHERE f.tenant_id = g.tenant_id AND f.superseded_by = g.id;
        DELETE FROM entities e
        USING (
            SELECT tenant_id, subject_id AS id FROM gone
            UNION SELECT tenant_id, object_id FROM gone WHERE object_id IS NOT NULL
        ) c
        WHERE e.tenant_id = c.tenant_id AND e.id = c.id AND {_ORPHAN};
    """,
    "memvault_relations_gone": f"""
        DELETE FROM entities e
        USING (
            SELECT tenant_id, source_id AS id FROM gone
            UNION SELECT tenant_id, target_id FROM gone
        ) c
        WHERE e.tenant_id = c.tenant_id AND e.id = c.id AND {_ORPHAN};
    """,
    "memvault_mentions_gone": f"""
        DELETE FROM entities e
        USING (SELECT DISTINCT tenant_id, entity_id AS id FROM gone) c
        WHERE e.tenant_id = c.tenant_id AND e.id = c.id AND {_ORPHAN};
    """,
    "memvault_entities_gone": """
        UPDATE entities e SET merged_into = NULL
        FROM gone g WHERE e.tenant_id = g.tenant_id AND e.merged_into = g.id;
    """,
}
TRIGGERS = (
    ("fact_sources", "memvault_fact_sources_gone"),
    ("relation_sources", "memvault_relation_sources_gone"),
    ("facts", "memvault_facts_gone"),
    ("relations", "memvault_relations_gone"),
    ("entity_mentions", "memvault_mentions_gone"),
    ("entities", "memvault_entities_gone"),
)


def upgrade() -> None:
    op.create_table(
        "entities",
        sa.Column("tenant_id", sa.Text(), nullable=False),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("user_id", sa.Text(), nullable=False),
        sa.Column("app_id", sa.Text(), server_default="default", nullable=False),
        sa.Column("channel", sa.Text(), server_default="_global", nullable=False),
        sa.Column("type", sa.Text(), server_default="other", nullable=False),
        sa.Column("name_ciphertext", sa.LargeBinary(), nullable=False),
        sa.Column("name_nonce", sa.LargeBinary(), nullable=False),
        sa.Column("aliases_ciphertext", sa.LargeBinary(), nullable=True),
        sa.Column("aliases_nonce", sa.LargeBinary(), nullable=True),
        sa.Column("description_ciphertext", sa.LargeBinary(), nullable=True),
        sa.Column("description_nonce", sa.LargeBinary(), nullable=True),
        sa.Column("key_id", sa.Text(), nullable=False),
        sa.Column("name_key", sa.LargeBinary(), nullable=False),
        sa.Column("alias_keys", ARRAY(sa.LargeBinary()), server_default="{}", nullable=False),
        sa.Column("embedding", Vector(), nullable=True),
        sa.Column("embedding_model", sa.Text(), nullable=True),
        sa.Column("salience", sa.Float(), server_default="0.5", nullable=False),
        sa.Column("access_count", sa.Integer(), server_default="0", nullable=False),
        sa.Column("last_accessed", sa.DateTime(timezone=True), nullable=True),
        sa.Column(
            "first_seen",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.Column("properties", JSONB(), server_default=sa.text("'{}'::jsonb"), nullable=False),
        sa.Column("merged_into", sa.Uuid(), nullable=True),
        sa.CheckConstraint(
            "type IN ('person', 'organisation', 'place', 'project', 'tool', 'event', "
            "'concept', 'other')",
            name="ck_entities_type",
        ),
        sa.PrimaryKeyConstraint("tenant_id", "id", name="pk_entities"),
    )
    op.create_index(
        "ix_entities_alias_keys", "entities", ["alias_keys"], unique=False, postgresql_using="gin"
    )
    op.create_index("ix_entities_key", "entities", ["key_id"], unique=False)
    op.create_index(
        "ix_entities_name", "entities", ["tenant_id", "user_id", "name_key"], unique=False
    )
    op.create_table(
        "facts",
        sa.Column("tenant_id", sa.Text(), nullable=False),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("user_id", sa.Text(), nullable=False),
        sa.Column("app_id", sa.Text(), server_default="default", nullable=False),
        sa.Column("channel", sa.Text(), server_default="_global", nullable=False),
        sa.Column("subject_id", sa.Uuid(), nullable=False),
        sa.Column("predicate", sa.Text(), nullable=False),
        sa.Column("object_id", sa.Uuid(), nullable=True),
        sa.Column("value_ciphertext", sa.LargeBinary(), nullable=True),
        sa.Column("value_nonce", sa.LargeBinary(), nullable=True),
        sa.Column("value_key", sa.LargeBinary(), nullable=True),
        sa.Column("claim_ciphertext", sa.LargeBinary(), nullable=False),
        sa.Column("claim_nonce", sa.LargeBinary(), nullable=False),
        sa.Column("key_id", sa.Text(), nullable=False),
        sa.Column("confidence", sa.Float(), nullable=False),
        sa.Column("certainty", sa.Text(), server_default="explicit", nullable=False),
        sa.Column("temporal", sa.Text(), server_default="current", nullable=False),
        sa.Column("source", sa.Text(), nullable=True),
        sa.Column("embedding", Vector(), nullable=True),
        sa.Column("embedding_model", sa.Text(), nullable=True),
        sa.Column("valid_from", sa.DateTime(timezone=True), nullable=True),
        sa.Column("valid_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column(
            "recorded_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.Column("superseded_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("superseded_by", sa.Uuid(), nullable=True),
        sa.Column("term_count", sa.Integer(), server_default="0", nullable=False),
        sa.Column("access_count", sa.Integer(), server_default="0", nullable=False),
        sa.Column("last_accessed", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint(
            "certainty IN ('explicit', 'implied', 'inferred', 'uncertain')",
            name="ck_facts_certainty",
        ),
        sa.CheckConstraint("temporal IN ('current', 'past', 'future')", name="ck_facts_temporal"),
        sa.CheckConstraint(
            "(object_id IS NULL) <> (value_ciphertext IS NULL)", name="ck_facts_object_or_value"
        ),
        sa.CheckConstraint("confidence BETWEEN 0 AND 1", name="ck_facts_confidence"),
        sa.ForeignKeyConstraint(
            ["tenant_id", "object_id"],
            ["entities.tenant_id", "entities.id"],
            name="fk_facts_object",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id", "subject_id"],
            ["entities.tenant_id", "entities.id"],
            name="fk_facts_subject",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("tenant_id", "id", name="pk_facts"),
    )
    op.create_index("ix_facts_key", "facts", ["key_id"], unique=False)
    op.create_index("ix_facts_object", "facts", ["tenant_id", "object_id"], unique=False)
    op.create_index(
        "ix_facts_subject", "facts", ["tenant_id", "subject_id", "predicate"], unique=False
    )
    op.create_index("ix_facts_user", "facts", ["tenant_id", "user_id", "predicate"], unique=False)
    op.create_table(
        "fact_sources",
        sa.Column("tenant_id", sa.Text(), nullable=False),
        sa.Column("fact_id", sa.Uuid(), nullable=False),
        sa.Column("memory_id", sa.Uuid(), nullable=False),
        sa.Column("user_id", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id", "fact_id"],
            ["facts.tenant_id", "facts.id"],
            name="fk_fact_sources_fact",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id", "memory_id"],
            ["memories.tenant_id", "memories.id"],
            name="fk_fact_sources_memory",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("tenant_id", "fact_id", "memory_id", name="pk_fact_sources"),
    )
    op.create_index(
        "ix_fact_sources_memory", "fact_sources", ["tenant_id", "memory_id"], unique=False
    )
    op.create_table(
        "entity_mentions",
        sa.Column("tenant_id", sa.Text(), nullable=False),
        sa.Column("memory_id", sa.Uuid(), nullable=False),
        sa.Column("entity_id", sa.Uuid(), nullable=False),
        sa.Column("user_id", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id", "entity_id"],
            ["entities.tenant_id", "entities.id"],
            name="fk_entity_mentions_entity",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id", "memory_id"],
            ["memories.tenant_id", "memories.id"],
            name="fk_entity_mentions_memory",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("tenant_id", "memory_id", "entity_id", name="pk_entity_mentions"),
    )
    op.create_index(
        "ix_entity_mentions_entity", "entity_mentions", ["tenant_id", "entity_id"], unique=False
    )
    op.create_table(
        "relations",
        sa.Column("tenant_id", sa.Text(), nullable=False),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("user_id", sa.Text(), nullable=False),
        sa.Column("app_id", sa.Text(), server_default="default", nullable=False),
        sa.Column("channel", sa.Text(), server_default="_global", nullable=False),
        sa.Column("source_id", sa.Uuid(), nullable=False),
        sa.Column("type", sa.Text(), nullable=False),
        sa.Column("target_id", sa.Uuid(), nullable=False),
        sa.Column("properties_ciphertext", sa.LargeBinary(), nullable=True),
        sa.Column("properties_nonce", sa.LargeBinary(), nullable=True),
        sa.Column("key_id", sa.Text(), nullable=True),
        sa.Column("valid_from", sa.DateTime(timezone=True), nullable=True),
        sa.Column("valid_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column(
            "recorded_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id", "source_id"],
            ["entities.tenant_id", "entities.id"],
            name="fk_relations_source",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id", "target_id"],
            ["entities.tenant_id", "entities.id"],
            name="fk_relations_target",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("tenant_id", "id", name="pk_relations"),
    )
    op.create_index(
        "ix_relations_edge", "relations", ["tenant_id", "source_id", "type", "target_id"]
    )
    op.create_index("ix_relations_key", "relations", ["key_id"], unique=False)
    op.create_index("ix_relations_target", "relations", ["tenant_id", "target_id"], unique=False)
    op.create_table(
        "relation_sources",
        sa.Column("tenant_id", sa.Text(), nullable=False),
        sa.Column("relation_id", sa.Uuid(), nullable=False),
        sa.Column("memory_id", sa.Uuid(), nullable=False),
        sa.Column("user_id", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id", "memory_id"],
            ["memories.tenant_id", "memories.id"],
            name="fk_relation_sources_memory",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id", "relation_id"],
            ["relations.tenant_id", "relations.id"],
            name="fk_relation_sources_relation",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "tenant_id", "relation_id", "memory_id", name="pk_relation_sources"
        ),
    )
    op.create_index(
        "ix_relation_sources_memory", "relation_sources", ["tenant_id", "memory_id"], unique=False
    )
    op.create_table(
        "fact_terms",
        sa.Column("tenant_id", sa.Text(), nullable=False),
        sa.Column("user_id", sa.Text(), nullable=False),
        sa.Column("term", sa.BigInteger(), nullable=False),
        sa.Column("fact_id", sa.Uuid(), nullable=False),
        sa.Column("tf", sa.SmallInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id", "fact_id"],
            ["facts.tenant_id", "facts.id"],
            name="fk_fact_terms_fact",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("tenant_id", "user_id", "term", "fact_id", name="pk_fact_terms"),
    )
    op.create_index("ix_fact_terms_fact", "fact_terms", ["tenant_id", "fact_id"], unique=False)
    op.create_table(
        "entity_terms",
        sa.Column("tenant_id", sa.Text(), nullable=False),
        sa.Column("user_id", sa.Text(), nullable=False),
        sa.Column("term", sa.BigInteger(), nullable=False),
        sa.Column("entity_id", sa.Uuid(), nullable=False),
        sa.Column("tf", sa.SmallInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id", "entity_id"],
            ["entities.tenant_id", "entities.id"],
            name="fk_entity_terms_entity",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "tenant_id", "user_id", "term", "entity_id", name="pk_entity_terms"
        ),
    )
    op.create_index(
        "ix_entity_terms_entity", "entity_terms", ["tenant_id", "entity_id"], unique=False
    )
    op.create_table(
        "entity_merges",
        sa.Column("tenant_id", sa.Text(), nullable=False),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("user_id", sa.Text(), nullable=False),
        sa.Column("merged_id", sa.Uuid(), nullable=False),
        sa.Column("into_id", sa.Uuid(), nullable=False),
        sa.Column("subject_facts", ARRAY(sa.Uuid()), server_default="{}", nullable=False),
        sa.Column("object_facts", ARRAY(sa.Uuid()), server_default="{}", nullable=False),
        sa.Column("source_relations", ARRAY(sa.Uuid()), server_default="{}", nullable=False),
        sa.Column("target_relations", ARRAY(sa.Uuid()), server_default="{}", nullable=False),
        sa.Column("actor", sa.Text(), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.Column("split_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["tenant_id", "into_id"],
            ["entities.tenant_id", "entities.id"],
            name="fk_entity_merges_into",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id", "merged_id"],
            ["entities.tenant_id", "entities.id"],
            name="fk_entity_merges_merged",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("tenant_id", "id", name="pk_entity_merges"),
    )
    op.create_index(
        "ix_entity_merges_into", "entity_merges", ["tenant_id", "into_id"], unique=False
    )
    op.create_index(
        "ix_entity_merges_merged",
        "entity_merges",
        ["tenant_id", "merged_id", "created_at"],
        unique=False,
    )
    op.create_table(
        "fact_reviews",
        sa.Column("tenant_id", sa.Text(), nullable=False),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("user_id", sa.Text(), nullable=False),
        sa.Column("fact_id", sa.Uuid(), nullable=False),
        sa.Column("conflicts_with", sa.Uuid(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id", "conflicts_with"],
            ["facts.tenant_id", "facts.id"],
            name="fk_fact_reviews_conflict",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id", "fact_id"],
            ["facts.tenant_id", "facts.id"],
            name="fk_fact_reviews_fact",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("tenant_id", "id", name="pk_fact_reviews"),
    )
    op.create_index(
        "ix_fact_reviews_conflict", "fact_reviews", ["tenant_id", "conflicts_with"], unique=False
    )
    op.create_index(
        "ix_fact_reviews_user", "fact_reviews", ["tenant_id", "user_id", "created_at"], unique=False
    )
    for table in GRAPH_TABLES:
        op.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
        op.execute(
            f"CREATE POLICY tenant_isolation ON {table} TO {APP_ROLE} "
            f"USING ({_POLICY}) WITH CHECK ({_POLICY})"
        )
    for name, statements in FUNCTIONS.items():
        op.execute(
            f"CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$\n"
            f"BEGIN\n{statements}\nRETURN NULL;\nEND $$"
        )
    for table, function in TRIGGERS:
        op.execute(
            f"CREATE TRIGGER {function} AFTER DELETE ON {table} "
            f"REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION {function}()"
        )


def downgrade() -> None:
    for table, function in TRIGGERS:
        op.execute(f"DROP TRIGGER IF EXISTS {function} ON {table}")
    for name in FUNCTIONS:
        op.execute(f"DROP FUNCTION IF EXISTS {name}()")
    for table in reversed(GRAPH_TABLES):
        op.drop_table(table)
