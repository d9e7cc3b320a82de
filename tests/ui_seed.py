"""A small, varied store for the dashboard's browser tests and screenshots: a conversation
with a tool call (turns, facts, entities), memories with a near-duplicate pair, goals with a
blocker, tool outcomes, a strategy and two contradicting facts — all written through the HTTP
API, as an agent would."""

from __future__ import annotations

from typing import Any

import httpx

USER = "maya"
CONVERSATIONS = {
    "move-to-lisbon": [
        ("user", "I moved to Lisbon in May. I work at Feedzai as a data engineer."),
        ("assistant", "Congratulations on the move! Shall I look for flats near Feedzai?"),
        ("user", "Yes, somewhere in Alfama, my sister Ana lives there."),
        ("tool", '{"tool": "flat_search", "area": "Alfama", "results": 12}'),
        ("assistant", "I found 12 flats in Alfama; three are under 1,400 EUR."),
    ],
    "diet": [
        ("user", "I'm allergic to peanuts and I stopped eating meat last year."),
        ("assistant", "Noted: peanut allergy, vegetarian."),
    ],
}
MEMORIES = [
    "Maya prefers window seats on flights",
    "Maya's favourite coffee is a flat white with oat milk",
    "Maya runs 10 km every Sunday along the river",
    "Maya is learning Portuguese on Tuesday evenings",
    "Maya's manager at Feedzai is Rui",
]


def seed(base: str, key: str | None) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    with httpx.Client(base_url=base, headers=headers, timeout=60) as http:

        def post(path: str, body: dict[str, Any], **params: Any) -> dict[str, Any]:
            answer = http.post(path, json=body, params=params)
            assert answer.status_code < 300, (path, answer.text)
            found: dict[str, Any] = answer.json()
            return found

        for conversation_id, turns in CONVERSATIONS.items():
            messages = [{"role": r, "content": c} for r, c in turns]
            post(
                "/v1/messages",
                {"user_id": USER, "conversation_id": conversation_id, "messages": messages},
                wait=True,
            )
        for text in MEMORIES:
            post("/v1/memories", {"content": text, "user_id": USER}, wait=True)
        # Stored as given (no dedup at write), so health finds the pair to merge.
        twins = [
            post(
                "/v1/memories",
                {"content": "Maya's passport expires in 2031", "user_id": USER, "infer": False},
                wait=True,
            )["id"]
            for _ in range(2)
        ]
        flat = post(
            "/v1/goals", {"user_id": USER, "description": "Find a flat in Alfama", "priority": 8}
        )
        post(
            "/v1/goals",
            {"user_id": USER, "description": "Shortlist three flats", "parent_id": flat["id"]},
        )
        post(
            "/v1/goals",
            {
                "user_id": USER,
                "description": "Sign the lease",
                "parent_id": flat["id"],
                "blocked_by": [flat["id"]],
            },
        )
        for ok, ms in ((True, 420), (True, 380), (False, 2_100)):
            post(
                "/v1/tools/invocations",
                {"user_id": USER, "tool_name": "flat_search", "success": ok, "latency_ms": ms},
            )
        post(
            "/v1/strategies",
            {
                "user_id": USER,
                "description": "Search flats by area, then filter by price",
                "tool_sequence": ["flat_search", "price_filter"],
            },
        )
        # Recall as an agent asks it, so the overview has latencies to show.
        for question in ("where does Maya live", "what does Maya drink", "who is Rui"):
            post("/v1/memories/search", {"user_id": USER, "query": question})
            post("/v1/remember", {"user_id": USER, "query": question})
        # Under the flag_review policy the second is kept beside the first, for review.
        for employer in ("Feedzai", "Unbabel"):
            post(
                "/v1/facts",
                {"user_id": USER, "subject": "@user", "predicate": "works_for", "object": employer},
            )
    return {"twins": twins}
