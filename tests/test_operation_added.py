"""Adding an operation is a table entry and a service method (and its tests): a throwaway one,
added before memvault's faces are imported, is served with its scope enforced, is a method of
``AsyncMemory``, ``Memory`` and both HTTP clients, and is among the routes the suites walk
(tests/routes.py), with nothing else edited. It runs in a fresh interpreter, since the faces
are derived from the table when they are imported."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import KEY

ROOT = Path(__file__).resolve().parent.parent

# The child: the entry and the method first, then the generated client surface and the faces
# as any process imports them.
CHILD = '''
from __future__ import annotations

import inspect, os
from pathlib import Path

from pydantic import BaseModel

import memvault.operations as operations
from memvault.cognitive.goals import Goals
from memvault.wire import OwnerParams


class GoalCount(BaseModel):
    count: int


async def count_goals(self, *, user_id: str) -> int:
    """How many goals the user has, whatever their status."""
    return len(await self.list_goals(user_id=user_id))


Goals.count_goals = count_goals  # the service method, on its resource
entry = operations.Operation(
    name="count_goals",
    method="GET",
    path="/v1/goals/count",
    scope="admin",
    summary="Count a user's goals",
    description="How many goals a user has.",
    example={"user_id": "ann"},
    tag="goals",
    response=GoalCount,
    resource="goals",
    service="count_goals",
    query=OwnerParams,
    returns="count",
)
# Table order is route order: the fixed segment before ``/v1/goals/{goal_id}``.
at = next(i for i, op in enumerate(operations.OPERATIONS) if op.path == "/v1/goals/{goal_id}")
operations.OPERATIONS = (*operations.OPERATIONS[:at], entry, *operations.OPERATIONS[at:])

import sys, types

from fastapi.testclient import TestClient

from memvault import AsyncMemory, Memory, Settings, auth
from memvault._stubs import client_surface

# What ``python -m memvault._stubs`` would write to src/memvault/_client_surface.py, the file
# the client reads its methods' signatures from, made here instead of written there.
surface = types.ModuleType("memvault._client_surface")
exec(compile(client_surface(AsyncMemory), "_client_surface.py", "exec"), surface.__dict__)
sys.modules["memvault._client_surface"] = surface

from memvault.api import create_app
from memvault.client import AsyncMemoryClient, MemoryClient
from tests.conftest import backend_of
from tests.routes import v1_routes

assert [r.path for r in v1_routes() if r.op is entry] == ["/v1/goals/count"]
assert inspect.signature(AsyncMemory.count_goals) == inspect.signature(count_goals)
for client in (AsyncMemoryClient, MemoryClient):
    assert "user_id" in inspect.signature(client.count_goals).parameters, client

settings = Settings(
    database_url=os.environ["THROWAWAY_DATABASE_URL"],
    encryption_key=os.environ["THROWAWAY_KEY"],
    data_dir=Path(os.environ["THROWAWAY_DATA_DIR"]),
    auth="required",
    rate_limit_per_s=0,
    embedding_provider="hash",
)
with Memory(settings) as memory:
    memory.add_goal("water the plants", user_id="ann")
    assert memory.count_goals(user_id="ann") == 1
    assert memory.goals.count_goals(user_id="ann") == 1
with TestClient(create_app(settings)) as api:
    engine = backend_of(api.app.state.memory).engine

    def key(scopes):
        made = api.portal.call(auth.create_key, engine, "default", scopes, None)
        return {"Authorization": f"Bearer {made.key}"}

    sent = {"params": {"user_id": "ann"}}
    assert api.get("/v1/goals/count", **sent).status_code == 401
    assert api.get("/v1/goals/count", headers=key("read,write"), **sent).status_code == 403
    answer = api.get("/v1/goals/count", headers=key("read,write,admin"), **sent)
    assert (answer.status_code, answer.json()) == (200, {"count": 1}), answer.text
    described = api.get("/openapi.json").json()["paths"]["/v1/goals/count"]["get"]
    assert described["summary"] == "Count a user's goals"
print("served")
'''


@pytest.mark.slow
def test_an_operation_is_a_table_entry_and_a_method(database_url: str, tmp_path: Path) -> None:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)]),
        "THROWAWAY_DATABASE_URL": database_url,
        "THROWAWAY_KEY": KEY,
        "THROWAWAY_DATA_DIR": str(tmp_path / "data"),
    }
    done = subprocess.run(
        [sys.executable, "-c", CHILD], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert done.stdout.strip().endswith("served")
