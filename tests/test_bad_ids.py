"""One answer for an id that is not one: every operation that takes a memory, goal, strategy or
fact id refuses a malformed one the same way (InvalidInput naming the field; 422 over HTTP),
before looking anything up — never "not found" for one kind and "invalid" for another."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient

from memvault import AsyncMemory
from memvault.errors import InvalidInput

BAD = "not-a-uuid"

CALLS: dict[str, Callable[[AsyncMemory], Awaitable[Any]]] = {
    "memory_id": lambda m: m.get(BAD, user_id="ana"),
    "goal_id": lambda m: m.get_goal(BAD, user_id="ana"),
    "strategy_id": lambda m: m.reinforce_strategy(BAD, user_id="ana", success=True),
    "fact_id": lambda m: m.promote(BAD, user_id="ana", reason="keep it"),
}


@pytest.mark.parametrize("field", sorted(CALLS))
async def test_a_malformed_id_is_invalid_input_naming_its_field(
    memory: AsyncMemory, field: str
) -> None:
    with pytest.raises(InvalidInput) as refused:
        await CALLS[field](memory)
    assert refused.value.details == {"field": field}
    assert "must be a UUID" in str(refused.value)


def test_over_http_a_malformed_fact_id_is_422_not_404(client: TestClient) -> None:
    answer = client.post(f"/v1/facts/{BAD}/promote", json={"user_id": "ana", "reason": "keep"})
    assert answer.status_code == 422, answer.text
