"""Cognitive memory through the other faces: the sync library, the CLI, the MCP tools."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from mcp.server.mcpserver.exceptions import ToolError
from typer.testing import CliRunner

from memvault import AsyncMemory, Memory, Settings
from memvault import mcp as mcp_face
from memvault.cli import app
from tests.conftest import KEY

runner = CliRunner()


def test_the_sync_face_has_every_cognitive_method(settings: Settings) -> None:
    from memvault._compose import resources
    from memvault._sync import coroutine_methods

    held = resources(AsyncMemory)
    for resource in ("conversations", "working", "strategies", "goals", "profile", "recall"):
        names = [name for name, _ in coroutine_methods(held[resource])]
        assert names and all(hasattr(Memory, name) for name in names), resource
    with Memory(settings) as memory:
        goal = memory.add_goal("water the plants", user_id="ann", priority=3)
        assert [g.id for g in memory.list_goals(user_id="ann")] == [goal.id]
        # The same resource, reached from the sync door by its name.
        done = memory.goals.complete_goal(goal.id, user_id="ann", result="watered")
        assert [g.id for g in memory.goals.list_goals(user_id="ann", status="completed")] == [
            done.id
        ]


def _run(*args: str) -> str:
    result = runner.invoke(app, ["cognitive", *args])
    assert result.exit_code == 0, result.output
    return result.stdout


def test_cli_goals_profile_and_remember(
    database_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for name, value in {
        "MEMVAULT_DATABASE_URL": database_url,
        "MEMVAULT_ENCRYPTION_KEY": KEY,
        "MEMVAULT_DATA_DIR": str(tmp_path / "data"),
    }.items():
        monkeypatch.setenv(name, value)
    goal = json.loads(_run("add-goal", "finish the report", "-u", "ann", "--priority", "9"))
    assert goal["status"] == "active"
    listed = json.loads(_run("goals", "-u", "ann", "--status", "active"))
    assert [g["id"] for g in listed] == [goal["id"]]
    _run("profile", "-u", "ann", "--style", "short answers")
    prompt = _run("remember", "what am I doing?", "-u", "ann")
    assert "finish the report" in prompt and "style: short answers" in prompt
    done = json.loads(_run("complete-goal", goal["id"], "-u", "ann", "--result", "sent"))
    assert done["status"] == "completed"
    assert json.loads(_run("conversations", "-u", "ann")) == []
    missing = runner.invoke(app, ["cognitive", "complete-goal", goal["id"], "-u", "bob"])
    assert missing.exit_code == 1 and "No such goal" in missing.output
    with Memory(Settings()) as memory:
        memory.add_messages(
            [{"role": "user", "content": "hi"}], user_id="ann", conversation_id="c9"
        )
    shown = json.loads(_run("conversation", "c9", "-u", "ann"))
    assert [t["content"] for t in shown["turns"]] == ["hi"]
    asked = runner.invoke(app, ["cognitive", "delete-conversation", "c9", "-u", "ann"], input="y\n")
    assert asked.exit_code == 2 and "Pass --yes" in asked.output  # no terminal to ask on
    assert json.loads(_run("conversations", "-u", "ann"))
    receipt = json.loads(_run("delete-conversation", "c9", "-u", "ann", "--yes"))
    assert receipt["scope"] == "conversation" and receipt["memories"] == 1
    assert json.loads(_run("conversations", "-u", "ann")) == []


def _ctx(memory: AsyncMemory, user: str) -> Any:
    owner = mcp_face.Owner(memory, user)
    return SimpleNamespace(request_context=SimpleNamespace(lifespan_context=owner))


async def test_mcp_tools_act_for_the_configured_user(memory: AsyncMemory) -> None:
    ctx = _ctx(memory, "ann")
    goal = await mcp_face.add_goal(ctx, "renew the passport", priority=8)
    used = await mcp_face.record_tool_use(
        ctx, "mail", True, tool_input={"to": "ann.lee@example.com"}, latency_ms=5.0
    )
    assert used.redacted == {"email": 1}
    prompt = await mcp_face.remember(ctx, "what is ann working on?")
    assert "renew the passport" in prompt
    done = await mcp_face.complete_goal(ctx, goal.id, result="renewed")
    assert (done.status, done.result) == ("completed", "renewed")
    with pytest.raises(ToolError, match="No such goal"):
        await mcp_face.complete_goal(_ctx(memory, "bob"), goal.id)
    assert (await memory.tool_stats(user_id="ann"))[0].uses == 1
    assert await memory.list_goals(user_id="bob") == []
