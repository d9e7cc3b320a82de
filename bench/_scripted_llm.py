"""A local OpenAI-compatible server that answers as a good LLM would, for benchmarks: the
graph extraction of a known text is read from the data set's own structured triple, and the
write pipeline's other calls get neutral answers (keep both; importance 5, persistent).

It measures the plumbing — prompt, schema, parsing, normalisation, storage — with the model's
judgement taken as perfect: an upper bound, not a model's score.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

NEUTRAL: dict[str, dict[str, Any]] = {
    "dedup_decision": {"action": "keep_both", "merged_text": None, "reason": "different facts"},
    "enrich": {
        "importance": 5,
        "memory_type": "persistent",
        "valid_until": None,
        "categories": ["personal"],
        "event_at": None,
    },
}
EMPTY_EXTRACTION: dict[str, Any] = {"entities": [], "facts": [], "relations": []}


def extraction_answer(turn: dict[str, Any], object_type: str | None) -> dict[str, Any]:
    """What a good model answers for ``turn``: its triple, with the entities it names."""
    triple = turn["triple"]
    subject_type = "project" if triple["predicate"] == "uses_database" else "person"
    entities = [
        {"name": triple["subject"], "type": subject_type, "aliases": [], "description": None}
    ]
    if triple["object"] is not None:
        entities.append(
            {"name": triple["object"], "type": object_type, "aliases": [], "description": None}
        )
    target = triple["object"] or triple["value"]
    fact = {
        "subject": triple["subject"],
        "predicate": triple["predicate"],
        "object": triple["object"],
        "value": triple["value"],
        "certainty": "explicit",
        "temporal": "current",
        "valid_from": triple["valid_from"],
        "valid_until": None,
        "corrects": turn["corrects"],
        "claim": f"{triple['subject']} {triple['predicate'].replace('_', ' ')} {target}",
    }
    return {"entities": entities, "facts": [fact], "relations": []}


def _text_of(prompt: str) -> str:
    start, end = prompt.find("<text>\n"), prompt.rfind("\n</text>")
    return prompt[start + len("<text>\n") : end] if 0 <= start < end else ""


def _answer(body: dict[str, Any], extractions: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    name = body.get("response_format", {}).get("json_schema", {}).get("name", "")
    if name == "graph_extract":
        prompt = str(body["messages"][-1]["content"])
        # Keyed by the whole prompt (the same words from two speakers are two answers); by
        # the text alone when the caller rendered speaker or time differently.
        return extractions.get(prompt) or extractions.get(_text_of(prompt), EMPTY_EXTRACTION)
    return NEUTRAL.get(name)


def _handler(extractions: dict[str, dict[str, Any]]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["content-length"])))
            answer = _answer(body, extractions)
            if answer is None:
                status, payload = 400, {"error": {"message": "unsupported", "type": "bench"}}
            else:
                message = {"role": "assistant", "content": json.dumps(answer), "refusal": None}
                status, payload = 200, {"choices": [{"index": 0, "message": message}]}
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


@contextmanager
def scripted_llm(extractions: dict[str, dict[str, Any]]) -> Iterator[str]:
    """Serve ``extractions`` (the extraction prompt's user message, or the text alone → the
    answer); yields the base URL (``…/v1``)."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(extractions))
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    finally:
        httpd.shutdown()
        httpd.server_close()
