"""Embedded mode: the private PostgreSQL, the key file, restarts and the data-dir lock."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import psutil
import psycopg
import pytest

from memvault import AsyncMemory, ConfigurationError, DataDirInUse, KeyMismatch, Memory, Settings
from memvault.admin import Admin
from memvault.db.embedded import ServeLock
from tests.conftest import backend_of
from tests.waiting import wait_for


def _postmaster_pid(data_dir: Path) -> int | None:
    pid_file = data_dir / "pg" / "postmaster.pid"
    return int(pid_file.read_text().split()[0]) if pid_file.exists() else None


@pytest.mark.slow
def test_embedded_store_survives_restarts_and_stops_its_server(tmp_path: Path) -> None:
    # Hash vectors: what is under test is the database, the key file and the restarts, which
    # an embedding model (seconds to load in each opening) has no part in.
    settings = Settings(data_dir=tmp_path / "data", embedding_provider="hash")
    with Memory(settings) as memory:
        added = memory.add("remember me across restarts", user_id="u")
        pid = _postmaster_pid(settings.data_dir)
        assert pid is not None and psutil.pid_exists(pid)
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE

    key_file = settings.key_file
    assert stat.S_IMODE(os.stat(key_file).st_mode) == 0o600

    with Memory(settings) as memory:
        assert memory.get(added.id, user_id="u").content == "remember me across restarts"

    key_file.rename(tmp_path / "keyring.bak")
    with pytest.raises(ConfigurationError, match=r"key file .* is missing"):
        Memory(settings)
    (tmp_path / "keyring.bak").rename(key_file)

    with pytest.raises(KeyMismatch):
        Memory(
            Settings(
                data_dir=settings.data_dir,
                encryption_key="QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUE=",
            )
        )


@pytest.mark.slow
def test_rotation_with_the_key_file_keeps_every_memory(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data", embedding_provider="hash")
    with Memory(settings) as memory:
        ids = [memory.add(f"memory {i}", user_id="u", infer=False).id for i in range(20)]
    before = settings.key_file.read_text()
    with Admin(settings) as admin:
        report = admin.rotate_encryption_key(reload_grace_s=0)
    assert report.memories_reencrypted == 20
    assert settings.key_file.read_text() != before
    with Memory(settings) as memory:
        assert [memory.get(i, user_id="u").content for i in ids] == [
            f"memory {i}" for i in range(20)
        ]


def test_a_second_server_on_one_data_dir_is_refused(tmp_path: Path) -> None:
    first, second = ServeLock(tmp_path), ServeLock(tmp_path)
    first.acquire()
    try:
        with pytest.raises(DataDirInUse, match=f"pid {os.getpid()}.*MEMVAULT_DATA_DIR"):
            second.acquire()
    finally:
        first.release()
    second.acquire()
    second.release()


_HOLDER = """
import asyncio, sys
from memvault import AsyncMemory, Settings

async def main() -> None:
    memory = await AsyncMemory.open(Settings(embedding_provider="hash", run_worker=True))
    print("open", flush=True)
    await asyncio.to_thread(sys.stdin.read)
    await memory.close()

asyncio.run(main())
"""


async def _beating(url: str) -> list[str]:
    async with await psycopg.AsyncConnection.connect(url) as conn:
        rows = await (await conn.execute("SELECT worker_id FROM worker_heartbeats")).fetchall()
    return sorted(r[0].split(":")[1] for r in rows)  # host:pid:serial -> pid


async def _until(url: str, done: Callable[[list[str]], bool]) -> list[str]:
    async def beating() -> list[str] | None:
        pids = await _beating(url)
        return pids if done(pids) else None

    # The successor tries every second (WORKER_CLAIM_INTERVAL_S); the rest is a busy machine.
    return await wait_for(beating, 15, "worker heartbeats never got there")


@pytest.mark.slow
async def test_one_embedding_worker_per_data_dir_and_a_successor_takes_over(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER],
        env={**os.environ, "MEMVAULT_DATA_DIR": str(data)},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdin is not None
    try:
        assert holder.stdout.readline().strip() == "open"
        await _take_over(data, holder)
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
        holder.stdout.close()


async def _take_over(data: Path, holder: subprocess.Popen[str]) -> None:
    assert holder.stdin is not None
    # Like a second process of `serve --workers 2`: same data directory, asks for a worker too.
    memory = await AsyncMemory.open(
        Settings(data_dir=data, embedding_provider="hash", run_worker=True)
    )
    try:
        url = backend_of(memory).url
        assert await _until(url, lambda pids: len(pids) == 1) == [str(holder.pid)]
        await memory.add("stored while the other process runs the worker", user_id="u")
        assert await _beating(url) == [str(holder.pid)]  # none started here
        holder.stdin.close()  # the other process shuts down; this one takes the worker over
        assert holder.wait(timeout=30) == 0
        assert await _until(url, lambda pids: pids == [str(os.getpid())])
    finally:
        await memory.close()
