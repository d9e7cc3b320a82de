"""What a process holds on a data directory: the lock of the one server that owns it, and the
embedded database a ``serve --workers N`` parent holds for its processes. Apart from the store
on purpose: ``memvault serve`` takes these before it imports the store (or, as that parent,
without ever importing it), so a refusal is immediate and the parent stays small."""

from __future__ import annotations

from memvault.db.embedded import ServeLock, embedded_store_held

__all__ = ["ServeLock", "embedded_store_held"]
