"""OpenTelemetry spans (memvault/tracing.py), read back from the SDK's in-memory exporter: the
tree of an add and of a remember(), the caller's traceparent as the request's parent, a job
run's span, log lines that name the trace, nothing a user wrote in any span, and the no-op
(with a clear error when asked for without the extra)."""

from __future__ import annotations

import io
import json
import logging
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from memvault import AsyncMemory, Settings, logs, tracing
from memvault.admin import AsyncAdmin
from memvault.api import create_app
from memvault.errors import ConfigurationError
from memvault.worker.runner import Worker
from tests.conftest import backend_of, settings_for

CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"
TRACEPARENT = f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"
INGEST_STAGES = {"pii", "extract", "embed", "dedup", "enrich", "graph", "commit"}
REMEMBER_STAGES = {"embed", "episodic", "procedural", "semantic", "goals", "profile", "working"}


@pytest.fixture
def spans(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemorySpanExporter]:
    """memvault's spans into memory, for this test. The same provider stands in as the
    process's global one, so a library that traces itself (FastAPI does, with raw paths)
    would land its spans here too, and the scans below would see them."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: provider)
    tracing.install(provider)
    yield exporter
    tracing.uninstall()
    provider.shutdown()


def named(exporter: InMemorySpanExporter, name: str) -> list[ReadableSpan]:
    return [s for s in exporter.get_finished_spans() if s.name == name]


def one(exporter: InMemorySpanExporter, name: str) -> ReadableSpan:
    found = named(exporter, name)
    assert len(found) == 1, (name, sorted(s.name for s in exporter.get_finished_spans()))
    return found[0]


def children(exporter: InMemorySpanExporter, parent: ReadableSpan) -> list[ReadableSpan]:
    assert parent.context is not None
    return [
        s
        for s in exporter.get_finished_spans()
        if s.parent is not None and s.parent.span_id == parent.context.span_id
    ]


def stage_names(exporter: InMemorySpanExporter, parent: ReadableSpan, prefix: str) -> set[str]:
    return {s.name.removeprefix(prefix) for s in children(exporter, parent)}


@pytest.fixture
def traced_client(settings: Settings, spans: InMemorySpanExporter) -> Iterator[TestClient]:
    with TestClient(create_app(settings), raise_server_exceptions=False) as client:
        spans.clear()  # start-up's own work (the model load, gauges) is not under test
        yield client


def test_an_add_is_a_request_span_in_the_callers_trace_over_its_stages(
    traced_client: TestClient, spans: InMemorySpanExporter
) -> None:
    answer = traced_client.post(
        "/v1/memories",
        json={"content": "Ana moved to Lisbon in May", "user_id": "ana"},
        headers={"traceparent": TRACEPARENT},
    )
    assert answer.status_code == 201, answer.text

    request = one(spans, "POST /v1/memories")
    assert request.kind == trace.SpanKind.SERVER
    assert request.parent is not None and f"{request.parent.span_id:016x}" == CALLER_SPAN
    assert request.context is not None and f"{request.context.trace_id:032x}" == CALLER_TRACE
    attributes = dict(request.attributes or {})
    assert attributes["http.route"] == "/v1/memories"
    assert attributes["http.response.status_code"] == 201
    assert attributes["http.response.body.size"] > 0

    ingest = one(spans, "memvault.ingest")
    assert ingest.parent is not None and ingest.parent.span_id == request.context.span_id
    assert stage_names(spans, ingest, "memvault.ingest.") == INGEST_STAGES
    assert dict(ingest.attributes or {})["memvault.items"] == 1
    dedup = one(spans, "memvault.ingest.dedup")
    assert dict(dedup.attributes or {})["memvault.new"] == 1
    for span in spans.get_finished_spans():  # one trace, the caller's
        assert span.context is not None and span.context.trace_id == request.context.trace_id


def test_a_search_has_its_recall_stages_and_lists(
    traced_client: TestClient, spans: InMemorySpanExporter
) -> None:
    for text in ("Ana is allergic to peanuts", "Ana moved to Lisbon"):
        traced_client.post("/v1/memories", json={"content": text, "user_id": "ana"})
    spans.clear()
    found = traced_client.post("/v1/memories/search", json={"query": "food", "user_id": "ana"})
    assert found.status_code == 200, found.text

    request = one(spans, "POST /v1/memories/search")
    search = one(spans, "memvault.search")
    assert search.parent is not None and request.context is not None
    assert search.parent.span_id == request.context.span_id
    assert {"embed", "retrieve", "rank"} <= stage_names(spans, search, "memvault.search.")
    retrieve = one(spans, "memvault.search.retrieve")
    lists = {dict(s.attributes or {})["memvault.list"] for s in children(spans, retrieve)}
    assert {"query:vector", "query:keyword"} <= lists
    assert dict(search.attributes or {})["memvault.hits"] == len(found.json()["results"])


async def test_remember_is_a_span_over_each_kind_and_the_bundle(
    memory: AsyncMemory, spans: InMemorySpanExporter
) -> None:
    await memory.add_messages(
        [{"role": "user", "content": "I moved to Lisbon and I work at Acme"}], user_id="ana"
    )
    await memory.add("Ana prefers tea", user_id="ana")
    spans.clear()

    bundle = await memory.remember("where does Ana live?", user_id="ana")

    whole = one(spans, "memvault.remember")
    assert whole.parent is None  # a library call: the root of its trace
    stages = stage_names(spans, whole, "memvault.remember.")
    assert stages == {*REMEMBER_STAGES, "bundle"}
    episodic = one(spans, "memvault.remember.episodic")
    (search,) = children(spans, episodic)
    assert search.name == "memvault.search"
    assert dict(whole.attributes or {})["memvault.tokens"] == bundle.tokens


async def test_a_worker_batch_and_a_scheduled_job_have_their_spans(
    make_settings: Callable[..., Settings], spans: InMemorySpanExporter
) -> None:
    memory = await AsyncMemory.open(make_settings(run_worker=False))
    try:
        await memory.add("Ana likes long walks", user_id="ana", background=True)
        assert await Worker(backend_of(memory)).run_once() == 1
        await AsyncAdmin.of(memory).run_scheduled("decay")
    finally:
        await memory.close()

    batch = one(spans, "memvault.worker.batch")
    assert dict(batch.attributes or {})["memvault.jobs"] == 1
    assert dict(batch.attributes or {})["memvault.written"] == 1
    (settle,) = children(spans, batch)
    assert settle.name == "memvault.worker.settle"
    job = dict(one(spans, "memvault.job.decay").attributes or {})
    assert job["memvault.job"] == "decay" and job["memvault.dry_run"] is False


MARK = "zq9x"


def test_no_span_holds_content_ids_queries_or_keys(
    traced_client: TestClient, spans: InMemorySpanExporter
) -> None:
    """Everything a user writes carries the marker — content, user id, app id, query, metadata,
    conversation id, context key, request id, query string, an input the API refuses — and no
    span name, attribute, event, link, status or resource may hold it."""
    user = f"{MARK}-user@example.com"
    conversation = f"{MARK}-conversation"
    headers = {"traceparent": TRACEPARENT, "x-request-id": f"{MARK}-request"}
    calls: list[tuple[str, str, dict[str, Any] | None]] = [
        (
            "POST",
            "/v1/memories",
            {
                "content": f"{MARK} Bob Stone lives at 4 {MARK} Street, call 555-0100",
                "user_id": user,
                "app_id": f"{MARK}-app",
                "metadata": {"note": f"{MARK}-meta"},
            },
        ),
        ("POST", "/v1/memories", {"content": f"{MARK} " * 50_000, "user_id": user}),
        (
            "POST",
            "/v1/memories",
            {"content": f"mail {MARK}@example.com", "user_id": user, "pii_policy": "reject"},
        ),
        (
            "POST",
            f"/v1/conversations/{conversation}/turns",
            {"user_id": user, "turns": [{"role": "user", "content": f"I am {MARK} Stone"}]},
        ),
        ("POST", "/v1/memories/search", {"query": f"where is {MARK} Street", "user_id": user}),
        ("POST", "/v1/remember", {"query": f"who is {MARK} Stone?", "user_id": user}),
        ("GET", f"/v1/memories?user_id={user}&metadata=%7B%22n%22%3A%22{MARK}%22%7D", None),
        ("PUT", f"/v1/working/{conversation}/context/{MARK}-key", {"value": MARK, "user_id": user}),
    ]
    statuses = []
    for method, path, body in calls:
        answer = traced_client.request(method, path, json=body, headers=headers)
        statuses.append(answer.status_code)
    assert statuses[:3] == [201, 422, 422] and statuses[4] == 200, statuses

    exported = spans.get_finished_spans()
    assert len(exported) > 30
    assert {s.name for s in exported} >= {"memvault.ingest", "memvault.search", "POST /v1/remember"}
    for span in exported:
        text = span.to_json()
        assert MARK not in text, span.name
        assert "example.com" not in text, span.name
        assert not any(k.startswith("url.") for k in (span.attributes or {})), span.name
    # The input refused in a stage is an error span with its code, not its message.
    refused = [s for s in exported if s.status.status_code == trace.StatusCode.ERROR]
    assert refused
    assert {dict(s.attributes or {}).get("memvault.error_code") for s in refused} >= {
        "pii_rejected"
    }


def test_a_log_line_carries_the_trace_and_span_ids(spans: InMemorySpanExporter) -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logs.JsonFormatter())
    logger = logging.getLogger("memvault.test_tracing")
    logger.addHandler(handler)
    try:
        with tracing.span("memvault.test"):
            logger.warning("inside")
        logger.warning("outside")
    finally:
        logger.removeHandler(handler)
    inside, outside = (json.loads(line) for line in stream.getvalue().splitlines())
    (span,) = spans.get_finished_spans()
    assert span.context is not None
    assert inside["trace_id"] == f"{span.context.trace_id:032x}"
    assert inside["span_id"] == f"{span.context.span_id:016x}"
    assert "trace_id" not in outside and "span_id" not in outside


def test_the_access_line_names_the_request_spans_trace(
    traced_client: TestClient, spans: InMemorySpanExporter, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="memvault.access"):
        traced_client.get("/v1/memories?user_id=ana", headers={"traceparent": TRACEPARENT})
    (line,) = [r for r in caplog.records if r.name == "memvault.access"]
    request = one(spans, "GET /v1/memories")
    assert request.context is not None
    assert vars(line)["trace_id"] == CALLER_TRACE
    assert vars(line)["span_id"] == f"{request.context.span_id:016x}"


def test_off_is_one_shared_no_op() -> None:
    assert not tracing.enabled()
    with tracing.span("memvault.anything", n=1) as stage:
        stage.set(m=2)
    assert stage is tracing.OFF
    assert tracing.request("GET", [(b"traceparent", TRACEPARENT.encode())]) is tracing.OFF
    tracing.record("memvault.anything", 0.1)
    assert tracing.current_ids() is None


def test_off_and_sdk_disabled_set_nothing_up(monkeypatch: pytest.MonkeyPatch) -> None:
    tracing.configure("off")
    assert not tracing.enabled()
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    tracing.configure("console")
    assert not tracing.enabled()


def test_console_tracing_records_through_its_own_provider(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OTEL_SERVICE_NAME", "memvault-test")
    tracing.configure("console")
    try:
        assert tracing.enabled()
        with tracing.span("memvault.test", items=2):
            pass
    finally:
        tracing.uninstall()  # flushes the batch
    printed = json.loads(capsys.readouterr().out)
    assert printed["name"] == "memvault.test"
    assert printed["attributes"] == {"memvault.items": 2}
    assert printed["resource"]["attributes"]["service.name"] == "memvault-test"


async def test_asking_for_tracing_without_the_extra_says_which_extra(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for name in [m for m in sys.modules if m.startswith("opentelemetry.sdk")]:
        monkeypatch.setitem(sys.modules, name, None)  # as if never installed
    monkeypatch.setitem(sys.modules, "opentelemetry.sdk", None)
    with pytest.raises(ConfigurationError) as refused:
        tracing.configure("otlp")
    assert "memvault[otel]" in refused.value.message
    # Opening a store with it set fails the same way, before it reaches for the database.
    nowhere = settings_for("postgresql://127.0.0.1:9/none", tmp_path, tracing="otlp")
    with pytest.raises(ConfigurationError, match=r"memvault\[otel\]"):
        await AsyncMemory.open(nowhere)
    assert not tracing.enabled()
