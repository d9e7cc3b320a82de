"""The schema as SQLAlchemy Core tables. Migrations in ``migrations/versions`` build exactly this
(a test compares the two).

Every tenant table leads its primary key and indexes with ``tenant_id`` so the schema can be
distributed by tenant (Citus) without change. Content is stored only as ciphertext + nonce +
key id; ``content_hash`` is a keyed HMAC, so equality is checkable without plaintext.
"""

from __future__ import annotations

from typing import Any, get_args

from pgvector.sqlalchemy import Vector
from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    DateTime,
    Float,
    ForeignKeyConstraint,
    Identity,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    PrimaryKeyConstraint,
    SmallInteger,
    Table,
    Text,
    UniqueConstraint,
    Uuid,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSONB

from memvault.models import AuditOperation

metadata = MetaData()

# Workers LISTEN here; every new embedding job NOTIFYs it.
JOBS_CHANNEL = "memvault_jobs"

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
    # Which model made this memory's vectors: a fallback model's are redone by the sweep.
    Column("embedding_model", Text),
    # Number of keyword terms (BM25 document length).
    Column("term_count", Integer, nullable=False, server_default="0"),
    Column("access_count", Integer, nullable=False, server_default="0"),
    Column("last_accessed", DateTime(timezone=True)),
    # Times a caller said this memory helped (``feedback``): what ranking reinforces, since
    # being returned by a search is not being used (access_count is the lifecycle's).
    Column("reinforced_count", Integer, nullable=False, server_default="0"),
    Column("occurred_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("updated_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("expires_at", DateTime(timezone=True)),
    PrimaryKeyConstraint("tenant_id", "id", name="pk_memories"),
    CheckConstraint("memory_type IN ('persistent', 'temporal')", name="ck_memories_memory_type"),
    CheckConstraint("tier IN ('hot', 'warm', 'cold')", name="ck_memories_tier"),
    CheckConstraint("importance BETWEEN 1 AND 10", name="ck_memories_importance"),
    # The owner leads with the user: an index leading with the tenant alone tied with the
    # primary key in foreign-key checks on a never-analysed table (migration 0013).
    Index("ix_memories_owner", "user_id", "tenant_id", "app_id"),
    Index("ix_memories_id", "id"),
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
    # Set on rows an import brought in: who and when the export said (actor and created_at
    # are then the import's own).
    Column("claimed_actor", Text),
    Column("claimed_at", DateTime(timezone=True)),
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

# One row per chunk of a memory per model. The vector column has no fixed dimension, so models
# of any size can coexist; each model gets its own partial HNSW index over a cast to its size
# (created at start-up for the active model, see db/vectors.py).
memory_chunks = Table(
    "memory_chunks",
    metadata,
    Column("tenant_id", Text, nullable=False),
    Column("memory_id", Uuid, nullable=False),
    Column("model", Text, nullable=False),
    Column("chunk_index", Integer, nullable=False),
    Column("user_id", Text, nullable=False),
    Column("embedding", Vector(), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    PrimaryKeyConstraint("tenant_id", "memory_id", "model", "chunk_index", name="pk_memory_chunks"),
    ForeignKeyConstraint(
        ["tenant_id", "memory_id"],
        ["memories.tenant_id", "memories.id"],
        ondelete="CASCADE",
        name="fk_memory_chunks_memory",
    ),
    Index("ix_memory_chunks_owner", "tenant_id", "user_id", "model"),
)

# The blind keyword index: one row per (memory, term). ``term`` is an HMAC of the stemmed
# word, so the database holds term frequencies and equality, never words.
memory_terms = Table(
    "memory_terms",
    metadata,
    Column("tenant_id", Text, nullable=False),
    Column("user_id", Text, nullable=False),
    Column("term", BigInteger, nullable=False),
    Column("memory_id", Uuid, nullable=False),
    Column("tf", SmallInteger, nullable=False),
    # The memory's length in terms, repeated here so BM25 is scored from postings alone.
    Column("dl", Integer, nullable=False),
    PrimaryKeyConstraint("tenant_id", "user_id", "term", "memory_id", name="pk_memory_terms"),
    ForeignKeyConstraint(
        ["tenant_id", "memory_id"],
        ["memories.tenant_id", "memories.id"],
        ondelete="CASCADE",
        name="fk_memory_terms_memory",
    ),
    Index("ix_memory_terms_memory", "tenant_id", "memory_id"),
)

embedding_jobs = Table(
    "embedding_jobs",
    metadata,
    Column("tenant_id", Text, nullable=False),
    Column("id", BigInteger, Identity(always=False), nullable=False),
    Column("memory_id", Uuid, nullable=False),
    Column("status", Text, nullable=False, server_default="queued"),
    # embed: vectors only; ingest: vectors, then the write pipeline's dedup and enrichment.
    Column("kind", Text, nullable=False, server_default="embed"),
    Column("attempts", Integer, nullable=False, server_default="0"),
    Column("last_error", Text),
    Column("available_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("locked_until", DateTime(timezone=True)),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("updated_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    PrimaryKeyConstraint("tenant_id", "id", name="pk_embedding_jobs"),
    ForeignKeyConstraint(
        ["tenant_id", "memory_id"],
        ["memories.tenant_id", "memories.id"],
        ondelete="CASCADE",
        name="fk_embedding_jobs_memory",
    ),
    CheckConstraint(
        "status IN ('queued', 'processing', 'done', 'failed')", name="ck_embedding_jobs_status"
    ),
    CheckConstraint("kind IN ('embed', 'ingest')", name="ck_embedding_jobs_kind"),
    # At most one waiting job per memory: a second content change before the first is picked
    # up needs no second job, the worker always embeds the current content.
    Index(
        "ux_embedding_jobs_queued",
        "tenant_id",
        "memory_id",
        unique=True,
        postgresql_where=text("status = 'queued'"),
    ),
    Index("ix_embedding_jobs_ready", "available_at", postgresql_where=text("status = 'queued'")),
    Index(
        "ix_embedding_jobs_leased", "locked_until", postgresql_where=text("status = 'processing'")
    ),
    Index("ix_embedding_jobs_memory", "tenant_id", "memory_id"),
)

# Vectors (packed float32) by SHA-256(model + text); UNLOGGED: a cache may be lost in a crash,
# it is never the only copy of anything.
embedding_cache = Table(
    "embedding_cache",
    metadata,
    Column("key", LargeBinary, primary_key=True),
    Column("embedding", LargeBinary, nullable=False),  # packed float32
    Column("expires_at", DateTime(timezone=True), nullable=False),
    Index("ix_embedding_cache_expires", "expires_at"),
    prefixes=["UNLOGGED"],
)

# API keys: only a SHA-256 of the secret is kept (the secret is 256 random bits, so a slow
# password hash would add latency to every request and no safety). Looked up by prefix before
# any tenant is known, so this table has no row-level policy; only memvault.auth reads it.
api_keys = Table(
    "api_keys",
    metadata,
    Column("id", Uuid, nullable=False),
    Column("tenant_id", Text, nullable=False),
    Column("name", Text),
    Column("prefix", Text, nullable=False),
    Column("secret_hash", LargeBinary, nullable=False),
    Column("scopes", ARRAY(Text), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("revoked_at", DateTime(timezone=True)),
    PrimaryKeyConstraint("id", name="pk_api_keys"),
    UniqueConstraint("prefix", name="uq_api_keys_prefix"),
    Index("ix_api_keys_tenant", "tenant_id"),
)

# Each running worker stamps its row every few seconds; /ready reads the freshest.
worker_heartbeats = Table(
    "worker_heartbeats",
    metadata,
    Column("worker_id", Text, nullable=False),
    Column("beat_at", DateTime(timezone=True), nullable=False),
    PrimaryKeyConstraint("worker_id", name="pk_worker_heartbeats"),
)

# One token bucket per API key (or client address) for every server process; see
# db/ratelimit.py. UNLOGGED: losing it in a crash only hands each key a fresh burst.
rate_limit_buckets = Table(
    "rate_limit_buckets",
    metadata,
    Column("key", Text, nullable=False),
    Column("tokens", Float, nullable=False),
    Column("allowed", Boolean, nullable=False),  # whether the last take got a token
    Column("at", DateTime(timezone=True), nullable=False),
    PrimaryKeyConstraint("key", name="pk_rate_limit_buckets"),
    prefixes=["UNLOGGED"],
)

# Dashboard sessions every server process finds when no Redis is configured (db/ui_sessions.py):
# keyed by a digest of the session id, the payload sealed under the master key. UNLOGGED:
# losing them in a crash only asks every browser to sign in again.
ui_sessions = Table(
    "ui_sessions",
    metadata,
    Column("digest", LargeBinary, nullable=False),
    Column("payload", LargeBinary, nullable=False),
    Column("expires_at", DateTime(timezone=True), nullable=False),
    PrimaryKeyConstraint("digest", name="pk_ui_sessions"),
    Index("ix_ui_sessions_expires", "expires_at"),
    prefixes=["UNLOGGED"],
)

# --- lifecycle and audit ------------------------------------------------------------

# One row per run of a scheduled lifecycle job (dry runs included). Store-wide like the worker
# heartbeats: jobs span tenants, and a run's row holds counts, never a tenant's data.
scheduled_runs = Table(
    "scheduled_runs",
    metadata,
    Column("id", BigInteger, Identity(always=False), nullable=False),
    Column("job", Text, nullable=False),
    Column("started_at", DateTime(timezone=True), nullable=False),
    Column("finished_at", DateTime(timezone=True)),
    Column("outcome", Text, nullable=False, server_default="running"),
    Column("duration_ms", Float),
    Column("counts", JSONB, nullable=False, server_default=text("'{}'::jsonb")),
    Column("dry_run", Boolean, nullable=False, server_default=text("false")),
    Column("error_code", Text),
    Column("undone_at", DateTime(timezone=True)),
    PrimaryKeyConstraint("id", name="pk_scheduled_runs"),
    CheckConstraint(
        "outcome IN ('running', 'ok', 'stopped', 'failed')", name="ck_scheduled_runs_outcome"
    ),
    Index("ix_scheduled_runs_job", "job", "started_at"),
)

# Every value a decay run changed, so the run can be undone (``jobs schedule undo decay ID``).
# ``target`` names what decayed: memory importance now; entity salience and inferred-fact
# confidence register their own targets (lifecycle/jobs.py DECAY_TARGETS).
decay_changes = Table(
    "decay_changes",
    metadata,
    Column("tenant_id", Text, nullable=False),
    Column("run_id", BigInteger, nullable=False),
    Column("target", Text, nullable=False),
    Column("item_id", Uuid, nullable=False),
    Column("old_value", Float, nullable=False),
    Column("new_value", Float, nullable=False),
    PrimaryKeyConstraint("tenant_id", "run_id", "target", "item_id", name="pk_decay_changes"),
    Index("ix_decay_changes_run", "run_id"),
)

# The settings in force when audit rows were written, once per distinct snapshot (secrets
# left out); each audit row points here by the snapshot's hash instead of repeating it.
audit_settings = Table(
    "audit_settings",
    metadata,
    Column("id", LargeBinary, nullable=False),
    Column("snapshot", JSONB, nullable=False),
    Column("first_seen", DateTime(timezone=True), nullable=False, server_default=func.now()),
    PrimaryKeyConstraint("id", name="pk_audit_settings"),
)

AUDIT_OPERATIONS: tuple[str, ...] = get_args(AuditOperation)

# Who did what to which memories, partitioned by day (``audit_log_pYYYYMMDD``, made ahead and
# dropped past retention by the ``audit_partitions`` job; see db/audit.py). A verbose level's
# query text is sealed like content, bound to the tenant and the row's id.
audit_log = Table(
    "audit_log",
    metadata,
    Column("tenant_id", Text, nullable=False),
    Column("at", DateTime(timezone=True), nullable=False),
    Column("id", Uuid, nullable=False),
    Column("operation", Text, nullable=False),
    Column("memory_kind", Text),
    Column("user_id", Text),
    Column("actor", Text, nullable=False),
    Column("request_id", Text),
    Column("session_id", Text),
    Column("conversation_id", Text),
    Column("source_channel", Text),
    Column("target_channel", Text),
    Column("memory_ids", ARRAY(Uuid), nullable=False, server_default="{}"),
    Column("result_count", Integer),
    Column("latency_ms", Float),
    Column("success", Boolean, nullable=False),
    Column("error_code", Text),
    Column("promotion_rule", Text),
    Column("promotion_score", Float),
    Column("details", JSONB, nullable=False, server_default=text("'{}'::jsonb")),
    Column("settings_id", LargeBinary),
    Column("query_ciphertext", LargeBinary),
    Column("query_nonce", LargeBinary),
    Column("query_key_id", Text),
    PrimaryKeyConstraint("tenant_id", "at", "id", name="pk_audit_log"),
    CheckConstraint(
        "operation IN (" + ", ".join(f"'{o}'" for o in AUDIT_OPERATIONS) + ")",
        name="ck_audit_log_operation",
    ),
    Index("ix_audit_log_user", "tenant_id", "user_id", "at"),
    postgresql_partition_by="RANGE (at)",
)


# --- cognitive memory (episodes, working memory, procedures, goals, profiles) ----------------
# Every sealed cognitive row holds its secret fields as one sealed JSON payload (ciphertext,
# nonce, key_id) bound to the table and the row's primary key (cognitive/payloads.py); key
# rotation reseals them as it does every sealed column (db/sealed_columns.py).


def _sealed_columns() -> list[Column[Any]]:
    return [
        Column("ciphertext", LargeBinary, nullable=False),
        Column("nonce", LargeBinary, nullable=False),
        Column("key_id", Text, nullable=False),
    ]


conversations = Table(
    "conversations",
    metadata,
    Column("tenant_id", Text, nullable=False),
    # The caller's own identifier for it, unique per user (a UUID the store minted is one).
    Column("id", Text, nullable=False),
    Column("user_id", Text, nullable=False),
    Column("channel", Text, nullable=False, server_default="_global"),
    *_sealed_columns(),  # {"title": ...}
    # Turns so far; also the next turn's index (indices are never reused).
    Column("turn_count", Integer, nullable=False, server_default="0"),
    Column("started_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("last_turn_at", DateTime(timezone=True)),
    Column("consolidated_at", DateTime(timezone=True)),
    # The consolidation watermark: turns with a lower index went through the extractor.
    Column("consolidated_turns", Integer, nullable=False, server_default="0"),
    Column("archived", Boolean, nullable=False, server_default=text("false")),
    PrimaryKeyConstraint("tenant_id", "user_id", "id", name="pk_conversations"),
    Index("ix_conversations_owner", "tenant_id", "user_id", "channel", "started_at"),
    Index("ix_conversations_key", "key_id"),
)

# A turn's words are its memory's (sealed there, searchable there): the turn row holds order
# and provenance only. Rows arrive in time order, so a BRIN range index stays tiny and fits.
conversation_turns = Table(
    "conversation_turns",
    metadata,
    Column("tenant_id", Text, nullable=False),
    Column("conversation_id", Text, nullable=False),
    Column("turn_index", Integer, nullable=False),
    Column("user_id", Text, nullable=False),
    Column("channel", Text, nullable=False, server_default="_global"),
    Column("memory_id", Uuid, nullable=False),
    Column("role", Text, nullable=False),
    Column("model", Text),
    Column("token_count", Integer, nullable=False, server_default="0"),
    Column("occurred_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    PrimaryKeyConstraint(
        "tenant_id", "user_id", "conversation_id", "turn_index", name="pk_conversation_turns"
    ),
    ForeignKeyConstraint(
        ["tenant_id", "user_id", "conversation_id"],
        ["conversations.tenant_id", "conversations.user_id", "conversations.id"],
        ondelete="CASCADE",
        name="fk_conversation_turns_conversation",
    ),
    ForeignKeyConstraint(
        ["tenant_id", "memory_id"],
        ["memories.tenant_id", "memories.id"],
        ondelete="CASCADE",
        name="fk_conversation_turns_memory",
    ),
    Index("ix_conversation_turns_recent", "tenant_id", "user_id", "channel", "occurred_at"),
    Index("ix_conversation_turns_memory", "tenant_id", "memory_id"),
    Index("ix_conversation_turns_occurred_brin", "occurred_at", postgresql_using="brin"),
)

# Working memory without Redis. UNLOGGED: a live session's scratch space, lost in a crash like
# Redis would lose it; every row expires.
working_memory = Table(
    "working_memory",
    metadata,
    Column("tenant_id", Text, nullable=False),
    Column("user_id", Text, nullable=False),
    Column("channel", Text, nullable=False),
    Column("conversation_id", Text, nullable=False),
    Column("slot", Text, nullable=False),
    Column("key", Text, nullable=False),
    *_sealed_columns(),
    Column("expires_at", DateTime(timezone=True), nullable=False),
    PrimaryKeyConstraint(
        "tenant_id",
        "user_id",
        "channel",
        "conversation_id",
        "slot",
        "key",
        name="pk_working_memory",
    ),
    Index("ix_working_memory_expires", "expires_at"),
    Index("ix_working_memory_key", "key_id"),
    prefixes=["UNLOGGED"],
)

tool_invocations = Table(
    "tool_invocations",
    metadata,
    Column("tenant_id", Text, nullable=False),
    Column("id", Uuid, nullable=False),
    Column("user_id", Text, nullable=False),
    Column("channel", Text, nullable=False, server_default="_global"),
    Column("conversation_id", Text),
    Column("turn_index", Integer),
    Column("tool_name", Text, nullable=False),
    *_sealed_columns(),  # {"input": ..., "output": ..., "error": ...}, PII-filtered first
    Column("success", Boolean, nullable=False),
    Column("latency_ms", Float),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    PrimaryKeyConstraint("tenant_id", "id", name="pk_tool_invocations"),
    Index("ix_tool_invocations_stats", "tenant_id", "user_id", "channel", "tool_name"),
    Index("ix_tool_invocations_conversation", "tenant_id", "conversation_id", "created_at"),
    Index("ix_tool_invocations_created_brin", "created_at", postgresql_using="brin"),
    Index("ix_tool_invocations_key", "key_id"),
)

strategies = Table(
    "strategies",
    metadata,
    Column("tenant_id", Text, nullable=False),
    Column("id", Uuid, nullable=False),
    Column("user_id", Text, nullable=False),
    Column("channel", Text, nullable=False, server_default="_global"),
    *_sealed_columns(),  # {"description": ..., "context_pattern": ...}
    Column("tool_sequence", ARRAY(Text), nullable=False, server_default="{}"),
    Column("source_conversation_id", Text),
    Column("success_count", Integer, nullable=False, server_default="0"),
    Column("failure_count", Integer, nullable=False, server_default="0"),
    Column("last_used", DateTime(timezone=True)),
    Column("model", Text, nullable=False),
    Column("embedding", Vector(), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    PrimaryKeyConstraint("tenant_id", "id", name="pk_strategies"),
    Index("ix_strategies_owner", "tenant_id", "user_id", "channel", "model"),
    Index("ix_strategies_key", "key_id"),
)

goals = Table(
    "goals",
    metadata,
    Column("tenant_id", Text, nullable=False),
    Column("id", Uuid, nullable=False),
    Column("user_id", Text, nullable=False),
    Column("channel", Text, nullable=False, server_default="_global"),
    *_sealed_columns(),  # {"description": ..., "result": ...}
    Column("priority", SmallInteger, nullable=False, server_default="5"),
    Column("status", Text, nullable=False, server_default="active"),
    Column("deadline", DateTime(timezone=True)),
    Column("parent_id", Uuid),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("completed_at", DateTime(timezone=True)),
    PrimaryKeyConstraint("tenant_id", "id", name="pk_goals"),
    ForeignKeyConstraint(
        ["tenant_id", "parent_id"],
        ["goals.tenant_id", "goals.id"],
        ondelete="CASCADE",
        name="fk_goals_parent",
    ),
    CheckConstraint(
        "status IN ('active', 'completed', 'abandoned', 'blocked')", name="ck_goals_status"
    ),
    CheckConstraint("priority BETWEEN 1 AND 10", name="ck_goals_priority"),
    Index("ix_goals_owner", "user_id", "tenant_id", "status", "channel"),
    Index("ix_goals_parent", "parent_id", "tenant_id"),
    Index("ix_goals_key", "key_id"),
)

goal_blockers = Table(
    "goal_blockers",
    metadata,
    Column("tenant_id", Text, nullable=False),
    Column("goal_id", Uuid, nullable=False),
    Column("blocker_id", Uuid, nullable=False),
    PrimaryKeyConstraint("tenant_id", "goal_id", "blocker_id", name="pk_goal_blockers"),
    ForeignKeyConstraint(
        ["tenant_id", "goal_id"],
        ["goals.tenant_id", "goals.id"],
        ondelete="CASCADE",
        name="fk_goal_blockers_goal",
    ),
    ForeignKeyConstraint(
        ["tenant_id", "blocker_id"],
        ["goals.tenant_id", "goals.id"],
        ondelete="CASCADE",
        name="fk_goal_blockers_blocker",
    ),
    Index("ix_goal_blockers_blocker", "tenant_id", "blocker_id"),
)

user_profiles = Table(
    "user_profiles",
    metadata,
    Column("tenant_id", Text, nullable=False),
    Column("user_id", Text, nullable=False),
    Column("channel", Text, nullable=False, server_default="_global"),
    *_sealed_columns(),  # {"preferences": {...}, "expertise": [...], "communication_style": ...}
    Column("updated_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    PrimaryKeyConstraint("tenant_id", "user_id", "channel", name="pk_user_profiles"),
    Index("ix_user_profiles_key", "key_id"),
)

COGNITIVE_TABLES = (
    "conversations",
    "conversation_turns",
    "working_memory",
    "tool_invocations",
    "strategies",
    "goals",
    "goal_blockers",
    "user_profiles",
)

# --- knowledge graph: entities, bi-temporal facts, relations -------------------------
# Names, aliases, descriptions, claims, literal values and relation properties are sealed (AAD:
# tenant, row id, column); equality runs on keyed HMACs (``name_key``, ``alias_keys``,
# ``value_key``), keyword search on blind terms. Predicates and relation types are the graph's
# schema and stay readable, so the store can answer "current works_for of X" in SQL.
ENTITY_TYPES = ("person", "organisation", "place", "project", "tool", "event", "concept", "other")
TEMPORAL_TAGS = ("current", "past", "future")
CERTAINTIES = ("explicit", "implied", "inferred", "uncertain")

entities = Table(
    "entities",
    metadata,
    Column("tenant_id", Text, nullable=False),
    Column("id", Uuid, nullable=False),
    Column("user_id", Text, nullable=False),
    Column("app_id", Text, nullable=False, server_default="default"),
    Column("channel", Text, nullable=False, server_default="_global"),
    Column("type", Text, nullable=False, server_default="other"),
    Column("name_ciphertext", LargeBinary, nullable=False),
    Column("name_nonce", LargeBinary, nullable=False),
    # Aliases as one sealed JSON list, and each alias's keyed hash for lookups.
    Column("aliases_ciphertext", LargeBinary),
    Column("aliases_nonce", LargeBinary),
    Column("description_ciphertext", LargeBinary),
    Column("description_nonce", LargeBinary),
    Column("key_id", Text, nullable=False),
    Column("name_key", LargeBinary, nullable=False),
    Column("alias_keys", ARRAY(LargeBinary), nullable=False, server_default="{}"),
    Column("embedding", Vector()),
    Column("embedding_model", Text),
    Column("salience", Float, nullable=False, server_default="0.5"),
    Column("access_count", Integer, nullable=False, server_default="0"),
    Column("last_accessed", DateTime(timezone=True)),
    Column("first_seen", DateTime(timezone=True), nullable=False, server_default=func.now()),
    # System-written facts about the row (extractor, origin); never user content.
    Column("properties", JSONB, nullable=False, server_default=text("'{}'::jsonb")),
    # Set while this entity is merged into another: lookups follow it; split clears it. No
    # foreign key: a composite one could not null just this column; the cleanup trigger does.
    Column("merged_into", Uuid),
    PrimaryKeyConstraint("tenant_id", "id", name="pk_entities"),
    CheckConstraint(
        "type IN (" + ", ".join(f"'{t}'" for t in ENTITY_TYPES) + ")", name="ck_entities_type"
    ),
    Index("ix_entities_name", "user_id", "tenant_id", "name_key"),
    Index("ix_entities_alias_keys", "alias_keys", postgresql_using="gin"),
    Index("ix_entities_key", "key_id"),
)

facts = Table(
    "facts",
    metadata,
    Column("tenant_id", Text, nullable=False),
    Column("id", Uuid, nullable=False),
    Column("user_id", Text, nullable=False),
    Column("app_id", Text, nullable=False, server_default="default"),
    Column("channel", Text, nullable=False, server_default="_global"),
    Column("subject_id", Uuid, nullable=False),
    Column("predicate", Text, nullable=False),
    Column("object_id", Uuid),
    Column("value_ciphertext", LargeBinary),
    Column("value_nonce", LargeBinary),
    Column("value_key", LargeBinary),
    Column("claim_ciphertext", LargeBinary, nullable=False),
    Column("claim_nonce", LargeBinary, nullable=False),
    Column("key_id", Text, nullable=False),
    Column("confidence", Float, nullable=False),
    Column("certainty", Text, nullable=False, server_default="explicit"),
    Column("temporal", Text, nullable=False, server_default="current"),
    Column("source", Text),
    Column("embedding", Vector()),
    Column("embedding_model", Text),
    # Valid time: when it holds in the world. System time: when we learned it, and when a
    # newer fact replaced it (a superseded fact is kept: history stays answerable).
    Column("valid_from", DateTime(timezone=True)),
    Column("valid_until", DateTime(timezone=True)),
    Column("recorded_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("superseded_at", DateTime(timezone=True)),
    Column("superseded_by", Uuid),
    Column("term_count", Integer, nullable=False, server_default="0"),
    Column("access_count", Integer, nullable=False, server_default="0"),
    Column("last_accessed", DateTime(timezone=True)),
    # Set by a person's retire or correction: the interval it had before (and which change it
    # was), so the change can be undone exactly; cleared by the undo.
    Column("undo", JSONB),
    PrimaryKeyConstraint("tenant_id", "id", name="pk_facts"),
    ForeignKeyConstraint(
        ["tenant_id", "subject_id"],
        ["entities.tenant_id", "entities.id"],
        ondelete="CASCADE",
        name="fk_facts_subject",
    ),
    ForeignKeyConstraint(
        ["tenant_id", "object_id"],
        ["entities.tenant_id", "entities.id"],
        ondelete="CASCADE",
        name="fk_facts_object",
    ),
    CheckConstraint(
        "(object_id IS NULL) <> (value_ciphertext IS NULL)", name="ck_facts_object_or_value"
    ),
    CheckConstraint("confidence BETWEEN 0 AND 1", name="ck_facts_confidence"),
    CheckConstraint(
        "certainty IN (" + ", ".join(f"'{c}'" for c in CERTAINTIES) + ")", name="ck_facts_certainty"
    ),
    CheckConstraint(
        "temporal IN (" + ", ".join(f"'{t}'" for t in TEMPORAL_TAGS) + ")", name="ck_facts_temporal"
    ),
    Index("ix_facts_subject", "subject_id", "tenant_id", "predicate"),
    Index("ix_facts_object", "object_id", "tenant_id"),
    Index("ix_facts_user", "user_id", "tenant_id", "predicate"),
    # Listings of a user's facts, newest first (migration 0019).
    Index("ix_facts_recent", "user_id", "tenant_id", text("recorded_at DESC"), "id"),
    Index("ix_facts_key", "key_id"),
)

# DERIVED_FROM: which memories a fact was read from. A fact loses a source when its memory
# goes, and goes itself with its last source (a trigger, migration 0007), in the same
# transaction. A fact stated directly (POST /v1/facts) has no source row.
fact_sources = Table(
    "fact_sources",
    metadata,
    Column("tenant_id", Text, nullable=False),
    Column("fact_id", Uuid, nullable=False),
    Column("memory_id", Uuid, nullable=False),
    Column("user_id", Text, nullable=False),
    PrimaryKeyConstraint("tenant_id", "fact_id", "memory_id", name="pk_fact_sources"),
    ForeignKeyConstraint(
        ["tenant_id", "fact_id"],
        ["facts.tenant_id", "facts.id"],
        ondelete="CASCADE",
        name="fk_fact_sources_fact",
    ),
    ForeignKeyConstraint(
        ["tenant_id", "memory_id"],
        ["memories.tenant_id", "memories.id"],
        ondelete="CASCADE",
        name="fk_fact_sources_memory",
    ),
    Index("ix_fact_sources_memory", "tenant_id", "memory_id"),
)

# MENTIONS: memory → entity.
entity_mentions = Table(
    "entity_mentions",
    metadata,
    Column("tenant_id", Text, nullable=False),
    Column("memory_id", Uuid, nullable=False),
    Column("entity_id", Uuid, nullable=False),
    Column("user_id", Text, nullable=False),
    PrimaryKeyConstraint("tenant_id", "memory_id", "entity_id", name="pk_entity_mentions"),
    ForeignKeyConstraint(
        ["tenant_id", "memory_id"],
        ["memories.tenant_id", "memories.id"],
        ondelete="CASCADE",
        name="fk_entity_mentions_memory",
    ),
    ForeignKeyConstraint(
        ["tenant_id", "entity_id"],
        ["entities.tenant_id", "entities.id"],
        ondelete="CASCADE",
        name="fk_entity_mentions_entity",
    ),
    Index("ix_entity_mentions_entity", "tenant_id", "entity_id"),
)

relations = Table(
    "relations",
    metadata,
    Column("tenant_id", Text, nullable=False),
    Column("id", Uuid, nullable=False),
    Column("user_id", Text, nullable=False),
    Column("app_id", Text, nullable=False, server_default="default"),
    Column("channel", Text, nullable=False, server_default="_global"),
    Column("source_id", Uuid, nullable=False),
    Column("type", Text, nullable=False),
    Column("target_id", Uuid, nullable=False),
    Column("properties_ciphertext", LargeBinary),
    Column("properties_nonce", LargeBinary),
    Column("key_id", Text),
    Column("valid_from", DateTime(timezone=True)),
    Column("valid_until", DateTime(timezone=True)),
    Column("recorded_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    PrimaryKeyConstraint("tenant_id", "id", name="pk_relations"),
    # Not unique: a merge may bring two equal edges onto one entity, and a split parts them.
    Index("ix_relations_edge", "source_id", "tenant_id", "type", "target_id"),
    ForeignKeyConstraint(
        ["tenant_id", "source_id"],
        ["entities.tenant_id", "entities.id"],
        ondelete="CASCADE",
        name="fk_relations_source",
    ),
    ForeignKeyConstraint(
        ["tenant_id", "target_id"],
        ["entities.tenant_id", "entities.id"],
        ondelete="CASCADE",
        name="fk_relations_target",
    ),
    Index("ix_relations_target", "target_id", "tenant_id"),
    Index("ix_relations_key", "key_id"),
)

relation_sources = Table(
    "relation_sources",
    metadata,
    Column("tenant_id", Text, nullable=False),
    Column("relation_id", Uuid, nullable=False),
    Column("memory_id", Uuid, nullable=False),
    Column("user_id", Text, nullable=False),
    PrimaryKeyConstraint("tenant_id", "relation_id", "memory_id", name="pk_relation_sources"),
    ForeignKeyConstraint(
        ["tenant_id", "relation_id"],
        ["relations.tenant_id", "relations.id"],
        ondelete="CASCADE",
        name="fk_relation_sources_relation",
    ),
    ForeignKeyConstraint(
        ["tenant_id", "memory_id"],
        ["memories.tenant_id", "memories.id"],
        ondelete="CASCADE",
        name="fk_relation_sources_memory",
    ),
    Index("ix_relation_sources_memory", "tenant_id", "memory_id"),
)

# Blind keyword postings of facts (their claims) and entities (names and aliases).
fact_terms = Table(
    "fact_terms",
    metadata,
    Column("tenant_id", Text, nullable=False),
    Column("user_id", Text, nullable=False),
    Column("term", BigInteger, nullable=False),
    Column("fact_id", Uuid, nullable=False),
    Column("tf", SmallInteger, nullable=False),
    PrimaryKeyConstraint("tenant_id", "user_id", "term", "fact_id", name="pk_fact_terms"),
    ForeignKeyConstraint(
        ["tenant_id", "fact_id"],
        ["facts.tenant_id", "facts.id"],
        ondelete="CASCADE",
        name="fk_fact_terms_fact",
    ),
    Index("ix_fact_terms_fact", "tenant_id", "fact_id"),
)

entity_terms = Table(
    "entity_terms",
    metadata,
    Column("tenant_id", Text, nullable=False),
    Column("user_id", Text, nullable=False),
    Column("term", BigInteger, nullable=False),
    Column("entity_id", Uuid, nullable=False),
    Column("tf", SmallInteger, nullable=False),
    PrimaryKeyConstraint("tenant_id", "user_id", "term", "entity_id", name="pk_entity_terms"),
    ForeignKeyConstraint(
        ["tenant_id", "entity_id"],
        ["entities.tenant_id", "entities.id"],
        ondelete="CASCADE",
        name="fk_entity_terms_entity",
    ),
    Index("ix_entity_terms_entity", "tenant_id", "entity_id"),
)

# A merge re-points the merged entity's facts and relations at the entity it joined and says
# which ones, so a split moves exactly those back.
entity_merges = Table(
    "entity_merges",
    metadata,
    Column("tenant_id", Text, nullable=False),
    Column("id", Uuid, nullable=False),
    Column("user_id", Text, nullable=False),
    Column("merged_id", Uuid, nullable=False),
    Column("into_id", Uuid, nullable=False),
    Column("subject_facts", ARRAY(Uuid), nullable=False, server_default="{}"),
    Column("object_facts", ARRAY(Uuid), nullable=False, server_default="{}"),
    Column("source_relations", ARRAY(Uuid), nullable=False, server_default="{}"),
    Column("target_relations", ARRAY(Uuid), nullable=False, server_default="{}"),
    Column("actor", Text, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("split_at", DateTime(timezone=True)),
    PrimaryKeyConstraint("tenant_id", "id", name="pk_entity_merges"),
    ForeignKeyConstraint(
        ["tenant_id", "merged_id"],
        ["entities.tenant_id", "entities.id"],
        ondelete="CASCADE",
        name="fk_entity_merges_merged",
    ),
    ForeignKeyConstraint(
        ["tenant_id", "into_id"],
        ["entities.tenant_id", "entities.id"],
        ondelete="CASCADE",
        name="fk_entity_merges_into",
    ),
    Index("ix_entity_merges_merged", "tenant_id", "merged_id", "created_at"),
    Index("ix_entity_merges_into", "tenant_id", "into_id"),
)

# flag_review: a new value that contradicts the current one is kept beside it and listed here.
fact_reviews = Table(
    "fact_reviews",
    metadata,
    Column("tenant_id", Text, nullable=False),
    Column("id", Uuid, nullable=False),
    Column("user_id", Text, nullable=False),
    Column("fact_id", Uuid, nullable=False),
    Column("conflicts_with", Uuid, nullable=False),
    Column("reason", Text, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    PrimaryKeyConstraint("tenant_id", "id", name="pk_fact_reviews"),
    ForeignKeyConstraint(
        ["tenant_id", "fact_id"],
        ["facts.tenant_id", "facts.id"],
        ondelete="CASCADE",
        name="fk_fact_reviews_fact",
    ),
    ForeignKeyConstraint(
        ["tenant_id", "conflicts_with"],
        ["facts.tenant_id", "facts.id"],
        ondelete="CASCADE",
        name="fk_fact_reviews_conflict",
    ),
    Index("ix_fact_reviews_user", "tenant_id", "user_id", "created_at"),
    Index("ix_fact_reviews_conflict", "tenant_id", "conflicts_with"),
)

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

__all__ = [
    "AUDIT_OPERATIONS",
    "COGNITIVE_TABLES",
    "GRAPH_TABLES",
    "PROMOTION_TABLES",
    "api_keys",
    "audit_log",
    "audit_settings",
    "conversation_turns",
    "conversations",
    "decay_changes",
    "embedding_cache",
    "embedding_jobs",
    "encryption_keys",
    "entities",
    "entity_mentions",
    "entity_merges",
    "entity_terms",
    "fact_promotions",
    "fact_reviews",
    "fact_sources",
    "fact_terms",
    "facts",
    "goal_blockers",
    "goals",
    "memories",
    "memory_chunks",
    "memory_history",
    "memory_terms",
    "merge_undos",
    "metadata",
    "rate_limit_buckets",
    "relation_sources",
    "relations",
    "scheduled_runs",
    "strategies",
    "tenant_keys",
    "tool_invocations",
    "ui_sessions",
    "user_profiles",
    "worker_heartbeats",
    "working_memory",
]

# --- fact promotion (a project fact copied to _global) ----------------------

# One row per promoted copy: the _global fact and the project fact it was copied from, so a
# promotion happens once and the copy can be traced back to where it was learned.
fact_promotions = Table(
    "fact_promotions",
    metadata,
    Column("tenant_id", Text, nullable=False),
    Column("fact_id", Uuid, nullable=False),
    Column("promoted_from", Uuid, nullable=False),
    Column("user_id", Text, nullable=False),
    Column("actor", Text, nullable=False),
    Column("promoted_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    PrimaryKeyConstraint("tenant_id", "fact_id", name="pk_fact_promotions"),
    UniqueConstraint("tenant_id", "promoted_from", name="uq_fact_promotions_from"),
    ForeignKeyConstraint(
        ["tenant_id", "fact_id"],
        ["facts.tenant_id", "facts.id"],
        ondelete="CASCADE",
        name="fk_fact_promotions_fact",
    ),
    ForeignKeyConstraint(
        ["tenant_id", "promoted_from"],
        ["facts.tenant_id", "facts.id"],
        ondelete="CASCADE",
        name="fk_fact_promotions_from",
    ),
)
PROMOTION_TABLES = ("fact_promotions",)

# --- per-tenant data keys (crypto-shredding) --------------------------------

# One row per tenant while ``per_tenant_keys`` is on: its data key, sealed (AES-GCM) under the
# master key ``master_key_id`` and bound to the tenant. Deleting the row shreds the tenant.
tenant_keys = Table(
    "tenant_keys",
    metadata,
    Column("tenant_id", Text, nullable=False),
    Column("key_id", Text, nullable=False),
    Column("wrapped", LargeBinary, nullable=False),
    Column("nonce", LargeBinary, nullable=False),
    Column("master_key_id", Text, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    PrimaryKeyConstraint("tenant_id", name="pk_tenant_keys"),
)

# --- the external vector index's outbox (Qdrant) ------------------------------

# Memories whose points an external vector index must sync with their rows and chunks, queued
# by triggers in the writing transaction (migration 0017; enabled only while such an index is
# configured). ``version`` is the queuing transaction's id: a sync removes the entry only if
# no later write queued it again meanwhile.
vector_index_outbox = Table(
    "vector_index_outbox",
    metadata,
    Column("tenant_id", Text, nullable=False),
    Column("memory_id", Uuid, nullable=False),
    Column("user_id", Text, nullable=False),
    Column("version", BigInteger, nullable=False),
    Column("attempts", Integer, nullable=False, server_default="0"),
    Column("last_error", Text),
    Column("available_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("locked_until", DateTime(timezone=True)),
    PrimaryKeyConstraint("tenant_id", "memory_id", name="pk_vector_index_outbox"),
    Index("ix_vector_index_outbox_ready", "available_at"),
)

# --- webhooks -----------------------------------------------------------------------------

# A tenant's webhook endpoints. The signing secret must be read back to sign, so it is sealed
# (AES-GCM under the master key, bound to the tenant and the row) rather than hashed like an
# API key: under the master key and not the tenant's data key, so the tenant's erasure event
# can still be signed after a crypto-shred destroyed that key. ``event_types`` NULL: every type.
webhook_subscriptions = Table(
    "webhook_subscriptions",
    metadata,
    Column("tenant_id", Text, nullable=False),
    Column("id", Uuid, nullable=False),
    Column("url", Text, nullable=False),
    Column("secret_ciphertext", LargeBinary, nullable=False),
    Column("secret_nonce", LargeBinary, nullable=False),
    Column("secret_key_id", Text, nullable=False),
    Column("event_types", ARRAY(Text)),
    Column("app_id", Text),
    Column("filter_user_id", Text),
    Column("include_content", Boolean, nullable=False, server_default=text("false")),
    Column("enabled", Boolean, nullable=False, server_default=text("true")),
    Column("description", Text),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("updated_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    PrimaryKeyConstraint("tenant_id", "id", name="pk_webhook_subscriptions"),
)

# The outbox, fanned out: one row per (event, matching subscription), written in the
# transaction of the change it reports (db/webhooks.py). ``id`` orders a subscription's events
# for a user (``user_id`` '' for events of the whole tenant); ``data`` holds ids, kinds and
# times, never content (a subscription that asks for content gets it opened at delivery).
webhook_deliveries = Table(
    "webhook_deliveries",
    metadata,
    Column("tenant_id", Text, nullable=False),
    Column("id", BigInteger, Identity(always=False), nullable=False),
    Column("subscription_id", Uuid, nullable=False),
    Column("event_id", Uuid, nullable=False),
    Column("event_type", Text, nullable=False),
    Column("user_id", Text, nullable=False, server_default=""),
    Column("data", JSONB, nullable=False),
    Column("occurred_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("state", Text, nullable=False, server_default="pending"),
    Column("attempts", Integer, nullable=False, server_default="0"),
    Column("last_status", Integer),
    Column("last_error", Text),
    Column("available_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("locked_until", DateTime(timezone=True)),
    Column("delivered_at", DateTime(timezone=True)),
    PrimaryKeyConstraint("tenant_id", "id", name="pk_webhook_deliveries"),
    ForeignKeyConstraint(
        ["tenant_id", "subscription_id"],
        ["webhook_subscriptions.tenant_id", "webhook_subscriptions.id"],
        ondelete="CASCADE",
        name="fk_webhook_deliveries_subscription",
    ),
    CheckConstraint(
        "state IN ('pending', 'delivered', 'dead')", name="ck_webhook_deliveries_state"
    ),
    Index(
        "ix_webhook_deliveries_ready", "available_at", postgresql_where=text("state = 'pending'")
    ),
    # The head of each (subscription, user) line: per-user order is checked against it.
    Index(
        "ix_webhook_deliveries_line",
        "tenant_id",
        "subscription_id",
        "user_id",
        "id",
        postgresql_where=text("state = 'pending'"),
    ),
    Index("ix_webhook_deliveries_subscription", "tenant_id", "subscription_id", "id"),
)

# --- idempotent writes ---------------------------------------------------------------------

# A write sent with an ``Idempotency-Key``: claimed while it runs (``status`` null, the claim
# held until ``lease_until`` and renewed while the request lasts), then its answer kept sealed
# until ``expires_at``, so a retry of the same request (another API host, after a lost
# connection) gets the first answer instead of writing twice. ``fingerprint`` is a hash of the
# method, path and body: the same key on another request is refused. ``committed_at`` is set by
# the request's first write transaction, in that transaction: a claim whose request wrote is
# never taken by a retry, even once its lease lapses (its server died before the answer was kept).
idempotent_writes = Table(
    "idempotent_writes",
    metadata,
    Column("tenant_id", Text, nullable=False),
    Column("key", Text, nullable=False),
    Column("user_id", Text, nullable=False, server_default=""),
    Column("fingerprint", LargeBinary, nullable=False),
    Column("status", SmallInteger),
    Column("ciphertext", LargeBinary),
    Column("nonce", LargeBinary),
    Column("key_id", Text),
    Column("lease_until", DateTime(timezone=True), nullable=False),
    Column("expires_at", DateTime(timezone=True), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("committed_at", DateTime(timezone=True)),
    PrimaryKeyConstraint("tenant_id", "key", name="pk_idempotent_writes"),
    Index("ix_idempotent_writes_expiry", "expires_at"),
)

# --- merges that can be undone -----------------------------------------------------------------

# One row per health merge (one cluster or all of one request): the copies it erased (each as
# an export line, with its history, vectors and source links) and the kept memories' values
# before it, sealed in one payload bound to (tenant, merge id); ``undo_merge`` puts them back.
# Kept until ``expires_at`` (``merge_undo_days``) and gone with the user; an undone merge keeps
# its row, its payload emptied, so a second undo is told when the first ran.
merge_undos = Table(
    "merge_undos",
    metadata,
    Column("tenant_id", Text, nullable=False),
    Column("id", Uuid, nullable=False),
    Column("user_id", Text, nullable=False),
    *_sealed_columns(),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("expires_at", DateTime(timezone=True), nullable=False),
    Column("undone_at", DateTime(timezone=True)),
    PrimaryKeyConstraint("tenant_id", "id", name="pk_merge_undos"),
    Index("ix_merge_undos_expires", "expires_at"),
    Index("ix_merge_undos_key", "key_id"),
)
