"""``memvault --server URL …``: the memory commands against a running server over HTTP, acting
as the API key's tenant, without opening the store; whole-store commands refuse a server."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from memvault.api import create_app
from memvault.cli import app, target
from memvault.config import Settings
from tests.serving import serving

runner = CliRunner()

# Where the commands below would find a store if they looked for one: nowhere. A command that
# opened the store instead of going to the server would fail on it.
NO_STORE = {"MEMVAULT_DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none"}


def cli(*args: str, code: int = 0, env: dict[str, str] | None = None) -> Result:
    result = runner.invoke(app, list(args), env={**NO_STORE, **(env or {})})
    assert result.exit_code == code, result.output
    return result


@pytest.fixture
def server(
    cli_env: dict[str, str], make_settings: Callable[..., Settings]
) -> Iterator[tuple[str, str, str]]:
    """A server that requires keys, and a key each for tenants acme and globex."""
    keys = []
    for tenant in ("acme", "globex"):
        made = runner.invoke(app, ["api-keys", "create", "--tenant", tenant])
        assert made.exit_code == 0, made.output
        keys.append(made.stdout.strip())
    settings = make_settings(auth="required", embedding_provider="hash")
    with serving(create_app(settings)) as url:
        yield url, keys[0], keys[1]


def test_memory_commands_go_to_the_server_as_the_keys_tenant_only(
    server: tuple[str, str, str],
) -> None:
    url, acme, globex = server
    as_acme = ["--server", url, "--api-key", acme]
    memory_id = cli(*as_acme, "add", "Carol is vegetarian", "-u", "carol", "--tag", "food").stdout
    memory_id = memory_id.strip()
    listed = json.loads(cli(*as_acme, "list", "-u", "carol", "--json").stdout)
    assert [m["content"] for m in listed] == ["Carol is vegetarian"]
    found = json.loads(
        cli(*as_acme, "search", "what does Carol eat", "-u", "carol", "--json").stdout
    )
    assert found["results"][0]["id"] == memory_id
    assert "Carol is vegetarian" in cli(*as_acme, "get", memory_id, "-u", "carol").stdout

    # The same user id under another tenant's key is somebody else: nothing to see or delete.
    as_globex = ["--server", url, "--api-key", globex]
    assert json.loads(cli(*as_globex, "list", "-u", "carol", "--json").stdout) == []
    refused = cli(*as_globex, "get", memory_id, "-u", "carol", code=1)
    assert "error:" in refused.output and "Traceback" not in refused.output
    cli(*as_globex, "delete", memory_id, "-u", "carol", code=1)

    # The environment names the server and key as well as the options do.
    env = {"MEMVAULT_SERVER_URL": url, "MEMVAULT_API_KEY": acme}
    assert json.loads(cli("delete", memory_id, "-u", "carol", "--json", env=env).stdout) == {
        "deleted": 1
    }
    assert json.loads(cli("list", "-u", "carol", "--json", env=env).stdout) == []

    for key in ([], ["--api-key", "mv_not_a_key"]):
        refused = cli("--server", url, *key, "list", "-u", "carol", code=1)
        assert refused.output.startswith("error:"), refused.output
        assert "Traceback" not in refused.output


def test_import_sends_memories_and_conversations_to_the_server(
    server: tuple[str, str, str], tmp_path: Path
) -> None:
    url, acme, _ = server
    source = tmp_path / "lines.jsonl"
    turns = [{"role": "user", "content": "Zoe adopted a cat named Pixel"}]
    lines = [
        {"content": "Zoe reads sci-fi", "user_id": "zoe", "infer": False},
        {"user_id": "zoe", "session_id": "s1", "messages": turns},
    ]
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))
    imported = cli("--server", url, "--api-key", acme, "import", str(source), "--json").stdout
    assert json.loads(imported) == {"lines": 2, "stored_new": 2}
    listed = cli("--server", url, "--api-key", acme, "list", "-u", "zoe", "--json").stdout
    contents = sorted(m["content"] for m in json.loads(listed))
    assert contents == ["Zoe adopted a cat named Pixel", "Zoe reads sci-fi"]


def test_an_unreachable_server_is_named_not_the_store() -> None:
    refused = cli("--server", "http://127.0.0.1:1", "list", "-u", "carol", code=1)
    assert "127.0.0.1:1" in refused.output and "PostgreSQL" not in refused.output
    assert target.server() is None  # the next command in this process is not sent there


@pytest.mark.parametrize(
    "args",
    [
        ["jobs", "list"],
        ["api-keys", "list"],
        ["cleanup", "--yes"],
        ["doctor"],
        ["graph", "export"],
        ["erase", "--tenant", "acme", "--user", "carol", "--yes"],
    ],
)
def test_whole_store_commands_refuse_a_server(args: list[str]) -> None:
    refused = cli("--server", "http://127.0.0.1:1", *args, code=1)
    assert "without --server" in refused.output or "tenant is the API key's" in refused.output
