"""schemathesis against the live OpenAPI spec of a real server: every operation, generated
valid and invalid requests, with a real API key. No 5xx; every answer matches the spec
(documented status, content type, body schema)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis.checks import not_a_server_error
from schemathesis.generation.modes import GenerationMode
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from memvault import AsyncMemory, Settings, auth
from memvault.api import create_app
from tests.conftest import backend_of
from tests.serving import serving

# Per operation and mode. With every operation fuzzed (56, each also with its documented
# example) x 2 modes, 40 took 103 s of the suite; 15 keeps it near 40 s.
EXAMPLES = 15
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


async def _admin_key(settings: Settings) -> str:
    memory = await AsyncMemory.open(settings)
    try:
        return (await auth.create_key(backend_of(memory).engine, "fuzz", "read,write,admin")).key
    finally:
        await memory.close()


@pytest.fixture
def live(make_settings: Callable[..., Settings]) -> Iterator[tuple[str, str]]:
    config = make_settings(
        auth="required", embedding_provider="hash", run_worker=True, wait_timeout_s=2
    )
    key = asyncio.run(_admin_key(config))
    with serving(create_app(config)) as base:
        yield base, key


OPERATIONS = [
    ("POST", "/v1/memories"),
    ("POST", "/v1/memories/batch"),
    ("POST", "/v1/memories/search"),
    ("GET", "/v1/memories"),
    ("GET", "/v1/memories/count"),
    ("DELETE", "/v1/memories"),
    ("POST", "/v1/memories/feedback"),
    ("POST", "/v1/memories/delete"),
    ("GET", "/v1/memories/{memory_id}"),
    ("PATCH", "/v1/memories/{memory_id}"),
    ("DELETE", "/v1/memories/{memory_id}"),
    ("GET", "/v1/memories/{memory_id}/history"),
    ("POST", "/v1/messages"),
    ("GET", "/v1/admin/jobs"),
    ("POST", "/v1/admin/jobs/retry"),
    ("POST", "/v1/facts"),
    ("GET", "/v1/facts"),
    ("GET", "/v1/facts/reviews"),
    ("POST", "/v1/facts/reviews/{review_id}/resolve"),
    ("GET", "/v1/entities"),
    ("GET", "/v1/entities/{entity_id}"),
    ("GET", "/v1/entities/{entity_id}/graph"),
    ("POST", "/v1/entities/{entity_id}/merge"),
    ("POST", "/v1/entities/{entity_id}/split"),
    ("GET", "/health"),
    ("GET", "/ready"),
    ("GET", "/metrics"),
    ("GET", "/v1/audit"),
    ("GET", "/v1/users"),
    ("GET", "/v1/overview"),
    ("GET", "/v1/deletions"),
    ("POST", "/v1/deletions"),
    ("GET", "/v1/deletions/{request_id}"),
    ("GET", "/v1/health/memory"),
    ("POST", "/v1/health/memory/actions"),
    ("GET", "/v1/export"),
    ("POST", "/v1/import"),
    # cognitive memory
    ("POST", "/v1/conversations"),
    ("GET", "/v1/conversations"),
    ("GET", "/v1/conversations/{conversation_id}"),
    ("DELETE", "/v1/conversations/{conversation_id}"),
    ("POST", "/v1/conversations/{conversation_id}/turns"),
    ("PUT", "/v1/working/{conversation_id}/context/{key}"),
    ("GET", "/v1/working/{conversation_id}/context/{key}"),
    ("DELETE", "/v1/working/{conversation_id}/context/{key}"),
    ("GET", "/v1/working/{conversation_id}"),
    ("DELETE", "/v1/working/{conversation_id}"),
    ("POST", "/v1/tools/invocations"),
    ("GET", "/v1/tools/stats"),
    ("POST", "/v1/strategies"),
    ("GET", "/v1/strategies"),
    ("POST", "/v1/strategies/{strategy_id}/reinforce"),
    ("POST", "/v1/goals"),
    ("GET", "/v1/goals"),
    ("GET", "/v1/goals/{goal_id}"),
    ("POST", "/v1/goals/{goal_id}/complete"),
    ("GET", "/v1/profile"),
    ("PATCH", "/v1/profile"),
    ("POST", "/v1/remember"),
    ("POST", "/v1/facts/{fact_id}/promote"),
    ("POST", "/v1/webhooks"),
    ("GET", "/v1/webhooks"),
    ("GET", "/v1/webhooks/{webhook_id}"),
    ("PATCH", "/v1/webhooks/{webhook_id}"),
    ("DELETE", "/v1/webhooks/{webhook_id}"),
    ("POST", "/v1/webhooks/{webhook_id}/secret"),
    ("GET", "/v1/webhooks/{webhook_id}/deliveries"),
    ("POST", "/v1/webhooks/{webhook_id}/replay"),
    ("POST", "/v1/facts/{fact_id}/retire"),
    ("POST", "/v1/facts/{fact_id}/correct"),
    # Last: they erase the fuzzing tenant, its key included (what follows would be 401s);
    # shredding is refused there (the keys are not per tenant).
    ("POST", "/v1/admin/tenant/shred"),
    ("DELETE", "/v1/admin/tenant"),
]


@pytest.mark.slow
def test_no_generated_request_breaks_the_api(live: tuple[str, str]) -> None:
    base, key = live
    schema = schemathesis.openapi.from_url(f"{base}/openapi.json")
    operations = {
        (op.method.upper(), op.path): op for op in (r.ok() for r in schema.get_all_operations())
    }
    assert set(operations) == set(OPERATIONS)  # a new route must be fuzzed too
    headers = {"Authorization": f"Bearer {key}"}
    for name in OPERATIONS:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):

            @given(case=operations[name].as_strategy(generation_mode=mode))
            @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
            def exercise(case: Any) -> None:
                case.call_and_validate(base_url=base, headers=headers, checks=CHECKS)

            try:
                exercise()
            except Unsatisfiable:
                # Nothing to get wrong: the operation takes no input (e.g. /health).
                assert mode is GenerationMode.NEGATIVE
