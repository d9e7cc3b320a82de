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
from tests.routes import served_operations
from tests.serving import serving

# Per operation and mode. With every operation fuzzed (56, each also with its documented
# example) x 2 modes, 40 took 103 s of the suite, and 15 took 80 s (each request is a whole trip
# through the app and the database). 8 still generates every operation in both modes; an
# optional field is left out of all 8 draws about once in 256, and each run draws afresh.
# (Requests open a connection each: over one kept-alive session they took three times as long.)
EXAMPLES = 8
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


# Every route, from the operation table (those that erase the fuzzing tenant, its key included,
# last: what followed them would be 401s).
OPERATIONS = served_operations()


@pytest.mark.slow
def test_no_generated_request_breaks_the_api(live: tuple[str, str]) -> None:
    base, key = live
    schema = schemathesis.openapi.from_url(f"{base}/openapi.json")
    operations = {
        (op.method.upper(), op.path): op for op in (r.ok() for r in schema.get_all_operations())
    }
    assert set(operations) == set(OPERATIONS)  # no route served that the table does not declare
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
