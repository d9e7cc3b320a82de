"""The background lifecycle and the audit trail: scheduled jobs (cleanup, tiers, decay, audit
partitions), the audit log, provable deletion, memory health, backup and export.

Kept import-free: the backend imports ``lifecycle.audit`` while other modules here import the
backend, so this package's ``__init__`` must pull in nothing."""
