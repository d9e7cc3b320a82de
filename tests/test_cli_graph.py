"""``memvault facts``, ``memvault entities`` and ``memvault graph export``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memvault.cli import app
from tests.test_cli import env, run  # noqa: F401  (the fixture and the helper)

runner = CliRunner()


def test_facts_entities_and_export_from_the_command_line(
    env: dict[str, str],  # noqa: F811
    tmp_path: Path,
) -> None:
    (acme,) = json.loads(
        run("facts", "add", "Bob", "works_for", "-u", "bob", "--object", "Acme", "--json")
    )
    run("facts", "add", "Bob", "works_for", "-u", "bob", "--object", "Globex", "--json")
    run("facts", "add", "Acme", "based_in", "-u", "bob", "--value", "Ohio")
    now = json.loads(run("facts", "list", "-u", "bob", "--entity", "Bob", "--json"))
    assert [f["object"] for f in now] == ["Globex"]
    history = json.loads(
        run("facts", "list", "-u", "bob", "--entity", "bob", "--history", "--json")
    )
    assert sorted(f["object"] for f in history) == ["Acme", "Globex"]
    (bob,) = json.loads(run("entities", "list", "-u", "bob", "-q", "Bob", "--json"))
    shown = json.loads(run("entities", "show", bob["id"], "-u", "bob"))
    assert [f["object"] for f in shown["facts"]] == ["Globex"]
    graph = json.loads(run("entities", "graph", bob["id"], "-u", "bob", "--depth", "1"))
    assert {n["name"] for n in graph["nodes"]} == {"Bob", "Globex"}
    # As the store knew it when Acme was recorded: Globex had not been said yet.
    then = run("entities", "graph", bob["id"], "-u", "bob", "--known-at", acme["recorded_at"])
    assert {n["name"] for n in json.loads(then)["nodes"]} == {"Bob", "Acme"}
    assert "MATCH" in run("graph", "export", "-u", "bob")
    run("graph", "export", "--format", "csv", "--out", str(tmp_path / "out"))
    nodes = (tmp_path / "out" / "nodes.csv").read_text()
    assert "Globex" in nodes and "Ohio" in nodes
    assert "WORKS_FOR" in (tmp_path / "out" / "edges.csv").read_text()

    refused = runner.invoke(app, ["facts", "add", "Bob", "works_for", "-u", "bob"])
    assert refused.exit_code == 1 and "object" in refused.output
    missing = runner.invoke(app, ["entities", "show", bob["id"], "-u", "someone-else"])
    assert missing.exit_code == 1 and "No such entity" in missing.output


def test_a_contradiction_is_listed_and_resolved_from_the_command_line(
    env: dict[str, str],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MEMVAULT_GRAPH_CONTRADICTION_POLICY", "flag_review")
    run("facts", "add", "Ann", "works_for", "-u", "ann", "--object", "Initech")
    run("facts", "add", "Ann", "works_for", "-u", "ann", "--object", "Hooli")
    (review,) = json.loads(run("facts", "reviews", "-u", "ann"))
    wrong = runner.invoke(app, ["facts", "resolve", review["id"], "-u", "ann", "--keep", "x"])
    assert wrong.exit_code == 1 and "keep" in wrong.output
    other = runner.invoke(app, ["facts", "resolve", review["id"], "-u", "bob", "--keep", "fact"])
    assert other.exit_code == 1  # another user's review is not there
    done = json.loads(run("facts", "resolve", review["id"], "-u", "ann", "--keep", "fact"))
    assert done["closed"] == [review["id"]]
    now = json.loads(run("facts", "list", "-u", "ann", "--entity", "Ann", "--json"))
    assert [f["object"] for f in now] == ["Hooli"]
    assert json.loads(run("facts", "reviews", "-u", "ann")) == []
