"""Semantic memory: entities, bi-temporal facts and relations, kept in the same PostgreSQL as
the memories they are derived from (sealed, tenant-isolated, deleted with their source)."""
