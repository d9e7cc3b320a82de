"""Settings: one typed object, read from ``MEMVAULT_*`` environment variables by entry points only.

The library never reads the environment itself; callers build :class:`Settings` (or let an entry
point do it with ``Settings()``) and pass it down.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR"]
EmbeddingProviderName = Literal["local", "openai", "hash"]
EncoderBackend = Literal["auto", "onnx", "torch"]
LLMProviderName = Literal["openai", "anthropic"]
PIIPolicyName = Literal["redact", "reject", "allow"]
LogFormat = Literal["auto", "json", "text"]
TracingMode = Literal["off", "otlp", "console"]


def _default_data_dir() -> Path:
    return Path.home() / ".local" / "share" / "memvault"


class Settings(BaseSettings):
    """Everything memvault can be configured with. Unset ``database_url`` means embedded mode."""

    model_config = SettingsConfigDict(env_prefix="MEMVAULT_", extra="ignore", frozen=True)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # No .env file is configured, so its source finds nothing, yet it walks every field
        # again after the environment's: half the time of building settings, for nothing.
        return init_settings, env_settings, file_secret_settings

    database_url: SecretStr | None = Field(
        default=None,
        description="postgresql:// URL of a server with pgvector; unset starts the embedded one.",
    )
    database_pooler: Literal["none", "transaction"] = Field(
        default="none",
        description="transaction: MEMVAULT_DATABASE_URL goes through a pooler in transaction "
        "mode (PgBouncer): nothing is kept on a connection between transactions, and what needs "
        "a session of its own uses MEMVAULT_DATABASE_DIRECT_URL",
    )
    database_direct_url: SecretStr | None = Field(
        default=None,
        description="postgresql:// URL past the pooler (the primary, or a session-mode pool): "
        "migrations, index builds, ANALYZE, backups and the workers' LISTEN; required with "
        "database_pooler=transaction; unset: MEMVAULT_DATABASE_URL",
    )
    database_read_url: SecretStr | None = Field(
        default=None,
        description="postgresql:// URL of a streaming replica (or a pooler in front of replicas): "
        "search, list and remember() read there while it is within database_read_max_lag_s of "
        "the primary; unset: every read on MEMVAULT_DATABASE_URL",
    )
    database_read_max_lag_s: float = Field(
        default=5.0,
        gt=0,
        description="a replica further behind the primary than this is not read from: reads "
        "go to the primary until it catches up",
    )
    database_read_own_writes_wait_s: float = Field(
        default=0.5,
        ge=0,
        description="after a caller's write, its next read waits up to this long for the "
        "replica to replay it, else reads the primary",
    )
    data_dir: Path = Field(
        default_factory=_default_data_dir,
        description="embedded database, key file and exported ONNX model",
    )
    encryption_key: SecretStr | None = Field(
        default=None,
        description="Active AES-256 key, base64 of 32 bytes. Unset in embedded mode: a key file "
        "in the data dir is used (created on first start).",
    )
    encryption_old_keys: SecretStr | None = Field(
        default=None,
        description="Comma-separated base64 keys that may still decrypt rows while rotating.",
    )
    per_tenant_keys: bool = Field(
        default=False,
        description="seal each tenant's content under its own data key (wrapped by the "
        "encryption key), so a tenant can be crypto-shredded; off: one key for every tenant",
    )
    redis_url: SecretStr | None = Field(
        default=None,
        description="redis:// URL: working memory, the embedding cache and rate-limit buckets "
        "live in Redis; unset: in PostgreSQL (UNLOGGED tables)",
    )
    host: str = Field(default="127.0.0.1", description="address `memvault serve` listens on")
    port: int = Field(default=8765, ge=1, le=65535, description="port `memvault serve` listens on")
    log_level: LogLevel = Field(default="INFO", description="DEBUG, INFO, WARNING or ERROR")
    workers: int = Field(
        default=1, ge=1, le=64, description="server processes of `memvault serve` (--workers)"
    )

    max_content_chars: int = Field(
        default=32_000, ge=1, description="longest memory content accepted (422 content_too_long)"
    )
    max_body_bytes: int = Field(
        default=1_048_576,
        ge=1024,
        description="largest request body accepted (413 payload_too_large)",
    )
    max_page_size: int = Field(default=100, ge=1, description="largest `limit` of a list or search")
    max_query_chars: int = Field(default=2_000, ge=1, description="longest search query")
    pool_size: int = Field(default=10, ge=1, description="database connections per process")
    pool_timeout_s: float = Field(
        default=30.0,
        gt=0,
        description="how long an operation beyond the pool waits, queued, for a connection "
        "before it answers 503 store_unavailable",
    )

    # --- the HTTP API ---
    auth: Literal["required", "off"] = Field(
        default="required",
        description="required: every /v1 request needs an API key; off: one implicit tenant "
        "('default'), allowed only on a loopback address",
    )
    rate_limit_per_s: float = Field(
        default=50.0, ge=0, description="requests per second per API key (0: no limit)"
    )
    rate_limit_burst: int = Field(default=100, ge=1, description="bucket size: a burst allowed")
    ui_sign_in_failures_per_min: int = Field(
        default=5,
        ge=0,
        description="dashboard sign-ins with a wrong key allowed a minute per client address "
        "and per key prefix before 429 (0: no limit)",
    )
    request_timeout_s: float = Field(
        default=60.0, gt=0, description="a request still running after this answers 503"
    )
    idempotency_keep_s: float = Field(
        default=86400.0,
        gt=0,
        description="how long the answer of a write sent with an Idempotency-Key is kept for "
        "its retries",
    )
    cors_origins: list[str] = Field(
        default=[], description="origins allowed by CORS (JSON list); empty: CORS off"
    )
    log_format: LogFormat = Field(
        default="auto",
        description="json: one JSON object per line; text: human-readable; auto: text when "
        "stderr is a terminal, else json",
    )
    log_json: bool | None = Field(
        default=None, description="older switch: true means json, false text (log_format wins)"
    )
    tracing: TracingMode = Field(
        default="off",
        description="OpenTelemetry spans (the otel extra): otlp: to OTEL_EXPORTER_OTLP_ENDPOINT "
        "over HTTP; console: printed; off: none. The other OTEL_* variables (service name, "
        "sampler, headers) apply; OTEL_SDK_DISABLED=true turns it off (docs/observability.md)",
    )
    worker_heartbeat_stale_s: float = Field(
        default=30.0, gt=0, description="/ready fails when no worker has beaten for this long"
    )

    # --- embeddings ---
    embedding_provider: EmbeddingProviderName = Field(
        default="local",
        description="local (the bundled all-MiniLM-L6-v2), openai (any OpenAI-compatible "
        "/embeddings: OpenAI, Azure, Ollama, vLLM, LM Studio) or hash",
    )
    embedding_model: str = Field(
        default="all-MiniLM-L6-v2",
        description="model name; for `local` the bundled all-MiniLM-L6-v2",
    )
    embedding_backend: EncoderBackend = Field(
        default="auto",
        description="how `local` runs the model: onnx (ONNX Runtime, its graph built from the "
        "weights once into <data_dir>/models; no torch), torch (sentence-transformers, the "
        "memvault[torch] extra), or auto: onnx, else torch",
    )
    embedding_threads: int = Field(
        default=0,
        ge=0,
        le=64,
        description="ONNX Runtime threads per encode; 0: the cores (at most 4) divided by "
        "the server processes (MEMVAULT_WORKERS)",
    )
    embedding_base_url: str = Field(
        default="https://api.openai.com/v1", description="OpenAI-compatible API root (openai)"
    )
    embedding_api_key: SecretStr | None = Field(
        default=None, description="API key of the openai embedding provider"
    )
    embedding_dimensions: int | None = Field(
        default=None,
        ge=1,
        le=16_000,
        description="vector size asked of the openai provider; unset: the model's",
    )
    embedding_timeout_s: float = Field(default=30.0, gt=0, description="per embedding call")
    embedding_attempts: int = Field(default=5, ge=1, description="tries before falling back")
    embedding_retry_base_s: float = Field(
        default=0.5, ge=0, description="first backoff between embedding tries (doubles each try)"
    )
    embedding_fallback: bool = Field(
        default=True, description="fall back to the local model, then hash vectors"
    )
    embedding_max_chars: int = Field(
        default=8_000, ge=1, description="text beyond this is not embedded (it is still stored)"
    )
    embedding_cache_ttl_s: int = Field(
        default=3_600, ge=0, description="embedding cache lifetime (0 turns the cache off)"
    )
    chunk_tokens: int = Field(
        default=256, ge=16, le=8_192, description="chunk window in tokens (capped at the model's)"
    )
    chunk_overlap: int = Field(default=32, ge=0, description="tokens two neighbouring chunks share")

    # --- LLM (optional: every feature has an offline path) ---
    llm_provider: LLMProviderName | None = Field(
        default=None, description="unset: offline rules decide dedup and enrichment"
    )
    llm_model: str = Field(default="", description="required with an LLM provider")
    llm_base_url: str | None = Field(default=None, description="API root; unset: the vendor's")
    llm_api_key: SecretStr | None = Field(default=None, description="API key of the LLM provider")
    llm_timeout_s: float = Field(default=20.0, gt=0, description="per LLM call")
    llm_attempts: int = Field(
        default=3,
        ge=1,
        description="tries (exponential backoff on timeouts, 429 and 5xx) before the offline "
        "rules decide",
    )
    llm_retry_base_s: float = Field(
        default=0.5, ge=0, description="first backoff between LLM tries (doubles each try)"
    )

    # --- write pipeline ---
    pii_policy: PIIPolicyName = Field(
        default="redact", description="default PII policy of a write: redact, reject (422) or allow"
    )
    dedup_duplicate_threshold: float = Field(
        default=0.98,
        gt=0,
        le=1,
        description="cosine at or above which a new memory is a duplicate (the rules still check "
        "changed values)",
    )
    dedup_similar_threshold: float = Field(
        default=0.70,
        gt=0,
        le=1,
        description="cosine at or above which the LLM (or the rules) decide merge, replace or "
        "keep both",
    )
    max_batch_items: int = Field(default=1_000, ge=1, description="largest batch add")

    # --- worker ---
    run_worker: bool | None = Field(
        default=None, description="run the embedding worker in-process; unset: in embedded mode"
    )
    worker_concurrency: int = Field(default=1, ge=1, description="embedding workers per process")
    worker_batch_size: int = Field(
        default=64, ge=1, description="jobs claimed and embedded in one provider call"
    )
    worker_batch_wait_ms: int = Field(
        default=10, ge=0, description="how long a worker waits to fill a batch"
    )
    worker_max_attempts: int = Field(
        default=5, ge=1, description="tries before a job is dead-lettered"
    )
    worker_backoff_base_s: float = Field(
        default=2.0, ge=0, description="first backoff of a failed job (doubles each try)"
    )
    worker_lease_s: float = Field(
        default=120.0,
        gt=0,
        description="a claimed job returns to the queue when its worker has not finished in this "
        "long",
    )
    worker_sweep_interval_s: float = Field(
        default=30.0,
        gt=0,
        description="how often a worker re-queues memories a fallback embedded, once the provider "
        "answers",
    )
    wait_timeout_s: float = Field(default=30.0, gt=0, description="longest add(wait=True)")

    # --- webhooks ---
    webhook_allow_private: bool = Field(
        default=False,
        description="deliver webhooks to private, loopback, link-local and other non-public "
        "addresses too (refused by default: a subscription must not reach the operator's "
        "network)",
    )
    webhook_allowed_cidrs: str = Field(
        default="",
        description="comma-separated networks (e.g. 10.1.2.0/24,fd00::/8) webhooks may reach "
        "although they are not public",
    )
    webhook_timeout_s: float = Field(
        default=10.0, gt=0, description="a webhook request that has not answered in this long fails"
    )
    webhook_backoff_base_s: float = Field(
        default=5.0,
        gt=0,
        description="first retry of a failed webhook delivery (doubles each try, with jitter)",
    )
    webhook_backoff_cap_s: float = Field(
        default=3600.0, gt=0, description="longest wait between two tries of a webhook delivery"
    )
    webhook_max_attempts: int = Field(
        default=15, ge=1, description="tries before a webhook delivery is dead-lettered"
    )
    webhook_max_age_s: float = Field(
        default=259_200.0,
        gt=0,
        description="a webhook delivery still failing this long after its event is dead-lettered",
    )
    webhook_batch: int = Field(
        default=32, ge=1, description="webhook deliveries a worker claims and sends at once"
    )
    webhook_retention_s: float = Field(
        default=604_800.0,
        gt=0,
        description="delivered webhook rows are kept this long (for the deliveries list), then "
        "purged",
    )

    # --- search ---
    search_exact_max_chunks: int = Field(
        default=10_000,
        ge=0,
        description="scopes with at most this many chunks are searched exactly, not by HNSW",
    )
    search_iterative_scans: bool = Field(
        default=False,
        description="where the server's pgvector scans HNSW iteratively (0.8 or later), search "
        "a user with more than search_exact_max_chunks chunks through the index; off by default: "
        "its candidates held fewer of the exact nearest than the exact path's (docs/deployment.md)",
    )
    hnsw_ef_search: int = Field(
        default=400, ge=1, le=1000, description="HNSW candidate list size (recall against speed)"
    )
    vector_index: Literal["pgvector", "qdrant-edge", "qdrant"] = Field(
        default="pgvector",
        description="where recall finds vectors: pgvector (PostgreSQL itself), qdrant-edge (the "
        "embedded Qdrant engine, data in <data_dir>/qdrant; needs memvault[qdrant]) or qdrant "
        "(a Qdrant server at qdrant_url); PostgreSQL keeps every vector either way "
        "(docs/vector-index.md)",
    )
    qdrant_url: str | None = Field(
        default=None,
        description="the Qdrant server of vector_index=qdrant (':memory:': qdrant-client's "
        "in-process local mode, for trying it out)",
    )
    qdrant_api_key: SecretStr | None = Field(default=None, description="the Qdrant server's key")
    vector_index_reconcile_interval_s: float = Field(
        default=300.0,
        gt=0,
        description="how often a worker compares an external vector index with PostgreSQL and "
        "repairs what differs",
    )
    analyze_after_rows: int = Field(
        default=200,
        ge=0,
        description="rows written by bulk work (batches, imports, reembed, key rotation) "
        "after which the tables are analysed in the background; 0 leaves it to autovacuum",
    )
    # LLM recall techniques, off unless asked for: each adds a model call to a search.
    recall_expand: bool = Field(default=False, description="default for a search's `expand`")
    recall_hyde: bool = Field(default=False, description="default for a search's `hyde`")
    recall_self_query: bool = Field(
        default=False, description="default for a search's `self_query`"
    )
    recall_llm_timeout_s: float = Field(
        default=8.0, gt=0, description="a recall technique slower than this is dropped"
    )
    reinforce_flush_s: float = Field(
        default=1.0, gt=0, description="how often search access counts are written"
    )

    # --- MCP server (the model never chooses whose memories it reads) ---
    mcp_tenant_id: str = Field(
        default="default", min_length=1, max_length=255, description="tenant the MCP tools act in"
    )
    mcp_user_id: str = Field(
        default="default", min_length=1, max_length=255, description="user the MCP tools act for"
    )
    mcp_host: str = Field(default="127.0.0.1", description="bind address of `memvault mcp --http`")
    mcp_port: int = Field(default=8766, ge=1, le=65535, description="port of `mcp --http`")

    # --- lifecycle and audit: scheduled jobs, audit log, deletion, health ---
    schedule_enabled: bool = Field(
        default=True, description="the worker runs the scheduled lifecycle jobs when due"
    )
    schedule_tick_s: float = Field(
        default=30.0, gt=0, description="how often a worker looks for a due scheduled job"
    )
    cleanup_interval_s: float = Field(default=86_400.0, gt=0, description="cleanup: daily")
    tiers_interval_s: float = Field(default=86_400.0, gt=0, description="tiers: daily")
    decay_interval_s: float = Field(default=86_400.0, gt=0, description="decay: daily")
    audit_partitions_interval_s: float = Field(
        default=86_400.0, gt=0, description="audit_partitions: daily"
    )
    lifecycle_max_share: float = Field(
        default=0.5,
        gt=0,
        le=1,
        description="a job that would change more than this share of one user's memories in "
        "one run stops and reports instead (safety stop)",
    )
    lifecycle_safety_min: int = Field(
        default=10,
        ge=0,
        description="the safety stop ignores a user for whom a run changes at most this many",
    )
    tier_warm_after_days: float = Field(
        default=30.0, gt=0, description="hot -> warm when neither written nor recalled for this"
    )
    tier_cold_after_days: float = Field(
        default=180.0, gt=0, description="warm -> cold when neither written nor recalled for this"
    )
    decay_idle_days: float = Field(
        default=30.0, gt=0, description="importance decays for memories not recalled for this"
    )
    decay_importance_step: int = Field(
        default=1, ge=1, le=9, description="importance lost per decay run by an idle memory"
    )
    decay_importance_floor: int = Field(
        default=3, ge=1, le=10, description="importance never decays below this"
    )
    audit_level: Literal["off", "writes", "reads", "verbose"] = Field(
        default="writes",
        description="off; writes: store/update/delete/…; reads: and every search, get and "
        "list; verbose: and the query text, sealed",
    )
    audit_flush_ms: int = Field(
        default=200, ge=1, description="audit rows are written in batches this often"
    )
    audit_batch: int = Field(default=500, ge=1, description="most audit rows per insert")
    audit_retention_days: int = Field(
        default=90, ge=1, description="audit partitions older than this are dropped"
    )
    audit_partitions_ahead_days: int = Field(
        default=3, ge=1, description="audit partitions made ahead of time"
    )
    deletion_history: Literal["tombstone", "purge"] = Field(
        default="tombstone",
        description="on deletion, history keeps who/when without content (tombstone) or goes",
    )
    health_stale_days: float = Field(
        default=90.0, gt=0, description="memory health: not recalled for this long is stale"
    )
    health_duplicate_similarity: float = Field(
        default=0.95, gt=0, le=1, description="memory health: near-duplicate cosine similarity"
    )
    merge_undo_days: float = Field(
        default=30.0,
        gt=0,
        description="memory health: a merge can be undone for this long (its undo record, "
        "which holds the copies it erased, then goes)",
    )
    # --- knowledge graph ---
    graph_contradiction_policy: Literal["prefer_new", "prefer_old", "flag_review"] = Field(
        default="prefer_new",
        description="a new value of a functional predicate: prefer_new supersedes the current "
        "one, prefer_old keeps it (the new one is recorded as rejected), flag_review keeps both "
        "and lists a review item",
    )
    graph_entity_match_threshold: float = Field(
        default=0.92,
        gt=0,
        le=1,
        description="a mention joins an existing entity whose name embedding is at least this "
        "similar, when neither its name nor an alias matches",
    )
    graph_max_depth: int = Field(default=3, ge=1, le=3, description="deepest graph walk")
    graph_fanout: int = Field(
        default=25, ge=1, le=1000, description="neighbours followed per node in a walk"
    )
    graph_max_nodes: int = Field(default=200, ge=1, description="nodes a walk returns at most")
    graph_max_edges: int = Field(default=500, ge=1, description="edges a walk returns at most")
    graph_fact_keys: bool = Field(
        default=False,
        description="default for a search's `fact_keys`: facts matched by the query lift the "
        "memories they were read from, as extra candidate lists",
    )
    search_updates_first: bool = Field(
        default=True,
        description="rank a later statement about the same thing above the one it replaced, "
        "for questions about how things stand (retrieval/updates.py), in search and "
        "remember(); it reads the best candidates' stored vectors (one more read a search)",
    )
    graph_fact_keys_weight: float = Field(
        default=0.5, ge=0, description="the fact lists' fusion weight, relative to the query's own"
    )

    @property
    def embedded(self) -> bool:
        return self.database_url is None

    @property
    def session_database_url(self) -> SecretStr | None:
        """Where work that needs a session of its own connects (see database_direct_url)."""
        return self.database_direct_url or self.database_url

    @property
    def worker_in_process(self) -> bool:
        return self.embedded if self.run_worker is None else self.run_worker

    @property
    def key_file(self) -> Path:
        return self.data_dir / "keyring.json"

    @property
    def pg_data_dir(self) -> Path:
        return self.data_dir / "pg"

    # --- cognitive memory (episodes, working memory, procedures, goals, channels, remember) ---
    working_ttl_s: float = Field(
        default=3_600.0, gt=0, description="default lifetime of a working-memory entry"
    )
    working_max_turns: int = Field(
        default=20, ge=1, le=1_000, description="recent turns kept in a session's working memory"
    )
    working_max_thoughts: int = Field(
        default=50, ge=1, le=1_000, description="thoughts kept on a session's thought stack"
    )
    promotion_min_confidence: float = Field(
        default=0.85, ge=0, le=1, description="a project fact at least this confident…"
    )
    promotion_min_access_count: int = Field(
        default=5, ge=0, description="…recalled at least this often…"
    )
    promotion_min_conversations: int = Field(
        default=2, ge=1, description="…and seen in this many conversations is copied to _global"
    )
    remember_weights: dict[str, float] = Field(
        default={
            "episodic": 0.30,
            "facts": 0.25,
            "entities": 0.20,
            "procedural": 0.15,
            "recency": 0.10,
        },
        description="how remember() weighs each kind's relevance, and recency (JSON object)",
    )
    remember_per_conversation: int = Field(
        default=3, ge=1, description="at most this many recalled turns from one conversation"
    )
    remember_budget_tokens: int = Field(
        default=1_500, ge=16, description="remember()'s default prompt budget, in model tokens"
    )
    remember_half_life_days: float = Field(
        default=30.0, gt=0, description="recency halves over this many days"
    )

    # --- cognitive upkeep (lifecycle jobs on cognitive memory: cleanup steps, patterns) ---
    conversation_archive_after_days: float = Field(
        default=90.0, gt=0, description="cleanup archives conversations idle this many days"
    )
    patterns_interval_s: float = Field(default=3_600.0, gt=0, description="patterns: hourly")
    patterns_min_steps: int = Field(
        default=2, ge=1, description="patterns learns a sequence of at least this many tools…"
    )
    patterns_lookback_days: float = Field(
        default=7.0, gt=0, description="…from conversations with a tool call this recent"
    )
    promote_interval_s: float = Field(
        default=3_600.0, gt=0, description="promote (prominent project facts to _global): hourly"
    )

    # --- graph lifecycle: consolidation, entity/fact decay, entity cleanup ---------------------
    consolidate_interval_s: float = Field(
        default=900.0, gt=0, description="consolidate: every 15 minutes"
    )
    consolidate_batch: int = Field(
        default=64, ge=1, description="turn memories extracted per batch by consolidate"
    )
    entity_decay_rate: float = Field(
        default=0.95, gt=0, le=1, description="entity salience x this per day unaccessed"
    )
    entity_decay_idle_hours: float = Field(
        default=24.0, ge=0, description="an entity decays once not accessed for this long"
    )
    fact_decay_rate: float = Field(
        default=0.98, gt=0, le=1, description="inferred facts' confidence x this per week"
    )
    fact_decay_floor: float = Field(
        default=0.2, ge=0, le=1, description="inferred facts' confidence never decays below"
    )
    entity_cleanup_salience: float = Field(
        default=0.1, ge=0, le=1, description="entities below this salience may be deleted"
    )
    entity_cleanup_idle_days: float = Field(
        default=30.0, ge=0, description="... once not accessed for this many days"
    )
