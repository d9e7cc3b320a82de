"""Recall of short personal facts over HTTP with the default recipe: every memory names the
same person, so the name is no evidence, and the answer must win on meaning."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

SARA = [
    "Sara is allergic to cats",
    "Sara has been vegetarian for ten years",
    "Sara's children are called Leo and Mia",
    "Sara works as a nurse at the city hospital",
    "Sara plays tennis every Saturday morning",
    "Sara's birthday is on 14 March",
    "Sara grew up in Gothenburg",
    "Sara drives a blue Volvo",
    "Sara is learning to play the piano",
    "Sara's husband Tom is an architect",
    "Sara drinks decaf coffee after noon",
    "Sara's favourite author is Jo Nesbø",
    "Sara is afraid of flying",
    "Sara volunteers at the animal shelter on Sundays",
    "Sara's mother lives in Sweden",
    "Sara wants to visit Japan next spring",
]


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("who are Sara's children?", "Sara's children are called Leo and Mia"),
        ("what should I cook for Sara?", "Sara has been vegetarian for ten years"),
        ("what sport does Sara do?", "Sara plays tennis every Saturday morning"),
    ],
)
def test_a_meaning_match_beats_a_name_every_memory_shares(
    client: TestClient, question: str, answer: str
) -> None:
    for fact in SARA:
        stored = client.post("/v1/memories", json={"content": fact, "user_id": "tom"})
        assert stored.status_code == 201
    found = client.post("/v1/memories/search", json={"query": question, "user_id": "tom"})
    assert found.status_code == 200
    body = found.json()
    assert body["recipe"] == "hybrid"
    top3 = [hit["content"] for hit in body["results"][:3]]
    assert answer in top3, top3
