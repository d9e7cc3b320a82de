"""Webhooks end to end, against a real HTTP receiver on 127.0.0.1: every event type delivered
and verified with the Standard Webhooks reference library; an endpoint away for several retry
rounds gets every event once, in order per user; a worker SIGKILLed mid-delivery loses
nothing; a 4xx-forever endpoint ends in the dead letter and a replay delivers; private targets
are refused unless the operator allows them; another tenant sees and receives nothing; the
secret is shown once and never again, nor logged."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import standardwebhooks
from fastapi.testclient import TestClient
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from memvault import AsyncMemory, InvalidInput, NotFound, Settings, auth
from memvault.admin import AsyncAdmin
from memvault.api import create_app
from memvault.config import Settings as _Settings
from memvault.db import embedding_queue
from memvault.db.units import transaction
from memvault.outbound import Guard, Refused
from memvault.worker import Worker
from tests.conftest import KEY, backend_of
from tests.processes import Process, environment
from tests.test_tracing import named, spans  # noqa: F401  (the fixture and the helper)
from tests.waiting import wait_for, wait_until

# Retries within a test: 20 ms first backoff, doubling to 200 ms at most.
FAST = {
    "webhook_allow_private": True,
    "webhook_backoff_base_s": 0.02,
    "webhook_backoff_cap_s": 0.2,
    "embedding_provider": "hash",
}


class Receiver:
    """An HTTP endpoint in a thread: records what it accepted; ``status`` answers each
    request (a callable of the parsed body); ``hold`` keeps a request open until released."""

    def __init__(self) -> None:
        self.received: list[tuple[dict[str, str], bytes]] = []
        self.attempts = 0
        self.status: Callable[[dict[str, Any]], int] = lambda body: 200
        self.hold: threading.Event | None = None
        self.holding = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self.port = 0
        self.start()

    def start(self) -> None:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["content-length"]))
                receiver.attempts += 1
                held = receiver.hold
                if held is not None:
                    receiver.holding.set()
                    held.wait(30)
                status = receiver.status(json.loads(body))
                # A held request's sender is gone by the time it is answered: not received.
                if 200 <= status < 300 and held is None:
                    receiver.received.append((dict(self.headers.items()), body))
                self.send_response(status)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        ThreadingHTTPServer.allow_reuse_address = True
        ThreadingHTTPServer.request_queue_size = 64  # a batch connects at once
        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.port = self._server.server_address[1]
        # A short poll: stop() (shutdown() waits for the loop's next poll) took the default
        # 0.5 s in nearly every test here, and once more mid-test where an endpoint goes away.
        serve = threading.Thread(target=self._server.serve_forever, args=(0.01,), daemon=True)
        serve.start()

    def stop(self) -> None:
        """Down: the port refuses connections until ``start`` again."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    def events(self) -> list[dict[str, Any]]:
        return [json.loads(body) for _, body in self.received]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    if r.hold is not None:
        r.hold.set()
    r.stop()


@pytest.fixture
async def store(make_settings: Callable[..., Settings]) -> AsyncIterator[AsyncMemory]:
    memory = await AsyncMemory.open(make_settings(**FAST))
    yield memory
    await memory.close()


@pytest.fixture
async def worker(store: AsyncMemory) -> AsyncIterator[Worker]:
    """The store's worker running, as the embedded server runs it."""
    running = Worker(backend_of(store))
    stop = asyncio.Event()
    task = asyncio.create_task(running.run(stop, sweeper=False))
    yield running
    stop.set()
    await task


def verify(secret: str, headers: dict[str, str], body: bytes) -> dict[str, Any]:
    """What the reference library makes of a request (raises unless the signature holds)."""
    verified: dict[str, Any] = standardwebhooks.Webhook(secret).verify(body, headers)
    return verified


async def test_every_event_type_is_delivered_signed_and_verifies(
    store: AsyncMemory, receiver: Receiver
) -> None:
    hook = await store.create_webhook(receiver.url)
    added = await store.add("I like green tea", user_id="ann")
    await store.update(added.id, user_id="ann", content="I like jasmine tea")
    await store.delete(added.id, user_id="ann")
    await store.add_messages([{"role": "user", "content": "Hello there"}], user_id="ann")
    await store.add_fact("Ann", "works_for", object="Initech", user_id="ann")
    await store.add_fact("Ann", "works_for", object="Hooli", user_id="ann")
    goal = await store.add_goal("Sign a lease", user_id="ann")
    await store.complete_goal(goal.id, user_id="ann")
    await _a_job_fails_for_good(store)
    await store.add("Queued for the worker", user_id="ann", background=True)
    await Worker(backend_of(store)).run_once()
    await store.erase_user(user_id="bob")
    await _deliver(store)
    wanted = {
        "memory.created", "memory.updated", "memory.deleted", "conversation.turn_added",
        "fact.recorded", "fact.superseded", "goal.completed", "user.erased", "job.finished",
        "job.failed",
    }  # fmt: skip
    assert wanted <= {e["type"] for e in receiver.events()}
    # Last: the tenant's erasure takes its deliveries still waiting, then tells of itself.
    receipt = await AsyncAdmin.of(store).erase_tenant("default")
    await _deliver(store)
    assert receiver.events()[-1]["type"] == "tenant.erased"
    assert receiver.events()[-1]["data"]["receipt_id"] == receipt.request_id
    for headers, body in receiver.received:
        payload = verify(hook.secret, headers, body)
        assert payload["id"] == headers["webhook-id"]
        assert "content" not in payload["data"]  # none asked for


async def test_a_contradiction_awaiting_review_is_an_event(
    make_settings: Callable[..., Settings], receiver: Receiver
) -> None:
    async with AsyncMemory(make_settings(graph_contradiction_policy="flag_review", **FAST)) as m:
        hook = await m.create_webhook(receiver.url, event_types=["review.opened"])
        await m.add_fact("Ann", "works_for", object="Initech", user_id="ann")
        await m.add_fact("Ann", "works_for", object="Hooli", user_id="ann")
        await _deliver(m)
        (event,) = receiver.events()
        assert event["type"] == "review.opened"
        verify(hook.secret, *receiver.received[0])


async def test_a_batch_tells_of_each_fact_its_memories_stated(
    store: AsyncMemory, receiver: Receiver
) -> None:
    """A batch's graph writes send their events together: one per fact, each naming the
    memory it came from."""
    await store.create_webhook(receiver.url, event_types=["fact.recorded"])
    added = await store.add_many(
        [
            {"content": "I moved to Lisbon last spring", "user_id": "ann"},
            {"content": "My sister Ana works at Acme", "user_id": "ann"},
            {"content": "What a lovely day", "user_id": "ann"},
        ]
    )
    await _deliver(store)
    facts = await store.facts(user_id="ann")
    events = [e["data"] for e in receiver.events()]
    assert sorted(e["fact_id"] for e in events) == sorted(str(f.id) for f in facts)
    assert {e["memory_id"] for e in events} == {str(r.id) for r in added[:2]}


async def _a_job_fails_for_good(store: AsyncMemory) -> None:
    """An embedding job failing its last attempt (as the worker records one)."""
    added = await store.add("An embedding that fails", user_id="ann", background=True)
    engine = backend_of(store).engine
    async with transaction(engine, every_tenant=True) as conn:
        claimed = await embedding_queue.claim(conn, 100, 60)
        (job,) = [j for j in claimed if j.memory_id == added.id]
        await embedding_queue.fail(conn, job, "provider away", max_attempts=1, backoff_base_s=0)


async def _deliver(memory: AsyncMemory) -> None:
    """Run the worker's webhook step until nothing is due."""
    dispatcher = Worker(backend_of(memory)).webhooks
    try:
        while await dispatcher.tick():
            pass
    finally:
        await dispatcher.close()


async def test_content_is_sent_only_when_asked_and_never_stored(
    store: AsyncMemory, receiver: Receiver, raw: Any
) -> None:
    await store.create_webhook(receiver.url, include_content=True, event_types=["memory.created"])
    await store.add("My locker code is 4417", user_id="ann")
    await _deliver(store)
    (event,) = receiver.events()
    assert event["data"]["content"] == "My locker code is 4417"
    stored = raw.execute("SELECT data::text FROM webhook_deliveries").fetchall()
    assert stored and all("4417" not in row[0] for row in stored)


async def test_an_endpoint_away_for_several_rounds_gets_every_event_once_in_order(
    store: AsyncMemory, receiver: Receiver, worker: Worker
) -> None:
    await store.create_webhook(receiver.url, event_types=["memory.created"])
    receiver.stop()
    for n in range(5):
        for user in ("ann", "bob", "cy"):
            await store.add(f"note {n} of {user}", user_id=user, infer=False)
    # Away while each user's first event is retried at least four times (four rounds of
    # backoff: 20, 40, 80, 160 ms ceilings, with jitter), then back.
    # The deadlines are generous: a loaded machine is slow, not wrong.
    await wait_for(lambda: _min_attempts(store, 4), 120, "the retries never came")
    receiver.start()
    await wait_for(lambda: len(receiver.received) >= 15, 120, "not every event arrived")
    events = receiver.events()
    ids = [e["id"] for e in events]
    assert len(ids) == len(set(ids)) == 15
    for user in ("ann", "bob", "cy"):
        created = [e["data"]["created_at"] for e in events if e["data"]["user_id"] == user]
        assert created == sorted(created) and len(created) == 5


async def _min_attempts(store: AsyncMemory, attempts: int) -> bool:
    (hook,) = await store.list_webhooks()
    pending = await store.webhook_deliveries(hook.id, state="pending", limit=500)
    heads = {d.user_id: d for d in sorted(pending, key=lambda d: d.id, reverse=True)}
    return len(heads) == 3 and all(d.attempts >= attempts for d in heads.values())


async def test_a_4xx_forever_endpoint_ends_dead_and_a_replay_delivers(
    make_settings: Callable[..., Settings], receiver: Receiver
) -> None:
    receiver.status = lambda body: 400
    async with AsyncMemory(make_settings(webhook_max_attempts=3, **FAST)) as m:
        hook = await m.create_webhook(receiver.url, event_types=["memory.created"])
        await m.add("a note", user_id="ann", infer=False)
        stop = asyncio.Event()
        task = asyncio.create_task(Worker(backend_of(m)).run(stop, sweeper=False))
        try:
            (dead,) = await wait_for(
                lambda: m.webhook_deliveries(hook.id, state="dead"), 30, "never dead-lettered"
            )
            assert (dead.attempts, dead.last_status) == (3, 400)
            assert receiver.attempts == 3
            receiver.status = lambda body: 204
            assert (await m.replay_webhook(hook.id)).replayed == 1
            await wait_for(lambda: receiver.received, 30, "the replay never arrived")
            assert receiver.events()[0]["id"] == str(dead.event_id)
            await wait_for(
                lambda: m.webhook_deliveries(hook.id, state="delivered"), 30, "not recorded"
            )
        finally:
            stop.set()
            await task


@pytest.mark.slow
async def test_a_worker_killed_mid_delivery_leaves_it_to_the_next(
    make_settings: Callable[..., Settings],
    database_url: str,
    receiver: Receiver,
    tmp_path: Path,
) -> None:
    receiver.hold = threading.Event()
    env = environment(
        tmp_path / "data",
        database_url=database_url,
        encryption_key=KEY,
        webhook_allow_private="true",
        webhook_timeout_s=0.5,
        worker_lease_s=1,
        schedule_enabled="false",
    )
    async with AsyncMemory(make_settings(**FAST)) as m:
        hook = await m.create_webhook(receiver.url, event_types=["memory.created"])
        await m.add("a note", user_id="ann", infer=False)
        first = Process(["worker"], env, tmp_path / "worker1.log")
        try:
            wait_until(receiver.holding.is_set, 60, "the first worker never sent it")
        finally:
            first.kill()  # mid-request: the endpoint has it, no answer went back
        receiver.hold.set()
        receiver.hold = None
        second = Process(["worker"], env, tmp_path / "worker2.log")
        try:
            await wait_for(lambda: receiver.received, 60, "nobody sent it again")
        finally:
            second.stop()
        (delivery,) = await m.webhook_deliveries(hook.id)
        assert delivery.state == "delivered" and delivery.attempts >= 2


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest/meta-data/",
        "http://10.0.0.1/hook",
        "http://[::1]/hook",
        "http://[::ffff:127.0.0.1]/hook",
        "http://127.0.0.1:9/hook",
        "http://localhost/hook",
        "http://[fe80::1]/hook",
        "http://224.0.0.1/hook",
    ],
)
async def test_private_targets_are_refused_unless_allowed(url: str) -> None:
    guard = Guard.from_settings(_Settings())
    with pytest.raises(Refused):
        await guard.resolve(url)
    allowing = Guard.from_settings(_Settings(webhook_allowed_cidrs="0.0.0.0/0,::/0"))
    if "localhost" not in url:
        assert (await allowing.resolve(url)).url.startswith("http://")


async def test_a_refused_url_is_a_clear_422(make_settings: Callable[..., Settings]) -> None:
    async with AsyncMemory(make_settings(embedding_provider="hash")) as m:
        with pytest.raises(InvalidInput) as refused:
            await m.create_webhook("http://169.254.169.254/latest/meta-data/")
        assert "MEMVAULT_WEBHOOK_ALLOW_PRIVATE" in str(refused.value)
        assert await m.list_webhooks() == []


async def test_delivery_checks_the_address_again(
    store: AsyncMemory, receiver: Receiver, make_settings: Callable[..., Settings]
) -> None:
    """An address allowed when subscribed but not when sent (the setting changed, or a name
    that resolves elsewhere now) is refused at delivery, and never called."""
    hook = await store.create_webhook(receiver.url, event_types=["memory.created"])
    await store.add("a note", user_id="ann", infer=False)
    async with AsyncMemory(make_settings(embedding_provider="hash")) as strict:
        dispatcher = Worker(backend_of(strict)).webhooks
        assert await dispatcher.tick() == 1
        await dispatcher.close()
    (pending,) = await store.webhook_deliveries(hook.id)
    assert pending.state == "pending" and "non-public" in (pending.last_error or "")
    assert receiver.attempts == 0


async def test_another_tenant_never_receives_sees_or_replays(
    make_settings: Callable[..., Settings], receiver: Receiver
) -> None:
    other = Receiver()
    try:
        # The server runs the worker in-process, as the embedded one does.
        app = create_app(make_settings(auth="required", run_worker=True, **FAST))
        with TestClient(app, raise_server_exceptions=False) as api:
            engine = backend_of(api.app.state.memory).engine  # type: ignore[attr-defined]
            keys = {
                t: api.portal.call(auth.create_key, engine, t, "read,write,admin", None).key  # type: ignore[union-attr]
                for t in ("acme", "globex")
            }

            def call(tenant: str, method: str, path: str, **kw: Any) -> Any:
                headers = {"Authorization": f"Bearer {keys[tenant]}"}
                return api.request(method, path, headers=headers, **kw)

            made = call("acme", "POST", "/v1/webhooks", json={"url": receiver.url})
            assert made.status_code == 201
            hook = made.json()
            call("globex", "POST", "/v1/webhooks", json={"url": other.url})
            for method, path in [
                ("GET", f"/v1/webhooks/{hook['id']}"),
                ("PATCH", f"/v1/webhooks/{hook['id']}"),
                ("GET", f"/v1/webhooks/{hook['id']}/deliveries"),
                ("POST", f"/v1/webhooks/{hook['id']}/replay"),
                ("POST", f"/v1/webhooks/{hook['id']}/secret"),
                ("DELETE", f"/v1/webhooks/{hook['id']}"),
            ]:
                body = {} if method in ("POST", "PATCH") else None
                assert call("globex", method, path, json=body).status_code == 404, path
            listed = call("globex", "GET", "/v1/webhooks").json()["results"]
            assert [h["url"] for h in listed] == [other.url]
            written = call("acme", "POST", "/v1/memories", json={"content": "x", "user_id": "u"})
            assert written.status_code == 201
            call("globex", "POST", "/v1/memories", json={"content": "y", "user_id": "u"})
            wait_until(lambda: len(receiver.received) and len(other.received), 30, "not sent")
            mine = {e["data"]["memory_id"] for e in receiver.events()}
            theirs = {e["data"]["memory_id"] for e in other.events()}
            assert mine == {written.json()["id"]} and not mine & theirs
    finally:
        other.stop()


async def test_the_secret_is_shown_once_and_never_logged(
    store: AsyncMemory, receiver: Receiver, caplog: pytest.LogCaptureFixture
) -> None:
    hook = await store.create_webhook(receiver.url, event_types=["memory.created"])
    assert hook.secret.startswith("whsec_")
    shown = [
        await store.get_webhook(hook.id),
        *(await store.list_webhooks()),
        await store.update_webhook(hook.id, description="CRM"),
    ]
    for answer in shown:
        assert hook.secret not in answer.model_dump_json()
        assert "secret" not in answer.model_dump()
    receiver.status = lambda body: 500
    caplog.set_level(logging.DEBUG)
    await store.add("a note", user_id="ann", infer=False)
    await _deliver_once(store)
    assert "webhook delivery failed" in caplog.text
    assert hook.secret not in caplog.text and hook.secret[6:] not in caplog.text
    rotated = await store.rotate_webhook_secret(hook.id)
    assert rotated.secret != hook.secret
    receiver.status = lambda body: 200
    await store.replay_webhook(hook.id, delivery_id=(await store.webhook_deliveries(hook.id))[0].id)
    await _deliver(store)
    verify(rotated.secret, *receiver.received[0])
    with pytest.raises(standardwebhooks.WebhookVerificationError):
        verify(hook.secret, *receiver.received[0])


async def test_a_secret_still_signs_after_the_key_it_was_sealed_under_is_retired(
    make_settings: Callable[..., Settings], receiver: Receiver
) -> None:
    """Key rotation re-seals the secrets (under the new master key) before it forgets the
    old one: the endpoint keeps verifying what it receives."""
    from memvault.crypto.envelope import generate_key

    old_key, new_key = generate_key(), generate_key()
    async with await AsyncMemory.open(make_settings(encryption_key=old_key, **FAST)) as before:
        hook = await before.create_webhook(receiver.url, event_types=["memory.created"])
    during = make_settings(encryption_key=new_key, encryption_old_keys=old_key, **FAST)
    async with await AsyncMemory.open(during) as store:
        report = await AsyncAdmin.of(store).rotate_encryption_key(reload_grace_s=0)
    assert report.retired_key_ids
    async with await AsyncMemory.open(make_settings(encryption_key=new_key, **FAST)) as after:
        await after.add("a note", user_id="ann", infer=False)
        await _deliver(after)
    (received,) = receiver.received
    assert verify(hook.secret, *received)["type"] == "memory.created"


async def _deliver_once(memory: AsyncMemory) -> None:
    dispatcher = Worker(backend_of(memory)).webhooks
    await dispatcher.tick()
    await dispatcher.close()


async def test_a_subscription_filters_by_type_app_and_user(
    store: AsyncMemory, receiver: Receiver
) -> None:
    await store.create_webhook(
        receiver.url, event_types=["memory.created"], app_id="crm", user_id="ann"
    )
    await store.add("kept", user_id="ann", app_id="crm", infer=False)
    await store.add("other app", user_id="ann", app_id="web", infer=False)
    await store.add("other user", user_id="bob", app_id="crm", infer=False)
    await _deliver(store)
    assert [(e["data"]["user_id"], e["data"]["app_id"]) for e in receiver.events()] == [
        ("ann", "crm")
    ]


async def test_unknown_webhooks_are_not_found(store: AsyncMemory) -> None:
    with pytest.raises(NotFound):
        await store.get_webhook("3f2e1d0c-9b8a-4765-8432-10fedcba9876")


def test_the_cli_manages_webhooks(
    cli_env: dict[str, str], receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from memvault.cli import app

    runner = CliRunner()
    refused = runner.invoke(app, ["webhooks", "add", "http://10.0.0.1/hook"])
    assert refused.exit_code == 1 and "non-public" in refused.output
    monkeypatch.setenv("MEMVAULT_WEBHOOK_ALLOW_PRIVATE", "true")
    made = runner.invoke(app, ["webhooks", "add", receiver.url, "-e", "memory.created", "--json"])
    assert made.exit_code == 0, made.output
    hook = json.loads(made.stdout)
    assert hook["secret"].startswith("whsec_")
    listed = runner.invoke(app, ["webhooks", "list", "--json"])
    assert hook["id"] in listed.stdout and hook["secret"] not in listed.stdout
    assert runner.invoke(app, ["webhooks", "disable", hook["id"]]).exit_code == 0
    shown = runner.invoke(app, ["webhooks", "deliveries", hook["id"], "--json"])
    assert json.loads(shown.stdout) == []
    replayed = runner.invoke(app, ["webhooks", "replay", hook["id"]])
    assert "queued 0" in replayed.stdout
    assert runner.invoke(app, ["webhooks", "remove", hook["id"]]).exit_code == 0
    assert json.loads(runner.invoke(app, ["webhooks", "list", "--json"]).stdout) == []


def test_the_dashboard_lists_deliveries_and_replays_within_the_tenant(
    make_settings: Callable[..., Settings], receiver: Receiver
) -> None:
    from tests.test_ui import csrf_of, make_key, on_app, sign_in

    receiver.status = lambda body: 400
    app = create_app(make_settings(auth="required", webhook_max_attempts=1, **FAST))
    with TestClient(app, raise_server_exceptions=False) as ui:
        memory: AsyncMemory = ui.app.state.memory  # type: ignore[attr-defined]
        acme = memory.for_tenant("acme")
        hook = on_app(ui, acme.create_webhook, receiver.url, event_types=["memory.created"])
        on_app(ui, acme.add, "a note", user_id="ann", infer=False)
        dispatcher = Worker(backend_of(memory)).webhooks
        on_app(ui, dispatcher.tick)
        on_app(ui, dispatcher.close)
        sign_in(ui, make_key(ui, "acme", "read,write,admin"))
        shown = ui.get("/ui/webhooks")
        assert shown.status_code == 200 and receiver.url in shown.text and "dead" in shown.text
        assert hook.secret not in shown.text
        receiver.status = lambda body: 200
        replayed = ui.post(
            "/ui/webhooks/replay", data={"csrf": csrf_of(shown.text), "webhook_id": str(hook.id)}
        )
        assert replayed.status_code == 200 and "1 delivery queued again" in replayed.text
        refused = ui.post("/ui/webhooks/replay", data={"webhook_id": str(hook.id)})
        assert refused.status_code == 403  # no CSRF token
        sign_in(ui, make_key(ui, "globex", "read,write,admin"))
        theirs = ui.get("/ui/webhooks")
        assert receiver.url not in theirs.text
        probe = ui.post(
            "/ui/webhooks/replay", data={"csrf": csrf_of(theirs.text), "webhook_id": str(hook.id)}
        )
        assert probe.status_code == 404


def test_the_http_client_manages_webhooks(
    make_settings: Callable[..., Settings], receiver: Receiver
) -> None:
    from memvault import MemoryClient
    from tests.serving import serving

    # The receiver's address allowed, and no other private one.
    allowed = {**FAST, "webhook_allow_private": False, "webhook_allowed_cidrs": "127.0.0.1/32"}
    app = create_app(make_settings(**allowed))
    with serving(app) as url, MemoryClient(url) as client:
        hook = client.create_webhook(receiver.url, event_types=["goal.completed"])
        assert hook.secret.startswith("whsec_")
        assert [h.id for h in client.list_webhooks()] == [hook.id]
        assert client.update_webhook(hook.id, enabled=False).enabled is False
        assert client.webhook_deliveries(hook.id) == []
        assert client.replay_webhook(hook.id).replayed == 0
        with pytest.raises(InvalidInput):
            client.create_webhook("http://169.254.169.254/")
        client.delete_webhook(hook.id)
        with pytest.raises(NotFound):
            client.get_webhook(hook.id)


async def test_a_delivery_is_a_span_naming_its_event_type_and_status_not_its_target(
    store: AsyncMemory,
    receiver: Receiver,
    spans: InMemorySpanExporter,  # noqa: F811
) -> None:
    await store.create_webhook(receiver.url, event_types=["memory.created"])
    await store.add("My locker code is 4417", user_id="ann")
    await _deliver(store)
    (delivered,) = named(spans, "memvault.webhook.deliver")
    attributes = dict(delivered.attributes or {})
    assert attributes["memvault.event_type"] == "memory.created"
    assert attributes["memvault.attempt"] == 1
    assert attributes["memvault.status_code"] == 200 and attributes["memvault.delivered"]
    shown = json.dumps(attributes)
    assert str(receiver.port) not in shown and "ann" not in shown and "4417" not in shown
