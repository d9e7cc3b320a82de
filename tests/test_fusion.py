"""Score-aware fusion on crafted candidate lists: how strongly each list vouches for an item
decides, not only where it ranks it."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from memvault.retrieval.search import (
    RECIPES,
    fuse,
    keyword_evidence,
    list_evidence,
    vector_evidence,
)

HYBRID = RECIPES["hybrid"]
WEIGHTS = {"query:vector": HYBRID.vector_weight, "query:keyword": HYBRID.keyword_weight}


def vector(*items: tuple[str, float]) -> list[Any]:
    """A vector list as db/ ranks it: by cosine distance (RankedMemory.rank)."""
    return [SimpleNamespace(id=key, rank=1 - similarity) for key, similarity in items]


def keyword(*items: tuple[str, float]) -> list[Any]:
    """A keyword list as db/ ranks it: by BM25 score (RankedMemory.rank)."""
    return [SimpleNamespace(id=key, rank=score) for key, score in items]


def order(vectors: list[Any], keywords: list[Any], ceiling: float) -> list[str]:
    lists = {"query:vector": vectors, "query:keyword": keywords}
    evidence = list_evidence(lists, {"query:keyword": ceiling}, HYBRID)
    fused = fuse(evidence, WEIGHTS, HYBRID.rrf_k)
    return sorted(fused, key=lambda k: -fused[k])


def test_a_weak_keyword_list_cannot_outvote_a_strong_vector_list() -> None:
    # "who are Sara's children?": every memory says "Sara", so BM25 ranks them all on a word
    # with almost no IDF; the children fact is the clear meaning match.
    vectors = vector(("children", 0.75), ("job", 0.42), ("cats", 0.40), ("pool", 0.38))
    keywords = keyword(("cats", 0.09), ("pool", 0.08), ("job", 0.08), ("children", 0.07))
    assert order(vectors, keywords, ceiling=4.2)[0] == "children"


def test_a_strong_exact_keyword_match_still_wins() -> None:
    # A rare word the question names, matched in full, beats a vector list of lukewarm ties.
    vectors = vector(("a", 0.46), ("b", 0.45), ("c", 0.45), ("d", 0.44), ("gate", 0.43))
    keywords = keyword(("gate", 6.1), ("a", 0.4))
    assert order(vectors, keywords, ceiling=6.5)[0] == "gate"


def test_the_same_ranks_fuse_differently_with_different_evidence() -> None:
    vectors = vector(("v", 0.70), ("k", 0.50))
    strong = order(vectors, keyword(("k", 5.0), ("v", 0.1)), ceiling=5.0)
    weak = order(vectors, keyword(("k", 0.2), ("v", 0.1)), ceiling=5.0)
    assert strong[0] == "k" and weak[0] == "v"


@pytest.mark.parametrize(
    ("score", "ceiling", "expected"),
    [(0.0, 5.0, 0.0), (1.0, 4.0, 0.5), (2.0, 4.0, 1.0), (9.0, 4.0, 1.0), (1.0, 0.0, 0.0)],
)
def test_keyword_evidence_is_the_share_of_the_best_possible_score(
    score: float, ceiling: float, expected: float
) -> None:
    assert keyword_evidence(score, ceiling, full_at=0.5) == pytest.approx(expected)


def test_vector_evidence_is_the_rise_above_the_floor_relative_to_the_best() -> None:
    assert vector_evidence([0.8, 0.5, 0.2], floor=0.2) == pytest.approx([1.0, 0.5, 0.0])
    assert vector_evidence([0.8, 0.5], floor=None) == [1.0, 1.0]
    assert vector_evidence([], floor=0.2) == []


def test_fuse_adds_weight_times_evidence_over_rank() -> None:
    fused = fuse({"a": [("x", 1.0), ("y", 0.5)], "b": [("y", 1.0)]}, {"a": 1.0, "b": 2.0}, k=10)
    assert fused["x"] == pytest.approx(1 / 11)
    assert fused["y"] == pytest.approx(0.5 / 12 + 2 / 11)
