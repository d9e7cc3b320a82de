"""Checked by mypy with the sources (``make check``, ``make test``): each call below misspells
a keyword or passes too many arguments, on every face (the two doors, the two clients, the
resource views, the operator's door), and mypy must refuse it. Strict mode warns of an ignore
that is not needed, so if a face stops refusing one, this file fails type checking."""

from __future__ import annotations

import memvault
import memvault.api
from memvault import AsyncMemory, AsyncMemoryClient, Memory, MemoryClient
from memvault.admin import Admin, AsyncAdmin


def sync_faces(memory: Memory, client: MemoryClient) -> None:
    memory.add("x", user_id="u", tgas=["t"])  # type: ignore[call-arg]
    client.add("x", user_id="u", tgas=["t"])  # type: ignore[call-arg]
    memory.add_goal("renew the visa", user_id="u", priorty=2)  # type: ignore[call-arg]
    client.add_goal("renew the visa", user_id="u", priorty=2)  # type: ignore[call-arg]
    memory.search("visa", user_id="u", limt=3)  # type: ignore[call-arg]
    client.search("visa", user_id="u", limt=3)  # type: ignore[call-arg]
    memory.remember("visa", user_id="u", budget=3)  # type: ignore[call-arg]
    client.remember("visa", user_id="u", budget=3)  # type: ignore[call-arg]
    memory.complete_goal("g", user_id="u", nonsense=True)  # type: ignore[call-arg]
    client.complete_goal("g", user_id="u", nonsense=True)  # type: ignore[call-arg]
    memory.complete_goal("g", "u", "done", user_id="u")  # type: ignore[misc]
    client.complete_goal("g", "u", "done", user_id="u")  # type: ignore[misc]
    memory.add("x", user_id="u", tags=["t"])  # spelt right: no error
    client.add("x", user_id="u", tags=["t"])


def sync_resource_views(memory: Memory) -> None:
    memory.goals.complete_goal("g", user_id="u", nonsense=True)  # type: ignore[call-arg]
    memory.goals.complete_goal("g", "u", "done", user_id="u")  # type: ignore[misc]
    memory.memories.add("x", user_id="u", tgas=["t"])  # type: ignore[call-arg]
    memory.strategies.record_tool_use("t", user_id="u", succes=True)  # type: ignore[call-arg]
    memory.goals.no_such_method()  # type: ignore[attr-defined]
    memory.goals.complete_goal("g", user_id="u", status="done")


async def async_faces(memory: AsyncMemory, client: AsyncMemoryClient) -> None:
    await memory.add("x", user_id="u", tgas=["t"])  # type: ignore[call-arg]
    await client.add("x", user_id="u", tgas=["t"])  # type: ignore[call-arg]
    await memory.add_messages([], user_id="u", conversaton_id="c")  # type: ignore[call-arg]
    await client.add_messages([], user_id="u", conversaton_id="c")  # type: ignore[call-arg]
    await memory.add_goal("renew the visa", user_id="u", priorty=2)  # type: ignore[call-arg]
    await client.add_goal("renew the visa", user_id="u", priorty=2)  # type: ignore[call-arg]
    await memory.complete_goal("g", user_id="u", nonsense=True)  # type: ignore[call-arg]
    await client.complete_goal("g", user_id="u", nonsense=True)  # type: ignore[call-arg]
    await memory.complete_goal("g", "u", "done", user_id="u")  # type: ignore[misc]
    await client.complete_goal("g", "u", "done", user_id="u")  # type: ignore[misc]
    await memory.add("x", user_id="u", tags=["t"])  # spelt right: no error
    await client.add("x", user_id="u", tags=["t"])


async def async_resource_views(memory: AsyncMemory) -> None:
    await memory.goals.complete_goal("g", user_id="u", nonsense=True)  # type: ignore[call-arg]
    await memory.goals.complete_goal("g", "u", "done", user_id="u")  # type: ignore[misc]
    await memory.memories.add("x", user_id="u", tgas=["t"])  # type: ignore[call-arg]
    await memory.recall.remember("x", user_id="u", budget=3)  # type: ignore[call-arg]
    await memory.goals.complete_goal("g", user_id="u", status="done")


async def operators_door(admin: Admin, async_admin: AsyncAdmin) -> None:
    admin.list_jobs(stauts="failed")  # type: ignore[call-arg]
    await async_admin.list_jobs(stauts="failed")  # type: ignore[call-arg]


def misspelt_names() -> None:
    memvault.MemoryClinet("http://127.0.0.1:8765")  # type: ignore[attr-defined]
    memvault.api.craete_app()  # type: ignore[attr-defined]
