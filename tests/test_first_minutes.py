"""What a new user meets first: auth off and on keep their data in view, a readable terminal,
a CLI that does not load the model it does not need, clear errors, offline API docs and an
access log that keeps query values out."""

from __future__ import annotations

import json
import logging
import os
import pty
import re
import select
import shlex
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from memvault import Settings, auth
from memvault.api import create_app
from memvault.cli import app
from memvault.embedding import local
from memvault.logs import JsonFormatter, TextFormatter, wants_json
from tests.conftest import KEY, backend_of
from tests.processes import probe
from tests.waiting import wait_until

runner = CliRunner()


def new_key(client: TestClient, tenant: str, scopes: str = "read,write") -> str:
    engine = backend_of(client.app.state.memory).engine  # type: ignore[attr-defined]
    return client.portal.call(auth.create_key, engine, tenant, scopes, None).key  # type: ignore[union-attr]


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def contents(response: httpx.Response) -> list[str]:
    assert response.status_code == 200, response.text
    return [m["content"] for m in response.json()["results"]]


# --- 6. auth off and on ------------------------------------------------------------------------


def test_with_auth_off_a_sent_key_is_honoured_and_a_bad_one_refused(
    make_settings: Callable[..., Settings],
) -> None:
    settings = make_settings(auth="off", embedding_provider="hash")
    with TestClient(create_app(settings)) as api:
        acme = new_key(api, "acme")
        mine = {"content": "written with no key", "user_id": "u", "infer": False}
        theirs = {"content": "written with acme's key", "user_id": "u", "infer": False}
        assert api.post("/v1/memories", json=mine).status_code == 201
        assert api.post("/v1/memories", json=theirs, headers=bearer(acme)).status_code == 201
        listed = {"user_id": "u"}
        assert contents(api.get("/v1/memories", params=listed)) == ["written with no key"]
        by_key = api.get("/v1/memories", params=listed, headers=bearer(acme))
        assert contents(by_key) == ["written with acme's key"]
        # Nobody is silently served as 'default' with a key that does not verify.
        wrong = api.get("/v1/memories", params=listed, headers=bearer(f"mv_{'0' * 12}_{'A' * 43}"))
        assert wrong.status_code == 401 and wrong.json()["error"]["code"] == "unauthorized"
        junk = api.get("/v1/memories", params=listed, headers={"Authorization": "Bearer nope"})
        assert junk.status_code == 401
        # The key's scopes hold too.
        reader = new_key(api, "acme", "read")
        refused = api.post("/v1/memories", json=theirs, headers=bearer(reader))
        assert refused.status_code == 403


def test_a_key_for_tenant_default_keeps_what_was_stored_with_auth_off(
    make_settings: Callable[..., Settings],
) -> None:
    body = {"content": "stored while auth was off", "user_id": "u", "infer": False}
    with TestClient(create_app(make_settings(auth="off", embedding_provider="hash"))) as open_api:
        assert open_api.post("/v1/memories", json=body).status_code == 201
    required = make_settings(auth="required", embedding_provider="hash")
    with TestClient(create_app(required)) as api:
        default, other = new_key(api, "default"), new_key(api, "my-org")
        params = {"user_id": "u"}
        assert api.get("/v1/memories", params=params).status_code == 401
        seen = api.get("/v1/memories", params=params, headers=bearer(default))
        assert contents(seen) == ["stored while auth was off"]
        assert contents(api.get("/v1/memories", params=params, headers=bearer(other))) == []


# --- 7. the terminal: the banner's commands, logs, a busy port ----------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _server_env(database_url: str, data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMVAULT_")}
    return {
        **env,
        "MEMVAULT_DATABASE_URL": database_url,
        "MEMVAULT_ENCRYPTION_KEY": KEY,
        "MEMVAULT_DATA_DIR": str(data_dir),
        "MEMVAULT_EMBEDDING_PROVIDER": "hash",
        "MEMVAULT_PORT": str(_free_port()),
    }


@pytest.fixture
def server_env(database_url: str, tmp_path: Path) -> dict[str, str]:
    return _server_env(database_url, tmp_path / "data")


Served = tuple[str, Path, Path, dict[str, str]]


@pytest.fixture(scope="module")
def server(module_database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """`memvault serve --auth off` started as `make run` starts it: by the console script's
    relative path, from the directory above `.venv`, stdout and stderr into files. One for the
    module: its tests read their own requests' lines and leave the banner as it was printed."""
    home = tmp_path_factory.mktemp("served")
    env = _server_env(module_database_url, home / "data")
    script = Path(sys.executable).parent / "memvault"
    root = script.parent.parent.parent
    stdout, stderr = home / "stdout", home / "stderr"
    with stdout.open("w") as out, stderr.open("w") as err:
        proc = subprocess.Popen(
            [os.path.relpath(script, root), "serve", "--auth", "off"],
            cwd=root,
            env=env,
            stdout=out,
            stderr=err,
        )
    base = f"http://127.0.0.1:{env['MEMVAULT_PORT']}"
    try:
        _wait_until_up(proc, base, stderr)
        yield base, stdout, stderr, env
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _wait_until_up(proc: subprocess.Popen[bytes], base: str, stderr: Path | None) -> None:
    def answers() -> bool:
        assert proc.poll() is None, stderr.read_text() if stderr else proc.returncode
        return probe(f"{base}/health", timeout=1).status_code == 200

    wait_until(answers, 120, "the server never answered /health", ignore=(httpx.TransportError,))


def _read_until(fd: int, wanted: re.Pattern[str]) -> str:
    """What the process wrote to the terminal, up to a line matching ``wanted``."""
    seen = ""
    while not wanted.search(seen):
        ready, _, _ = select.select([fd], [], [], 60)
        assert ready, f"nothing more was written; so far: {seen!r}"
        seen += os.read(fd, 65536).decode(errors="replace")
    return seen


def test_the_banners_key_command_runs_as_printed_and_keeps_the_data_in_view(
    server: Served,
) -> None:
    base, stdout, _, server_env = server
    body = {"content": "Alice prefers aisle seats", "user_id": "alice", "infer": False}
    assert httpx.post(f"{base}/v1/memories", json=body).status_code == 201
    banner = stdout.read_text()
    assert "AUTHENTICATION IS OFF" in banner
    step = re.search(r"1\. (\S+ api-keys create --tenant default [^\n]*)", banner)
    assert step is not None, banner
    script = Path(sys.executable).parent / "memvault"
    made = subprocess.run(
        shlex.split(step.group(1)),
        cwd=script.parent.parent.parent,
        env=server_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert made.returncode == 0, made.stderr
    key = made.stdout.strip()
    seen = httpx.get(f"{base}/v1/memories", params={"user_id": "alice"}, headers=bearer(key))
    assert contents(seen) == ["Alice prefers aisle seats"]


def test_logs_off_a_terminal_are_json_one_access_line_per_request_without_query_values(
    server: Served,
) -> None:
    base, _, stderr, _ = server
    params = {"user_id": "alice-private", "metadata": '{"diagnosis": "flu"}'}
    response = httpx.get(f"{base}/v1/memories", params=params)
    assert response.status_code == 200
    rid = response.headers["x-request-id"]
    httpx.get(f"{base}/health")  # a later request, so the first one's line has been written
    text = stderr.read_text()
    assert "\x1b" not in text  # no terminal colour codes in a file
    lines = [json.loads(line) for line in text.splitlines() if line.strip()]
    mine = [entry for entry in lines if rid in json.dumps(entry)]
    assert len(mine) == 1, mine  # ours only: uvicorn's own access line is off
    assert mine[0]["route"] == "/v1/memories" and mine[0]["query"] == "metadata,user_id"
    assert "alice-private" not in text and "flu" not in text


def test_on_a_terminal_the_log_is_readable_text(server_env: dict[str, str]) -> None:
    script = Path(sys.executable).parent / "memvault"
    primary, secondary = pty.openpty()
    proc = subprocess.Popen(
        [str(script), "serve", "--auth", "off"],
        env=server_env,
        stdout=subprocess.DEVNULL,
        stderr=secondary,
    )
    os.close(secondary)
    base = f"http://127.0.0.1:{server_env['MEMVAULT_PORT']}"
    try:
        _wait_until_up(proc, base, None)
        assert httpx.get(f"{base}/v1/memories", params={"user_id": "u-42"}).status_code == 200
        shown = _read_until(primary, re.compile(r"GET /v1/memories 200"))
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        os.close(primary)
    assert '{"ts"' not in shown and "\x1b" not in shown
    line = next(x for x in shown.splitlines() if "GET /v1/memories 200" in x)
    assert re.match(
        r"\d\d:\d\d:\d\d INFO +GET /v1/memories 200 [\d.]+ ms  query=user_id request_id=\w+$", line
    )
    assert "u-42" not in shown


def test_a_busy_port_is_refused_before_a_data_directory_is_made(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        result = runner.invoke(
            app,
            ["serve", "--auth", "off", "--port", str(port)],
            env={"MEMVAULT_DATA_DIR": str(data)},
        )
    assert result.exit_code == 1
    assert f"cannot listen on 127.0.0.1:{port}" in " ".join(result.output.split())
    assert not data.exists()


@pytest.mark.parametrize(
    ("log_format", "legacy", "tty", "json_wanted"),
    [
        ("auto", None, True, False),  # a person at a terminal reads text
        ("auto", None, False, True),  # a file or a log shipper gets JSON
        ("json", None, True, True),
        ("text", None, False, False),
        ("auto", False, False, False),  # MEMVAULT_LOG_JSON=false still means text
        ("json", False, True, True),  # the new setting wins
    ],
)
def test_log_format_follows_the_terminal_unless_told(
    log_format: str, legacy: bool | None, tty: bool, json_wanted: bool
) -> None:
    assert wants_json(log_format, legacy, tty=tty) is json_wanted


def test_text_lines_are_readable_and_json_fields_carry_no_colour_codes() -> None:
    record = logging.LogRecord("uvicorn.error", logging.INFO, "", 0, "Started %s", ("x",), None)
    record.color_message = "Started \x1b[36m%s\x1b[0m"
    record.route = "\x1b[1m/v1\x1b[0m"
    entry = json.loads(JsonFormatter().format(record))
    assert "\x1b" not in json.dumps(entry) and "color_message" not in entry
    assert entry["route"] == "/v1"
    line = TextFormatter().format(record)
    assert re.fullmatch(r"\d\d:\d\d:\d\d INFO +Started x  route=/v1 ?.*", line), line


# --- 8. a fast CLI ---------------------------------------------------------------------------


@pytest.fixture
def env(database_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMVAULT_DATABASE_URL", database_url)
    monkeypatch.setenv("MEMVAULT_ENCRYPTION_KEY", KEY)


def run(*args: str, stdin: str | None = None) -> str:
    result = runner.invoke(app, list(args), input=stdin)
    assert result.exit_code == 0, result.output
    return result.stdout


def test_reading_and_admin_commands_never_load_the_embedding_model(
    env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(local, "_loaded", {})  # this process may have loaded it already
    added = runner.invoke(app, ["add", "Carol is vegetarian", "-u", "carol"])
    assert added.exit_code == 0 and local._loaded  # the check can fail: add does load it
    assert "first load takes a few seconds" in added.stderr
    memory_id = added.stdout.strip()
    monkeypatch.setattr(local, "_loaded", {})
    for args in (
        ["list", "-u", "carol"],
        ["get", memory_id, "-u", "carol"],
        ["history", memory_id, "-u", "carol"],
        ["jobs", "list"],
        ["keys", "generate"],
        ["api-keys", "list"],
        ["search", "anything", "-u", "carol", "--recipe", "keyword"],
        ["delete", memory_id, "-u", "carol"],
    ):
        result = runner.invoke(app, args)
        assert result.exit_code == 0, (args, result.output)
        assert "first load" not in result.output, args
    assert local._loaded == {}


def test_cli_errors_name_the_field_and_import_names_the_line(
    env: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMVAULT_EMBEDDING_PROVIDER", "hash")
    blank = runner.invoke(app, ["add", "   ", "-u", "carol"])
    assert blank.exit_code == 1 and "content:" in blank.stderr
    bad_id = runner.invoke(app, ["get", "not-a-uuid", "-u", "carol"])
    assert bad_id.exit_code == 1 and "memory_id" in bad_id.stderr
    source = tmp_path / "memories.jsonl"
    good = json.dumps({"content": "fine", "user_id": "v"})
    source.write_text(f"{good}\n\n{json.dumps({'content': 'no owner'})}\n")
    result = runner.invoke(app, ["import", str(source)])
    assert result.exit_code == 1
    # Whole on one line however long the path: a reader copies it, a script greps it.
    (line,) = [line for line in result.stderr.splitlines() if str(source) in line]
    assert f"{source}:3:" in line and "user_id" in line
    assert json.loads(run("list", "-u", "v", "--json")) == []  # checked before importing
    monkeypatch.setenv("MEMVAULT_MAX_CONTENT_CHARS", "10")
    source.write_text(f"{good}\n{json.dumps({'content': 'far too long here', 'user_id': 'v'})}\n")
    too_long = runner.invoke(app, ["import", str(source)])
    assert too_long.exit_code == 1
    assert f"{source}:2: Content is 17 characters" in " ".join(too_long.stderr.split())


def test_delete_all_asks_first_unless_yes(env: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMVAULT_EMBEDDING_PROVIDER", "hash")
    for text in ("Dan owns a red bicycle", "Dan's sister lives in Oslo"):
        run("add", text, "-u", "dan")
    # No terminal to ask on (a script, a pipe): refused, whatever stdin says.
    refused = runner.invoke(app, ["delete", "-u", "dan", "--all"], input="y\n")
    assert refused.exit_code == 2 and "Delete every memory of user 'dan'?" in refused.output
    assert "Pass --yes" in refused.output
    assert len(json.loads(run("list", "-u", "dan", "--json"))) == 2
    assert "deleted 2" in run("delete", "-u", "dan", "--all", "--yes")


# --- 9. offline /docs; 11. the access log keeps query values out -------------------------


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
def test_the_docs_pages_load_everything_from_this_server(client: TestClient, page: str) -> None:
    html = client.get(page)
    assert html.status_code == 200 and "text/html" in html.headers["content-type"]
    assert not re.search(r"https?://", html.text), "the page names another host"
    assets = re.findall(r"""(?:src|href|spec-url)=["']([^"']+)["']""", html.text)
    assets += re.findall(r"""url: ?["']([^"']+)["']""", html.text)
    assert any(a.endswith(".js") for a in assets) and client.app.openapi_url in " ".join(assets)  # type: ignore[attr-defined]
    for asset in assets:
        assert client.get(asset).status_code == 200, asset


def test_the_access_log_names_query_parameters_never_their_values(
    client: TestClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="memvault.access")
    secret = {"user_id": "patient-7", "metadata": '{"diagnosis": "melanoma"}', "limit": "5"}
    assert client.get("/v1/memories", params=secret).status_code == 200
    client.get("/v1/memories?we%20ird%3Dname=1&user_id=x")
    access = [r for r in caplog.records if r.name == "memvault.access"]
    first, second = (json.loads(JsonFormatter().format(r)) for r in access[-2:])
    assert first["route"] == "/v1/memories" and first["query"] == "limit,metadata,user_id"
    assert second["query"] == "?,user_id"  # a name is shown only when it looks like one
    logged = "\n".join(JsonFormatter().format(r) + TextFormatter().format(r) for r in access)
    for value in ("patient-7", "melanoma", "diagnosis", "we ird"):
        assert value not in logged
