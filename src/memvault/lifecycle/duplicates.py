"""Each owner's near-duplicate pairs as last found, so that memory health compares only what
changed since against the rest.

Finding near-duplicates compares every pair of the owner's newest ``SCAN`` memories: 2,000
memories are 2 million cosine distances, over a second of PostgreSQL's time on a loaded
2-core machine, for every view of the health page and the overview. Between two reports most
of those memories are the same, with the same vectors, so their pairs are too: a report
compares the memories that joined the window or were embedded again since (a new embedding is
a new chunk row, with its own time) against the window, keeps the earlier pairs whose two
memories are unchanged, and drops those with a member gone. The answer is the one a full scan
gives; only the first report of an owner (per process, and after ``ttl_s`` unseen) pays for
the full scan.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from memvault.db.remembered import Remembered

# The newest memories compared, and the most pairs reported: a store of copies has up to
# SCAN * (SCAN - 1) / 2 of them.
SCAN = 2000
PAIRS = 500

Pair = tuple[UUID, UUID]


@dataclass(frozen=True, slots=True)
class _Scan:
    window: dict[UUID, datetime]
    pairs: frozenset[Pair]


class DuplicateScans:
    """The last scan of each (tenant, user, model, similarity), at most ``max_entries`` of
    them, each forgotten after ``ttl_s`` seconds unused."""

    def __init__(self, ttl_s: float = 3600.0, max_entries: int = 256) -> None:
        self._scans: Remembered[_Scan] = Remembered(ttl_s, max_entries)

    def plan(self, key: Hashable, window: Mapping[UUID, datetime]) -> tuple[list[UUID], set[Pair]]:
        """Which memories of ``window`` (id → its chunk's time) to compare against the whole
        window, and the pairs still true from the last scan."""
        last = self._scans.get(key)
        if last is None:
            return list(window), set()
        fresh = [i for i, at in window.items() if last.window.get(i) != at]
        same = set(window) - set(fresh)
        return fresh, {p for p in last.pairs if p[0] in same and p[1] in same}

    def keep(self, key: Hashable, window: Mapping[UUID, datetime], pairs: set[Pair]) -> None:
        """Remember a scan's result; one cut at ``PAIRS`` is not the whole answer, and is
        scanned again in full next time."""
        if len(pairs) >= PAIRS:
            self._scans.forget(key)
        else:
            self._scans.put(key, _Scan(dict(window), frozenset(pairs)))
