"""The ``memvault`` command as a script uses it: help without the heavy imports, whole rows
when piped, ``--json`` wherever data is printed, the memory doctor's findings applied with
``fix``, and destructive commands that ask on a terminal and refuse without one."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from memvault.cli import app
from memvault.config import Settings
from memvault.service import Memory

runner = CliRunner()

# Commands that print no data, or data in a form of their own: a server, a worker, a dump
# file, JSON lines, Cypher/CSV, a new key for an environment variable.
NO_JSON = {
    "serve",
    "mcp",
    "worker",
    "backup",
    "restore",
    "export",
    "graph export",
    "keys generate",
}


@pytest.fixture
def env(cli_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    monkeypatch.setenv("MEMVAULT_EMBEDDING_PROVIDER", "hash")
    return {**cli_env, "MEMVAULT_EMBEDDING_PROVIDER": "hash"}


def run(*args: str, code: int = 0) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == code, result.output
    return result.stdout


def _commands(group: Any, prefix: str = "") -> dict[str, Any]:
    found: dict[str, Any] = {}
    for name, command in group.commands.items():
        path = f"{prefix}{name}"
        if hasattr(command, "commands"):
            found.update(_commands(command, f"{path} "))
            if command.invoke_without_command:  # `jobs schedule` lists on its own
                found[path] = command
        else:
            found[path] = command
    return found


@pytest.mark.slow
def test_help_shows_each_commands_first_sentence_whole_and_loads_no_store() -> None:
    probe = (
        "import sys\n"
        "from memvault.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "heavy = ('rich', 'pydantic', 'sqlalchemy', 'asyncio', 'httpx', 'memvault.service')\n"
        "print(sorted({m.split('.')[0] for m in sys.modules if m.startswith(heavy)}), "
        "file=sys.stderr)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, "--help"], capture_output=True, text=True, timeout=60
    )
    assert done.stderr.strip() == "[]", done.stderr
    listed = " ".join(done.stdout.split())
    whole = "erase-tenant Erase a whole tenant: memories, derived rows, history, audit, API keys"
    assert whole in listed
    cut = [line for line in done.stdout.splitlines()[1:] if line.rstrip().endswith("...")]
    assert cut == []  # nothing cut to fit the width
    for name in ("add", "search", "doctor", "fix", "cognitive", "facts", "api-keys"):
        assert f" {name} " in listed


def test_every_command_that_prints_data_takes_json() -> None:
    commands = _commands(typer.main.get_group(app))
    assert commands.keys() >= NO_JSON  # the list names real commands
    missing = [
        path
        for path, command in commands.items()
        if path not in NO_JSON and not any("--json" in p.opts for p in command.params)
    ]
    assert missing == []


def test_piped_tables_keep_every_cell_whole(env: dict[str, str]) -> None:
    long = "Carol keeps " + ", ".join(f"notebook number {i}" for i in range(12))
    with Memory(Settings()) as memory:
        added = memory.add(long, user_id="carol", infer=False)
    shown = run("list", "-u", "carol")
    (row,) = [line for line in shown.splitlines() if str(added.id) in line]

    assert long in row  # one line, the content and the id uncut
    history = run("history", str(added.id), "-u", "carol")
    assert long in history


def test_json_output_parses_for_counts_reports_and_lists(env: dict[str, str]) -> None:
    checks = json.loads(run("doctor", "--json"))
    assert {c["name"] for c in checks} >= {"database", "pgvector", "schema", "encryption key"}
    assert all(c["ok"] for c in checks)
    assert json.loads(run("cleanup", "--yes", "--json")) == {"deleted": 0}
    assert json.loads(run("jobs", "list", "--json")) == {"jobs": [], "counts": {}}
    assert json.loads(run("jobs", "retry", "--json")) == {"queued": 0}
    assert json.loads(run("jobs", "schedule", "runs", "--json")) == []
    added = json.loads(run("add", "Dora rows on Sundays", "-u", "dora", "--json"))
    assert added["content"] == "Dora rows on Sundays"
    assert json.loads(run("delete", added["id"], "-u", "dora", "--json")) == {"deleted": 1}
    created = json.loads(run("api-keys", "create", "--tenant", "acme", "--json"))
    assert created["key"].startswith("mv_")
    revoked = json.loads(run("api-keys", "revoke", created["prefix"], "--yes", "--json"))
    assert revoked["revoked_at"] is not None


def test_doctor_memory_json_and_fix_merge_near_duplicates(env: dict[str, str]) -> None:
    with Memory(Settings()) as memory:
        twins = [memory.add("Gus owns a red kayak", user_id="gus", infer=False) for _ in "ab"]
    with Memory(Settings(), tenant_id="globex") as theirs:
        theirs.add("Gus owns a red kayak", user_id="gus", infer=False)
    report = json.loads(run("doctor", "--memory", "-u", "gus", "--json", code=1))
    (duplicates,) = [f for f in report["findings"] if f["kind"] == "near_duplicates"]
    assert duplicates["clusters"] == [sorted(str(t.id) for t in twins)]
    table = run("doctor", "--memory", "-u", "gus", code=1)
    assert "memvault fix near_duplicates -u gus" in table

    refused = runner.invoke(app, ["fix", "near_duplicates", "-u", "gus"])
    assert refused.exit_code == 2 and "Pass --yes" in refused.output
    other = runner.invoke(app, ["fix", "near_duplicates", "-u", "gus", "--tenant", "acme"])
    assert other.exit_code == 0 and "nothing to fix" in other.output  # another tenant's view
    fixed = json.loads(run("fix", "near_duplicates", "-u", "gus", "--yes", "--json"))
    assert (fixed["action"], fixed["changed"]) == ("merge", 1)

    after = json.loads(run("doctor", "--memory", "-u", "gus", "--json", code=0))
    assert after["findings"] == [] and after["total"] == 1
    audit = json.loads(run("audit", "--json", "-u", "gus", "--operation", "merge"))
    assert len(audit) == 1
    # The merge undone from the command line: both twins back, the finding with them.
    merge_id = fixed["results"][0]["merge_id"]
    undone = json.loads(run("undo-merge", merge_id, "-u", "gus", "--json"))
    assert len(undone["restored"]) == 1
    with Memory(Settings()) as memory:
        assert sorted(str(m.id) for m in memory.list(user_id="gus").results) == sorted(
            str(t.id) for t in twins
        )
    again = runner.invoke(app, ["undo-merge", merge_id, "-u", "gus"])
    assert again.exit_code != 0 and "undone already" in again.output
    json.loads(run("fix", "near_duplicates", "-u", "gus", "--yes", "--json"))
    with Memory(Settings(), tenant_id="globex") as memory:  # the other tenant's twin is kept
        assert len(memory.list(user_id="gus").results) == 1
    unknown = runner.invoke(app, ["fix", "stale", "-u", "gus"])
    assert unknown.exit_code == 0 and "no 'stale' finding" in unknown.output


@pytest.mark.parametrize(
    "args",
    [
        ["delete", "-u", "dan", "--all"],
        ["erase", "-u", "dan"],
        ["erase-tenant", "acme"],
        ["cognitive", "delete-conversation", "c1", "-u", "dan"],
        ["cleanup"],
        ["api-keys", "revoke", "0123456789ab"],
    ],
    ids=["delete --all", "erase user", "erase-tenant", "delete-conversation", "cleanup", "revoke"],
)
def test_destructive_commands_refuse_without_a_terminal(args: list[str]) -> None:
    # No store is configured: a refusal comes before anything is opened.
    result = runner.invoke(app, args, input="y\n")
    assert result.exit_code == 2, result.output
    assert "no terminal to ask on" in result.output and "Pass --yes" in result.output


def test_restore_replace_asks_first(tmp_path: Path) -> None:
    dump = tmp_path / "store.dump"
    dump.write_bytes(b"not read: refused before")
    result = runner.invoke(app, ["restore", str(dump), "--replace"])
    assert result.exit_code == 2 and "Pass --yes" in result.output


def _on_a_terminal(args: list[str], answer: str, env: dict[str, str]) -> tuple[int, str]:
    """Run the command with a terminal as its stdin, answering its question."""
    primary, secondary = pty.openpty()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "memvault.cli", *args],
            stdin=secondary,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env={**os.environ, **env},
            text=True,
        )
        os.write(primary, answer.encode())
        output, _ = proc.communicate(timeout=120)
    finally:
        os.close(primary)
        os.close(secondary)
    return proc.returncode, output


def test_on_a_terminal_the_question_is_asked_and_answered(env: dict[str, str]) -> None:
    with Memory(Settings()) as memory:
        for text in ("Dan owns a red bicycle", "Dan's sister lives in Oslo"):
            memory.add(text, user_id="dan", infer=False)
    code, output = _on_a_terminal(["delete", "-u", "dan", "--all"], "n\n", env)
    assert code == 1 and "Delete every memory of user 'dan'?" in output, output
    assert len(json.loads(run("list", "-u", "dan", "--json"))) == 2
    code, output = _on_a_terminal(["delete", "-u", "dan", "--all"], "y\n", env)
    assert code == 0 and "deleted 2" in output, output
