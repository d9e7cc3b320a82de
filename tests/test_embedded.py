"""Embedded mode: the private PostgreSQL, the key file, restarts and the data-dir lock."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import psutil
import pytest

from memvault import ConfigurationError, DataDirInUse, KeyMismatch, Memory, Settings
from memvault.admin import Admin
from memvault.db.embedded import ServeLock


def _postmaster_pid(data_dir: Path) -> int | None:
    pid_file = data_dir / "pg" / "postmaster.pid"
    return int(pid_file.read_text().split()[0]) if pid_file.exists() else None


@pytest.mark.slow
def test_embedded_store_survives_restarts_and_stops_its_server(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data")
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
    settings = Settings(data_dir=tmp_path / "data")
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
