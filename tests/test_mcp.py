"""``memvault mcp``, driven by the MCP SDK's own client, as an MCP client would run it."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.session import ClientSession, IncomingMessage
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult, TextContent

import memvault
from memvault.config import Settings
from memvault.service import AsyncMemory
from tests.conftest import KEY
from tests.waiting import wait_until

TOOLS = {
    "about_entity",
    "remember_fact",
    "add_memory",
    "search_memories",
    "get_memory",
    "list_memories",
    "update_memory",
    "delete_memory",
    "remember",
    "add_goal",
    "complete_goal",
    "record_tool_use",
}


def _env(database_url: str, tmp_path: Path, **extra: str) -> dict[str, str]:
    """What the server process needs; the SDK passes it only a few safe variables of ours."""
    return {
        "MEMVAULT_DATABASE_URL": database_url,
        "MEMVAULT_ENCRYPTION_KEY": KEY,
        "MEMVAULT_DATA_DIR": str(tmp_path / "data"),
        "HF_HUB_OFFLINE": "1",
        # The code under test, wherever this checkout is.
        "PYTHONPATH": str(Path(memvault.__file__).parents[1]),
        **extra,
    }


@asynccontextmanager
async def stdio_session(
    env: dict[str, str], *args: str, stderr: Path, transport_errors: list[Exception]
) -> AsyncIterator[ClientSession]:
    async def on_message(message: IncomingMessage) -> None:
        if isinstance(message, Exception):  # e.g. a stray non-JSON line on stdout
            transport_errors.append(message)

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "memvault.cli", "mcp", *args], env=env
    )
    with stderr.open("w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write, message_handler=on_message) as session,
        ):
            yield session


async def call(session: ClientSession, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, _text(result)
    assert result.structured_content is not None
    return result.structured_content


async def call_error(session: ClientSession, tool: str, **arguments: Any) -> str:
    result = await session.call_tool(tool, arguments)
    assert result.is_error
    text = _text(result)
    assert "Traceback" not in text
    return text


def _text(result: CallToolResult) -> str:
    return " ".join(c.text for c in result.content if isinstance(c, TextContent))


@pytest.mark.slow
async def test_stdio_tools_act_for_the_configured_user_only(
    make_settings: Callable[..., Settings], database_url: str, tmp_path: Path
) -> None:
    # Hash vectors here and in the server: what is under test is whom the tools act for
    # (alice has one memory in acme, so any embedding finds it), not what a model ranks first.
    memory = await AsyncMemory.open(make_settings(embedding_provider="hash"))
    try:
        await _tools_act_for_the_configured_user_only(memory, database_url, tmp_path)
    finally:
        await memory.close()


async def _tools_act_for_the_configured_user_only(
    memory: AsyncMemory, database_url: str, tmp_path: Path
) -> None:
    acme = memory.for_tenant("acme")
    bob = await acme.add("Bob is allergic to peanuts", user_id="bob")
    alice_elsewhere = await memory.add("Alice is allergic to peanuts", user_id="alice")
    env = _env(
        database_url,
        tmp_path,
        MEMVAULT_MCP_TENANT_ID="acme",
        MEMVAULT_MCP_USER_ID="x",
        MEMVAULT_EMBEDDING_PROVIDER="hash",
    )
    stderr, transport_errors = tmp_path / "stderr.log", []

    with anyio.fail_after(180):
        async with stdio_session(
            env, "--user", "alice", stderr=stderr, transport_errors=transport_errors
        ) as session:
            init = await session.initialize()
            assert init.server_info.name == "memvault"
            assert init.instructions and "search_memories" in init.instructions
            tools = {t.name: t for t in (await session.list_tools()).tools}
            assert set(tools) == TOOLS
            for tool in tools.values():
                assert tool.description and tool.input_schema["type"] == "object"
            assert tools["add_memory"].input_schema["required"] == ["content"]
            assert "user_id" not in json.dumps([t.input_schema for t in tools.values()])

            added = await call(
                session, "add_memory", content="Alice is allergic to shellfish", tags=["health"]
            )
            assert added["action"] == "stored_new" and added["tags"] == ["health"]
            # The tenant came from the environment, the user from --user.
            stored = await acme.get(added["id"], user_id="alice")
            assert stored.content == "Alice is allergic to shellfish"

            found = await call(session, "search_memories", query="what is Alice allergic to?")
            assert [hit["id"] for hit in found["results"]] == [added["id"]]
            assert found["results"][0]["score"] > 0

            got = await call(session, "get_memory", memory_id=added["id"])
            assert got["content"] == "Alice is allergic to shellfish"
            updated = await call(
                session,
                "update_memory",
                memory_id=added["id"],
                content="Alice is allergic to shellfish and kiwi",
            )
            assert updated["content"] == "Alice is allergic to shellfish and kiwi"
            listed = await call(session, "list_memories")
            assert [m["id"] for m in listed["results"]] == [added["id"]]
            assert listed["next_cursor"] is None

            fact = await call(
                session, "remember_fact", subject="@user", predicate="lives in", object="Oslo"
            )
            assert (fact["predicate"], fact["object"], fact["superseded"]) == (
                "lives_in",
                "Oslo",
                False,
            )
            await call(
                session, "remember_fact", subject="Oslo", predicate="located_in", object="Norway"
            )
            about = await call(session, "about_entity", name="oslo")
            assert about["entity"] == "Oslo"
            assert {f["claim"] for f in about["facts"]} == {
                "The user lives in Oslo",
                "Oslo located in Norway",
            }
            assert set(about["related"]) == {"@user", "Norway"}
            assert (await call(session, "about_entity", name="Bergen"))["entity"] is None
            assert "object" in await call_error(
                session, "remember_fact", subject="a", predicate="b"
            )
            # Bob's fact in the same tenant is not Alice's.
            await acme.add_fact("Bergen", "located_in", object="Norway", user_id="bob")
            assert (await call(session, "about_entity", name="Bergen"))["entity"] is None

            for other in (bob.id, alice_elsewhere.id):
                assert "No such memory" in await call_error(
                    session, "get_memory", memory_id=str(other)
                )
                assert "No such memory" in await call_error(
                    session, "delete_memory", memory_id=str(other)
                )
            assert "UUID" in await call_error(session, "get_memory", memory_id="not-an-id")
            assert "No such memory" in await call_error(
                session, "get_memory", memory_id=str(uuid.uuid4())
            )
            assert "content" in await call_error(session, "add_memory", content="   ")
            assert "content" in await call_error(session, "update_memory", memory_id=added["id"])

            assert await call(session, "delete_memory", memory_id=added["id"]) == {
                "deleted": added["id"]
            }
            assert "No such memory" in await call_error(
                session, "get_memory", memory_id=added["id"]
            )

    assert transport_errors == [], stderr.read_text()
    assert (await acme.get(bob.id, user_id="bob")).content == "Bob is allergic to peanuts"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def http_server(database_url: str, tmp_path: Path) -> Iterator[str]:
    port = _free_port()
    env = {**os.environ, **_env(database_url, tmp_path, MEMVAULT_EMBEDDING_PROVIDER="hash")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "memvault.cli", "mcp", "--http", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:

        def listening() -> bool:
            assert proc.poll() is None, "the MCP server exited"
            with socket.socket() as sock:
                return sock.connect_ex(("127.0.0.1", port)) == 0

        wait_until(listening, 60, "the MCP server never listened")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) in (0, -signal.SIGTERM)  # uvicorn re-raises what it handled


@pytest.mark.slow
async def test_streamable_http(http_server: str) -> None:
    with anyio.fail_after(60):
        async with (
            streamable_http_client(http_server) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            assert {t.name for t in (await session.list_tools()).tools} == TOOLS
            added = await call(session, "add_memory", content="Dana runs a bakery in Porto")
            found = await call(session, "search_memories", query="bakery Porto")
            assert [hit["id"] for hit in found["results"]] == [added["id"]]
