"""Print the example export of docs/export-format.md: a small user with every kind, exported
by the code, vectors cut to their first three numbers so the page stays readable.

    python docs/examples/export_example.py

It starts an embedded store in a temporary directory (the hash embedder: no model download).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from memvault import Memory, Settings


def _short(line: dict[str, Any]) -> dict[str, Any]:
    for name in ("embedding",):
        if isinstance(line.get(name), list):
            line[name] = [round(x, 4) for x in line[name][:3]] + ["…"]
    for vectors in line.get("vectors", []):
        vectors["chunks"] = [[round(x, 4) for x in c[:3]] + ["…"] for c in vectors["chunks"]]
    return line


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(data_dir=Path(tmp), embedding_provider="hash", run_worker=False)  # type: ignore[call-arg]
        with Memory(settings) as memory:
            user = {"user_id": "erin"}
            first = memory.add("Dave works at Acme.", wait=True, **user)
            memory.update(first.id, content="Dave works at Acme in Berlin.", **user)
            memory.add_messages(
                [{"role": "user", "content": "I moved to Munich last year."}],
                conversation_id="trip-42",
                title="Lisbon trip",
                wait=True,
                **user,
            )
            memory.record_tool_use(
                "hotel_search",
                tool_input={"city": "Lisbon"},
                tool_output=["Memmo Alfama"],
                success=True,
                latency_ms=12.5,
                conversation_id="trip-42",
                **user,
            )
            memory.learn_strategy(
                "book a hotel", tool_sequence=["hotel_search", "book_hotel"], **user
            )
            visa = memory.add_goal("get the visa", **user)
            memory.add_goal("book the flight", blocked_by=[visa.id], **user)
            memory.update_profile(preferences={"tea": True}, expertise=["python"], **user)
            for line in memory.export_memories(user_id="erin"):
                print(json.dumps(_short(line), ensure_ascii=False))


if __name__ == "__main__":
    main()
