"""A mixed workload of two tenants against the API hosts, and the check of what it was told.

Each client loops over the operations (add with wait, add in the background, a batch, a
conversation, a search, remember()), through HAProxy in front of the API hosts, and records
every answer. It sends a call again as ``MemoryClient`` does (``memvault.client._resend``), up
to ``RETRIES`` times: a read after a lost connection, a 502/503/504 or a 429; a write, sent
with an ``Idempotency-Key`` made for the call, after the same answers but a 503
``request_timeout`` (it may have committed as the deadline struck), and after a 409
``request_in_progress`` (its first try still holds the key). A retry of a write whose first
try committed and whose answer was lost (its API host died) is answered 409
``request_done_answer_lost``, never run twice: such a call failed for its client but lost no
data, and is counted apart. ``answers`` holds every try, ``calls`` what each call came to.
Every stored text carries a unique token, so a write the API acknowledged (2xx) can be looked
for afterwards: present exactly once, in its own tenant only, and found by a search for it.
A write that got no answer (a killed process, a timeout) or whose answer was lost is not
acknowledged: it may be stored or not, but never more than once (``sent`` keeps its texts).
"""

from __future__ import annotations

import asyncio
import itertools
import random
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import httpx

OPERATIONS = ("add_wait", "add_async", "batch", "messages", "search", "remember")
WRITES = {"add_wait", "add_async", "batch", "messages"}
RETRIES = 5
RETRY_BASE_S = 0.25
RETRY_WAIT_MAX_S = 10.0
ANSWER_LOST = "request_done_answer_lost"
IN_PROGRESS = "request_in_progress"


@dataclass
class Answer:
    op: str
    host: str
    started: float
    ended: float
    status: int  # 0: no answer (connection refused or cut, client timeout)
    code: str = ""
    retry_after: str | None = None
    ids: list[str] = field(default_factory=list)  # what an acknowledged write stored


@dataclass
class Call:
    """One call, however many tries it took: its last answer."""

    op: str
    started: float
    ended: float
    status: int
    code: str
    tries: int


@dataclass
class Acked:
    tenant: str
    user: str
    content: str
    id: str


@dataclass
class Workload:
    hosts: list[str]
    keys: dict[str, str]  # tenant -> API key
    client_timeout_s: float
    answers: list[Answer] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    acked: list[Acked] = field(default_factory=list)
    # Every text a write call sent, whatever it came to: none may be stored twice.
    sent: list[Acked] = field(default_factory=list)
    # The texts of writes answered request_done_answer_lost: done, so each stored once.
    lost: list[Acked] = field(default_factory=list)
    stop: asyncio.Event = field(default_factory=asyncio.Event)

    async def run(self, clients: int) -> None:
        limits = httpx.Limits(max_connections=clients * 2)
        async with httpx.AsyncClient(timeout=self.client_timeout_s, limits=limits) as http:
            await asyncio.gather(*(self._client(http, n) for n in range(clients)))

    async def _client(self, http: httpx.AsyncClient, n: int) -> None:
        tenant = sorted(self.keys)[n % len(self.keys)]
        user = f"user{n}"
        ops = itertools.cycle(OPERATIONS)
        hosts = itertools.cycle(
            self.hosts[n % len(self.hosts) :] + self.hosts[: n % len(self.hosts)]
        )
        while not self.stop.is_set():
            await self._one(http, next(ops), next(hosts), tenant, user)

    async def _one(
        self, http: httpx.AsyncClient, op: str, host: str, tenant: str, user: str
    ) -> None:
        method, path, body, contents = _request(op, user)
        headers = {"Authorization": f"Bearer {self.keys[tenant]}"}
        if op in WRITES:
            headers["Idempotency-Key"] = str(uuid.uuid4())  # one key for every try of the call
        began = time.monotonic()
        for attempt in range(RETRIES + 1):
            answer, body_json = await self._try(http, op, host, method, path, body, headers)
            wait = _again(op, answer)
            if wait is None or attempt == RETRIES:
                break
            await asyncio.sleep(wait if wait > 0 else _backoff(attempt))
        self.calls.append(
            Call(op, began, answer.ended, answer.status, answer.code, tries=attempt + 1)
        )
        if op in WRITES:
            self.sent.extend(Acked(tenant, user, content, "") for content in contents)
            if answer.code == ANSWER_LOST:
                self.lost.extend(Acked(tenant, user, content, "") for content in contents)
        if 200 <= answer.status < 300 and op in WRITES:
            answer.ids = _ids(body_json)
            for content, memory_id in zip(contents, answer.ids, strict=True):
                self.acked.append(Acked(tenant, user, content, memory_id))
        elif not 200 <= answer.status < 300:
            await asyncio.sleep(0.2)

    async def _try(
        self,
        http: httpx.AsyncClient,
        op: str,
        host: str,
        method: str,
        path: str,
        body: dict[str, Any] | None,
        headers: dict[str, str],
    ) -> tuple[Answer, Any]:
        started = time.monotonic()
        try:
            response = await http.request(method, f"{host}{path}", json=body, headers=headers)
        except httpx.HTTPError:
            answer = Answer(op, host, started, time.monotonic(), 0)
            self.answers.append(answer)
            return answer, None
        answer = Answer(op, host, started, time.monotonic(), response.status_code)
        self.answers.append(answer)
        if response.status_code >= 400:
            answer.code = _code(response)
            answer.retry_after = response.headers.get("retry-after")
            return answer, None
        return answer, response.json()


def _again(op: str, answer: Answer) -> float | None:
    """Seconds to wait before sending the call again (0: the backoff's), or None: done. As
    ``memvault.client._resend``: every write here carries an ``Idempotency-Key``."""
    status = answer.status
    if 200 <= status < 300:
        return None
    asked = float(answer.retry_after) if (answer.retry_after or "").isdigit() else 0.0
    if status == 429:
        return min(asked, RETRY_WAIT_MAX_S)
    if status == 409:
        # The first try still runs (on another host, or a dead one's lease not yet lapsed).
        return min(asked, RETRY_WAIT_MAX_S) if answer.code == IN_PROGRESS else None
    if status == 0 or status in (502, 503, 504):
        # A keyed write cut off by the server's deadline may still be running or committing:
        # MemoryClient raises it rather than send it again.
        if op in WRITES and answer.code == "request_timeout":
            return None
        return min(asked, RETRY_WAIT_MAX_S)
    return None


def _backoff(attempt: int) -> float:
    return min(RETRY_BASE_S * 2.0**attempt * random.uniform(0.5, 1.0), RETRY_WAIT_MAX_S)


def _request(op: str, user: str) -> tuple[str, str, dict[str, Any] | None, list[str]]:
    def text(kind: str) -> str:
        # A token to find it by and words of its own: no two texts are near-duplicates, so
        # deduplication (which would rightly fold them together) leaves each one stored.
        # Letters only: a run of digits could read as a phone number and be redacted.
        words = " ".join(_letters(uuid.uuid4().hex[:7]) for _ in range(6))
        return f"{kind} {_letters(uuid.uuid4().hex)} {words}"

    if op == "add_wait":
        content = text("waited")
        return "POST", "/v1/memories?wait=true", {"content": content, "user_id": user}, [content]
    if op == "add_async":
        content = text("queued")
        body = {"content": content, "user_id": user}
        return "POST", "/v1/memories?async=true", body, [content]
    if op == "batch":
        contents = [text("batched") for _ in range(3)]
        body = {"memories": [{"content": c, "user_id": user} for c in contents]}
        return "POST", "/v1/memories/batch", body, contents
    if op == "messages":
        contents = [text("said"), text("answered")]
        messages = [
            {"role": "user", "content": contents[0]},
            {"role": "assistant", "content": contents[1]},
        ]
        body = {"messages": messages, "user_id": user, "conversation_id": f"drill-{user}"}
        return "POST", "/v1/messages", body, contents
    if op == "search":
        return "POST", "/v1/memories/search", {"query": text("what"), "user_id": user}, []
    return "POST", "/v1/remember", {"query": text("remember"), "user_id": user}, []


def _letters(hex_text: str) -> str:
    return hex_text.translate(str.maketrans("0123456789", "ghijklmnop"))


def _ids(body: Any) -> list[str]:
    if isinstance(body, list):
        return [str(r["id"]) for r in body]
    if "results" in body:
        return [str(r["id"]) for r in body["results"]]
    return [str(body["id"])]


def _code(response: httpx.Response) -> str:
    try:
        return str(response.json()["error"]["code"])
    except (ValueError, KeyError, TypeError):
        return ""


# --- the check ---------------------------------------------------------------------------------


async def verify(
    host: str,
    keys: dict[str, str],
    acked: list[Acked],
    sent: list[Acked],
    lost: list[Acked],
    deadline_s: float,
) -> dict[str, Any]:
    """Every acknowledged write: present exactly once, in its own tenant only, searchable; no
    text sent, acknowledged or not (its answer lost, none came), stored twice; and every write
    whose answer was lost (the server said it was done) stored."""
    async with httpx.AsyncClient(timeout=30) as http:
        await _settled(http, host, keys, acked, deadline_s)
        stored = await _stored(http, host, keys, acked)
        ids = {
            t: {i for found in contents.values() for i in found} for t, contents in stored.items()
        }
        missing = [a for a in acked if a.id not in ids[a.tenant]]
        altered = [a for a in acked if a.id not in stored[a.tenant].get(a.content, [])]
        twice = [a for a in acked if len(stored[a.tenant].get(a.content, [])) > 1]
        sent_twice = [a for a in sent if len(stored[a.tenant].get(a.content, [])) > 1]
        lost_missing = [a for a in lost if a.content not in stored[a.tenant]]
        leaked = [a for a in acked for t in keys if t != a.tenant and a.content in stored[t]]
        unfound = await _unfound(http, host, keys, acked)
    return {
        "acknowledged": len(acked),
        "missing": len(missing),
        "content_differs": len(altered),
        "duplicated": len(twice),
        "sent": len(sent),
        "sent_stored_twice": len(sent_twice),
        "answer_lost_texts": len(lost),
        "answer_lost_not_stored": len(lost_missing),
        "in_another_tenant": len(leaked),
        "not_searchable": len(unfound),
        "examples": [
            a.content
            for a in (missing + altered + twice + sent_twice + lost_missing + leaked + unfound)[:5]
        ],
    }


async def _settled(
    http: httpx.AsyncClient, host: str, keys: dict[str, str], acked: list[Acked], deadline_s: float
) -> None:
    """Wait until every acknowledged background write is embedded (the workers' job)."""
    deadline = time.monotonic() + deadline_s
    pending = [a for a in acked if a.content.startswith("queued")]
    while pending and time.monotonic() < deadline:
        still = []
        for a in pending:
            got = await http.get(
                f"{host}/v1/memories/{a.id}",
                params={"user_id": a.user},
                headers={"Authorization": f"Bearer {keys[a.tenant]}"},
            )
            if got.status_code != 200 or not got.json().get("embedded"):
                still.append(a)
        pending = still
        if pending:
            await asyncio.sleep(1)


async def _stored(
    http: httpx.AsyncClient, host: str, keys: dict[str, str], acked: list[Acked]
) -> dict[str, dict[str, list[str]]]:
    """Per tenant: content -> ids of every memory of the drill's users, read page by page."""
    users = sorted({a.user for a in acked})
    stored: dict[str, dict[str, list[str]]] = {t: {} for t in keys}
    for tenant, key in keys.items():
        for user in users:
            cursor: str | None = None
            while True:
                params: dict[str, Any] = {"user_id": user, "limit": 100}
                if cursor:
                    params["cursor"] = cursor
                page = (
                    await http.get(
                        f"{host}/v1/memories",
                        params=params,
                        headers={"Authorization": f"Bearer {key}"},
                    )
                ).json()
                for memory in page["results"]:
                    stored[tenant].setdefault(memory["content"], []).append(memory["id"])
                cursor = page.get("next_cursor")
                if not cursor:
                    break
    return stored


async def _unfound(
    http: httpx.AsyncClient, host: str, keys: dict[str, str], acked: list[Acked]
) -> list[Acked]:
    gate = asyncio.Semaphore(8)

    async def found(a: Acked) -> bool:
        token = a.content.split()[1]
        async with gate:
            answer = await http.post(
                f"{host}/v1/memories/search",
                json={"query": token, "user_id": a.user, "recipe": "keyword", "limit": 5},
                headers={"Authorization": f"Bearer {keys[a.tenant]}"},
            )
        return answer.status_code == 200 and a.id in {r["id"] for r in answer.json()["results"]}

    hits = await asyncio.gather(*(found(a) for a in acked))
    return [a for a, hit in zip(acked, hits, strict=True) if not hit]
