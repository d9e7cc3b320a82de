"""The schema as SQLAlchemy Core tables. Migrations in ``migrations/versions`` build exactly this
(a test compares the two).

Every tenant table leads its primary key and indexes with ``tenant_id`` so the schema can be
distributed by tenant (Citus) without change. Content is stored only as ciphertext + nonce +
key id; ``content_hash`` is a keyed HMAC, so equality is checkable without plaintext.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    DateTime,
    Identity,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    PrimaryKeyConstraint,
    SmallInteger,
    Table,
    Text,
    Uuid,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSONB

metadata = MetaData()

memories = Table(
    "memories",
    metadata,
    Column("tenant_id", Text, nullable=False),
    Column("id", Uuid, nullable=False),
    Column("user_id", Text, nullable=False),
    Column("app_id", Text, nullable=False, server_default="default"),
    Column("project_id", Text),
    Column("environment", Text),
    Column("channel", Text, nullable=False, server_default="_global"),
    Column("source", Text),
    Column("tags", ARRAY(Text), nullable=False, server_default="{}"),
    Column("ciphertext", LargeBinary, nullable=False),
    Column("nonce", LargeBinary, nullable=False),
    Column("key_id", Text, nullable=False),
    Column("content_hash", LargeBinary, nullable=False),
    Column("metadata", JSONB, nullable=False, server_default=text("'{}'::jsonb")),
    Column("categories", ARRAY(Text), nullable=False, server_default="{}"),
    Column("importance", SmallInteger),
    Column("memory_type", Text, nullable=False, server_default="persistent"),
    Column("valid_until", DateTime(timezone=True)),
    Column("tier", Text, nullable=False, server_default="hot"),
    Column("embedded", Boolean, nullable=False, server_default=text("false")),
    Column("access_count", Integer, nullable=False, server_default="0"),
    Column("last_accessed", DateTime(timezone=True)),
    Column("occurred_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("updated_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("expires_at", DateTime(timezone=True)),
    PrimaryKeyConstraint("tenant_id", "id", name="pk_memories"),
    CheckConstraint("memory_type IN ('persistent', 'temporal')", name="ck_memories_memory_type"),
    CheckConstraint("tier IN ('hot', 'warm', 'cold')", name="ck_memories_tier"),
    CheckConstraint("importance BETWEEN 1 AND 10", name="ck_memories_importance"),
    Index("ix_memories_user", "tenant_id", "user_id"),
    Index("ix_memories_user_app", "tenant_id", "user_id", "app_id"),
    Index("ix_memories_created_brin", "created_at", postgresql_using="brin"),
    Index(
        "ix_memories_expires",
        "expires_at",
        postgresql_where=text("expires_at IS NOT NULL"),
    ),
    Index("ix_memories_key", "key_id"),
)

memory_history = Table(
    "memory_history",
    metadata,
    Column("tenant_id", Text, nullable=False),
    Column("id", BigInteger, Identity(always=False), nullable=False),
    Column("memory_id", Uuid, nullable=False),
    Column("user_id", Text, nullable=False),
    Column("action", Text, nullable=False),
    # Old and new content are the sealed bytes of the memory itself (same associated data), so
    # history is written by copying ciphertext, never by decrypting it.
    Column("old_ciphertext", LargeBinary),
    Column("old_nonce", LargeBinary),
    Column("old_key_id", Text),
    Column("new_ciphertext", LargeBinary),
    Column("new_nonce", LargeBinary),
    Column("new_key_id", Text),
    Column("old_metadata", JSONB),
    Column("new_metadata", JSONB),
    Column("actor", Text, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    PrimaryKeyConstraint("tenant_id", "id", name="pk_memory_history"),
    CheckConstraint("action IN ('ADD', 'UPDATE', 'DELETE')", name="ck_memory_history_action"),
    Index("ix_memory_history_memory", "tenant_id", "memory_id", "id"),
)

# Which keys have sealed content in this database: checked at start-up so a wrong or missing
# key fails there, with a clear message, instead of at the first read.
encryption_keys = Table(
    "encryption_keys",
    metadata,
    Column("key_id", Text, primary_key=True),
    Column("first_used_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
)

__all__ = ["encryption_keys", "memories", "memory_history", "metadata"]
