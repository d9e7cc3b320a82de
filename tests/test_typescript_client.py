"""The TypeScript client (``clients/typescript``): built strict from its lockfile, then its own
suite (Node's test runner) run against a live ``memvault serve`` with keys required, two
tenants and a read-only key. The examples of ``docs/typescript.md`` run against it too.

Where Node is missing the suite is skipped with its reason on a developer's machine and fails
in CI (``CI`` set), which must run it."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memvault.cli import app
from tests.conftest import KEY
from tests.processes import Server

PACKAGE = Path(__file__).resolve().parents[1] / "clients" / "typescript"
EXAMPLES = ("agent-loop", "tool-calling")


def _node() -> tuple[str, str]:
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        reason = "Node.js and npm are needed for the TypeScript client's suite (Node >= 18)"
        if os.environ.get("CI"):
            pytest.fail(f"{reason}; CI must run it")
        pytest.skip(reason)
    return node, npm


def _run(args: list[str], env: dict[str, str] | None = None, timeout: float = 300) -> str:
    done = subprocess.run(
        args, cwd=PACKAGE, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"{' '.join(args)} failed:\n{output[-6000:]}"
    return output


def _installed(npm: str) -> None:
    """``npm ci`` once per lockfile: node_modules is kept while the lockfile is unchanged."""
    marker = PACKAGE / "node_modules" / ".package-lock.json"
    lock = PACKAGE / "package-lock.json"
    if not marker.exists() or marker.stat().st_mtime < lock.stat().st_mtime:
        _run([npm, "ci", "--no-audit", "--no-fund"])


def _built() -> str:
    node, npm = _node()
    _installed(npm)
    tsc = str(PACKAGE / "node_modules" / ".bin" / "tsc")
    _run([tsc, "-p", "tsconfig.json"])
    _run([tsc, "-p", "tsconfig.test.json"])
    return node


@pytest.fixture
def live(cli_env: dict[str, str], tmp_path: Path) -> Iterator[dict[str, str]]:
    """A ``memvault serve`` process requiring keys, and the keys the suite uses."""
    runner = CliRunner()

    def key(tenant: str, scopes: str) -> str:
        made = runner.invoke(app, ["api-keys", "create", "--tenant", tenant, "--scopes", scopes])
        assert made.exit_code == 0, made.output
        return made.stdout.strip()

    keys = {
        "MEMVAULT_ADMIN_KEY": key("acme", "read,write,admin"),
        "MEMVAULT_READ_KEY": key("acme", "read"),
        "MEMVAULT_OTHER_KEY": key("globex", "read,write"),
    }
    server = Server(
        tmp_path / "server",
        tmp_path / "server.log",
        database_url=cli_env["MEMVAULT_DATABASE_URL"],
        encryption_key=KEY,
        auth="required",
        # A served store has no worker of its own; `wait=true` and /ready need one.
        run_worker="true",
    )
    try:
        server.wait_ready()
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMVAULT_")}
        yield {**env, **keys, "MEMVAULT_URL": server.base}
    finally:
        server.stop()


def test_the_client_and_its_examples_against_a_live_server(live: dict[str, str]) -> None:
    """One test, so no two suite processes build into the same folder at once."""
    node = _built()
    output = _run([node, "--test", "--test-concurrency=1", "build/test/"], env=live)
    assert "# fail 0" in output, output[-6000:]

    env = {**live, "MEMVAULT_API_KEY": live["MEMVAULT_ADMIN_KEY"]}
    outputs = {name: _run([node, f"build/examples/{name}.js"], env=env) for name in EXAMPLES}
    assert "Lisbon" in outputs["agent-loop"], outputs["agent-loop"]
    assert "aisle" in outputs["tool-calling"], outputs["tool-calling"]
