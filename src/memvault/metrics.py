"""Prometheus metrics, defined once per process and shared by every module that counts."""

from __future__ import annotations

from prometheus_client import Counter

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
