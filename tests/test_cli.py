"""The ``memvault`` command, run as a user runs it."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import psycopg
import pytest
import uvicorn
from typer.testing import CliRunner

from memvault.cli import app, sends_at_once
from memvault.db.embedded import EmbeddedPostgres
from tests.processes import probe
from tests.waiting import wait_until

runner = CliRunner()


@pytest.fixture
def env(cli_env: dict[str, str]) -> dict[str, str]:
    return cli_env


def run(*args: str) -> str:
    """What the command printed on stdout (notes and progress go to stderr)."""
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


def test_add_get_list_history_delete(env: dict[str, str]) -> None:
    memory_id = run(
        "add",
        "Carol is allergic to peanuts",
        "-u",
        "carol",
        "--tag",
        "health",
        "--metadata",
        '{"severity": "high"}',
    ).strip()
    got = json.loads(run("get", memory_id, "-u", "carol", "--json"))
    assert got[0]["content"] == "Carol is allergic to peanuts"
    assert got[0]["metadata"] == {"severity": "high"}
    listed = json.loads(run("list", "-u", "carol", "--json"))
    assert [m["id"] for m in listed] == [memory_id]
    history = json.loads(run("history", memory_id, "-u", "carol", "--json"))
    assert [h["action"] for h in history] == ["ADD"]
    assert history[0]["actor"] == "cli"
    assert "deleted 1" in run("delete", memory_id, "-u", "carol")
    result = runner.invoke(app, ["get", memory_id, "-u", "carol"])
    assert result.exit_code == 1
    assert "No such memory" in result.output


def test_errors_are_one_clear_line(env: dict[str, str]) -> None:
    result = runner.invoke(app, ["add", "   ", "-u", "carol"])
    assert result.exit_code == 1
    assert "not valid" in result.output and "Traceback" not in result.output


def test_cleanup_and_keys(env: dict[str, str]) -> None:
    assert "deleted 0 expired" in run("cleanup", "--yes")
    assert len(run("keys", "generate").strip()) == 44
    assert "active key" in run("keys", "rotate")


def test_doctor_reports_every_check(env: dict[str, str]) -> None:
    output = run("doctor")
    for check in ("database", "pgvector", "schema", "encryption key", "embedding model"):
        assert check in output
    assert "FAIL" not in output
    encoder = next(line for line in output.splitlines() if "encoder" in line)
    assert "onnxruntime" in encoder


def test_doctor_says_when_torch_runs_and_why(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMVAULT_EMBEDDING_BACKEND", "torch")
    encoder = next(line for line in run("doctor").splitlines() if "encoder" in line)
    assert "torch, chosen by" in encoder


def test_doctor_explains_a_missing_key(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MEMVAULT_ENCRYPTION_KEY")
    result = runner.invoke(app, ["doctor"])
    assert result.exit_code == 1
    assert "memvault keys generate" in result.output.replace("\n", " ")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], dict[str, str], int]]:
    port = _free_port()
    env = {**os.environ, "MEMVAULT_DATA_DIR": str(tmp_path / "data"), "MEMVAULT_PORT": str(port)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "memvault.cli", "serve"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    wait_until(
        lambda: probe(f"http://127.0.0.1:{port}/health").status_code == 200,
        60,
        "the server never answered /health",
        ignore=(httpx.TransportError,),
    )
    yield proc, env, port
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    if proc.stdout is not None:
        proc.stdout.close()


@pytest.mark.slow
def test_serve_embedded_answers_and_refuses_a_second_server(
    served: tuple[subprocess.Popen[str], dict[str, str], int], tmp_path: Path
) -> None:
    proc, env, port = served
    base = f"http://127.0.0.1:{port}"
    assert httpx.get(f"{base}/health").json() == {"status": "ok"}
    body = {"content": "served", "user_id": "u"}
    # Authentication is on unless switched off.
    assert httpx.post(f"{base}/v1/memories", json=body).status_code == 401
    made = subprocess.run(
        [sys.executable, "-m", "memvault.cli", "api-keys", "create", "--tenant", "acme"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert made.returncode == 0, made.stderr
    key = made.stdout.strip()
    assert key.startswith("mv_") and "cannot be shown again" in " ".join(made.stderr.split())
    # The first add loads the embedding model in the server: allow for a busy machine.
    created = httpx.post(
        f"{base}/v1/memories",
        json=body,
        headers={"Authorization": f"Bearer {key}"},
        timeout=120,
    )
    assert created.status_code == 201

    second = subprocess.run(
        [sys.executable, "-m", "memvault.cli", "serve"],
        env={**env, "MEMVAULT_PORT": str(_free_port())},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert second.returncode == 1
    assert "already using the data directory" in second.stderr.replace("\n", " ")

    proc.send_signal(signal.SIGTERM)
    output, _ = proc.communicate(timeout=30)
    assert proc.returncode in (0, -signal.SIGTERM)  # uvicorn re-raises the signal it handled
    assert str(tmp_path / "data") in output.replace("\n", "")
    assert not (tmp_path / "data" / "pg" / "postmaster.pid").exists()


def test_search_jobs_and_reembed(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMVAULT_EMBEDDING_PROVIDER", "hash")
    run("add", "Ivan collects vinyl records", "-u", "ivan", "--wait")
    found = json.loads(run("search", "vinyl records", "-u", "ivan", "--json"))
    assert [r["content"] for r in found["results"]] == ["Ivan collects vinyl records"]
    assert "no jobs" in run("jobs", "list")  # short texts are embedded inline
    assert "queued 0 job(s)" in run("jobs", "retry")

    monkeypatch.setenv("MEMVAULT_EMBEDDING_DIMENSIONS", "64")  # "change the model"
    assert "re-embedded 1 memories" in run("reembed")
    found = json.loads(run("search", "vinyl", "-u", "ivan", "--json"))
    assert found["model"] == "hash/64" and len(found["results"]) == 1


def test_import_jsonl_with_progress(env: dict[str, str], tmp_path: Path) -> None:
    source = tmp_path / "memories.jsonl"
    lines = [
        {"content": f"Uma read book number {i}", "user_id": "uma", "infer": False} for i in range(7)
    ]
    lines.append({"content": "Uma read book number 0", "user_id": "uma"})
    source.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    output = run("import", str(source), "--batch", "3")
    assert "imported 8 lines" in output and "duplicate_exact" in output
    listed = json.loads(run("list", "-u", "uma", "--json"))
    assert len(listed) == 7

    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"content": "ok", "user_id": "v"}\nnot json\n')
    result = runner.invoke(app, ["import", str(broken)])
    assert result.exit_code == 2 and "broken.jsonl:2" in result.output.replace("\n", "")


def test_import_reads_conversations_too(env: dict[str, str], tmp_path: Path) -> None:
    source = tmp_path / "chats.jsonl"
    source.write_text(
        json.dumps(
            {
                "user_id": "zoe",
                "session_id": "s1",
                "messages": [
                    {"role": "user", "content": "Zoe adopted a cat named Pixel"},
                    {"role": "assistant", "content": "Pixel is a great name"},
                ],
            }
        )
        + "\n"
    )
    assert "imported 1 lines: 2 stored_new" in run("import", str(source))
    assert len(json.loads(run("list", "-u", "zoe", "--json"))) == 2
    source.write_text(json.dumps({"user_id": "zoe", "messages": [], "bogus": 1}) + "\n")
    result = runner.invoke(app, ["import", str(source)])
    assert result.exit_code == 1 and "Traceback" not in result.output


@pytest.mark.slow
def test_serve_refuses_a_public_address_with_authentication_off(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "memvault.cli", "serve", "--auth", "off", "--host", "0.0.0.0"],
        env={**os.environ, "MEMVAULT_DATA_DIR": str(tmp_path / "data")},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    message = " ".join(result.stderr.split())
    assert "refusing to serve on 0.0.0.0 with authentication off" in message
    assert "memvault api-keys create" in message
    assert not (tmp_path / "data" / "pg").exists()  # refused before starting anything


def test_api_keys_create_list_revoke(env: dict[str, str]) -> None:
    created = runner.invoke(app, ["api-keys", "create", "--tenant", "acme", "--scopes", "read"])
    assert created.exit_code == 0, created.output
    key = created.stdout.strip().splitlines()[0]
    prefix = key.split("_")[1]
    listed = json.loads(run("api-keys", "list", "--json"))
    assert [(k["prefix"], k["tenant_id"], k["scopes"]) for k in listed] == [
        (prefix, "acme", ["read"])
    ]
    # The secret is never shown again (split once: a urlsafe secret may itself hold "_").
    assert key.split("_", 2)[2] not in json.dumps(listed)
    assert f"revoked {prefix}" in run("api-keys", "revoke", prefix, "--yes")
    assert json.loads(run("api-keys", "list", "--json"))[0]["revoked_at"] is not None
    bad = runner.invoke(app, ["api-keys", "create", "--tenant", "acme", "--scopes", "root"])
    assert bad.exit_code == 1 and "Scopes must be" in bad.output
    missing = runner.invoke(app, ["api-keys", "revoke", "nope", "--yes"])
    assert missing.exit_code == 1


def test_search_reads_time_against_a_reference_and_shows_context(
    env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMVAULT_EMBEDDING_PROVIDER", "hash")
    source = tmp_path / "meals.jsonl"
    lines = [
        {"content": "Dinner was ramen", "user_id": "vi", "occurred_at": "2023-06-07T20:00:00Z"},
        {"content": "Dinner was tacos", "user_id": "vi", "occurred_at": "2023-04-18T20:00:00Z"},
    ]
    source.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    run("import", str(source))
    found = json.loads(
        run(
            "search", "dinner last week", "-u", "vi", "--at", "2023-06-14T12:00:00",
            "--time-mode", "filter", "--json",
        )
    )  # fmt: skip
    assert [r["content"] for r in found["results"]] == ["Dinner was ramen"]
    assert found["diagnostics"]["time"]["expression"] == "last week"


def _wait_ready(base: str, proc: subprocess.Popen[str], timeout_s: float = 60) -> httpx.Response:
    def ready() -> httpx.Response | None:
        if proc.poll() is not None:
            output = proc.stdout.read() if proc.stdout else ""
            raise AssertionError(f"the server exited ({proc.returncode}):\n{output[-3000:]}")
        response = probe(f"{base}/ready", timeout=5)
        return response if response.status_code == 200 else None

    return wait_until(
        ready, timeout_s, "the server never became ready", ignore=(httpx.TransportError,)
    )


@pytest.mark.slow
def test_serve_with_two_workers_shares_one_database_and_one_worker(tmp_path: Path) -> None:
    port, data = _free_port(), tmp_path / "data"
    env = {
        **os.environ,
        "MEMVAULT_DATA_DIR": str(data),
        "MEMVAULT_EMBEDDING_PROVIDER": "hash",
        "MEMVAULT_LOG_LEVEL": "WARNING",
    }
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "memvault.cli",
            "serve",
            "--workers=2",
            "--auth=off",
            f"--port={port}",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        _wait_ready(base, proc)
        facts = ["Dana keeps bees", "Dana lives in Porto", "Dana plays the cello", "Eva is 9"]
        for fact in facts:  # each request on a new connection: it lands on either process
            body = {"content": fact, "user_id": "dana"}
            assert httpx.post(f"{base}/v1/memories", json=body, timeout=30).status_code == 201
        listed = httpx.get(f"{base}/v1/memories", params={"user_id": "dana"}, timeout=30).json()
        assert sorted(m["content"] for m in listed["results"]) == sorted(facts)
        found = httpx.post(
            f"{base}/v1/memories/search",
            json={"query": "who keeps bees", "user_id": "dana"},
            timeout=30,
        ).json()
        assert "Dana keeps bees" in [hit["content"] for hit in found["results"]]
        pg = EmbeddedPostgres(data / "pg")
        with psycopg.connect(pg.start()) as conn:
            pids = conn.execute(
                "SELECT DISTINCT split_part(worker_id, ':', 2) FROM worker_heartbeats"
            ).fetchall()
        pg.stop()
        assert len(pids) == 1  # one embedding worker for the data directory, not one per process
    finally:
        proc.send_signal(signal.SIGTERM)
        output, _ = proc.communicate(timeout=30)
    assert proc.returncode in (0, -signal.SIGTERM), output
    assert "Traceback" not in output
    assert not (data / "pg" / "postmaster.pid").exists()  # the database stopped with the server


async def test_connections_to_the_workers_shared_socket_send_small_writes_at_once() -> None:
    """`serve --workers N` binds one socket for its processes the way uvicorn does; each
    connection it accepts must have TCP_NODELAY, or every request on a kept-alive connection
    after the first waits ~40 ms for the client's delayed ACK (reported to uvicorn upstream:
    "--workers N loses TCP_NODELAY")."""
    listener = sends_at_once(uvicorn.Config("memvault.api.app:x", port=0).bind_socket())
    loop = asyncio.get_running_loop()
    nodelay: asyncio.Future[int] = loop.create_future()

    class Accepted(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            sock = transport.get_extra_info("socket")
            nodelay.set_result(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            transport.close()

    server = await loop.create_server(Accepted, sock=listener)
    try:
        _, writer = await asyncio.open_connection(*listener.getsockname()[:2])
        assert await nodelay != 0
        writer.close()
        await writer.wait_closed()
    finally:
        server.close()
        await server.wait_closed()
