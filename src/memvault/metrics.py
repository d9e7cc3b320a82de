"""Prometheus metrics, defined once per process and shared by every module that counts."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

EMBEDDING_CACHE = Counter(
    "memvault_embedding_cache_requests_total", "Embedding cache look-ups", ["result"]
)
EMBEDDING_FALLBACKS = Counter(
    "memvault_embedding_fallbacks_total", "Batches embedded by a fallback model", ["model"]
)
EMBEDDING_ERRORS = Counter(
    "memvault_embedding_provider_errors_total", "Failed embedding provider calls", ["provider"]
)
EMBEDDING_JOBS = Counter(
    "memvault_embedding_jobs_total", "Embedding jobs finished, by outcome", ["outcome"]
)
LLM_FALLBACKS = Counter(
    "memvault_llm_fallbacks_total",
    "LLM calls that fell back to the offline rules",
    ["task", "reason"],
)
CACHE_ERRORS = Counter("memvault_cache_errors_total", "Cache back-end failures", ["backend"])
REQUEST_LATENCY = Histogram(
    "memvault_http_request_duration_seconds",
    "HTTP request latency by route template",
    ["method", "route", "status"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)
MEMORIES_STORED = Counter(
    "memvault_memories_stored_total", "Memories written by add, by dedup outcome", ["action"]
)
RATE_LIMITED = Counter("memvault_rate_limited_total", "Requests refused with 429")
AUTH_FAILURES = Counter("memvault_auth_failures_total", "Requests refused with 401", ["reason"])
QUEUE_DEPTH = Gauge(
    "memvault_queue_jobs", "Embedding jobs by status (at the last scrape)", ["status"]
)
WORKER_HEARTBEAT_AGE = Gauge(
    "memvault_worker_heartbeat_age_seconds", "Age of the freshest worker heartbeat (-1: none)"
)
WORKER_ERRORS = Counter(
    "memvault_worker_errors_total",
    "Worker steps that failed and were retried (store: the database was away)",
    ["kind"],
)
VECTOR_RANKINGS = Counter(
    "memvault_vector_rankings_total",
    "Vector pages by how they were ranked: index (HNSW), nearest_chunks (the owner's nearest "
    "chunks, exactly) or scope (every chunk of the owner's, exactly)",
    ["by"],
)
STORE_UNAVAILABLE = Counter(
    "memvault_store_unavailable_total", "Requests answered 503 because the store was away"
)

# --- lifecycle and audit ---
SCHEDULED_RUNS = Counter(
    "memvault_scheduled_runs_total",
    "Scheduled lifecycle job runs, by job and outcome (ok, stopped, failed, skipped)",
    ["job", "outcome"],
)
SCHEDULED_DURATION = Histogram(
    "memvault_scheduled_run_duration_seconds",
    "Scheduled lifecycle job run time",
    ["job"],
    buckets=(0.01, 0.05, 0.1, 0.5, 1, 5, 30, 120, 600),
)
LIFECYCLE_CHANGES = Counter(
    "memvault_lifecycle_changes_total",
    "Items changed by lifecycle jobs (decayed, cleaned, tiered), dry runs excluded",
    ["job", "change"],
)
AUDIT_ROWS = Counter(
    "memvault_audit_rows_total",
    "Audit rows by fate (written, failed: kept for retry, dropped, set_aside: refused alone)",
    ["result"],
)
DELETION_RECEIPTS = Counter(
    "memvault_deletion_receipts_total", "Deletion receipts issued, by scope", ["scope"]
)
# Graph lifecycle: how far consolidation lags (set by each consolidate run).
CONSOLIDATION_BACKLOG = Gauge(
    "memvault_consolidation_backlog", "Conversations with turns not consolidated into the graph yet"
)
CONSOLIDATION_LAG = Gauge(
    "memvault_consolidation_lag_seconds", "Age of the oldest turn not consolidated yet"
)
CONSOLIDATION_SKIPPED = Counter(
    "memvault_consolidation_skipped_total",
    "Conversations a consolidate run skipped because a record of theirs failed",
)
VECTOR_INDEX_SYNCS = Counter(
    "memvault_vector_index_syncs_total",
    "Memories synced to an external vector index from the outbox, by outcome",
    ["outcome"],
)
VECTOR_INDEX_REPAIRS = Counter(
    "memvault_vector_index_repairs_total",
    "Points the reconcile sweep repaired in an external vector index, by kind of drift",
    ["kind"],
)
WEBHOOK_DELIVERIES = Counter(
    "memvault_webhook_deliveries_total",
    "Webhook delivery attempts, by outcome (delivered, retry, dead, refused)",
    ["outcome"],
)
