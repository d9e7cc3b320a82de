"""Backup -> restore into a fresh data directory: the restored store answers at once (vectors,
keyword index, history), given the same key, which the backup does not hold."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memvault import ConfigurationError, InvalidInput, Memory, Settings
from memvault.admin import Admin
from memvault.cli import app
from memvault.crypto.envelope import generate_key
from memvault.errors import KeyMismatch
from memvault.lifecycle.backup import restore_sync


def _settings(data_dir: Path, **extra: object) -> Settings:
    return Settings(data_dir=data_dir, embedding_provider="hash", run_worker=False, **extra)  # type: ignore[arg-type]


@pytest.mark.slow
def test_a_backup_restored_into_a_fresh_data_dir_works_at_once(tmp_path: Path) -> None:
    first, fresh = _settings(tmp_path / "first"), _settings(tmp_path / "fresh")
    with Memory(first) as memory:
        added = memory.add("Jo parks the van behind the bakery", user_id="jo", infer=False)
        memory.update(added.id, user_id="jo", content="Jo parks the van behind the mill")
    dump = tmp_path / "store.dump"
    with Admin(first) as admin:
        assert admin.backup(dump) > 0
    assert b"behind the mill" not in dump.read_bytes()  # sealed in the dump as in the store

    # Without the key a restore stops before it touches the data directory, saying where the
    # key must come from, and makes no new key that could never read it.
    keyless = _settings(tmp_path / "keyless")
    with pytest.raises(ConfigurationError, match="Restore the key file"):
        restore_sync(keyless, dump)
    assert not keyless.data_dir.exists()
    result = CliRunner().invoke(
        app,
        ["restore", str(dump)],
        env={"MEMVAULT_DATA_DIR": str(keyless.data_dir), "MEMVAULT_EMBEDDING_PROVIDER": "hash"},
    )
    assert result.exit_code == 1 and not result.output.startswith("restored")
    assert "Restore the key file" in " ".join(result.output.split())
    assert not keyless.data_dir.exists()
    # Another key: refused the same way, naming the key the backup needs.
    other = _settings(tmp_path / "other", encryption_key=generate_key())
    with pytest.raises(KeyMismatch, match="Nothing was restored"):
        restore_sync(other, dump)
    assert not other.data_dir.exists()

    fresh.data_dir.mkdir(parents=True)
    shutil.copy(first.key_file, fresh.key_file)  # the key, restored from its own backup
    restore_sync(fresh, dump)
    with Memory(fresh) as memory:
        for recipe in ("vector", "keyword", "hybrid"):
            hits = memory.search("where is the van parked", user_id="jo", recipe=recipe)
            assert [h.id for h in hits.results] == [added.id], recipe
        history = memory.history(added.id, user_id="jo")
        assert [h.new_content for h in history] == [
            "Jo parks the van behind the bakery",
            "Jo parks the van behind the mill",
        ]
    with pytest.raises(InvalidInput, match="replace"):
        restore_sync(fresh, dump)  # a store with memories is replaced only when asked
    restore_sync(fresh, dump, replace=True)
    with Memory(fresh) as memory:
        assert len(memory.list(user_id="jo").results) == 1
